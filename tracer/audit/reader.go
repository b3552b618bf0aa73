// SPDX-License-Identifier: Apache-2.0

//go:build linux

package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/auditstate"
	"github.com/tracer-dev/tracer/tracer/auparse"
)

// This file: the reader loop: the status poller, Run's batched reads of the multicast socket into the reassembler, idling, and the drain at the end.

// startPoller reads the kernel's backlog and lost counter on a client of
// its own, so status requests never interleave with the record stream; it
// gives up lean records as soon as another reader of the records appears
// (an audit daemon taking the PID, a program joining the multicast group),
// follows the exclude list, and puts this tracer's rules back when another
// program deleted them.
func (b *Backend) startPoller() {
	cl, err := auditstate.Open()
	if err != nil {
		return
	}
	b.pollStop, b.pollDone = make(chan struct{}), make(chan struct{})
	b.recheck, b.readersNow = make(chan struct{}, 1), make(chan struct{}, 1)
	go func() {
		defer close(b.pollDone)
		defer cl.Close()
		t := time.NewTimer(pollInterval)
		defer t.Stop()
		var readers readerCheck
		// Fast at first: a reader may be starting as tracer does.
		fastUntil, lastRules := time.Now().Add(fastPollFor), time.Now()
		for {
			if st, err := cl.GetStatus(); err == nil {
				b.status.Store(st)
				if b.lean && !b.leanForced {
					if other := readers.other(st); other != "" {
						b.dropLean(other)
					}
				}
			}
			// The rules are read when Run sees them change, and every
			// rulesPollEvery in case that record was lost: listing rules
			// costs the kernel a thread each time.
			if time.Since(lastRules) >= rulesPollEvery {
				b.checkRules(cl)
				lastRules = time.Now()
			}
			// Lean records need a new reader found fast; the kernel
			// records its arrival, so the poll is fast only after such a
			// record, and once a second otherwise (for the backlog and
			// lost counters, and in case that record was lost).
			wait := slowPollInterval
			if b.lean && !b.leanForced && time.Now().Before(fastUntil) {
				wait = pollInterval
			}
			t.Reset(wait)
			select {
			case <-b.pollStop:
				return
			case <-b.recheck:
				b.checkRules(cl)
			case <-b.readersNow:
				fastUntil = time.Now().Add(fastPollFor)
			case <-t.C:
			}
		}
	}()
}

// Run reads and reassembles records until ctx is done. Then it removes the
// rules, so no new events come, and drains what the kernel had queued: the
// kernel logs each rule removal as a CONFIG_CHANGE record behind every
// record queued before it, so once all removals are read, nothing is left.
func (b *Backend) Run(ctx context.Context, emit func(*tracer.Event)) error {
	if b.src != nil {
		return b.runPlugin(ctx, emit)
	}
	if b.recv == nil {
		return errors.New("audit backend not started")
	}
	count := func(e *tracer.Event) {
		b.delivered[e.Type].Add(1)
		emit(e)
	}
	draining := false
	fences := 0 // rule removals still to be read back
	var quiet time.Duration
	var idle idleReader
	var drainStart time.Time
	// AUDIT_MESSAGE_TEXT_MAX is 8560 bytes; 9000 fits any record with its header.
	bt := auditstate.NewBatch(64, 9000)
	gather := gatherTime(b.bufGot)
	lastSweep, lastLimitSweep := time.Now(), time.Now()
	sweep := func() {
		if b.r.limit != nil {
			if now := time.Now(); now.Sub(lastLimitSweep) >= limitSweepEvery {
				b.r.sweepLimit(now, count)
				lastLimitSweep = now
			}
		}
		if time.Since(lastSweep) >= sweepInterval {
			b.r.sweep(count)
			b.lostReasm.Store(b.r.lost + b.r.bad)
			lastSweep = time.Now()
		}
	}
	one := func(typ uint16, data []byte) {
		switch {
		case typ == syscall.NLMSG_ERROR:
		case draining && typ == auparse.TypeConfigChange && b.isOurRemoval(data), draining && b.isFence(typ, data):
			fences--
		case typ == auparse.TypeConfigChange && b.isOurRemoval(data):
			// Another program deleted our rules (auditctl -D): put
			// them back now rather than at the next poll.
			select {
			case b.recheck <- struct{}{}:
			default:
			}
		case typ == auparse.TypeConfigChange && excludeListChanged(data):
			// Another tracer added or removed lean records.
			select {
			case b.recheck <- struct{}{}:
			default:
			}
		case typ == auparse.TypeEventListener, typ == auparse.TypeConfigChange && bytes.Contains(data, []byte("audit_pid=")):
			// A reader joined the multicast group, or took the PID.
			select {
			case b.readersNow <- struct{}{}:
			default:
			}
		default:
			b.r.feed(typ, data, count)
		}
	}
	published := func() {
		b.lostReasm.Store(b.r.lost + b.r.bad)
		for i, n := range b.r.filtered {
			b.filtered[i].Store(n)
		}
		b.storeThrottled()
	}
	feed := func(n int) {
		b.r.setExcluded(recordSet(b.excluded.Load()), count)
		for i := 0; i < n; i++ {
			if typ, data, ok := bt.Message(i); ok {
				one(typ, data)
			}
		}
		published()
	}
	// What the multicast probe read before its own record comes first.
	b.r.setExcluded(recordSet(b.excluded.Load()), count)
	for _, rec := range b.early {
		one(rec.typ, rec.data)
	}
	b.early = nil
	published()
	for {
		if draining && time.Since(drainStart) > drainTimeout {
			// A busy node never goes quiet: bound the drain by the clock
			// too, after what the socket already holds.
			for {
				n, err := b.recv.ReadBatchNow(bt)
				if err != nil && !errors.Is(err, syscall.ENOBUFS) {
					break
				}
				feed(n)
			}
			return b.endDrain(count)
		}
		if !draining && ctx.Err() != nil {
			draining, drainStart = true, time.Now()
			if err := idle.wake(b.recv); err != nil {
				return err
			}
			fences = b.ruleCount()
			if err := b.removeRules(); err != nil {
				return err
			}
			if b.fo.on && b.sendFence() {
				fences = 1
			}
		}
		n, err := b.recv.ReadBatch(bt)
		if err != nil {
			switch {
			case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EWOULDBLOCK):
				sweep()
				if !draining {
					// Nothing pending and no rate limit to sweep: wait
					// longer between looks at ctx.
					if err := idle.quiet(b.recv, len(b.r.pending) == 0 && b.r.limit == nil); err != nil {
						return err
					}
				}
				if draining {
					// The fences normally end the drain; this bounds it if a
					// removal record was lost, or an event never completes.
					if quiet += recvTimeout; fences <= 0 || quiet >= drainTimeout {
						return b.endDrain(count)
					}
				}
				continue
			case errors.Is(err, syscall.ENOBUFS):
				b.overflowed()
				continue
			default:
				return fmt.Errorf("reading audit records: %w", err)
			}
		}
		quiet = 0
		if err := idle.wake(b.recv); err != nil {
			return err
		}
		feed(n)
		sweep()
		if !draining && n < bt.Len() {
			// A reader waiting in recvmmsg is woken for every record, and
			// kauditd pays for each wakeup on the audited processes' behalf
			// (on two CPUs, out of their time): at a steady few hundred
			// events a second those wake-ups were most of the reader's
			// cost. Let records gather unless the batch came back full.
			time.Sleep(gather)
		}
		// Past the last fence, events another CPU was logging while the
		// rules went away may still lack their EOE: read until they have it.
		if draining && fences <= 0 && len(b.r.pending) == 0 {
			return b.endDrain(count)
		}
	}
}

// gatherTime is how long the reader lets records gather in the socket
// after a batch that was not full: gatherRecords with the receive buffer
// asked for, less with a smaller one, so that what a burst of a million
// records a second brings meanwhile still fits (a record takes about 1 KiB
// of buffer).
func gatherTime(bufBytes int) time.Duration {
	d := gatherRecords * time.Duration(bufBytes) / recvBuffer
	return min(max(d, minGatherRecords), gatherRecords)
}

// idleReader lengthens the record socket's receive timeout once the
// reader has found nothing for a second with nothing pending: an idle
// watcher then wakes twice a second, not ten times. The first record, and
// the drain, set it back.
type idleReader struct {
	empty int  // receive timeouts in a row
	slow  bool // the timeout is recvIdleTimeout
}

func (r *idleReader) quiet(c *auditstate.Conn, calm bool) error {
	if r.empty++; r.slow || !calm || r.empty < int(time.Second/recvTimeout) {
		return nil
	}
	r.slow = true
	return c.SetRecvTimeout(recvIdleTimeout)
}

func (r *idleReader) wake(c *auditstate.Conn) error {
	r.empty = 0
	if !r.slow {
		return nil
	}
	r.slow = false
	return c.SetRecvTimeout(recvTimeout)
}

func (b *Backend) endDrain(emit func(*tracer.Event)) error {
	b.r.flush(emit)
	b.r.flushLimit(time.Now(), emit)
	b.lostReasm.Store(b.r.lost + b.r.bad)
	b.storeThrottled()
	return nil
}

// storeThrottled publishes the reassembler's rate limit counts for Stats.
func (b *Backend) storeThrottled() {
	if b.r.limit == nil {
		return
	}
	for t, n := range b.r.limit.Throttled() {
		b.throttled[t].Store(n)
	}
}

// overflowed books a multicast socket overflow: the records it dropped
// are gone. The kernel counts them per socket (/proc/net/netlink, Drops);
// only where that cannot be read is the figure a count of overflows, a
// lower bound.
func (b *Backend) overflowed() {
	if _, ok := auditstate.SocketDrops(b.mcastPort.Load()); ok {
		return // the poller and Stats read the exact figure
	}
	b.lostSocket.Add(1)
	b.socketLowerBound.Store(true)
}
