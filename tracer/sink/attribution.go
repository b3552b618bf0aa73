// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"fmt"
	"strconv"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// The fields that say who a process is, where it runs and who killed it
// (schema 2), for AppendJSON and AppendText. Each is written only when the
// backend knew it: a field a backend cannot know is left out, never guessed.

// appendExecID appends id's printed form (tracer.ExecID.String) without
// allocating: exec ids are most of the digits an event's line holds.
func appendExecID(b []byte, id tracer.ExecID) []byte {
	b = append(b, host.BootID()...)
	b = append(b, ':')
	b = appendUint(b, id.Start)
	b = append(b, ':')
	return appendUint(b, uint64(id.PID))
}

// appendExecIDJSON appends field key (with its opening quote) and id,
// unless id is unknown.
func appendExecIDJSON(b []byte, key string, id tracer.ExecID) []byte {
	if id.IsZero() {
		return b
	}
	b = append(b, key...)
	b = appendExecID(b, id)
	return append(b, '"')
}

// appendCgroupJSON appends cgroup, container_id, unit and the pod (pod.go).
func appendCgroupJSON(b []byte, e *tracer.Event) []byte {
	b = appendOptString(b, `,"cgroup":`, e.Cgroup)
	if e.CgroupTruncated {
		b = append(b, `,"cgroup_truncated":true`...)
	}
	b = appendOptString(b, `,"container_id":`, e.ContainerID)
	b = appendOptString(b, `,"unit":`, e.Unit)
	return appendPodJSON(b, e)
}

// appendOptString appends key (comma, quoted name, colon) and s as a JSON
// string, unless s is empty.
func appendOptString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, key...)
	return appendString(b, s)
}

// appendAncestorsJSON appends ancestors.
func appendAncestorsJSON(b []byte, e *tracer.Event) []byte {
	return appendAncestors(b, e, `,"comm":`, `,"exec_id":"`)
}

// appendAncestors appends ancestors, each a pid, a comm and an exec id
// under the keys (comma, quoted name, colon; the id's opening quote too)
// of the schema.
func appendAncestors(b []byte, e *tracer.Event, commKey, idKey string) []byte {
	if len(e.Ancestors) == 0 {
		return b
	}
	b = append(b, `,"ancestors":[`...)
	for i := range e.Ancestors {
		a := &e.Ancestors[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"pid":`...)
		b = appendUint(b, uint64(a.PID))
		b = append(b, commKey...)
		b = appendString(b, a.Comm)
		b = append(b, idKey...)
		b = appendExecID(b, a.ExecID)
		b = append(b, `"}`...)
	}
	return append(b, ']')
}

// appendSignalJSON appends a signal event's signal, its syscall and ret
// (only for signals a syscall sent), and what the kernel said of it but
// the target's exec id.
func appendSignalJSON(b []byte, e *tracer.Event) []byte {
	b = append(b, `,"signal":`...)
	b = appendInt(b, int64(e.Signal))
	b = append(b, `,"signal_name":`...)
	b = appendString(b, vocab.SignalName(e.Signal))
	if e.Syscall != "" {
		b = append(b, `,"syscall":`...)
		b = appendString(b, e.Syscall)
		b = append(b, `,"ret":`...)
		b = appendInt(b, e.Ret)
	}
	if e.HasCode {
		b = append(b, `,"code":"`...)
		b = append(b, vocab.SigCodeName(e.Signal, e.Code)...)
		b = append(b, '"')
	}
	b = appendOriginResult(b, e)
	if e.TargetComm != "" {
		b = append(b, `,"target_comm":`...)
		b = appendString(b, e.TargetComm)
	}
	return b
}

// appendOriginResult appends a signal's origin and result, each when known.
func appendOriginResult(b []byte, e *tracer.Event) []byte {
	if e.Origin != vocab.OriginUnknown {
		b = append(b, `,"origin":"`...)
		b = append(b, e.Origin.String()...)
		b = append(b, '"')
	}
	if e.Result != vocab.ResultUnknown {
		b = append(b, `,"result":"`...)
		b = append(b, e.Result.String()...)
		b = append(b, '"')
	}
	return b
}

// appendExitJSON appends exit_code, or for a process killed by a signal
// the signal, core flag, its sender and the OOM mark.
func appendExitJSON(b []byte, e *tracer.Event) []byte {
	if !e.Killed() {
		b = append(b, `,"exit_code":`...)
		return appendInt(b, int64(e.ExitCode))
	}
	b = append(b, `,"signal":`...)
	b = appendInt(b, int64(e.Signal))
	b = append(b, `,"signal_name":`...)
	b = appendString(b, vocab.SignalName(e.Signal))
	if !e.CoreUnknown {
		b = append(b, `,"core_dumped":`...)
		b = strconv.AppendBool(b, e.CoreDumped)
	}
	if k := &e.KilledBy; k.Seen() {
		b = append(b, `,"killed_by":{"pid":`...)
		b = appendUint(b, uint64(k.PID))
		b = append(b, `,"comm":`...)
		b = appendString(b, k.Comm)
		if !k.ExecID.IsZero() {
			b = append(b, `,"exec_id":"`...)
			b = appendExecID(b, k.ExecID)
			b = append(b, '"')
		}
		b = append(b, `,"code":"`...)
		b = append(b, vocab.SigCodeName(e.Signal, k.Code)...)
		b = append(b, `","origin":"`...)
		b = append(b, k.Origin.String()...)
		b = append(b, '"')
		b = appendOptString(b, `,"syscall":`, k.Syscall)
		b = append(b, '}')
	}
	if e.OOMKill {
		b = append(b, `,"oom_kill":true`...)
	}
	return b
}

// appendSignalText appends "kill -> 4300 SIGUSR1 ret=0 (SI_USER, delivered, to sleep)",
// or for the kernel's own "kernel -> 4300 SIGSEGV (SEGV_MAPERR, delivered, to segv)".
func appendSignalText(b []byte, e *tracer.Event) []byte {
	via := e.Syscall
	if via == "" {
		via = "kernel"
	}
	b = fmt.Appendf(b, "%s -> %d %s", via, e.TargetPID, vocab.SignalName(e.Signal))
	if e.Syscall != "" {
		b = appendRet(append(b, " ret="...), e.Ret)
	}
	sep := " ("
	part := func(s string) {
		b = append(b, sep...)
		b = append(b, s...)
		sep = ", "
	}
	if e.HasCode {
		part(vocab.SigCodeName(e.Signal, e.Code))
	}
	if e.Result != vocab.ResultUnknown {
		part(e.Result.String())
	}
	if e.TargetComm != "" {
		part("to " + textSafe(e.TargetComm))
	}
	if sep == ", " {
		b = append(b, ')')
	}
	return b
}

// appendExitText appends the cause in words: "code=3", "killed by SIGKILL
// from oom-killer", "killed by SIGSEGV (SEGV_MAPERR) from the kernel, core
// dumped", "killed by SIGTERM from systemd (pid 1) via kill".
func appendExitText(b []byte, e *tracer.Event) []byte {
	if !e.Killed() {
		return fmt.Appendf(b, "code=%d", e.ExitCode)
	}
	b = append(b, "killed by "...)
	b = append(b, vocab.SignalName(e.Signal)...)
	k := &e.KilledBy
	switch {
	case e.OOMKill:
		b = append(b, " from oom-killer"...)
	case k.Origin == vocab.OriginKernel:
		b = fmt.Appendf(b, " (%s) from the kernel", vocab.SigCodeName(e.Signal, k.Code))
	case k.Origin == vocab.OriginUser:
		b = fmt.Appendf(b, " from %s (pid %d)", textSafe(k.Comm), k.PID)
		if via := viaSyscall(k); via != "" {
			b = append(b, " via "...)
			b = append(b, via...)
		}
	}
	if e.CoreDumped {
		b = append(b, ", core dumped"...)
	}
	return b
}

// viaSyscall names the call that sent a user signal, from the code where
// the backend did not see the syscall.
func viaSyscall(k *tracer.KilledBy) string {
	if k.Syscall != "" {
		return k.Syscall
	}
	switch k.Code {
	case vocab.SIUser:
		return "kill"
	case vocab.SITkill:
		return "tgkill"
	case vocab.SIQueue:
		return "sigqueue"
	}
	return ""
}

// textSafe keeps a process-controlled name (comm) from writing control
// characters to a terminal or forging words: escaped, and quoted where it
// holds a space or a quote, as every string of the text format.
func textSafe(s string) string {
	if needsQuotes(s) {
		return string(appendQuoted(nil, s))
	}
	return Escape(s)
}
