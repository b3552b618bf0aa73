package bench

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

	"github.com/tracer-dev/tracer/tracer"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var reportFixtures = []string{"db-legacy-01.json", "app-81-07.json", "web-86-12.json", "pci-94-01.json"}

func loadReport(t *testing.T, names ...string) *Report {
	t.Helper()
	var paths []string
	var files []*File
	for _, n := range names {
		p := filepath.Join("testdata/report", n)
		f, err := ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
		files = append(files, f)
	}
	r, err := NewReport(paths, files)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden := filepath.Join("testdata/report", name+".golden")
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
		"web-86-12":    {"ebpf", "at worst 1.31x against 4.10x", "ring buffer: the default 8 MiB lost nothing"},
		"pci-94-01":    {"ebpf", "audit cannot run here (audit is locked", "ring buffer: the default 8 MiB lost nothing"},
	}
	for _, n := range r.Nodes {
		w := want[n.Name]
		if n.Rec.Backend != w.backend || !strings.Contains(n.Rec.Why, w.why) || n.Rec.Backlog != w.backlog {
			t.Errorf("%s: %+v, want %+v", n.Name, n.Rec, w)
		}
	}
	web := r.Nodes[2]
	if web.Rec.Summary != "+0% (syscall-tax) to +31% (signal-storm)" {
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
	var ss *ReportSpread
	for i := range fl.Spread {
		if fl.Spread[i].Workload == "signal-storm" && fl.Spread[i].Mode == "audit" {
			ss = &fl.Spread[i]
		}
	}
	want := ReportSpread{Workload: "signal-storm", Mode: "audit", N: 3, Min: 3.9, Median: 4.1, Max: 5.2,
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
	if _, err := NewReport(nil, nil); !errors.Is(err, tracer.ErrUsage) {
		t.Errorf("no files: %v", err)
	}
	r := loadReport(t, "web-86-12.json")
	if err := WriteReport(&bytes.Buffer{}, r, "pdf"); !errors.Is(err, tracer.ErrUsage) {
		t.Errorf("unknown format: %v", err)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(bad, []byte(`{"schema": 7, "node": {}, "results": []}`), 0o644)
	if _, err := ReadFile(bad); err == nil || !strings.Contains(err.Error(), "schema 7") {
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
	for _, bad := range []string{"<script", "<link", "<img", "@import", "url(", " src="} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	urls := regexp.MustCompile(`https?://[^"' <]+`).FindAllString(page, -1)
	for _, u := range urls {
		if u != "http://www.w3.org/2000/svg" {
			t.Errorf("the page names %s", u)
		}
	}
	if n := strings.Count(page, `<svg class="chart"`); n != 4 {
		t.Errorf("%d charts, want 4", n)
	}
}

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
	t.Skip("chromium is not installed (Debian: apt-get install -y chromium): the HTML report is not checked in a browser")
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
	if n := strings.Count(dom, `<rect class="bar"`); n != bars {
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
	// must hold at least 80% of the bars' area in it (470 px is the full
	// scale, bars are 16 px high), and not much more.
	area := map[string]float64{}
	for _, c := range r.Nodes[0].Charts {
		for _, b := range c.Bars {
			area[b.Mode] += max(1, b.Ratio/c.Max*470) * 16
		}
	}
	for mode, want := range area {
		n := float64(countColor(img, modeColor(mode)))
		if n < 0.8*want || n > 1.3*want+300 {
			t.Errorf("screenshot: %.0f pixels of the %s bar colour %s, the bars cover %.0f (chart not drawn?)", n, mode, modeColor(mode), want)
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
