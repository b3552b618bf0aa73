// SPDX-License-Identifier: Apache-2.0

package report

import (
	"fmt"
	"math"
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

// Headline is the first lines of a node's report: how the run went, whether
// it tells the modes apart, and the figures a reader compares.
type Headline struct {
	// Run is the run's length, --quick and the rounds: "9m20s, --quick,
	// 2 to 3 rounds per mode".
	Run string
	// Decides: on every workload, each mode is told apart from the next
	// cheaper one. Undecided says where not.
	Decides   bool
	Undecided []string
	// Modes are the headline modes present, the columns of Lines.
	Modes []string
	Lines []HeadlineLine
	// Limits are the rates the node itself could not hold.
	Limits []string
	// HDD explains the HDD storage, "" when the node has none; Disk is
	// auditd's cost on SSD against HDD per workload.
	HDD  []string
	Disk []string
	// Few: some "-" stands for fewer than 100 events.
	Few bool
}

// HeadlineLine is one workload's figures for the headline modes.
type HeadlineLine struct {
	Workload string
	By       string // "elapsed ratio", "µs of watcher CPU per event"
	Cells    []string
}

// FewNote is the footnote of a "-" that stands for too few events.
func (Headline) FewNote() string { return fewEventsNote }

func newHeadline(n *Node, modes *modeTable) Headline {
	var h Headline
	h.Run = runText(n)
	gs := groups(n.Rows)
	present := map[string]bool{}
	for _, r := range n.Rows {
		present[r.Mode] = true
	}
	for _, r := range n.Skipped {
		present[r.Mode] = true
	}
	for _, m := range headlineModes {
		if present[m] {
			h.Modes = append(h.Modes, m)
		}
	}
	skipped := func(workload, mode string) string {
		for _, r := range n.Skipped {
			if r.WorkloadLabel() == workload && r.Mode == mode {
				if strings.HasPrefix(r.Skipped, "failed") {
					return "failed"
				}
				return "skipped"
			}
		}
		return "-"
	}
	h.Decides = true
	for _, g := range gs {
		if g.Storage == "" {
			line := HeadlineLine{Workload: g.Workload, By: "elapsed ratio"}
			if g.Paced {
				line.By = "µs of watcher CPU per event"
			}
			for _, m := range h.Modes {
				r := g.row(m)
				if r == nil {
					line.Cells = append(line.Cells, skipped(g.Workload, m))
					continue
				}
				ms := measureOf(*r, g.Limit, modes.isFloor(r.Mode))
				if g.Limit != "" {
					_, c, _, few := perEvent(*r, g.Limit, modes.isFloor(r.Mode))
					ms = measure{text: c, few: few}
				}
				h.Few = h.Few || ms.few
				line.Cells = append(line.Cells, ms.cell())
			}
			h.Lines = append(h.Lines, line)
			if g.Limit != "" {
				h.Limits = append(h.Limits, g.Workload+": "+g.Limit)
			}
		}
		if g.Limit != "" {
			continue
		}
		// Ranks the headline modes by their measure and says which
		// neighbours it cannot tell apart: the floors, variants and other
		// peers are in the tables below.
		type ranked struct {
			name string
			m    measure
		}
		var rs []ranked
		for _, r := range g.Rows {
			if indexOf(headlineModes, r.Mode) < 0 {
				continue
			}
			if m := measureOf(*r, g.Limit, false); m.ok {
				rs = append(rs, ranked{r.Name(), m})
			}
		}
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].m.v < rs[j].m.v })
		var pairs []string
		for i := 1; i < len(rs); i++ {
			if !apart(rs[i-1].m, rs[i].m) {
				pairs = append(pairs, rs[i].name+" against "+rs[i-1].name)
			}
		}
		if len(pairs) > 0 {
			h.Decides = false
			h.Undecided = append(h.Undecided, fmt.Sprintf("cannot rank %s on %s: intervals overlap", strings.Join(pairs, ", "), g.Label))
		}
	}
	h.HDD, h.Disk = hddLines(n, gs, modes)
	return h
}

// runText says how long the run was, whether it was --quick, and its rounds.
func runText(n *Node) string {
	var parts []string
	run := n.File.Run
	if run != nil && run.DurationS > 0 {
		parts = append(parts, durationText(run.DurationS))
	} else {
		parts = append(parts, "length not recorded")
	}
	if run != nil && run.Quick {
		parts = append(parts, "--quick")
	}
	lo, hi := 0, 0
	for _, r := range n.Rows {
		if r.Rounds <= 0 {
			continue
		}
		if lo == 0 || r.Rounds < lo {
			lo = r.Rounds
		}
		hi = max(hi, r.Rounds)
	}
	switch {
	case hi == 0:
	case lo == hi:
		parts = append(parts, fmt.Sprintf("%d round%s per mode", hi, plural(hi)))
	default:
		parts = append(parts, fmt.Sprintf("%d to %d rounds per mode", lo, hi))
	}
	if run != nil && run.BudgetS > 0 {
		parts = append(parts, "a budget of "+durationText(run.BudgetS)+" for rounds past the first three")
	}
	return strings.Join(parts, ", ")
}

// durationText is "9m20s", "1h02m", "42s".
func durationText(s float64) string {
	t := int(math.Round(s))
	switch {
	case t >= 3600:
		return fmt.Sprintf("%dh%02dm", t/3600, t%3600/60)
	case t >= 60:
		return fmt.Sprintf("%dm%02ds", t/60, t%60)
	}
	return fmt.Sprintf("%ds", t)
}

// hddLines explains each HDD storage the node measured (from the run's
// description, else a generic one naming the node's log disk) and states
// auditd's cost on SSD against HDD per workload, this tool's audit and ebpf
// on HDD beside it.
func hddLines(n *Node, gs []*group, modes *modeTable) (explain, disk []string) {
	seen := map[string]bool{}
	for _, g := range gs {
		if !hddStorage(g.Storage) || seen[g.Storage] {
			continue
		}
		seen[g.Storage] = true
		desc := ""
		if run := n.File.Run; run != nil {
			for _, s := range run.Storages {
				if s.Label == g.Storage && s.Desc != "" {
					desc = s.Desc
				}
			}
		}
		if desc == "" {
			real := factsDisk(n.File.Node)
			if g.Storage == "hdd-simulated" {
				desc = "a loop device throttled to a 7200 rpm disk's 150 IOPS and 100 MiB/s, on the node's disk: " + real
			} else {
				desc = "a rotating disk: " + real
			}
		}
		explain = append(explain, fmt.Sprintf("%s, where the event logs went: %s.", g.Storage, desc))
	}
	primary := map[string]*group{}
	for _, g := range gs {
		if g.Storage == "" {
			primary[g.Workload] = g
		}
	}
	for _, g := range gs {
		p := primary[g.Workload]
		if !hddStorage(g.Storage) || p == nil || g.Limit != "" {
			continue
		}
		on := storageName(g.Storage)
		var parts []string
		for _, m := range diskModes {
			ssd, hdd := p.row(m), g.row(m)
			if ssd == nil || hdd == nil {
				continue
			}
			a, b := measureOf(*ssd, "", false), measureOf(*hdd, "", false)
			if !a.ok || !b.ok || a.v <= 0 {
				continue
			}
			switch {
			case g.Paced:
				parts = append(parts, fmt.Sprintf("%s %s per event on SSD, %s on %s (%.1fx)", m, a.text, b.text, on, b.v/a.v))
			case b.v/a.v < 1.1:
				parts = append(parts, fmt.Sprintf("%s %s on SSD, %s on %s: the disk costs it nothing more", m, a.text, b.text, on))
			default:
				parts = append(parts, fmt.Sprintf("%s %s on SSD, %s on %s: the disk makes it %.1fx slower", m, a.text, b.text, on, b.v/a.v))
			}
		}
		if len(parts) == 0 {
			continue
		}
		s := g.Workload + ": " + strings.Join(parts, "; ")
		var beside []string
		for _, m := range []string{"audit", "ebpf"} {
			if r := g.row(m); r != nil {
				if ms := measureOf(*r, "", false); ms.ok {
					beside = append(beside, m+" "+ms.text)
				}
			}
		}
		if len(beside) > 0 {
			s += "; on " + on + " " + strings.Join(beside, ", ")
		}
		disk = append(disk, s)
	}
	return explain, disk
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

func compareBackends(n *Node) (backendComparison, bool) {
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
