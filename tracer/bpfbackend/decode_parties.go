// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfbackend

import (
	"encoding/binary"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// decodeIdentity fills the exec ids and the cgroup from a record's header.
// A record with pid 0 (the idle task) has no process to name.
func (d *decoder) decodeIdentity(raw []byte, e *tracer.Event) {
	le := binary.LittleEndian
	e.ExecID = senderID(raw)
	if ppid := le.Uint32(raw[offHdrPPID:]); ppid != 0 {
		e.ParentExecID = tracer.ExecID{PID: ppid, Start: host.TicksFromNS(le.Uint64(raw[offPStart:]))}
	}
	if id := le.Uint64(raw[offCgid:]); id != 0 && d.cgroups != nil {
		if id != d.lastCgid {
			d.lastCg, d.lastCgOK = d.cgroups.lookup(id)
			d.lastCgid = id
		}
		if d.lastCgOK {
			e.SetCgroup(d.lastCg)
		}
	}
}

// senderID is the exec id of the process of a record's header.
func senderID(raw []byte) tracer.ExecID {
	le := binary.LittleEndian
	pid := le.Uint32(raw[offPID:])
	if pid == 0 { // the idle task
		return tracer.ExecID{}
	}
	return tracer.ExecID{PID: pid, Start: host.TicksFromNS(le.Uint64(raw[offStart:]))}
}

// targetID is the exec id of a signal record's target (xfTarget set).
func targetID(raw []byte) tracer.ExecID {
	le := binary.LittleEndian
	return tracer.ExecID{PID: le.Uint32(raw[offXPID:]), Start: host.TicksFromNS(le.Uint64(raw[offXStart:]))}
}

// decodeSignal fills what the kernel said of a signal: its code, origin,
// result and target. The syscall probe sets do not see the siginfo: the
// code is then the one the syscall gives (vocab.SyscallCode), except for
// pidfd_send_signal, whose siginfo argument the record does not keep.
func (d *decoder) decodeSignal(raw []byte, e *tracer.Event) {
	le := binary.LittleEndian
	xf := raw[offXFlags]
	switch {
	case xf&xfCode != 0:
		e.Code, e.HasCode = int32(le.Uint32(raw[offCode:])), true
	case e.Syscall != "" && e.Syscall != "pidfd_send_signal":
		e.Code, e.HasCode = vocab.SyscallCode(e.Syscall, true)
	}
	switch {
	case xf&xfKernel != 0:
		e.Origin = vocab.OriginKernel
	case e.Syscall != "":
		e.Origin = vocab.OriginUser
	}
	if xf&xfResult != 0 {
		e.Result = vocab.ResultFromKernel(int(raw[offResult]))
	}
	if xf&xfTarget != 0 {
		e.TargetComm = d.intern(cstring(raw[offXComm : offXComm+commLen]))
		e.TargetExecID = targetID(raw)
	}
}

// decodeExit fills the death of a process by a signal: the signal, the
// core flag, the OOM mark and the sender. The kernel has no process to
// name as the sender of its own signals: killed_by says "kernel", or
// "oom-killer" for the OOM killer's SIGKILL.
func (d *decoder) decodeExit(raw []byte, e *tracer.Event) {
	le := binary.LittleEndian
	xf := raw[offXFlags]
	if xf&xfKilled == 0 {
		return
	}
	e.SetExitStatus(vocab.DecodeWaitStatus(le.Uint32(raw[offStatus:])))
	e.OOMKill = xf&xfOOM != 0
	if xf&xfKiller == 0 {
		return
	}
	k := &e.KilledBy
	k.Code = int32(le.Uint32(raw[offCode:]))
	if xf&xfKernel != 0 {
		k.Origin, k.Comm = vocab.OriginKernel, "kernel"
		if e.OOMKill {
			k.Comm = "oom-killer"
		}
		return
	}
	k.Origin = vocab.OriginUser
	k.PID = le.Uint32(raw[offXPID:])
	k.Comm = d.intern(cstring(raw[offXComm : offXComm+commLen]))
	k.ExecID = tracer.ExecID{PID: k.PID, Start: host.TicksFromNS(le.Uint64(raw[offXStart:]))}
	if sc := raw[offXSyscall]; int(sc) < len(syscallNames) {
		k.Syscall = syscallNames[sc]
	}
}
