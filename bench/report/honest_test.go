// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/bench/result"
)

// renderAll renders a report of the named testdata files as Markdown,
// HTML, and the two tables bench prints.
func renderAll(t *testing.T, names ...string) (r *Report, md, page, text string) {
	t.Helper()
	r = loadReport(t, names...)
	var m, h, tx bytes.Buffer
	if err := WriteMarkdown(&m, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&h, r); err != nil {
		t.Fatal(err)
	}
	for _, n := range r.Nodes {
		if err := WriteTable(&tx, n.File.Results); err != nil {
			t.Fatal(err)
		}
		var modes []result.Mode
		if n.File.Run != nil {
			modes = n.File.Run.Modes
		}
		if err := WritePerEventTable(&tx, n.File.Results, modes); err != nil {
			t.Fatal(err)
		}
	}
	return r, m.String(), h.String(), tx.String()
}

// section is the text of a Markdown section, from its heading to the next.
func section(md, heading string) string {
	i := strings.Index(md, "\n"+heading+"\n")
	if i < 0 {
		return ""
	}
	rest := md[i+len(heading)+2:]
	if j := strings.Index(rest, "\n### "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

var (
	// A workload (with its rate, on a storage) and the figures after it.
	pairedFigures = regexp.MustCompile(`([a-z-]+(?: \d+/s)?(?: on [a-zA-Z ]+?)?) \(([^()]*)\)`)
	figure        = regexp.MustCompile(`(\d+(?:\.\d+)?)(x| µs)`)
)

// The recommendation compares audit and ebpf on one workload at a time:
// in a run where ebpf's dearest workload (exec-storm) is not audit's
// (signal-storm), every figure it quotes stands beside its own workload's
// figures of the other backend, never another workload's.
func TestRecommendationPairsSameWorkload(t *testing.T) {
	r, md, _, _ := renderAll(t, "worst-apart.json")
	n := r.Nodes[0]
	why := n.Rec.Why
	fig := map[string]map[string]bool{} // workload: its audit and ebpf figures as quoted
	for _, g := range groups(n.Rows) {
		for _, m := range []string{"audit", "ebpf"} {
			if row := g.row(m); row != nil {
				if fig[g.Label] == nil {
					fig[g.Label] = map[string]bool{}
				}
				ms := measureOf(*row, g.Limit, false)
				fig[g.Label][strings.TrimSuffix(strings.TrimSuffix(ms.text, "x"), " µs")] = true
			}
		}
	}
	quoted := 0
	for _, m := range pairedFigures.FindAllStringSubmatch(why, -1) {
		for _, f := range figure.FindAllStringSubmatch(m[2], -1) {
			quoted++
			if !fig[m[1]][f[1]] {
				t.Errorf("%q quotes %s%s, which is not audit's or ebpf's figure on %s", m[0], f[1], f[2], m[1])
			}
		}
	}
	if rest := pairedFigures.ReplaceAllString(why, ""); figure.MatchString(rest) {
		t.Errorf("the recommendation quotes a figure outside a workload's own pair: %q", rest)
	}
	if quoted == 0 {
		t.Errorf("the recommendation quotes no figures: %q", why)
	}
	for _, want := range []string{"signal-storm (1.21x vs 10.3x)", "exec-storm (1.03x vs 1.72x)"} {
		if !strings.Contains(why, want) {
			t.Errorf("recommendation lacks %q:\n%s", want, why)
		}
	}
	// One workload each: the run does not say which costs less, and the
	// report says so.
	if !strings.Contains(why, "does not tell which backend costs less") {
		t.Errorf("a 1-1 split is not called undecided: %q", why)
	}
	if !strings.Contains(section(md, "### Recommendation"), why) {
		t.Error("the Markdown does not state the recommendation's comparison")
	}
}

// A CPU per event over fewer than 100 events (syscall-tax's one call, an
// exec-only mode's one or two execs on the signal workloads) is its
// watcher's start-up cost: no table, peer comparison or chart shows it.
func TestPerEventNeedsHundredEvents(t *testing.T) {
	r, md, page, text := renderAll(t, "demo1.json")
	var few []string
	for _, row := range r.Nodes[0].File.Results {
		if row.WatcherCPUPerEventUS != nil && perEventEvents(row) < minPerEventEvents && *row.WatcherCPUPerEventUS >= 1000 {
			few = append(few, usText(*row.WatcherCPUPerEventUS))
		}
	}
	if len(few) < 10 {
		t.Fatalf("demo1.json has %d figures over few events, want its 20-odd", len(few))
	}
	for name, out := range map[string]string{"Markdown": md, "HTML": page, "text tables": text} {
		for _, f := range few {
			// As a figure, not as a coordinate of the page's charts.
			if regexp.MustCompile(`(^|[ |>])` + f + `( \(| µs|<| |$)`).MatchString(out) {
				t.Errorf("%s shows %s, a CPU per event over fewer than 100 events", name, f)
			}
		}
		if !strings.Contains(out, "fewer than 100 events") {
			t.Errorf("%s does not say why a figure is missing", name)
		}
	}
	// Nor does such a figure set a chart's scale.
	for _, pt := range r.Nodes[0].PerEvent {
		for _, row := range pt.Rows {
			for _, v := range row.Values {
				if v > 1000 {
					t.Errorf("%s %s: the chart draws %v", pt.Workload, row.Mode, v)
				}
			}
		}
	}
	// A floor has no watcher: "-", not 0.0.
	for _, pt := range r.Nodes[0].PerEvent {
		for _, row := range pt.Rows {
			if strings.Contains(row.Mode, "floor") && strings.Join(row.Cells, "") != strings.Repeat("-", len(row.Cells)) {
				t.Errorf("%s %s: %q, want no figure for a floor", pt.Workload, row.Mode, row.Cells)
			}
		}
	}
}

// A paced workload takes as long under every mode: the recommendation and
// the headline judge it by CPU per event, never by its elapsed ratio.
func TestPacedJudgedPerEvent(t *testing.T) {
	r, md, _, _ := renderAll(t, "demo1.json")
	n := r.Nodes[0]
	rec := section(md, "### Recommendation")
	ratio := regexp.MustCompile(`\d\.\d\dx`)
	for _, line := range strings.Split(rec, "\n") {
		if strings.Contains(line, "-rate") && !strings.Contains(line, " (ebpf ") && ratio.MatchString(line) {
			t.Errorf("a paced workload judged by its elapsed ratio: %q", line)
		}
	}
	for _, c := range n.Rec.Costs {
		if strings.Contains(c.Workload, "-rate") && (!c.Paced || strings.Contains(c.Text(), "x")) {
			t.Errorf("cost of %s: %q", c.Workload, c.Text())
		}
	}
	if strings.Contains(n.Rec.Summary, "-rate") {
		t.Errorf("summary %q lists a paced workload by elapsed time", n.Rec.Summary)
	}
	for _, m := range pairedFigures.FindAllStringSubmatch(n.Rec.Why, -1) {
		if strings.Contains(m[1], "-rate") && strings.Contains(m[2], "x") {
			t.Errorf("recommendation judges %s by elapsed ratio: %q", m[1], m[0])
		}
	}
	for _, l := range n.Headline.Lines {
		if strings.Contains(l.Workload, "-rate") != strings.Contains(l.By, "per event") {
			t.Errorf("headline judges %s by %s", l.Workload, l.By)
		}
		for _, c := range l.Cells {
			if strings.Contains(l.Workload, "-rate") && strings.Contains(c, "x") {
				t.Errorf("headline %s: %q", l.Workload, c)
			}
		}
	}
	// Its ratio chart says so.
	for _, c := range n.Charts {
		if strings.Contains(c.Workload, "-rate") && !strings.Contains(textChart(c), "paced: the same time under every mode") {
			t.Errorf("the ratio chart of %s does not say it is paced", c.Workload)
		}
	}
}

// A rate workload is always named with its rate.
func TestRateWorkloadsNamedWithRate(t *testing.T) {
	r, md, page, text := renderAll(t, "demo1.json")
	// The bench's own notes are quoted as they are.
	var notes []string
	for _, row := range r.Nodes[0].File.Results {
		if row.Note != "" {
			notes = append(notes, row.Note, strings.ReplaceAll(row.Note, "'", "&#39;"))
		}
	}
	for _, n := range notes {
		md, page, text = strings.ReplaceAll(md, n, ""), strings.ReplaceAll(page, n, ""), strings.ReplaceAll(text, n, "")
	}
	name := regexp.MustCompile(`(exec|signal)-rate`)
	// Where the rates are the columns, the workload alone heads them.
	heading := regexp.MustCompile(`^(#### |<h4>)?(exec|signal)-rate(</h4>|: watcher CPU per event|$)`)
	for what, out := range map[string]string{"Markdown": md, "HTML": page, "text tables": text} {
		for _, line := range strings.Split(out, "\n") {
			if heading.MatchString(strings.TrimSpace(line)) {
				continue
			}
			for _, ix := range name.FindAllStringIndex(line, -1) {
				rest := line[ix[1]:]
				if strings.HasPrefix(rest, ": watcher CPU per event in") { // the SVG's label
					continue
				}
				if !regexp.MustCompile(`^ \d+/s`).MatchString(rest) {
					t.Errorf("%s names %q without its rate: %q", what, line[ix[0]:ix[1]], clip(line[ix[0]:], 80))
					break
				}
			}
		}
	}
}

// A rate the untraced run itself did not reach is the node's limit, said
// so once, not every mode's failure; "not held" is a mode's own.
func TestNodeLimitNotEveryModesFailure(t *testing.T) {
	r, md, page, text := renderAll(t, "demo1.json")
	want := "the node's limit: untraced reached 860/s of 1000/s"
	for what, out := range map[string]string{"Markdown": md, "HTML": page, "text tables": text} {
		if !strings.Contains(strings.ReplaceAll(out, "&#39;", "'"), want) {
			t.Errorf("%s lacks %q", what, want)
		}
		// audit reached 657/s at 1000/s, where untraced reached 860/s.
		if regexp.MustCompile(`not held[^|<\n]*657/s`).MatchString(out) {
			t.Errorf("%s calls audit's 657/s at the node's limit not held", what)
		}
		if strings.Contains(out, "so there is no figure.") {
			t.Errorf("%s says there is no figure and shows one", what)
		}
	}
	var audit string
	for _, pt := range r.Nodes[0].PerEvent {
		for _, row := range pt.Rows {
			if pt.Workload == "exec-rate" && row.Mode == "audit (ssd)" {
				audit = row.Cells[indexOf(pt.Rates, "1000/s")]
			}
		}
	}
	if audit != "80.1 (58.6-121) at 657/s" {
		t.Errorf("audit at exec-rate 1000/s: %q", audit)
	}
	// Where untraced held the rate and a mode did not, the mode's cell
	// says so, with no figure, in every format.
	f := r.Nodes[0].File
	held, notHeld := true, false
	for i, row := range f.Results {
		if row.Workload == "exec-rate" && row.RatePerS == 300 && row.Mode == "ebpf" {
			f.Results[i].RateHeld, f.Results[i].RateAchievedPerS = &notHeld, 212
		}
		if row.Workload == "exec-rate" && row.RatePerS == 300 && row.Mode == "none" && row.RateHeld == nil {
			f.Results[i].RateHeld = &held
		}
	}
	r2, err := New([]string{"demo1.json"}, []*result.File{f})
	if err != nil {
		t.Fatal(err)
	}
	var m, h, tx bytes.Buffer
	_ = WriteMarkdown(&m, r2)
	_ = WriteHTML(&h, r2)
	_ = WritePerEventTable(&tx, f.Results, f.Run.Modes)
	for what, out := range map[string]string{"Markdown": m.String(), "HTML": h.String(), "text": tx.String()} {
		if !strings.Contains(out, "not held (212/s)") || strings.Contains(out, "99.8 (48.0-162)") {
			t.Errorf("%s: ebpf's exec-rate 300/s not said to be not held (212/s) alone", what)
		}
	}
}

// The HDD figures say what the HDD was, and what it did to auditd.
func TestHDDLineAndMultiplier(t *testing.T) {
	r, md, page, text := renderAll(t, "demo-hdd.json")
	head := md[:strings.Index(md, "### Recommendation")]
	for _, want := range []string{
		"hdd-simulated, where the event logs went: loop device on a sparse file in /var/tmp on vda (virtual disk), throttled to 150 IOPS and 100 MiB/s: what a 7200 rpm disk sustains.",
		"cis-shell: auditd 1.27x on SSD, 4.61x on simulated HDD: the disk makes it 3.6x slower; on simulated HDD audit 1.14x, ebpf 0.95x",
		"exec-rate 300/s: auditd 231 µs per event on SSD, 370 µs on simulated HDD (1.6x)",
		"**Run**: 9m20s, --quick, 2 to 3 rounds per mode",
	} {
		if !strings.Contains(head, want) {
			t.Errorf("the headline lacks %q:\n%s", want, head)
		}
	}
	if !strings.Contains(page, "the disk makes it 3.6x slower") {
		t.Error("the HTML lacks auditd's HDD multiplier")
	}
	for what, out := range map[string]string{"Markdown": md, "HTML": page, "text": text} {
		if !strings.Contains(out, "retried 1 round") {
			t.Errorf("%s does not say laurel's retried round", what)
		}
		if !strings.Contains(out, "bpftrace exited 1") {
			t.Errorf("%s drops the failed row", what)
		}
	}
	// A file without the storages' descriptions: the generic sentence,
	// naming the node's disk.
	f := r.Nodes[0].File
	f.Run.Storages, f.Run.DurationS = nil, 0
	r2, err := New([]string{"demo-hdd.json"}, []*result.File{f})
	if err != nil {
		t.Fatal(err)
	}
	hdd := strings.Join(r2.Nodes[0].Headline.HDD, "\n")
	if !strings.Contains(hdd, "a loop device throttled to a 7200 rpm disk's 150 IOPS and 100 MiB/s") || !strings.Contains(hdd, "vda") {
		t.Errorf("fallback HDD line %q", hdd)
	}
	if got := r2.Nodes[0].Headline.Run; !strings.HasPrefix(got, "length not recorded") {
		t.Errorf("run %q", got)
	}
}

// The headline says whether the run ranks the modes on each workload.
func TestHeadlineDecides(t *testing.T) {
	r := loadReport(t, "demo1.json")
	h := r.Nodes[0].Headline
	if h.Decides || len(h.Undecided) == 0 || !strings.Contains(h.Undecided[0], "laurel against auditd") ||
		!strings.HasSuffix(h.Undecided[0], " on cis-shell: intervals overlap") {
		t.Errorf("undecided %q", h.Undecided)
	}
	// Intervals apart everywhere: it decides.
	f, err := result.Read("testdata/web-86-12.json")
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range f.Results {
		if row.Workload == "cis-shell" && row.Mode == "auditd" && row.Storage == "ssd" {
			f.Results[i].RatioCI95 = []float64{1.17, 1.19}
		}
	}
	r2, err := New([]string{"web.json"}, []*result.File{f})
	if err != nil {
		t.Fatal(err)
	}
	if h := r2.Nodes[0].Headline; !h.Decides || len(h.Undecided) > 0 {
		t.Errorf("decides %v, undecided %q", h.Decides, h.Undecided)
	}
	if fmt.Sprint(h.Modes) != "[audit ebpf auditd laurel]" {
		t.Errorf("headline modes %v", h.Modes)
	}
}
