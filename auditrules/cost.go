package auditrules

// The rule-cost analyser reads a node's audit rules (auditctl syntax, as
// `auditctl -l` prints them or as /etc/audit/rules.d holds them) and says
// what they cost, after auditctl(8)'s PERFORMANCE TIPS and how the kernel
// evaluates them: on every syscall the kernel walks the whole exit list,
// tests each rule's syscall bit mask by number (the arch is a field tested
// afterwards), and evaluates the fields of each rule whose bit is set.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/elastic/go-libaudit/v2/auparse"

	"github.com/tracer-dev/tracer/auditrules/internal/abi"
)

// CostRule is one audit rule as the cost analyser sees it.
type CostRule struct {
	Line     int      `json:"line"` // 1-based line of the input
	Text     string   `json:"text"`
	List     string   `json:"list,omitempty"`   // exit, task, exclude, user, filesystem, io_uring
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
func (r *CostRule) AllSyscalls() bool {
	return len(r.Syscalls) == 0 || costContains(r.Syscalls, "all")
}

// inode reports whether the kernel files the rule under an inode (a -w
// watch or a path= rule) instead of walking it on every syscall.
func (r *CostRule) inode() bool {
	if r.List == "watch" {
		return true
	}
	for _, f := range r.Fields {
		if strings.HasPrefix(f, "path=") {
			return true
		}
	}
	return false
}

// perSyscall reports whether the kernel walks the rule on every syscall.
func (r *CostRule) perSyscall() bool {
	return r.List == "exit" && !r.inode()
}

// CostOptions describe the node the rules are loaded on.
type CostOptions struct {
	// Machine is uname -m (x86_64, aarch64, ...); empty means x86_64.
	Machine string
	// Scanned32 says whether the node was scanned for 32-bit processes;
	// Has32Bit whether one was found.
	Scanned32, Has32Bit bool
}

// Severity of a finding.
const (
	CostHigh   = "high"   // costs on every call of a hot syscall, or records the wrong thing
	CostMedium = "medium" // avoidable per-syscall work
	CostLow    = "low"    // small, or worth knowing
)

// CostFinding is one piece of advice about the loaded rules.
type CostFinding struct {
	Kind     string   `json:"kind"`
	Severity string   `json:"severity"`
	Lines    []int    `json:"lines"` // CostRule.Line of the rules concerned
	Rules    []string `json:"rules"`
	Message  string   `json:"message"`
	Fix      string   `json:"fix,omitempty"`
}

// Finding kinds.
const (
	CostKindAllSyscalls = "all-syscalls"   // -S all
	CostKindNoArch      = "no-arch"        // a syscall rule without -F arch
	CostKindHot         = "hot-unfiltered" // a hot syscall with no narrowing filter
	CostKindHotFiltered = "hot-filtered"   // hot syscalls, filtered: cheap records, but checked on every call
	CostKindB32Unused   = "b32-unused"     // b32 rules on a node with no 32-bit process
	CostKindMergeable   = "mergeable"      // rules that differ only in their syscalls
	CostKindSignalReg   = "signal-register"
	CostKindTaskNever   = "task-never"
	CostKindLocked      = "locked" // -e 2 in the rules
	CostKindRuleCount   = "rule-count"
)

// CostReport is the analysis of a rule set.
type CostReport struct {
	Rules []CostRule `json:"rules"`
	// ExitRules is how many rules the kernel walks on every syscall.
	ExitRules int `json:"exit_rules"`
	// HotChecks counts, for each hot syscall that some rule names, the rules
	// whose fields the kernel evaluates on every call of it (64-bit ABI).
	HotChecks map[string]int `json:"hot_checks,omitempty"`
	Findings  []CostFinding  `json:"findings"`
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

var costHot = func() map[string]bool {
	m := map[string]bool{}
	for _, s := range HotSyscalls {
		m[s] = true
	}
	return m
}()

// ParseCostRules reads rules in auditctl syntax, one a line; comments,
// blank lines and control lines (-D, -b, -f, -e, -r, --backlog_wait_time,
// --loginuid-immutable) are skipped. It returns the rules, the lines it
// did not understand, and whether the rules lock audit (-e 2).
func ParseCostRules(text string) (rules []CostRule, unparsed []string, locked bool) {
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || line == "No rules" {
			continue
		}
		tok := strings.Fields(line)
		switch tok[0] {
		case "-D", "-b", "-f", "-r", "--backlog_wait_time", "--loginuid-immutable", "-i", "-c", "--reset-lost":
			continue
		case "-e":
			if len(tok) > 1 && tok[1] == "2" {
				locked = true
			}
			continue
		}
		r, ok := parseCostRule(tok)
		if !ok {
			unparsed = append(unparsed, line)
			continue
		}
		r.Line, r.Text = i+1, line
		rules = append(rules, r)
	}
	return rules, unparsed, locked
}

func parseCostRule(tok []string) (CostRule, bool) {
	var r CostRule
	var perm string
	for i := 0; i < len(tok); i++ {
		arg := func() (string, bool) {
			if i+1 >= len(tok) {
				return "", false
			}
			i++
			return tok[i], true
		}
		switch tok[i] {
		case "-a", "-A":
			v, ok := arg()
			if !ok {
				return r, false
			}
			a, b, ok := strings.Cut(v, ",")
			if !ok {
				return r, false
			}
			if a == "always" || a == "never" {
				a, b = b, a
			}
			if a == "entry" { // long gone; the kernel files it as exit
				a = "exit"
			}
			r.List, r.Action = a, b
		case "-w":
			v, ok := arg()
			if !ok {
				return r, false
			}
			r.List, r.Action, r.Watch = "watch", "always", v
		case "-p":
			v, ok := arg()
			if !ok {
				return r, false
			}
			perm = v
		case "-S":
			v, ok := arg()
			if !ok {
				return r, false
			}
			for _, s := range strings.Split(v, ",") {
				if s != "" && !costContains(r.Syscalls, s) {
					r.Syscalls = append(r.Syscalls, s)
				}
			}
		case "-k":
			v, ok := arg()
			if !ok {
				return r, false
			}
			r.Key = strings.Trim(v, `"`)
		case "-F", "-C":
			v, ok := arg()
			if !ok {
				return r, false
			}
			name, op, val := costSplitField(v)
			if name == "" {
				return r, false
			}
			switch name {
			case "arch":
				r.Arch = abi.ABI(val)
			case "key":
				r.Key = strings.Trim(val, `"`)
			default:
				if name == "auid" || name == "loginuid" || name == "uid" || name == "euid" {
					if val == "-1" || val == "4294967295" {
						val = "unset"
					}
				}
				if name == "path" || name == "dir" {
					r.Watch = val
				}
				r.Fields = append(r.Fields, name+op+val)
			}
		default:
			return r, false
		}
	}
	if perm != "" {
		r.Fields = append(r.Fields, "perm="+perm)
	}
	if r.List == "" {
		return r, false
	}
	return r, true
}

// splitField splits "auid>=1000" into name, operator and value.
func costSplitField(s string) (name, op, val string) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '=', '!', '<', '>', '&':
			j := i + 1
			for j < len(s) && strings.ContainsRune("=<>&", rune(s[j])) {
				j++
			}
			return s[:i], s[i:j], s[j:]
		}
	}
	return "", "", ""
}

// AnalyzeCostText parses and analyses rules in auditctl syntax.
func AnalyzeCostText(text string, o CostOptions) CostReport {
	rules, unparsed, locked := ParseCostRules(text)
	rep := AnalyzeCost(rules, o)
	rep.Unparsed, rep.Locked = unparsed, locked
	if locked {
		rep.Findings = append([]CostFinding{{
			Kind: CostKindLocked, Severity: CostHigh,
			Message: "the rules end with -e 2: audit is locked until reboot, no rule can be added or removed (the tracer's audit backend cannot start)",
			Fix:     "remove -e 2 from /etc/audit/rules.d (keep it only where policy demands immutable rules) and reboot",
		}}, rep.Findings...)
	}
	return rep
}

// AnalyzeCost judges parsed rules.
func AnalyzeCost(rules []CostRule, o CostOptions) CostReport {
	machine := o.Machine
	if !abi.Known(machine) {
		machine = "x86_64"
	}
	tables := [2]string{abi.Table(machine, false), abi.Table(machine, true)}
	rep := CostReport{Rules: rules, HotChecks: map[string]int{}, Findings: []CostFinding{}}
	add := func(f CostFinding) { rep.Findings = append(rep.Findings, f) }
	one := func(kind, sev string, r *CostRule, msg, fix string) {
		add(CostFinding{Kind: kind, Severity: sev, Lines: []int{r.Line}, Rules: []string{r.Text}, Message: msg, Fix: fix})
	}

	for i := range rules {
		r := &rules[i]
		if r.List == "task" && r.Action == "never" && len(r.Fields) == 0 {
			one(CostKindTaskNever, CostHigh, r,
				"a never,task rule with no filter: the kernel audits no syscall of any process, so every syscall rule is dead (and the tracer's audit backend sees nothing)",
				"remove it if syscall auditing is wanted (RHEL's old default audit.rules shipped it)")
		}
		if !r.perSyscall() {
			continue
		}
		rep.ExitRules++
		if r.Action != "always" {
			continue
		}
		narrow := costNarrowing(r.Fields)
		if r.AllSyscalls() {
			if costDirRule(r) {
				continue
			}
			if len(narrow) == 0 {
				one(CostKindAllSyscalls, CostHigh, r,
					"-S all with no filter: a record for every syscall of every process",
					"name the syscalls you need (-S execve ...) and add an arch")
			} else {
				one(CostKindAllSyscalls, CostMedium, r,
					fmt.Sprintf("-S all: the kernel evaluates this rule's fields (%s) on every syscall of every process", strings.Join(narrow, " ")),
					"name the syscalls you need; for one program prefer -F exe= with named syscalls")
			}
			continue
		}
		if r.Arch == "" {
			aliases := costAliases(r.Syscalls, tables[0], tables[1])
			msg := "no -F arch: the syscall numbers of the native table are matched on both ABIs, so on 32-bit calls the rule catches other syscalls"
			if len(aliases) > 0 {
				msg += " (" + strings.Join(costLimit(aliases, 4), ", ") + ")"
			}
			one(CostKindNoArch, CostMedium, r, msg, "add -F arch=b64 (and a b32 copy only if 32-bit programs run)")
		}
		var hot []string
		for _, s := range r.Syscalls {
			if costHot[s] {
				hot = append(hot, s)
			}
		}
		if len(hot) > 0 && len(narrow) == 0 {
			msg := fmt.Sprintf("hot syscalls (%s) with no narrowing filter: a record on every call, by every process", strings.Join(hot, ", "))
			if costHasAuidUnset(r.Fields) {
				msg = fmt.Sprintf("hot syscalls (%s) filtered only by auid!=unset: a record on every call by every logged-in user's process", strings.Join(hot, ", "))
			}
			one(CostKindHot, CostHigh, r, msg,
				"narrow it: -F exit=-EACCES / -F success=0 for failures, -F auid>=1000, -F dir= or a -w watch for files")
		}
		if r.Arch != "b32" {
			for _, s := range r.Syscalls {
				if costHot[s] {
					rep.HotChecks[s]++
				}
			}
		}
	}

	// Filtered rules on hot syscalls: one finding for all of them.
	var hf []*CostRule
	for i := range rules {
		r := &rules[i]
		if r.perSyscall() && r.Action == "always" && !r.AllSyscalls() && len(costNarrowing(r.Fields)) > 0 {
			for _, s := range r.Syscalls {
				if costHot[s] {
					hf = append(hf, r)
					break
				}
			}
		}
	}
	if len(hf) > 0 {
		f := CostFinding{Kind: CostKindHotFiltered, Severity: CostLow}
		for _, r := range hf {
			f.Lines, f.Rules = append(f.Lines, r.Line), append(f.Rules, r.Text)
		}
		f.Message = fmt.Sprintf("%d filtered rules name hot syscalls: they log rarely, but the kernel evaluates their fields on every call (%s)", len(hf), costHotChecksText(rep.HotChecks))
		f.Fix = "where the rule watches files, a -w watch or -F path= is cheaper: the kernel checks it only for that inode"
		add(f)
	}

	// b32 rules on a node with no 32-bit process.
	if o.Scanned32 && !o.Has32Bit {
		var b32 []*CostRule
		var names []string
		for i := range rules {
			r := &rules[i]
			if r.perSyscall() && r.Arch == "b32" {
				b32 = append(b32, r)
				names = append(names, r.Syscalls...)
			}
		}
		if len(b32) > 0 {
			f := CostFinding{Kind: CostKindB32Unused, Severity: CostLow}
			for _, r := range b32 {
				f.Lines, f.Rules = append(f.Lines, r.Line), append(f.Rules, r.Text)
			}
			f.Message = fmt.Sprintf("%d b32 rules and no 32-bit process runs: they never match, yet each is walked on every syscall", len(b32))
			if al := costHotAliases(names, tables[1], tables[0]); len(al) > 0 {
				f.Message += ", and their fields are evaluated on the 64-bit syscalls with the same numbers: " + strings.Join(costLimit(al, 5), ", ")
			}
			f.Fix = "drop the b32 copies (keep them where a compliance profile demands them, or 32-bit programs may start)"
			add(f)
		}
	}

	// Rules that differ only in their syscalls (auditctl(8) PERFORMANCE TIPS).
	groups := map[string][]*CostRule{}
	var order []string
	for i := range rules {
		r := &rules[i]
		if !r.perSyscall() || r.AllSyscalls() {
			continue
		}
		fields := append([]string(nil), r.Fields...)
		sort.Strings(fields)
		k := strings.Join([]string{r.List, r.Action, r.Arch, strings.Join(fields, " "), r.Key}, "|")
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	for _, k := range order {
		g := groups[k]
		if len(g) < 2 {
			continue
		}
		f := CostFinding{Kind: CostKindMergeable, Severity: CostMedium}
		var all []string
		for _, r := range g {
			f.Lines, f.Rules = append(f.Lines, r.Line), append(f.Rules, r.Text)
			for _, s := range r.Syscalls {
				if !costContains(all, s) {
					all = append(all, s)
				}
			}
		}
		f.Message = fmt.Sprintf("%d rules differ only in their syscalls: the kernel walks each of them on every syscall", len(g))
		f.Fix = "merge into one: " + costRuleText(g[0], all)
		add(f)
	}

	// The signal register mistake: tgkill(tgid, tid, sig) has the signal in
	// a2, kill(pid, sig) and tkill(tid, sig) in a1.
	for i := range rules {
		r := &rules[i]
		if !r.perSyscall() || r.AllSyscalls() {
			continue
		}
		if msg, fix, ok := costSignalRegisterMistake(r); ok {
			one(CostKindSignalReg, CostHigh, r, msg, fix)
		}
	}

	if rep.ExitRules >= 10 {
		add(CostFinding{Kind: CostKindRuleCount, Severity: CostLow,
			Message: fmt.Sprintf("%d syscall rules: the kernel walks all of them on every syscall of every process (auditctl(8): too many syscall rules hurt performance)", rep.ExitRules),
			Fix:     "merge rules that differ only in syscalls; turn file rules into -w watches"})
	}
	if len(rep.HotChecks) == 0 {
		rep.HotChecks = nil
	}
	sort.SliceStable(rep.Findings, func(i, j int) bool {
		return costSevRank(rep.Findings[i].Severity) < costSevRank(rep.Findings[j].Severity)
	})
	return rep
}

func costSevRank(s string) int {
	switch s {
	case CostHigh:
		return 0
	case CostMedium:
		return 1
	}
	return 2
}

// narrowing returns the fields that limit which calls a rule records:
// all but auid!=unset, which only leaves out daemons.
func costNarrowing(fields []string) []string {
	var out []string
	for _, f := range fields {
		if f == "auid!=unset" {
			continue
		}
		out = append(out, f)
	}
	return out
}

func costHasAuidUnset(fields []string) bool { return costContains(fields, "auid!=unset") }

func costDirRule(r *CostRule) bool {
	for _, f := range r.Fields {
		if strings.HasPrefix(f, "dir=") {
			return true
		}
	}
	return false
}

func costSignalRegisterMistake(r *CostRule) (msg, fix string, ok bool) {
	regs := map[int][]string{} // signal register -> syscalls
	for _, s := range r.Syscalls {
		if reg, isSig := SignalArg[s]; isSig {
			regs[reg] = append(regs[reg], s)
		}
	}
	if len(regs) == 0 {
		return "", "", false
	}
	for _, f := range r.Fields {
		name, op, val := costSplitField(f)
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
		if len(regs[reg]) == 0 {
			// No syscall of the rule has its signal in this register: a pid
			// or tid filter, unless the value looks like a signal number.
			if n, err := strconv.Atoi(val); err != nil || n < 1 || n > 64 {
				continue
			}
			msg = fmt.Sprintf("-F %s=%s on %s: if %s is meant as a signal, it is in a%d there (%s)", name, val, strings.Join(wrong, ", "), val, SignalArg[wrong[0]], costSignalProto(wrong[0]))
		} else {
			msg = fmt.Sprintf("-F %s=%s filters the signal of %s, but %s have it in a different register (%s): the rule misses those signals and catches calls whose %s happens to be %s",
				name, val, strings.Join(regs[reg], ", "), strings.Join(wrong, ", "), costSignalProto(wrong[0]), costArgName(wrong[0], reg), val)
		}
		var rest []string
		for _, s := range r.Syscalls {
			if !costContains(wrong, s) {
				rest = append(rest, s)
			}
		}
		fixed := []string{}
		if len(rest) > 0 {
			fixed = append(fixed, costRuleText(r, rest))
		}
		wr := *r
		wr.Fields = nil
		for _, f2 := range r.Fields {
			if f2 == f {
				f2 = fmt.Sprintf("a%d=%s", SignalArg[wrong[0]], val)
			}
			wr.Fields = append(wr.Fields, f2)
		}
		fixed = append(fixed, costRuleText(&wr, wrong))
		return msg, "split it: " + strings.Join(fixed, " ; "), true
	}
	return "", "", false
}

func costSignalProto(s string) string {
	switch s {
	case "tgkill":
		return "tgkill(tgid, tid, sig)"
	case "rt_tgsigqueueinfo":
		return "rt_tgsigqueueinfo(tgid, tid, sig, info)"
	case "kill":
		return "kill(pid, sig)"
	case "tkill":
		return "tkill(tid, sig)"
	case "rt_sigqueueinfo":
		return "rt_sigqueueinfo(tgid, sig, info)"
	case "pidfd_send_signal":
		return "pidfd_send_signal(pidfd, sig, info, flags)"
	}
	return s
}

func costArgName(syscall string, reg int) string {
	if syscall == "tgkill" || syscall == "rt_tgsigqueueinfo" {
		switch reg {
		case 0:
			return "tgid"
		case 1:
			return "tid"
		}
	}
	return fmt.Sprintf("a%d", reg)
}

// costRuleText writes a rule with other syscalls, in auditctl syntax.
func costRuleText(r *CostRule, syscalls []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "-a %s,%s", r.Action, r.List)
	if r.Arch != "" {
		b.WriteString(" -F arch=" + r.Arch)
	}
	b.WriteString(" -S " + strings.Join(syscalls, ","))
	for _, f := range r.Fields {
		b.WriteString(" -F " + f)
	}
	if r.Key != "" {
		b.WriteString(" -k " + r.Key)
	}
	return b.String()
}

// costAliases names, for syscalls of table from, the syscall of table to
// with the same number ("write=exit(b32)").
func costAliases(names []string, from, to string) []string {
	num := costNumbers(from)
	var out []string
	for _, n := range names {
		nr, ok := num[n]
		if !ok {
			continue
		}
		if other := auparse.AuditSyscalls[to][nr]; other != "" && other != n {
			out = append(out, fmt.Sprintf("%s is %s there", n, other))
		}
	}
	return out
}

// costHotAliases names the hot syscalls of table to whose numbers the
// syscalls of table from share.
func costHotAliases(names []string, from, to string) []string {
	num := costNumbers(from)
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		nr, ok := num[n]
		if !ok {
			continue
		}
		other := auparse.AuditSyscalls[to][nr]
		if costHot[other] && !seen[other] {
			seen[other] = true
			out = append(out, fmt.Sprintf("%s (b32 %s)", other, n))
		}
	}
	return out
}

func costNumbers(table string) map[string]int {
	m := map[string]int{}
	for nr, name := range auparse.AuditSyscalls[table] {
		m[name] = nr
	}
	return m
}

func costHotChecksText(m map[string]int) string {
	type kv struct {
		k string
		v int
	}
	var l []kv
	for k, v := range m {
		l = append(l, kv{k, v})
	}
	sort.Slice(l, func(i, j int) bool {
		if l[i].v != l[j].v {
			return l[i].v > l[j].v
		}
		return l[i].k < l[j].k
	})
	var parts []string
	for _, e := range l {
		parts = append(parts, fmt.Sprintf("%s: %d", e.k, e.v))
	}
	return "rules checked per 64-bit call: " + strings.Join(costLimit(parts, 6), ", ")
}

func costLimit(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("%d more", len(s)-n))
}

func costContains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
