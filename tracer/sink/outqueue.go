// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tracer-dev/tracer/tracer"
)

// Every output (a file or a pipe, the journal, syslog, OTLP) puts its
// events in one kind of queue, queue: bounded by bytes, filled by the
// goroutine that writes events (the backend's reader, which must never
// wait on an output in drop mode) in batches that one goroutine of the
// output's drains. stallRule says how long a full queue waits for room,
// lossBook counts each event once, written or lost at its stage.

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

// batch is what a queue fills and its drainer takes whole: encoded
// events for a file or a daemon (byteBatch), copies of the events for
// OTLP (eventBatch).
type batch interface {
	events() int
	size() int // the bytes put said its events hold
	reset()
}

// queueShape sizes a queue.
type queueShape struct {
	maxBytes  int // held at most: queued or being drained (one event alone may be more)
	maxEvents int // 0: no bound but the bytes
	// A batch is handed to the drainer when it holds batchBytes or
	// batchEvents (0: no bound), or on a kick.
	batchBytes, batchEvents int
	slots                   int           // batches handed over and not yet taken, at most
	patience                time.Duration // stallRule.patience in drop mode
}

// queue is the one bounded output queue. put and added bracket each
// event (the caller adds it to the batch put returns, with the queue
// locked, so that nothing is allocated per event); the drainer ranges
// over batches() and gives each batch back with done (or release,
// recycle and finish apart, when it holds on to the events longer than
// to the batch). Every accepted event is finished once: written or lost
// by the drainer's count, or by abandon.
type queue[B batch] struct {
	shape    queueShape
	newBatch func() B
	abort    <-chan struct{}
	rule     stallRule // its timer: mu guards it
	book     lossBook

	mu       sync.Mutex // put's: orders puts with kick, flush and end
	cur      B
	ended    bool
	accepted uint64 // mu guards it (one locked op less per event)

	// held counts what was put and not yet released: in cur, handed
	// over, or being drained.
	heldBytes, heldEvents atomic.Int64
	full                  chan B
	free                  chan B
	room                  chan struct{} // a token after each release
	failed                atomic.Bool   // the output ended for good: later events are lost at stage output

	fmu       sync.Mutex // finished's
	finished  uint64
	abandoned bool
	progress  chan struct{} // closed when finished grows

	errMu sync.Mutex
	err   error
}

func newQueue[B batch](opts OutputOptions, shape queueShape, newBatch func() B) *queue[B] {
	if shape.maxBytes <= 0 {
		shape.maxBytes = defaultQueueBytes
	}
	shape.slots = max(shape.slots, 1)
	return &queue[B]{
		shape: shape, newBatch: newBatch, abort: opts.Abort,
		rule:     stallRule{block: opts.Backpressure == tracer.BackpressureBlock, patience: shape.patience},
		book:     lossBook{onFailing: opts.OnFailing},
		cur:      newBatch(),
		full:     make(chan B, shape.slots),
		free:     make(chan B, shape.slots+2),
		room:     make(chan struct{}, 1),
		progress: make(chan struct{}),
	}
}

// put makes room for one event of size bytes and returns the batch to
// add it to, with the queue locked: the caller adds the event and calls
// added. ok false: the event was counted lost (a full queue, an ended
// output), and nothing is locked.
func (q *queue[B]) put(size int) (b B, ok bool) {
	q.mu.Lock()
	if q.ended || q.failed.Load() {
		q.book.late()
		q.mu.Unlock()
		return b, false
	}
	if !q.fits(size) && !q.waitRoom(size) {
		q.book.dropped()
		q.mu.Unlock()
		return b, false
	}
	if q.cur.events() > 0 && q.cur.size()+size > q.shape.batchBytes {
		q.handoff() // a batch stays within its bytes: one write each
	}
	return q.cur, true
}

// added ends a put: the event is in the batch, size bytes of it.
func (q *queue[B]) added(size int) {
	q.accepted++
	q.heldBytes.Add(int64(size))
	q.heldEvents.Add(1)
	if q.cur.size() >= q.shape.batchBytes || q.shape.batchEvents > 0 && q.cur.events() >= q.shape.batchEvents {
		q.handoff()
	}
	q.mu.Unlock()
}

// fits reports whether one more event of size bytes is within bounds.
func (q *queue[B]) fits(size int) bool {
	held := q.heldBytes.Load()
	if held == 0 {
		return true // alone, an event of any size
	}
	return held+int64(size) <= int64(q.shape.maxBytes) &&
		(q.shape.maxEvents == 0 || q.heldEvents.Load() < int64(q.shape.maxEvents))
}

// waitRoom hands the drainer what is queued and waits as the stall rule
// says for room for size bytes; q.mu is held.
func (q *queue[B]) waitRoom(size int) bool {
	q.handoff()
	timeout, ok := q.rule.wait()
	if !ok {
		return false
	}
	defer q.rule.stop()
	for {
		select {
		case <-q.room:
			if q.fits(size) {
				return true
			}
			q.handoff()
		case <-timeout:
			return false
		case <-q.abort:
			return false
		}
	}
}

// handoff passes the current batch to the drainer if a slot is free;
// q.mu is held. Otherwise the batch keeps filling: the bytes bound it.
func (q *queue[B]) handoff() {
	if q.cur.events() == 0 {
		return
	}
	select {
	case q.full <- q.cur:
		q.next()
	default:
	}
}

// next takes a fresh batch as the current one; q.mu is held.
func (q *queue[B]) next() {
	select {
	case b := <-q.free:
		q.cur = b
	default:
		q.cur = q.newBatch()
	}
}

// handoffWait passes the current batch to the drainer, waiting for a
// slot until Abort or deadline (nil: none); q.mu is held.
func (q *queue[B]) handoffWait(deadline <-chan struct{}) bool {
	if q.cur.events() == 0 {
		return true
	}
	select {
	case q.full <- q.cur:
		q.next()
		return true
	case <-q.abort:
	case <-deadline:
	}
	return false
}

// kick passes what is queued to the drainer without waiting, so that a
// quiet stream still reaches its reader promptly.
func (q *queue[B]) kick() {
	q.mu.Lock()
	if !q.ended {
		q.handoff()
	}
	q.mu.Unlock()
}

// batches is what the drainer ranges over; it ends after end.
func (q *queue[B]) batches() <-chan B { return q.full }

// done gives back a batch whose events the drainer wrote or counted.
func (q *queue[B]) done(b B) {
	q.release(b)
	q.finish(uint64(b.events()))
	q.recycle(b)
}

// release frees b's room in the queue: its bytes and events no longer
// count against the bounds.
func (q *queue[B]) release(b B) {
	q.heldBytes.Add(-int64(b.size()))
	q.heldEvents.Add(-int64(b.events()))
	select {
	case q.room <- struct{}{}:
	default:
	}
}

// recycle empties b for reuse.
func (q *queue[B]) recycle(b B) {
	b.reset()
	select {
	case q.free <- b:
	default:
	}
}

// finish records n more accepted events written or counted lost.
func (q *queue[B]) finish(n uint64) {
	q.fmu.Lock()
	if !q.abandoned && n > 0 {
		q.finished += n
		close(q.progress)
		q.progress = make(chan struct{})
	}
	q.fmu.Unlock()
}

// flush hands over what is queued and waits until every event accepted
// so far is finished, or until Abort or deadline (nil: none). It
// reports whether they were.
func (q *queue[B]) flush(deadline <-chan struct{}) bool {
	q.mu.Lock()
	if q.ended {
		q.mu.Unlock()
		return true
	}
	target := q.accepted
	ok := q.handoffWait(deadline)
	q.mu.Unlock()
	for ok {
		q.fmu.Lock()
		reached, progress := q.finished >= target || q.abandoned, q.progress
		q.fmu.Unlock()
		if reached {
			return true
		}
		select {
		case <-progress:
		case <-q.abort:
			ok = false
		case <-deadline:
			ok = false
		}
	}
	return false
}

// end hands over what is queued (waiting for a slot until Abort or
// deadline) and ends batches(); later events are counted lost. What
// could not be handed over is counted lost at stage output.
func (q *queue[B]) end(deadline <-chan struct{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.ended {
		return
	}
	if !q.handoffWait(deadline) {
		b := q.cur
		if q.book.add(0, uint64(b.events())) {
			q.finish(uint64(b.events()))
		}
		q.release(b)
		b.reset()
	}
	q.ended = true
	close(q.full)
}

// abandon stops waiting for a stalled drainer: every accepted event not
// yet finished is counted lost at stage output now, so that the totals
// add up even if the process exits with a write still blocked. Later
// events are lost too. It reports how many it counted, and false when
// the queue was abandoned before.
func (q *queue[B]) abandon() (uint64, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	pending, ok := q.book.abandon(q.accepted)
	if !ok {
		return 0, false
	}
	q.failed.Store(true)
	q.fmu.Lock()
	q.finished, q.abandoned = q.accepted, true
	close(q.progress)
	q.progress = make(chan struct{})
	q.fmu.Unlock()
	q.setErr(fmt.Errorf("output abandoned with %d events not written", pending))
	return pending, true
}

func (q *queue[B]) setErr(err error) {
	q.errMu.Lock()
	if q.err == nil {
		q.err = err
	}
	q.errMu.Unlock()
}

func (q *queue[B]) error() error {
	q.errMu.Lock()
	defer q.errMu.Unlock()
	return q.err
}

// byteBatch is a run of encoded events (lines, messages) in one buffer.
type byteBatch struct {
	buf  []byte
	ends []int // where each event ends in buf: a partial write is counted exactly
	keep int   // the buffer's capacity to keep for reuse
}

// byteBatches makes batches of n bytes.
func byteBatches(n int) func() *byteBatch {
	return func() *byteBatch {
		return &byteBatch{buf: make([]byte, 0, n), ends: make([]int, 0, 64), keep: n}
	}
}

func (b *byteBatch) add(p []byte) {
	b.buf = append(b.buf, p...)
	b.ends = append(b.ends, len(b.buf))
}

func (b *byteBatch) events() int { return len(b.ends) }
func (b *byteBatch) size() int   { return len(b.buf) }

// reset keeps the buffers, but one an event larger than a batch grew:
// it would be held for good.
func (b *byteBatch) reset() {
	if cap(b.buf) > b.keep {
		b.buf = make([]byte, 0, b.keep)
	}
	b.buf, b.ends = b.buf[:0], b.ends[:0]
}

// event returns event i of the batch.
func (b *byteBatch) event(i int) []byte {
	start := 0
	if i > 0 {
		start = b.ends[i-1]
	}
	return b.buf[start:b.ends[i]]
}
