// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/tracer-dev/tracer/tracer"
)

// A transport delivers encoded messages to a daemon (journald, a syslog
// server). It is used from the sender's goroutine alone.
type transport interface {
	// send delivers msgs in order and returns how many it delivered;
	// the others are lost. err is why one was not (nil: all were).
	send(msgs [][]byte) (int, error)
	// reset drops the connection: the next send dials anew, at once.
	reset()
	close() error
}

const (
	// A daemon's batch goes to the sender at batchMax messages or
	// daemonBatchBytes, or on a kick; one send takes it.
	batchMax         = 256
	daemonBatchBytes = 64 << 10
)

// sender drains a queue of encoded messages to a daemon, a send per
// batch. Every event is counted once: sent, lost at stage queue (the
// queue was full), or lost at stage output (the daemon was down or
// refused it).
type sender struct {
	t      transport
	q      *queue[*byteBatch]
	opts   OutputOptions
	done   chan struct{}
	msgs   [][]byte    // run's
	redial atomic.Bool // Reconnect asked for a new connection
}

func newSender(t transport, opts OutputOptions) *sender {
	if opts.QueueBytes <= 0 {
		opts.QueueBytes = defaultQueueBytes
	}
	s := &sender{
		t: t, opts: opts, done: make(chan struct{}), msgs: make([][]byte, 0, batchMax),
		q: newQueue(opts, queueShape{
			maxBytes: opts.QueueBytes, batchBytes: daemonBatchBytes, batchEvents: batchMax,
			slots: max(opts.QueueBytes/daemonBatchBytes, 1), patience: stallAfter,
		}, byteBatches(daemonBatchBytes)),
	}
	go s.run()
	return s
}

// put queues message m. In drop mode it waits for room only while the
// daemon takes messages, and at most stallAfter.
func (s *sender) put(m []byte) {
	if b, ok := s.q.put(len(m)); ok {
		b.add(m)
		s.q.added(len(m))
	}
}

func (s *sender) run() {
	defer close(s.done)
	for b := range s.q.batches() {
		s.msgs = s.msgs[:0]
		for i := range b.events() {
			s.msgs = append(s.msgs, b.event(i))
		}
		if s.redial.Swap(false) {
			s.t.reset()
		}
		s.q.rule.writing()
		n, err := s.t.send(s.msgs)
		s.q.rule.wrote()
		s.q.book.book(uint64(n), uint64(len(s.msgs)-n), err, true)
		clear(s.msgs) // let the batch's buffer go with it
		s.q.done(b)
	}
}

// kick hands what is queued to the sender now.
func (s *sender) kick() { s.q.kick() }

// flush waits until every message queued so far was sent or counted
// lost, or until Abort.
func (s *sender) flush() error {
	if !s.q.flush(nil) {
		s.q.abandon()
	}
	return nil
}

// close flushes, stops the sender and closes the transport. A daemon
// that is down is no error: what it did not take is counted lost.
func (s *sender) close() error {
	_ = s.flush()
	s.q.end(nil)
	select {
	case <-s.done:
		return s.t.close()
	case <-s.opts.Abort:
		s.q.abandon()
		return nil
	}
}

// reconnect makes the sender dial the daemon anew before its next send.
func (s *sender) reconnect() { s.redial.Store(true) }

func (s *sender) loss() tracer.OutputLoss {
	return s.q.book.loss()
}

// link keeps one connection to a daemon: it dials on demand, and after a
// failure waits before it dials again (100 ms, doubling up to 5 s), so
// that a daemon that is down costs one failed dial per wait, not one per
// event; meanwhile sends fail at once.
type link struct {
	dial    func() (net.Conn, error)
	conn    net.Conn
	retryAt time.Time
	backoff time.Duration
	lastErr error
}

const (
	backoffMin = 100 * time.Millisecond
	backoffMax = 5 * time.Second
	// sendTimeout bounds one send to a daemon that stopped reading: the
	// message is lost, and the link waits before it tries again.
	sendTimeout = time.Second
)

// errDown wraps the error that took a link down while it waits to retry.
var errDown = errors.New("daemon unreachable")

func (l *link) get() (net.Conn, error) {
	if l.conn != nil {
		return l.conn, nil
	}
	if time.Now().Before(l.retryAt) {
		return nil, l.lastErr
	}
	c, err := l.dial()
	if err != nil {
		l.fail(err)
		return nil, l.lastErr
	}
	l.conn = c
	return c, nil
}

// fail closes the connection and starts waiting before the next dial.
func (l *link) fail(err error) {
	if l.conn != nil {
		_ = l.conn.Close()
		l.conn = nil
	}
	l.backoff = min(max(2*l.backoff, backoffMin), backoffMax)
	l.retryAt = time.Now().Add(l.backoff)
	l.lastErr = fmt.Errorf("%w: %w", errDown, err)
}

// ok notes a delivered message: the next failure waits the least again.
func (l *link) ok() { l.backoff = 0 }

// reset closes the connection and forgets the wait: the next get dials.
func (l *link) reset() {
	_ = l.close()
	l.backoff, l.retryAt = 0, time.Time{}
}

// sendEach sends msgs one write each over the link, within sendTimeout
// each. write sends m on c: an error it returns as lost loses m alone, any
// other error takes the link down and ends the batch. It returns how many
// were sent and the last error.
func (l *link) sendEach(msgs [][]byte, write func(c net.Conn, m []byte) (lost, err error)) (int, error) {
	sent := 0
	var lastErr error
	for _, m := range msgs {
		c, err := l.get()
		if err != nil {
			return sent, err
		}
		_ = c.SetWriteDeadline(time.Now().Add(sendTimeout))
		lost, err := write(c, m)
		if lost != nil {
			lastErr = lost
			continue
		}
		if err != nil {
			l.fail(err)
			return sent, l.lastErr
		}
		l.ok()
		sent++
	}
	return sent, lastErr
}

func (l *link) close() error {
	if l.conn == nil {
		return nil
	}
	err := l.conn.Close()
	l.conn = nil
	return err
}
