// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/bench/result"
	"github.com/tracer-dev/tracer/tracer/node"
)

func pct(v float64) *float64 { return &v }

// appFile is a node's result with one application workload under none,
// ebpf and audit: ebpf costs change% of the throughput, audit is noise.
func appFile(host string, change float64) *result.File {
	f := &result.File{Schema: result.Schema, Node: node.Facts{Hostname: host}}
	row := func(mode string, value float64, ch *float64, iv []float64, perOp *float64) result.Row {
		return result.Row{Workload: "stress-fork", Mode: mode, Rounds: 5, ElapsedS: 2, RatioElapsed: 1, EventsExpected: -1,
			EventsSeen: 3005, Metric: "bogo_ops_per_s", MetricUnit: "bogo ops/s", MetricHigherIsBetter: true,
			MetricValue: value, MetricChangePct: ch, MetricChangeCI95: iv, Ops: 3000, EventsPerOp: perOp}
	}
	none := row("none", 1500, pct(0), []float64{0, 0}, nil)
	none.EventsSeen = -1
	f.Results = []result.Row{
		{Workload: "cis-shell", Mode: "none", Rounds: 5, ElapsedS: 1, RatioElapsed: 1, EventsExpected: 100, EventsSeen: -1},
		{Workload: "cis-shell", Mode: "ebpf", Rounds: 5, ElapsedS: 1.1, RatioElapsed: 1.1, EventsExpected: 100, EventsSeen: 100},
		none,
		row("ebpf", 1500*(1+change/100), pct(change), []float64{change - 0.5, change + 0.5}, pct(1.0017)),
		row("audit", 1490, pct(-0.7), []float64{-2.1, 0.8}, pct(1.0017)),
	}
	return f
}

func TestReportApps(t *testing.T) {
	r, err := New([]string{"a.json", "b.json"}, []*result.File{appFile("node-a", -2), appFile("node-b", -6)})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"### Application workloads",
		"#### stress-fork: bogo ops/s, higher is better",
		"| ebpf | 5 | 1470 | -2.0% ± 0.5% | -2.5% to -1.5% cost | 1.00x | 3005 | 0 | 1.002 |",
		"| audit | 5 | 1490 | -0.7% ± 1.5% | -2.1% to +0.8% noise |",
		"| none | 5 | 1500 | - | - | 1.00x | - | 0 | - |",
		"### Spread of application throughput",
		"| stress-fork (bogo ops/s) | ebpf | 2 | -6.0% (node-b) | -4.0% | -2.0% (node-a) | 2 |",
		"| stress-fork (bogo ops/s) | audit | 2 | -0.7% (node-a) | -0.7% | -0.7% (node-a) | 0 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	// The built-in workload has no section of its own.
	if strings.Contains(md, "#### cis-shell") {
		t.Errorf("cis-shell has an application section:\n%s", md)
	}
	var h bytes.Buffer
	if err := WriteHTML(&h, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<h3>Application workloads</h3>", "<h3>Spread of application throughput</h3>", "-2.0% ± 0.5%"} {
		if !strings.Contains(h.String(), want) {
			t.Errorf("HTML report lacks %q", want)
		}
	}

	var tb strings.Builder
	if err := WriteTable(&tb, appFile("n", -2).Results); err != nil {
		t.Fatal(err)
	}
	var ebpfFork, cis string
	for _, l := range strings.Split(tb.String(), "\n") {
		if strings.HasPrefix(l, "stress-fork ") && strings.Contains(l, " ebpf ") {
			ebpfFork = l
		}
		if strings.HasPrefix(l, "cis-shell ") && strings.Contains(l, " ebpf ") {
			cis = l
		}
	}
	fork, cisf := strings.Fields(ebpfFork), strings.Fields(cis)
	if !strings.Contains(tb.String(), "FIGURE") || len(fork) < 4 || strings.Join(fork[len(fork)-4:], " ") != "1470 bogo ops/s -2.0%±0.5%" ||
		len(cisf) < 2 || strings.Join(cisf[len(cisf)-2:], " ") != "- -" {
		t.Errorf("table:\n%s", tb.String())
	}
}

// The report keeps the application workloads in the order bench runs
// them, which the report package cannot ask bench for.
func TestReportAppOrder(t *testing.T) {
	var rows []result.Row
	names := []string{"redis", "nginx", "sysbench-cpu", "sysbench-threads", "stress-fork", "stress-vfork",
		"stress-exec", "stress-kill", "stress-sigq", "stress-clone"}
	for i := len(names) - 1; i >= 0; i-- {
		rows = append(rows, result.Row{Workload: names[i], Mode: "none"})
	}
	sortResults(rows, newModeTable(nil))
	for i, r := range rows {
		if r.Workload != names[i] {
			t.Fatalf("row %d is %s, want %s", i, r.Workload, names[i])
		}
	}
}
