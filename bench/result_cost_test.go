// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/bench/result"
)

// delay_p99_ms is the median of the rounds' figures, from the rounds that
// have one; a mode without it (a peer, none) gets none.
func TestSummarizeCostDelay(t *testing.T) {
	w := &Workload{Count: 300, Rate: 300}
	var r result.Row
	SummarizeCost(&r, w, []Sample{
		{Round: 1, Elapsed: 1, TracerCPU: 0.03, DelayP99Ms: 52},
		{Round: 2, Elapsed: 1, TracerCPU: 0.03, DelayP99Ms: 49},
		{Round: 3, Elapsed: 1, TracerCPU: 0.03, DelayP99Ms: 61},
	}, 601, true)
	if r.DelayP99Ms == nil || *r.DelayP99Ms != 52 {
		t.Errorf("delay_p99_ms %v, want 52 (the median of 52, 49, 61)", r.DelayP99Ms)
	}
	var peer result.Row
	SummarizeCost(&peer, w, []Sample{{Round: 1, Elapsed: 1, TracerCPU: 0.03}}, 601, true)
	if peer.DelayP99Ms != nil {
		t.Errorf("a mode without the figure: delay_p99_ms %v, want none", *peer.DelayP99Ms)
	}
}

func TestSummarizeCost(t *testing.T) {
	w := &Workload{Count: 300, Rate: 300}
	// Round 2 reached 200/s: the rate was not held there.
	samples := []Sample{
		{Round: 1, Elapsed: 1.0, TracerCPU: 0.03, KauditdCPU: 0.003, NodeBusy: 0.5},
		{Round: 2, Elapsed: 1.5, TracerCPU: 0.9, NodeBusy: 0.9},
		{Round: 3, Elapsed: 1.02, TracerCPU: 0.033, KauditdCPU: 0.0, NodeBusy: 0.6},
	}
	var r result.Row
	SummarizeCost(&r, w, samples, 601, true)
	if r.RateHeld == nil || *r.RateHeld || r.RatePerS != 300 || r.RateAchievedPerS != 294 {
		t.Errorf("rate: held %v, asked %v, reached %v; want not held, 300, 294", r.RateHeld, r.RatePerS, r.RateAchievedPerS)
	}
	// Rounds 1 and 3: 0.033 s over 601 events, 54.91 us each.
	if r.WatcherCPUPerEventUS == nil || *r.WatcherCPUPerEventUS != 54.91 || len(r.WatcherCPUPerEventCI95) != 2 {
		t.Errorf("per event %v %v, want 54.91 us from rounds 1 and 3", r.WatcherCPUPerEventUS, r.WatcherCPUPerEventCI95)
	}
	if r.NodeBusyCPUS != 0.6 || !strings.Contains(r.Note, "round 2 reached 200/s") {
		t.Errorf("node busy %v, note %q", r.NodeBusyCPUS, r.Note)
	}
	var base result.Row
	SummarizeCost(&base, w, samples[:1], 601, false)
	if base.WatcherCPUPerEventUS != nil || base.RateHeld == nil || !*base.RateHeld {
		t.Errorf("none: per event %v, held %v", base.WatcherCPUPerEventUS, base.RateHeld)
	}
	// No round held 300/s: the figure is over both, at the rate reached.
	var slow result.Row
	SummarizeCost(&slow, w, []Sample{samples[1], {Round: 4, Elapsed: 2, TracerCPU: 0.6}}, 601, true)
	if slow.RateHeld == nil || *slow.RateHeld || slow.RateAchievedPerS != 175 || slow.WatcherCPUPerEventUS == nil ||
		*slow.WatcherCPUPerEventUS != 1247.92 || !strings.Contains(slow.Note, "held in no round") {
		t.Errorf("held in no round: held %v, reached %v, per event %v, note %q", slow.RateHeld, slow.RateAchievedPerS, slow.WatcherCPUPerEventUS, slow.Note)
	}
	if got := parseBusy("cpu  100 5 50 1000 20 3 2 1 0 0"); got != 1.61 {
		t.Errorf("parseBusy = %v, want 1.61", got)
	}
}

// A short rate run (bench --quick: 30 spawns at 100 a second) spends a
// sixth of its wall time starting and ending the loop's process: its rate
// is judged over the paced loop, which held it, not over the process.
func TestSummarizeCostPacedLoop(t *testing.T) {
	w := &Workload{Count: 30, Rate: 100}
	var r result.Row
	SummarizeCost(&r, w, []Sample{
		{Round: 1, Elapsed: 0.35, Paced: 0.300, TracerCPU: 0.01},
		{Round: 2, Elapsed: 0.35, Paced: 0.301, TracerCPU: 0.01},
	}, 61, true)
	if r.RateHeld == nil || !*r.RateHeld || r.RateAchievedPerS != 100 || strings.Contains(r.Note, "held") {
		t.Errorf("held %v, reached %v, note %q: want held at 100/s", r.RateHeld, r.RateAchievedPerS, r.Note)
	}
	// Without the loop's time, the wall time is all there is.
	var old result.Row
	SummarizeCost(&old, w, []Sample{{Round: 1, Elapsed: 0.35, TracerCPU: 0.01}}, 61, true)
	if old.RateHeld == nil || *old.RateHeld {
		t.Errorf("wall time alone: held %v, want not held (86/s)", old.RateHeld)
	}
}
