// SPDX-License-Identifier: Apache-2.0

// Package tracer holds what every backend shares: the Event model that both
// the audit and the eBPF backend produce, the Backend interface they
// implement, the filters applied to their output, the sinks that print events
// (text, JSON lines) and the counters behind `tracer trace` and the metrics.
//
// A backend knows nothing about output and a sink knows nothing about
// backends: a Pipeline joins the two and counts what passes and what is lost.
package tracer

import (
	"time"
	"unicode/utf8"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Event is one process event as both backends report it. Fields that do not
// belong to an event's Type are left zero and are not printed.
type Event struct {
	Time    time.Time
	Backend string
	Type    vocab.Type
	PID     uint32 // thread group id of the process that made the call
	Comm    string // its comm when it made the call (for exec: before the exec)
	UID     uint32
	AUID    uint32

	// The caller's other credentials, as audit logs them (SYSCALL gid=
	// euid= ...), where HasCreds says the backend read them. The encoders
	// print gid, and each other id only where it differs from the real
	// one: a setuid program's euid 0 under uid 1000 shows, nothing else does.
	HasCreds          bool
	GID               uint32
	EUID, SUID, FSUID uint32
	EGID, SGID, FSGID uint32
	Session           uint32 // audit session id; vocab.UnsetID when unset, 0 when unknown
	TTY               string // controlling terminal as the kernel names it ("pts0"); empty: none
	Exe               string // the caller's executable (exec: before the exec); at most FilenameMax bytes
	Cwd               string // exec: the working directory; at most FilenameMax bytes
	Key               string // audit: the key of the rule that made the record

	// exec
	PPID     uint32
	Filename string // at most FilenameMax bytes
	// FilenameTruncated: Filename is the beginning of a longer one.
	FilenameTruncated bool
	Argv              []string // at most ArgvMax arguments, ArgvBytesMax bytes with their NULs
	// ArgvTruncated: argv had more than ArgvMax arguments or ArgvBytesMax
	// bytes, or the backend could not read it whole; Argv is its beginning.
	ArgvTruncated bool

	// exec and signal: the syscall's return value (0 or -errno).
	Ret int64

	// fork and signal: the syscall that made the event (fork, clone3, kill, tgkill, ...).
	Syscall string

	// fork
	ChildPID uint32

	// signal
	TargetPID int32 // the thread that was signalled (kill: the pid argument, may be <= 0)
	Signal    int

	// exit: the exit code, or when killed (Signal set) the core flag; see exitstatus.go.
	ExitCode   int
	CoreDumped bool
	// CoreUnknown: the backend saw the death but not whether a core was
	// written (audit's ANOM_ABEND record); core_dumped is left out.
	CoreUnknown bool
	OOMKill     bool     // the OOM killer chose the process
	KilledBy    KilledBy // the signal that killed it, when the backend saw it

	// signal: what the kernel says about the signal; zero when unknown.
	Code         int32 // si_code, when HasCode
	HasCode      bool
	Origin       vocab.Origin
	Result       vocab.SignalResult
	TargetComm   string
	TargetExecID ExecID

	// Every event: who the process is and where it runs (identity.go);
	// zero or empty when the backend could not know.
	ExecID       ExecID
	ParentExecID ExecID // of the real parent at the time of the event
	Cgroup       string // cgroup v2 path, or the v1 name=systemd path; at most CgroupMax bytes
	// CgroupTruncated: Cgroup is the beginning of a longer path.
	CgroupTruncated bool
	ContainerID     string
	Unit            string
	// Kubernetes: the pod and container of ContainerID, from the node's
	// container runtime (watch --kubernetes; pod.go); zero outside a
	// pod, and while the runtime's answer is not in yet.
	Pod PodInfo

	// Ancestors: the parent, its parent... (--ancestry N; ancestry.go).
	Ancestors []Ancestor

	// throttle: the source, its window and what was left out in it
	// (ratelimit.go). PID, Comm, UID, AUID, ExecID and the cgroup fields
	// are those of the first process whose event was left out.
	Throttle Throttle
}

// FilenameMax and CgroupMax bound an event's filename and cgroup path, in
// bytes: a user can make either 4 KiB and longer (a deep directory, a deep
// delegated cgroup), and escaped for JSON six times that, in every event
// of theirs. What is cut is flagged (FilenameTruncated, CgroupTruncated).
const (
	FilenameMax = 1024
	CgroupMax   = 1024
)

// CapString cuts s to at most n bytes, at the start of a UTF-8 sequence
// where one begins in its last 3 bytes, and reports whether it cut.
func CapString(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	cut := n
	for i := n; i > n-utf8.UTFMax && i > 0; i-- {
		if utf8.RuneStart(s[i]) {
			cut = i
			break
		}
	}
	return s[:cut], true
}

// KilledBy is the sender of the signal that killed a process.
type KilledBy struct {
	Origin  vocab.Origin // OriginUnknown: not seen
	PID     uint32       // the sender (origin kernel: the task the kernel acted for)
	Comm    string
	ExecID  ExecID
	Code    int32  // si_code
	Syscall string // kill, tgkill...; empty for the kernel's own signals
}

// Seen reports whether the killing signal was seen.
func (k *KilledBy) Seen() bool { return k.Origin != vocab.OriginUnknown }

// SameCreds sets the ids but UID and GID to those two (a backend that
// knows the real ids alone: printed as not differing).
func (e *Event) SameCreds() {
	e.EUID, e.SUID, e.FSUID = e.UID, e.UID, e.UID
	e.EGID, e.SGID, e.FSGID = e.GID, e.GID, e.GID
}

// SignalName is the event's signal as a name (SIGUSR1).
func (e *Event) SignalName() string { return vocab.SignalName(e.Signal) }

// Reset clears e for reuse; backends reuse one Event per emit to keep the hot path allocation-free.
func (e *Event) Reset() {
	argv, anc := e.Argv[:0], e.Ancestors[:0]
	*e = Event{}
	e.Argv, e.Ancestors = argv, anc
}
