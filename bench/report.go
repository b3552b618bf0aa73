package bench

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/node"
)

// Report is what `tracer report` renders from one or more result files:
// a section per node and, for several nodes, a fleet view. Build it with
// NewReport, render it with WriteMarkdown or WriteHTML.
type Report struct {
	Title string
	Nodes []*ReportNode
	Fleet *ReportFleet // nil for one node
}

// ReportNode is one result file: the node's facts and verdicts, its bench
// rows, the bars of the chart, the SSD/HDD comparison and a recommendation.
type ReportNode struct {
	Source   string // the file's base name
	File     *File
	Name     string // hostname, or the file name when the facts have none
	Verdicts []node.Verdict
	RuleCost *auditrules.CostReport // nil when the rules were not read
	Rows     []Result               // measured rows, in workload and mode order
	Skipped  []Result
	Charts   []ReportChart
	Storage  *ReportStorage // nil when no row names a storage
	Rec      ReportRecommendation
}

// ReportChart is one workload's bars: the elapsed-time ratio to mode none
// per mode (and storage).
type ReportChart struct {
	Workload string
	Bars     []ReportBar
	Max      float64 // the scale's end: at least the largest ratio, and 1.5
}

// ReportBar is one bar.
type ReportBar struct {
	Label string
	Mode  string
	Ratio float64
	Lost  int64
}

// ReportStorage compares the same workload and mode on different storage
// (ssd, hdd, hdd-simulated, a --log-dir).
type ReportStorage struct {
	Kinds []string
	Rows  []ReportStorageRow
}

// ReportStorageRow is one workload and mode across storage kinds.
type ReportStorageRow struct {
	Workload, Mode string
	Cells          []*Result // per Kinds entry; nil where not measured
	// Factor is the slowest kind's elapsed over the fastest's, 0 when only
	// one kind was measured.
	Factor float64
}

// ReportRecommendation is the advice for one node.
type ReportRecommendation struct {
	Backend string   // audit or ebpf, "" when neither can run
	Why     string   // one sentence
	Rules   []string // what to run or change about audit rules
	Backlog string   // audit backlog (or ring buffer) advice
	// Costs are the recommended mode's measured costs per workload.
	Costs   []ReportCost
	Summary string // "+3% (cis-shell) to +31% (signal-storm)"
}

// ReportCost is the measured extra elapsed time of one workload.
type ReportCost struct {
	Workload string
	Ratio    float64
	Pct      float64 // (ratio-1)*100
	Lost     int64
}

// ReportFleet summarises many nodes.
type ReportFleet struct {
	Groups []ReportGroup
	Spread []ReportSpread
	NoEBPF []ReportNoEBPF
	// Backends counts the recommendations, "ebpf on 2 nodes, audit on 1".
	Backends string
}

// ReportGroup is the nodes of one OS release and kernel.
type ReportGroup struct {
	OS, Kernel string
	osID       string
	osVersion  string
	Nodes      []string
	EBPF       string // the eBPF verdict of the group's first node
}

// ReportSpread is the spread of one workload and mode over the nodes.
type ReportSpread struct {
	Workload, Mode   string
	N                int
	Min, Median, Max float64
	MinNode, MaxNode string
	LostNodes        int // nodes that lost events in this mode
}

// ReportNoEBPF is a node whose eBPF verdict is "cannot".
type ReportNoEBPF struct {
	Node, OS, Kernel string
	Reasons          []string
}

// reportModeOrder puts the modes in the order readers compare them.
var reportModeOrder = map[string]int{"none": 0, "audit": 1, "auditd": 2, "auditd-sync": 3, "auditd-data": 4, "ebpf": 5, "ebpf-syscalls": 6, "bpftrace": 7}

var reportWorkloadOrder = map[string]int{"cis-shell": 0, "signal-storm": 1, "syscall-tax": 2, "exec-storm": 3}

func reportRank(m map[string]int, s string) int {
	if r, ok := m[s]; ok {
		return r
	}
	return len(m)
}

// NewReport builds the report of result files; names are the files' paths
// (only their base names are shown).
func NewReport(names []string, files []*File) (*Report, error) {
	if len(files) == 0 {
		return nil, tracer.Usagef("no result file given: tracer report RESULT.json")
	}
	if len(names) != len(files) {
		return nil, fmt.Errorf("report: %d names for %d files", len(names), len(files))
	}
	r := &Report{}
	for i, f := range files {
		r.Nodes = append(r.Nodes, newReportNode(filepath.Base(names[i]), f))
	}
	if len(r.Nodes) == 1 {
		r.Title = "tracer overhead report: " + r.Nodes[0].Name
	} else {
		r.Title = fmt.Sprintf("tracer overhead report: %d nodes", len(r.Nodes))
		r.Fleet = newReportFleet(r.Nodes)
	}
	return r, nil
}

func newReportNode(source string, f *File) *ReportNode {
	n := &ReportNode{Source: source, File: f, Name: f.Node.Hostname}
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
	sortResults(n.Rows)
	sortResults(n.Skipped)
	n.Storage = reportStorage(n.Rows)
	n.Charts = reportCharts(n.Rows, n.Label)
	n.Rec = recommend(n)
	return n
}

func sortResults(rs []Result) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if wa, wb := reportRank(reportWorkloadOrder, a.Workload), reportRank(reportWorkloadOrder, b.Workload); wa != wb {
			return wa < wb
		}
		if a.Workload != b.Workload {
			return a.Workload < b.Workload
		}
		if ma, mb := reportRank(reportModeOrder, a.Mode), reportRank(reportModeOrder, b.Mode); ma != mb {
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
func (n *ReportNode) Label(r Result) string {
	if n.Storage == nil {
		return r.Mode
	}
	return r.ModeLabel()
}

// ModeLabel is a row's mode with its storage, when it names one.
func (r Result) ModeLabel() string {
	if r.Storage == "" {
		return r.Mode
	}
	return r.Mode + " (" + r.Storage + ")"
}

func reportCharts(rows []Result, label func(Result) string) []ReportChart {
	var out []ReportChart
	for _, r := range rows {
		if len(out) == 0 || out[len(out)-1].Workload != r.Workload {
			out = append(out, ReportChart{Workload: r.Workload, Max: 1.5})
		}
		c := &out[len(out)-1]
		ratio := r.RatioElapsed
		if r.Mode == "none" && ratio == 0 {
			ratio = 1
		}
		c.Bars = append(c.Bars, ReportBar{Label: label(r), Mode: r.Mode, Ratio: ratio, Lost: r.EventsLost})
		if ratio > c.Max {
			c.Max = ratio
		}
	}
	for i := range out {
		out[i].Max = niceCeil(out[i].Max)
	}
	return out
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

func reportStorage(rows []Result) *ReportStorage {
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
	s := &ReportStorage{Kinds: kinds}
	idx := map[string]int{}
	for i := range rows {
		r := &rows[i]
		if r.Storage == "" {
			continue
		}
		k := r.Workload + "\x00" + r.Mode
		j, ok := idx[k]
		if !ok {
			j = len(s.Rows)
			idx[k] = j
			s.Rows = append(s.Rows, ReportStorageRow{Workload: r.Workload, Mode: r.Mode, Cells: make([]*Result, len(kinds))})
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

// recommend picks the backend with the lower measured cost among those
// that can run, and says what to set for it.
func recommend(n *ReportNode) ReportRecommendation {
	f := n.File.Node
	av := node.VerdictFor(n.Verdicts, "audit")
	ev := node.VerdictFor(n.Verdicts, "ebpf")
	costs := map[string][]ReportCost{}
	worst := map[string]float64{}
	for _, r := range n.Rows {
		if (r.Mode != "audit" && r.Mode != "ebpf") || (r.Storage != "" && r.Storage != "ssd") {
			continue
		}
		costs[r.Mode] = append(costs[r.Mode], ReportCost{Workload: r.Workload, Ratio: r.RatioElapsed, Pct: (r.RatioElapsed - 1) * 100, Lost: r.EventsLost})
		worst[r.Mode] = math.Max(worst[r.Mode], r.RatioElapsed)
	}
	var rec ReportRecommendation
	canAudit, canEBPF := av.Status != node.Cannot, ev.Status != node.Cannot
	switch {
	case !canAudit && !canEBPF:
		rec.Why = "neither backend can run here: see the verdicts"
		return rec
	case canEBPF && !canAudit:
		rec.Backend, rec.Why = "ebpf", "audit cannot run here ("+firstReason(av)+")"
	case canAudit && !canEBPF:
		rec.Backend, rec.Why = "audit", "eBPF cannot run here ("+firstReason(ev)+")"
	case len(costs["ebpf"]) > 0 && len(costs["audit"]) > 0:
		if worst["ebpf"] <= worst["audit"] {
			rec.Backend = "ebpf"
			rec.Why = fmt.Sprintf("it cost less than audit where it was measured: at worst %.2fx against %.2fx", worst["ebpf"], worst["audit"])
		} else {
			rec.Backend = "audit"
			rec.Why = fmt.Sprintf("it cost less than eBPF where it was measured: at worst %.2fx against %.2fx", worst["audit"], worst["ebpf"])
		}
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
			if fd.Severity == auditrules.CostHigh {
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
	for _, t := range SyscallTax(n.Source, n.File) {
		if t.Mode == "auditd" && (t.Storage == "" || t.Storage == "ssd") {
			rec.Rules = append(rec.Rules, fmt.Sprintf("while audit syscall rules are loaded, every syscall that no rule names took %+.0f%% here (syscall-tax under auditd, %.2fx)", (t.Ratio-1)*100, t.Ratio))
			break
		}
	}
	return rec
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

func costSummary(cs []ReportCost) string {
	if len(cs) == 0 {
		return "not measured"
	}
	lo, hi := cs[0], cs[0]
	for _, c := range cs[1:] {
		if c.Ratio < lo.Ratio {
			lo = c
		}
		if c.Ratio > hi.Ratio {
			hi = c
		}
	}
	if len(cs) == 1 || lo.Workload == hi.Workload {
		return fmt.Sprintf("%+.0f%% (%s)", hi.Pct, hi.Workload)
	}
	return fmt.Sprintf("%+.0f%% (%s) to %+.0f%% (%s)", lo.Pct, lo.Workload, hi.Pct, hi.Workload)
}

func newReportFleet(nodes []*ReportNode) *ReportFleet {
	fl := &ReportFleet{}
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
			fl.Groups = append(fl.Groups, ReportGroup{OS: osName, Kernel: n.File.Node.Kernel,
				osID: n.File.Node.OS.ID, osVersion: n.File.Node.OS.VersionID,
				EBPF: node.VerdictFor(n.Verdicts, "ebpf").Status})
		}
		fl.Groups[i].Nodes = append(fl.Groups[i].Nodes, n.Name)
		if ev := node.VerdictFor(n.Verdicts, "ebpf"); ev.Status == node.Cannot {
			fl.NoEBPF = append(fl.NoEBPF, ReportNoEBPF{Node: n.Name, OS: osName, Kernel: n.File.Node.Kernel, Reasons: ev.Reasons})
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
	var keys []Result
	for _, n := range nodes {
		for _, r := range n.Rows {
			if r.Mode == "none" {
				continue
			}
			label := n.Label(r)
			k := r.Workload + "\x00" + label
			a, ok := accs[k]
			if !ok {
				a = &acc{label: label}
				accs[k] = a
				st := ""
				if label != r.Mode {
					st = r.Storage
				}
				keys = append(keys, Result{Workload: r.Workload, Mode: r.Mode, Storage: st})
			}
			a.ratios = append(a.ratios, r.RatioElapsed)
			a.names = append(a.names, n.Name)
			if r.EventsLost > 0 {
				a.lost++
			}
		}
	}
	sortResults(keys)
	for _, k := range keys {
		a := accs[k.Workload+"\x00"+k.ModeLabel()]
		s := ReportSpread{Workload: k.Workload, Mode: a.label, N: len(a.ratios), LostNodes: a.lost}
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
func SyscallTax(source string, f *File) []node.MeasuredTax {
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

// WriteReport renders r as "md" or "html".
func WriteReport(w io.Writer, r *Report, format string) error {
	switch format {
	case "md", "markdown", "":
		return WriteMarkdown(w, r)
	case "html":
		return WriteHTML(w, r)
	}
	return tracer.Usagef("unknown --format %q: use md or html", format)
}
