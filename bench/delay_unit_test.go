package bench

import (
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
