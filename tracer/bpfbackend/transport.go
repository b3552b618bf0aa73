// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfbackend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/perf"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/tracer-dev/tracer/tracer"
)

// Transports (Features.Transport, Config.Transport).
const (
	TransportAuto    = "auto"
	TransportRingbuf = "ringbuf" // BPF ring buffer, Linux 5.8+
	TransportPerf    = "perf"    // per-CPU perf event array, every kernel; reported as "perfbuf"
)

// transport is how records leave the kernel: the ring buffer, or the
// per-CPU perf buffer where the kernel has none. Start opens it before any
// probe is attached (perf output to a CPU without a reader fails).
type transport interface {
	// name is "ringbuf" or "perfbuf", as doctor and the metrics say it.
	name() string
	// read delivers records until ctx is done, then what was queued
	// before, and returns.
	read(ctx context.Context, emit func(*tracer.Event)) error
	// lost is what the transport lost that the kernel's lost map does not
	// count (the perf buffer's lost samples, per CPU).
	lost() uint64
	// unread empties the buffer no read takes any more, and returns the
	// events it held. b.mu is held.
	unread() uint64
	close() error
}

// ringTransport reads the BPF ring buffer, which keeps the order of
// records across CPUs; the kernel counts what it could not reserve.
type ringTransport struct {
	b    *Backend
	rd   *ringbuf.Reader
	wait *ringWait
}

func (r *ringTransport) name() string { return "ringbuf" }
func (r *ringTransport) lost() uint64 { return 0 }

func (r *ringTransport) close() error {
	return errors.Join(r.rd.Close(), r.wait.close())
}

func (r *ringTransport) read(ctx context.Context, emit func(*tracer.Event)) error {
	b, rd := r.b, r.rd
	b.mu.Lock()
	w, batchEnd := r.wait, b.batchEnd
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

// perfTransport reads a perf event array, one buffer per CPU (Linux
// before 5.8): records keep their order per CPU only, and the kernel says
// per CPU how many samples it dropped.
type perfTransport struct {
	b       *Backend
	rd      *perf.Reader
	lostCPU []atomic.Uint64 // by CPU, from the records that report lost samples
}

func (p *perfTransport) name() string   { return "perfbuf" }
func (p *perfTransport) unread() uint64 { return 0 }
func (p *perfTransport) close() error   { return p.rd.Close() }

func (p *perfTransport) lost() uint64 {
	var n uint64
	for i := range p.lostCPU {
		n += p.lostCPU[i].Load()
	}
	return n
}

func (p *perfTransport) read(ctx context.Context, emit func(*tracer.Event)) error {
	b, rd := p.b, p.rd
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
				if rec.CPU >= 0 && rec.CPU < len(p.lostCPU) {
					p.lostCPU[rec.CPU].Add(rec.LostSamples)
				} else {
					p.lostCPU[0].Add(rec.LostSamples)
				}
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
func (r *ringTransport) unread() uint64 {
	b := r.b
	if b.running {
		return 0
	}
	b.flushLocked()()
	var n uint64
	var rec ringbuf.Record
	r.rd.SetDeadline(time.Now())
	for r.rd.ReadInto(&rec) == nil {
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

// openTransport opens the reader of the transport Start chose, on coll's
// map events.
func (b *Backend) openTransport(coll *ebpf.Collection, spec *ebpf.CollectionSpec) (transport, error) {
	if b.kernel.transport == TransportRingbuf {
		rd, err := ringbuf.NewReader(coll.Maps["events"])
		if err != nil {
			return nil, fmt.Errorf("opening the ring buffer: %w", err)
		}
		// Without mmapable global data the reader shares no flag with
		// the programs: it never parks, and reads every deadline.
		parked := spec.Variables["reader_parked"]
		if !b.kernel.mmap {
			parked = nil
		}
		w, err := newRingWait(rd, coll, parked)
		if err != nil {
			_ = rd.Close()
			return nil, err
		}
		return &ringTransport{b: b, rd: rd, wait: w}, nil
	}
	perCPU := b.cfg.RingBytes / runtime.NumCPU()
	perCPU = max(1<<(bitsLen(perCPU)-1), 16*os.Getpagesize())
	rd, err := perf.NewReaderWithOptions(coll.Maps["events"], perCPU, perf.ReaderOptions{Watermark: perCPU / 4})
	if err != nil {
		return nil, fmt.Errorf("opening the perf buffer: %w", err)
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		cpus = runtime.NumCPU()
	}
	return &perfTransport{b: b, rd: rd, lostCPU: make([]atomic.Uint64, max(cpus, 1))}, nil
}
