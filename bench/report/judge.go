package report

import (
	"fmt"
	"sort"
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

// group is one workload (at one rate) on one storage: the rows measured
// there, in report order.
type group struct {
	Workload string // with its rate
	Storage  string // "" for the node's first storage (ssd, or none named)
	Label    string // the workload, with the storage when not the first
	Limit    string // the node's limit at the rate, "" when none held it
	Paced    bool
	Rows     []*result.Row
}

// primaryStorage: rows that name no storage (the mode writes no log) or the
// SSD are read together, as the node's first storage.
func primaryStorage(s string) bool { return s == "" || s == "ssd" }

func hddStorage(s string) bool { return s == "hdd" || s == "hdd-simulated" }

// groups splits rows (in report order) by workload label and storage.
func groups(rows []result.Row) []*group {
	var out []*group
	idx := map[string]*group{}
	nones := map[string]*result.Row{}
	multi := false
	for i := range rows {
		r := &rows[i]
		if r.Mode == "none" {
			nones[r.WorkloadLabel()] = r
		}
		if !primaryStorage(r.Storage) {
			multi = true
		}
	}
	for i := range rows {
		r := &rows[i]
		st := r.Storage
		if primaryStorage(st) {
			st = ""
		}
		k := r.WorkloadLabel() + "\x00" + st
		g, ok := idx[k]
		if !ok {
			g = &group{Workload: r.WorkloadLabel(), Storage: st, Label: r.WorkloadLabel(), Paced: paced(*r),
				Limit: nodeLimit(nones[r.WorkloadLabel()])}
			if multi && st != "" {
				g.Label += " on " + storageName(st)
			}
			idx[k] = g
			out = append(out, g)
		}
		g.Rows = append(g.Rows, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return storageRank(out[i].Storage) < storageRank(out[j].Storage) })
	return out
}

// storageName names a storage in a sentence.
func storageName(s string) string {
	switch s {
	case "", "ssd":
		return "SSD"
	case "hdd":
		return "HDD"
	case "hdd-simulated":
		return "simulated HDD"
	}
	return s
}

// row is g's row of mode (the first, when labels split it), or nil.
func (g *group) row(mode string) *result.Row {
	for _, r := range g.Rows {
		if r.Mode == mode {
			return r
		}
	}
	return nil
}

// backendComparison compares audit and ebpf on each workload (rate,
// storage) both were measured on, never across workloads: one is cheaper
// only where their 95% intervals do not overlap.
type backendComparison struct {
	// "signal-storm (1.21x vs 10.3x)", the cheaper one's figure first;
	// tie: "exec-storm (ebpf 1.72x, audit 1.03x: intervals overlap)".
	ebpf, audit, tie []string
	ebpfN, auditN    int
	unmeasured       []string
}

func compareBackends(n *Node, modes *modeTable) (backendComparison, bool) {
	var c backendComparison
	measured := false
	for _, g := range groups(n.Rows) {
		a, e := g.row("audit"), g.row("ebpf")
		if a == nil || e == nil {
			continue
		}
		measured = true
		if g.Limit != "" {
			c.unmeasured = append(c.unmeasured, g.Label+" ("+g.Limit+")")
			continue
		}
		am, em := measureOf(*a, "", false), measureOf(*e, "", false)
		if !am.ok || !em.ok {
			why := func(m measure) string {
				if m.few {
					return "fewer than 100 events"
				}
				return m.text
			}
			w := "ebpf " + why(em) + ", audit " + why(am)
			if am.few && em.few {
				w = "fewer than 100 events"
			}
			c.unmeasured = append(c.unmeasured, fmt.Sprintf("%s (%s)", g.Label, w))
			continue
		}
		unit := ""
		if g.Paced {
			unit = " per event"
		}
		switch {
		case !apart(am, em):
			c.tie = append(c.tie, fmt.Sprintf("%s (ebpf %s, audit %s%s: intervals overlap)", g.Label, em.text, am.text, unit))
		case em.v < am.v:
			c.ebpfN++
			c.ebpf = append(c.ebpf, fmt.Sprintf("%s (%s vs %s%s)", g.Label, em.text, am.text, unit))
		default:
			c.auditN++
			c.audit = append(c.audit, fmt.Sprintf("%s (%s vs %s%s)", g.Label, am.text, em.text, unit))
		}
	}
	return c, measured
}

// why says the comparison from backend's side: where it is cheaper, where
// the run cannot tell, where the other is cheaper.
func (c backendComparison) why(backend string) string {
	mine, theirs, other := c.ebpf, c.audit, "audit"
	if backend == "audit" {
		mine, theirs, other = c.audit, c.ebpf, "ebpf"
	}
	list := func(xs []string) string {
		if len(xs) == 0 {
			return "none"
		}
		if len(xs) == 1 {
			return xs[0]
		}
		return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
	}
	s := "cheaper than " + other + " on " + list(mine)
	if len(c.tie) > 0 {
		s += "; not told apart on " + list(c.tie)
	}
	s += "; " + other + " cheaper on " + list(theirs)
	if len(c.unmeasured) > 0 {
		s += "; not compared on " + list(c.unmeasured)
	}
	return s
}
