// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"context"
	"fmt"
	"math"

	"github.com/tracer-dev/tracer/bench/result"
)

// Sweep finds each mode's ceiling: the highest event rate it delivers with
// nothing lost. It runs signal-storm and exec-storm paced at a rate (events
// a second) that doubles every step, each step StepS seconds long at the
// asked rate, every mode once per step with none first. A mode leaves the
// sweep at the first step where it lost or missed events (or failed), left
// the audit backlog filling up (a reader falling behind, which a longer
// burst would make lose), or held the workload well below the rate none
// reached, twice running (it is then at its ceiling: a higher asked rate
// would only take longer); the sweep ends when none itself falls short of
// the asked rate, the workload's own ceiling on this node.
type Sweep struct {
	Workloads []SweepWorkload
	StepS     float64
	// Self is this program, which runs the paced loops.
	Self string
}

// SweepWorkload is one paced workload and the rates it is asked for.
type SweepWorkload struct {
	Name  string
	Rates []float64
}

// SweepWorkloads are the workloads --sweep can pace.
var SweepWorkloads = []string{"signal-storm", "exec-storm"}

// NewSweep plans a sweep of the named workloads (those of SweepWorkloads).
func NewSweep(names []string, stepS float64, self string) *Sweep {
	s := &Sweep{StepS: stepS, Self: self}
	for _, n := range names {
		var first float64
		switch n {
		case "signal-storm":
			first = 20000
		case "exec-storm":
			first = 200
		default:
			continue
		}
		var rates []float64
		for r := first; r <= first*(1<<10); r *= 2 {
			rates = append(rates, r)
		}
		s.Workloads = append(s.Workloads, SweepWorkload{Name: n, Rates: rates})
	}
	return s
}

const (
	// A step where none reaches less than this share of the asked rate is
	// the workload's own ceiling: the last step.
	sweepWorkloadShort = 0.9
	// A mode that reaches less than this share of what none reached in the
	// same step slowed the workload: it is at its ceiling.
	sweepModeShort = 0.8
)

type sweepMode struct {
	st    *variantState
	best  float64
	limit string
	out   bool
}

func (r *Runner) runSweep(ctx context.Context, states []*variantState, results []result.Row) []result.SweepStep {
	var steps []result.SweepStep
	var base *variantState
	for _, st := range states {
		if st.v.Mode.Name() == baseline {
			base = st
		}
	}
	if base == nil {
		return nil
	}
	done := 0
	for _, sw := range r.Sweep.Workloads {
		modes := make([]*sweepMode, 0, len(states))
		modes = append(modes, &sweepMode{st: base})
		for _, st := range states {
			if st != base {
				modes = append(modes, &sweepMode{st: st})
			}
		}
		for _, rate := range sw.Rates {
			if ctx.Err() != nil {
				return steps
			}
			n := max(1, int64(math.Round(rate*r.Sweep.StepS)))
			w, err := NewPaced(sw.Name, n, rate, r.Sweep.Self)
			if err != nil {
				return steps
			}
			noneRate := 0.0
			run := func(m *sweepMode) (result.SweepStep, error) {
				s, err := r.runOnce(ctx, w, 1, m.st.v)
				done++
				step := result.SweepStep{Workload: sw.Name, Mode: m.st.v.Mode.Name(), Label: s.Label, Storage: m.st.v.StorageLabel(),
					TargetPerS: rate, Events: w.Expected.Total(), ElapsedS: s.Elapsed, Seen: s.Seen, Lost: s.Lost,
					Queued: s.Queued, QueueLimit: s.QueueLimit}
				if s.Elapsed > 0 {
					step.PerS = math.Round(float64(step.Events) / s.Elapsed)
				}
				if err != nil {
					step.Err = err.Error()
				}
				step.OK = err == nil && s.Lost == 0 && (s.Seen < 0 || s.Seen >= step.Events) && !step.Behind()
				if r.Progress != nil {
					r.Progress(Progress{Done: done, Total: -1, Workload: fmt.Sprintf("sweep %s %.0f/s", sw.Name, rate),
						Variant: m.st.v.String(), Round: 1, Sample: s, Err: err})
				}
				return step, err
			}
			for i, m := range modes {
				if m.out || ctx.Err() != nil {
					continue
				}
				step, err := run(m)
				if i > 0 && err == nil && step.OK && step.PerS < sweepModeShort*noneRate {
					// One slow run on a busy node is not a ceiling: the mode
					// must fall short twice running.
					if again, err2 := run(m); err2 == nil && again.OK && again.PerS >= sweepModeShort*noneRate {
						step = again
					}
				}
				steps = append(steps, step)
				if i == 0 {
					if err != nil {
						return steps // without the baseline the sweep means nothing
					}
					noneRate = step.PerS
				}
				switch {
				case err != nil:
					m.out, m.limit = true, "failed"
				case !step.OK && step.Lost == 0 && step.Behind() && (step.Seen < 0 || step.Seen >= step.Events):
					m.out, m.limit = true, "behind"
				case !step.OK:
					m.out, m.limit = true, "lost"
				case step.PerS < sweepModeShort*noneRate:
					m.best = math.Max(m.best, step.PerS)
					m.out, m.limit = true, "slowed"
				default:
					m.best = math.Max(m.best, step.PerS)
				}
			}
			if noneRate < sweepWorkloadShort*rate {
				break
			}
		}
		for _, m := range modes {
			if m.limit == "" {
				m.limit = "workload"
			}
			for i := range results {
				res := &results[i]
				if res.Workload != sw.Name || res.Mode != m.st.v.Mode.Name() || res.Storage != m.st.v.StorageLabel() ||
					m.limit == "failed" || (m.best <= 0 && m.limit != "lost") {
					continue
				}
				best := m.best
				res.MaxEventsPerS, res.MaxEventsLimit = &best, m.limit
			}
		}
	}
	return steps
}
