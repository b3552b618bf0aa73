// SPDX-License-Identifier: Apache-2.0

//go:build linux

package node

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/elastic/go-libaudit/v2/rule"
	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/tracer/auditstate"
	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/tracefs"
)

// Collect reads the facts of this node. It works without root but then
// leaves the facts that need it unknown and lists them in NeedRoot.
//
// Probing leaves nothing behind: the audit status and rules are only read,
// the test BPF programs and maps are closed before Collect returns (nothing
// is pinned), and when tracefs is not mounted it is mounted only inside a
// private mount namespace of a thread that exits afterwards.
func Collect() (Facts, error) {
	f := Facts{Root: os.Geteuid() == 0}
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		f.Machine = unix.ByteSliceToString(u.Machine[:])
		f.Kernel = unix.ByteSliceToString(u.Release[:])
		f.Hostname = unix.ByteSliceToString(u.Nodename[:])
	}
	Reader{Root: "/"}.readFacts(&f)
	probeAudit(&f)
	probeBPF(&f)
	if f.EBPF.Tracefs == "" {
		if f.Root {
			if err := probeTracefsPrivate(&f.EBPF); err != nil {
				f.Notes = append(f.Notes, err.Error())
			}
		} else {
			f.NeedRoot = append(f.NeedRoot, "syscall tracepoints and kprobes in tracefs (not mounted; root can look in a private mount)")
		}
	}
	return f, nil
}

func isPerm(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES)
}

// probeAudit reads the audit status and rules over netlink, changing nothing.
func probeAudit(f *Facts) {
	c, err := auditstate.Open()
	if err != nil {
		if errors.Is(err, syscall.EPROTONOSUPPORT) {
			f.Audit.Supported = Bool(false)
		} else {
			f.Notes = append(f.Notes, fmt.Sprintf("opening the audit netlink socket: %v", err))
		}
		return
	}
	defer c.Close() // only closes: the client never set the audit PID
	f.Audit.Supported = Bool(true)

	st, err := c.GetStatus()
	switch {
	case err == nil:
		f.Audit.Status = &AuditStatus{
			Enabled: st.Enabled, Failure: st.Failure, PID: st.PID, RateLimit: st.RateLimit,
			BacklogLimit: st.BacklogLimit, BacklogWaitTime: st.BacklogWaitTime,
			Backlog: st.Backlog, Lost: st.Lost,
		}
		if st.PID != 0 {
			f.Audit.Status.PIDComm, _ = host.ProcComm(st.PID)
		}
	case isPerm(err):
		f.NeedRoot = append(f.NeedRoot, "audit status and rules (CAP_AUDIT_CONTROL)")
		return
	default:
		f.Notes = append(f.Notes, fmt.Sprintf("reading the audit status: %v", err))
	}

	raw, err := c.GetRules()
	if err != nil {
		f.Notes = append(f.Notes, fmt.Sprintf("reading the audit rules: %v", err))
		return
	}
	f.Audit.RulesRead = true
	for _, wf := range raw {
		// Numeric ids, as auditctl -l prints them.
		s, err := rule.ToCommandLine(rule.WireFormat(wf), false)
		if err != nil {
			f.Notes = append(f.Notes, fmt.Sprintf("decoding an audit rule: %v", err))
			continue
		}
		f.Audit.Rules = append(f.Audit.Rules, s)
	}
	f.Audit.TracerRules = CountTracerRules(f.Audit.Rules)
}

// probeBPF asks the kernel what BPF programs it accepts, with throwaway
// programs and maps that are closed at once.
func probeBPF(f *Facts) {
	e := &f.EBPF
	needRoot := false
	note := func(what string, err error) *bool {
		switch {
		case err == nil:
			return Bool(true)
		case errors.Is(err, ebpf.ErrNotSupported):
			return Bool(false)
		case isPerm(err) && !f.Root:
			needRoot = true
			return nil
		}
		msg := err.Error()
		if i := strings.Index(msg, " (MEMLOCK"); i > 0 {
			msg = msg[:i] // cilium/ebpf's hint; the memlock limit is not the cause as root on 5.11+
		}
		f.Notes = append(f.Notes, fmt.Sprintf("%s: the kernel refused it: %s", what, msg))
		return Bool(false)
	}

	if No(e.BPFSyscall) {
		e.RingBuf, e.BTFTracepoints, e.Fentry, e.MmapData = Bool(false), Bool(false), Bool(false), Bool(false)
		return
	}
	e.RingBuf = note("ring buffer probe", features.HaveMapType(ebpf.RingBuf))
	if e.RingBuf == nil {
		// Without root, the kernel's symbols still tell whether the ring buffer is built in.
		if s, err := os.ReadFile("/proc/kallsyms"); err == nil {
			e.RingBuf = Bool(strings.Contains(string(s), " bpf_ringbuf_output\n"))
		}
	}
	e.MmapData = note("mmapable map probe", features.HaveMapFlag(features.BPF_F_MMAPABLE))
	if No(e.BTF) {
		// tp_btf and fentry resolve their target in the kernel's BTF.
		e.BTFTracepoints, e.Fentry = Bool(false), Bool(false)
	} else {
		e.BTFTracepoints = note("BTF tracepoint probe", probeTracing(ebpf.AttachTraceRawTp, "sched_process_exec"))
		e.Fentry = note("fentry probe", probeTracing(ebpf.AttachTraceFEntry, "security_task_kill"))
	}
	if needRoot {
		f.NeedRoot = append(f.NeedRoot, "BPF feature probes: BTF tracepoints, fentry (CAP_BPF)")
	}
}

// probeTracing loads and attaches an empty tracing program, then removes it.
func probeTracing(at ebpf.AttachType, target string) error {
	prog, err := ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{
		Type:         ebpf.Tracing,
		AttachType:   at,
		AttachTo:     target,
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
		License:      "GPL",
	}, ebpf.ProgramOptions{})
	if err != nil {
		return err
	}
	defer prog.Close()
	l, err := link.AttachTracing(link.TracingOptions{Program: prog})
	if err != nil {
		return err
	}
	return l.Close()
}

// probeTracefsPrivate mounts tracefs where no one sees it, to learn whether
// the kernel has syscall tracepoints and kprobe events (package tracefs:
// a private mount namespace of one thread that then ends).
func probeTracefsPrivate(e *EBPF) error {
	var found EBPF
	if err := tracefs.Do(func() error {
		Reader{Root: "/"}.readTracefs(&found, tracefs.Path)
		return nil
	}); err != nil {
		return fmt.Errorf("tracefs probe: %w", err)
	}
	// What the mounted tracefs shows overrides the kernel config.
	e.SyscallTracepoints, e.Kprobes, e.TracefsProbed = found.SyscallTracepoints, found.Kprobes, true
	return nil
}
