// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Pipeline joins a backend to its sinks: it filters, counts what it emits by
// type, and counts what a sink failed to write as lost at the output stage.
// Its counters are what the metrics export, so they agree with the output.
type Pipeline struct {
	Filter *Filter
	// Peers, when set, are the other tracers on the node: their events
	// are left out.
	Peers *Peers
	Sinks []Sink
	// Pods, when set, gives each event of a container its pod
	// (watch --kubernetes), before the sinks see it.
	Pods PodSource

	maxArgs    int // Config.MaxArgs
	emitted    [vocab.NumTypes]atomic.Uint64
	lostOutput atomic.Uint64
	// Delay is how long events took from their kernel time to the output.
	Delay DelayHist

	kickAfter time.Duration // KickWithin's d: 0 when off
	kickArmed atomic.Bool   // a kick is due within kickAfter
}

// NewPipeline filters by cfg and writes to sinks.
func NewPipeline(cfg Config, sinks ...Sink) *Pipeline {
	return &Pipeline{Filter: NewFilter(cfg), Sinks: sinks, maxArgs: cfg.MaxArgs}
}

// Emit is the backend's emit callback.
func (p *Pipeline) Emit(e *Event) {
	if e.Type == vocab.TypeThrottle {
		// It stands for events the backend left out before any filter:
		// the filters have no say in it.
		p.write(e)
		return
	}
	if p.Peers != nil && p.Peers.Has(e.PID) {
		return
	}
	if p.Filter.Match(e) {
		p.write(e)
	}
	// A fork let held events of the --pid tree in: they follow it.
	if p.Filter.Releasing() {
		p.Filter.Release(p.write)
	}
}

func (p *Pipeline) write(e *Event) {
	if p.maxArgs > 0 && len(e.Argv) > p.maxArgs {
		// A copy: the backend may build its next event from this one.
		cut := *e
		cut.Argv, cut.ArgvTruncated = e.Argv[:p.maxArgs:p.maxArgs], true
		e = &cut
	}
	if p.Pods != nil {
		// Set on every event, known or not: a backend that reuses its
		// Event keeps no pod of an earlier container.
		e.Pod = PodInfo{}
		if e.ContainerID != "" {
			e.Pod, _ = p.Pods.Pod(e.ContainerID)
		}
	}
	// A signal storm's events cost a tenth of a microsecond each: one in
	// 16 of them is enough for a percentile, and spares a clock read.
	if n := p.emitted[e.Type].Add(1); e.Type != vocab.TypeSignal || n&15 == 0 {
		p.Delay.Observe(e.Time)
	}
	for _, s := range p.Sinks {
		if err := s.Write(e); err != nil {
			p.lostOutput.Add(1)
		}
	}
	if p.kickAfter > 0 && !p.kickArmed.Load() && p.kickArmed.CompareAndSwap(false, true) {
		time.AfterFunc(p.kickAfter, p.kickNow)
	}
}

// KickWithin makes every written event reach its sink's reader within d,
// with a timer armed by the first event after a kick, so that a quiet node
// wakes no one. Call it before the first Emit.
func (p *Pipeline) KickWithin(d time.Duration) { p.kickAfter = d }

// Kick passes every written event on to its sink's reader now, without
// waiting: a Batcher's batch end.
func (p *Pipeline) Kick() { p.kick() }

func (p *Pipeline) kickNow() {
	// Disarmed first: an event written during the kick arms the next one.
	p.kickArmed.Store(false)
	p.kick()
}

func (p *Pipeline) kick() {
	for _, s := range p.Sinks {
		if k, ok := s.(Kicker); ok {
			k.Kick()
		}
	}
}

// Emitted returns how many events of type t passed to the sinks.
func (p *Pipeline) Emitted(t vocab.Type) uint64 { return p.emitted[t].Load() }

// TotalEmitted sums Emitted over the process event types (throttle
// events are not counted: Emitted(TypeThrottle) has them).
func (p *Pipeline) TotalEmitted() uint64 {
	var n uint64
	for _, t := range vocab.AllTypes {
		n += p.Emitted(t)
	}
	return n
}

// LostOutput is how many event writes a sink refused (queued sinks count
// their own loss: see Stats).
func (p *Pipeline) LostOutput() uint64 { return p.lostOutput.Load() }

// Flush flushes every sink.
func (p *Pipeline) Flush() error {
	var first error
	for _, s := range p.Sinks {
		if err := s.Flush(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Every calls f every d until ctx is done.
func Every(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// Close closes every sink.
func (p *Pipeline) Close() error {
	var first error
	for _, s := range p.Sinks {
		if err := s.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Stats merges the backend's stats with the pipeline's queue and output loss.
func (p *Pipeline) Stats(b Backend) Stats {
	st := b.Stats()
	st.Lost[LostOutput] += p.LostOutput()
	for _, s := range p.Sinks {
		if r, ok := s.(LossReporter); ok {
			l := r.Loss()
			st.Lost[LostQueue] += l.Queue
			st.Lost[LostOutput] += l.Output
		}
		if r, ok := s.(RotationReporter); ok {
			st.RotationsFailed += r.RotationsFailed()
		}
	}
	return st
}
