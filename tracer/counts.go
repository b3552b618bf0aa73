// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"sort"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// ExecKey keys exec counts like bpftrace's @exec_calls[comm, filename].
type ExecKey struct{ Comm, Filename string }

// SignalKey keys signal counts: @signals[comm -> target, signal].
type SignalKey struct {
	Comm   string
	Target int32
	Signal int
}

// Counts aggregates events the way a bpftrace program's maps do
// (@exec_calls, @fork_calls, @signals). It is the
// model behind `tracer trace`; the eBPF backend's counting mode fills it
// from kernel maps, and CountSink fills it from an event stream.
type Counts struct {
	Exec    map[ExecKey]uint64
	Fork    map[string]uint64
	Signals map[SignalKey]uint64
	Totals  [vocab.NumTypes]uint64
	Lost    uint64
}

// NewCounts returns empty counts.
func NewCounts() *Counts {
	return &Counts{Exec: map[ExecKey]uint64{}, Fork: map[string]uint64{}, Signals: map[SignalKey]uint64{}}
}

// Add counts one event.
func (c *Counts) Add(e *Event) {
	c.Totals[e.Type]++
	switch e.Type {
	case vocab.TypeExec:
		c.Exec[ExecKey{e.Comm, e.Filename}]++
	case vocab.TypeFork:
		c.Fork[e.Comm]++
	case vocab.TypeSignal:
		c.Signals[SignalKey{e.Comm, e.TargetPID, e.Signal}]++
	}
}

// Keep drops the counts of the classes not in types: a backend that follows
// a tree by its forks counts them, asked for or not.
func (c *Counts) Keep(types vocab.TypeSet) {
	for _, t := range vocab.AllTypes {
		if !types.Has(t) {
			c.Totals[t] = 0
		}
	}
	if !types.Has(vocab.TypeExec) {
		clear(c.Exec)
	}
	if !types.Has(vocab.TypeFork) {
		clear(c.Fork)
	}
	if !types.Has(vocab.TypeSignal) {
		clear(c.Signals)
	}
}

// Total returns the count of one type.
func (c *Counts) Total(t vocab.Type) uint64 { return c.Totals[t] }

// SetTotal sets the count of one type (for counts read from kernel maps).
func (c *Counts) SetTotal(t vocab.Type, n uint64) { c.Totals[t] = n }

// sortedKeys returns m's keys ordered by count, then by less; bpftrace prints smallest first.
func sortedKeys[K comparable](m map[K]uint64, less func(a, b K) bool) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] < m[keys[j]]
		}
		return less(keys[i], keys[j])
	})
	return keys
}

// ExecKeys returns the exec keys in print order.
func (c *Counts) ExecKeys() []ExecKey {
	return sortedKeys(c.Exec, func(a, b ExecKey) bool {
		if a.Comm != b.Comm {
			return a.Comm < b.Comm
		}
		return a.Filename < b.Filename
	})
}

// ForkKeys returns the fork keys in print order.
func (c *Counts) ForkKeys() []string {
	return sortedKeys(c.Fork, func(a, b string) bool { return a < b })
}

// SignalKeys returns the signal keys in print order.
func (c *Counts) SignalKeys() []SignalKey {
	return sortedKeys(c.Signals, func(a, b SignalKey) bool {
		if a.Comm != b.Comm {
			return a.Comm < b.Comm
		}
		if a.Target != b.Target {
			return a.Target < b.Target
		}
		return a.Signal < b.Signal
	})
}

// CountSink is a Sink that only counts.
type CountSink struct{ C *Counts }

// Write counts e.
func (s CountSink) Write(e *Event) error { s.C.Add(e); return nil }

// Flush does nothing.
func (CountSink) Flush() error { return nil }

// Close does nothing.
func (CountSink) Close() error { return nil }
