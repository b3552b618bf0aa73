// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfbackend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cilium/ebpf/perf"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/tracer-dev/tracer/tracer"
)

func (b *Backend) runRing(ctx context.Context, rd *ringbuf.Reader, emit func(*tracer.Event)) error {
	b.mu.Lock()
	w, batchEnd := b.ringWait, b.batchEnd
	b.mu.Unlock()
	w.start()
	every := readEvery(b.cfg)
	flush := b.flushFunc()
	sweep, final := b.sweepFuncs()
	stopped := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(stopped)
		// The probes stop first, so that what the CPUs batched and the
		// ring holds is all they took: nothing is left for Close to free.
		b.detach()
		flush()
		final()
		w.stop()
	})
	defer stop()
	if sweep != nil {
		go tracer.Every(ctx, rateSweepEvery, sweep)
	}
	d := b.newDecoder()
	ev := new(tracer.Event)
	var rec ringbuf.Record
	// drain reads what the ring holds now, without waiting, and ends the
	// batch.
	drain := func() (n int, err error) {
		rd.SetDeadline(time.Unix(1, 0))
		for {
			err := rd.ReadInto(&rec)
			if err == nil {
				n++
				b.deliverBatch(d, rec.RawSample, ev, emit)
				continue
			}
			if n > 0 && batchEnd != nil {
				batchEnd()
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return n, nil
			}
			return n, err
		}
	}
	// done ends the run: a closed ring is the end too.
	done := func(err error) error {
		if err == nil || errors.Is(err, ringbuf.ErrClosed) {
			return nil
		}
		return fmt.Errorf("reading the ring buffer: %w", err)
	}
	var (
		timedOut, flushed bool
		signals           uint64    // signal events read at the last deadline
		lastSignal        time.Time // when that count last moved
	)
	for {
		n, err := drain()
		if err != nil {
			return done(err)
		}
		if ctx.Err() != nil {
			<-stopped
			_, err := drain()
			return done(err)
		}
		mayHold := timedOut && b.batchMayHold(&signals, &lastSignal, every)
		if mayHold && !flushed {
			// What the CPUs batched reaches the ring without a wakeup:
			// read it now, not a deadline later.
			flush()
			flushed = true
			continue
		}
		flushed = false
		// Nothing came over a whole deadline and no CPU holds a batch:
		// sleep until the kernel has a record.
		park := timedOut && n == 0 && !mayHold
		if timedOut, err = w.wait(every, park); err != nil {
			return err
		}
	}
}

func (b *Backend) runPerf(ctx context.Context, rd *perf.Reader, emit func(*tracer.Event)) error {
	stop := context.AfterFunc(ctx, func() {
		b.detach()
		_ = rd.Flush()
	})
	defer stop()
	d := b.newDecoder()
	ev := new(tracer.Event)
	var rec perf.Record
	rd.SetDeadline(time.Now().Add(pollInterval))
	for {
		err := rd.ReadInto(&rec)
		switch {
		case err == nil:
			if rec.LostSamples > 0 {
				b.perfLost.Add(rec.LostSamples)
				continue
			}
			b.deliver(d, rec.RawSample, ev, emit)
		case errors.Is(err, os.ErrDeadlineExceeded):
			rd.SetDeadline(time.Now().Add(pollInterval))
		case errors.Is(err, perf.ErrFlushed), errors.Is(err, perf.ErrClosed):
			return nil
		default:
			return fmt.Errorf("reading the perf buffer: %w", err)
		}
	}
}

// unread empties the ring Run is no longer reading, the CPUs' batches
// first, and returns how many events it held. b.mu is held.
func (b *Backend) unread() uint64 {
	if b.ring == nil || b.running {
		return 0
	}
	b.flushLocked()()
	var n uint64
	var rec ringbuf.Record
	b.ring.SetDeadline(time.Now())
	for b.ring.ReadInto(&rec) == nil {
		for raw := rec.RawSample; len(raw) > 0; {
			r, repeat, ok := nextRecord(raw)
			raw = raw[len(r):]
			if ok {
				n += 1 + uint64(repeat)
			}
		}
	}
	return n
}
