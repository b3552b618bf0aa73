// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
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

func TestTimeModesKeepColumns(t *testing.T) {
	when := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.Local)
	e := &tracer.Event{Time: when, Backend: "ebpf", Type: vocab.TypeExec, PID: 42, Comm: "sh", UID: 1234567, Filename: "/bin/true", Ret: -2}
	for i, m := range TimeModes {
		mode, err := ParseTimeMode(m)
		if err != nil || mode != TimeMode(i) {
			t.Fatalf("ParseTimeMode(%q) = %v, %v", m, mode, err)
		}
		var out bytes.Buffer
		s := NewTextSink(&out, OutputOptions{Time: mode})
		s.start = when.Add(-90 * time.Second)
		if err := s.Write(e); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(out.String(), "\n")
		h, l := lines[0], lines[1]
		if strings.Index(h, "BACKEND") != strings.Index(l, "ebpf") || strings.Index(h, "DETAILS") != strings.Index(l, "ppid=") {
			t.Errorf("--time %s: columns do not line up:\n%s\n%s", m, h, l)
		}
		if !strings.Contains(l, " ret=ENOENT ") {
			t.Errorf("--time %s: %q has no ret=ENOENT", m, l)
		}
	}
	if _, err := ParseTimeMode("epoch"); err == nil {
		t.Error("ParseTimeMode(epoch) is no error")
	}
}
