// SPDX-License-Identifier: Apache-2.0

// Package cost says what a node's audit rules cost. It reads the rules in
// auditctl syntax (as `auditctl -l` prints them or as /etc/audit/rules.d
// holds them) and runs a set of independent checks, after auditctl(8)'s
// PERFORMANCE TIPS and how the kernel evaluates rules: on every syscall
// the kernel walks the whole exit list, tests each rule's syscall bit mask
// by number (the arch is a field tested afterwards), and evaluates the
// fields of each rule whose bit is set. `tracer doctor` reports the
// findings for the rules loaded on the node.
package cost

import (
	"slices"
	"sort"
	"strings"

	"github.com/tracer-dev/tracer/auditrules/internal/abi"
)

// Rule is one audit rule as the analyser sees it.
type Rule struct {
	Line     int      `json:"line"` // 1-based line of the input
	Text     string   `json:"text"`
	List     string   `json:"list,omitempty"`   // exit, task, exclude, user, or watch for -w
	Action   string   `json:"action,omitempty"` // always, never
	Arch     string   `json:"arch,omitempty"`   // b64, b32, "" when the rule has none
	Syscalls []string `json:"syscalls,omitempty"`
	// Fields are the -F and -C filters other than arch and key, with the
	// unset login uid written "unset" whatever form the input used.
	Fields []string `json:"fields,omitempty"`
	Key    string   `json:"key,omitempty"`
	Watch  string   `json:"watch,omitempty"` // -w path, or the path= / dir= of an inode rule
}

// AllSyscalls reports whether the rule names every syscall (-S all, or an
// exit rule without -S).
func (r *Rule) AllSyscalls() bool {
	return len(r.Syscalls) == 0 || slices.Contains(r.Syscalls, "all")
}

// inode reports whether the kernel files the rule under an inode (a -w
// watch or a path= rule) instead of walking it on every syscall.
func (r *Rule) inode() bool {
	if r.List == "watch" {
		return true
	}
	return r.hasField("path=")
}

// perSyscall reports whether the kernel walks the rule on every syscall.
func (r *Rule) perSyscall() bool {
	return r.List == "exit" && !r.inode()
}

// logging reports whether the kernel walks the rule on every syscall and
// writes a record when it matches (an always rule).
func (r *Rule) logging() bool {
	return r.perSyscall() && r.Action == "always"
}

// hasField reports whether one of the rule's fields starts with prefix.
func (r *Rule) hasField(prefix string) bool {
	for _, f := range r.Fields {
		if strings.HasPrefix(f, prefix) {
			return true
		}
	}
	return false
}

// hot returns the rule's syscalls that are HotSyscalls.
func (r *Rule) hot() []string {
	var out []string
	for _, s := range r.Syscalls {
		if hotSet[s] {
			out = append(out, s)
		}
	}
	return out
}

// narrowing returns the fields that limit which calls the rule records:
// all but auid!=unset, which only leaves out daemons.
func (r *Rule) narrowing() []string {
	var out []string
	for _, f := range r.Fields {
		if f != auidSet {
			out = append(out, f)
		}
	}
	return out
}

// auidSet is the filter that leaves out processes with no login uid.
const auidSet = "auid!=unset"

// Options describe the node the rules are loaded on.
type Options struct {
	// Machine is uname -m (x86_64, aarch64, ...); empty or unknown means x86_64.
	Machine string
	// Scanned32 says whether the node was scanned for 32-bit processes;
	// Has32Bit whether one was found.
	Scanned32, Has32Bit bool
}

// Severity of a finding.
const (
	High   = "high"   // costs on every call of a hot syscall, or records the wrong thing
	Medium = "medium" // avoidable per-syscall work
	Low    = "low"    // small, or worth knowing
)

// Finding is one piece of advice about the loaded rules.
type Finding struct {
	Kind     string   `json:"kind"`
	Severity string   `json:"severity"`
	Lines    []int    `json:"lines"` // Rule.Line of the rules concerned
	Rules    []string `json:"rules"`
	Message  string   `json:"message"`
	Fix      string   `json:"fix,omitempty"`
}

// Finding kinds.
const (
	KindAllSyscalls = "all-syscalls"   // -S all
	KindNoArch      = "no-arch"        // a syscall rule without -F arch
	KindHot         = "hot-unfiltered" // a hot syscall with no narrowing filter
	KindHotFiltered = "hot-filtered"   // hot syscalls, filtered: cheap records, but checked on every call
	KindB32Unused   = "b32-unused"     // b32 rules on a node with no 32-bit process
	KindMergeable   = "mergeable"      // rules that differ only in their syscalls
	KindSignalReg   = "signal-register"
	KindTaskNever   = "task-never"
	KindLocked      = "locked" // -e 2 in the rules
	KindRuleCount   = "rule-count"
)

// Report is the analysis of a rule set.
type Report struct {
	Rules []Rule `json:"rules"`
	// ExitRules is how many rules the kernel walks on every syscall.
	ExitRules int `json:"exit_rules"`
	// HotChecks counts, for each hot syscall that some rule names, the rules
	// whose fields the kernel evaluates on every call of it (64-bit ABI).
	HotChecks map[string]int `json:"hot_checks,omitempty"`
	Findings  []Finding      `json:"findings"`
	// Unparsed are input lines that are neither rules nor control lines.
	Unparsed []string `json:"unparsed,omitempty"`
	// Locked is set when the input holds `-e 2`.
	Locked bool `json:"locked,omitempty"`
}

// HotSyscalls are syscalls that busy programs make thousands of times a
// second; a rule naming them without a narrowing filter logs on every call.
var HotSyscalls = []string{
	"read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev",
	"open", "openat", "openat2", "close", "creat",
	"stat", "fstat", "lstat", "newfstatat", "statx", "stat64", "fstat64", "lstat64", "fstatat64",
	"access", "faccessat", "faccessat2", "lseek", "_llseek",
	"mmap", "mmap2", "munmap", "mprotect", "madvise", "brk",
	"futex", "getppid", "getpid", "gettid", "getuid", "geteuid", "getgid", "getegid",
	"clock_gettime", "gettimeofday", "nanosleep", "clock_nanosleep",
	"poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait", "epoll_ctl",
	"recvfrom", "sendto", "recvmsg", "sendmsg", "ioctl", "fcntl", "fcntl64",
	"getdents", "getdents64", "dup", "dup2", "dup3",
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sched_yield", "readlink", "readlinkat",
}

var hotSet = func() map[string]bool {
	m := map[string]bool{}
	for _, s := range HotSyscalls {
		m[s] = true
	}
	return m
}()

// AnalyzeText parses and analyses rules in auditctl syntax.
func AnalyzeText(text string, o Options) Report {
	rules, unparsed, locked := ParseRules(text)
	rep := analyze(rules, locked, o)
	rep.Unparsed, rep.Locked = unparsed, locked
	return rep
}

// Analyze judges parsed rules.
func Analyze(rules []Rule, o Options) Report {
	return analyze(rules, false, o)
}

// analysis is what the checks see: the rules, the node, and the figures
// computed once for all of them.
type analysis struct {
	rules  []Rule
	opts   Options
	locked bool // the input holds -e 2
	// table64 and table32 are the go-libaudit syscall tables of the
	// machine's two ABIs.
	table64, table32 string
	// exitRules and hotChecks are Report.ExitRules and Report.HotChecks.
	exitRules int
	hotChecks map[string]int
}

func analyze(rules []Rule, locked bool, o Options) Report {
	machine := o.Machine
	if !abi.Known(machine) {
		machine = "x86_64"
	}
	a := &analysis{
		rules: rules, opts: o, locked: locked,
		table64: abi.Table(machine, false), table32: abi.Table(machine, true),
		hotChecks: map[string]int{},
	}
	for i := range rules {
		r := &rules[i]
		if r.perSyscall() {
			a.exitRules++
		}
		if r.logging() && !r.AllSyscalls() && r.Arch != "b32" {
			for _, s := range r.hot() {
				a.hotChecks[s]++
			}
		}
	}

	rep := Report{Rules: rules, ExitRules: a.exitRules, HotChecks: a.hotChecks, Findings: []Finding{}}
	for _, c := range checks {
		rep.Findings = append(rep.Findings, c(a)...)
	}
	if len(rep.HotChecks) == 0 {
		rep.HotChecks = nil
	}
	// Worst first; within a severity, in the order of the checks.
	sort.SliceStable(rep.Findings, func(i, j int) bool {
		return sevRank(rep.Findings[i].Severity) < sevRank(rep.Findings[j].Severity)
	})
	return rep
}

func sevRank(s string) int {
	switch s {
	case High:
		return 0
	case Medium:
		return 1
	}
	return 2
}
