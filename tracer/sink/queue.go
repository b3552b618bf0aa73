// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"errors"
	"io"
	"os"
	"sort"
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
	// chunkBytes: a file's batch goes to the writer when it holds this
	// much (or on a kick), one write each.
	chunkBytes        = 256 << 10
	defaultQueueBytes = 16 << 20
	// stallAfter: a write (or a send to a daemon) that has not returned
	// for this long means the output stalled (a pipe nobody reads): a full
	// queue then drops at once, where it waits for a writer that makes
	// progress.
	stallAfter = 250 * time.Millisecond
)

// fileWriter drains a queue of encoded events into a file or a pipe, a
// write per batch. The encoder never waits on the output in drop mode: a
// pipe nobody reads, `less`, or a slow disk costs events, each one
// counted, never the node's time.
type fileWriter struct {
	q    *queue[*byteBatch]
	w    io.Writer
	c    io.Closer
	opts OutputOptions
	done chan struct{}
}

func newFileWriter(w io.Writer, opts OutputOptions) *fileWriter {
	if opts.QueueBytes <= 0 {
		opts.QueueBytes = defaultQueueBytes
	}
	f := &fileWriter{
		w: w, opts: opts, done: make(chan struct{}),
		q: newQueue(opts, queueShape{
			maxBytes: opts.QueueBytes, batchBytes: chunkBytes,
			slots: max(opts.QueueBytes/chunkBytes, 1), patience: stallAfter,
		}, byteBatches(chunkBytes)),
	}
	// Closing stdout would hide later messages; close only files we were given.
	if c, ok := w.(io.Closer); ok && w != io.Writer(os.Stdout) && w != io.Writer(os.Stderr) {
		f.c = c
	}
	go f.run()
	return f
}

// put queues one encoded event.
func (f *fileWriter) put(p []byte) {
	if b, ok := f.q.put(len(p)); ok {
		b.add(p)
		f.q.added(len(p))
	}
}

// flush waits until every event accepted so far is written or counted
// lost, or until Abort.
func (f *fileWriter) flush() error {
	if !f.q.flush(nil) {
		f.q.abandon()
	}
	return f.q.error()
}

// close flushes, stops the writer and closes the file.
func (f *fileWriter) close() error {
	err := f.flush()
	f.q.end(nil)
	select {
	case <-f.done:
	case <-f.opts.Abort:
		f.q.abandon()
	}
	if f.c != nil {
		if cerr := f.c.Close(); err == nil && !f.q.failed.Load() {
			err = cerr
		}
	}
	return err
}

func (f *fileWriter) run() {
	defer close(f.done)
	for b := range f.q.batches() {
		if f.q.failed.Load() {
			f.q.book.lose(uint64(b.events()))
		} else {
			f.q.rule.writing()
			n, err := f.w.Write(b.buf)
			f.q.rule.wrote()
			f.count(b, n, err)
		}
		f.q.done(b)
	}
}

// count books one batch's write: events wholly written before a failure
// count as written, the rest as lost.
func (f *fileWriter) count(b *byteBatch, n int, err error) {
	if err == nil {
		f.q.book.book(uint64(b.events()), 0, nil, true)
		return
	}
	k := sort.SearchInts(b.ends, n+1)
	// A full disk or a quota is counted, and the next write tries again;
	// the reader gone (EPIPE) ends the output.
	epipe := errors.Is(err, syscall.EPIPE)
	if !f.q.book.book(uint64(k), uint64(len(b.ends)-k), err, !epipe) {
		return // abandon counted this batch already
	}
	if k < len(b.ends) && n > 0 {
		good := 0
		if k > 0 {
			good = b.ends[k-1]
		}
		f.untear(n - good)
	}
	if !epipe {
		return
	}
	f.q.failed.Store(true)
	f.q.setErr(err)
	if f.opts.OnError != nil {
		f.opts.OnError(err)
	}
}

// untear takes back the torn bytes of an event a failed write left half
// written in a file, so that writing resumes on a whole line. A pipe
// cannot take them back; its reader sees the torn line end.
func (f *fileWriter) untear(torn int) {
	file, ok := f.w.(*os.File)
	if !ok {
		return
	}
	if off, err := file.Seek(-int64(torn), io.SeekCurrent); err == nil {
		_ = file.Truncate(off)
	}
}

// bufSink is the queued writer both formats share. Write is called from
// one goroutine; Flush, Kick and Close may be called from another.
type bufSink struct {
	q   *fileWriter
	buf []byte
}

func (s *bufSink) init(w io.Writer, opts []OutputOptions) {
	var o OutputOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	s.q, s.buf = newFileWriter(w, o), make([]byte, 0, 1024)
}

func (s *bufSink) write(b []byte) error {
	s.q.put(b)
	return nil
}

// Flush waits until every event written so far reached the output.
func (s *bufSink) Flush() error { return s.q.flush() }

// Kick passes buffered events to the writer without waiting.
func (s *bufSink) Kick() { s.q.q.kick() }

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
	return s.q.q.book.loss()
}
