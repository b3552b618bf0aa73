// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"runtime"
	"testing"
)

// stalledTransport takes the first batch and never returns from sending
// it until released: a daemon that stopped reading.
type stalledTransport struct{ release chan struct{} }

func (t *stalledTransport) send(msgs [][]byte) (int, error) {
	<-t.release
	return len(msgs), nil
}
func (t *stalledTransport) reset()       {}
func (t *stalledTransport) close() error { return nil }

// A flood of large messages into a stalled daemon: the queue holds at
// most its bytes (not 8,192 messages of any size), what it cannot hold is
// lost at stage queue, the rest at stage output when Close gives up, and
// the heap stays about the queue's size.
func TestSenderQueueBoundedByBytes(t *testing.T) {
	const (
		msgBytes   = 32 << 10
		n          = 2000 // 64 MB of messages
		queueBytes = 1 << 20
	)
	abort := make(chan struct{})
	tr := &stalledTransport{release: make(chan struct{})}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	s := newSender(tr, OutputOptions{QueueBytes: queueBytes, Abort: abort})
	most := int64(0)
	for range n {
		b := make([]byte, msgBytes)
		s.put(b)
		most = max(most, s.q.heldBytes.Load())
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if most > queueBytes+msgBytes {
		t.Errorf("queued up to %d bytes, bound %d", most, queueBytes)
	}
	if grew > 8<<20 {
		t.Errorf("heap grew %d MB while the daemon stalled (queue bound %d MB)", grew>>20, queueBytes>>20)
	}
	close(abort)
	_ = s.close()
	close(tr.release)
	l := s.loss()
	if l.Queue == 0 || s.q.book.written.Load()+l.Queue+l.Output != n {
		t.Errorf("sent %d + lost %+v != %d put", s.q.book.written.Load(), l, n)
	}
	t.Logf("queued at most %d KiB; heap grew %d KiB; lost %d at queue, %d at output", most>>10, grew>>10, l.Queue, l.Output)
}
