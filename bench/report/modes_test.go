package report

import (
	"slices"
	"sort"
	"testing"

	"github.com/tracer-dev/tracer/bench/result"
)

// TestReportModeOrder pins the order a file of an earlier tracer (no
// run.modes) reads in: each mode of this tool with its floors, then what
// is read beside it.
func TestReportModeOrder(t *testing.T) {
	m := newModeTable(nil)
	var names []string
	for n := range m.order {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return m.rank(names[i]) < m.rank(names[j]) })
	want := []string{"none", "audit", "audit-floor", "audit-floor-classic", "auditd", "auditd-incremental", "auditd-sync",
		"auditd-data", "laurel", "ebpf", "ebpf-floor", "ebpf-syscalls", "bpftrace", "libbpf-tools", "ebpf-exec", "execsnoop"}
	if !slices.Equal(names, want) {
		t.Errorf("order %v, want %v", names, want)
	}
	if m.rank("unknown") != len(want) || m.color("unknown") != defaultColor || m.counterpart("auditd") != "audit" || m.counterpart("ebpf-syscalls") != "" {
		t.Errorf("unknown mode: rank %d, colour %s; counterparts %q %q", m.rank("unknown"), m.color("unknown"), m.counterpart("auditd"), m.counterpart("ebpf-syscalls"))
	}
}

// TestReportModeTableFromFile checks what a file may say of its modes: a
// colour that is not #rrggbb is not drawn (it goes into SVG and CSS as it
// is), counterparts in a loop end, and the first file's word wins.
func TestReportModeTableFromFile(t *testing.T) {
	m := newModeTable([]result.Mode{
		{Name: "a", Rank: 1, Counterpart: "b", Color: `red"/><script>`},
		{Name: "b", Rank: 2, Counterpart: "a", Color: "#00ff00"},
	}, []result.Mode{{Name: "b", Rank: 0, Color: "#ffffff"}, {Name: "c", Rank: 3, Peer: true, Counterpart: "a"}})
	if m.color("a") != defaultColor || m.color("b") != "#00ff00" {
		t.Errorf("colours a %s, b %s", m.color("a"), m.color("b"))
	}
	if m.rank("a") > m.rank("b") || m.rank("b") > m.rank("c") || m.counterpart("c") != "a" {
		t.Errorf("ranks a %d b %d c %d, counterpart of c %q", m.rank("a"), m.rank("b"), m.rank("c"), m.counterpart("c"))
	}
}
