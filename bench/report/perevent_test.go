// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/bench/result"
)

func perEventRow(workload, mode, storage string, rate, us float64, held bool) result.Row {
	// Enough events for a figure per event: 1000 a round.
	r := result.Row{Workload: workload, Mode: mode, Storage: storage, RatePerS: rate, RateHeld: &held, RateAchievedPerS: rate, EventsExpected: 1000}
	if !held {
		r.RateAchievedPerS = rate * 0.6
	}
	if us > 0 {
		r.WatcherCPUPerEventUS = &us
		r.WatcherCPUPerEventCI95 = []float64{us * 0.9, us * 1.1}
	}
	return r
}

func TestPerEvent(t *testing.T) {
	rows := []result.Row{
		perEventRow("exec-rate", "execsnoop", "", 1000, 0, false),
		perEventRow("exec-rate", "none", "", 100, 0, true),
		perEventRow("exec-rate", "execsnoop", "", 100, 40, true),
		perEventRow("exec-rate", "ebpf-exec", "ssd", 100, 20, true),
		perEventRow("exec-rate", "laurel", "ssd", 100, 300, true),
		perEventRow("exec-rate", "audit", "ssd", 100, 150, true),
		perEventRow("exec-rate", "ebpf-exec", "ssd", 300, 18, true),
		perEventRow("exec-rate", "execsnoop", "", 300, 36, true),
		perEventRow("cis-shell", "auditd", "ssd", 0, 100, true),
		perEventRow("cis-shell", "audit", "ssd", 0, 200, true),
	}
	rows[8].RateHeld, rows[9].RateHeld = nil, nil
	modes := newModeTable(nil)
	sortResults(rows, modes)
	tables := perEventTables(rows, modes)
	if len(tables) != 1 || tables[0].Workload != "exec-rate" || strings.Join(tables[0].Rates, ",") != "100/s,300/s,1000/s" {
		t.Fatalf("tables %+v", tables)
	}
	got := map[string]string{}
	for _, r := range tables[0].Rows {
		got[r.Mode] = strings.Join(r.Cells, " | ")
	}
	want := map[string]string{
		"execsnoop":       "40.0 (36.0-44.0) | 36.0 (32.4-39.6) | not held (600/s)",
		"ebpf-exec (ssd)": "20.0 (18.0-22.0) | 18.0 (16.2-19.8) | -",
		"audit (ssd)":     "150 (135-165) | - | -",
		"laurel (ssd)":    "300 (270-330) | - | -",
	}
	for m, w := range want {
		if got[m] != w {
			t.Errorf("%s: %q, want %q", m, got[m], w)
		}
	}
	if _, ok := got["none"]; ok {
		t.Error("none has no CPU per event")
	}
	peers := peerComparisons(rows, modes)
	var lines []string
	for _, p := range peers {
		lines = append(lines, p.Workload+" "+p.Peer+" "+p.Tracer+" "+p.Text())
	}
	wantPeers := []string{
		"cis-shell auditd (ssd) audit (ssd) 2.00x: audit (ssd) costs more per event",
		"exec-rate 100/s laurel (ssd) audit (ssd) 0.50x: audit (ssd) costs less per event",
		"exec-rate 100/s execsnoop ebpf-exec (ssd) 0.50x: ebpf-exec (ssd) costs less per event",
		"exec-rate 300/s execsnoop ebpf-exec (ssd) 0.50x: ebpf-exec (ssd) costs less per event",
	}
	if strings.Join(lines, "\n") != strings.Join(wantPeers, "\n") {
		t.Errorf("peers:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(wantPeers, "\n"))
	}
	var b bytes.Buffer
	if err := WritePerEventTable(&b, rows, nil); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"exec-rate: watcher CPU per event", "not held (600/s)", "against the peers", "0.50x"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("bench's table lacks %q:\n%s", w, b.String())
		}
	}
	if svg := string(perEventSVG(tables[0])); strings.Count(svg, "<polyline") != 2 || !strings.Contains(svg, "µs per event") {
		t.Errorf("chart: want a line for execsnoop and ebpf-exec:\n%s", svg)
	}
}
