// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"math"
	"testing"

	"github.com/tracer-dev/tracer/bench/result"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{7, math.NaN(), 1, 4}, 4},
		{[]float64{2, 2, 9, 2, 9}, 2},
	} {
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestMinMax(t *testing.T) {
	lo, hi := MinMax([]float64{0.7, 0.65, 0.91, 0.66})
	if lo != 0.65 || hi != 0.91 {
		t.Errorf("MinMax = %v, %v; want 0.65, 0.91", lo, hi)
	}
	if lo, hi := MinMax(nil); lo != 0 || hi != 0 {
		t.Errorf("MinMax(nil) = %v, %v", lo, hi)
	}
}

// The ratio is taken within each round, then the median over rounds: a
// drift that slows every mode of round 2 alike does not show.
func TestRoundRatiosWithinRound(t *testing.T) {
	base := []Sample{{Round: 1, Elapsed: 1}, {Round: 2, Elapsed: 2}, {Round: 3, Elapsed: 1}}
	mode := []Sample{{Round: 1, Elapsed: 3}, {Round: 2, Elapsed: 6}, {Round: 3, Elapsed: 3.3}}
	got := RoundRatios(mode, base)
	want := []float64{3, 3, 3.3}
	if len(got) != len(want) {
		t.Fatalf("RoundRatios = %v, want %v", got, want)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-9 {
			t.Errorf("ratio %d = %v, want %v", i, got[i], want[i])
		}
	}
	// Median of the per-round ratios is 3; the ratio of medians would be 3/1 = 3
	// here too, so check a case where they differ.
	base = []Sample{{Round: 1, Elapsed: 1}, {Round: 2, Elapsed: 3}, {Round: 3, Elapsed: 3}}
	mode = []Sample{{Round: 1, Elapsed: 2}, {Round: 2, Elapsed: 3.3}, {Round: 3, Elapsed: 9}}
	if got := Median(RoundRatios(mode, base)); math.Abs(got-2) > 1e-9 {
		t.Errorf("median per-round ratio = %v, want 2", got)
	}
	// A round without a baseline (it failed, or was interrupted) gives no ratio.
	if got := RoundRatios([]Sample{{Round: 4, Elapsed: 1}}, base); len(got) != 0 {
		t.Errorf("ratio without baseline: %v", got)
	}
}

func TestSummarize(t *testing.T) {
	base := []Sample{
		{Round: 1, Elapsed: 1.0, User: 0.5, Sys: 0.5},
		{Round: 2, Elapsed: 1.2, User: 0.6, Sys: 0.6},
		{Round: 3, Elapsed: 1.1, User: 0.5, Sys: 0.6},
	}
	mode := []Sample{
		{Round: 1, Elapsed: 4.0, User: 0.5, Sys: 2.0, TracerCPU: 1.0, KauditdCPU: 0.2, Seen: 100, Lost: 0},
		{Round: 2, Elapsed: 4.8, User: 0.6, Sys: 2.4, TracerCPU: 1.2, KauditdCPU: 0.3, Seen: 98, Lost: 2},
		{Round: 3, Elapsed: 3.3, User: 0.5, Sys: 2.2, TracerCPU: 0.9, KauditdCPU: 0.1, Seen: 100, Lost: 0},
	}
	var r result.Row
	Summarize(&r, mode, base)
	check := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if r.Rounds != 3 {
		t.Errorf("rounds = %d", r.Rounds)
	}
	check("elapsed", r.ElapsedS, 4.0)
	check("min", r.ElapsedMinS, 3.3)
	check("max", r.ElapsedMaxS, 4.8)
	check("user", r.UserS, 0.5)
	check("sys", r.SysS, 2.2)
	check("ratio", r.RatioElapsed, 4.0) // per round: 4, 4, 3
	check("tracer cpu", r.TracerCPUS, 1.0)
	check("kauditd cpu", r.KauditdCPUS, 0.2)
	check("cpu%", r.CPUPct, 100*2.5/4.0) // per round: 62.5, 62.5, 81.8
	if r.EventsSeen != 98 || r.EventsLost != 2 {
		t.Errorf("seen/lost = %d/%d, want the worst round: 98/2", r.EventsSeen, r.EventsLost)
	}

	var b result.Row
	Summarize(&b, base, nil)
	check("baseline ratio", b.RatioElapsed, 1)
}

func TestCPUPct(t *testing.T) {
	s := Sample{Elapsed: 0.6, User: 0.4, Sys: 0.2}
	if got := s.CPUPct(); math.Abs(got-100) > 1e-9 {
		t.Errorf("CPUPct = %v, want 100", got)
	}
	if got := (Sample{}).CPUPct(); got != 0 {
		t.Errorf("CPUPct of nothing = %v", got)
	}
}

// The 95% interval is Student's t on the logarithms of the per-round
// ratios: wide with two rounds, narrower with more, never below zero.
func TestRatioCI95(t *testing.T) {
	if _, _, ok := RatioCI95([]float64{1.2}); ok {
		t.Error("an interval from one round")
	}
	// Logs ln 1.1 and ln 1.3: mean 0.1788, sd 0.1181, se 0.0835, t(1) 12.706.
	lo, hi, ok := RatioCI95([]float64{1.1, 1.3})
	if !ok || math.Abs(lo-0.4138) > 1e-3 || math.Abs(hi-3.456) > 1e-3 {
		t.Errorf("two rounds: %v..%v", lo, hi)
	}
	lo5, hi5, _ := RatioCI95([]float64{1.1, 1.3, 1.2, 1.15, 1.25})
	if !(lo5 > 1 && hi5 < 1.35 && lo5 < 1.2 && hi5 > 1.2) {
		t.Errorf("five rounds: %v..%v, want around 1.2 and above 1", lo5, hi5)
	}
	if lo, hi, _ := RatioCI95([]float64{2, 2, 2}); lo != 2 || hi != 2 {
		t.Errorf("identical rounds: %v..%v", lo, hi)
	}
}

func TestSummarizeInterval(t *testing.T) {
	base := []Sample{{Round: 1, Elapsed: 1}, {Round: 2, Elapsed: 1}, {Round: 3, Elapsed: 1}}
	var r result.Row
	Summarize(&r, []Sample{{Round: 1, Elapsed: 0.97}, {Round: 2, Elapsed: 1.02}, {Round: 3, Elapsed: 0.99}}, base)
	if len(r.RatioCI95) != 2 || !r.Noise {
		t.Errorf("a cost of -1%% within noise: %+v", r)
	}
	r = result.Row{}
	Summarize(&r, []Sample{{Round: 1, Elapsed: 3}, {Round: 2, Elapsed: 3.1}, {Round: 3, Elapsed: 2.9}}, base)
	if r.Noise || r.RatioCI95[0] <= 1 {
		t.Errorf("3x is not noise: %+v", r)
	}
	floor := []Sample{{Round: 1, Elapsed: 2.5}, {Round: 2, Elapsed: 2.6}, {Round: 3, Elapsed: 2.4}}
	SummarizeFloor(&r, "audit-floor", []Sample{{Round: 1, Elapsed: 3}, {Round: 2, Elapsed: 3.1}, {Round: 3, Elapsed: 2.9}}, floor)
	if r.Floor != "audit-floor" || math.Abs(r.RatioFloor-1.2) > 1e-9 || len(r.RatioFloorCI95) != 2 {
		t.Errorf("ratio to floor: %+v", r)
	}
	r = result.Row{}
	Summarize(&r, []Sample{{Round: 1, Elapsed: 2}}, base)
	if r.RatioCI95 != nil || !r.Noise {
		t.Errorf("one round: %+v, want no interval and noise", r)
	}
}
