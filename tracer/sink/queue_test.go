// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"bytes"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// gateWriter blocks every write until open is closed, then writes to buf;
// after failAfter bytes it fails with err (a reader that went away).
type gateWriter struct {
	open      chan struct{}
	mu        sync.Mutex
	buf       bytes.Buffer
	failAfter int
	err       error
}

func (w *gateWriter) Write(p []byte) (int, error) {
	<-w.open
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil && w.buf.Len()+len(p) > w.failAfter {
		n := max(w.failAfter-w.buf.Len(), 0)
		w.buf.Write(p[:n])
		return n, w.err
	}
	return w.buf.Write(p)
}

func (w *gateWriter) lines() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Count(w.buf.String(), "\n")
}

func sinkLoss(s tracer.Sink) tracer.OutputLoss { return s.(tracer.LossReporter).Loss() }

// A reader that does not read must cost events, each counted, and never
// make the producer wait: written + lost == produced.
func TestQueueDropsAndCountsWhenStalled(t *testing.T) {
	w := &gateWriter{open: make(chan struct{})}
	s := NewJSONSink(w, OutputOptions{QueueBytes: 1 << 20})
	e := &tracer.Event{Backend: "ebpf", Type: vocab.TypeSignal, PID: 1, Comm: "storm", Signal: 10, Syscall: "kill"}
	const n = 100_000
	done := make(chan struct{})
	go func() {
		for i := 0; i < n; i++ {
			_ = s.Write(e)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the producer waited on a stalled writer")
	}
	if l := sinkLoss(s); l.Queue == 0 {
		t.Fatalf("queue loss %d with a stalled writer and %d events", l.Queue, n)
	}
	close(w.open)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	l := sinkLoss(s)
	if got := uint64(w.lines()) + l.Queue + l.Output; got != n {
		t.Fatalf("written %d + lost queue %d + lost output %d = %d, want %d", w.lines(), l.Queue, l.Output, got, n)
	}
	if l.Output != 0 {
		t.Fatalf("output loss %d without a write error", l.Output)
	}
}

// slowWriter takes its time over every write, but returns: a slow disk.
type slowWriter struct {
	delay time.Duration
	n     int
}

func (w *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(w.delay)
	w.n += bytes.Count(p, []byte{'\n'})
	return len(p), nil
}

// In drop mode a writer that makes progress is waited for, however slow:
// the backend's kernel buffer holds what comes meanwhile. Only a stalled
// one (TestQueueDropsAndCountsWhenStalled) costs events here.
func TestQueueWaitsForASlowWriter(t *testing.T) {
	w := &slowWriter{delay: 20 * time.Millisecond}
	s := NewJSONSink(w, OutputOptions{QueueBytes: 2 * chunkBytes})
	e := &tracer.Event{Backend: "ebpf", Type: vocab.TypeSignal, PID: 1, Comm: "storm", Signal: 10, Syscall: "kill"}
	const n = 20_000 // about 12 chunks: six times the queue
	for range n {
		_ = s.Write(e)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if l := sinkLoss(s); l.Queue != 0 || l.Output != 0 || w.n != n {
		t.Fatalf("written %d, lost queue %d, output %d; want %d written", w.n, l.Queue, l.Output, n)
	}
}

// A write error (EPIPE) counts every event not written, calls OnError once,
// and the events after it are counted too.
func TestQueueCountsWriteErrorExactly(t *testing.T) {
	w := &gateWriter{open: make(chan struct{}), failAfter: 300_000, err: syscall.EPIPE}
	close(w.open)
	var calls int
	var mu sync.Mutex
	s := NewTextSink(w, OutputOptions{Backpressure: tracer.BackpressureBlock, OnError: func(err error) {
		mu.Lock()
		calls++
		mu.Unlock()
		if !errors.Is(err, syscall.EPIPE) {
			t.Errorf("OnError(%v), want EPIPE", err)
		}
	}})
	e := &tracer.Event{Backend: "audit", Type: vocab.TypeExec, PID: 7, Comm: "sh", Filename: "/bin/true", Argv: []string{"true"}}
	const n = 20_000
	for i := 0; i < n; i++ {
		_ = s.Write(e)
	}
	if err := s.Close(); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("Close = %v, want EPIPE", err)
	}
	l := sinkLoss(s)
	// The header line is not an event.
	written := uint64(w.lines() - 1)
	if written+l.Output+l.Queue != n || l.Queue != 0 {
		t.Fatalf("written %d + lost output %d + queue %d, want %d and no queue loss in block mode", written, l.Output, l.Queue, n)
	}
	if calls != 1 {
		t.Fatalf("OnError called %d times, want 1", calls)
	}
}

// Abort stops waiting for a writer that never returns; what was queued is
// counted lost.
func TestQueueAbortCountsPending(t *testing.T) {
	w := &gateWriter{open: make(chan struct{})}
	abort := make(chan struct{})
	s := NewJSONSink(w, OutputOptions{Abort: abort})
	e := &tracer.Event{Backend: "ebpf", Type: vocab.TypeFork, PID: 1, Comm: "x", Syscall: "clone"}
	for i := 0; i < 1000; i++ {
		_ = s.Write(e)
	}
	time.AfterFunc(50*time.Millisecond, func() { close(abort) })
	if err := s.Close(); err == nil {
		t.Fatal("Close of an abandoned output returned nil")
	}
	if l := sinkLoss(s); l.Output != 1000 {
		t.Fatalf("lost output %d, want 1000", l.Output)
	}
}

func TestQueueFlushWritesEverything(t *testing.T) {
	var buf bytes.Buffer
	s := NewJSONSink(&buf)
	e := &tracer.Event{Backend: "ebpf", Type: vocab.TypeFork, PID: 1, Comm: "x", Syscall: "clone"}
	for i := 0; i < 5000; i++ {
		_ = s.Write(e)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(buf.String(), "\n"); got != 5000 {
		t.Fatalf("%d lines after Flush, want 5000", got)
	}
	_ = s.Close()
}

func BenchmarkJSONSinkQueued(b *testing.B) {
	s := NewJSONSink(io.Discard)
	e := &tracer.Event{Backend: "ebpf", Type: vocab.TypeSignal, PID: 4242, Comm: "storm", UID: 0, AUID: vocab.UnsetID,
		TargetPID: 4242, Signal: 10, Syscall: "kill", Time: time.Now()}
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Write(e)
	}
	_ = s.Close()
}

func BenchmarkAppendJSON(b *testing.B) {
	e := &tracer.Event{Backend: "ebpf", Type: vocab.TypeSignal, PID: 4242, Comm: "storm", UID: 0, AUID: vocab.UnsetID,
		TargetPID: 4242, Signal: 10, Syscall: "kill", Time: time.Now()}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendJSON(buf[:0], e)
	}
}

// TestOneQueueType: every destination queues through queue[B]: no other
// type of the package holds a stall rule or a loss book of its own (the
// file's, the daemons' and OTLP's queues were three, each with both).
func TestOneQueueType(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var holders []string
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return false
			}
			for _, fld := range st.Fields.List {
				if id, ok := fld.Type.(*ast.Ident); ok && (id.Name == "stallRule" || id.Name == "lossBook") {
					holders = append(holders, ts.Name.Name+"."+id.Name)
				}
			}
			return false
		})
	}
	slices.Sort(holders)
	holders = slices.Compact(holders)
	if want := []string{"queue.lossBook", "queue.stallRule"}; !slices.Equal(holders, want) {
		t.Errorf("types holding a stall rule or a loss book: %v, want %v alone", holders, want)
	}
}

// TestQueueBatchesAndBounds drives queue[B] alone: a batch goes to the
// drainer at its size, kick hands over a partial one, the bytes bound
// holds in drop mode with a stalled drainer, and flush waits for every
// accepted event to be finished.
func TestQueueBatchesAndBounds(t *testing.T) {
	q := newQueue(OutputOptions{}, queueShape{maxBytes: 1000, batchBytes: 100, slots: 100, patience: 10 * time.Millisecond}, byteBatches(100))
	ten := bytes.Repeat([]byte("x"), 10)
	put := func() bool {
		b, ok := q.put(len(ten))
		if ok {
			b.add(ten)
			q.added(len(ten))
		}
		return ok
	}
	for range 10 {
		put()
	}
	b := <-q.batches()
	if b.events() != 10 || b.size() != 100 {
		t.Fatalf("first batch %d events, %d bytes; want 10 and 100", b.events(), b.size())
	}
	q.book.book(uint64(b.events()), 0, nil, false)
	q.done(b)
	put()
	q.kick()
	if b := <-q.batches(); b.events() != 1 {
		t.Fatalf("kicked batch %d events, want 1", b.events())
	} else {
		q.book.book(1, 0, nil, false)
		q.done(b)
	}
	// Nobody drains now, and a write is under way: past 1000 bytes held,
	// puts are dropped after the patience.
	q.rule.writing()
	accepted := 0
	for range 200 {
		if put() {
			accepted++
		}
	}
	if accepted != 100 || q.heldBytes.Load() != 1000 {
		t.Fatalf("accepted %d of 200 with 1000 bytes bound, holding %d bytes", accepted, q.heldBytes.Load())
	}
	if l := q.book.loss(); l.Queue != 100 {
		t.Fatalf("queue loss %d, want 100", l.Queue)
	}
	q.rule.wrote()
	done := make(chan bool)
	go func() { done <- q.flush(nil) }()
	n := 0
	for n < accepted {
		b := <-q.batches()
		n += b.events()
		q.book.book(uint64(b.events()), 0, nil, false)
		q.done(b)
	}
	if !<-done {
		t.Fatal("flush did not see every event finished")
	}
	q.end(nil)
	if _, open := <-q.batches(); open {
		t.Fatal("batches still open after end")
	}
	if put() || q.book.loss().Output != 1 {
		t.Fatalf("a put after end was taken, or not counted lost at output: %+v", q.book.loss())
	}
}
