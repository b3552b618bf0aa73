// SPDX-License-Identifier: Apache-2.0

package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/tracer-dev/tracer/bench/result"
)

// App is one application workload (or a command with --metric) of a node:
// its own figure per mode, and the change against none.
type App struct {
	Workload, Metric, Unit string
	HigherIsBetter         bool
	Rows                   []result.Row
	// PerOp: some row compares events seen with the workload's own
	// operations (stress-ng's bogo ops).
	PerOp bool
}

// appSections groups the rows that carry a workload's own figure by
// workload, in row order.
func appSections(rows []result.Row) []App {
	var out []App
	at := map[string]int{}
	for _, r := range rows {
		if r.Metric == "" {
			continue
		}
		i, ok := at[r.Workload]
		if !ok {
			i = len(out)
			at[r.Workload] = i
			out = append(out, App{Workload: r.Workload, Metric: r.Metric, Unit: r.MetricUnit, HigherIsBetter: r.MetricHigherIsBetter})
		}
		out[i].Rows = append(out[i].Rows, r)
		if r.EventsPerOp != nil {
			out[i].PerOp = true
		}
	}
	return out
}

// AppSpread is the spread over the nodes of one application workload's
// change against none under one mode, in percent.
type AppSpread struct {
	Workload, Mode, Unit string
	HigherIsBetter       bool
	N                    int
	Min, Median, Max     float64
	MinNode, MaxNode     string
	// Significant counts the nodes whose 95% interval excludes 0.
	Significant int
}

func appSpread(nodes []*Node) []AppSpread {
	var out []AppSpread
	at := map[string]int{}
	var vals [][]float64
	for _, n := range nodes {
		for _, a := range n.Apps {
			for _, r := range a.Rows {
				if r.Mode == "none" || r.MetricChangePct == nil {
					continue
				}
				k := r.Workload + "\x00" + r.Mode
				i, ok := at[k]
				if !ok {
					i = len(out)
					at[k] = i
					out = append(out, AppSpread{Workload: r.Workload, Mode: r.Mode, Unit: a.Unit, HigherIsBetter: a.HigherIsBetter})
					vals = append(vals, nil)
				}
				s := &out[i]
				v := *r.MetricChangePct
				if s.N == 0 || v < s.Min {
					s.Min, s.MinNode = v, n.Name
				}
				if s.N == 0 || v > s.Max {
					s.Max, s.MaxNode = v, n.Name
				}
				s.N++
				vals[i] = append(vals[i], v)
				if iv := r.MetricChangeCI95; len(iv) == 2 && (iv[0] > 0 || iv[1] < 0) {
					s.Significant++
				}
			}
		}
	}
	for i := range out {
		out[i].Median = reportMedian(vals[i])
	}
	return out
}

// FormatFigure is a workload's figure as tables show it: whole numbers
// from 100 up, three significant digits below.
func FormatFigure(v float64, unit string) string {
	s := fmt.Sprintf("%.3g", v)
	if math.Abs(v) >= 100 {
		s = fmt.Sprintf("%.0f", v)
	}
	if unit != "" {
		s += " " + unit
	}
	return s
}

// ChangeCell is a row's change against none, "-1.8% ± 0.6%" (the ± is
// half its 95% interval, which is a little asymmetric as it comes from the
// logarithms of the ratios), "-" for none and "n/a" without a baseline.
func ChangeCell(r result.Row) string {
	switch {
	case r.Mode == "none":
		return "-"
	case r.MetricChangePct == nil:
		return "n/a"
	case len(r.MetricChangeCI95) != 2:
		return fmt.Sprintf("%+.1f%% (1 round)", *r.MetricChangePct)
	}
	half := (r.MetricChangeCI95[1] - r.MetricChangeCI95[0]) / 2
	return fmt.Sprintf("%+.1f%% ± %.1f%%", *r.MetricChangePct, half)
}

// changeIntervalCell is a row's 95% interval of the change, with "noise"
// when it holds 0 and "cost" when it lies on the worse side.
func changeIntervalCell(r result.Row) string {
	iv := r.MetricChangeCI95
	if r.Mode == "none" || len(iv) != 2 {
		return "-"
	}
	s := fmt.Sprintf("%+.1f%% to %+.1f%%", iv[0], iv[1])
	switch {
	case iv[0] <= 0 && 0 <= iv[1]:
		s += " noise"
	case (iv[1] < 0) == r.MetricHigherIsBetter:
		s += " cost"
	}
	return s
}

func perOpCell(r result.Row) string {
	if r.EventsPerOp == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", *r.EventsPerOp)
}

// worse says which way a cost moves a figure, for captions.
func worse(higherIsBetter bool) string {
	if higherIsBetter {
		return "lower"
	}
	return "higher"
}

// appTableCells is what WriteTable adds to a row that carries a figure.
func appTableCells(r result.Row) string {
	if r.Metric == "" {
		return "-\t-"
	}
	return FormatFigure(r.MetricValue, r.MetricUnit) + "\t" + strings.ReplaceAll(ChangeCell(r), " ± ", "±")
}
