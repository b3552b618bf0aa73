// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfbackend

import (
	"encoding/binary"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// wakeInterval is cfg_wake_interval_ns: 0 with --max-delay (the reader's
// timer alone), 5 ms without.
func wakeInterval(cfg tracer.Config) uint64 {
	if cfg.MaxDelay > 0 {
		return 0
	}
	return uint64(5 * time.Millisecond)
}

// batchMayHold says whether a CPU may hold batched signal records, so that
// a quiet node costs no flush (a run on each CPU) per deadline. A batch only
// starts within the tick of a signal sent to the ring directly (the first
// of its tick on that CPU: see on_signal), so it follows a signal the
// reader saw at most a tick and a deadline ago: 2*every+20ms (HZ 100's tick
// twice) covers it.
func (b *Backend) batchMayHold(seen *uint64, last *time.Time, every time.Duration) bool {
	if !b.batch {
		return false
	}
	now := time.Now()
	if n := b.events[vocab.TypeSignal].Load(); n != *seen {
		*seen, *last = n, now
	}
	return now.Sub(*last) <= 2*every+20*time.Millisecond
}

// readEvery is how long the reader sleeps at most: half of --max-delay
// (the output's flush takes the other half), or pollInterval.
func readEvery(cfg tracer.Config) time.Duration {
	if cfg.MaxDelay > 0 {
		return cfg.MaxDelay / 2
	}
	return pollInterval
}

// deliverBatch delivers a ring buffer record: one record, or a CPU's batch
// of signal records (see struct batch in bpf/headers/batch.h), each of which
// stands for 1 + its repeat count events. The batch's events are counted
// once at its end: one locked add per batch, not per event.
func (b *Backend) deliverBatch(d *decoder, raw []byte, ev *tracer.Event, emit func(*tracer.Event)) {
	var n [vocab.TypeThrottle + 1]uint64
	for len(raw) > 0 {
		rec, repeat, ok := nextRecord(raw)
		raw = raw[len(rec):]
		if !ok {
			b.badRecs.Add(1)
			continue
		}
		if !b.decodeEmit(d, rec, ev, emit, &n) {
			continue
		}
		// Each repeat is the same event, emitted anew: emit may change it.
		for range repeat {
			d.again(ev)
			n[ev.Type]++
			emit(ev)
		}
	}
	for t, c := range n {
		if c != 0 {
			b.events[t].Add(c)
		}
	}
}

// nextRecord is the first record of a ring buffer record: one of a CPU's
// batch of fork, signal and exit records, or the whole; repeat is its
// repeat count, and ok is false when that is beyond the kernel's cap.
func nextRecord(raw []byte) (rec []byte, repeat uint32, ok bool) {
	rec = raw
	if len(raw) > eventSize && raw[offType] != uint8(vocab.TypeExec) {
		rec = raw[:eventSize]
	}
	if len(rec) == eventSize && rec[offType] != uint8(vocab.TypeExec) {
		if repeat = binary.LittleEndian.Uint32(rec[offRepeat:]); repeat > maxRepeat {
			return rec, 0, false
		}
	}
	return rec, repeat, true
}

// rateSweepEvery is how often the rate limit's windows are swept: a
// throttle that ends in silence is said within about this long after its
// window.
const rateSweepEvery = 200 * time.Millisecond

// sweepFuncs returns what says the rate limit's throttled windows that are
// over (nil without a sweep), and what says all of them, at the end.
func (b *Backend) sweepFuncs() (sweep, final func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.sweep || b.coll == nil {
		return nil, func() {}
	}
	run := func(p *ebpf.Program) func() {
		return func() { _, _ = p.Run(&ebpf.RunOptions{}) }
	}
	return run(b.coll.Programs["rate_sweep"]), run(b.coll.Programs["rate_final"])
}

// flushFunc returns what sends every CPU's batched records to the ring:
// flush_batch run on each CPU.
func (b *Backend) flushFunc() func() {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.flushLocked()
}

// flushLocked is flushFunc with b.mu held.
func (b *Backend) flushLocked() func() {
	if !b.batch || b.coll == nil {
		return func() {}
	}
	prog := b.coll.Programs["flush_batch"]
	cpus, err := ebpf.PossibleCPU()
	if err != nil || prog == nil {
		return func() {}
	}
	return func() {
		for cpu := range cpus {
			// Offline CPUs fail and hold nothing.
			_, _ = prog.Run(&ebpf.RunOptions{CPU: uint32(cpu), Flags: unix.BPF_F_TEST_RUN_ON_CPU})
		}
	}
}

func (b *Backend) deliver(d *decoder, raw []byte, ev *tracer.Event, emit func(*tracer.Event)) {
	var n [vocab.TypeThrottle + 1]uint64
	if b.decodeEmit(d, raw, ev, emit, &n) {
		b.events[ev.Type].Add(1)
	}
}

// decodeEmit decodes one record, counts it in n and emits it.
func (b *Backend) decodeEmit(d *decoder, raw []byte, ev *tracer.Event, emit func(*tracer.Event), n *[vocab.TypeThrottle + 1]uint64) bool {
	if err := d.decode(raw, ev); err != nil {
		b.badRecs.Add(1)
		return false
	}
	if d.exes != nil {
		d.exes.fill(ev, d.newExe)
		if ev.Type != vocab.TypeExec {
			d.prev.Exe = ev.Exe // for the record's repeats (again)
		}
	}
	n[ev.Type]++
	emit(ev)
	return true
}
