// SPDX-License-Identifier: Apache-2.0

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

	"github.com/tracer-dev/tracer/tracer/vocab"
)

var update = flag.Bool("update", false, "rewrite golden files")

func no32() (int, string, bool)  { return 0, "", false }
func has32() (int, string, bool) { return 4242, "wine", true }

func types(s string) vocab.TypeSet {
	t, err := vocab.ParseTypes(s)
	if err != nil {
		panic(err)
	}
	return t
}

func sigs(s string) vocab.SignalSet {
	set, err := vocab.ParseSignals(s)
	if err != nil {
		panic(err)
	}
	return set
}

var goldenCases = []struct {
	name string
	opts Options
}{
	{"default-x86_64", Options{Arch: "auto", Types: vocab.DefaultTypes, Machine: "x86_64", Has32Bit: no32, ScopeAUID: vocab.UnsetID}},
	{"auto-with-32bit-process", Options{Arch: "auto", Types: vocab.DefaultTypes, Machine: "x86_64", Has32Bit: has32, ScopeAUID: vocab.UnsetID}},
	{"all-both-auidset", Options{Arch: "both", Types: types("all"), AuidSet: true, Machine: "x86_64", ScopeAUID: vocab.UnsetID}},
	{"signal-usr1", Options{Arch: "b64", Types: types("signal"), Signals: sigs("USR1"), Machine: "x86_64", ScopeAUID: vocab.UnsetID}},
	{"signal-usr1-term-both", Options{Arch: "both", Types: types("signal,exec"), Signals: sigs("10,SIGTERM"), Machine: "x86_64", ScopeAUID: vocab.UnsetID}},
	{"aarch64-fork-exec", Options{Arch: "both", Types: types("exec,fork"), Machine: "aarch64", ScopeAUID: vocab.UnsetID}},
	{"trace-scope", Options{Arch: "b64", Types: vocab.DefaultTypes, Machine: "x86_64", ScopeAUID: 2000000007}},
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
	set, err := Build(Options{Arch: "b64", Types: types("signal"), Signals: sigs("USR1"), Machine: "x86_64", ScopeAUID: vocab.UnsetID})
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
	set, err := Build(Options{Arch: "auto", Types: vocab.DefaultTypes, Machine: "x86_64", Has32Bit: has32, ScopeAUID: vocab.UnsetID})
	if err != nil {
		t.Fatal(err)
	}
	// Per arch: the exec rule (successful execs only), fork, and the
	// signal syscalls by the register that holds the signal (signal 0 left
	// out), tgkill apart (SIGURG left out).
	if len(set.Rules) != 10 || set.Rules[5].Arch != "b32" || !strings.Contains(set.Notes[0], "4242 (wine)") {
		t.Errorf("auto with a 32-bit process: rules %v notes %v", set.Rules, set.Notes)
	}
	set, err = Build(Options{Arch: "b64", Types: types("fork"), Machine: "aarch64", ScopeAUID: vocab.UnsetID})
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
		{Arch: "b16", Types: vocab.DefaultTypes},
		{Arch: "b64", Types: 0},
		{Arch: "b64", Types: vocab.DefaultTypes, Machine: "sparc"},
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
	set, err := Build(Options{Arch: "b64", Types: vocab.DefaultTypes, Machine: "x86_64", ScopeAUID: vocab.UnsetID, ExcludePID: 4242})
	if err != nil {
		t.Fatal(err)
	}
	text := set.Text()
	if !strings.Contains(text, "-S execve -S execveat -F success=1 -F pid!=4242") || strings.Count(text, "pid!=4242") != len(set.Rules) {
		t.Errorf("rules:\n%s", text)
	}
	set, err = Build(Options{Arch: "b64", Types: vocab.DefaultTypes, Machine: "x86_64", ScopeAUID: vocab.UnsetID, ExecFailures: true})
	if err != nil {
		t.Fatal(err)
	}
	if text := set.Text(); strings.Contains(text, "success") || len(set.Rules) != 4 {
		t.Errorf("with exec failures:\n%s", text)
	}
}

// Existence checks (signal 0) are left out in the kernel unless asked
// for: each signal syscall's rule tests the register that holds its
// signal. --signal all and --signal 0 keep them.
func TestExistenceChecksLeftOutInKernel(t *testing.T) {
	for _, c := range []struct {
		signals string
		want    []string // the signal rules' filters
	}{
		{"", []string{"a1!=0", "a2!=0", "a2!=23", "a2!=0"}}, // tgkill's rule also leaves out SIGURG
		{"all", nil},
		{"0,USR1", []string{"a1=0", "a1=10", "a2=0", "a2=10"}},
		{"URG", []string{"a1=23", "a2=23"}},
	} {
		set, err := Build(Options{Arch: "b64", Types: types("signal"), Signals: sigs(c.signals), Machine: "x86_64", ScopeAUID: vocab.UnsetID})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range set.Rules {
			for _, f := range r.Filters {
				if f[0] == 'a' && f[1] != 'u' {
					got = append(got, f)
				}
			}
			if c.signals != "" && strings.Contains(r.Text(), "-S tgkill") != strings.Contains(r.Text(), "-S rt_tgsigqueueinfo") {
				t.Errorf("--signal %q: tgkill and rt_tgsigqueueinfo apart: %s", c.signals, r.Text())
			}
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("--signal %q: signal filters %v, want %v\n%s", c.signals, got, c.want, set.Text())
		}
	}
}

// --uid is a kernel filter on audit: every rule once per uid (the fields
// of a rule are ANDed), up to MaxRuleUIDs; more are left to user space.
func TestUIDsInKernel(t *testing.T) {
	set, err := Build(Options{Arch: "b64", Types: types("exec,signal"), Signals: sigs("USR1"), Machine: "x86_64", ScopeAUID: vocab.UnsetID, UIDs: []uint32{0, 1000}})
	if err != nil {
		t.Fatal(err)
	}
	want := `-a always,exit -F arch=b64 -S execve -S execveat -F success=1 -F uid=0 -k tracer
-a always,exit -F arch=b64 -S execve -S execveat -F success=1 -F uid=1000 -k tracer
-a always,exit -F arch=b64 -S kill -S tkill -S rt_sigqueueinfo -S pidfd_send_signal -F a1=10 -F uid=0 -k tracer
-a always,exit -F arch=b64 -S kill -S tkill -S rt_sigqueueinfo -S pidfd_send_signal -F a1=10 -F uid=1000 -k tracer
-a always,exit -F arch=b64 -S tgkill -S rt_tgsigqueueinfo -F a2=10 -F uid=0 -k tracer
-a always,exit -F arch=b64 -S tgkill -S rt_tgsigqueueinfo -F a2=10 -F uid=1000 -k tracer
`
	if got := set.Text(); !strings.HasSuffix(got, want) {
		t.Errorf("rules:\n%s\nwant:\n%s", got, want)
	}
	for _, r := range set.Rules {
		if _, err := r.Wire(); err != nil {
			t.Errorf("%s: %v", r.Text(), err)
		}
	}
	many := make([]uint32, MaxRuleUIDs+1)
	for i := range many {
		many[i] = uint32(1000 + i)
	}
	o := Options{Arch: "b64", Types: types("exec"), Machine: "x86_64", ScopeAUID: vocab.UnsetID, UIDs: many}
	if set, err = Build(o); err != nil {
		t.Fatal(err)
	}
	if o.KernelUIDs() || strings.Contains(set.Text(), "uid=") || len(set.Rules) != 1 {
		t.Errorf("%d uids: want them left to user space:\n%s", len(many), set.Text())
	}
}

// --exe with the absolute path of a file is a kernel filter on audit: the
// exec rule carries -F path= (an inode watch). Names, relative paths,
// symlinks and missing files are left to user space.
func TestExePathInKernel(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(prog, link); err != nil {
		t.Fatal(err)
	}
	for exe, want := range map[string]string{
		prog: prog, dir + "/./prog": prog, "prog": "", "./prog": "", link: "", dir: "",
		filepath.Join(dir, "missing"): "", "/tmp/a b": "",
	} {
		if got := KernelExePath(exe); got != want {
			t.Errorf("KernelExePath(%q) = %q, want %q", exe, got, want)
		}
	}
	for _, failures := range []bool{false, true} {
		set, err := Build(Options{Arch: "b64", Types: types("exec"), Machine: "x86_64", ScopeAUID: vocab.UnsetID, ExePath: "/usr/bin/true", ExecFailures: failures, ExcludePID: 42})
		if err != nil {
			t.Fatal(err)
		}
		want := "-a always,exit -F arch=b64 -S execve -S execveat -F success=1 -F path=/usr/bin/true -F pid!=42 -k tracer\n"
		if failures {
			want = strings.Replace(want, "-F success=1 ", "", 1)
		}
		if got := set.Text(); !strings.HasSuffix(got, want) || len(set.Rules) != 1 {
			t.Errorf("exec failures %v: rules\n%s\nwant\n%s", failures, got, want)
		}
		if _, err := set.Rules[0].Wire(); err != nil {
			t.Errorf("%s: %v", set.Rules[0].Text(), err)
		}
	}
}

// The Go runtime's preemption (SIGURG by tgkill to a thread of its own
// process) is left out in the kernel by default: tgkill gets a rule of its
// own whose signal register must not hold 23. A rule field cannot compare
// the target with the sender, so it also leaves out a SIGURG tgkill sends
// to another process; kill, tkill and rt_tgsigqueueinfo keep SIGURG.
// --signal URG and --signal all keep them.
func TestRuntimePreemptionLeftOutInKernel(t *testing.T) {
	for _, c := range []struct {
		signals string
		want    []string // each signal rule's syscalls and signal filters
	}{
		{"", []string{
			"kill,tkill,rt_sigqueueinfo,pidfd_send_signal a1!=0",
			"tgkill a2!=0 a2!=23",
			"rt_tgsigqueueinfo a2!=0",
		}},
		{"URG", []string{"kill,tkill,rt_sigqueueinfo,pidfd_send_signal a1=23", "tgkill,rt_tgsigqueueinfo a2=23"}},
		{"all", []string{"kill,tkill,tgkill,rt_sigqueueinfo,rt_tgsigqueueinfo,pidfd_send_signal"}},
	} {
		set, err := Build(Options{Arch: "b64", Types: types("signal"), Signals: sigs(c.signals), Machine: "x86_64", ScopeAUID: vocab.UnsetID})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range set.Rules {
			s := strings.Join(r.Syscalls, ",")
			for _, f := range r.Filters {
				if f[0] == 'a' && f[1] != 'u' {
					s += " " + f
				}
			}
			got = append(got, s)
		}
		if strings.Join(got, "; ") != strings.Join(c.want, "; ") {
			t.Errorf("--signal %q: signal rules\n%v, want\n%v\n%s", c.signals, got, c.want, set.Text())
		}
		// The kernel takes them as they are.
		for _, r := range set.Rules {
			if _, err := r.Wire(); err != nil {
				t.Errorf("--signal %q: %s: %v", c.signals, r.Text(), err)
			}
		}
	}
}
