// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"math"

	"github.com/tracer-dev/tracer/bench/result"
)

// SummarizeMetric adds to r the workload's own figure: its median, and the
// median per-round change against base (nil base: r is the baseline, no
// change) with its 95% interval, computed as the elapsed ratio's is
// (RatioCI95) and given in percent. With Ops, it adds the median operations
// and, for modes that count events, the median events seen per operation.
func SummarizeMetric(r *result.Row, m *Metric, samples, base []Sample) {
	if m == nil || len(samples) == 0 {
		return
	}
	r.Metric, r.MetricUnit, r.MetricHigherIsBetter = m.Name, m.Unit, m.HigherIsBetter
	var vals, ops, perOp []float64
	for _, s := range samples {
		vals = append(vals, s.Metric)
		if s.Ops > 0 {
			ops = append(ops, float64(s.Ops))
			if s.Seen >= 0 {
				perOp = append(perOp, float64(s.Seen)/float64(s.Ops))
			}
		}
	}
	r.MetricValue = round4(Median(vals))
	if len(ops) > 0 {
		r.Ops = int64(math.Round(Median(ops)))
	}
	if len(perOp) > 0 && base != nil {
		v := round4(Median(perOp))
		r.EventsPerOp = &v
	}
	if base == nil {
		zero := 0.0
		r.MetricChangePct = &zero
		r.MetricChangeCI95 = []float64{0, 0}
		return
	}
	ratios := roundRatiosOf(samples, base, func(s Sample) float64 { return s.Metric })
	if len(ratios) == 0 {
		return
	}
	pct := changePct(Median(ratios))
	r.MetricChangePct = &pct
	if lo, hi, ok := RatioCI95(ratios); ok {
		r.MetricChangeCI95 = []float64{changePct(lo), changePct(hi)}
	}
}

// changePct turns a ratio into a change in percent, to 0.01%.
func changePct(ratio float64) float64 { return math.Round((ratio-1)*1e4) / 100 }
