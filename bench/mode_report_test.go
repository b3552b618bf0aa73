// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/bench/report"
	"github.com/tracer-dev/tracer/bench/result"
)

// TestModeRegistryReport checks that the report orders, pairs and colours
// modes from what the result file says of them (run.modes, written from
// the registrations): a mode bench gains reads right with no change to the
// report, and a file of an earlier tracer (no run.modes) reads as before.
func TestModeRegistryReport(t *testing.T) {
	row := func(mode string, us float64) result.Row {
		r := result.Row{Workload: "exec-rate", Mode: mode, RatePerS: 100, Rounds: 3, ElapsedS: 1, RatioElapsed: 1.1,
			RatioCI95: []float64{1.05, 1.15}, EventsExpected: 100, EventsSeen: 100}
		if mode != baseline {
			r.WatcherCPUPerEventUS = &us
		}
		return r
	}
	file := func(modes []result.Mode, extra ...result.Row) *result.File {
		f := &result.File{Schema: result.Schema, Node: result.Facts{Hostname: "node", Kernel: "6.1.0"},
			Run: &result.RunInfo{Modes: modes}}
		// Rows in reverse: the report orders them.
		for i := len(ModeNames) - 1; i >= 0; i-- {
			f.Results = append(f.Results, row(ModeNames[i], float64(10+i)))
		}
		f.Results = append(f.Results, extra...)
		return f
	}
	build := func(f *result.File) *report.Report {
		r, err := report.New([]string{"node.json"}, []*result.File{f})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	render := func(f *result.File, format string) string {
		var b bytes.Buffer
		if err := report.Write(&b, build(f), format); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}

	// What the registrations say and what the report assumes of a file
	// that does not say it are one report.
	for _, format := range []string{"md", "html"} {
		if got, old := render(file(resultModes(ModeNames)), format), render(file(nil), format); got != old {
			t.Errorf("%s: the report of a file with run.modes differs from that of the same file without:\n%s", format, firstDiff(got, old))
		}
	}

	// A mode the report has never heard of: a peer of the ebpf mode,
	// ranked between bpftrace and the libbpf-tools.
	newPeer := result.Mode{Name: "newsnoop", Rank: 75, Peer: true, Counterpart: "ebpf", Color: "#123456"}
	if modeSpecs[newPeer.Name].name != "" || modeSpecs["bpftrace"].rank >= newPeer.Rank || modeSpecs["libbpf-tools"].rank <= newPeer.Rank {
		t.Fatalf("the test's new mode %+v is no longer new, or not between bpftrace and libbpf-tools", newPeer)
	}
	f := file(append(resultModes(ModeNames), newPeer), row(newPeer.Name, 20))
	n := build(f).Nodes[0]
	var order []string
	for _, r := range n.Rows {
		order = append(order, r.Mode)
	}
	if i := slices.Index(order, newPeer.Name); i < 1 || order[i-1] != "bpftrace" || order[i+1] != "libbpf-tools" {
		t.Errorf("rows in order %v: want %s between bpftrace and libbpf-tools", order, newPeer.Name)
	}
	var colored bool
	for _, b := range n.Charts[0].Bars {
		if b.Mode == newPeer.Name {
			colored = b.Color == newPeer.Color
		}
	}
	if !colored || !strings.Contains(render(f, "html"), newPeer.Color) {
		t.Errorf("the bars of %s are not drawn in its file's colour %s", newPeer.Name, newPeer.Color)
	}
	var compared bool
	for _, p := range n.Peers {
		if p.Peer == newPeer.Name {
			compared = p.Tracer == "ebpf" && p.PeerUS == 20 && p.TracerUS == float64(10+slices.Index(ModeNames, "ebpf"))
		}
	}
	if !compared {
		t.Errorf("peer comparisons %+v: want %s against its counterpart ebpf", n.Peers, newPeer.Name)
	}
	if md := render(f, "md"); !strings.Contains(md, "| exec-rate 100/s | newsnoop | 20.0 | ebpf |") {
		t.Errorf("the Markdown report does not compare newsnoop with ebpf:\n%s", md)
	}
}

// firstDiff shows where two texts part.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return al[i] + "\n  vs\n" + bl[i]
		}
	}
	return "one is longer"
}
