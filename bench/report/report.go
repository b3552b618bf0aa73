// SPDX-License-Identifier: Apache-2.0

// Package report renders bench result files (package bench/result) for
// people: the terminal table `tracer bench` prints, and what `tracer report`
// writes, Markdown or one self-contained HTML page per run or fleet: the
// node's facts and verdicts, the table, bar charts of the ratios, SSD
// against HDD, sweep ceilings, a recommendation per node and, for several
// nodes, the fleet view. It also picks out the syscall-tax rows `tracer
// doctor --bench` states. It reads results and runs nothing, so it builds
// on any system. Build a Report with New, render it with Write.
package report

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/tracer-dev/tracer/auditrules/cost"
	"github.com/tracer-dev/tracer/bench/result"
	"github.com/tracer-dev/tracer/tracer/node"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Report is what `tracer report` renders from one or more result files:
// a section per node and, for several nodes, a fleet view. Build it with
// New, render it with WriteMarkdown or WriteHTML.
type Report struct {
	Title string
	Nodes []*Node
	Fleet *Fleet // nil for one node
}

// Node is one result file: the node's facts and verdicts, its bench
// rows, the bars of the chart, the SSD/HDD comparison and a recommendation.
type Node struct {
	Source string // the file's base name
	File   *result.File
	// Name is the hostname (the file name when the facts have none), with
	// what tells it apart when another node of the report has the same:
	// its machine id, else its boot id, else its file name.
	Name     string
	Verdicts []node.Verdict
	RuleCost *cost.Report // nil when the rules were not read
	// Headline is the first lines of the node's section.
	Headline Headline
	Rows     []result.Row // measured rows, in workload and mode order
	Skipped  []result.Row
	Charts   []Chart
	Storage  *Storage // nil when no row names a storage
	Rec      Recommendation
	// Ceilings are the rows with a --sweep ceiling.
	Ceilings []result.Row
	// HasFloor: some row has a ratio to its floor.
	HasFloor bool
	// Apps are the application workloads (and commands with --metric):
	// their own figure per mode.
	Apps []App
	// PerEvent is the watcher's CPU per event of each rate workload, by
	// mode and rate; Peers where this tool stands against each peer.
	PerEvent []PerEventTable
	Peers    []PeerComparison
}

// Chart is one workload's bars: the elapsed-time ratio to mode none
// per mode (and storage), with its 95% interval.
type Chart struct {
	Workload string
	Bars     []Bar
	Max      float64 // the scale's end: at least the largest ratio (or interval end), and 1.5
	// Log: the bars span more than tenfold (auditd at 50x beside ebpf at
	// 1.1x), so the scale is logarithmic from Min, lest the largest bar
	// squeeze every other to nothing. Min is 0 on a linear scale.
	Log bool
	Min float64
	// Paced: the workload ran at a set rate, so its elapsed time is about
	// the same under every mode by construction; its cost is per event.
	Paced bool
}

// Bar is one bar.
type Bar struct {
	Label string
	Mode  string
	// Color is the mode's, as its result file says ("#rrggbb").
	Color string
	Ratio float64
	Lost  int64
	// Lo and Hi are the 95% interval (0 when there is none); Noise: it holds 1.00x.
	Lo, Hi float64
	Noise  bool
}

// logScaleAbove is the spread of ratios beyond which a chart's scale is logarithmic.
const logScaleAbove = 10

// Pos is where v lies on the chart's scale, from 0 (the scale's start) to 1.
func (c Chart) Pos(v float64) float64 {
	if !c.Log {
		return math.Max(0, v/c.Max)
	}
	if v <= c.Min {
		return 0
	}
	return math.Log(v/c.Min) / math.Log(c.Max/c.Min)
}

// Ticks are the grid values of the chart's scale.
func (c Chart) Ticks() []float64 {
	if !c.Log {
		return ticks(c.Max)
	}
	var out []float64
	for mag := 0.01; mag <= c.Max*1.0001; mag *= 10 {
		for _, s := range []float64{1, 2, 5} {
			if v := s * mag; v >= c.Min*0.9999 && v <= c.Max*1.0001 {
				out = append(out, math.Round(v*1000)/1000)
			}
		}
	}
	return out
}

// Storage compares the same workload and mode on different storage
// (ssd, hdd, hdd-simulated, a --log-dir).
type Storage struct {
	Kinds []string
	Rows  []StorageRow
}

// StorageRow is one workload and mode across storage kinds.
type StorageRow struct {
	Workload, Mode string
	Cells          []*result.Row // per Kinds entry; nil where not measured
	// Factor is the slowest kind's elapsed over the fastest's, 0 when only
	// one kind was measured.
	Factor float64
}

// Recommendation is the advice for one node.
type Recommendation struct {
	Backend string   // audit or ebpf, "" when neither can run
	Why     string   // one sentence
	Rules   []string // what to run or change about audit rules
	Backlog string   // audit backlog (or ring buffer) advice
	// Costs are the recommended mode's measured costs per workload.
	Costs   []Cost
	Summary string // "+3% (cis-shell) to +31% (signal-storm)"
}

// Cost is the measured extra elapsed time of one workload.
type Cost struct {
	Workload string
	Ratio    float64
	Pct      float64 // (ratio-1)*100
	Lost     int64
	// Lo and Hi are the ratio's 95% interval, 0 when unknown (schema 1).
	Lo, Hi float64
	// Noise: the run cannot tell this cost from none (the interval holds
	// 1.00x, or the ratio is below 1: watching never speeds a workload up).
	Noise bool
	// Floor is the ratio to the backend's floor, 0 when not measured.
	Floor float64
	// Paced: the workload ran at a set rate, so its elapsed time is the
	// same under every mode and the cost is PerEvent, the watcher's CPU
	// per event (or why there is none).
	Paced    bool
	PerEvent string
}

// Text is the cost as the report states it: "+31% (1.25x-1.37x)", or
// "within noise" with the ratio it measured.
func (c Cost) Text() string {
	if c.Paced {
		return c.PerEvent
	}
	if c.Noise {
		return "within noise (" + c.figures() + ")"
	}
	return c.pctText() + " (" + c.figures() + ")"
}

// figures is the ratio and its interval: "1.31x, 95% interval 1.25x-1.37x".
func (c Cost) figures() string {
	if c.Hi > 0 {
		return fmt.Sprintf("%.2fx, 95%% interval %.2fx-%.2fx", c.Ratio, c.Lo, c.Hi)
	}
	return fmt.Sprintf("%.2fx", c.Ratio)
}

// pctText is the extra time in percent, never a sub-percent figure.
func (c Cost) pctText() string {
	if c.Pct < 1 {
		return "under 1%"
	}
	return fmt.Sprintf("%+.0f%%", c.Pct)
}

// Fleet summarises many nodes.
type Fleet struct {
	Groups []Group
	Spread []Spread
	// AppSpread is the application workloads' change against none.
	AppSpread []AppSpread
	NoEBPF    []NoEBPF
	// Backends counts the recommendations, "ebpf on 2 nodes, audit on 1".
	Backends string
}

// Group is the nodes of one OS release and kernel.
type Group struct {
	OS, Kernel string
	osID       string
	osVersion  string
	Nodes      []string
	EBPF       string // the eBPF verdict of the group's first node
}

// Spread is the spread of one workload and mode over the nodes.
type Spread struct {
	Workload, Mode   string
	N                int
	Min, Median, Max float64
	MinNode, MaxNode string
	LostNodes        int // nodes that lost events in this mode
}

// NoEBPF is a node whose eBPF verdict is "cannot".
type NoEBPF struct {
	Node, OS, Kernel string
	Reasons          []string
}

var reportWorkloadOrder = map[string]int{"cis-shell": 0, "signal-storm": 1, "syscall-tax": 2, "exec-storm": 3,
	// The application workloads, in the order bench runs them.
	"redis": 4, "nginx": 5, "sysbench-cpu": 6, "sysbench-threads": 7, "stress-fork": 8, "stress-vfork": 9,
	"stress-exec": 10, "stress-kill": 11, "stress-sigq": 12, "stress-clone": 13, "exec-rate": 14, "signal-rate": 15}

func reportRank(m map[string]int, s string) int {
	if r, ok := m[s]; ok {
		return r
	}
	return len(m)
}

// New builds the report of result files; names are the files' paths
// (only their base names are shown). A file given twice (a shell glob
// and its name, ./f.json and f.json) is one node.
func New(names []string, files []*result.File) (*Report, error) {
	if len(files) == 0 {
		return nil, vocab.Usagef("no result file given: tracer report RESULT.json")
	}
	if len(names) != len(files) {
		return nil, fmt.Errorf("report: %d names for %d files", len(names), len(files))
	}
	r := &Report{}
	var lists [][]result.Mode
	for _, f := range files {
		lists = append(lists, fileModes(f))
	}
	modes := newModeTable(lists...)
	seen := map[string]bool{}
	for i, f := range files {
		path, err := filepath.Abs(names[i])
		if err != nil {
			path = filepath.Clean(names[i])
		}
		if seen[path] {
			continue
		}
		seen[path] = true
		r.Nodes = append(r.Nodes, newReportNode(filepath.Base(names[i]), f, modes))
	}
	distinguish(r.Nodes)
	if len(r.Nodes) == 1 {
		r.Title = "tracer overhead report: " + r.Nodes[0].Name
	} else {
		r.Title = fmt.Sprintf("tracer overhead report: %d nodes", len(r.Nodes))
		r.Fleet = newReportFleet(r.Nodes, modes)
	}
	return r, nil
}

func newReportNode(source string, f *result.File, modes *modeTable) *Node {
	n := &Node{Source: source, File: f, Name: f.Node.Hostname}
	if n.Name == "" {
		n.Name = strings.TrimSuffix(source, filepath.Ext(source))
	}
	n.Verdicts = node.Verdicts(f.Node)
	if f.Node.Audit.RulesRead {
		rc := node.RuleCost(f.Node)
		n.RuleCost = &rc
	}
	for _, res := range f.Results {
		if res.Skipped != "" {
			n.Skipped = append(n.Skipped, res)
		} else {
			n.Rows = append(n.Rows, res)
		}
	}
	sortResults(n.Rows, modes)
	sortResults(n.Skipped, modes)
	n.Storage = reportStorage(n.Rows)
	n.Charts = reportCharts(n.Rows, n.Label, modes)
	n.Rec = recommend(n)
	n.Headline = newHeadline(n, modes)
	n.Apps = appSections(n.Rows)
	n.PerEvent = perEventTables(n.Rows, modes)
	n.Peers = peerComparisons(n.Rows, modes)
	for _, r := range n.Rows {
		if r.MaxEventsPerS != nil {
			n.Ceilings = append(n.Ceilings, r)
		}
		if r.Floor != "" {
			n.HasFloor = true
		}
	}
	return n
}

// distinguish renames nodes that share a name (hostnames repeat: "vm",
// "localhost", clones of one image) by what tells them apart: the machine
// id, else the boot id (one machine measured twice), else the file name.
func distinguish(nodes []*Node) {
	byName := map[string][]*Node{}
	for _, n := range nodes {
		byName[n.Name] = append(byName[n.Name], n)
	}
	short := func(id string) string {
		id = strings.ReplaceAll(id, "-", "")
		if len(id) > 8 {
			id = id[:8]
		}
		return id
	}
	for name, ns := range byName {
		if len(ns) < 2 {
			continue
		}
		ids := func(f func(*result.RunInfo) string) (map[string]int, bool) {
			seen := map[string]int{}
			for _, n := range ns {
				if n.File.Run == nil || f(n.File.Run) == "" {
					return nil, false
				}
				seen[short(f(n.File.Run))]++
			}
			for _, c := range seen {
				if c > 1 {
					return nil, false
				}
			}
			return seen, true
		}
		switch {
		case func() bool { _, ok := ids(func(r *result.RunInfo) string { return r.MachineID }); return ok }():
			for _, n := range ns {
				n.Name = fmt.Sprintf("%s (machine %s)", name, short(n.File.Run.MachineID))
			}
		case func() bool { _, ok := ids(func(r *result.RunInfo) string { return r.BootID }); return ok }():
			for _, n := range ns {
				n.Name = fmt.Sprintf("%s (boot %s)", name, short(n.File.Run.BootID))
			}
		default:
			seen := map[string]int{}
			for _, n := range ns {
				seen[n.Source]++
				n.Name = fmt.Sprintf("%s (%s)", name, n.Source)
				if k := seen[n.Source]; k > 1 {
					n.Name = fmt.Sprintf("%s (%s #%d)", name, n.Source, k)
				}
			}
		}
	}
}

func sortResults(rs []result.Row, modes *modeTable) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if wa, wb := reportRank(reportWorkloadOrder, a.Workload), reportRank(reportWorkloadOrder, b.Workload); wa != wb {
			return wa < wb
		}
		if a.Workload != b.Workload {
			return a.Workload < b.Workload
		}
		if a.RatePerS != b.RatePerS {
			return a.RatePerS < b.RatePerS
		}
		if ma, mb := modes.rank(a.Mode), modes.rank(b.Mode); ma != mb {
			return ma < mb
		}
		if a.Mode != b.Mode {
			return a.Mode < b.Mode
		}
		if sa, sb := storageRank(a.Storage), storageRank(b.Storage); sa != sb {
			return sa < sb
		}
		return a.Storage < b.Storage
	})
}

// Label names a row's mode for charts and the fleet: with its storage when
// the node measured more than one kind of storage.
func (n *Node) Label(r result.Row) string {
	if n.Storage == nil {
		return r.Name()
	}
	return r.ModeLabel()
}

func reportCharts(rows []result.Row, label func(result.Row) string, modes *modeTable) []Chart {
	var out []Chart
	for _, r := range rows {
		if len(out) == 0 || out[len(out)-1].Workload != r.WorkloadLabel() {
			out = append(out, Chart{Workload: r.WorkloadLabel(), Max: 1.5, Paced: paced(r)})
		}
		c := &out[len(out)-1]
		ratio := r.RatioElapsed
		if r.Mode == "none" && ratio == 0 {
			ratio = 1
		}
		b := Bar{Label: label(r), Mode: r.Mode, Color: modes.color(r.Mode), Ratio: ratio, Lost: r.EventsLost, Noise: r.Noise}
		if len(r.RatioCI95) == 2 && r.Mode != "none" {
			b.Lo, b.Hi = r.RatioCI95[0], r.RatioCI95[1]
		}
		c.Bars = append(c.Bars, b)
	}
	for i := range out {
		c := &out[i]
		lo, hi := 1.0, 1.5
		for _, b := range c.Bars {
			lo, hi = math.Min(lo, b.Ratio), math.Max(hi, b.Ratio)
			if b.Hi > 0 {
				// An interval from 2 rounds can reach far: the scale follows
				// it only as far as the bars themselves, times 3.
				hi = math.Max(hi, math.Min(b.Hi, 3*b.Ratio))
			}
		}
		if lo > 0 && hi/lo > logScaleAbove {
			c.Log = true
			c.Min = niceFloor(math.Min(lo, 1) * 0.9)
		}
		c.Max = niceCeil(hi)
	}
	return out
}

// niceFloor rounds a log scale's start down to 1, 0.5, 0.2, 0.1, ...
func niceFloor(x float64) float64 {
	for v := 1.0; v > 1e-6; v /= 10 {
		for _, s := range []float64{1, 0.5, 0.2} {
			if s*v <= x+1e-12 {
				return s * v
			}
		}
	}
	return x
}

// niceCeil rounds a scale end up to 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, ...
func niceCeil(x float64) float64 {
	for mag := 1.0; ; mag *= 10 {
		for _, s := range []float64{1.5, 2, 3, 4, 5, 6, 8, 10} {
			if x <= s*mag+1e-9 {
				return s * mag
			}
		}
		if mag > 1e6 {
			return x
		}
	}
}

func reportStorage(rows []result.Row) *Storage {
	var kinds []string
	for _, r := range rows {
		if r.Storage != "" && !reportContains(kinds, r.Storage) {
			kinds = append(kinds, r.Storage)
		}
	}
	if len(kinds) < 2 {
		return nil
	}
	sort.SliceStable(kinds, func(i, j int) bool { return storageRank(kinds[i]) < storageRank(kinds[j]) })
	s := &Storage{Kinds: kinds}
	idx := map[string]int{}
	for i := range rows {
		r := &rows[i]
		if r.Storage == "" {
			continue
		}
		k := r.WorkloadLabel() + "\x00" + r.Mode
		j, ok := idx[k]
		if !ok {
			j = len(s.Rows)
			idx[k] = j
			s.Rows = append(s.Rows, StorageRow{Workload: r.WorkloadLabel(), Mode: r.Mode, Cells: make([]*result.Row, len(kinds))})
		}
		for ki, kind := range kinds {
			if kind == r.Storage {
				s.Rows[j].Cells[ki] = r
			}
		}
	}
	for i := range s.Rows {
		lo, hi, n := math.Inf(1), 0.0, 0
		for _, c := range s.Rows[i].Cells {
			if c != nil && c.ElapsedS > 0 {
				lo, hi, n = math.Min(lo, c.ElapsedS), math.Max(hi, c.ElapsedS), n+1
			}
		}
		if n > 1 {
			s.Rows[i].Factor = hi / lo
		}
	}
	return s
}

func storageRank(s string) int {
	switch s {
	case "":
		return 0
	case "ssd":
		return 1
	case "hdd":
		return 2
	case "hdd-simulated":
		return 3
	}
	return 4
}

// recommend picks the backend that was cheaper on more workloads, each
// compared with the other on that workload alone, among those that can
// run, and says what to set for it.
func recommend(n *Node) Recommendation {
	f := n.File.Node
	av := node.VerdictFor(n.Verdicts, "audit")
	ev := node.VerdictFor(n.Verdicts, "ebpf")
	costs := map[string][]Cost{}
	for _, r := range n.Rows {
		if (r.Mode != "audit" && r.Mode != "ebpf") || !primaryStorage(r.Storage) {
			continue
		}
		costs[r.Mode] = append(costs[r.Mode], rowCost(r, nodeLimit(noneRow(n.Rows, r.WorkloadLabel()))))
	}
	cmp, measured := compareBackends(n)
	var rec Recommendation
	canAudit, canEBPF := av.Status != node.Cannot, ev.Status != node.Cannot
	switch {
	case !canAudit && !canEBPF:
		rec.Why = "neither backend can run here: see the verdicts"
		return rec
	case canEBPF && !canAudit:
		rec.Backend, rec.Why = "ebpf", "audit cannot run here ("+firstReason(av)+")"
	case canAudit && !canEBPF:
		rec.Backend, rec.Why = "audit", "eBPF cannot run here ("+firstReason(ev)+")"
	case measured && cmp.ebpfN > cmp.auditN:
		rec.Backend, rec.Why = "ebpf", cmp.why("ebpf")
	case measured && cmp.auditN > cmp.ebpfN:
		rec.Backend, rec.Why = "audit", cmp.why("audit")
	case measured:
		// The run does not say which costs less: the verdicts choose.
		rec.Backend = "audit"
		if ev.Status == node.Works {
			rec.Backend = "ebpf"
		}
		rec.Why = fmt.Sprintf("the run does not tell which backend costs less (cheaper on as many workloads each): %s; %s because %s",
			cmp.why("ebpf"), rec.Backend, map[string]string{"ebpf": "eBPF works fully here", "audit": "eBPF works here only with limits"}[rec.Backend])
	case ev.Status == node.Works:
		rec.Backend, rec.Why = "ebpf", "eBPF works fully here (not measured against audit)"
	default:
		rec.Backend, rec.Why = "audit", "audit works here and eBPF only with limits (not measured against each other)"
	}
	if rec.Backend == "ebpf" && ev.Status == node.WorksLimits {
		rec.Why += "; limits: " + firstReason(ev)
	}
	rec.Costs = costs[rec.Backend]
	rec.Summary = costSummary(rec.Costs)
	if rec.Backend == "audit" {
		for _, r := range n.Rows {
			if r.Mode == "audit" && r.Label != "" {
				rec.Why += "; measured " + strings.TrimPrefix(r.Label, "audit ") + ", which pays for its own copy of every record too"
				break
			}
		}
	}

	arch := "b64"
	if f.Has32Bit() {
		arch = "both"
	}
	var lostAudit int64
	for _, c := range costs["audit"] {
		lostAudit += c.Lost
	}
	switch rec.Backend {
	case "audit":
		rec.Rules = append(rec.Rules, fmt.Sprintf("the tracer's rules: tracer rules --arch %s (it loads them itself; they carry -k %s)", arch, node.TracerKey))
		limit := uint32(0)
		if st := f.Audit.Status; st != nil {
			limit = st.BacklogLimit
		}
		want := uint32(node.RecommendedBacklog)
		if lostAudit > 0 && limit >= want {
			want = nextPow2(limit * 4)
		}
		switch {
		case limit == 0:
			rec.Backlog = fmt.Sprintf("auditctl -b %d (the limit was not read)", want)
		case want > limit && lostAudit > 0:
			rec.Backlog = fmt.Sprintf("auditctl -b %d: the audit mode lost %d events with the limit at %d", want, lostAudit, limit)
		case want > limit:
			rec.Backlog = fmt.Sprintf("auditctl -b %d (now %d)", want, limit)
		default:
			rec.Backlog = fmt.Sprintf("keep %d: no event was lost", limit)
		}
	case "ebpf":
		var lost int64
		for _, c := range costs["ebpf"] {
			lost += c.Lost
		}
		if lost > 0 {
			rec.Backlog = fmt.Sprintf("ring buffer: --ring-size 33554432 (32 MiB): the ebpf mode lost %d events with the default 8 MiB", lost)
		} else {
			rec.Backlog = "ring buffer: the default 8 MiB lost nothing"
		}
	}
	if rc := n.RuleCost; rc != nil {
		high := 0
		for _, fd := range rc.Findings {
			if fd.Severity == cost.High {
				high++
			}
		}
		if len(rc.Rules) > 0 {
			msg := fmt.Sprintf("the node's own %d audit rules: %d findings (%d high), see tracer doctor", len(rc.Rules), len(rc.Findings), high)
			if len(rc.Findings) == 0 {
				msg = fmt.Sprintf("the node's own %d audit rules: no cost findings", len(rc.Rules))
			}
			rec.Rules = append(rec.Rules, msg)
		}
	}
	for _, r := range n.Rows {
		if r.Workload != "syscall-tax" || r.Mode != "auditd" || (r.Storage != "" && r.Storage != "ssd") {
			continue
		}
		// A cost is stated only where the run could tell it from none.
		c := rowCost(r, "")
		if c.Noise {
			rec.Rules = append(rec.Rules, "while audit syscall rules are loaded, what every syscall that no rule names pays could not be told from noise here (syscall-tax under auditd: "+c.figures()+")")
		} else {
			rec.Rules = append(rec.Rules, "while audit syscall rules are loaded, every syscall that no rule names took "+c.pctText()+" here (syscall-tax under auditd: "+c.figures()+")")
		}
		break
	}
	return rec
}

// rowCost is what a row says a mode cost its workload: its elapsed ratio,
// or for a paced workload its CPU per event (limit is the node's limit at
// its rate, "" when the untraced run held it).
func rowCost(r result.Row, limit string) Cost {
	c := Cost{Workload: r.WorkloadLabel(), Ratio: r.RatioElapsed, Pct: (r.RatioElapsed - 1) * 100, Lost: r.EventsLost,
		Noise: r.Noise || r.RatioElapsed < 1, Floor: r.RatioFloor}
	if len(r.RatioCI95) == 2 {
		c.Lo, c.Hi = r.RatioCI95[0], r.RatioCI95[1]
	}
	if paced(r) {
		// Its ratio to the floor is of elapsed time, which the pace sets.
		c.Paced, c.Floor = true, 0
		v, cell, ok, few := perEvent(r, limit, false)
		switch {
		case ok:
			c.PerEvent = usText(v) + " µs of watcher CPU per event"
			if ci := r.WatcherCPUPerEventCI95; len(ci) == 2 {
				c.PerEvent += " (95% interval " + usText(ci[0]) + "-" + usText(ci[1]) + ")"
			}
			if limit != "" {
				c.PerEvent += fmt.Sprintf(" at the %.0f/s it reached", r.RateAchievedPerS)
			}
		case few:
			c.PerEvent = "no CPU per event: fewer than 100 events"
		default:
			c.PerEvent = "no CPU per event: " + cell
		}
		if limit != "" {
			c.PerEvent += " (" + limit + ")"
		}
	}
	return c
}

func firstReason(v node.Verdict) string {
	if len(v.Reasons) == 0 {
		return v.Status
	}
	r := v.Reasons[0]
	if i := strings.Index(r, ":"); i > 0 {
		r = r[:i]
	}
	return r
}

func nextPow2(v uint32) uint32 {
	p := uint32(1)
	for p < v && p < 1<<30 {
		p <<= 1
	}
	return p
}

// costSummary says what the recommended backend cost: the range of the
// costs the run could tell from none, and the workloads where it could not
// ("within noise"), never a negative or a sub-percent figure.
func costSummary(all []Cost) string {
	var cs []Cost
	for _, c := range all {
		// A paced workload's elapsed time is set by its pace, not by the
		// mode: its cost is per event.
		if !c.Paced {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 && len(all) > 0 {
		return "only paced workloads, judged by CPU per event"
	}
	if len(cs) == 0 {
		return "not measured"
	}
	var noise []string
	var sig []Cost
	for _, c := range cs {
		if c.Noise {
			noise = append(noise, c.Workload)
		} else {
			sig = append(sig, c)
		}
	}
	var parts []string
	if len(sig) > 0 {
		lo, hi := sig[0], sig[0]
		for _, c := range sig[1:] {
			if c.Ratio < lo.Ratio {
				lo = c
			}
			if c.Ratio > hi.Ratio {
				hi = c
			}
		}
		if lo.Workload == hi.Workload {
			parts = append(parts, fmt.Sprintf("%s (%s)", hi.pctText(), hi.Workload))
		} else {
			parts = append(parts, fmt.Sprintf("%s (%s) to %s (%s)", lo.pctText(), lo.Workload, hi.pctText(), hi.Workload))
		}
	}
	switch {
	case len(noise) == len(cs):
		parts = append(parts, "within noise on every workload (more rounds or a longer --target would tell the costs apart)")
	case len(noise) > 0:
		parts = append(parts, "within noise on "+strings.Join(noise, ", "))
	}
	return strings.Join(parts, "; ")
}

func newReportFleet(nodes []*Node, modes *modeTable) *Fleet {
	fl := &Fleet{}
	backends := map[string]int{}
	gi := map[string]int{}
	for _, n := range nodes {
		osName := n.File.Node.OS.PrettyName
		if osName == "" {
			osName = "unknown OS"
		}
		k := osName + "\x00" + n.File.Node.Kernel
		i, ok := gi[k]
		if !ok {
			i = len(fl.Groups)
			gi[k] = i
			fl.Groups = append(fl.Groups, Group{OS: osName, Kernel: n.File.Node.Kernel,
				osID: n.File.Node.OS.ID, osVersion: n.File.Node.OS.VersionID,
				EBPF: node.VerdictFor(n.Verdicts, "ebpf").Status})
		}
		fl.Groups[i].Nodes = append(fl.Groups[i].Nodes, n.Name)
		if ev := node.VerdictFor(n.Verdicts, "ebpf"); ev.Status == node.Cannot {
			fl.NoEBPF = append(fl.NoEBPF, NoEBPF{Node: n.Name, OS: osName, Kernel: n.File.Node.Kernel, Reasons: ev.Reasons})
		}
		b := n.Rec.Backend
		if b == "" {
			b = "none"
		}
		backends[b]++
	}
	var bl []string
	for _, b := range []string{"ebpf", "audit", "none"} {
		if backends[b] > 0 {
			bl = append(bl, fmt.Sprintf("%s on %d node%s", b, backends[b], plural(backends[b])))
		}
	}
	fl.Backends = strings.Join(bl, ", ")
	sort.SliceStable(fl.Groups, func(i, j int) bool {
		a, b := fl.Groups[i], fl.Groups[j]
		if a.osID != b.osID {
			return a.osID < b.osID
		}
		if c := compareVersions(a.osVersion, b.osVersion); c != 0 {
			return c < 0
		}
		if c := compareVersions(a.Kernel, b.Kernel); c != 0 {
			return c < 0
		}
		return a.OS < b.OS
	})

	type acc struct {
		label  string
		ratios []float64
		names  []string
		lost   int
	}
	accs := map[string]*acc{}
	var keys []result.Row
	for _, n := range nodes {
		for _, r := range n.Rows {
			if r.Mode == "none" {
				continue
			}
			// By mode, not label: the fleet view compares a backend across
			// nodes, beside auditd or not.
			label := r.Mode
			if n.Storage != nil && r.Storage != "" {
				label += " (" + r.Storage + ")"
			}
			k := r.WorkloadLabel() + "\x00" + label
			a, ok := accs[k]
			if !ok {
				a = &acc{label: label}
				accs[k] = a
				st := ""
				if label != r.Mode {
					st = r.Storage
				}
				keys = append(keys, result.Row{Workload: r.WorkloadLabel(), Mode: r.Mode, Storage: st})
			}
			a.ratios = append(a.ratios, r.RatioElapsed)
			a.names = append(a.names, n.Name)
			if r.EventsLost > 0 {
				a.lost++
			}
		}
	}
	sortResults(keys, modes)
	for _, k := range keys {
		a := accs[k.Workload+"\x00"+k.ModeLabel()] // k has no label: its mode and storage
		s := Spread{Workload: k.Workload, Mode: a.label, N: len(a.ratios), LostNodes: a.lost}
		for i, v := range a.ratios {
			if i == 0 || v < s.Min {
				s.Min, s.MinNode = v, a.names[i]
			}
			if i == 0 || v > s.Max {
				s.Max, s.MaxNode = v, a.names[i]
			}
		}
		s.Median = reportMedian(a.ratios)
		fl.Spread = append(fl.Spread, s)
	}
	fl.AppSpread = appSpread(nodes)
	return fl
}

// compareVersions compares dotted versions ("8.10" after "8.6") number by
// number, and what is not a number as text.
func compareVersions(a, b string) int {
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return r == '.' || r == '-' || r == '_' })
	}
	pa, pb := split(a), split(b)
	for i := 0; i < len(pa) && i < len(pb); i++ {
		na, ea := strconv.Atoi(pa[i])
		nb, eb := strconv.Atoi(pb[i])
		switch {
		case ea == nil && eb == nil && na != nb:
			if na < nb {
				return -1
			}
			return 1
		case (ea != nil || eb != nil) && pa[i] != pb[i]:
			return strings.Compare(pa[i], pb[i])
		}
	}
	return len(pa) - len(pb)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func reportMedian(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	v := append([]float64(nil), xs...)
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func reportContains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// SyscallTax returns the syscall-tax workload's ratios for the modes that
// load audit rules (auditd, audit): what every syscall pays while they are
// loaded. doctor prints them next to the rule findings.
func SyscallTax(source string, f *result.File) []node.MeasuredTax {
	var out []node.MeasuredTax
	for _, r := range f.Results {
		if r.Workload != "syscall-tax" || r.Skipped != "" || (r.Mode != "auditd" && r.Mode != "audit") {
			continue
		}
		out = append(out, node.MeasuredTax{Mode: r.Mode, Ratio: r.RatioElapsed, Storage: r.Storage,
			Source: filepath.Base(source), Hostname: f.Node.Hostname})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Mode > out[j].Mode })
	return out
}

// Write renders r as "md" or "html".
func Write(w io.Writer, r *Report, format string) error {
	switch format {
	case "md", "markdown", "":
		return WriteMarkdown(w, r)
	case "html":
		return WriteHTML(w, r)
	}
	return vocab.Usagef("unknown --format %q: use md or html", format)
}
