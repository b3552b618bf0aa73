// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/tracer-dev/tracer/tracer"
)

// Every output queue (the file's chunks, the journal's and syslog's
// messages, OTLP's events) waits by one rule and counts by one book:
// stallRule says how long a full queue waits for room, lossBook counts
// each event once, written or lost at its stage.

// stallRule is the one rule for a full queue. In block mode it waits for
// room until Abort. In drop mode it waits only while the writer makes
// progress, at most patience, and drops at once when the writer's
// current write has not returned for patience (a pipe nobody reads, a
// daemon that stopped reading): the goroutine that puts events is the
// backend's reader, and the node must never wait on an output.
type stallRule struct {
	block bool
	// patience is stallAfter, or 0 for a queue that drops at once when
	// full in drop mode (OTLP: what empties it is a network round trip).
	patience   time.Duration
	writeStart atomic.Int64 // Unix ns the writer's current write began; 0: none
	timer      *time.Timer  // the putting goroutine's; its lock guards it
}

// writing and wrote bracket each write (or send, or export).
func (r *stallRule) writing() { r.writeStart.Store(time.Now().UnixNano()) }
func (r *stallRule) wrote()   { r.writeStart.Store(0) }

// wait returns how long a put may wait for room now: ok false means drop
// at once; a nil timeout waits until Abort. Call stop when done waiting.
func (r *stallRule) wait() (timeout <-chan time.Time, ok bool) {
	if r.block {
		return nil, true
	}
	if r.patience <= 0 {
		return nil, false
	}
	if s := r.writeStart.Load(); s != 0 && time.Now().UnixNano()-s > int64(r.patience) {
		return nil, false // stalled: drop at once
	}
	if r.timer == nil {
		r.timer = time.NewTimer(r.patience)
	} else {
		r.timer.Reset(r.patience)
	}
	return r.timer.C, true
}

// stop ends a wait.
func (r *stallRule) stop() {
	if r.timer != nil {
		r.timer.Stop()
	}
}

// lossBook counts what a queue's events became: written, lost at stage
// queue (the queue was full), or lost at stage output (the writer could
// not write them, or they came after the output ended). It also tells
// the command when writing starts and stops failing.
type lossBook struct {
	onFailing func(error)

	written    atomic.Uint64
	lostQueue  atomic.Uint64
	lostOutput atomic.Uint64

	mu        sync.Mutex // orders the writer's counting with abandon
	abandoned bool
	failing   bool
}

// dropped counts an event a full queue could not take.
func (b *lossBook) dropped() { b.lostQueue.Add(1) }

// late counts an event put after the output ended or failed for good.
func (b *lossBook) late() { b.lostOutput.Add(1) }

// lose counts n queued events the writer will not write (the output
// failed for good), unless abandon counted them already.
func (b *lossBook) lose(n uint64) { b.add(0, n) }

// add counts n events written and lost more lost at stage output, and
// leaves the failing state as it is. It reports false when abandon
// counted them already.
func (b *lossBook) add(n, lost uint64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.abandoned {
		return false
	}
	b.written.Add(n)
	b.lostOutput.Add(lost)
	return true
}

// book counts one write: n events written, lost more lost at stage
// output; err says why they were (nil: the write succeeded). notify
// false keeps the failing state from the command (a write cancelled on
// purpose). It reports false when abandon counted them already.
func (b *lossBook) book(n, lost uint64, err error, notify bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.abandoned {
		return false
	}
	b.written.Add(n)
	b.lostOutput.Add(lost)
	if (err != nil) != b.failing {
		b.failing = err != nil
		if notify && b.onFailing != nil {
			b.onFailing(err)
		}
	}
	return true
}

// abandon stops waiting for a stalled writer: every accepted event not
// yet counted is counted lost at stage output now, so the totals add up
// even if the process exits with a write still blocked. It reports how
// many, and false when the book was abandoned before.
func (b *lossBook) abandon(accepted uint64) (uint64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.abandoned {
		return 0, false
	}
	b.abandoned = true
	pending := accepted - b.written.Load() - b.lostOutput.Load()
	b.lostOutput.Add(pending)
	return pending, true
}

func (b *lossBook) loss() tracer.OutputLoss {
	return tracer.OutputLoss{Queue: b.lostQueue.Load(), Output: b.lostOutput.Load()}
}
