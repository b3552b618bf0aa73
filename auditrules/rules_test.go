package auditrules

import (
	"bytes"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/elastic/go-libaudit/v2/rule"

	"github.com/tracer-dev/tracer/tracer"
)

var update = flag.Bool("update", false, "rewrite golden files")

func no32() (int, string, bool)  { return 0, "", false }
func has32() (int, string, bool) { return 4242, "wine", true }

func types(s string) tracer.TypeSet {
	t, err := tracer.ParseTypes(s)
	if err != nil {
		panic(err)
	}
	return t
}

func sigs(s string) tracer.SignalSet {
	set, err := tracer.ParseSignals(s)
	if err != nil {
		panic(err)
	}
	return set
}

var goldenCases = []struct {
	name string
	opts Options
}{
	{"default-x86_64", Options{Arch: "auto", Types: tracer.DefaultTypes, Machine: "x86_64", Has32Bit: no32, ScopeAUID: tracer.UnsetID}},
	{"auto-with-32bit-process", Options{Arch: "auto", Types: tracer.DefaultTypes, Machine: "x86_64", Has32Bit: has32, ScopeAUID: tracer.UnsetID}},
	{"all-both-auidset", Options{Arch: "both", Types: types("all"), AuidSet: true, Machine: "x86_64", ScopeAUID: tracer.UnsetID}},
	{"signal-usr1", Options{Arch: "b64", Types: types("signal"), Signals: sigs("USR1"), Machine: "x86_64", ScopeAUID: tracer.UnsetID}},
	{"signal-usr1-term-both", Options{Arch: "both", Types: types("signal,exec"), Signals: sigs("10,SIGTERM"), Machine: "x86_64", ScopeAUID: tracer.UnsetID}},
	{"aarch64-fork-exec", Options{Arch: "both", Types: types("exec,fork"), Machine: "aarch64", ScopeAUID: tracer.UnsetID}},
	{"trace-scope", Options{Arch: "b64", Types: tracer.DefaultTypes, Machine: "x86_64", ScopeAUID: 2000000007}},
}

// TestGoldenText pins the auditctl text of each rule set.
func TestGoldenText(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			set, err := Build(c.opts)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", c.name+".rules"), []byte(set.Text()))
		})
	}
}

// TestGoldenWire pins the kernel wire format of the x86_64 rule sets, as
// go-libaudit builds it (only meaningful on an amd64 build).
func TestGoldenWire(t *testing.T) {
	if RuntimeMachine() != "x86_64" {
		t.Skip("wire golden files are for x86_64 builds")
	}
	for _, c := range goldenCases {
		if c.opts.Machine != "x86_64" {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			set, err := Build(c.opts)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			for _, r := range set.Rules {
				wf, err := r.Wire()
				if err != nil {
					t.Fatal(err)
				}
				// Round trip: the wire format decodes to the same syscalls and filters.
				back, err := rule.ToCommandLine(wf, false)
				if err != nil {
					t.Fatal(err)
				}
				out.WriteString(back + "\n" + hex.EncodeToString(wf) + "\n")
			}
			checkGolden(t, filepath.Join("testdata", c.name+".wire"), out.Bytes())
		})
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// A common rule filters a1 for tgkill, where a1 is the thread id. Every
// signal rule must test the register its syscalls keep the signal in.
func TestSignalRegister(t *testing.T) {
	set, err := Build(Options{Arch: "b64", Types: types("signal"), Signals: sigs("USR1"), Machine: "x86_64", ScopeAUID: tracer.UnsetID})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, r := range set.Rules {
		var reg string
		for _, f := range r.Filters {
			if strings.HasPrefix(f, "a1=") || strings.HasPrefix(f, "a2=") {
				reg = f[:2]
			}
		}
		for _, s := range r.Syscalls {
			seen[s] = reg
		}
	}
	want := map[string]string{"kill": "a1", "tkill": "a1", "rt_sigqueueinfo": "a1", "pidfd_send_signal": "a1", "tgkill": "a2", "rt_tgsigqueueinfo": "a2"}
	for s, reg := range want {
		if seen[s] != reg {
			t.Errorf("%s: signal filtered on %q, want %q", s, seen[s], reg)
		}
	}
}

func TestArchNotesAndMissingSyscalls(t *testing.T) {
	set, err := Build(Options{Arch: "auto", Types: tracer.DefaultTypes, Machine: "x86_64", Has32Bit: has32, ScopeAUID: tracer.UnsetID})
	if err != nil {
		t.Fatal(err)
	}
	// Per arch: the exec rule (successful execs only) and the rest.
	if len(set.Rules) != 4 || set.Rules[2].Arch != "b32" || !strings.Contains(set.Notes[0], "4242 (wine)") {
		t.Errorf("auto with a 32-bit process: rules %v notes %v", set.Rules, set.Notes)
	}
	set, err = Build(Options{Arch: "b64", Types: types("fork"), Machine: "aarch64", ScopeAUID: tracer.UnsetID})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(set.Rules[0].Syscalls, ","); got != "clone,clone3" {
		t.Errorf("aarch64 fork syscalls = %s, want clone,clone3 (no fork, vfork)", got)
	}
	if len(set.Notes) != 1 || !strings.Contains(set.Notes[0], "fork, vfork") {
		t.Errorf("aarch64 notes = %v", set.Notes)
	}
}

func TestEveryRuleCarriesKey(t *testing.T) {
	for _, c := range goldenCases {
		set, err := Build(c.opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range set.Rules {
			if !strings.HasSuffix(r.Text(), " -k "+Key) {
				t.Errorf("%s: rule without key: %s", c.name, r.Text())
			}
		}
	}
}

func TestBadInput(t *testing.T) {
	for _, o := range []Options{
		{Arch: "b16", Types: tracer.DefaultTypes},
		{Arch: "b64", Types: 0},
		{Arch: "b64", Types: tracer.DefaultTypes, Machine: "sparc"},
	} {
		if _, err := Build(o); err == nil {
			t.Errorf("Build(%+v): no error", o)
		}
	}
}

// Failed exec attempts cost nothing by default: the exec syscalls have a
// rule of their own with -F success=1; --exec-failures folds them back.
// A tracer's own pid is excluded in the kernel.
func TestExecSuccessAndSelf(t *testing.T) {
	set, err := Build(Options{Arch: "b64", Types: tracer.DefaultTypes, Machine: "x86_64", ScopeAUID: tracer.UnsetID, ExcludePID: 4242})
	if err != nil {
		t.Fatal(err)
	}
	text := set.Text()
	if !strings.Contains(text, "-S execve -S execveat -F success=1 -F pid!=4242") || strings.Count(text, "pid!=4242") != len(set.Rules) {
		t.Errorf("rules:\n%s", text)
	}
	set, err = Build(Options{Arch: "b64", Types: tracer.DefaultTypes, Machine: "x86_64", ScopeAUID: tracer.UnsetID, ExecFailures: true})
	if err != nil {
		t.Fatal(err)
	}
	if text := set.Text(); strings.Contains(text, "success") || len(set.Rules) != 1 {
		t.Errorf("with exec failures:\n%s", text)
	}
}
