// Package tracer holds what every backend shares: the Event model that both
// the audit and the eBPF backend produce, the Backend interface they
// implement, the filters applied to their output, the sinks that print events
// (text, JSON lines) and the counters behind `tracer trace` and the metrics.
//
// A backend knows nothing about output and a sink knows nothing about
// backends: a Pipeline joins the two and counts what passes and what is lost.
package tracer

import (
	"fmt"
	"strings"
	"time"
)

// EventType is the class of a process event.
type EventType uint8

// The event classes (docs/events.md). TypeNone is the zero value and never emitted.
const (
	TypeNone EventType = iota
	TypeExec
	TypeFork
	TypeSignal
	TypeExit
	// TypeThrottle says that a source of events went over --rate-limit
	// and how many of its events were left out (Event.Throttle). It is not
	// a process event: --events does not name it, and no filter leaves it
	// out.
	TypeThrottle
	numTypes
)

var typeNames = [...]string{TypeNone: "none", TypeExec: "exec", TypeFork: "fork", TypeSignal: "signal", TypeExit: "exit", TypeThrottle: "throttle"}

func (t EventType) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// AllTypes lists the process event classes in their canonical order
// (TypeThrottle is not one).
var AllTypes = []EventType{TypeExec, TypeFork, TypeSignal, TypeExit}

// ArgvMax is how many arguments of an exec's argv both backends keep
// (ARGC_MAX in bpf/tracer.bpf.c is the same number): an event's size is
// bounded, and the rest is counted as cut (Event.ArgvTruncated).
const ArgvMax = 20

// ArgvBytesMax is how many bytes of an exec's argument area both backends
// keep: its arguments, each followed by its NUL, cut after this many bytes
// (the last argument kept may be cut short). It is ARGV_BYTES in
// bpf/tracer.bpf.c, what the eBPF side reads of the new image; AppendArgv
// makes the one cut.
const ArgvBytesMax = ArgvMax * 128

// UnsetID is the audit login uid and session id of a process that never logged in.
const UnsetID = 4294967295

// Event is one process event as both backends report it. Fields that do not
// belong to an event's Type are left zero and are not printed.
type Event struct {
	Time    time.Time
	Backend string
	Type    EventType
	PID     uint32 // thread group id of the process that made the call
	Comm    string // its comm when it made the call (for exec: before the exec)
	UID     uint32
	AUID    uint32

	// exec
	PPID     uint32
	Filename string
	Argv     []string // at most ArgvMax arguments, ArgvBytesMax bytes with their NULs
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
	Origin       Origin
	Result       SignalResult
	TargetComm   string
	TargetExecID ExecID

	// Every event: who the process is and where it runs (identity.go);
	// zero or empty when the backend could not know.
	ExecID       ExecID
	ParentExecID ExecID // of the real parent at the time of the event
	Cgroup       string // cgroup v2 path, or the v1 name=systemd path
	ContainerID  string
	Unit         string
	// Ancestors: the parent, its parent... (--ancestry N; ancestry.go).
	Ancestors []Ancestor

	// throttle: the source, its window and what was left out in it
	// (ratelimit.go). PID, Comm, UID, AUID, ExecID and the cgroup fields
	// are those of the first process whose event was left out.
	Throttle Throttle
}

// KilledBy is the sender of the signal that killed a process.
type KilledBy struct {
	Origin  Origin // OriginUnknown: not seen
	PID     uint32 // the sender (origin kernel: the task the kernel acted for)
	Comm    string
	ExecID  ExecID
	Code    int32  // si_code
	Syscall string // kill, tgkill...; empty for the kernel's own signals
}

// Seen reports whether the killing signal was seen.
func (k *KilledBy) Seen() bool { return k.Origin != OriginUnknown }

// SignalName is the event's signal as a name (SIGUSR1).
func (e *Event) SignalName() string { return SignalName(e.Signal) }

// Reset clears e for reuse; backends reuse one Event per emit to keep the hot path allocation-free.
func (e *Event) Reset() {
	argv, anc := e.Argv[:0], e.Ancestors[:0]
	*e = Event{}
	e.Argv, e.Ancestors = argv, anc
}

// ParseTypes parses a comma-separated list of event classes ("exec,fork").
func ParseTypes(s string) (TypeSet, error) {
	var set TypeSet
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(strings.ToLower(f))
		if f == "" {
			continue
		}
		if f == "all" {
			for _, t := range AllTypes {
				set = set.With(t)
			}
			continue
		}
		found := false
		for _, t := range AllTypes {
			if t.String() == f {
				set, found = set.With(t), true
			}
		}
		if !found {
			return 0, fmt.Errorf("unknown event class %q: use exec, fork, signal or exit", f)
		}
	}
	if set == 0 {
		return 0, fmt.Errorf("no event class given: use exec, fork, signal or exit")
	}
	return set, nil
}

// TypeSet is a set of event classes.
type TypeSet uint8

// DefaultTypes is the default of --events: exec, fork, signal.
const DefaultTypes = TypeSet(1<<TypeExec | 1<<TypeFork | 1<<TypeSignal)

// With returns s with t added.
func (s TypeSet) With(t EventType) TypeSet { return s | 1<<t }

// Has reports whether t is in s.
func (s TypeSet) Has(t EventType) bool { return s&(1<<t) != 0 }

func (s TypeSet) String() string {
	var parts []string
	for _, t := range AllTypes {
		if s.Has(t) {
			parts = append(parts, t.String())
		}
	}
	return strings.Join(parts, ",")
}
