// SPDX-License-Identifier: Apache-2.0

package cost

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzParseRules reads rules in auditctl syntax, as `doctor` reads the
// node's loaded rules and rules.d files, which whoever administers the
// node wrote. Each line is a rule, a line left unparsed or one skipped
// (blank, comment, control), and reads the same alone as among the
// others; a rule's Line and Text are the input's; the analysis of any
// input names only rules it read. The corpus in testdata/fuzz/
// FuzzParseRules holds the rule files of testdata and ../testdata.
func FuzzParseRules(f *testing.F) {
	f.Add("-a always,exit -F arch=b64 -S execve,execveat -k tracer\n-e 2\n")
	f.Add("-w /etc/passwd -p wa -k identity\n# comment\n\n-a never,task\n-a exit,always -S all -F auid!=-1\n-b 8192")
	f.Add("-a always,exit -F arch=b32 -S kill -F a1=0xa -F key=sig\n-D\nNo rules\n-a bogus\n")
	f.Fuzz(func(t *testing.T, text string) {
		rules, unparsed, locked := ParseRules(text)
		lines := strings.Split(text, "\n")
		kept := 0 // lines neither blank nor comments
		for _, l := range lines {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				kept++
			}
		}
		if len(rules)+len(unparsed) > kept {
			t.Fatalf("%d rules and %d unparsed lines from %d lines", len(rules), len(unparsed), kept)
		}
		last := 0
		for _, r := range rules {
			if r.Line <= last || r.Line > len(lines) || r.Text != strings.TrimSpace(lines[r.Line-1]) {
				t.Fatalf("rule %+v is not line %d of the input", r, r.Line)
			}
			last = r.Line
			alone, un, _ := ParseRules(r.Text)
			if len(alone) != 1 || len(un) != 0 {
				t.Fatalf("rule %q alone: %+v, unparsed %q", r.Text, alone, un)
			}
			alone[0].Line = r.Line
			if !reflect.DeepEqual(alone[0], r) {
				t.Fatalf("rule %q alone: %+v, among the others %+v", r.Text, alone[0], r)
			}
		}
		for _, u := range unparsed {
			if u == "" || u != strings.TrimSpace(u) || strings.HasPrefix(u, "#") || !strings.Contains(text, u) {
				t.Fatalf("unparsed line %q is not a line of the input", u)
			}
		}
		if wantLocked := slices.ContainsFunc(lines, func(l string) bool {
			tok := strings.Fields(l)
			return len(tok) > 1 && tok[0] == "-e" && tok[1] == "2"
		}); locked != wantLocked {
			t.Fatalf("locked %v, want %v", locked, wantLocked)
		}

		rep := AnalyzeText(text, Options{Scanned32: true})
		if len(rep.Rules) != len(rules) || rep.Locked != locked || rep.ExitRules > len(rules) {
			t.Fatalf("analysis of %d rules: %d rules, %d exit rules, locked %v", len(rules), len(rep.Rules), rep.ExitRules, rep.Locked)
		}
		for _, fd := range rep.Findings {
			if fd.Kind == "" || fd.Severity == "" || fd.Message == "" {
				t.Fatalf("finding %+v without kind, severity or message", fd)
			}
			for _, l := range fd.Lines {
				if !slices.ContainsFunc(rules, func(r Rule) bool { return r.Line == l }) {
					t.Fatalf("finding %+v names line %d, which is no rule", fd, l)
				}
			}
		}
	})
}
