package report

import (
	"fmt"
	"strings"

	"github.com/tracer-dev/tracer/bench/result"
)

// minPerEventEvents is the fewest events a CPU per event is shown over:
// over one or two events (syscall-tax, execsnoop on signal-rate) the figure
// is the watcher's start-up cost, not a cost per event.
const minPerEventEvents = 100

// fewEventsNote is the footnote of a "-" that stands for too few events.
const fewEventsNote = "-: fewer than 100 events, too few for a figure per event"

// perEventEvents is the number of events a row's CPU per event is over: the
// events it expected of the classes its mode watches (bench counts an
// exec-only mode's execs alone), else the events it saw.
func perEventEvents(r result.Row) int64 {
	if r.EventsExpected >= 0 {
		return r.EventsExpected
	}
	return r.EventsSeen
}

// noneRow is the untraced row of a workload label, or nil.
func noneRow(rows []result.Row, workload string) *result.Row {
	for i := range rows {
		if rows[i].Mode == "none" && rows[i].WorkloadLabel() == workload {
			return &rows[i]
		}
	}
	return nil
}

// paced: the workload runs at a set rate, so its elapsed time is the same
// under every mode by construction and says nothing of the mode's cost.
func paced(r result.Row) bool { return r.RatePerS > 0 }

// nodeLimit says, for a rate the untraced run itself did not reach, that
// the rate is the node's limit; "" when none held it (or is not known).
func nodeLimit(none *result.Row) string {
	if none == nil || none.RatePerS <= 0 || none.RateHeld == nil || *none.RateHeld {
		return ""
	}
	return fmt.Sprintf("the node's limit: untraced reached %.0f/s of %s", none.RateAchievedPerS, rateText(none.RatePerS))
}

// perEvent is a row's CPU per event as every table shows it. limit is the
// node's limit at the row's rate ("" when none held it). ok: cell is a
// figure, v; few: the "-" stands for too few events.
func perEvent(r result.Row, limit string, floor bool) (v float64, cell string, ok, few bool) {
	switch {
	case floor || r.Mode == "none":
		// A floor has no watcher: its CPU is the kernel's alone, and none
		// watches nothing.
		return 0, "-", false, false
	case limit == "" && r.RateHeld != nil && !*r.RateHeld:
		// The untraced run held the rate and this mode did not: that is
		// the mode's cost, and a figure at another rate is not comparable.
		return 0, fmt.Sprintf("not held (%.0f/s)", r.RateAchievedPerS), false, false
	case r.WatcherCPUPerEventUS == nil:
		return 0, "-", false, false
	case perEventEvents(r) < minPerEventEvents:
		return 0, "-", false, true
	}
	v = *r.WatcherCPUPerEventUS
	cell = usText(v)
	if ci := r.WatcherCPUPerEventCI95; len(ci) == 2 {
		cell += " (" + usText(ci[0]) + "-" + usText(ci[1]) + ")"
	}
	if limit != "" && r.RateAchievedPerS > 0 {
		cell += fmt.Sprintf(" at %.0f/s", r.RateAchievedPerS)
	}
	return v, cell, true, false
}

// measure is what a mode is judged by on one workload: the elapsed ratio,
// or for a paced workload the watcher's CPU per event. ok is false where
// there is no such figure; text says then why.
type measure struct {
	v, lo, hi float64
	ci        bool
	ok        bool
	perEvent  bool
	text      string
	few       bool
}

// measureOf is r's measure; limit is the node's limit at its rate.
func measureOf(r result.Row, limit string, floor bool) measure {
	if paced(r) {
		if limit != "" {
			return measure{perEvent: true, text: limit}
		}
		v, cell, ok, few := perEvent(r, "", floor)
		m := measure{v: v, ok: ok, perEvent: true, text: cell, few: few}
		if ci := r.WatcherCPUPerEventCI95; ok && len(ci) == 2 {
			m.lo, m.hi, m.ci = ci[0], ci[1], true
		}
		if ok {
			m.text = usText(v) + " µs"
		}
		return m
	}
	m := measure{v: r.RatioElapsed, ok: true, text: ratioText(r.RatioElapsed)}
	if len(r.RatioCI95) == 2 {
		m.lo, m.hi, m.ci = r.RatioCI95[0], r.RatioCI95[1], true
	}
	return m
}

// cell is the measure with its interval, for the headline's table.
func (m measure) cell() string {
	if !m.ok {
		return m.text
	}
	if !m.ci && m.perEvent {
		return usText(m.v) + " (1 round)"
	}
	if !m.ci {
		return m.text + " (1 round)"
	}
	if m.perEvent {
		// The column says the unit.
		return fmt.Sprintf("%s (%s-%s)", usText(m.v), usText(m.lo), usText(m.hi))
	}
	num := func(v float64) string { return strings.TrimSuffix(ratioText(v), "x") }
	return fmt.Sprintf("%s (%s-%s)", m.text, num(m.lo), num(m.hi))
}

// apart: the two measures' 95% intervals do not overlap. Without an
// interval (one round) nothing is apart.
func apart(a, b measure) bool {
	return a.ci && b.ci && (a.hi < b.lo || b.hi < a.lo)
}

func ratioText(v float64) string {
	if v >= 10 {
		return fmt.Sprintf("%.1fx", v)
	}
	return fmt.Sprintf("%.2fx", v)
}
