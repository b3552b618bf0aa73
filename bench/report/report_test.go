// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/bench/result"
	"github.com/tracer-dev/tracer/tracer/vocab"

	"github.com/tracer-dev/tracer/tracer/tracertest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var reportFixtures = []string{"db-legacy-01.json", "app-81-07.json", "web-86-12.json", "pci-94-01.json"}

func loadReport(t *testing.T, names ...string) *Report {
	t.Helper()
	var paths []string
	var files []*result.File
	for _, n := range names {
		p := filepath.Join("testdata", n)
		f, err := result.Read(p)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
		files = append(files, f)
	}
	r, err := New(paths, files)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s (go test -update rewrites it):\n%s", name, golden, got)
	}
}

func TestReportMarkdownGolden(t *testing.T) {
	for name, files := range map[string][]string{
		"single.md": {"web-86-12.json"},
		"fleet.md":  reportFixtures,
	} {
		var buf bytes.Buffer
		if err := WriteMarkdown(&buf, loadReport(t, files...)); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, name, buf.Bytes())
	}
}

func TestReportRecommendations(t *testing.T) {
	r := loadReport(t, reportFixtures...)
	want := map[string]struct{ backend, why, backlog string }{
		"db-legacy-01": {"audit", "eBPF cannot run here (kernel 3.10", "auditctl -b 32768: the audit mode lost 3300 events with the limit at 8192"},
		"app-81-07":    {"audit", "eBPF cannot run here (no kernel BTF", "keep 8192: no event was lost"},
		"web-86-12":    {"ebpf", "cheaper than audit on cis-shell (1.01x vs 1.12x), signal-storm (1.31x vs 4.10x) and syscall-tax (1.00x vs 1.48x); audit cheaper on none", "ring buffer: the default 8 MiB lost nothing"},
		"pci-94-01":    {"ebpf", "eBPF works fully here", "ring buffer: the default 8 MiB lost nothing"},
	}
	for _, n := range r.Nodes {
		w := want[n.Name]
		if n.Rec.Backend != w.backend || !strings.Contains(n.Rec.Why, w.why) || n.Rec.Backlog != w.backlog {
			t.Errorf("%s: %+v, want %+v", n.Name, n.Rec, w)
		}
	}
	web := r.Nodes[2]
	// Costs the run cannot tell from none are said to be within noise, not "+0%".
	if web.Rec.Summary != "+31% (signal-storm); within noise on cis-shell, syscall-tax" {
		t.Errorf("summary %q", web.Rec.Summary)
	}
	// The audit recommendation names the arch the node needs.
	if got := r.Nodes[0].Rec.Rules[0]; !strings.Contains(got, "tracer rules --arch b64") {
		t.Errorf("rules %q", got)
	}
	// SSD against HDD: auditd on web-86-12, the HDD 7.5x slower on cis-shell.
	s := web.Storage
	if s == nil || !reflect.DeepEqual(s.Kinds, []string{"ssd", "hdd"}) || len(s.Rows) != 3 {
		t.Fatalf("storage %+v", s)
	}
	if f := s.Rows[0].Factor; f < 7.54 || f > 7.55 {
		t.Errorf("cis-shell hdd/ssd %.3f, want 13.795/1.829", f)
	}
	if s.Rows[2].Factor != 0 || s.Rows[2].Cells[1] != nil {
		t.Errorf("syscall-tax has no hdd row: %+v", s.Rows[2])
	}
}

func TestReportFleet(t *testing.T) {
	r := loadReport(t, reportFixtures...)
	fl := r.Fleet
	if fl == nil {
		t.Fatal("no fleet view for 4 nodes")
	}
	var groups []string
	for _, g := range fl.Groups {
		groups = append(groups, g.OS+" / "+strings.Join(g.Nodes, ","))
	}
	wantGroups := []string{
		"Red Hat Enterprise Linux Server 7.9 (Maipo) / db-legacy-01",
		"Red Hat Enterprise Linux 8.1 (Ootpa) / app-81-07",
		"Red Hat Enterprise Linux 8.6 (Ootpa) / web-86-12",
		"Red Hat Enterprise Linux 9.4 (Plow) / pci-94-01",
	}
	if !reflect.DeepEqual(groups, wantGroups) {
		t.Errorf("groups %q", groups)
	}
	var noEBPF []string
	for _, n := range fl.NoEBPF {
		noEBPF = append(noEBPF, n.Node)
	}
	if !reflect.DeepEqual(noEBPF, []string{"db-legacy-01", "app-81-07"}) {
		t.Errorf("nodes without eBPF %q", noEBPF)
	}
	var ss *Spread
	for i := range fl.Spread {
		if fl.Spread[i].Workload == "signal-storm" && fl.Spread[i].Mode == "audit" {
			ss = &fl.Spread[i]
		}
	}
	want := Spread{Workload: "signal-storm", Mode: "audit", N: 3, Min: 3.9, Median: 4.1, Max: 5.2,
		MinNode: "app-81-07", MaxNode: "db-legacy-01", LostNodes: 1}
	if ss == nil || *ss != want {
		t.Errorf("signal-storm audit spread %+v, want %+v", ss, want)
	}
	if fl.Backends != "ebpf on 2 nodes, audit on 2 nodes" {
		t.Errorf("backends %q", fl.Backends)
	}
	if one := loadReport(t, "web-86-12.json"); one.Fleet != nil {
		t.Error("fleet view for one node")
	}
}

func TestReportBadInput(t *testing.T) {
	if _, err := New(nil, nil); !errors.Is(err, vocab.ErrUsage) {
		t.Errorf("no files: %v", err)
	}
	r := loadReport(t, "web-86-12.json")
	if err := Write(&bytes.Buffer{}, r, "pdf"); !errors.Is(err, vocab.ErrUsage) {
		t.Errorf("unknown format: %v", err)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(bad, []byte(`{"schema": 7, "node": {}, "results": []}`), 0o644)
	if _, err := result.Read(bad); err == nil || !strings.Contains(err.Error(), "schema 7") {
		t.Errorf("wrong schema: %v", err)
	}
}

// TestReportHTMLSelfContained: nothing is fetched, nothing runs.
func TestReportHTMLSelfContained(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, loadReport(t, reportFixtures...)); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	checkSelfContained(t, page)
	if n := strings.Count(page, `<svg class="chart"`); n != 4 {
		t.Errorf("%d charts, want 4", n)
	}
}

// checkSelfContained fails t when page would fetch or run anything.
func checkSelfContained(t *testing.T, page string) {
	t.Helper()
	for _, bad := range []string{"<script", "<link", "<img", "@import", "url(", " src="} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	for _, u := range pageURL.FindAllString(page, -1) {
		if u != "http://www.w3.org/2000/svg" {
			t.Errorf("the page names %s", u)
		}
	}
}

var pageURL = regexp.MustCompile(`https?://[^"' <]+`)

// chromium finds the browser the HTML test runs in.
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	tracertest.MissingTool(t, "chromium is not installed (Debian: apt-get install -y chromium): the HTML report is not checked in a browser")
	return ""
}

func runChromium(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--window-size=1200,1600"}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.Bytes()
}

// TestReportHTMLInChromium opens the report in headless Chromium: the DOM
// after parsing holds every bar, and the screenshot shows them.
func TestReportHTMLInChromium(t *testing.T) {
	bin := chromium(t)
	r := loadReport(t, "web-86-12.json")
	bars := 0
	for _, c := range r.Nodes[0].Charts {
		bars += len(c.Bars)
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	url := "file://" + page

	dom := string(runChromium(t, bin, "--dump-dom", url))
	if n := strings.Count(dom, `<rect class="bar`); n != bars {
		t.Errorf("the rendered DOM has %d bars, want %d", n, bars)
	}
	if !strings.Contains(dom, "<svg class=\"chart\"") || !strings.Contains(dom, "Recommended: ebpf") {
		t.Error("the rendered DOM lacks the chart or the recommendation")
	}

	shot := filepath.Join(t.TempDir(), "report.png")
	runChromium(t, bin, "--screenshot="+shot, url)
	fh, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	img, err := png.Decode(fh)
	if err != nil {
		t.Fatal(err)
	}
	// The bars of each mode are drawn in the mode's colour: the screenshot
	// must hold at least 75% of the bars' area in it (440 px is the full
	// scale, bars are 16 px high, whiskers cross them), and not much more.
	area, color := map[string]float64{}, map[string]string{}
	for _, c := range r.Nodes[0].Charts {
		for _, b := range c.Bars {
			area[b.Mode] += BarWidth(c, b.Ratio, 440) * 16
			color[b.Mode] = b.Color
		}
	}
	for mode, want := range area {
		n := float64(countColor(img, color[mode]))
		if n < 0.75*want || n > 1.3*want+300 {
			t.Errorf("screenshot: %.0f pixels of the %s bar colour %s, the bars cover %.0f (chart not drawn?)", n, mode, color[mode], want)
		}
	}
	if os.Getenv("TRACER_KEEP_SCREENSHOT") != "" {
		data, _ := os.ReadFile(shot)
		_ = os.WriteFile(os.Getenv("TRACER_KEEP_SCREENSHOT"), data, 0o644)
	}
}

// countColor counts the pixels within a small distance of a #rrggbb colour.
func countColor(img image.Image, hex string) int {
	var want [3]int
	for i := range want {
		var v int
		for _, c := range hex[1+2*i : 3+2*i] {
			v *= 16
			switch {
			case c >= '0' && c <= '9':
				v += int(c - '0')
			default:
				v += int(c-'a') + 10
			}
		}
		want[i] = v
	}
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if reportAbs(int(r>>8)-want[0]) <= 6 && reportAbs(int(g>>8)-want[1]) <= 6 && reportAbs(int(bl>>8)-want[2]) <= 6 {
				n++
			}
		}
	}
	return n
}

func reportAbs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// A mode 100x the others does not squeeze their bars to nothing: the scale
// turns logarithmic, and the intervals are drawn.
func TestReportChartLogScale(t *testing.T) {
	rows := []result.Row{
		{Workload: "signal-storm", Mode: "none", RatioElapsed: 1, RatioCI95: []float64{1, 1}, Noise: true},
		{Workload: "signal-storm", Mode: "ebpf", RatioElapsed: 1.3, RatioCI95: []float64{1.2, 1.4}},
		{Workload: "signal-storm", Mode: "auditd", RatioElapsed: 120, RatioCI95: []float64{100, 140}},
		{Workload: "cis-shell", Mode: "none", RatioElapsed: 1},
		{Workload: "cis-shell", Mode: "ebpf", RatioElapsed: 1.02, RatioCI95: []float64{0.95, 1.09}, Noise: true},
	}
	charts := reportCharts(rows, func(r result.Row) string { return r.Mode }, newModeTable(nil))
	storm, cis := charts[0], charts[1]
	if !storm.Log || cis.Log {
		t.Fatalf("log scale: signal-storm %v, cis-shell %v; want only signal-storm", storm.Log, cis.Log)
	}
	// On a linear scale to 150x the 1.3x bar would be 0.9% of the width.
	if p := storm.Pos(1.3); p < 0.15 {
		t.Errorf("the 1.3x bar is %.1f%% of the scale: squeezed", 100*p)
	}
	if storm.Pos(120) > 1 || storm.Pos(140) > 1.0001 || storm.Pos(storm.Min) != 0 {
		t.Errorf("scale %g..%g does not hold the bars", storm.Min, storm.Max)
	}
	text := textChart(storm)
	for _, want := range []string{"log scale", "1.30x [1.20-1.40]", "120.00x [100.00-140.00]", "┤"} {
		if !strings.Contains(text, want) {
			t.Errorf("text chart lacks %q:\n%s", want, text)
		}
	}
	if !strings.Contains(textChart(cis), "within noise") {
		t.Errorf("the noise bar is not marked:\n%s", textChart(cis))
	}
	svg := string(svgChart(charts))
	if !strings.Contains(svg, `data-scale="log"`) || strings.Count(svg, `<g class="ci">`) != 3 {
		t.Errorf("svg: want a log panel and 3 interval whiskers:\n%s", svg)
	}
}

// The recommendation never quotes a negative or sub-percent cost: such a
// cost is within noise.
func TestReportCostSummaryNoise(t *testing.T) {
	for _, c := range []struct {
		in   []Cost
		want string
	}{
		{[]Cost{{Workload: "cis-shell", Ratio: 0.93, Pct: -7, Noise: true}, {Workload: "syscall-tax", Ratio: 0.99, Pct: -1, Noise: true}},
			"within noise on every workload (more rounds or a longer --target would tell the costs apart)"},
		{[]Cost{{Workload: "cis-shell", Ratio: 0.98, Pct: -2, Noise: true}, {Workload: "signal-storm", Ratio: 1.23, Pct: 23}},
			"+23% (signal-storm); within noise on cis-shell"},
		{[]Cost{{Workload: "syscall-tax", Ratio: 1.004, Pct: 0.4}, {Workload: "signal-storm", Ratio: 1.5, Pct: 50}},
			"under 1% (syscall-tax) to +50% (signal-storm)"},
	} {
		if got := costSummary(c.in); got != c.want {
			t.Errorf("costSummary(%+v) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := (Cost{Ratio: 0.93, Pct: -7, Lo: 0.8, Hi: 1.1, Noise: true}).Text(); !strings.HasPrefix(got, "within noise") || strings.Contains(got, "-7") {
		t.Errorf("cost text %q", got)
	}
}

// Two result files from nodes that share a hostname are told apart.
func TestReportSameHostname(t *testing.T) {
	f := func(machine, boot string) *result.File {
		fl := &result.File{Schema: result.Schema, Results: []result.Row{{Workload: "cis-shell", Mode: "none", RatioElapsed: 1, Rounds: 2}}}
		fl.Node.Hostname = "vm"
		fl.Run = &result.RunInfo{MachineID: machine, BootID: boot}
		return fl
	}
	names := func(files ...*result.File) []string {
		paths := []string{"a/vm.json", "b/vm.json", "c/vm-2.json"}[:len(files)]
		r, err := New(paths, files)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range r.Nodes {
			out = append(out, n.Name)
		}
		return out
	}
	if got := names(f("3d1219c7c4c5404a", "b1"), f("9e0f00aa11bb22cc", "b2")); !reflect.DeepEqual(got, []string{"vm (machine 3d1219c7)", "vm (machine 9e0f00aa)"}) {
		t.Errorf("by machine id: %q", got)
	}
	// One machine measured in two boots.
	if got := names(f("3d1219c7", "05cd0fec-bb43"), f("3d1219c7", "77aa0fec-bb43")); !reflect.DeepEqual(got, []string{"vm (boot 05cd0fec)", "vm (boot 77aa0fec)"}) {
		t.Errorf("by boot id: %q", got)
	}
	// Nothing else tells them apart (schema 1 files): the file names do.
	old := func() *result.File { x := f("", ""); x.Run = nil; return x }
	if got := names(old(), old(), f("3d1219c7", "")); !reflect.DeepEqual(got, []string{"vm (vm.json)", "vm (vm.json #2)", "vm (vm-2.json)"}) {
		t.Errorf("by file name: %q", got)
	}
}
