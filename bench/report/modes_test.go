// SPDX-License-Identifier: Apache-2.0

package report

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
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

// TestReportNamesNoModeList checks that the report keeps no list of modes
// of its own: outside modes.go (the table for files of earlier tracers),
// its sources name only the baseline and the modes that are this tool's
// backends or the node's auditd, which the recommendation weighs.
func TestReportNamesNoModeList(t *testing.T) {
	allowed := map[string]bool{"none": true, "audit": true, "ebpf": true, "auditd": true}
	known := map[string]bool{}
	for _, m := range legacyModes {
		known[m.Name] = true
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "modes.go" {
			continue
		}
		fs := token.NewFileSet()
		af, err := parser.ParseFile(fs, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			if l, ok := n.(*ast.BasicLit); ok && l.Kind == token.STRING {
				if v, err := strconv.Unquote(l.Value); err == nil && known[v] && !allowed[v] {
					t.Errorf("%s names mode %q: take what a mode is from the result file (run.modes)", fs.Position(l.Pos()), v)
				}
			}
			return true
		})
	}
}
