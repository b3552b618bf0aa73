// SPDX-License-Identifier: Apache-2.0

package cost

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/tracer-dev/tracer/auditrules/internal/abi"
)

// A check finds one kind of costly (or wrong) rule in the set.
type check func(a *analysis) []Finding

// A ruleCheck judges one rule on its own.
type ruleCheck func(a *analysis, r *Rule) (Finding, bool)

// checks run in this order, and the report keeps it within a severity:
// the first rule checks go rule by rule, so that their findings follow
// the input; the checks of the whole set follow.
var checks = []check{
	locked,
	eachRule(taskNever, allSyscalls, noArch, hotUnfiltered),
	hotFiltered,
	b32Unused,
	mergeable,
	eachRule(signalRegister),
	ruleCount,
}

// eachRule runs rule checks on every rule, rule by rule.
func eachRule(rcs ...ruleCheck) check {
	return func(a *analysis) []Finding {
		var out []Finding
		for i := range a.rules {
			for _, rc := range rcs {
				if f, ok := rc(a, &a.rules[i]); ok {
					out = append(out, f)
				}
			}
		}
		return out
	}
}

// locked finds -e 2: audit is locked until reboot, so no rule can be
// added or removed, and the tracer's audit backend cannot start.
func locked(a *analysis) []Finding {
	if !a.locked {
		return nil
	}
	return []Finding{{
		Kind: KindLocked, Severity: High,
		Message: "the rules end with -e 2: audit is locked until reboot, no rule can be added or removed (the tracer's audit backend cannot start)",
		Fix:     "remove -e 2 from /etc/audit/rules.d (keep it only where policy demands immutable rules) and reboot",
	}}
}

// taskNever finds a never,task rule with no filter: it turns off syscall
// auditing of every process, so every syscall rule is dead.
func taskNever(_ *analysis, r *Rule) (Finding, bool) {
	if r.List != "task" || r.Action != "never" || len(r.Fields) > 0 {
		return Finding{}, false
	}
	return ruleFinding(KindTaskNever, High, r,
		"a never,task rule with no filter: the kernel audits no syscall of any process, so every syscall rule is dead (and the tracer's audit backend sees nothing)",
		"remove it if syscall auditing is wanted (RHEL's old default audit.rules shipped it)"), true
}

// allSyscalls finds -S all: the rule's bit is set for every syscall, so
// its fields are evaluated on every syscall of every process, and without
// a filter it logs them all. A dir= rule is filed by inode and left out.
func allSyscalls(_ *analysis, r *Rule) (Finding, bool) {
	if !r.logging() || !r.AllSyscalls() || r.hasField("dir=") {
		return Finding{}, false
	}
	narrow := r.narrowing()
	if len(narrow) == 0 {
		return ruleFinding(KindAllSyscalls, High, r,
			"-S all with no filter: a record for every syscall of every process",
			"name the syscalls you need (-S execve ...) and add an arch"), true
	}
	return ruleFinding(KindAllSyscalls, Medium, r,
		fmt.Sprintf("-S all: the kernel evaluates this rule's fields (%s) on every syscall of every process", strings.Join(narrow, " ")),
		"name the syscalls you need; for one program prefer -F exe= with named syscalls"), true
}

// noArch finds a syscall rule without -F arch: the kernel matches the
// syscall numbers of the native table on both ABIs, so on 32-bit calls the
// rule evaluates its fields for, and records, other syscalls.
func noArch(a *analysis, r *Rule) (Finding, bool) {
	if !r.logging() || r.AllSyscalls() || r.Arch != "" {
		return Finding{}, false
	}
	msg := "no -F arch: the syscall numbers of the native table are matched on both ABIs, so on 32-bit calls the rule catches other syscalls"
	if al := aliases(r.Syscalls, a.table64, a.table32); len(al) > 0 {
		msg += " (" + strings.Join(limit(al, 4), ", ") + ")"
	}
	return ruleFinding(KindNoArch, Medium, r, msg, "add -F arch=b64 (and a b32 copy only if 32-bit programs run)"), true
}

// hotUnfiltered finds a rule naming hot syscalls with no narrowing filter:
// it writes a record on every call, by every process (auid!=unset leaves
// out only daemons).
func hotUnfiltered(_ *analysis, r *Rule) (Finding, bool) {
	if !r.logging() || r.AllSyscalls() {
		return Finding{}, false
	}
	hot := r.hot()
	if len(hot) == 0 || len(r.narrowing()) > 0 {
		return Finding{}, false
	}
	msg := fmt.Sprintf("hot syscalls (%s) with no narrowing filter: a record on every call, by every process", strings.Join(hot, ", "))
	if slices.Contains(r.Fields, auidSet) {
		msg = fmt.Sprintf("hot syscalls (%s) filtered only by auid!=unset: a record on every call by every logged-in user's process", strings.Join(hot, ", "))
	}
	return ruleFinding(KindHot, High, r, msg,
		"narrow it: -F exit=-EACCES / -F success=0 for failures, -F auid>=1000, -F dir= or a -w watch for files"), true
}

// hotFiltered finds filtered rules on hot syscalls, as one finding: they
// log rarely, but the kernel evaluates their fields on every call.
func hotFiltered(a *analysis) []Finding {
	var rs []*Rule
	for i := range a.rules {
		r := &a.rules[i]
		if r.logging() && !r.AllSyscalls() && len(r.narrowing()) > 0 && len(r.hot()) > 0 {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return nil
	}
	f := groupFinding(KindHotFiltered, Low, rs)
	f.Message = fmt.Sprintf("%d filtered rules name hot syscalls: they log rarely, but the kernel evaluates their fields on every call (%s)", len(rs), hotChecksText(a.hotChecks))
	f.Fix = "where the rule watches files, a -w watch or -F path= is cheaper: the kernel checks it only for that inode"
	return []Finding{f}
}

// b32Unused finds b32 rules on a node where no 32-bit process runs: they
// never match, yet each is walked on every syscall, and their fields are
// evaluated on the 64-bit syscalls that share their numbers.
func b32Unused(a *analysis) []Finding {
	if !a.opts.Scanned32 || a.opts.Has32Bit {
		return nil
	}
	var rs []*Rule
	var names []string
	for i := range a.rules {
		r := &a.rules[i]
		if r.perSyscall() && r.Arch == "b32" {
			rs = append(rs, r)
			names = append(names, r.Syscalls...)
		}
	}
	if len(rs) == 0 {
		return nil
	}
	f := groupFinding(KindB32Unused, Low, rs)
	f.Message = fmt.Sprintf("%d b32 rules and no 32-bit process runs: they never match, yet each is walked on every syscall", len(rs))
	if al := hotAliases(names, a.table32, a.table64); len(al) > 0 {
		f.Message += ", and their fields are evaluated on the 64-bit syscalls with the same numbers: " + strings.Join(limit(al, 5), ", ")
	}
	f.Fix = "drop the b32 copies (keep them where a compliance profile demands them, or 32-bit programs may start)"
	return []Finding{f}
}

// mergeable finds rules that differ only in their syscalls (auditctl(8)
// PERFORMANCE TIPS): the kernel walks each of them on every syscall, where
// one rule with all the syscalls would do.
func mergeable(a *analysis) []Finding {
	groups := map[string][]*Rule{}
	var order []string
	for i := range a.rules {
		r := &a.rules[i]
		if !r.perSyscall() || r.AllSyscalls() {
			continue
		}
		fields := slices.Clone(r.Fields)
		sort.Strings(fields)
		k := strings.Join([]string{r.List, r.Action, r.Arch, strings.Join(fields, " "), r.Key}, "|")
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	var out []Finding
	for _, k := range order {
		g := groups[k]
		if len(g) < 2 {
			continue
		}
		var all []string
		for _, r := range g {
			for _, s := range r.Syscalls {
				if !slices.Contains(all, s) {
					all = append(all, s)
				}
			}
		}
		f := groupFinding(KindMergeable, Medium, g)
		f.Message = fmt.Sprintf("%d rules differ only in their syscalls: the kernel walks each of them on every syscall", len(g))
		f.Fix = "merge into one: " + ruleText(g[0], all)
		out = append(out, f)
	}
	return out
}

// signalRegister finds a signal filter in the wrong argument register:
// tgkill(tgid, tid, sig) has the signal in a2, kill(pid, sig) and
// tkill(tid, sig) in a1, so one -F aN= for all of them misses some signals
// and records unrelated calls.
func signalRegister(_ *analysis, r *Rule) (Finding, bool) {
	if !r.perSyscall() || r.AllSyscalls() {
		return Finding{}, false
	}
	regs := map[int][]string{} // signal register -> syscalls
	for _, s := range r.Syscalls {
		if reg, isSig := abi.SignalArg[s]; isSig {
			regs[reg] = append(regs[reg], s)
		}
	}
	if len(regs) == 0 {
		return Finding{}, false
	}
	for _, f := range r.Fields {
		name, op, val := splitField(f)
		if len(name) != 2 || name[0] != 'a' || op != "=" {
			continue
		}
		reg := int(name[1] - '0')
		var wrong []string
		for rg, ss := range regs {
			if rg != reg {
				wrong = append(wrong, ss...)
			}
		}
		if len(wrong) == 0 {
			continue
		}
		sort.Strings(wrong)
		var msg string
		if len(regs[reg]) == 0 {
			// No syscall of the rule has its signal in this register: a pid
			// or tid filter, unless the value looks like a signal number.
			if n, err := strconv.Atoi(val); err != nil || n < 1 || n > 64 {
				continue
			}
			msg = fmt.Sprintf("-F %s=%s on %s: if %s is meant as a signal, it is in a%d there (%s)", name, val, strings.Join(wrong, ", "), val, abi.SignalArg[wrong[0]], signalProto(wrong[0]))
		} else {
			msg = fmt.Sprintf("-F %s=%s filters the signal of %s, but %s have it in a different register (%s): the rule misses those signals and catches calls whose %s happens to be %s",
				name, val, strings.Join(regs[reg], ", "), strings.Join(wrong, ", "), signalProto(wrong[0]), argName(wrong[0], reg), val)
		}
		var rest []string
		for _, s := range r.Syscalls {
			if !slices.Contains(wrong, s) {
				rest = append(rest, s)
			}
		}
		fixed := []string{}
		if len(rest) > 0 {
			fixed = append(fixed, ruleText(r, rest))
		}
		wr := *r
		wr.Fields = nil
		for _, f2 := range r.Fields {
			if f2 == f {
				f2 = fmt.Sprintf("a%d=%s", abi.SignalArg[wrong[0]], val)
			}
			wr.Fields = append(wr.Fields, f2)
		}
		fixed = append(fixed, ruleText(&wr, wrong))
		return ruleFinding(KindSignalReg, High, r, msg, "split it: "+strings.Join(fixed, " ; ")), true
	}
	return Finding{}, false
}

// ruleCount finds many syscall rules: the kernel walks all of them on
// every syscall of every process (auditctl(8): too many syscall rules
// hurt performance).
func ruleCount(a *analysis) []Finding {
	if a.exitRules < 10 {
		return nil
	}
	return []Finding{{Kind: KindRuleCount, Severity: Low,
		Message: fmt.Sprintf("%d syscall rules: the kernel walks all of them on every syscall of every process (auditctl(8): too many syscall rules hurt performance)", a.exitRules),
		Fix:     "merge rules that differ only in syscalls; turn file rules into -w watches"}}
}
