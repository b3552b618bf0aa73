// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"context"
	"strconv"
	"time"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Backend is a source of Events: the audit subsystem or eBPF. Both implement
// it so that watch, trace, bench and the metrics do not care which one runs.
//
// The life of a backend is Start (install rules or probes; on error nothing
// stays installed), Run (deliver events until ctx ends), Close (remove all
// that Start installed and restore what it changed). Close is safe to call
// more than once and after a failed Start.
type Backend interface {
	// Name is "audit" or "ebpf"; it fills Event.Backend.
	Name() string
	// Start installs the rules or probes for cfg. When it returns nil the
	// backend is watching: events from then on are delivered by Run.
	Start(cfg Config) error
	// Run calls emit for each event until ctx is done, then drains what the
	// kernel already queued and returns. emit must not keep the *Event.
	Run(ctx context.Context, emit func(*Event)) error
	// Stats is safe to call at any time, from any goroutine.
	Stats() Stats
	// Close removes everything Start installed.
	Close() error
}

// Optional capabilities. A backend implements those it has; callers test
// for them with a type assertion and do without when it is missing.

// Capabilities is what a backend is, for the callers that would
// otherwise tell it from the backend's name (the metrics, watch).
type Capabilities struct {
	// AuditQueue: its records come through the kernel's audit queue,
	// and its Stats carry the queue's backlog, its limit and the records
	// the kernel lost (AuditBacklog, AuditBacklogLimit, AuditKernelLost).
	AuditQueue bool
	// NoiseOnlyCounted: of the filter reasons it counts only the noise
	// ones (below vocab.NumNoiseReasons); the others its kernel filter
	// drops before a record exists, uncounted.
	NoiseOnlyCounted bool
}

// Capable is a backend that says its Capabilities; one that does not has
// none of them.
type Capable interface {
	Capabilities() Capabilities
}

// CapabilitiesOf is b's Capabilities, the zero value when b does not say.
func CapabilitiesOf(b Backend) Capabilities {
	if c, ok := b.(Capable); ok {
		return c.Capabilities()
	}
	return Capabilities{}
}

// Chooser is a backend that chose among what the kernel has at Start
// (the eBPF backend: transport, attach kind, global data, BTF source).
// Choices names each, for watch's log and the metrics' labels; none
// before Start.
type Chooser interface {
	Choices() []Choice
}

// Choice is one of a Chooser's: what was chosen ("transport") and the
// choice ("ringbuf").
type Choice struct{ Name, Value string }

// Noter is a backend that tells the user what Start found or changed on
// the node (audit enabled for the session, auditd holding the PID, b32
// rules left out, the probe set chosen). watch prints the notes.
type Noter interface {
	Notes() []string
}

// LateNoter is a Noter that also has notes after Start: what it changed
// on the node while running (lean records given up for a reader that
// appeared, its rules put back after another program deleted them).
// watch prints them as they come.
type LateNoter interface {
	LateNotes() <-chan string
}

// KernelCounter is a backend that can count events per key in the kernel
// (Config.CountOnly) instead of delivering each one: trace then pays no
// per-event transfer. Counts reads the counts; after Close it returns them
// as they were at Close.
type KernelCounter interface {
	Counts() (*Counts, error)
}

// Batcher is a backend whose Run delivers events in batches (the eBPF
// backend: what its reader found at one wake-up, at most half of
// Config.MaxDelay apart) and says when each ends, so that the Pipeline
// passes a batch on to its sinks then, not on a timer of its own: a steady
// stream then wakes the tracer once per batch, not twice.
type Batcher interface {
	// OnBatchEnd sets f, which Run calls on its goroutine after the last
	// event of each batch. Call it before Run.
	OnBatchEnd(f func())
}

// LoginUIDScoper is a backend that follows one process tree by the audit
// login uid its processes inherit (Config.ScopeAUID) rather than by pid
// (Config.PID): trace gives the command a login uid of its own before it
// execs. The node's audit trail then shows only that synthetic uid, so
// after Start, LinkLoginUID writes a record that ties it to the login uid
// of whoever started the command; pid is the command's process and cmd
// its command line.
type LoginUIDScoper interface {
	LinkLoginUID(auid uint32, pid int, cmd []string) error
}

// Config says what a backend should watch. Filters that a backend can apply
// in the kernel it applies there; the Pipeline applies all of them again in
// user space, so a backend may deliver more than asked but never less.
type Config struct {
	Types   vocab.TypeSet
	Signals vocab.SignalSet
	// Comms, when set, keeps only events whose comm is one of them (an
	// exec's comm is the one before the exec).
	Comms []string
	// Exe, when set, keeps only execs of that program (Filename; a name
	// without a slash matches the last element of the path).
	Exe string
	// UIDs, when set, keeps only events of processes with one of these
	// real uids.
	UIDs []uint32
	// PID, when non-zero, keeps only events of that process and its
	// descendants (followed at fork); PIDs are further such roots
	// (watch --pid A,B).
	PID  uint32
	PIDs []uint32
	// MaxArgs, when positive, keeps at most that many of an exec's
	// arguments in the output (at most ArgvMax; argv_truncated marks a cut).
	MaxArgs int
	// Cgroup, when set, keeps only events of processes in that cgroup v2
	// path (relative to the hierarchy's root) and below it: a pod, a
	// service, a container. eBPF filters in the kernel by cgroup id.
	Cgroup string
	// Target, when set (a pid or a comm), keeps only signals sent to, and
	// exits of, that process, or every process of that comm (target.go).
	Target string

	// Backpressure is what happens when output falls behind. With drop,
	// the audit backend also keeps audited processes from waiting on the
	// kernel's backlog (backlog_wait_time 0 while it holds the audit PID).
	Backpressure Backpressure

	// Audit specific.
	Arch string // auto, b64, b32, both
	// AuidSet keeps only processes with a login uid: audit adds -F
	// auid!=unset to every rule; eBPF filters in the kernel.
	AuidSet bool
	// ScopeAUID, when not UnsetID, limits the rules to processes with that
	// login uid (how `trace` scopes audit to one command's tree).
	ScopeAUID uint32
	// EnableAudit turns audit on when it is off (and back off at Close).
	EnableAudit bool
	// LeanRecords asks the kernel not to build audit records tracer does
	// not read (auditrules.LeanExcludes). Auto: while no other consumer
	// (auditd) reads the records.
	LeanRecords LeanMode
	// AllowPanicFailureMode lets the audit backend claim the audit PID when
	// the kernel's failure mode is 2 (panic): if tracer died holding it, a
	// full backlog would panic the node.
	AllowPanicFailureMode bool
	// ExecFailures reports failed exec attempts too (a shell's PATH
	// search makes one per directory tried); by default both backends
	// report successful execs only.
	ExecFailures bool

	// eBPF specific.
	Probes string // "" or "default": cheapest hooks; "syscalls": sys_enter/sys_exit tracepoints
	// CountOnly keeps per-key counts in kernel maps instead of streaming
	// events (a KernelCounter); Run then delivers nothing.
	CountOnly bool
	// RingBytes sizes the eBPF ring buffer (0: backend default).
	RingBytes int
	// BPFStats turns on the kernel's per-program run time accounting.
	BPFStats bool
	// Transport forces the eBPF transport (--ebpf-transport): "" or
	// "auto" (the ring buffer where the kernel has one, else the perf
	// buffer), "ringbuf" or "perf".
	Transport string
	// Attach forces the hook kind of the eBPF event probes
	// (--ebpf-attach): "" or "auto" (from Probes and what the kernel
	// has), "tp_btf" (BTF tracepoints: the sched set) or "tracepoint"
	// (classic tracepoints: the syscalls set, the process tree on raw
	// tracepoints).
	Attach string
	// BTFFile is --btf: the kernel's types from this file (a BTFHub or
	// BTFGen file) where the kernel has no BTF of its own.
	BTFFile string
	// MaxDelay, when positive, is --max-delay: the kernel no longer wakes
	// the reader per event (only when a quarter of the ring is queued), and
	// the reader reads on its own every MaxDelay/2, so that with the
	// output's flush at the same cadence an event is written within
	// MaxDelay. 0: the reader is woken at most every 5 ms and polls every
	// 100 ms.
	MaxDelay time.Duration

	// RateLimit, when not 0, is --rate-limit: at most this many events a
	// second from one cgroup (or one process of the root cgroup); the rest
	// are counted (Stats.Throttled) and said in throttle events
	// (ratelimit.go). Not in counting mode.
	RateLimit uint32
}

// LeanMode is --lean-records: auto, on or off.
type LeanMode uint8

// Lean modes.
const (
	LeanAuto LeanMode = iota // when no other consumer reads the audit records
	LeanOn                   // also beside auditd, whose log then misses those types
	LeanOff
)

// DefaultConfig is what watch uses without flags.
func DefaultConfig() Config {
	return Config{Types: vocab.DefaultTypes, Arch: "auto", ScopeAUID: vocab.UnsetID}
}

// LossStage is where an event was lost on its way from the kernel to output.
type LossStage uint8

// Loss stages, in the order an event passes them.
const (
	LostKernel     LossStage = iota // the kernel dropped it (audit backlog, audit lost counter)
	LostRingbuf                     // the transport buffer was full (BPF ring buffer, netlink socket)
	LostReassembly                  // records that could not be parsed or joined into an event
	LostQueue                       // the output queue was full (--backpressure drop)
	LostOutput                      // the sink could not write it
	NumLossStages
)

var lossNames = [...]string{"kernel", "ringbuf", "reassembly", "queue", "output"}

func (s LossStage) String() string { return lossNames[s] }

// Stats is a snapshot of a backend's counters.
type Stats struct {
	// Events is how many events the backend delivered, by type.
	Events [vocab.NumTypes]uint64
	// Lost counts events lost, by stage (LostQueue and LostOutput are the
	// Pipeline's).
	Lost [NumLossStages]uint64
	// LowerBound marks stages whose figure is a lower bound: the kernel
	// said that it dropped something but not how much.
	LowerBound [NumLossStages]bool

	// Audit: the kernel's figures, read at the last poll.
	AuditBacklog      uint32
	AuditBacklogLimit uint32
	AuditKernelLost   uint32 // the kernel's own counter, not a delta
	// AuditSocketBuffer is the record socket's receive buffer in bytes and
	// AuditSocketBufferAsked what tracer asked for: smaller means the
	// kernel refused SO_RCVBUFFORCE and bursts overflow sooner.
	AuditSocketBuffer, AuditSocketBufferAsked int

	// Filtered counts the events left out as runtime noise (IsNoise), and
	// those the eBPF backend's kernel filters left out, by reason: never
	// loss.
	Filtered [vocab.NumFilterReasons]uint64

	// Throttled counts the events --rate-limit left out, by type: never
	// loss (throttle events say whose they were).
	Throttled [vocab.NumTypes]uint64

	// RotationsFailed counts the rotations of --output FILE that failed
	// (tried at most once a second); not loss itself: the events FILE
	// could not take meanwhile are counted at stage output.
	RotationsFailed uint64

	// eBPF: per-program statistics when BPFStats is on.
	Programs []ProgramStats
}

// TotalThrottled is the sum over types.
func (s Stats) TotalThrottled() uint64 { return sum(s.Throttled[:]) }

// ThrottleSummary says the events --rate-limit left out per type, as watch
// prints them: "exec 0, fork 0, signal 1998000, exit 0".
func (s Stats) ThrottleSummary() string {
	var b []byte
	for i, t := range vocab.AllTypes {
		b = appendCount(b, i > 0, t.String(), false, s.Throttled[t])
	}
	return string(b)
}

// TotalFiltered is the sum over reasons.
func (s Stats) TotalFiltered() uint64 { return sum(s.Filtered[:]) }

// TotalNoise is the sum over the runtime-noise reasons.
func (s Stats) TotalNoise() uint64 { return sum(s.Filtered[:vocab.NumNoiseReasons]) }

// FilterSummary says the events filtered as runtime noise per reason, as
// watch prints them: "runtime-preemption 6764, existence-check 57".
func (s Stats) FilterSummary() string {
	return s.filterSummary(0, vocab.NumNoiseReasons)
}

// SelectionSummary says the events the kernel's selection filters left
// out per reason: "uid 1200, comm 0, exe 0, auid-unset 0".
func (s Stats) SelectionSummary() string {
	return s.filterSummary(vocab.NumNoiseReasons, vocab.NumFilterReasons)
}

func (s Stats) filterSummary(from, to vocab.FilterReason) string {
	var b []byte
	for r := from; r < to; r++ {
		b = appendCount(b, r > from, r.String(), false, s.Filtered[r])
	}
	return string(b)
}

func sum(counts []uint64) uint64 {
	var n uint64
	for _, v := range counts {
		n += v
	}
	return n
}

// appendCount appends one "name N" of a summary, after ", " unless it is
// the first; atLeast writes a lower bound as ">=N".
func appendCount(b []byte, sep bool, name string, atLeast bool, n uint64) []byte {
	if sep {
		b = append(b, ", "...)
	}
	b = append(b, name...)
	b = append(b, ' ')
	if atLeast {
		b = append(b, ">="...)
	}
	return strconv.AppendUint(b, n, 10)
}

// ProgramStats is the kernel's accounting for one BPF program.
type ProgramStats struct {
	Name     string
	RunTime  float64 // seconds
	RunCount uint64
}

// TotalEvents is the sum over types.
func (s Stats) TotalEvents() uint64 { return sum(s.Events[:]) }

// TotalLost is the sum over stages.
func (s Stats) TotalLost() uint64 { return sum(s.Lost[:]) }

// LossSummary says the loss per stage, as watch prints it on exit:
// "kernel 0, ringbuf 0, reassembly 0, queue 12, output 0"; a figure that is
// only a lower bound is written ">=N".
func (s Stats) LossSummary() string {
	var b []byte
	for st := LossStage(0); st < NumLossStages; st++ {
		b = appendCount(b, st > 0, st.String(), s.LowerBound[st], s.Lost[st])
	}
	return string(b)
}

// LostIsLowerBound reports whether any stage's figure is a lower bound.
func (s Stats) LostIsLowerBound() bool {
	for _, v := range s.LowerBound {
		if v {
			return true
		}
	}
	return false
}

// EventsOf returns the delivered count for one type.
func (s Stats) EventsOf(t vocab.Type) uint64 { return s.Events[t] }
