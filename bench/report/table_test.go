// SPDX-License-Identifier: Apache-2.0

package report

import (
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/bench/result"
)

func TestTableFlagsLoss(t *testing.T) {
	var b strings.Builder
	err := WriteTable(&b, []result.Row{
		{Workload: "signal-storm", Mode: "none", Rounds: 5, ElapsedS: 0.65, RatioElapsed: 1, EventsExpected: 200001, EventsSeen: -1},
		{Workload: "signal-storm", Mode: "auditd", Storage: "hdd-simulated", Rounds: 5, ElapsedS: 7.8, RatioElapsed: 12,
			EventsExpected: 200001, EventsSeen: 199000, EventsLost: 1001, Note: "flush=INCREMENTAL_ASYNC freq=50"},
		{Workload: "signal-storm", Mode: "ebpf", Storage: "ssd", Rounds: 5, ElapsedS: 0.7, RatioElapsed: 1.08,
			EventsExpected: 200001, EventsSeen: 200001},
		{Workload: "signal-storm", Mode: "bpftrace", Skipped: "bpftrace is not installed: apt-get install bpftrace"},
	})
	if err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(out, "\n")
	var auditd, ebpf string
	for _, l := range lines {
		if strings.Contains(l, " auditd ") {
			auditd = l
		}
		if strings.Contains(l, " ebpf ") {
			ebpf = l
		}
	}
	if i, j := strings.Index(auditd, "12.00x"), strings.Index(auditd, "LOST 1001 MISSED 1001"); i < 0 || j < i {
		t.Errorf("auditd row does not flag its loss next to its ratio:\n%s", out)
	}
	if strings.Contains(ebpf, "LOST") || strings.Contains(ebpf, "MISSED") || !strings.Contains(ebpf, "200001/200001/0") {
		t.Errorf("ebpf row:\n%s", out)
	}
	for _, want := range []string{"hdd-simulated", "bpftrace is not installed", "flush=INCREMENTAL_ASYNC", "200001/-/-"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
