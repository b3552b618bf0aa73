// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"strconv"
	"strings"
	"time"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// --rate-limit N/s bounds the events one source may put in the output: a
// flood (a kill loop, a fork bomb) in one pod then costs the node's log
// and the output queue at most N events a second, and says so in a
// throttle event, while every other source's events pass untouched.
//
// A source is a cgroup v2: every process of a pod, a container or a
// service counts together. A process in the root cgroup, which is every
// process on a node that uses cgroup v1 alone, is a source of its own
// (by pid). Each source has fixed windows of one second: the first N
// events of a window pass, the rest are counted and left out; when the
// window ends (at the source's next event, or by a sweep within about a
// second, or when the watch ends) one throttle event says who, the window,
// and how many events of each type were left out. The eBPF backend
// enforces it in its BPF programs, before an event reaches the ring buffer
// (bpf/headers/ratelimit.h, rate_pass); the audit backend in the reassembler, at
// the SYSCALL record, before an event is built (Limiter). What is left out
// is counted in Stats.Throttled: not loss.

// MaxRateLimit is the highest --rate-limit: the kernel side counts a
// window's events in 32 bits, and no output keeps up with more.
const MaxRateLimit = 100_000_000

// ParseRateLimit parses --rate-limit: "N/s" or "N", events a second from
// one source, N from 1 to MaxRateLimit.
func ParseRateLimit(s string) (uint32, error) {
	num, unit, hasUnit := strings.Cut(strings.TrimSpace(s), "/")
	if hasUnit && unit != "s" && unit != "sec" {
		return 0, vocab.Usagef("--rate-limit %q: the limit is per second: give it as N/s, e.g. --rate-limit 1000/s", s)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(num), 10, 64)
	if err != nil || n == 0 || n > MaxRateLimit {
		return 0, vocab.Usagef("--rate-limit %q: want events a second from one cgroup, 1 to %d, as N/s, e.g. --rate-limit 1000/s", s, MaxRateLimit)
	}
	return uint32(n), nil
}

// ThrottleSource is what a throttle event's source is.
type ThrottleSource uint8

// Throttle sources.
const (
	SourceNone    ThrottleSource = iota
	SourceCgroup                 // the processes of a cgroup v2 (Event.Cgroup, Throttle.CgroupID)
	SourceProcess                // one process (Event.PID), in the root cgroup
)

var sourceNames = [...]string{"", "cgroup", "process"}

func (s ThrottleSource) String() string {
	if int(s) < len(sourceNames) {
		return sourceNames[s]
	}
	return "source(" + strconv.Itoa(int(s)) + ")"
}

// Throttle is what a throttle event says: a source went over the limit in
// one window, and this many of its events were left out. The event's PID,
// Comm, UID, AUID, ExecID and cgroup fields name the first process whose
// event was left out in the window.
type Throttle struct {
	Source ThrottleSource
	// CgroupID is a cgroup source's id (the inode number of its directory,
	// what bpf_get_current_cgroup_id returns), 0 where it is not known.
	CgroupID uint64
	// Start and End bound the window: one second, or less where the watch
	// ended in it.
	Start, End time.Time
	// Limit is --rate-limit, events a second.
	Limit uint32
	// The events left out in the window, by type.
	Exec, Fork, Signal, Exit uint64
}

// Suppressed is how many events the window left out, of every type.
func (t *Throttle) Suppressed() uint64 { return t.Exec + t.Fork + t.Signal + t.Exit }

// Add counts n events of type typ left out.
func (t *Throttle) Add(typ vocab.Type, n uint64) {
	switch typ {
	case vocab.TypeExec:
		t.Exec += n
	case vocab.TypeFork:
		t.Fork += n
	case vocab.TypeSignal:
		t.Signal += n
	case vocab.TypeExit:
		t.Exit += n
	}
}

// Of is how many events of type typ the window left out.
func (t *Throttle) Of(typ vocab.Type) uint64 {
	switch typ {
	case vocab.TypeExec:
		return t.Exec
	case vocab.TypeFork:
		return t.Fork
	case vocab.TypeSignal:
		return t.Signal
	case vocab.TypeExit:
		return t.Exit
	}
	return 0
}

// LimitKey is a source of events for the rate limit: a cgroup (by path),
// or a process of the root cgroup (by pid).
type LimitKey struct {
	Cgroup string
	PID    uint32
}

// LimitKeyOf is the source of an event of process pid in cgroup (its v2
// path; "" when unknown).
func LimitKeyOf(cgroup string, pid uint32) LimitKey {
	if cgroup == "" || cgroup == "/" {
		return LimitKey{PID: pid}
	}
	return LimitKey{Cgroup: cgroup}
}

// maxLimitSources bounds the sources a Limiter remembers: a node that
// starts processes all day has pids without end.
const maxLimitSources = 1 << 16

// limitGrace is how long after its end a window is swept: the records of
// its last events may still be on their way from the kernel.
const limitGrace = 200 * time.Millisecond

// Limiter is --rate-limit in user space, for a backend that cannot count in
// the kernel (audit): fixed windows of one second, aligned on the wall
// clock's seconds, per source. It is not safe for concurrent use.
type Limiter struct {
	limit   uint32
	backend string
	sources map[LimitKey]*limitSource
	// CgroupID, when set, gives a cgroup path's id for the throttle event.
	CgroupID func(path string) uint64
	// throttled counts every event left out, by type.
	throttled [vocab.NumTypes]uint64
}

type limitSource struct {
	win     int64 // the window: seconds since the epoch
	passed  uint32
	dropped Throttle
	who     Event // the first process whose event was left out
}

// NewLimiter limits each source to limit events a second; throttle events
// carry backend.
func NewLimiter(limit uint32, backend string) *Limiter {
	return &Limiter{limit: limit, backend: backend, sources: map[LimitKey]*limitSource{}}
}

// Allow says whether an event of type typ, made at t by source key,
// passes. An event that ends a window where events were left out first
// has report called with that window's throttle event. who is non-nil for
// the first event a window leaves out: the caller fills it with the
// event's process (PID, Comm, UID, AUID, ExecID, cgroup).
func (l *Limiter) Allow(key LimitKey, t time.Time, typ vocab.Type, report func(*Event)) (pass bool, who *Event) {
	win := t.Unix()
	s := l.sources[key]
	if s == nil {
		if len(l.sources) >= maxLimitSources {
			l.Flush(t, report)
			clear(l.sources)
		}
		s = &limitSource{win: win}
		l.sources[key] = s
	}
	// A record read late (its window swept already) counts in the
	// window the source is in.
	if win > s.win {
		l.end(key, s, time.Unix(s.win+1, 0), report)
		s.win, s.passed = win, 0
	}
	if s.passed < l.limit {
		s.passed++
		return true, nil
	}
	l.throttled[typ]++
	first := s.dropped.Suppressed() == 0
	s.dropped.Add(typ, 1)
	if first {
		s.who.Reset()
		return false, &s.who
	}
	return false, nil
}

// end reports the window s is in, if it left events out, as ending at end.
func (l *Limiter) end(key LimitKey, s *limitSource, end time.Time, report func(*Event)) {
	if s.dropped.Suppressed() == 0 {
		return
	}
	e := s.who
	e.Time, e.Backend, e.Type = end, l.backend, vocab.TypeThrottle
	e.Throttle = s.dropped
	e.Throttle.Start, e.Throttle.End, e.Throttle.Limit = time.Unix(s.win, 0), end, l.limit
	if key.Cgroup != "" {
		e.Throttle.Source = SourceCgroup
		if l.CgroupID != nil {
			e.Throttle.CgroupID = l.CgroupID(key.Cgroup)
		}
	} else {
		e.Throttle.Source = SourceProcess
	}
	s.dropped = Throttle{}
	report(&e)
}

// Sweep reports the windows that ended before now (and a grace for the
// records still on their way) with events left out, and forgets the
// sources that have been quiet for a window.
func (l *Limiter) Sweep(now time.Time, report func(*Event)) {
	cut := now.Add(-limitGrace).Unix() // windows before this one are over
	for key, s := range l.sources {
		if s.win >= cut {
			continue
		}
		l.end(key, s, time.Unix(s.win+1, 0), report)
		if s.win < cut-1 {
			delete(l.sources, key)
		}
	}
}

// Flush reports every window with events left out, ending now where it
// has not ended yet (the watch ends).
func (l *Limiter) Flush(now time.Time, report func(*Event)) {
	for key, s := range l.sources {
		end := time.Unix(s.win+1, 0)
		if now.Before(end) {
			end = now
		}
		l.end(key, s, end, report)
	}
}

// Throttled is how many events were left out, by type.
func (l *Limiter) Throttled() [vocab.NumTypes]uint64 { return l.throttled }
