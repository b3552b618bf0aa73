// SPDX-License-Identifier: Apache-2.0

package cost

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/elastic/go-libaudit/v2/rule"
	"github.com/elastic/go-libaudit/v2/rule/flags"
)

type costWant struct {
	kind, severity string
	lines          []int
}

func costSummary(rep Report) []costWant {
	var out []costWant
	for _, f := range rep.Findings {
		out = append(out, costWant{f.Kind, f.Severity, f.Lines})
	}
	return out
}

func readCostFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCostSTIG checks the findings on a STIG-like rule set on a node with no
// 32-bit process: -e 2, the rules that could be merged, the b32 copies, and
// the filtered rules on open/openat.
func TestCostSTIG(t *testing.T) {
	rep := AnalyzeText(readCostFixture(t, "stig.rules"), Options{Machine: "x86_64", Scanned32: true})
	want := []costWant{
		{KindLocked, High, nil},
		{KindMergeable, Medium, []int{36, 40, 42}},
		{KindMergeable, Medium, []int{37, 41, 43}},
		{KindMergeable, Medium, []int{56, 58}},
		{KindMergeable, Medium, []int{57, 59}},
		{KindMergeable, Medium, []int{64, 65}},
		{KindHotFiltered, Low, []int{46, 47, 48, 49}},
		{KindB32Unused, Low, []int{9, 11, 36, 38, 40, 42, 46, 48, 52, 56, 58, 62, 64, 65}},
		{KindRuleCount, Low, nil},
	}
	if got := costSummary(rep); !reflect.DeepEqual(got, want) {
		t.Errorf("findings:\n got %v\nwant %v", got, want)
	}
	if !rep.Locked || len(rep.Unparsed) != 0 {
		t.Errorf("locked %v, unparsed %q", rep.Locked, rep.Unparsed)
	}
	// 27 syscall rules on the exit list; the 10 watches and 7 path= rules
	// are filed by inode and not walked per syscall.
	if rep.ExitRules != 27 || len(rep.Rules) != 44 {
		t.Errorf("exit rules %d of %d, want 27 of 44", rep.ExitRules, len(rep.Rules))
	}
	if want := map[string]int{"creat": 2, "open": 2, "openat": 2}; !reflect.DeepEqual(rep.HotChecks, want) {
		t.Errorf("hot checks %v, want %v", rep.HotChecks, want)
	}
	// The merge fix keeps the key and fields.
	if got, want := rep.Findings[3].Fix, "merge into one: -a always,exit -F arch=b32 -S init_module,finit_module,delete_module -k module_chng"; got != want {
		t.Errorf("fix %q, want %q", got, want)
	}
	// b32 execve (11) shares its number with the 64-bit munmap.
	if !strings.Contains(rep.Findings[7].Message, "munmap (b32 execve)") {
		t.Errorf("b32 finding does not name the aliased hot syscalls: %s", rep.Findings[7].Message)
	}

	// With a 32-bit process running, the b32 rules are needed.
	rep32 := AnalyzeText(readCostFixture(t, "stig.rules"), Options{Scanned32: true, Has32Bit: true})
	for _, f := range rep32.Findings {
		if f.Kind == KindB32Unused {
			t.Errorf("b32 finding with a 32-bit process running: %v", f)
		}
	}
}

// TestCostCommonMistakes checks common rules and common mistakes.
func TestCostCommonMistakes(t *testing.T) {
	rep := AnalyzeText(readCostFixture(t, "mistakes.rules"), Options{Scanned32: true})
	want := []costWant{
		{KindHot, High, []int{7}},
		{KindSignalReg, High, []int{3}},
		{KindSignalReg, High, []int{9}},
		{KindNoArch, Medium, []int{6}},
		{KindAllSyscalls, Medium, []int{8}},
		{KindMergeable, Medium, []int{10, 11}},
		{KindHotFiltered, Low, []int{6}},
		{KindB32Unused, Low, []int{5}},
	}
	if got := costSummary(rep); !reflect.DeepEqual(got, want) {
		t.Errorf("findings:\n got %v\nwant %v", got, want)
	}
	sig := rep.Findings[1]
	if want := "split it: -a always,exit -F arch=b64 -S kill,tkill -F a1=10 -k signal10 ; -a always,exit -F arch=b64 -S tgkill -F a2=10 -k signal10"; sig.Fix != want {
		t.Errorf("signal fix\n got %q\nwant %q", sig.Fix, want)
	}
	if !strings.Contains(sig.Message, "tgkill(tgid, tid, sig)") {
		t.Errorf("signal message: %s", sig.Message)
	}
	// The b32 rule's exit (1) and fork (2) are the 64-bit write and open.
	if m := rep.Findings[7].Message; !strings.Contains(m, "write (b32 exit)") || !strings.Contains(m, "open (b32 fork)") {
		t.Errorf("b32 aliases: %s", m)
	}
}

func TestCostSmallCases(t *testing.T) {
	for _, tc := range []struct {
		name, rules string
		want        []string // kinds
	}{
		{"clean tracer rules", "-a always,exit -F arch=b64 -S execve,execveat -k tracer\n-a always,exit -F arch=b64 -S kill,tkill -F a1=10 -k tracer\n-a always,exit -F arch=b64 -S tgkill -F a2=10 -k tracer", nil},
		{"all unfiltered", "-a always,exit -S all", []string{KindAllSyscalls}},
		{"never rules cost nothing to flag", "-a never,exit -F arch=b64 -S read", nil},
		{"tgkill a1 as a tid filter", "-a always,exit -F arch=b64 -S tgkill -F a1=4242 -k t", nil},
		{"tgkill a2 is right", "-a always,exit -F arch=b64 -S tgkill -F a2=10 -k t", nil},
		{"task never", "-a never,task", []string{KindTaskNever}},
		{"task never for one uid", "-a task,never -F uid=0", nil},
		{"auid!=unset does not narrow", "-a always,exit -F arch=b64 -S openat -F auid!=4294967295", []string{KindHot}},
		{"dir rule with all syscalls", "-a always,exit -S all -F dir=/etc -F perm=wa -k etc", nil},
		{"watch", "-w /etc/passwd -p wa -k identity", nil},
		{"legacy exit,always order, b32 needed", "-a exit,always -F arch=b32 -S execve -k x", nil},
		{"different keys do not merge", "-a always,exit -F arch=b64 -S kill -k a\n-a always,exit -F arch=b64 -S tkill -k b", nil},
	} {
		rep := AnalyzeText(tc.rules, Options{Scanned32: true, Has32Bit: true})
		var got []string
		for _, f := range rep.Findings {
			got = append(got, f.Kind)
		}
		if !reflect.DeepEqual(got, tc.want) || len(rep.Unparsed) > 0 {
			t.Errorf("%s: kinds %v (unparsed %q), want %v", tc.name, got, rep.Unparsed, tc.want)
		}
	}
}

func TestParseCostRuleForms(t *testing.T) {
	// The rules.d form and the `auditctl -l` form of the same rule.
	a, _, _ := ParseRules("-a exit,always -F arch=x86_64 -S kill -S tkill -F auid!=-1 -k sig")
	b, _, _ := ParseRules("-a always,exit -F arch=b64 -S kill,tkill -F auid!=unset -F key=sig")
	if len(a) != 1 || len(b) != 1 {
		t.Fatalf("parsed %d and %d rules", len(a), len(b))
	}
	a[0].Text, b[0].Text = "", ""
	if !reflect.DeepEqual(a[0], b[0]) {
		t.Errorf("forms differ:\n%+v\n%+v", a[0], b[0])
	}
	_, unparsed, _ := ParseRules("-a always\n-S kill\nnonsense\n-F arch=b64")
	if len(unparsed) != 4 {
		t.Errorf("unparsed %q, want all 4 lines", unparsed)
	}
}

// TestCostThroughWireFormat passes the STIG rules through the kernel's wire
// format and back, as doctor reads them from a node, and expects the same
// findings (the line numbers aside).
func TestCostThroughWireFormat(t *testing.T) {
	text := readCostFixture(t, "stig.rules")
	var listed []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "-a ") && !strings.HasPrefix(line, "-w ") {
			continue
		}
		r, err := flags.Parse(line)
		if err != nil {
			t.Fatalf("parsing %q: %v", line, err)
		}
		wf, err := rule.Build(r)
		if err != nil {
			t.Fatalf("building %q: %v", line, err)
		}
		s, err := rule.ToCommandLine(wf, false)
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, s)
	}
	direct := AnalyzeText(text, Options{Scanned32: true})
	viaKernel := AnalyzeText(strings.Join(listed, "\n"), Options{Scanned32: true})
	kinds := func(r Report) (k []string, n []int) {
		for _, f := range r.Findings {
			if f.Kind != KindLocked {
				k = append(k, f.Kind)
				n = append(n, len(f.Rules))
			}
		}
		return k, n
	}
	k1, n1 := kinds(direct)
	k2, n2 := kinds(viaKernel)
	if !reflect.DeepEqual(k1, k2) || !reflect.DeepEqual(n1, n2) || viaKernel.ExitRules != direct.ExitRules {
		t.Errorf("through the wire format:\n got %v %v (%d exit rules)\nwant %v %v (%d)", k2, n2, viaKernel.ExitRules, k1, n1, direct.ExitRules)
	}
	if len(viaKernel.Unparsed) != 0 {
		t.Errorf("unparsed: %q", viaKernel.Unparsed)
	}
}
