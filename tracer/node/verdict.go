// SPDX-License-Identifier: Apache-2.0

package node

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/tracer/auditstate"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Verdict values.
const (
	Works       = "works"
	WorksLimits = "works with limits"
	Cannot      = "cannot"
)

// Verdict says whether a backend can run on a node, and why.
type Verdict struct {
	Backend string   `json:"backend"` // audit or ebpf
	Status  string   `json:"status"`  // works, works with limits, cannot
	Reasons []string `json:"reasons,omitempty"`
	// Notes are facts worth knowing that do not change the status.
	Notes []string `json:"notes,omitempty"`
}

// RecommendedBacklog is the audit backlog limit below which bursts are lost
// (RHEL's own audit.rules sets -b 8192).
const RecommendedBacklog = 8192

// Verdicts judges both backends on f. It reads nothing from the running
// node: facts that were not probed (no root, an older tracer's result file)
// are filled in from what is known of the release (RHELKnowledge), and the
// verdict says so.
func Verdicts(f Facts) []Verdict {
	f, assumed := WithKnowledge(f)
	return []Verdict{auditVerdict(f), ebpfVerdict(f, assumed)}
}

// VerdictFor returns the verdict for one backend.
func VerdictFor(vs []Verdict, backend string) Verdict {
	for _, v := range vs {
		if v.Backend == backend {
			return v
		}
	}
	return Verdict{Backend: backend, Status: Cannot, Reasons: []string{"not judged"}}
}

type verdictBuilder struct{ v Verdict }

func (b *verdictBuilder) cannot(format string, a ...any) {
	b.v.Status = Cannot
	b.v.Reasons = append(b.v.Reasons, fmt.Sprintf(format, a...))
}

func (b *verdictBuilder) limit(format string, a ...any) {
	if b.v.Status == Works {
		b.v.Status = WorksLimits
	}
	b.v.Reasons = append(b.v.Reasons, fmt.Sprintf(format, a...))
}

func (b *verdictBuilder) note(format string, a ...any) {
	b.v.Notes = append(b.v.Notes, fmt.Sprintf(format, a...))
}

func auditVerdict(f Facts) Verdict {
	b := verdictBuilder{Verdict{Backend: "audit", Status: Works}}
	a := f.Audit
	if No(a.Supported) || f.Config("CONFIG_AUDIT") == "n" {
		b.cannot("the kernel has no audit subsystem (CONFIG_AUDIT is off)")
		return b.v
	}
	if f.Config("CONFIG_AUDITSYSCALL") == "n" {
		b.cannot("the kernel has no syscall auditing (CONFIG_AUDITSYSCALL is off)")
		return b.v
	}
	if HasTaskNever(a.Rules) {
		b.cannot("a never,task rule is loaded: the kernel audits no syscall of any process (RHEL's default audit.rules once shipped it); remove it from /etc/audit/rules.d and run augenrules --load")
	}
	if maj, mn, ok := KernelVersion(f.Kernel); ok && (maj < 3 || (maj == 3 && mn < 16)) {
		b.limit("%s", NoMulticastReason(f.Kernel))
	}
	st := a.Status
	if st == nil {
		b.limit("audit state and rules unknown: collected without root (run tracer doctor as root)")
	} else {
		switch st.Enabled {
		case auditstate.EnabledLocked:
			lockedVerdict(&b, a.Rules)
		case 0:
			b.limit("audit is disabled: the tracer turns it on for its session and off again on exit, but processes forked before audit was first enabled since boot have no audit context and are not audited (with audit=0 on the kernel command line it needs --enable-audit)")
		}
		if st.PID != 0 {
			who := st.PIDComm
			if who == "" {
				who = "a process"
			}
			msg := fmt.Sprintf("%s (pid %d) holds the audit PID: the tracer reads the audit multicast group beside it, and every event the tracer's rules raise is also written to the audit log", who, st.PID)
			b.limit("%s", msg)
			if f.LogDisk.Kind() == "hdd" {
				b.limit("the audit log (%s) is on a spinning disk: auditd's writes dominate the cost (measured: a 0.6 s shell script took 4.4 s with the log on SSD, 39.5 s on HDD)", f.LogDisk.Path)
			}
		}
		if st.BacklogLimit < RecommendedBacklog {
			if st.PID != 0 {
				b.limit("backlog limit %d: a burst of more records is lost or stalls the processes for up to backlog_wait_time; raise it (auditctl -b %d)", st.BacklogLimit, RecommendedBacklog)
			} else {
				b.note("backlog limit %d: the tracer raises it while it runs and no audit daemon holds the audit PID (and restores it); auditd would need auditctl -b %d", st.BacklogLimit, RecommendedBacklog)
			}
		}
		if st.Lost > 0 {
			b.note("the kernel has lost %d audit records since boot", st.Lost)
		}
	}
	if a.TracerRules > 0 {
		b.note("%d %s with the tracer's key loaded: a tracer is running, or one was killed (tracer cleanup removes them)", a.TracerRules, plural(a.TracerRules, "rule", "rules"))
	}
	if f.Has32Bit() {
		b.note("%d 32-bit %s (e.g. %s): rules need b32 copies (tracer rules --arch both)", len(f.Procs.Bits32), plural(len(f.Procs.Bits32), "process runs", "processes run"), f.Procs.Bits32[0].Comm)
	} else if f.Procs.Unreadable > 0 && !f.Root {
		b.note("32-bit processes unknown: read the executables of only %d of %d processes (the others are other users'); run tracer doctor as root", f.Procs.Scanned, f.Procs.Scanned+f.Procs.Unreadable)
	} else if f.Procs.Scanned > 0 {
		b.note("no 32-bit process runs: b64 rules suffice (tracer rules --arch b64)")
	}
	b.note("while any syscall rule is loaded, every syscall of every process pays audit's entry and exit work (bench workload syscall-tax measures it)")
	return b.v
}

func ebpfVerdict(f Facts, assumed []string) Verdict {
	b := verdictBuilder{Verdict{Backend: "ebpf", Status: Works}}
	e := f.EBPF
	maj, mn, ok := KernelVersion(f.Kernel)
	if ok && (maj < 4 || (maj == 4 && mn < 18)) {
		b.cannot("kernel %s: the eBPF backend needs 4.18 or later with BTF (RHEL 7's 3.10 has only a technology-preview bpf)", f.Kernel)
		return b.v
	}
	if No(e.BPFSyscall) {
		b.cannot("the kernel has no bpf(2) syscall (CONFIG_BPF_SYSCALL is off)")
		return b.v
	}
	if No(e.BTF) {
		b.cannot("no kernel BTF (/sys/kernel/btf/vmlinux): the CO-RE programs cannot be relocated (RHEL 8 has it from 8.2 on) unless watch is given this kernel's BTF with --btf FILE (from BTFHub)")
	}
	if e.Lockdown == "confidentiality" {
		b.cannot("kernel lockdown is in confidentiality mode: BPF may not read kernel memory")
	}
	if b.v.Status == Cannot {
		return b.v
	}
	if No(e.RingBuf) {
		b.limit("no BPF ring buffer (kernel before 5.8, not backported): events go through the per-CPU perf buffer, which loses more in bursts and may reorder events across CPUs")
	}
	if No(e.BTFTracepoints) && No(e.Fentry) {
		b.limit("no BTF tracepoints or fentry: the classic syscall tracepoints are used (every syscall takes the slow path while they are attached), the process tree on raw tracepoints")
	}
	if No(e.SyscallTracepoints) {
		b.limit("no syscall tracepoints (CONFIG_FTRACE_SYSCALLS off): --probes syscalls and the ebpf-syscalls bench mode cannot run")
	} else if e.Tracefs == "" && Yes(e.SyscallTracepoints) {
		b.note("tracefs is not mounted: --probes syscalls mounts it in a private mount namespace while it attaches (nothing stays mounted)")
	}
	if e.JITEnabled != nil && *e.JITEnabled == 0 {
		b.limit("the BPF JIT is off: programs are interpreted (sysctl net.core.bpf_jit_enable=1)")
	}
	if e.Lockdown == "integrity" {
		b.note("kernel lockdown is in integrity mode: tracing programs still load")
	}
	if No(e.Kprobes) {
		b.note("no kprobes: not needed, the tracer uses tracepoints")
	}
	for _, a := range assumed {
		b.note("%s", a)
	}
	return b.v
}

// HasTaskNever reports whether rules hold a never,task rule, which turns
// syscall auditing off for every process it matches (with no fields: all).
func HasTaskNever(rules []string) bool {
	for _, r := range rules {
		f := strings.Fields(r)
		for i := 0; i+1 < len(f); i++ {
			if (f[i] == "-a" || f[i] == "-A") && (f[i+1] == "never,task" || f[i+1] == "task,never") {
				if len(f) == 2 { // only an unconditional one silences everything
					return true
				}
			}
		}
	}
	return false
}

// KernelVersion parses a kernel release ("4.18.0-372.el8.x86_64").
func KernelVersion(release string) (major, minor int, ok bool) {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	mi := parts[1]
	if i := strings.IndexFunc(mi, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		mi = mi[:i]
	}
	minor, err2 := strconv.Atoi(mi)
	return major, minor, err1 == nil && err2 == nil
}

// RHELRelease returns the major and minor release of a RHEL-family node
// (RHEL, CentOS, Rocky, Alma, Oracle Linux), ok false for other systems.
// minor is -1 when the release does not say (CentOS 7: VERSION_ID="7").
func RHELRelease(o OSRelease) (major, minor int, ok bool) {
	switch o.ID {
	case "rhel", "centos", "rocky", "almalinux", "ol", "scientific":
	default:
		if !strings.Contains(" "+o.IDLike+" ", " rhel ") {
			return 0, 0, false
		}
	}
	v := o.VersionID
	maj, rest, _ := strings.Cut(v, ".")
	major, err := strconv.Atoi(maj)
	if err != nil {
		return 0, 0, false
	}
	minor = -1
	if rest != "" {
		if n, err := strconv.Atoi(strings.SplitN(rest, ".", 2)[0]); err == nil {
			minor = n
		}
	}
	return major, minor, true
}

// WithKnowledge fills the eBPF facts that were not probed from what is known
// of RHEL releases and kernel versions, and says what it assumed:
//
//   - RHEL 7 (3.10): no usable eBPF.
//   - RHEL 8.0 and 8.1: no kernel BTF; 8.2 brought /sys/kernel/btf/vmlinux.
//   - RHEL 8.2 and 8.3: no BPF ring buffer; the BPF backports of 8.4 brought it.
//   - RHEL 9 (5.14): everything.
//   - Other systems: the upstream version (BTF sysfs 5.4, ring buffer 5.8,
//     fentry and BTF tracepoints 5.5).
func WithKnowledge(f Facts) (Facts, []string) {
	var assumed []string
	e := &f.EBPF
	maj, minor, rhel := RHELRelease(f.OS)
	kmaj, kmin, kok := KernelVersion(f.Kernel)
	kge := func(a, b int) bool { return kok && (kmaj > a || (kmaj == a && kmin >= b)) }
	set := func(p **bool, v bool, why string) {
		if *p == nil {
			*p = Bool(v)
			assumed = append(assumed, why)
		}
	}
	switch {
	case rhel && maj <= 7:
		set(&e.BTF, false, "BTF assumed absent: RHEL 7 (not probed)")
		set(&e.RingBuf, false, "ring buffer assumed absent: RHEL 7 (not probed)")
	case rhel && maj == 8 && minor >= 0:
		set(&e.BTF, minor >= 2, fmt.Sprintf("BTF assumed %s: RHEL 8.%d (not probed)", presentIf(minor >= 2), minor))
		set(&e.RingBuf, minor >= 4, fmt.Sprintf("ring buffer assumed %s: RHEL 8.%d (not probed)", presentIf(minor >= 4), minor))
		set(&e.BTFTracepoints, minor >= 4, fmt.Sprintf("BTF tracepoints assumed %s: RHEL 8.%d (not probed)", presentIf(minor >= 4), minor))
		set(&e.Fentry, minor >= 4, fmt.Sprintf("fentry assumed %s: RHEL 8.%d (not probed)", presentIf(minor >= 4), minor))
	case rhel && maj >= 9:
		set(&e.BTF, true, "BTF assumed present: RHEL 9 (not probed)")
		set(&e.RingBuf, true, "ring buffer assumed present: RHEL 9 (not probed)")
		set(&e.BTFTracepoints, true, "BTF tracepoints assumed present: RHEL 9 (not probed)")
		set(&e.Fentry, true, "fentry assumed present: RHEL 9 (not probed)")
	case kok && !rhel:
		set(&e.RingBuf, kge(5, 8), fmt.Sprintf("ring buffer assumed %s: kernel %d.%d (not probed)", presentIf(kge(5, 8)), kmaj, kmin))
		set(&e.BTFTracepoints, kge(5, 5), fmt.Sprintf("BTF tracepoints assumed %s: kernel %d.%d (not probed)", presentIf(kge(5, 5)), kmaj, kmin))
		set(&e.Fentry, kge(5, 5), fmt.Sprintf("fentry assumed %s: kernel %d.%d (not probed)", presentIf(kge(5, 5)), kmaj, kmin))
	}
	return f, assumed
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func presentIf(b bool) string {
	if b {
		return "present"
	}
	return "absent"
}

// NoMulticastReason is the verdict's reason on a kernel before 3.16.
func NoMulticastReason(kernel string) string {
	return fmt.Sprintf("kernel %s is older than 3.16: the audit multicast group is missing there, or (RHEL 7's 3.10) binds but delivers nothing, so tracer cannot read the records itself; run it as auditd's plugin: watch --backend audit --from-auditd (docs/backends.md, \"Following the node's rules\")", kernel)
}

// lockedVerdict judges a locked audit (enabled=2): tracer adds no rule
// there, and follows the loaded rules by key when some record events.
func lockedVerdict(b *verdictBuilder, rules []string) {
	const why = "rules locked (enabled=2, e.g. STIG/CIS): tracer cannot add rules"
	want := vocab.TypeSet(0).With(vocab.TypeExec).With(vocab.TypeFork).With(vocab.TypeSignal)
	plan, err := auditrules.PlanLocked(rules, want)
	if err != nil {
		b.cannot("%s, and no loaded rule with a key records exec, fork or signal syscalls; add keyed rules to the node's rules files (tracer rules --key %s > /etc/audit/rules.d/%s.rules) and reboot, or use --backend ebpf", why, auditrules.Key, auditrules.Key)
		return
	}
	msg := fmt.Sprintf("%s; it follows the node's rules by key: watch --backend audit --keys %s (%d loaded %s record %s events", why, strings.Join(plan.Keys, ","), plan.Rules, plural(plan.Rules, "rule", "rules"), plan.Covers)
	if miss := want &^ plan.Covers; miss != 0 {
		msg += fmt.Sprintf("; none records %s", miss)
	}
	b.limit("%s; only what they select is seen)", msg)
}
