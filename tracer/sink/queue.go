// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tracer-dev/tracer/tracer"
)

// OutputOptions tune a sink's output queue.
type OutputOptions struct {
	Backpressure tracer.Backpressure
	// QueueBytes bounds the encoded events waiting for the writer (0: 16 MiB).
	QueueBytes int
	// OnError is called once, from the writer goroutine, when the reader
	// went away (EPIPE): the caller's cue to shut down. Events not written
	// are counted lost at stage output.
	OnError func(error)
	// OnFailing is called from the writer goroutine when writes start
	// failing with any other error (a full disk, a quota), and with nil
	// when one succeeds again. Such a failure ends nothing: the events of
	// each failed write are counted lost at stage output, and the next
	// write tries again.
	OnFailing func(error)
	// Abort, when closed, makes Flush and Close stop waiting for a stalled
	// writer; what was still queued is counted lost at stage output.
	Abort <-chan struct{}
	// Time is how a text line shows its event's time (--time).
	Time TimeMode
}

const (
	chunkBytes        = 256 << 10
	defaultQueueBytes = 16 << 20
	// stallAfter: a write (or a send to a daemon) that has not returned
	// for this long means the output stalled (a pipe nobody reads): a full
	// queue then drops at once, where it waits for a writer that makes
	// progress.
	stallAfter = 250 * time.Millisecond
)

// chunk is a run of encoded events handed to the writer in one write.
type chunk struct {
	buf  []byte
	ends []int // where each event ends in buf, to count a partial write exactly
	// flushed, when set, marks a flush request: the writer closes it once
	// everything queued before it is written.
	flushed chan struct{}
}

// outQueue is the bounded queue between the goroutine that encodes events
// (the backend's reader) and a goroutine that writes them. The encoder
// never waits on the output in drop mode: a pipe nobody reads, `less`, or
// a slow disk costs events, each one counted, never the node's time.
type outQueue struct {
	w     io.Writer
	c     io.Closer
	opts  OutputOptions
	mu    sync.Mutex
	cur   *chunk
	full  chan *chunk
	free  chan *chunk
	done  chan struct{}
	fail  atomic.Bool // a write failed or the output was abandoned
	ended bool
	rule  stallRule // its timer: mu guards it
	book  lossBook

	accepted uint64 // events put in a chunk; mu guards it (one locked op less per event)
	errMu    sync.Mutex
	err      error
}

func newOutQueue(w io.Writer, opts OutputOptions) *outQueue {
	if opts.QueueBytes <= 0 {
		opts.QueueBytes = defaultQueueBytes
	}
	n := max(opts.QueueBytes/chunkBytes, 1)
	q := &outQueue{
		w: w, opts: opts,
		rule: stallRule{block: opts.Backpressure == tracer.BackpressureBlock, patience: stallAfter},
		book: lossBook{onFailing: opts.OnFailing},
		cur:  newChunk(),
		full: make(chan *chunk, n),
		free: make(chan *chunk, n+2),
		done: make(chan struct{}),
	}
	// Closing stdout would hide later messages; close only files we were given.
	if c, ok := w.(io.Closer); ok && w != io.Writer(os.Stdout) && w != io.Writer(os.Stderr) {
		q.c = c
	}
	go q.writer()
	return q
}

func newChunk() *chunk {
	return &chunk{buf: make([]byte, 0, chunkBytes), ends: make([]int, 0, 1024)}
}

// put queues one encoded event.
func (q *outQueue) put(b []byte) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.ended || q.fail.Load() {
		q.book.late()
		return
	}
	if len(q.cur.buf) > 0 && len(q.cur.buf)+len(b) > chunkBytes {
		wait := waitProgress
		if q.opts.Backpressure == tracer.BackpressureBlock {
			wait = waitAbort
		}
		if !q.handoff(wait) {
			q.book.dropped()
			return
		}
	}
	q.cur.buf = append(q.cur.buf, b...)
	q.cur.ends = append(q.cur.ends, len(q.cur.buf))
	q.accepted++
}

// How handoff waits for room in a full queue.
type waitMode uint8

const (
	noWait       waitMode = iota // kick
	waitProgress                 // drop mode: while the writer makes progress
	waitAbort                    // block mode, flush: until Abort
)

// handoff passes the current chunk to the writer; q.mu is held. It
// reports false when the queue stayed full.
func (q *outQueue) handoff(wait waitMode) bool {
	if len(q.cur.ends) == 0 {
		return true
	}
	select {
	case q.full <- q.cur:
	default:
		if !q.waitRoom(wait) {
			return false
		}
	}
	select {
	case c := <-q.free:
		q.cur = c
	default:
		q.cur = newChunk()
	}
	return true
}

// waitRoom waits for room in the full queue as wait says, and queues the
// current chunk; q.mu is held.
func (q *outQueue) waitRoom(wait waitMode) bool {
	var timeout <-chan time.Time
	switch wait {
	case noWait:
		return false
	case waitProgress:
		t, ok := q.rule.wait()
		if !ok {
			return false
		}
		defer q.rule.stop()
		timeout = t
	}
	select {
	case q.full <- q.cur:
		return true
	case <-timeout:
		return false
	case <-q.opts.Abort:
		return false
	}
}

// kick passes what is buffered to the writer without waiting, so a quiet
// stream still reaches its reader promptly.
func (q *outQueue) kick() {
	q.mu.Lock()
	if !q.ended {
		q.handoff(noWait)
	}
	q.mu.Unlock()
}

// flush waits until every event accepted so far is written or counted
// lost, or until Abort.
func (q *outQueue) flush() error {
	q.mu.Lock()
	if q.ended {
		q.mu.Unlock()
		return q.error()
	}
	ok := q.handoff(waitAbort)
	marker := &chunk{flushed: make(chan struct{})}
	if ok {
		select {
		case q.full <- marker:
		case <-q.opts.Abort:
			ok = false
		}
	}
	q.mu.Unlock()
	if ok {
		select {
		case <-marker.flushed:
		case <-q.opts.Abort:
			ok = false
		}
	}
	if !ok {
		q.abandon()
	}
	return q.error()
}

// close flushes, stops the writer and closes the file.
func (q *outQueue) close() error {
	err := q.flush()
	q.mu.Lock()
	if !q.ended {
		q.ended = true
		close(q.full)
	}
	q.mu.Unlock()
	select {
	case <-q.done:
	case <-q.opts.Abort:
		q.abandon()
	}
	if q.c != nil {
		if cerr := q.c.Close(); err == nil && !q.fail.Load() {
			err = cerr
		}
	}
	return err
}

// abandon stops waiting for a stalled writer: every accepted event that is
// not yet written is counted lost at stage output, now, so the totals add
// up even if the process exits with the write still blocked.
func (q *outQueue) abandon() {
	q.mu.Lock()
	defer q.mu.Unlock()
	pending, ok := q.book.abandon(q.accepted)
	if !ok {
		return
	}
	q.fail.Store(true)
	q.setErr(fmt.Errorf("output abandoned with %d events not written", pending))
}

func (q *outQueue) writer() {
	defer close(q.done)
	for c := range q.full {
		if c.flushed != nil {
			close(c.flushed)
			continue
		}
		if q.fail.Load() {
			q.book.lose(uint64(len(c.ends)))
		} else {
			q.rule.writing()
			n, err := q.w.Write(c.buf)
			q.rule.wrote()
			q.count(c, n, err)
		}
		q.recycle(c)
	}
}

// count books one chunk's write: events wholly written before a failure
// count as written, the rest as lost.
func (q *outQueue) count(c *chunk, n int, err error) {
	if err == nil {
		q.book.book(uint64(len(c.ends)), 0, nil, true)
		return
	}
	k := sort.SearchInts(c.ends, n+1)
	// A full disk or a quota is counted, and the next write tries again;
	// the reader gone (EPIPE) ends the output.
	epipe := errors.Is(err, syscall.EPIPE)
	if !q.book.book(uint64(k), uint64(len(c.ends)-k), err, !epipe) {
		return // abandon counted this chunk already
	}
	if k < len(c.ends) && n > 0 {
		good := 0
		if k > 0 {
			good = c.ends[k-1]
		}
		q.untear(n - good)
	}
	if !epipe {
		return
	}
	q.fail.Store(true)
	q.setErr(err)
	if q.opts.OnError != nil {
		q.opts.OnError(err)
	}
}

// untear takes back the torn bytes of an event a failed write left half
// written in a file, so that writing resumes on a whole line. A pipe
// cannot take them back; its reader sees the torn line end.
func (q *outQueue) untear(torn int) {
	f, ok := q.w.(*os.File)
	if !ok {
		return
	}
	if off, err := f.Seek(-int64(torn), io.SeekCurrent); err == nil {
		_ = f.Truncate(off)
	}
}

func (q *outQueue) recycle(c *chunk) {
	c.buf, c.ends = c.buf[:0], c.ends[:0]
	select {
	case q.free <- c:
	default:
	}
}

func (q *outQueue) setErr(err error) {
	q.errMu.Lock()
	if q.err == nil {
		q.err = err
	}
	q.errMu.Unlock()
}

func (q *outQueue) error() error {
	q.errMu.Lock()
	defer q.errMu.Unlock()
	return q.err
}

// bufSink is the queued writer both formats share. Write is called from
// one goroutine; Flush, Kick and Close may be called from another.
type bufSink struct {
	q   *outQueue
	buf []byte
}

func (s *bufSink) init(w io.Writer, opts []OutputOptions) {
	var o OutputOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	s.q, s.buf = newOutQueue(w, o), make([]byte, 0, 1024)
}

func (s *bufSink) write(b []byte) error {
	s.q.put(b)
	return nil
}

// Flush waits until every event written so far reached the output.
func (s *bufSink) Flush() error { return s.q.flush() }

// Kick passes buffered events to the writer without waiting.
func (s *bufSink) Kick() { s.q.kick() }

// Close flushes and closes the output (not stdout).
func (s *bufSink) Close() error { return s.q.close() }

// Loss reports events dropped by a full queue and events not written.
// RotationsFailed is the failed rotations of the file the sink writes
// (a RotatingFile's), 0 for any other output.
func (s *bufSink) RotationsFailed() uint64 {
	if r, ok := s.q.w.(tracer.RotationReporter); ok {
		return r.RotationsFailed()
	}
	return 0
}

func (s *bufSink) Loss() tracer.OutputLoss {
	return s.q.book.loss()
}
