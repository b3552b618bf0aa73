// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"path"
	"strconv"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// ECSVersion is the Elastic Common Schema release the ecs format follows
// (the field definitions in testdata/ecs are of that release).
const ECSVersion = "9.4.0"

func init() { RegisterFormat("ecs", AppendECS) }

// AppendECS appends e as one Elastic Common Schema document (a JSON
// object, no newline), as docs/events.md maps each field. process.* is
// the event's process, as pid is in the JSON lines; what ECS has no field
// for is under tracer.*. Strings are escaped as in the JSON lines, but a
// byte that is not UTF-8 becomes U+FFFD, the raw bytes under
// tracer.raw_base64 (utf8.go).
func AppendECS(b []byte, e *tracer.Event) []byte {
	if !eventUTF8(e) {
		c := utf8Event(e)
		return appendECS(b, &c, e)
	}
	return appendECS(b, e, nil)
}

// appendECS appends e's document; raw, when not nil, is the event e was
// made UTF-8 from.
func appendECS(b []byte, e, raw *tracer.Event) []byte {
	b = append(b, `{"@timestamp":"`...)
	b = appendTime(b, e.Time)
	b = append(b, `","ecs":{"version":"`+ECSVersion+`"},"event":{"kind":"event","category":["process"],"type":["`...)
	b = append(b, ecsEventType(e.Type)...)
	b = append(b, `"],"action":`...)
	b = AppendJSONString(b, e.Type.String())
	b = append(b, `,"module":"tracer","dataset":"tracer.process","provider":`...)
	b = AppendJSONString(b, e.Backend)
	if carriesRet(e) {
		if e.Ret == 0 {
			b = append(b, `,"outcome":"success"`...)
		} else {
			b = append(b, `,"outcome":"failure"`...)
		}
	}
	if e.Type == vocab.TypeThrottle {
		// The window whose events were left out.
		b = append(b, `,"start":"`...)
		b = appendTime(b, e.Throttle.Start)
		b = append(b, `","end":"`...)
		b = appendTime(b, e.Throttle.End)
		b = append(b, '"')
	}
	b = append(b, '}')
	if h := validUTF8(nodeHostname()); h != "" {
		b = append(b, `,"host":{"name":`...)
		b = AppendJSONString(b, h)
		b = append(b, `,"hostname":`...)
		b = AppendJSONString(b, h)
		b = append(b, '}')
	}
	b = appendECSProcess(b, e)
	b = append(b, `,"user":{"id":"`...)
	b = strconv.AppendUint(b, uint64(e.UID), 10)
	b = append(b, '"')
	if e.HasCreds && e.EUID != e.UID {
		// ECS's user.effective: the user a setuid program acts as.
		b = append(b, `,"effective":{"id":"`...)
		b = strconv.AppendUint(b, uint64(e.EUID), 10)
		b = append(b, `"}`...)
	}
	b = append(b, '}')
	if e.HasCreds {
		b = append(b, `,"group":{"id":"`...)
		b = strconv.AppendUint(b, uint64(e.GID), 10)
		b = append(b, `"}`...)
	}
	b = appendECSContainer(b, e) // pod.go
	if carriesRet(e) && e.Ret != 0 {
		b = append(b, `,"error":{"code":`...)
		if name := vocab.ErrnoName(-e.Ret); name != "" {
			b = AppendJSONString(b, name)
		} else {
			b = AppendJSONString(b, strconv.FormatInt(e.Ret, 10))
		}
		b = append(b, '}')
	}
	b = appendECSTracer(b, e, raw)
	return append(b, '}')
}

// ecsEventType is event.type: an exec starts a program; an exit ends the
// process; a fork or a signal is told of the process that made it (the
// child of a fork, which may be a thread, is tracer.child_pid), so info.
func ecsEventType(t vocab.Type) string {
	switch t {
	case vocab.TypeExec:
		return "start"
	case vocab.TypeExit:
		return "end"
	}
	return "info"
}

// appendECSProcess appends process: the event's process, its parent, and
// for an exec the program it starts.
func appendECSProcess(b []byte, e *tracer.Event) []byte {
	b = append(b, `,"process":{"pid":`...)
	b = strconv.AppendUint(b, uint64(e.PID), 10)
	b = append(b, `,"name":`...)
	name := e.Comm
	if e.Type == vocab.TypeExec && e.Ret == 0 && e.Filename != "" {
		// The program it runs from now on; the comm it had is tracer.comm.
		name = path.Base(e.Filename)
	}
	b = AppendJSONString(b, name)
	if !e.ExecID.IsZero() {
		b = append(b, `,"entity_id":"`...)
		b = appendExecID(b, e.ExecID)
		b = append(b, '"')
	}
	if e.Type != vocab.TypeExec && e.Exe != "" {
		b = append(b, `,"executable":`...)
		b = AppendJSONString(b, e.Exe)
	}
	if e.Cwd != "" {
		b = append(b, `,"working_directory":`...)
		b = AppendJSONString(b, e.Cwd)
	}
	if e.Type == vocab.TypeExec {
		b = append(b, `,"executable":`...)
		b = AppendJSONString(b, e.Filename)
		b = append(b, `,"args":[`...)
		for i, a := range e.Argv {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSONString(b, a)
		}
		b = append(b, `],"args_count":`...)
		b = strconv.AppendInt(b, int64(len(e.Argv)), 10)
		b = append(b, `,"command_line":`...)
		b = appendCommandLine(b, e.Argv)
	}
	if e.Type == vocab.TypeExit && !e.Killed() {
		b = append(b, `,"exit_code":`...)
		b = strconv.AppendInt(b, int64(e.ExitCode), 10)
	}
	b = appendECSIDs(b, e)
	b = appendECSParent(b, e)
	return append(b, '}')
}

// appendECSIDs appends the process's ids: ECS's user and group are the
// effective ones, beside the real and saved.
func appendECSIDs(b []byte, e *tracer.Event) []byte {
	if !e.HasCreds {
		b = append(b, `,"real_user":{"id":"`...)
		b = strconv.AppendUint(b, uint64(e.UID), 10)
		return append(b, `"}`...)
	}
	for _, f := range [...]struct {
		name string
		id   uint32
	}{{`,"user":{"id":"`, e.EUID}, {`,"group":{"id":"`, e.EGID}, {`,"real_user":{"id":"`, e.UID},
		{`,"real_group":{"id":"`, e.GID}, {`,"saved_user":{"id":"`, e.SUID}, {`,"saved_group":{"id":"`, e.SGID}} {
		b = append(b, f.name...)
		b = strconv.AppendUint(b, uint64(f.id), 10)
		b = append(b, `"}`...)
	}
	return b
}

// appendECSParent appends process.parent, where the event names it: its
// exec id, its pid (an exec's ppid, else the exec id's), and its name when
// --ancestry gave the parent.
func appendECSParent(b []byte, e *tracer.Event) []byte {
	pid := e.ParentExecID.PID
	if e.Type == vocab.TypeExec && e.PPID != 0 {
		pid = e.PPID
	}
	if pid == 0 && e.ParentExecID.IsZero() {
		return b
	}
	b = append(b, `,"parent":{`...)
	sep := ""
	if pid != 0 {
		b = append(b, `"pid":`...)
		b = strconv.AppendUint(b, uint64(pid), 10)
		sep = ","
	}
	if !e.ParentExecID.IsZero() {
		b = append(b, sep...)
		b = append(b, `"entity_id":"`...)
		b = appendExecID(b, e.ParentExecID)
		b = append(b, '"')
		if len(e.Ancestors) > 0 && e.Ancestors[0].ExecID == e.ParentExecID {
			b = append(b, `,"name":`...)
			b = AppendJSONString(b, e.Ancestors[0].Comm)
		}
	}
	return append(b, '}')
}

// appendECSTracer appends tracer: the fields ECS has none for, named as
// in the JSON lines.
func appendECSTracer(b []byte, e, raw *tracer.Event) []byte {
	b = append(b, `,"tracer":{"auid":`...)
	b = strconv.AppendUint(b, uint64(e.AUID), 10)
	b = appendAuditContext(b, e)
	b = appendCgroupUnit(b, e)
	b = appendPodExtra(b, e, false)
	switch e.Type {
	case vocab.TypeExec:
		b = append(b, `,"comm":`...)
		b = AppendJSONString(b, e.Comm)
		// The caller's program before the exec; process.executable is the new one.
		b = appendOptString(b, `,"exe":`, e.Exe)
		if e.FilenameTruncated {
			b = append(b, `,"filename_truncated":true`...)
		}
		if e.ArgvTruncated {
			b = append(b, `,"argv_truncated":true`...)
		}
	case vocab.TypeFork:
		b = append(b, `,"child_pid":`...)
		b = strconv.AppendUint(b, uint64(e.ChildPID), 10)
		b = append(b, `,"syscall":`...)
		b = AppendJSONString(b, e.Syscall)
	case vocab.TypeSignal:
		b = appendOptString(b, `,"syscall":`, e.Syscall)
		b = appendECSSignal(b, e)
		b = append(b, `,"target":{"pid":`...)
		b = strconv.AppendInt(b, int64(e.TargetPID), 10)
		if e.TargetComm != "" {
			b = append(b, `,"name":`...)
			b = AppendJSONString(b, e.TargetComm)
		}
		if !e.TargetExecID.IsZero() {
			b = append(b, `,"entity_id":"`...)
			b = appendExecID(b, e.TargetExecID)
			b = append(b, '"')
		}
		b = append(b, '}')
	case vocab.TypeExit:
		b = appendDeath(b, e)
	case vocab.TypeThrottle:
		b = appendThrottle(b, e)
	}
	b = appendAncestors(b, e, `,"name":`, `,"entity_id":"`)
	if raw != nil {
		b = appendRawBase64(b, raw)
	}
	return append(b, '}')
}

// appendECSSignal appends tracer.signal: the signal sent, or the one that
// killed, with what the kernel said of it.
func appendECSSignal(b []byte, e *tracer.Event) []byte {
	b = append(b, `,"signal":{"number":`...)
	b = strconv.AppendInt(b, int64(e.Signal), 10)
	b = append(b, `,"name":`...)
	b = AppendJSONString(b, e.SignalName())
	if e.Type == vocab.TypeSignal {
		if e.HasCode {
			b = append(b, `,"code":`...)
			b = AppendJSONString(b, vocab.SigCodeName(e.Signal, e.Code))
		}
		b = appendOriginResult(b, e)
	}
	return append(b, '}')
}

// appendECSKiller appends tracer.killed_by: who sent the signal that
// killed the process.
func appendECSKiller(b []byte, e *tracer.Event, k *tracer.KilledBy) []byte {
	b = append(b, `,"killed_by":{"pid":`...)
	b = strconv.AppendUint(b, uint64(k.PID), 10)
	b = append(b, `,"name":`...)
	b = AppendJSONString(b, k.Comm)
	if !k.ExecID.IsZero() {
		b = append(b, `,"entity_id":"`...)
		b = appendExecID(b, k.ExecID)
		b = append(b, '"')
	}
	b = append(b, `,"code":`...)
	b = AppendJSONString(b, vocab.SigCodeName(e.Signal, k.Code))
	b = append(b, `,"origin":"`...)
	b = append(b, k.Origin.String()...)
	b = append(b, '"')
	b = appendOptString(b, `,"syscall":`, k.Syscall)
	return append(b, '}')
}

// appendThrottle appends throttle: a source that went over --rate-limit
// and the events of it left out in the window (its process is the first
// whose event was left out).
func appendThrottle(b []byte, e *tracer.Event) []byte {
	t := &e.Throttle
	b = append(b, `,"throttle":{"source":`...)
	b = AppendJSONString(b, t.Source.String())
	if t.CgroupID != 0 {
		b = append(b, `,"cgroup_id":`...)
		b = strconv.AppendUint(b, t.CgroupID, 10)
	}
	b = append(b, `,"limit":`...)
	b = strconv.AppendUint(b, uint64(t.Limit), 10)
	b = appendSuppressed(b, t)
	return append(b, '}')
}

// appendTime appends t as RFC 3339 with nanoseconds, in UTC, as the JSON
// lines' time.
func appendTime(b []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(b, time.RFC3339Nano)
}

// appendDeath appends, for an exit by a signal, the signal, core dump,
// killer and OOM fields both schemas keep under tracer's own names.
func appendDeath(b []byte, e *tracer.Event) []byte {
	if !e.Killed() {
		return b
	}
	b = appendECSSignal(b, e)
	if !e.CoreUnknown {
		b = append(b, `,"core_dumped":`...)
		b = strconv.AppendBool(b, e.CoreDumped)
	}
	if k := &e.KilledBy; k.Seen() {
		b = appendECSKiller(b, e, k)
	}
	if e.OOMKill {
		b = append(b, `,"oom_kill":true`...)
	}
	return b
}

// appendCgroupUnit appends the cgroup and unit fields, named as in the JSON
// lines, that neither schema has attributes for.
func appendCgroupUnit(b []byte, e *tracer.Event) []byte {
	b = appendOptString(b, `,"cgroup":`, e.Cgroup)
	if e.CgroupTruncated {
		b = append(b, `,"cgroup_truncated":true`...)
	}
	return appendOptString(b, `,"unit":`, e.Unit)
}

// appendAuditContext appends, named as in the JSON lines, what neither
// schema has a field for: the file system ids where they differ from the
// real ones, the audit session, the terminal's name (ECS's process.tty
// holds device numbers, which the backends do not read) and the audit key.
func appendAuditContext(b []byte, e *tracer.Event) []byte {
	if e.HasCreds && e.FSUID != e.UID {
		b = append(b, `,"fsuid":`...)
		b = strconv.AppendUint(b, uint64(e.FSUID), 10)
	}
	if e.HasCreds && e.FSGID != e.GID {
		b = append(b, `,"fsgid":`...)
		b = strconv.AppendUint(b, uint64(e.FSGID), 10)
	}
	if e.Session != 0 {
		b = append(b, `,"ses":`...)
		b = strconv.AppendUint(b, uint64(e.Session), 10)
	}
	b = appendOptString(b, `,"tty":`, e.TTY)
	return appendOptString(b, `,"key":`, e.Key)
}
