// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

func TestParseRateLimit(t *testing.T) {
	for in, want := range map[string]uint32{"1000/s": 1000, "1/s": 1, "1000": 1000, " 20 /s": 20, "100000000/s": MaxRateLimit} {
		got, err := ParseRateLimit(in)
		if err != nil || got != want {
			t.Errorf("ParseRateLimit(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "0/s", "abc", "10/m", "10/h", "-5/s", "1.5/s", "", "/s", "100000001/s", "99999999999999999999"} {
		_, err := ParseRateLimit(in)
		if !errors.Is(err, vocab.ErrUsage) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "--rate-limit") {
			t.Errorf("ParseRateLimit(%q): %v, want a one-line usage error", in, err)
		}
	}
}

func TestLimitKeyOf(t *testing.T) {
	if k := LimitKeyOf("/kubepods/pod1", 42); k != (LimitKey{Cgroup: "/kubepods/pod1"}) {
		t.Errorf("a cgroup's process: %+v", k)
	}
	for _, cg := range []string{"/", ""} {
		if k := LimitKeyOf(cg, 42); k != (LimitKey{PID: 42}) {
			t.Errorf("cgroup %q: %+v, want the process", cg, k)
		}
	}
}

// A flood from one source passes at the limit each window; a throttle
// event per window says how many events it left out, by type, at the
// source's next event after the window, or at a sweep, or at the end.
// Another source passes untouched.
func TestLimiter(t *testing.T) {
	l := NewLimiter(3, "audit")
	l.CgroupID = func(path string) uint64 { return 77 }
	var reports []Event
	report := func(e *Event) { reports = append(reports, *e) }
	flood := LimitKeyOf("/pod", 10)
	calm := LimitKeyOf("/", 20)
	t0 := time.Unix(1000, 0)
	passed := 0
	allow := func(key LimitKey, at time.Time, typ vocab.Type) bool {
		ok, who := l.Allow(key, at, typ, report)
		if who != nil {
			who.PID, who.Comm = 10, "storm"
		}
		if ok {
			passed++
		}
		return ok
	}
	// Window 1000: 10 signals and 2 forks from the flood, 2 from calm.
	for i := range 10 {
		allow(flood, t0.Add(time.Duration(i)*time.Millisecond), vocab.TypeSignal)
	}
	allow(flood, t0.Add(500*time.Millisecond), vocab.TypeFork)
	allow(flood, t0.Add(600*time.Millisecond), vocab.TypeFork)
	if !allow(calm, t0.Add(700*time.Millisecond), vocab.TypeExec) || !allow(calm, t0.Add(800*time.Millisecond), vocab.TypeExec) {
		t.Error("another source's events were left out")
	}
	if passed != 5 || len(reports) != 0 {
		t.Fatalf("window 1: %d passed, %d reports; want 3 of the flood and 2 of calm, no report yet", passed, len(reports))
	}
	// Window 1001: the flood's next event ends window 1000.
	if !allow(flood, t0.Add(1100*time.Millisecond), vocab.TypeSignal) {
		t.Error("the first event of a new window was left out")
	}
	if len(reports) != 1 {
		t.Fatalf("%d reports after the window ended, want 1", len(reports))
	}
	r := reports[0]
	th := r.Throttle
	if r.Type != vocab.TypeThrottle || r.Backend != "audit" || r.PID != 10 || r.Comm != "storm" ||
		th.Source != SourceCgroup || th.CgroupID != 77 || th.Limit != 3 ||
		!th.Start.Equal(time.Unix(1000, 0)) || !th.End.Equal(time.Unix(1001, 0)) || !r.Time.Equal(th.End) ||
		th.Signal != 7 || th.Fork != 2 || th.Suppressed() != 9 {
		t.Errorf("throttle event %+v", r)
	}
	// The rest of window 1001 fills, and is reported by the sweep once
	// it is over (and not before).
	for range 5 {
		allow(flood, t0.Add(1200*time.Millisecond), vocab.TypeExit)
	}
	l.Sweep(t0.Add(1900*time.Millisecond), report)
	if len(reports) != 1 {
		t.Fatalf("the sweep reported a window not over: %+v", reports[1:])
	}
	l.Sweep(t0.Add(2300*time.Millisecond), report)
	if len(reports) != 2 || reports[1].Throttle.Exit != 3 || !reports[1].Throttle.End.Equal(time.Unix(1002, 0)) {
		t.Fatalf("the sweep: %+v", reports[1:])
	}
	// A process in the root cgroup is a source of its own.
	for range 4 {
		allow(calm, t0.Add(3100*time.Millisecond), vocab.TypeSignal)
	}
	end := t0.Add(3500 * time.Millisecond)
	l.Flush(end, report)
	if len(reports) != 3 || reports[2].Throttle.Source != SourceProcess || reports[2].Throttle.CgroupID != 0 ||
		reports[2].Throttle.Signal != 1 || !reports[2].Throttle.End.Equal(end) {
		t.Fatalf("the flush: %+v", reports[2:])
	}
	th2 := l.Throttled()
	if th2[vocab.TypeSignal] != 8 || th2[vocab.TypeFork] != 2 || th2[vocab.TypeExit] != 3 {
		t.Errorf("Throttled %v", th2)
	}
	var suppressed uint64
	for _, r := range reports {
		suppressed += r.Throttle.Suppressed()
	}
	if total := uint64(passed) + suppressed; total != 10+2+2+1+5+4 {
		t.Errorf("passed %d + suppressed %d = %d, want every event made", passed, suppressed, total)
	}
	// Quiet sources are forgotten.
	l.Sweep(t0.Add(10*time.Second), report)
	if len(l.sources) != 0 {
		t.Errorf("%d sources kept after they went quiet", len(l.sources))
	}
}

// Throttle events pass every filter: they stand for events left out
// before any filter ran.
func TestPipelinePassesThrottle(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Comms = []string{"nginx"}
	cfg.Types = vocab.TypeSet(0).With(vocab.TypeExec)
	var out memSink
	p := NewPipeline(cfg, &out)
	e := Event{Time: time.Unix(1, 0), Backend: "ebpf", Type: vocab.TypeThrottle, PID: 1, Comm: "storm",
		Throttle: Throttle{Source: SourceProcess, Start: time.Unix(0, 0), End: time.Unix(1, 0), Limit: 1, Signal: 5}}
	p.Emit(&e)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if p.Emitted(vocab.TypeThrottle) != 1 || p.TotalEmitted() != 0 || len(out.got) != 1 || out.got[0].Type != vocab.TypeThrottle {
		t.Errorf("emitted %d throttle, %d in all; output %+v", p.Emitted(vocab.TypeThrottle), p.TotalEmitted(), out.got)
	}
}
