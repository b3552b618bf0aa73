// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// The journal and OTLP take their fields from the event through one
// table, eventFields: a row per field, with the journal's FIELD_NAME
// (TRACER_ and the JSON lines' key in upper case, a nested key joined by
// _: killed_by.pid is TRACER_KILLED_BY_PID) and the OTLP attribute key
// (the ECS document's field, dotted: process.parent.pid), either "" where
// that destination has no such field, and how to read its value.
//
// A row is present exactly when the JSON lines (journal) or the ECS
// document (OTLP) have its key, so the destinations and --format json or
// ecs never disagree (TestFieldTableHasEveryKey, TestFieldTableGolden). Each
// destination writes its rows in table order. Adding a field is one row.

// eventField is one row of the table.
type eventField struct {
	journal string // the journal's FIELD_NAME; "": not in the journal
	otlp    string // the OTLP attribute key; "": not an attribute
	// get reads the field of e into v, and reports whether e has it.
	get func(e *tracer.Event, v *fieldValue) bool
}

// valueKind says which of fieldValue's members holds the value, and how
// each destination writes it.
type valueKind uint8

const (
	kString    valueKind = iota // s; the journal takes the bytes as they are, OTLP a UTF-8 string
	kUint                       // u; a number
	kInt                        // i; a number
	kBool                       // b
	kDecimal                    // u, written as a string (ECS's user ids)
	kTime                       // t, RFC 3339 with nanoseconds, UTC
	kExecID                     // id, as tracer.ExecID prints
	kStrings                    // ss; the journal takes a JSON array, OTLP a string slice
	kAncestors                  // anc; the journal takes the JSON lines' array, OTLP a slice of maps
)

// fieldValue is a value get read; only the member its kind names is set.
type fieldValue struct {
	kind valueKind
	b    bool
	u    uint64
	i    int64
	s    string
	t    time.Time
	id   tracer.ExecID
	ss   []string
	anc  []tracer.Ancestor
}

// Getters for the common shapes of a row.

func str(f func(*tracer.Event) string) func(*tracer.Event, *fieldValue) bool {
	return func(e *tracer.Event, v *fieldValue) bool { v.kind, v.s = kString, f(e); return true }
}

// optStr is a string field present when it is not empty.
func optStr(f func(*tracer.Event) string) func(*tracer.Event, *fieldValue) bool {
	return func(e *tracer.Event, v *fieldValue) bool { v.kind, v.s = kString, f(e); return v.s != "" }
}

func num(f func(*tracer.Event) uint64) func(*tracer.Event, *fieldValue) bool {
	return func(e *tracer.Event, v *fieldValue) bool { v.kind, v.u = kUint, f(e); return true }
}

func signed(f func(*tracer.Event) int64) func(*tracer.Event, *fieldValue) bool {
	return func(e *tracer.Event, v *fieldValue) bool { v.kind, v.i = kInt, f(e); return true }
}

// isSet is a field present, as true, when it is set.
func isSet(f func(*tracer.Event) bool) func(*tracer.Event, *fieldValue) bool {
	return func(e *tracer.Event, v *fieldValue) bool { v.kind, v.b = kBool, true; return f(e) }
}

// execID is an exec id present when it is known.
func execID(f func(*tracer.Event) tracer.ExecID) func(*tracer.Event, *fieldValue) bool {
	return func(e *tracer.Event, v *fieldValue) bool { v.kind, v.id = kExecID, f(e); return !v.id.IsZero() }
}

// idIfNot is an id present where the backend read the ids and it is not
// the real one it is paired with (a setuid program's euid).
func idIfNot(f func(*tracer.Event) (id, real uint32)) func(*tracer.Event, *fieldValue) bool {
	return func(e *tracer.Event, v *fieldValue) bool {
		id, real := f(e)
		v.kind, v.u = kUint, uint64(id)
		return e.HasCreds && id != real
	}
}

func decimal(f func(*tracer.Event) uint64) func(*tracer.Event, *fieldValue) bool {
	return func(e *tracer.Event, v *fieldValue) bool { v.kind, v.u = kDecimal, f(e); return true }
}

func constant(s string) func(*tracer.Event, *fieldValue) bool {
	return func(_ *tracer.Event, v *fieldValue) bool { v.kind, v.s = kString, s; return true }
}

func constants(ss ...string) func(*tracer.Event, *fieldValue) bool {
	return func(_ *tracer.Event, v *fieldValue) bool { v.kind, v.ss = kStrings, ss; return true }
}

// when has get's field only where cond holds.
func when(cond func(*tracer.Event) bool, get func(*tracer.Event, *fieldValue) bool) func(*tracer.Event, *fieldValue) bool {
	return func(e *tracer.Event, v *fieldValue) bool { return cond(e) && get(e, v) }
}

// Conditions rows share.
func isType(t vocab.Type) func(*tracer.Event) bool {
	return func(e *tracer.Event) bool { return e.Type == t }
}

var (
	isExec     = isType(vocab.TypeExec)
	isFork     = isType(vocab.TypeFork)
	isSignal   = isType(vocab.TypeSignal)
	isThrottle = isType(vocab.TypeThrottle)
	isKilled   = (*tracer.Event).Killed
	// sentBySyscall: a signal a process sent with a syscall.
	sentBySyscall = func(e *tracer.Event) bool { return e.Type == vocab.TypeSignal && e.Syscall != "" }
	exitedByCode  = func(e *tracer.Event) bool { return e.Type == vocab.TypeExit && !e.Killed() }
	// A signal, or the one that killed the process.
	hasSignal = func(e *tracer.Event) bool { return e.Type == vocab.TypeSignal || e.Killed() }
	killer    = func(e *tracer.Event) bool { return e.Killed() && e.KilledBy.Seen() }
	// The ids past the real uid are read where the backend read them all.
	hasCreds   = func(e *tracer.Event) bool { return e.HasCreds }
	hasSession = func(e *tracer.Event) bool { return e.Session != 0 }
	// ECS's container, and its orchestrator where a pod is known (pod.go).
	inContainer = func(e *tracer.Event) bool { return e.ContainerID != "" }
	inPod       = func(e *tracer.Event) bool { return e.ContainerID != "" && e.Pod.Name != "" }
	failed      = func(e *tracer.Event) bool { return carriesRet(e) && e.Ret != 0 }
)

// eventFields is the table. The journal's rows are in the order of the
// JSON lines' keys, OTLP's in the ECS document's.
var eventFields = []eventField{
	// The journal: the JSON lines' fields (encode.go, attribution.go, throttle.go).
	{"TRACER_TIME", "", func(e *tracer.Event, v *fieldValue) bool { v.kind, v.t = kTime, e.Time; return true }},
	{"TRACER_BACKEND", "", str(func(e *tracer.Event) string { return e.Backend })},
	{"TRACER_TYPE", "", str(func(e *tracer.Event) string { return e.Type.String() })},
	{"TRACER_PID", "", num(func(e *tracer.Event) uint64 { return uint64(e.PID) })},
	{"TRACER_COMM", "", str(func(e *tracer.Event) string { return e.Comm })},
	{"TRACER_UID", "", num(func(e *tracer.Event) uint64 { return uint64(e.UID) })},
	{"TRACER_GID", "", when(hasCreds, num(func(e *tracer.Event) uint64 { return uint64(e.GID) }))},
	{"TRACER_EUID", "", idIfNot(func(e *tracer.Event) (uint32, uint32) { return e.EUID, e.UID })},
	{"TRACER_SUID", "", idIfNot(func(e *tracer.Event) (uint32, uint32) { return e.SUID, e.UID })},
	{"TRACER_FSUID", "", idIfNot(func(e *tracer.Event) (uint32, uint32) { return e.FSUID, e.UID })},
	{"TRACER_EGID", "", idIfNot(func(e *tracer.Event) (uint32, uint32) { return e.EGID, e.GID })},
	{"TRACER_SGID", "", idIfNot(func(e *tracer.Event) (uint32, uint32) { return e.SGID, e.GID })},
	{"TRACER_FSGID", "", idIfNot(func(e *tracer.Event) (uint32, uint32) { return e.FSGID, e.GID })},
	{"TRACER_AUID", "", num(func(e *tracer.Event) uint64 { return uint64(e.AUID) })},
	{"TRACER_SES", "", when(hasSession, num(func(e *tracer.Event) uint64 { return uint64(e.Session) }))},
	{"TRACER_TTY", "", optStr(func(e *tracer.Event) string { return e.TTY })},
	{"TRACER_EXE", "", optStr(func(e *tracer.Event) string { return e.Exe })},
	{"TRACER_CWD", "", optStr(func(e *tracer.Event) string { return e.Cwd })},
	{"TRACER_KEY", "", optStr(func(e *tracer.Event) string { return e.Key })},
	{"TRACER_EXEC_ID", "", execID(func(e *tracer.Event) tracer.ExecID { return e.ExecID })},
	{"TRACER_PARENT_EXEC_ID", "", execID(func(e *tracer.Event) tracer.ExecID { return e.ParentExecID })},
	{"TRACER_CGROUP", "", optStr(func(e *tracer.Event) string { return e.Cgroup })},
	{"TRACER_CGROUP_TRUNCATED", "", isSet(func(e *tracer.Event) bool { return e.CgroupTruncated })},
	{"TRACER_CONTAINER_ID", "", optStr(func(e *tracer.Event) string { return e.ContainerID })},
	{"TRACER_POD", "", optStr(func(e *tracer.Event) string { return e.Pod.Name })},
	{"TRACER_POD_NAMESPACE", "", optStr(func(e *tracer.Event) string { return e.Pod.Namespace })},
	{"TRACER_POD_UID", "", optStr(func(e *tracer.Event) string { return e.Pod.UID })},
	{"TRACER_CONTAINER_NAME", "", optStr(func(e *tracer.Event) string { return e.Pod.Container })},
	{"TRACER_IMAGE", "", optStr(func(e *tracer.Event) string { return e.Pod.Image })},
	{"TRACER_IMAGE_ID", "", optStr(func(e *tracer.Event) string { return e.Pod.ImageID })},
	{"TRACER_UNIT", "", optStr(func(e *tracer.Event) string { return e.Unit })},
	{"TRACER_ANCESTORS", "", ancestors},
	{"TRACER_PPID", "", when(isExec, num(func(e *tracer.Event) uint64 { return uint64(e.PPID) }))},
	{"TRACER_FILENAME", "", when(isExec, str(func(e *tracer.Event) string { return e.Filename }))},
	{"TRACER_FILENAME_TRUNCATED", "", when(isExec, isSet(func(e *tracer.Event) bool { return e.FilenameTruncated }))},
	{"TRACER_ARGV", "", when(isExec, argv)},
	{"TRACER_ARGV_TRUNCATED", "", when(isExec, isSet(func(e *tracer.Event) bool { return e.ArgvTruncated }))},
	{"TRACER_CHILD_PID", "", when(isFork, num(func(e *tracer.Event) uint64 { return uint64(e.ChildPID) }))},
	{"TRACER_TARGET_PID", "", when(isSignal, signed(func(e *tracer.Event) int64 { return int64(e.TargetPID) }))},
	{"TRACER_EXIT_CODE", "", when(exitedByCode, signed(func(e *tracer.Event) int64 { return int64(e.ExitCode) }))},
	{"TRACER_SIGNAL", "", when(hasSignal, signed(func(e *tracer.Event) int64 { return int64(e.Signal) }))},
	{"TRACER_SIGNAL_NAME", "", when(hasSignal, str(func(e *tracer.Event) string { return vocab.SignalName(e.Signal) }))},
	{"TRACER_SYSCALL", "", when(func(e *tracer.Event) bool { return isFork(e) || sentBySyscall(e) },
		str(func(e *tracer.Event) string { return e.Syscall }))},
	{"TRACER_RET", "", when(func(e *tracer.Event) bool { return isExec(e) || sentBySyscall(e) },
		signed(func(e *tracer.Event) int64 { return e.Ret }))},
	{"TRACER_CODE", "", when(func(e *tracer.Event) bool { return isSignal(e) && e.HasCode },
		str(func(e *tracer.Event) string { return vocab.SigCodeName(e.Signal, e.Code) }))},
	{"TRACER_ORIGIN", "", when(func(e *tracer.Event) bool { return isSignal(e) && e.Origin != vocab.OriginUnknown },
		str(func(e *tracer.Event) string { return e.Origin.String() }))},
	{"TRACER_RESULT", "", when(func(e *tracer.Event) bool { return isSignal(e) && e.Result != vocab.ResultUnknown },
		str(func(e *tracer.Event) string { return e.Result.String() }))},
	{"TRACER_TARGET_COMM", "", when(isSignal, optStr(func(e *tracer.Event) string { return e.TargetComm }))},
	{"TRACER_TARGET_EXEC_ID", "", when(isSignal, execID(func(e *tracer.Event) tracer.ExecID { return e.TargetExecID }))},
	{"TRACER_CORE_DUMPED", "", when(func(e *tracer.Event) bool { return e.Killed() && !e.CoreUnknown },
		func(e *tracer.Event, v *fieldValue) bool { v.kind, v.b = kBool, e.CoreDumped; return true })},
	{"TRACER_KILLED_BY_PID", "", when(killer, num(func(e *tracer.Event) uint64 { return uint64(e.KilledBy.PID) }))},
	{"TRACER_KILLED_BY_COMM", "", when(killer, str(func(e *tracer.Event) string { return e.KilledBy.Comm }))},
	{"TRACER_KILLED_BY_EXEC_ID", "", when(killer, execID(func(e *tracer.Event) tracer.ExecID { return e.KilledBy.ExecID }))},
	{"TRACER_KILLED_BY_CODE", "", when(killer, str(func(e *tracer.Event) string { return vocab.SigCodeName(e.Signal, e.KilledBy.Code) }))},
	{"TRACER_KILLED_BY_ORIGIN", "", when(killer, str(func(e *tracer.Event) string { return e.KilledBy.Origin.String() }))},
	{"TRACER_KILLED_BY_SYSCALL", "", when(killer, optStr(func(e *tracer.Event) string { return e.KilledBy.Syscall }))},
	{"TRACER_OOM_KILL", "", when(isKilled, isSet(func(e *tracer.Event) bool { return e.OOMKill }))},
	{"TRACER_SOURCE", "", when(isThrottle, str(func(e *tracer.Event) string { return e.Throttle.Source.String() }))},
	{"TRACER_CGROUP_ID", "", when(func(e *tracer.Event) bool { return isThrottle(e) && e.Throttle.CgroupID != 0 },
		num(func(e *tracer.Event) uint64 { return e.Throttle.CgroupID }))},
	{"TRACER_WINDOW_START", "", when(isThrottle, func(e *tracer.Event, v *fieldValue) bool { v.kind, v.t = kTime, e.Throttle.Start; return true })},
	{"TRACER_WINDOW_END", "", when(isThrottle, func(e *tracer.Event, v *fieldValue) bool { v.kind, v.t = kTime, e.Throttle.End; return true })},
	{"TRACER_LIMIT", "", when(isThrottle, num(func(e *tracer.Event) uint64 { return uint64(e.Throttle.Limit) }))},
	{"TRACER_SUPPRESSED", "", when(isThrottle, num(func(e *tracer.Event) uint64 { return e.Throttle.Suppressed() }))},
	// TRACER_SUPPRESSED_BY_TYPE_EXEC and the others follow (init, below).

	// OTLP: the ECS document's fields (ecs.go), but @timestamp, which is
	// the record's own time.
	{"", "ecs.version", constant(ECSVersion)},
	{"", "event.kind", constant("event")},
	{"", "event.category", constants("process")},
	{"", "event.type", func(e *tracer.Event, v *fieldValue) bool {
		v.kind, v.ss = kStrings, ecsEventTypes[min(int(e.Type), len(ecsEventTypes)-1)]
		return true
	}},
	{"", "event.action", str(func(e *tracer.Event) string { return e.Type.String() })},
	{"", "event.module", constant("tracer")},
	{"", "event.dataset", constant("tracer.process")},
	{"", "event.provider", str(func(e *tracer.Event) string { return e.Backend })},
	{"", "event.outcome", when(carriesRet, str(func(e *tracer.Event) string {
		if e.Ret == 0 {
			return "success"
		}
		return "failure"
	}))},
	{"", "event.start", when(isThrottle, func(e *tracer.Event, v *fieldValue) bool { v.kind, v.t = kTime, e.Throttle.Start; return true })},
	{"", "event.end", when(isThrottle, func(e *tracer.Event, v *fieldValue) bool { v.kind, v.t = kTime, e.Throttle.End; return true })},
	{"", "host.name", optStr(func(*tracer.Event) string { return nodeHostnameUTF8() })},
	{"", "host.hostname", optStr(func(*tracer.Event) string { return nodeHostnameUTF8() })},
	{"", "process.pid", num(func(e *tracer.Event) uint64 { return uint64(e.PID) })},
	{"", "process.name", str(func(e *tracer.Event) string {
		if e.Type == vocab.TypeExec && e.Ret == 0 && e.Filename != "" {
			return path.Base(e.Filename) // the program it runs from now on
		}
		return e.Comm
	})},
	{"", "process.entity_id", execID(func(e *tracer.Event) tracer.ExecID { return e.ExecID })},
	// An exec's program is the one it runs from now on (the caller's is
	// tracer.exe); another event's, the caller's.
	{"", "process.executable", func(e *tracer.Event, v *fieldValue) bool {
		if isExec(e) {
			v.kind, v.s = kString, e.Filename
			return true
		}
		v.kind, v.s = kString, e.Exe
		return v.s != ""
	}},
	{"", "process.working_directory", optStr(func(e *tracer.Event) string { return e.Cwd })},
	{"", "process.args", when(isExec, argv)},
	{"", "process.args_count", when(isExec, signed(func(e *tracer.Event) int64 { return int64(len(e.Argv)) }))},
	{"", "process.command_line", when(isExec, str(func(e *tracer.Event) string { return commandLine(e.Argv) }))},
	{"", "process.exit_code", when(exitedByCode, signed(func(e *tracer.Event) int64 { return int64(e.ExitCode) }))},
	// ECS's process.user and process.group are the effective ids (appendECSIDs).
	{"", "process.user.id", when(hasCreds, decimal(func(e *tracer.Event) uint64 { return uint64(e.EUID) }))},
	{"", "process.group.id", when(hasCreds, decimal(func(e *tracer.Event) uint64 { return uint64(e.EGID) }))},
	{"", "process.real_user.id", decimal(func(e *tracer.Event) uint64 { return uint64(e.UID) })},
	{"", "process.real_group.id", when(hasCreds, decimal(func(e *tracer.Event) uint64 { return uint64(e.GID) }))},
	{"", "process.saved_user.id", when(hasCreds, decimal(func(e *tracer.Event) uint64 { return uint64(e.SUID) }))},
	{"", "process.saved_group.id", when(hasCreds, decimal(func(e *tracer.Event) uint64 { return uint64(e.SGID) }))},
	{"", "process.parent.pid", func(e *tracer.Event, v *fieldValue) bool {
		v.kind, v.u = kUint, uint64(ecsParentPID(e))
		return v.u != 0
	}},
	{"", "process.parent.entity_id", execID(func(e *tracer.Event) tracer.ExecID { return e.ParentExecID })},
	{"", "process.parent.name", when(func(e *tracer.Event) bool {
		return !e.ParentExecID.IsZero() && len(e.Ancestors) > 0 && e.Ancestors[0].ExecID == e.ParentExecID
	}, str(func(e *tracer.Event) string { return e.Ancestors[0].Comm }))},
	{"", "user.id", decimal(func(e *tracer.Event) uint64 { return uint64(e.UID) })},
	{"", "user.effective.id", when(func(e *tracer.Event) bool { return e.HasCreds && e.EUID != e.UID },
		decimal(func(e *tracer.Event) uint64 { return uint64(e.EUID) }))},
	{"", "group.id", when(hasCreds, decimal(func(e *tracer.Event) uint64 { return uint64(e.GID) }))},
	{"", "container.id", optStr(func(e *tracer.Event) string { return e.ContainerID })},
	{"", "container.name", when(inContainer, optStr(func(e *tracer.Event) string { return e.Pod.Container }))},
	{"", "container.image.name", when(inContainer, optStr(func(e *tracer.Event) string { return e.Pod.Image }))},
	{"", "orchestrator.type", when(inPod, constant("kubernetes"))},
	{"", "orchestrator.namespace", when(inPod, optStr(func(e *tracer.Event) string { return e.Pod.Namespace }))},
	{"", "orchestrator.resource.type", when(inPod, constant("pod"))},
	{"", "orchestrator.resource.name", when(inPod, str(func(e *tracer.Event) string { return e.Pod.Name }))},
	{"", "orchestrator.resource.id", when(inPod, optStr(func(e *tracer.Event) string { return e.Pod.UID }))},
	{"", "error.code", when(failed, str(func(e *tracer.Event) string {
		if name := vocab.ErrnoName(-e.Ret); name != "" {
			return name
		}
		return strconv.FormatInt(e.Ret, 10)
	}))},
	{"", "tracer.auid", num(func(e *tracer.Event) uint64 { return uint64(e.AUID) })},
	{"", "tracer.fsuid", idIfNot(func(e *tracer.Event) (uint32, uint32) { return e.FSUID, e.UID })},
	{"", "tracer.fsgid", idIfNot(func(e *tracer.Event) (uint32, uint32) { return e.FSGID, e.GID })},
	{"", "tracer.ses", when(hasSession, num(func(e *tracer.Event) uint64 { return uint64(e.Session) }))},
	{"", "tracer.tty", optStr(func(e *tracer.Event) string { return e.TTY })},
	{"", "tracer.key", optStr(func(e *tracer.Event) string { return e.Key })},
	{"", "tracer.cgroup", optStr(func(e *tracer.Event) string { return e.Cgroup })},
	{"", "tracer.cgroup_truncated", isSet(func(e *tracer.Event) bool { return e.CgroupTruncated })},
	{"", "tracer.unit", optStr(func(e *tracer.Event) string { return e.Unit })},
	{"", "tracer.image_id", optStr(func(e *tracer.Event) string { return e.Pod.ImageID })},
	{"", "tracer.comm", when(isExec, str(func(e *tracer.Event) string { return e.Comm }))},
	{"", "tracer.exe", when(isExec, optStr(func(e *tracer.Event) string { return e.Exe }))},
	{"", "tracer.filename_truncated", when(isExec, isSet(func(e *tracer.Event) bool { return e.FilenameTruncated }))},
	{"", "tracer.argv_truncated", when(isExec, isSet(func(e *tracer.Event) bool { return e.ArgvTruncated }))},
	{"", "tracer.child_pid", when(isFork, num(func(e *tracer.Event) uint64 { return uint64(e.ChildPID) }))},
	{"", "tracer.syscall", when(func(e *tracer.Event) bool { return isFork(e) || isSignal(e) && e.Syscall != "" },
		str(func(e *tracer.Event) string { return e.Syscall }))},
	{"", "tracer.signal.number", when(hasSignal, signed(func(e *tracer.Event) int64 { return int64(e.Signal) }))},
	{"", "tracer.signal.name", when(hasSignal, str(func(e *tracer.Event) string { return e.SignalName() }))},
	{"", "tracer.signal.code", when(func(e *tracer.Event) bool { return isSignal(e) && e.HasCode },
		str(func(e *tracer.Event) string { return vocab.SigCodeName(e.Signal, e.Code) }))},
	{"", "tracer.signal.origin", when(func(e *tracer.Event) bool { return isSignal(e) && e.Origin != vocab.OriginUnknown },
		str(func(e *tracer.Event) string { return e.Origin.String() }))},
	{"", "tracer.signal.result", when(func(e *tracer.Event) bool { return isSignal(e) && e.Result != vocab.ResultUnknown },
		str(func(e *tracer.Event) string { return e.Result.String() }))},
	{"", "tracer.target.pid", when(isSignal, signed(func(e *tracer.Event) int64 { return int64(e.TargetPID) }))},
	{"", "tracer.target.name", when(isSignal, optStr(func(e *tracer.Event) string { return e.TargetComm }))},
	{"", "tracer.target.entity_id", when(isSignal, execID(func(e *tracer.Event) tracer.ExecID { return e.TargetExecID }))},
	{"", "tracer.core_dumped", when(func(e *tracer.Event) bool { return e.Killed() && !e.CoreUnknown },
		func(e *tracer.Event, v *fieldValue) bool { v.kind, v.b = kBool, e.CoreDumped; return true })},
	{"", "tracer.killed_by.pid", when(killer, num(func(e *tracer.Event) uint64 { return uint64(e.KilledBy.PID) }))},
	{"", "tracer.killed_by.name", when(killer, str(func(e *tracer.Event) string { return e.KilledBy.Comm }))},
	{"", "tracer.killed_by.entity_id", when(killer, execID(func(e *tracer.Event) tracer.ExecID { return e.KilledBy.ExecID }))},
	{"", "tracer.killed_by.code", when(killer, str(func(e *tracer.Event) string { return vocab.SigCodeName(e.Signal, e.KilledBy.Code) }))},
	{"", "tracer.killed_by.origin", when(killer, str(func(e *tracer.Event) string { return e.KilledBy.Origin.String() }))},
	{"", "tracer.killed_by.syscall", when(killer, optStr(func(e *tracer.Event) string { return e.KilledBy.Syscall }))},
	{"", "tracer.oom_kill", when(isKilled, isSet(func(e *tracer.Event) bool { return e.OOMKill }))},
	{"", "tracer.throttle.source", when(isThrottle, str(func(e *tracer.Event) string { return e.Throttle.Source.String() }))},
	{"", "tracer.throttle.cgroup_id", when(func(e *tracer.Event) bool { return isThrottle(e) && e.Throttle.CgroupID != 0 },
		num(func(e *tracer.Event) uint64 { return e.Throttle.CgroupID }))},
	{"", "tracer.throttle.limit", when(isThrottle, num(func(e *tracer.Event) uint64 { return uint64(e.Throttle.Limit) }))},
	{"", "tracer.throttle.suppressed", when(isThrottle, num(func(e *tracer.Event) uint64 { return e.Throttle.Suppressed() }))},
	// tracer.throttle.suppressed_by_type.exec and the others follow
	// (init, below), then tracer.ancestors.
}

// init adds, after each destination's last row, a throttle's events
// left out by type (a field per type: TRACER_SUPPRESSED_BY_TYPE_EXEC,
// tracer.throttle.suppressed_by_type.exec), and OTLP's tracer.ancestors,
// which the ECS document writes after them.
func init() {
	j := fieldRow("TRACER_SUPPRESSED", "")
	o := fieldRow("", "tracer.throttle.suppressed")
	var jr, or []eventField
	for _, typ := range vocab.AllTypes {
		of := when(isThrottle, num(func(e *tracer.Event) uint64 { return e.Throttle.Of(typ) }))
		jr = append(jr, eventField{journal: "TRACER_SUPPRESSED_BY_TYPE_" + journalName(typ.String()), get: of})
		or = append(or, eventField{otlp: "tracer.throttle.suppressed_by_type." + typ.String(), get: of})
	}
	or = append(or, eventField{otlp: "tracer.ancestors", get: ancestors})
	rows := append([]eventField(nil), eventFields[:j+1]...)
	rows = append(rows, jr...)
	rows = append(rows, eventFields[j+1:o+1]...)
	rows = append(rows, or...)
	eventFields = append(rows, eventFields[o+1:]...)
	for _, f := range eventFields {
		if f.journal != "" && journalName(f.journal) != f.journal {
			panic("tracer: journal field " + f.journal + " is not A-Z, 0-9 and _")
		}
		if f.journal != "" {
			journalRows = append(journalRows, f)
		}
		if f.otlp != "" {
			otlpRows = append(otlpRows, f)
		}
	}
}

// journalRows and otlpRows are each destination's rows, in table order:
// a destination's encoder reads no row it has no name for.
var journalRows, otlpRows []eventField

// fieldRow is where the row of these names is in eventFields.
func fieldRow(journal, otlp string) int {
	for i, f := range eventFields {
		if f.journal == journal && f.otlp == otlp {
			return i
		}
	}
	panic("tracer: no field " + journal + otlp)
}

// journalName is key as a journal field name: upper case, and _ for any
// character journald does not take.
func journalName(key string) string {
	b := []byte(key)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - ('a' - 'A')
		} else if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

var (
	argv = func(e *tracer.Event, v *fieldValue) bool { v.kind, v.ss = kStrings, e.Argv; return true }
	// ancestors: present when --ancestry gave them.
	ancestors = func(e *tracer.Event, v *fieldValue) bool {
		v.kind, v.anc = kAncestors, e.Ancestors
		return len(e.Ancestors) > 0
	}
)

// ecsEventTypes is event.type by event type (ecsEventType), made once.
var ecsEventTypes = func() (t [][]string) {
	for typ := range vocab.NumTypes + 1 {
		t = append(t, []string{ecsEventType(typ)})
	}
	return t
}()

// nodeHostnameUTF8 is host.name as the ECS document has it.
func nodeHostnameUTF8() string { return validUTF8(nodeHostname()) }

// ecsParentPID is process.parent.pid (appendECSParent): an exec's ppid,
// else the parent exec id's pid; 0: none.
func ecsParentPID(e *tracer.Event) uint32 {
	if e.Type == vocab.TypeExec && e.PPID != 0 {
		return e.PPID
	}
	return e.ParentExecID.PID
}

// commandLine is process.command_line: appendCommandLine's string, not
// escaped for JSON.
func commandLine(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		if shellPlain(a) {
			b.WriteString(a)
			continue
		}
		b.WriteByte('\'')
		b.WriteString(strings.ReplaceAll(a, "'", `'\''`))
		b.WriteByte('\'')
	}
	return b.String()
}

// appendJournalFields appends e's TRACER_* fields in the native protocol;
// v is the caller's scratch value (one on the stack would escape).
func appendJournalFields(b []byte, e *tracer.Event, v *fieldValue) []byte {
	for i := range journalRows {
		f := &journalRows[i]
		if !f.get(e, v) {
			continue
		}
		switch v.kind {
		case kString:
			b = appendJournalString(b, f.journal, v.s)
			continue
		}
		// Every other value is one line: numbers, and JSON, whose strings
		// escape their newlines.
		b = append(b, f.journal...)
		b = append(b, '=')
		switch v.kind {
		case kUint:
			b = appendUint(b, v.u)
		case kInt:
			b = appendInt(b, v.i)
		case kBool:
			b = strconv.AppendBool(b, v.b)
		case kDecimal:
			b = strconv.AppendUint(b, v.u, 10)
		case kTime:
			b = appendRFC3339Nano(b, v.t)
		case kExecID:
			b = appendExecID(b, v.id)
		case kStrings:
			b = append(b, '[')
			for i, s := range v.ss {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendString(b, s)
			}
			b = append(b, ']')
		case kAncestors:
			b = appendAncestorsValue(b, v.anc, `,"comm":`, `,"exec_id":"`)
		}
		b = append(b, '\n')
	}
	return b
}

// appendAncestorsValue appends the JSON array appendAncestors writes
// after its key.
func appendAncestorsValue(b []byte, anc []tracer.Ancestor, commKey, idKey string) []byte {
	e := tracer.Event{Ancestors: anc}
	at := len(b)
	b = appendAncestors(b, &e, commKey, idKey)
	const key = `,"ancestors":`
	return append(b[:at], b[at+len(key):]...)
}

// appendJournalString appends one field of the native protocol: KEY=value
// and a newline, or, when value holds a newline, KEY, a newline, the
// value's length (64-bit little endian), the value and a newline. The
// journal's values are binary safe: the bytes go as the event has them.
func appendJournalString(b []byte, key, value string) []byte {
	b = append(b, key...)
	if strings.IndexByte(value, '\n') < 0 {
		b = append(b, '=')
		b = append(b, value...)
		return append(b, '\n')
	}
	b = append(b, '\n')
	b = binary.LittleEndian.AppendUint64(b, uint64(len(value)))
	b = append(b, value...)
	return append(b, '\n')
}

// appendOTLPAttributes appends e's attributes. Their strings are UTF-8,
// as OTLP's must be: a byte that is not becomes U+FFFD, and the raw bytes
// go under tracer.raw_base64, as in the ECS document.
func appendOTLPAttributes(kvs []attribute.KeyValue, e *tracer.Event, v *fieldValue) []attribute.KeyValue {
	var raw *tracer.Event
	if !eventUTF8(e) {
		c := utf8Event(e)
		raw, e = e, &c
	}
	for i := range otlpRows {
		f := &otlpRows[i]
		if !f.get(e, v) {
			continue
		}
		kvs = append(kvs, attribute.KeyValue{Key: attribute.Key(f.otlp), Value: otlpValue(v)})
	}
	if raw != nil {
		kvs = appendRawBase64Attributes(kvs, raw)
	}
	return kvs
}

// otlpValue is v as an attribute, typed as the ECS document's JSON value.
func otlpValue(v *fieldValue) attribute.Value {
	switch v.kind {
	case kUint:
		if v.u > math.MaxInt64 {
			return attribute.Float64Value(float64(v.u))
		}
		return attribute.Int64Value(int64(v.u))
	case kInt:
		return attribute.Int64Value(v.i)
	case kBool:
		return attribute.BoolValue(v.b)
	case kDecimal:
		return attribute.StringValue(strconv.FormatUint(v.u, 10))
	case kTime:
		return attribute.StringValue(string(appendTime(nil, v.t)))
	case kExecID:
		return attribute.StringValue(string(appendExecID(nil, v.id)))
	case kStrings:
		if len(v.ss) == 0 {
			return attribute.StringSliceValue(nil)
		}
		return attribute.StringSliceValue(v.ss)
	case kAncestors:
		vals := make([]attribute.Value, len(v.anc))
		for i := range v.anc {
			a := &v.anc[i]
			vals[i] = attribute.MapValue(
				attribute.Int64("pid", int64(a.PID)),
				attribute.String("name", a.Comm),
				attribute.String("entity_id", string(appendExecID(nil, a.ExecID))))
		}
		return attribute.SliceValue(vals...)
	}
	return attribute.StringValue(v.s)
}

// appendRawBase64Attributes appends tracer.raw_base64 (appendRawBase64):
// the standard base64 of each of e's strings that is not UTF-8.
func appendRawBase64Attributes(kvs []attribute.KeyValue, e *tracer.Event) []attribute.KeyValue {
	const p = "tracer.raw_base64."
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	field := func(name, s string) {
		if !utf8.ValidString(s) {
			kvs = append(kvs, attribute.String(p+name, b64(s)))
		}
	}
	field("backend", e.Backend)
	field("comm", e.Comm)
	field("filename", e.Filename)
	for _, a := range e.Argv {
		if !utf8.ValidString(a) {
			all := make([]string, len(e.Argv))
			for i, a := range e.Argv {
				all[i] = b64(a)
			}
			kvs = append(kvs, attribute.StringSlice(p+"argv", all))
			break
		}
	}
	for _, f := range rawAfterArgv(e) {
		field(f.name, f.s)
	}
	field("killed_by.comm", e.KilledBy.Comm)
	field("killed_by.syscall", e.KilledBy.Syscall)
	for i := range e.Ancestors {
		if !utf8.ValidString(e.Ancestors[i].Comm) {
			vals := make([]attribute.Value, len(e.Ancestors))
			for j := range e.Ancestors {
				vals[j] = attribute.MapValue(attribute.String("comm", b64(e.Ancestors[j].Comm)))
			}
			kvs = append(kvs, attribute.KeyValue{Key: p + "ancestors", Value: attribute.SliceValue(vals...)})
			break
		}
	}
	return kvs
}
