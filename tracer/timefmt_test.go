package tracer

import (
	"testing"
	"time"
)

func TestAppendRFC3339NanoMatchesTime(t *testing.T) {
	base := time.Date(2026, 12, 1, 2, 35, 10, 0, time.UTC)
	for _, d := range []time.Duration{0, 1, 10, 100_000, 73190340, 999_999_999, time.Second, 86399*time.Second + 5, 400 * 24 * time.Hour} {
		for _, loc := range []*time.Location{time.UTC, time.FixedZone("x", 3600)} {
			tm := base.Add(d).In(loc)
			want := string(tm.UTC().AppendFormat(nil, time.RFC3339Nano))
			if got := string(appendRFC3339Nano(nil, tm)); got != want {
				t.Errorf("%v: got %s want %s", tm, got, want)
			}
		}
	}
}
