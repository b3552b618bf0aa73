// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the table of modes in docs/overhead.md")

// TestModeRegistry checks that a mode is what its registration says, and
// that every list of modes is made of the registrations: adding a mode
// touches its own file alone.
func TestModeRegistry(t *testing.T) {
	var names []string
	ranks := map[int]string{}
	for name, s := range modeSpecs {
		names = append(names, name)
		if other, dup := ranks[s.rank]; dup {
			t.Errorf("%s and %s both rank %d: the order of the lists would depend on the order of registration", name, other, s.rank)
		}
		ranks[s.rank] = name
	}
	sort.Slice(names, func(i, j int) bool { return modeSpecs[names[i]].rank < modeSpecs[names[j]].rank })
	if !slices.Equal(ModeNames, names) {
		t.Errorf("ModeNames = %v, want the registered modes in rank order %v", ModeNames, names)
	}
	filter := func(keep func(modeSpec) bool) []string {
		var out []string
		for _, n := range names {
			if keep(modeSpecs[n]) {
				out = append(out, n)
			}
		}
		return out
	}
	if want := filter(func(s modeSpec) bool { return s.inDefault }); !slices.Equal(DefaultModes, want) {
		t.Errorf("DefaultModes = %v, want %v", DefaultModes, want)
	}
	if want := filter(func(s modeSpec) bool { return s.inQuick }); !slices.Equal(QuickModes, want) {
		t.Errorf("QuickModes = %v, want %v", QuickModes, want)
	}
	if want := filter(func(s modeSpec) bool { return s.inDefault && !s.inQuick }); !slices.Equal(QuickLeavesOut(), want) {
		t.Errorf("QuickLeavesOut() = %v, want %v", QuickLeavesOut(), want)
	}
	if ModeNames[0] != baseline || !slices.Contains(QuickModes, baseline) {
		t.Errorf("the baseline %s runs first, in every set: %v, quick %v", baseline, ModeNames, QuickModes)
	}

	// make deps installs what the modes run (coreutils is in every Debian).
	makefile, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	installed := map[string]bool{"coreutils": true}
	for _, m := range regexp.MustCompile(`(?m)^[A-Z_]*PACKAGES :=(.*)$`).FindAllStringSubmatch(string(makefile), -1) {
		for _, p := range strings.Fields(m[1]) {
			installed[p] = true
		}
	}

	fileRe := regexp.MustCompile(`^(mode|floor)_[a-z0-9_]+\.go$`)
	for _, name := range names {
		s := modeSpecs[name]
		if s.inQuick && !s.inDefault {
			t.Errorf("%s: in --quick's set but not in the default one", name)
		}
		if s.floor != "" {
			f, ok := modeSpecs[s.floor]
			switch {
			case !ok:
				t.Errorf("%s: its floor %q is not a registered mode", name, s.floor)
			case f.floor != "" || f.peer:
				t.Errorf("%s: its floor %s has a floor of its own (%q) or is a peer (%v)", name, s.floor, f.floor, f.peer)
			case !isFloor(s.floor):
				t.Errorf("isFloor(%q) = false", s.floor)
			case s.inDefault && !f.inDefault, s.inQuick && !f.inQuick:
				t.Errorf("%s runs by default or with --quick without its floor %s", name, s.floor)
			}
			if f.audit != s.audit {
				t.Errorf("%s (audit %v) and its floor %s (audit %v): a floor watches with what its mode watches", name, s.audit, s.floor, f.audit)
			}
		}
		if isFloor(name) && !strings.HasPrefix(s.file, "floor_") || !isFloor(name) && strings.HasPrefix(s.file, "floor_") {
			t.Errorf("%s registers in %s: floors, and floors alone, register in floor_*.go", name, s.file)
		}
		// The report reads a peer beside its counterpart and compares their
		// costs: one of this tool's modes, registered.
		if c, ok := modeSpecs[s.counterpart]; s.counterpart != "" && (!ok || c.peer || isFloor(s.counterpart) || c.counterpart != "") {
			t.Errorf("%s: its counterpart %q is not a registered mode of this tool (not a peer, a floor or a variant)", name, s.counterpart)
		}
		if s.peer && s.counterpart == "" {
			t.Errorf("%s: a peer names its counterpart, the mode of this tool it is compared with", name)
		}
		if s.color != "" && !regexp.MustCompile(`^#[0-9a-f]{6}$`).MatchString(s.color) {
			t.Errorf("%s: colour %q is not #rrggbb", name, s.color)
		}
		if s.privateAuditd && !s.audit {
			t.Errorf("%s runs an audit daemon but does not say it uses audit", name)
		}
		if s.watches == "" || s.countedFrom == "" || strings.Contains(s.watches+s.countedFrom, "|") {
			t.Errorf("%s: say what watches (%q) and where its events are counted from (%q), without |, for docs/overhead.md", name, s.watches, s.countedFrom)
		}
		if s.needs.root == (name == baseline) {
			t.Errorf("%s: needs root %v: every mode but the baseline loads rules or probes or runs a watcher as root", name, s.needs.root)
		}
		for _, tl := range s.needs.tools {
			if len(tl.names) == 0 || tl.deb == "" || tl.install == "" {
				t.Errorf("%s: tool %+v: give its names, its Debian package and how to install it", name, tl)
			}
			if !strings.Contains(tl.install, "apt-get install "+tl.deb) {
				t.Errorf("%s: tool %s: the hint %q does not install its Debian package %s", name, tl.names[0], tl.install, tl.deb)
			}
			if !installed[tl.deb] {
				t.Errorf("%s: tool %s: make deps does not install its package %s", name, tl.names[0], tl.deb)
			}
		}
		// The mode is made by its registration, in the file that
		// registers it, next to what it does.
		if !fileRe.MatchString(s.file) {
			t.Errorf("%s registers in %s, not in a mode's own file (mode_*.go, floor_*.go)", name, s.file)
		}
		m, err := s.make(modeEnv{self: "/bin/true", hasCgroup: true})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if m.Name() != name {
			t.Errorf("mode %s makes a mode named %s", name, m.Name())
		}
		setup, _ := reflect.TypeOf(m).MethodByName("Setup")
		impl := runtime.FuncForPC(setup.Func.Pointer())
		if file, _ := impl.FileLine(impl.Entry()); filepath.Base(file) != s.file {
			t.Errorf("%s registers in %s but is written in %s (%s)", name, s.file, filepath.Base(file), impl.Name())
		}
		w := &Workload{Expected: Tally{Exec: 5, Fork: 4, Signal: 1}}
		if got, want := expectedOf(name, w), w.Expected; s.execOnly && got != (Tally{Exec: 5}) || !s.execOnly && got != want {
			t.Errorf("%s (exec only: %v) expects %+v of %+v", name, s.execOnly, got, w.Expected)
		}
	}

	func() {
		defer func() {
			if recover() == nil {
				t.Error("registering a mode twice does not panic")
			}
		}()
		registerMode(modeSpec{name: baseline})
	}()
	if _, err := newMode("x", modeEnv{}); err == nil || !strings.Contains(err.Error(), strings.Join(ModeNames, ", ")) {
		t.Errorf("newMode(x): %v, want the registered modes named", err)
	}
	if _, err := parseModes([]string{"none", "x"}); err == nil {
		t.Error("parseModes accepts an unknown mode")
	}
	if got, _ := parseModes(nil); !slices.Equal(got, DefaultModes) {
		t.Errorf("parseModes(nil) = %v, want DefaultModes %v", got, DefaultModes)
	}
}

// TestModeNamesOnlyInModeFiles checks that no list of modes is written by
// hand: outside the files of the modes (mode_*.go, floor_*.go), no Go
// source of bench or of the bench command names a mode. state_linux.go
// names the program auditd, the libbpf-tools' parser the program
// execsnoop, not the modes.
func TestModeNamesOnlyInModeFiles(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../cmd/tracer/bench.go")
	checked := 0
	for _, f := range files {
		base := filepath.Base(f)
		if strings.HasSuffix(base, "_test.go") || strings.HasPrefix(base, "mode_") || strings.HasPrefix(base, "floor_") ||
			base == "state_linux.go" || base == "count_libbpf.go" {
			continue
		}
		checked++
		fs := token.NewFileSet()
		af, err := parser.ParseFile(fs, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			if l, ok := n.(*ast.BasicLit); ok && l.Kind == token.STRING {
				if v, err := strconv.Unquote(l.Value); err == nil && modeSpecs[v].name != "" {
					t.Errorf("%s names mode %q: derive it from the registrations (registerMode) instead", fs.Position(l.Pos()), v)
				}
			}
			return true
		})
	}
	if checked < 10 {
		t.Errorf("checked %d files: the test does not find bench's sources", checked)
	}
}

// modesTable is docs/overhead.md's table of modes, made of the
// registrations.
func modesTable() string {
	var b strings.Builder
	b.WriteString("| mode | what watches | events counted from | floor | runs | needs |\n|---|---|---|---|---|---|\n")
	for _, name := range ModeNames {
		s := modeSpecs[name]
		floor, runs := "--", "when named in `--modes`"
		if s.floor != "" {
			floor = "`" + s.floor + "`"
		}
		switch {
		case s.inQuick:
			runs = "by default"
		case s.inDefault:
			runs = "by default, not with `--quick`"
		}
		var need []string
		if s.needs.root {
			need = append(need, "root")
		}
		// Tools installed alike are named together.
		for i := 0; i < len(s.needs.tools); {
			j := i
			var tools []string
			for ; j < len(s.needs.tools) && s.needs.tools[j].install == s.needs.tools[i].install; j++ {
				tools = append(tools, "`"+s.needs.tools[j].names[0]+"`")
			}
			need = append(need, strings.Join(tools, ", ")+": "+s.needs.tools[i].install)
			i = j
		}
		if len(need) == 0 {
			need = []string{"--"}
		}
		b.WriteString("| `" + name + "` | " + s.watches + " | " + s.countedFrom + " | " + floor + " | " + runs + " | " + strings.Join(need, "; ") + " |\n")
	}
	return b.String()
}

// TestModesDocumented checks that docs/overhead.md's table of modes is the
// one the registrations make; -update rewrites it.
func TestModesDocumented(t *testing.T) {
	const doc = "../docs/overhead.md"
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	const heading = "### Modes\n"
	i := strings.Index(text, heading)
	if i < 0 {
		t.Fatalf("%s has no %q section", doc, strings.TrimSpace(heading))
	}
	start := i + strings.Index(text[i:], "\n|") + 1
	end := start + strings.Index(text[start:], "\n\n") + 1
	if start <= i || end <= start {
		t.Fatalf("%s: no table below %q", doc, strings.TrimSpace(heading))
	}
	want := modesTable()
	if text[start:end] == want {
		return
	}
	if *update {
		if err := os.WriteFile(doc, []byte(text[:start]+want+text[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's table of modes is not the registrations' (go test ./bench -run TestModesDocumented -update rewrites it):\n%s\nwant:\n%s", doc, text[start:end], want)
}
