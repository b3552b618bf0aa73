// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfbackend

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Probe sets (Config.Probes). See docs/backends.md, "eBPF backend".
const (
	// ProbesDefault is ProbesSched when streaming and ProbesSyscalls when
	// counting (Config.CountOnly), each falling back to the other where the
	// kernel lacks what it needs.
	ProbesDefault = "default"
	// ProbesSched attaches BTF tracepoints on the scheduler and signal
	// events (sched_process_exec/fork/exit, signal_generate) and keeps
	// those made in the syscalls the audit rules name. No other syscall
	// pays anything; it cannot see calls that make no such event (failed
	// execs, kill(pid, 0), refused signals).
	ProbesSched = "sched"
	// ProbesSyscalls attaches the syscalls:sys_enter_X / sys_exit_X
	// tracepoints of the same syscalls, the hook points audit uses: every
	// call, failures included, but once any is enabled every syscall of
	// every process takes the kernel's slow path.
	ProbesSyscalls = "syscalls"
	// ProbesFEntry attaches fentry/fexit to the syscall functions: the
	// syscalls set's events at the sched set's cost, where the kernel
	// allows BPF trampolines.
	ProbesFEntry = "fentry"
)

// CheckProbes says whether set names a probe set (Config.Probes; "" is
// not one: Start reads it as ProbesDefault).
func CheckProbes(set string) error {
	switch set {
	case ProbesDefault, ProbesSched, ProbesSyscalls, ProbesFEntry:
		return nil
	}
	return fmt.Errorf("unknown --probes %q: use default, sched, syscalls or fentry", set)
}

type hook uint8

const (
	hookTracing    hook = iota // fentry, fexit, tp_btf
	hookTracepoint             // tracefs tracepoint "group/name"
	hookRawTP                  // raw tracepoint
	hookNone                   // loaded, never attached (run by user space)
)

// probe is one program attached at one point. Tracing programs are bound
// to their target at load time, so each attach point gets its own copy of
// the program (name); a tracepoint program may serve several tracepoints.
type probe struct {
	name     string // the loaded program
	prog     string // the program in the object file
	hook     hook
	target   string
	optional bool // a missing tracepoint is skipped, not an error
}

func (p probe) String() string {
	switch p.hook {
	case hookTracing:
		kind, _, _ := strings.Cut(p.prog, "_")
		if kind != "fentry" && kind != "fexit" {
			kind = "tp_btf"
		}
		return kind + "/" + p.target
	case hookRawTP:
		return "raw_tp/" + p.target
	}
	return "tracepoint/" + p.target
}

// errMissingTarget says the kernel lacks a function the default probe set needs.
var errMissingTarget = errors.New("syscall function not in kernel BTF")

// sysPrefix is the prefix of the kernel's syscall entry functions.
func sysPrefix() (string, error) {
	switch runtime.GOARCH {
	case "amd64":
		return "__x64_sys_", nil
	case "arm64":
		return "__arm64_sys_", nil
	}
	return "", fmt.Errorf("the ebpf backend supports amd64 and arm64, not %s", runtime.GOARCH)
}

func hasFunc(kernel *btf.Spec, name string) bool {
	if kernel == nil { // no BTF of the kernel's own
		return false
	}
	var fn *btf.Func
	return kernel.TypeByName(name, &fn) == nil
}

// fentryProbes is the default probe set for types: exit-side programs
// first, so that no exec recorded at entry misses its exit program.
func fentryProbes(kernel *btf.Spec, types vocab.TypeSet) ([]probe, error) {
	pfx, err := sysPrefix()
	if err != nil {
		return nil, err
	}
	ia32 := runtime.GOARCH == "amd64"
	var exits, entries []probe
	need := func(fn string) error {
		if !hasFunc(kernel, fn) {
			return fmt.Errorf("%w: %s", errMissingTarget, fn)
		}
		return nil
	}
	exit := func(name, prog, fn string) { exits = append(exits, probe{name: name, prog: prog, target: fn}) }
	entry := func(name, prog, fn string) { entries = append(entries, probe{name: name, prog: prog, target: fn}) }

	if types.Has(vocab.TypeExec) {
		for _, sc := range []string{"execve", "execveat"} {
			if err := need(pfx + sc); err != nil {
				return nil, err
			}
			exit("fexit_"+sc, "fexit_execve", pfx+sc)
			entry("fentry_"+sc, "fentry_"+sc, pfx+sc)
			if fn := "__ia32_compat_sys_" + sc; ia32 && hasFunc(kernel, fn) {
				exit("fexit_"+sc+"_32", "fexit_execve", fn)
				entry("fentry_"+sc+"_32", "fentry_"+sc+"_32", fn)
			}
		}
	}
	if types.Has(vocab.TypeFork) {
		// fork and vfork take no arguments: BTF may hold only
		// __do_sys_fork(void), which every ABI's entry point aliases.
		// arm64 has neither syscall.
		for _, sc := range []string{"fork", "vfork"} {
			switch {
			case hasFunc(kernel, pfx+sc):
				exit("fexit_"+sc, "fexit_"+sc, pfx+sc)
				if fn := "__ia32_sys_" + sc; ia32 && hasFunc(kernel, fn) {
					exit("fexit_"+sc+"_32", "fexit_"+sc, fn)
				}
			case hasFunc(kernel, "__do_sys_"+sc):
				exit("fexit_"+sc, "fexit_"+sc+"_0", "__do_sys_"+sc)
			}
		}
		for _, sc := range []string{"clone", "clone3"} {
			if err := need(pfx + sc); err != nil {
				return nil, err
			}
			exit("fexit_"+sc, "fexit_"+sc, pfx+sc)
			if fn := "__ia32_sys_" + sc; ia32 && hasFunc(kernel, fn) {
				exit("fexit_"+sc+"_32", "fexit_"+sc, fn)
			}
		}
	}
	if types.Has(vocab.TypeSignal) {
		for _, sc := range []string{"kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_send_signal"} {
			if err := need(pfx + sc); err != nil {
				if sc == "pidfd_send_signal" { // Linux 5.1+
					continue
				}
				return nil, err
			}
			exit("fexit_"+sc, "fexit_"+sc, pfx+sc)
			fn := "__ia32_sys_" + sc
			if strings.HasPrefix(sc, "rt_") {
				fn = "__ia32_compat_sys_" + sc
			}
			if ia32 && hasFunc(kernel, fn) {
				exit("fexit_"+sc+"_32", "fexit_"+sc+"_32", fn)
			}
		}
	}
	if types.Has(vocab.TypeExit) {
		for _, sc := range []string{"exit", "exit_group"} {
			if err := need(pfx + sc); err != nil {
				return nil, err
			}
			entry("fentry_"+sc, "fentry_"+sc, pfx+sc)
			if fn := "__ia32_sys_" + sc; ia32 && hasFunc(kernel, fn) {
				entry("fentry_"+sc+"_32", "fentry_"+sc+"_32", fn)
			}
		}
	}
	return append(exits, entries...), nil
}

func hasTracepoint(kernel *btf.Spec, name string) bool {
	if kernel == nil { // no BTF of the kernel's own
		return false
	}
	var td *btf.Typedef
	return kernel.TypeByName("btf_trace_"+name, &td) == nil
}

// schedProbes is the sched probe set for types, and the probes that
// follow the process tree (the same fork and exit programs).
func schedProbes(kernel *btf.Spec, types vocab.TypeSet) (events, track []probe, err error) {
	for _, tp := range []string{"sched_process_exec", "sched_process_fork", "sched_process_exit", "signal_generate"} {
		if !hasTracepoint(kernel, tp) {
			return nil, nil, fmt.Errorf("%w: BTF tracepoint %s", errMissingTarget, tp)
		}
	}
	fork := probe{name: "sched_fork", prog: "sched_fork", target: "sched_process_fork"}
	exit := probe{name: "sched_exit", prog: "sched_exit", target: "sched_process_exit"}
	if types.Has(vocab.TypeExec) {
		// The exec program first: a comm stashed for an exec whose
		// tracepoint is not attached yet would stay in the map.
		events = append(events, probe{name: "sched_exec", prog: "sched_exec", target: "sched_process_exec"})
		if hasTracepoint(kernel, "sched_prepare_exec") { // Linux 6.10+
			events = append(events, probe{name: "sched_prepare_exec", prog: "sched_prepare_exec", target: "sched_prepare_exec"})
		} else {
			events = append(events, probe{name: "sched_task_rename", prog: "sched_task_rename", target: "task_rename"})
		}
	}
	if types.Has(vocab.TypeFork) {
		events = append(events, fork)
	}
	// signal_generate also remembers the sender of a fatal signal for the
	// exit record of its target.
	if types.Has(vocab.TypeSignal) || types.Has(vocab.TypeExit) {
		events = append(events, probe{name: "sched_signal", prog: "sched_signal", target: "signal_generate"})
	}
	if types.Has(vocab.TypeExit) {
		events = append(events, exit)
	}
	return events, []probe{fork, exit}, nil
}

// tracepointProbes is the syscalls probe set for types, exit side first.
// 32-bit syscalls do not fire the syscalls:* tracepoints on x86. sigCalls:
// the signal syscalls' probes are attached for the raw signal_generate
// program (sig_calls) even when signals are not traced.
func tracepointProbes(types vocab.TypeSet, sigCalls bool) []probe {
	var exits, entries []probe
	exit := func(name, prog, tp string, optional bool) {
		exits = append(exits, probe{name: name, prog: prog, hook: hookTracepoint, target: "syscalls/" + tp, optional: optional})
	}
	entry := func(name, prog, tp string) {
		entries = append(entries, probe{name: name, prog: prog, hook: hookTracepoint, target: "syscalls/" + tp})
	}
	if types.Has(vocab.TypeExec) {
		for _, sc := range []string{"execve", "execveat"} {
			exit("tp_exit_exec", "tp_exit_exec", "sys_exit_"+sc, false)
			entry("tp_enter_"+sc, "tp_enter_"+sc, "sys_enter_"+sc)
		}
	}
	if types.Has(vocab.TypeFork) {
		for _, sc := range []string{"fork", "vfork", "clone", "clone3"} {
			// arm64 has no fork or vfork.
			exit("tp_exit_"+sc, "tp_exit_"+sc, "sys_exit_"+sc, sc == "fork" || sc == "vfork")
		}
	}
	if types.Has(vocab.TypeSignal) || sigCalls {
		for _, sc := range []string{"kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_send_signal"} {
			exit("tp_exit_signal", "tp_exit_signal", "sys_exit_"+sc, sc == "pidfd_send_signal")
			entry("tp_enter_"+sc, "tp_enter_"+sc, "sys_enter_"+sc)
			if sc == "pidfd_send_signal" {
				entries[len(entries)-1].optional = true
			}
		}
	}
	if types.Has(vocab.TypeExit) {
		for _, sc := range []string{"exit", "exit_group"} {
			entry("tp_enter_"+sc, "tp_enter_"+sc, "sys_enter_"+sc)
		}
	}
	return append(exits, entries...)
}

// trackProbes follow the process tree: BTF tracepoints where the kernel
// has them, raw tracepoints otherwise.
func trackProbes(btfTracepoints bool) []probe {
	if btfTracepoints {
		return []probe{
			{name: "track_fork", prog: "track_fork_btf", target: "sched_process_fork"},
			{name: "track_exit", prog: "track_exit_btf", target: "sched_process_exit"},
		}
	}
	return []probe{
		{name: "track_fork", prog: "track_fork_raw", hook: hookRawTP, target: "sched_process_fork"},
		{name: "track_exit", prog: "track_exit_raw", hook: hookRawTP, target: "sched_process_exit"},
	}
}

// programSpecs selects and copies the programs probes need from spec.
func programSpecs(spec *ebpf.CollectionSpec, probes []probe) (map[string]*ebpf.ProgramSpec, error) {
	out := make(map[string]*ebpf.ProgramSpec)
	for _, p := range probes {
		if _, ok := out[p.name]; ok {
			continue
		}
		ps, ok := spec.Programs[p.prog]
		if !ok {
			return nil, fmt.Errorf("program %s not in the BPF object", p.prog)
		}
		ps = ps.Copy()
		ps.Name = p.name
		if p.hook == hookTracing {
			ps.AttachTo = p.target
		}
		out[p.name] = ps
	}
	return out, nil
}

// attach attaches one probe.
func attach(coll *ebpf.Collection, p probe) (link.Link, error) {
	prog := coll.Programs[p.name]
	if prog == nil {
		return nil, fmt.Errorf("program %s not loaded", p.name)
	}
	switch p.hook {
	case hookTracing:
		return link.AttachTracing(link.TracingOptions{Program: prog})
	case hookRawTP:
		return link.AttachRawTracepoint(link.RawTracepointOptions{Name: p.target, Program: prog})
	default:
		group, name, _ := strings.Cut(p.target, "/")
		return link.Tracepoint(group, name, prog, nil)
	}
}

// attributionProbes are the programs that see what no syscall makes, for the
// syscalls and fentry sets (the sched set has them among its own): the
// kernel's own signals and the senders of fatal ones (signal_generate),
// deaths by a signal (sched_process_exit), and for every set the OOM
// killer's choice (oom:mark_victim). Where the kernel lacks a BTF
// tracepoint, that part is not seen. raw: the same programs on raw
// tracepoints (the syscalls set without BTF tracepoints), reading the
// kernel's structs through CO-RE relocations against relocTypes (the
// kernel's BTF or --btf's).
func attributionProbes(kernel, relocTypes *btf.Spec, types vocab.TypeSet, set string, raw bool) []probe {
	if raw {
		return rawAttributionProbes(relocTypes, types)
	}
	var out []probe
	if set != ProbesSched {
		if (types.Has(vocab.TypeSignal) || types.Has(vocab.TypeExit)) && hasTracepoint(kernel, "signal_generate") {
			out = append(out, probe{name: "sched_signal", prog: "sched_signal", target: "signal_generate"})
		}
		if types.Has(vocab.TypeExit) && hasTracepoint(kernel, "sched_process_exit") {
			out = append(out, probe{name: "proc_exit", prog: "proc_exit", target: "sched_process_exit"})
		}
	}
	if types.Has(vocab.TypeExit) && hasTracepoint(kernel, "mark_victim") {
		prog := "oom_victim_pid" // before 6.8 the tracepoint passes the victim's pid
		if tracepointTakesTask(kernel, "mark_victim") {
			prog = "oom_victim"
		}
		out = append(out, probe{name: "oom_victim", prog: prog, target: "mark_victim"})
	}
	return out
}

// rawAttributionProbes are attributionProbes on raw tracepoints. Raw
// tracepoints take no BTF to attach: which mark_victim the kernel has is
// read from relocTypes, a kernel without it in its types being older
// than 6.8 (the victim's pid).
func rawAttributionProbes(relocTypes *btf.Spec, types vocab.TypeSet) []probe {
	out := []probe{{name: "sched_signal", prog: "sched_signal_raw", hook: hookRawTP, target: "signal_generate"}}
	if !types.Has(vocab.TypeExit) {
		return out
	}
	out = append(out, probe{name: "proc_exit", prog: "proc_exit_raw", hook: hookRawTP, target: "sched_process_exit"})
	prog := "oom_victim_pid_raw"
	if tracepointTakesTask(relocTypes, "mark_victim") {
		prog = "oom_victim_raw"
	}
	// Optional: a kernel built without the OOM killer's tracepoints.
	return append(out, probe{name: "oom_victim", prog: prog, hook: hookRawTP, target: "mark_victim", optional: true})
}

// tracepointTakesTask reports whether a BTF tracepoint's first argument is a task_struct pointer.
func tracepointTakesTask(kernel *btf.Spec, name string) bool {
	var td *btf.Typedef
	if kernel == nil || kernel.TypeByName("btf_trace_"+name, &td) != nil {
		return false
	}
	ptr, ok := td.Type.(*btf.Pointer)
	if !ok {
		return false
	}
	fp, ok := ptr.Target.(*btf.FuncProto)
	if !ok || len(fp.Params) < 2 { // the first parameter is the tracepoint's context
		return false
	}
	p, ok := btf.UnderlyingType(fp.Params[1].Type).(*btf.Pointer)
	if !ok {
		return false
	}
	st, ok := p.Target.(*btf.Struct)
	return ok && st.Name == "task_struct"
}
