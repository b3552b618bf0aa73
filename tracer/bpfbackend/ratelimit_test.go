// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfbackend

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// --rate-limit in the kernel, with each probe set: a kill loop in one
// cgroup is cut at the limit per window, and throttle events account for
// the rest exactly; a loop in another cgroup, under the limit, loses
// nothing.
func TestRateLimitInKernel(t *testing.T) {
	tracertest.NeedRoot(t)
	for _, set := range []string{ProbesSched, ProbesSyscalls} {
		t.Run(set, func(t *testing.T) { testRateLimit(t, set) })
	}
}

func testRateLimit(t *testing.T, probes string) {
	tracertest.LockAudit(t) // storms flood the audit tests beside them
	const limit, kills, calmKills = 1000, 300_000, 500
	mount := tracertest.Cgroup2(t)
	flood := tracertest.MakeCgroup(t, mount, "tracer-rate-test/flood")
	calm := tracertest.MakeCgroup(t, mount, "tracer-rate-test/calm")
	bin := buildLoop(t)

	b := New()
	cfg := tracer.DefaultConfig()
	cfg.Types, cfg.RateLimit, cfg.Probes = vocab.TypeSet(0).With(vocab.TypeSignal), limit, probes
	// Scoped to the test's two cgroups, in the kernel: another package's
	// storm running beside this one (a node's other users) is neither
	// counted nor throttled here.
	cfg.Cgroup = "tracer-rate-test"
	if err := b.Start(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	var c tracertest.Collector
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx, c.Emit) }()

	fl := tracertest.StartInCgroup(t, flood, bin, "kill", "300000")
	cl := tracertest.StartInCgroup(t, calm, bin, "kill", "500")
	for _, cmd := range []*exec.Cmd{fl, cl} {
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	// A throttle that ends in silence is said by the sweep.
	time.Sleep(1500 * time.Millisecond)
	var sweptBeforeEnd int
	for _, e := range c.Events() {
		if e.Type == vocab.TypeThrottle {
			sweptBeforeEnd++
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st := b.Stats()

	floodPID, calmPID := uint32(fl.Process.Pid), uint32(cl.Process.Pid)
	var delivered, calmSeen int
	var suppressed uint64
	var throttles []tracer.Event
	var times []time.Time
	for _, e := range c.Events() {
		switch {
		case e.Type == vocab.TypeSignal && e.PID == floodPID && e.Signal == 10:
			delivered++
			times = append(times, e.Time)
		case e.Type == vocab.TypeSignal && e.PID == calmPID && e.Signal == 10:
			calmSeen++
		case e.Type == vocab.TypeThrottle:
			if e.Throttle.Source != tracer.SourceCgroup || e.Cgroup != "/tracer-rate-test/flood" {
				t.Errorf("a throttle of another source: %+v", e)
				continue
			}
			throttles = append(throttles, e)
			suppressed += e.Throttle.Suppressed()
			if e.PID != floodPID || e.Comm != "loop" || e.Throttle.Limit != limit || e.Throttle.Signal != e.Throttle.Suppressed() ||
				e.Throttle.CgroupID == 0 || !e.Time.Equal(e.Throttle.End) || e.Throttle.End.Sub(e.Throttle.Start) > time.Second {
				t.Errorf("throttle event %+v", e)
			}
		}
	}
	t.Logf("%d kills: %d delivered, %d suppressed in %d throttle events (%d said before the end); stats: throttled %d, lost %d",
		kills, delivered, suppressed, len(throttles), sweptBeforeEnd, st.TotalThrottled(), st.TotalLost())
	if uint64(delivered)+suppressed != kills {
		t.Errorf("delivered %d + suppressed %d = %d, want the %d kills", delivered, suppressed, uint64(delivered)+suppressed, kills)
	}
	if st.Throttled[vocab.TypeSignal] != suppressed || st.TotalLost() != 0 {
		t.Errorf("stats: throttled %v, lost %d; want %d signals throttled, none lost", st.Throttled, st.TotalLost(), suppressed)
	}
	if calmSeen != calmKills {
		t.Errorf("the other cgroup's loop: %d of its %d kills seen", calmSeen, calmKills)
	}
	if len(throttles) == 0 || sweptBeforeEnd != len(throttles) {
		t.Errorf("%d throttle events, %d of them said within 1.5 s of the storm's end: want all", len(throttles), sweptBeforeEnd)
	}
	tracertest.CheckThrottleWindows(t, throttles, times, limit)
}
