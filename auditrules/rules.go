// SPDX-License-Identifier: Apache-2.0

// Package auditrules builds the minimal audit rule set that yields tracer's
// events: the syscalls of each event class, per architecture, with signal
// filters in the argument register each syscall really uses, and the
// tracer's key on every rule so that its rules are always told from the
// node's own. It renders rules in auditctl syntax and in the kernel's wire
// format (through go-libaudit), and names syscalls by number for decoding.
package auditrules

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/elastic/go-libaudit/v2/auparse"
	"github.com/elastic/go-libaudit/v2/rule"
	"github.com/elastic/go-libaudit/v2/rule/flags"

	"github.com/tracer-dev/tracer/auditrules/internal/abi"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Key is the default key of the rules `tracer rules` prints for the node
// to persist (`-k tracer`, or --key NAME). Those are the node's rules once
// loaded: no tracer and no cleanup ever removes them. A running tracer
// gives its own rules a key of its own, InstanceKey, and cleanup removes
// only rules with the InstanceKey of a tracer that is gone.
const Key = "tracer"

// InstanceKey is the rule key of the tracer with this pid and start time
// (/proc/PID/stat field 22): "tracer-PID-START".
func InstanceKey(pid int, start uint64) string {
	return Key + "-" + strconv.Itoa(pid) + "-" + strconv.FormatUint(start, 10)
}

// ParseInstanceKey reads an InstanceKey back.
func ParseInstanceKey(key string) (pid int, start uint64, ok bool) {
	rest, found := strings.CutPrefix(key, Key+"-")
	if !found {
		return 0, 0, false
	}
	p, s, found := strings.Cut(rest, "-")
	if !found {
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(p)
	start, err2 := strconv.ParseUint(s, 10, 64)
	return pid, start, err1 == nil && err2 == nil && pid > 0
}

// IsTracerKey reports whether a rule key is tracer's: Key or an InstanceKey.
func IsTracerKey(key string) bool {
	if key == Key {
		return true
	}
	return IsInstanceKey(key)
}

// IsInstanceKey reports whether a rule key is a running (or killed)
// tracer's own, the only rules cleanup may remove.
func IsInstanceKey(key string) bool {
	_, _, ok := ParseInstanceKey(key)
	return ok
}

// CheckPersistentKey says why key cannot be the key of persisted rules:
// the kernel's limit, characters auditctl's syntax cannot carry, or the
// form of an instance key, which cleanup would remove.
func CheckPersistentKey(key string) error {
	switch {
	case key == "":
		return vocab.Usagef("--key is empty: give a rule key, e.g. --key %s", Key)
	case len(key) > 255:
		return vocab.Usagef("--key is %d bytes; the kernel keeps at most 255", len(key))
	case strings.ContainsAny(key, " \t\n\"'\\"):
		return vocab.Usagef("--key %q holds a space or quote: use letters, digits, - and _", key)
	case IsInstanceKey(key):
		return vocab.Usagef("--key %q has the form of a running tracer's key (tracer-PID-START), which tracer cleanup removes: choose another", key)
	}
	return nil
}

// Syscalls per event class, in the order rules list them.
var classSyscalls = map[vocab.Type][]string{
	vocab.TypeExec:   {"execve", "execveat"},
	vocab.TypeFork:   {"fork", "vfork", "clone", "clone3"},
	vocab.TypeSignal: {"kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_send_signal"},
	vocab.TypeExit:   {"exit", "exit_group"},
}

// sigURG is SIGURG on every ABI auditrules knows.
const sigURG = 23

// SignalArg is the argument register that holds the signal number for each
// signal syscall: kill(pid, sig) has it in a1 but tgkill(tgid, tid, sig) in
// a2, which is why the common `-S kill -S tkill -S tgkill -F a1=10` misses
// every raise(3) and pthread_kill(3).
var SignalArg = abi.SignalArg

// TargetArg is the argument that names the signalled process or thread.
// pidfd_send_signal names it by a pidfd, so its target comes from the
// OBJ_PID record instead (-1 here).
var TargetArg = abi.TargetArg

// ClassOf returns the event class of a syscall name, or TypeNone.
func ClassOf(syscall string) vocab.Type {
	for t, names := range classSyscalls {
		for _, n := range names {
			if n == syscall {
				return t
			}
		}
	}
	return vocab.TypeNone
}

// Options selects a rule set.
type Options struct {
	// Arch is auto, b64, b32 or both. auto adds b32 only when a 32-bit
	// process runs (Has32Bit).
	Arch    string
	Types   vocab.TypeSet
	Signals vocab.SignalSet
	// AuidSet adds -F auid!=unset (a common filter): off by default since
	// services, CI agents and containers have no login uid.
	AuidSet bool
	// ScopeAUID, when not vocab.UnsetID, adds -F auid=N (trace scoping).
	ScopeAUID uint32
	// Machine is the kernel's machine name (uname -m: x86_64, aarch64);
	// empty means this program's architecture.
	Machine string
	// Has32Bit reports a running 32-bit process for Arch auto (pid, comm):
	// the caller reads the node (host.Detect32Bit), so that rules are built
	// from the vocabulary alone. Nil means none is known: b64 rules only.
	Has32Bit func() (pid int, comm string, found bool)
	// Key is the rules' key; empty means Key.
	Key string
	// ExcludePID, when not 0, adds -F pid!=N: a tracer never records its
	// own process.
	ExcludePID int
	// ExecFailures keeps failed exec attempts; without it the exec
	// syscalls get a rule of their own with -F success=1, so that a
	// shell's PATH search (one failed execve per directory) costs nothing.
	ExecFailures bool
	// UIDs, when set and at most MaxRuleUIDs, adds -F uid=N (the real
	// uid, as events report it): one copy of each rule per uid, since the
	// fields of a rule are ANDed. More are left to user space.
	UIDs []uint32
	// ExePath, when set, adds -F path=ExePath to the exec rule: the kernel
	// then records only execs whose files include that inode (the program,
	// a script's interpreter, the ELF loader). It must name a regular file
	// by a path whose last element is no symlink (KernelExePath): a watch
	// is set on that name's own inode, which an exec through a symlink
	// never names.
	ExePath string
}

// MaxRuleUIDs is the most uids Build filters on in the kernel: every rule
// is repeated per uid, and the kernel walks each rule at every audited
// syscall's exit.
const MaxRuleUIDs = 8

// KernelExePath returns the path an --exe value can be filtered on in the
// kernel (Options.ExePath), or "" when it must be left to user space: a
// name without a slash, a relative path, a path auditctl's syntax cannot
// carry, or one that is not a regular file (a symlink at its end, a file
// not there: a watch rule of a missing directory is refused).
func KernelExePath(exe string) string {
	if !filepath.IsAbs(exe) || strings.ContainsAny(exe, " \t\n\"'\\") {
		return ""
	}
	p := filepath.Clean(exe)
	if st, err := os.Lstat(p); err != nil || !st.Mode().IsRegular() {
		return ""
	}
	return p
}

// KernelUIDs reports whether Build filters uids in the kernel.
func (o Options) KernelUIDs() bool { return len(o.UIDs) > 0 && len(o.UIDs) <= MaxRuleUIDs }

// Rule is one audit rule.
type Rule struct {
	Arch     string   // b64 or b32
	Syscalls []string // names, as the arch's table has them
	Filters  []string // -F filters after the arch, e.g. "a1=10", "auid!=unset"
	Key      string   // empty means Key
	// Exclude, when set, makes this an exclude rule for that record type
	// (-a never,exclude -F msgtype=T); the other fields are unused.
	Exclude string
}

// Text renders the rule in auditctl syntax.
func (r Rule) Text() string {
	if r.Exclude != "" {
		return "-a never,exclude -F msgtype=" + r.Exclude
	}
	var b strings.Builder
	b.WriteString("-a always,exit -F arch=")
	b.WriteString(r.Arch)
	for _, s := range r.Syscalls {
		b.WriteString(" -S ")
		b.WriteString(s)
	}
	for _, f := range r.Filters {
		b.WriteString(" -F ")
		b.WriteString(f)
	}
	b.WriteString(" -k ")
	if r.Key != "" {
		b.WriteString(r.Key)
	} else {
		b.WriteString(Key)
	}
	return b.String()
}

// Wire builds the kernel's wire format through go-libaudit. Syscall names
// resolve against this program's architecture, so Wire is only meaningful
// for rule sets built for the running machine.
func (r Rule) Wire() (rule.WireFormat, error) {
	parsed, err := flags.Parse(r.Text())
	if err != nil {
		return nil, fmt.Errorf("parsing rule %q: %w", r.Text(), err)
	}
	wf, err := rule.Build(parsed)
	if err != nil {
		return nil, fmt.Errorf("building rule %q: %w", r.Text(), err)
	}
	return wf, nil
}

// Set is a rule set and the reasons behind its arch choice.
type Set struct {
	Rules []Rule
	Notes []string
}

// Text renders the set as an auditctl rules file, notes as comments.
func (s *Set) Text() string {
	var b strings.Builder
	for _, n := range s.Notes {
		b.WriteString("# ")
		b.WriteString(n)
		b.WriteByte('\n')
	}
	for _, r := range s.Rules {
		b.WriteString(r.Text())
		b.WriteByte('\n')
	}
	return b.String()
}

// ArchValue is the AUDIT_ARCH_* value the kernel writes in the arch field
// of SYSCALL records for the 64-bit syscalls of machine (uname -m), or for
// its 32-bit ones when b32; 0 for a machine without an audit syscall table.
// It is the one machine <-> audit arch table of the project.
func ArchValue(machine string, b32 bool) uint32 { return abi.Arch(machine, b32) }

// RuntimeMachine is the uname -m of this program's architecture (from the
// one arch table).
func RuntimeMachine() string { return abi.MachineOf(runtime.GOARCH) }

// Machines lists the machines rules can be built for (--machine).
func Machines() []string { return abi.Machines() }

// CheckArch says whether arch is an Options.Arch: auto (or ""), b64, b32
// or both.
func CheckArch(arch string) error {
	switch arch {
	case "auto", "", "b64", "b32", "both":
		return nil
	}
	return fmt.Errorf("unknown --arch %q: use auto, b64, b32 or both", arch)
}

// Build returns the minimal rule set for o.
func Build(o Options) (*Set, error) {
	machine := o.Machine
	if machine == "" {
		machine = RuntimeMachine()
	}
	if !abi.Known(machine) {
		return nil, vocab.Usagef("no audit syscall table for machine %q: use x86_64, aarch64, ppc64le or s390x", machine)
	}
	if o.Types == 0 {
		return nil, vocab.Usagef("no event class selected: use --events exec,fork,signal,exit")
	}
	set := &Set{}
	var arches []string
	switch o.Arch {
	case "b64":
		arches = []string{"b64"}
	case "b32":
		arches = []string{"b32"}
	case "both":
		arches = []string{"b64", "b32"}
	case "auto", "":
		arches = []string{"b64"}
		if o.Has32Bit == nil {
			set.Notes = append(set.Notes, "b32 rules left out: no 32-bit process is known (use --arch both to include them)")
		} else if pid, comm, found := o.Has32Bit(); found {
			arches = append(arches, "b32")
			set.Notes = append(set.Notes, fmt.Sprintf("b32 rules included: 32-bit process %d (%s) is running", pid, comm))
		} else {
			set.Notes = append(set.Notes, "b32 rules left out: no 32-bit process is running (use --arch both to include them)")
		}
	default:
		return nil, vocab.Usagef("%w", CheckArch(o.Arch))
	}

	var common []string
	if o.AuidSet {
		common = append(common, "auid!=unset")
	}
	if o.ScopeAUID != vocab.UnsetID {
		common = append(common, "auid="+strconv.FormatUint(uint64(o.ScopeAUID), 10))
	}
	if o.ExcludePID != 0 {
		common = append(common, "pid!="+strconv.Itoa(o.ExcludePID))
	}
	// add appends r once per uid of a kernel uid filter, else once.
	add := func(r Rule) {
		if !o.KernelUIDs() {
			set.Rules = append(set.Rules, r)
			return
		}
		for _, uid := range o.UIDs {
			c := r
			c.Filters = append(slices.Clone(r.Filters), "uid="+strconv.FormatUint(uint64(uid), 10))
			set.Rules = append(set.Rules, c)
		}
	}
	// Signal 0 (an existence check, no signal sent) is noise unless asked
	// for: with no signal list, the signal syscalls get rules of their own
	// that leave it out in the kernel, by the register each one uses.
	sigNonZero := o.Signals.All() && !o.Signals.KeepsNoise(vocab.FilteredExistence)
	for _, arch := range arches {
		table := abi.Table(machine, arch == "b32")
		have := syscallNames(table)
		var plain, execs []string
		var missing []string
		byReg := map[int][]string{}
		for _, t := range vocab.AllTypes {
			if !o.Types.Has(t) {
				continue
			}
			for _, name := range classSyscalls[t] {
				if !have[name] {
					missing = append(missing, name)
					continue
				}
				if t == vocab.TypeSignal && (!o.Signals.All() || sigNonZero) {
					byReg[SignalArg[name]] = append(byReg[SignalArg[name]], name)
					continue
				}
				if t == vocab.TypeExec && (!o.ExecFailures || o.ExePath != "") {
					execs = append(execs, name)
					continue
				}
				plain = append(plain, name)
			}
		}
		if len(missing) > 0 {
			set.Notes = append(set.Notes, fmt.Sprintf("%s (%s) has no %s: left out", arch, table, strings.Join(missing, ", ")))
		}
		filters := append([]string(nil), common...)
		if len(execs) > 0 {
			var f []string
			if !o.ExecFailures {
				f = append(f, "success=1")
			}
			if o.ExePath != "" {
				f = append(f, "path="+o.ExePath)
			}
			add(Rule{Arch: arch, Syscalls: execs, Filters: append(f, filters...), Key: o.Key})
		}
		if len(plain) > 0 {
			add(Rule{Arch: arch, Syscalls: plain, Filters: filters, Key: o.Key})
		}
		regs := make([]int, 0, len(byReg))
		for r := range byReg {
			regs = append(regs, r)
		}
		sort.Ints(regs)
		for _, reg := range regs {
			if sigNonZero {
				names := byReg[reg]
				if !o.Signals.KeepsNoise(vocab.FilteredPreemption) && slices.Contains(names, "tgkill") {
					// The Go runtime preempts its goroutines with SIGURG by
					// tgkill to its own threads, thousands of times in a
					// build: left out in the kernel, no record is made. A
					// rule field cannot compare the target with the sender,
					// so a SIGURG tgkill sends to another process goes too.
					names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "tgkill" })
					f := append([]string{fmt.Sprintf("a%d!=0", reg), fmt.Sprintf("a%d!=%d", reg, sigURG)}, common...)
					add(Rule{Arch: arch, Syscalls: []string{"tgkill"}, Filters: f, Key: o.Key})
				}
				if len(names) > 0 {
					f := append([]string{fmt.Sprintf("a%d!=0", reg)}, common...)
					add(Rule{Arch: arch, Syscalls: names, Filters: f, Key: o.Key})
				}
				continue
			}
			// Filters in one rule are ANDed, so each signal needs a rule of its own.
			for _, sig := range o.Signals.List() {
				f := append([]string{fmt.Sprintf("a%d=%d", reg, sig)}, common...)
				add(Rule{Arch: arch, Syscalls: byReg[reg], Filters: f, Key: o.Key})
			}
		}
	}
	return set, nil
}

func syscallNames(table string) map[string]bool {
	out := map[string]bool{}
	for _, name := range auparse.AuditSyscalls[table] {
		out[name] = true
	}
	return out
}

// SyscallName returns the name of syscall nr in the table of a 64-bit (b32
// false) or 32-bit ABI of this program's machine.
func SyscallName(nr int, b32 bool) string {
	return abi.SyscallName(ArchValue(RuntimeMachine(), b32), nr)
}

// ArchSyscallName names syscall nr of the ABI whose AUDIT_ARCH value is
// arch, as a SYSCALL record gives both; "" when either is unknown.
func ArchSyscallName(arch uint32, nr int) string { return abi.SyscallName(arch, nr) }

// LeanExcludes are the record types tracer asks the kernel not to build
// while it holds the audit PID ("lean records"): it reads none of them, and
// each costs the audited process kernel time at syscall exit. PROCTITLE
// repeats the comm and argv (CWD, an exec's working directory, is read:
// cwd); OBJ_PID names a signal's
// target, which the syscall's arguments give, except pidfd_send_signal's
// (LeanTypes keeps it while signals are watched); EOE only ends an event,
// and tracer knows from the SYSCALL record which records it still waits
// for. Exclude rules are global: auditd's log would miss these types too,
// which is why tracer adds them only where no other consumer reads the
// records, or when asked (and then keeps EOE: LeanExcludesBeside).
var LeanExcludes = []string{"PROCTITLE", "OBJ_PID", "EOE"}

// LeanExcludesBeside are the lean records beside another consumer
// (auditd, with --lean-records): its event assembly and ausearch end each
// event at its EOE record, so that one stays.
var LeanExcludesBeside = LeanExcludes[:2]

// LeanTypes is the lean records of a watch: LeanExcludes, or
// LeanExcludesBeside beside another consumer, less OBJ_PID when signals
// are watched. A pidfd_send_signal's target is in no argument, and the
// sender's descriptor may name another process by the time its fdinfo is
// read (dup2 of another pidfd onto it): only OBJ_PID, written by the
// kernel as it sends, names the target for sure.
func LeanTypes(signals, beside bool) []string {
	types := LeanExcludes
	if beside {
		types = LeanExcludesBeside
	}
	if !signals {
		return types
	}
	var out []string
	for _, t := range types {
		if t != "OBJ_PID" {
			out = append(out, t)
		}
	}
	return out
}

// ExcludeRule is the exclude rule for one record type, in auditctl syntax.
// The kernel's exclude list takes no key, so these rules are tracked by
// the state tracer keeps, not by a key.
func ExcludeRule(msgtype string) Rule { return Rule{Exclude: msgtype} }
