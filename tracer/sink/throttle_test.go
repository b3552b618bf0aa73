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

// A throttle event in JSON and text, and back from JSON.
func TestThrottleEncoding(t *testing.T) {
	e := tracer.Event{Time: time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC), Backend: "ebpf", Type: vocab.TypeThrottle,
		PID: 4242, Comm: "storm", UID: 0, AUID: vocab.UnsetID, ExecID: tracer.ExecID{PID: 4242, Start: 100}, Cgroup: "/pod"}
	e.Throttle = tracer.Throttle{Source: tracer.SourceCgroup, CgroupID: 1234, Start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		End: time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC), Limit: 1000, Signal: 998000, Fork: 2}
	line := AppendJSON(nil, &e)
	for _, want := range []string{`"type":"throttle"`, `"pid":4242`, `"comm":"storm"`, `"cgroup":"/pod"`, `"source":"cgroup"`, `"cgroup_id":1234`,
		`"window_start":"2026-01-02T03:04:05Z"`, `"window_end":"2026-01-02T03:04:06Z"`, `"limit":1000`, `"suppressed":998002`,
		`"suppressed_by_type":{"exec":0,"fork":2,"signal":998000,"exit":0}}`} {
		if !bytes.Contains(line, []byte(want)) {
			t.Errorf("JSON %s lacks %s", line, want)
		}
	}
	var back tracer.Event
	if err := back.UnmarshalJSON(line); err != nil {
		t.Fatal(err)
	}
	if !sameThrottle(&back.Throttle, &e.Throttle) || back.Type != vocab.TypeThrottle || back.PID != 4242 || back.Cgroup != "/pod" {
		t.Errorf("read back %+v, want %+v", back, e)
	}
	// The JSON sink writes what AppendJSON does, after an event of another type too.
	var out bytes.Buffer
	s := NewJSONSink(&out)
	sig := tracer.Event{Time: e.Time, Backend: "ebpf", Type: vocab.TypeSignal, PID: 4242, Comm: "storm", Signal: 10}
	for _, ev := range []*tracer.Event{&sig, &e, &sig} {
		if err := s.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	want := string(AppendJSON(nil, &sig)) + "\n" + string(line) + "\n" + string(AppendJSON(nil, &sig)) + "\n"
	if out.String() != want {
		t.Errorf("JSON sink wrote\n%s\nwant\n%s", out.String(), want)
	}
	text := string(AppendText(nil, &e))
	if !strings.Contains(text, "throttle") || !strings.Contains(text, "cgroup /pod: 998002 events over 1000/s left out (fork 2, signal 998000) in ") {
		t.Errorf("text %q", text)
	}
	e.Throttle.Source, e.Cgroup = tracer.SourceProcess, "/"
	if text := string(AppendText(nil, &e)); !strings.Contains(text, "process: 998002 events") {
		t.Errorf("text %q", text)
	}
}
