// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/bench/result"
)

// A file given twice is one node, not two.
func TestReportSameFileTwice(t *testing.T) {
	f, err := result.Read(filepath.Join("testdata", "web-86-12.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := New([]string{"testdata/web-86-12.json", "./testdata/../testdata/web-86-12.json"}, []*result.File{f, f})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Nodes) != 1 || r.Fleet != nil || r.Nodes[0].Name != "web-86-12" {
		t.Errorf("%d nodes (fleet %v), first %q; want the one node web-86-12", len(r.Nodes), r.Fleet != nil, r.Nodes[0].Name)
	}
	if r := loadReport(t, "web-86-12.json", "pci-94-01.json", "web-86-12.json"); len(r.Nodes) != 2 {
		t.Errorf("%d nodes, want 2", len(r.Nodes))
	}
}

// A cost the run could not tell from none is never stated as a cost: not
// the backend's, and not the syscall tax of audit rules.
func TestReportSyscallTaxWithinNoise(t *testing.T) {
	f := &result.File{Schema: result.Schema, Results: []result.Row{
		{Workload: "syscall-tax", Mode: "none", Rounds: 5, RatioElapsed: 1},
		{Workload: "syscall-tax", Mode: "auditd", Rounds: 5, RatioElapsed: 1.11, RatioCI95: []float64{0.96, 1.42}, Noise: true},
	}}
	f.Node.Hostname, f.Node.Kernel = "vm", "6.1.0"
	r, err := New([]string{"vm.json"}, []*result.File{f})
	if err != nil {
		t.Fatal(err)
	}
	rules := strings.Join(r.Nodes[0].Rec.Rules, "\n")
	if strings.Contains(rules, "+11%") || strings.Contains(rules, "took") || !strings.Contains(rules, "could not be told from noise") ||
		!strings.Contains(rules, "1.11x, 95% interval 0.96x-1.42x") {
		t.Errorf("rules:\n%s\nwant the syscall tax said to be within noise, with its figures", rules)
	}
	f.Results[1].Noise, f.Results[1].RatioCI95 = false, []float64{1.05, 1.18}
	r, _ = New([]string{"vm.json"}, []*result.File{f})
	if rules := strings.Join(r.Nodes[0].Rec.Rules, "\n"); !strings.Contains(rules, "took +11% here (syscall-tax under auditd: 1.11x, 95% interval 1.05x-1.18x)") {
		t.Errorf("rules:\n%s\nwant the measured tax", rules)
	}
}

// The Markdown report of one node has its name once, as the title, and
// says why a fact is unknown rather than "?".
func TestReportMarkdownHeadingAndLockdown(t *testing.T) {
	f, err := result.Read(filepath.Join("testdata", "web-86-12.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Lockdown LSM built in, securityfs not mounted: the mode was not read.
	f.Node.EBPF.Lockdown = ""
	f.Node.KernelConfig = map[string]string{"CONFIG_SECURITY_LOCKDOWN_LSM": "y"}
	r, err := New([]string{"web-86-12.json"}, []*result.File{f})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, r); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	if n := len(regexp.MustCompile(`(?m)^#+ .*web-86-12$`).FindAllString(md, -1)); n != 1 {
		t.Errorf("%d headings name web-86-12, want 1 (the title):\n%s", n, clip(md, 400))
	}
	if strings.Contains(md, "lockdown ?") || !strings.Contains(md, "lockdown unknown (securityfs not mounted)") {
		t.Errorf("eBPF facts: %q", regexp.MustCompile(`\| eBPF \|.*`).FindString(md))
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// The HTML report fits the page: at 1400 px (a laptop screen, a
// screenshot) and at 1047 px (A4 landscape less 10 mm margins, as it
// prints), no table runs past the window, so no column is lost. A script
// is added to a copy of the page to measure it in Chromium; the page
// itself runs none.
func TestReportHTMLFitsPage(t *testing.T) {
	bin := chromium(t)
	var buf bytes.Buffer
	if err := WriteHTML(&buf, loadReport(t, reportFixtures...)); err != nil {
		t.Fatal(err)
	}
	measure := `<script>
var right = 0;
for (const e of document.querySelectorAll("table, svg, pre")) right = Math.max(right, e.getBoundingClientRect().right);
document.body.setAttribute("data-layout", innerWidth + " " + document.documentElement.scrollWidth + " " + Math.ceil(right));
</script></body>`
	page := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(page, []byte(strings.Replace(buf.String(), "</body>", measure, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, width := range []int{1400, 1047} {
		dom := string(runChromium(t, bin, "--window-size="+strconv.Itoa(width)+",1600", "--dump-dom", "file://"+page))
		m := regexp.MustCompile(`data-layout="(\d+) (\d+) (\d+)"`).FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("width %d: no measure in the DOM", width)
		}
		inner, _ := strconv.Atoi(m[1])
		scroll, _ := strconv.Atoi(m[2])
		right, _ := strconv.Atoi(m[3])
		if inner != width {
			t.Fatalf("the window is %d px wide, want %d", inner, width)
		}
		if scroll > width || right > width {
			t.Errorf("at %d px the page is %d px wide, its widest table or chart ends at %d px: columns are cut off", width, scroll, right)
		}
	}
	// It prints on A4 landscape, the page the 1047 px above stand for.
	pdf := filepath.Join(t.TempDir(), "report.pdf")
	runChromium(t, bin, "--no-pdf-header-footer", "--print-to-pdf="+pdf, "file://"+page)
	data, err := os.ReadFile(pdf)
	if err != nil {
		t.Fatal(err)
	}
	for _, box := range regexp.MustCompile(`/MediaBox \[0 0 ([0-9.]+) ([0-9.]+)\]`).FindAllStringSubmatch(string(data), -1) {
		if w, _ := strconv.ParseFloat(box[1], 64); w < 840 || w > 843 {
			t.Fatalf("a printed page is %s x %s pt, want A4 landscape (842 x 595)", box[1], box[2])
		}
	}
}
