// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"errors"
	"fmt"
	"net"
	"sync"
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
	// queueMessages bounds the messages waiting for the daemon, and
	// OutputOptions.QueueBytes their bytes (0: defaultQueueBytes): 8,192
	// messages of the largest events would be hundreds of MiB.
	queueMessages = 8192
	// keepBuf: buffers up to this size are reused; a large message's
	// buffer is not kept in the free list, which would hold it for good.
	keepBuf = 4 << 10
	// batchMax is how many queued messages one send takes.
	batchMax = 256
)

// item is a queued message, or a flush request (flushed set): the sender
// closes flushed once everything queued before it was sent or counted.
type item struct {
	b       []byte
	flushed chan struct{}
}

// sender is the bounded queue between the goroutine that writes events
// (the pipeline's: it never waits on the daemon in drop mode) and the
// goroutine that sends them. Every event is counted once: sent, lost at
// stage queue (the queue was full), or lost at stage output (the daemon
// was down or refused it).
type sender struct {
	t    transport
	opts OutputOptions
	q    chan item
	free chan []byte
	done chan struct{}
	// queued is the bytes of the messages queued or being sent, at most
	// maxBytes (one message alone may be more); room wakes a put waiting
	// for bytes to go.
	queued   atomic.Int64
	maxBytes int64
	room     chan struct{}

	mu     sync.Mutex // orders Write and Close
	closed bool
	rule   stallRule // its timer: mu guards it
	book   lossBook

	accepted atomic.Uint64
	redial   atomic.Bool // Reconnect asked for a new connection
}

func newSender(t transport, opts OutputOptions) *sender {
	if opts.QueueBytes <= 0 {
		opts.QueueBytes = defaultQueueBytes
	}
	s := &sender{
		t: t, opts: opts,
		rule:     stallRule{block: opts.Backpressure == tracer.BackpressureBlock, patience: stallAfter},
		book:     lossBook{onFailing: opts.OnFailing},
		q:        make(chan item, queueMessages),
		free:     make(chan []byte, queueMessages),
		done:     make(chan struct{}),
		maxBytes: int64(opts.QueueBytes),
		room:     make(chan struct{}, 1),
	}
	go s.run()
	return s
}

// buf returns a buffer for the next message.
func (s *sender) buf() []byte {
	select {
	case b := <-s.free:
		return b[:0]
	default:
		return make([]byte, 0, 1024)
	}
}

// put queues message b (from buf). In drop mode it waits for room only
// while the daemon takes messages, and at most stallAfter.
func (s *sender) put(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.book.late()
		return
	}
	it := item{b: b}
	// Counted before the sender can see it: abandon's sum never goes below zero.
	s.accepted.Add(1)
	if s.tryQueue(it) {
		return
	}
	timeout, ok := s.rule.wait()
	if !ok {
		s.dropped()
		return
	}
	defer s.rule.stop()
	for {
		select {
		case <-s.room:
			if s.tryQueue(it) {
				return
			}
		case <-timeout:
			s.dropped()
			return
		case <-s.opts.Abort:
			s.dropped()
			return
		}
	}
}

// tryQueue queues it if the queue has room for one more message and its
// bytes; a message larger than the bound goes alone into an empty queue.
func (s *sender) tryQueue(it item) bool {
	n := int64(len(it.b))
	if q := s.queued.Load(); q > 0 && q+n > s.maxBytes {
		return false
	}
	s.queued.Add(n)
	select {
	case s.q <- it:
		return true
	default:
		s.queued.Add(-n)
		return false
	}
}

// dropped counts a message put could not queue.
func (s *sender) dropped() {
	s.accepted.Add(^uint64(0))
	s.book.dropped()
}

func (s *sender) run() {
	defer close(s.done)
	batch := make([]item, 0, batchMax)
	msgs := make([][]byte, 0, batchMax)
	for it := range s.q {
		batch = append(batch[:0], it)
	more:
		for len(batch) < batchMax && it.flushed == nil {
			select {
			case it = <-s.q:
				batch = append(batch, it)
			default:
				break more
			}
		}
		msgs = msgs[:0]
		for _, it := range batch {
			if it.flushed == nil {
				msgs = append(msgs, it.b)
			}
		}
		if s.redial.Swap(false) {
			s.t.reset()
		}
		if len(msgs) > 0 {
			s.rule.writing()
			n, err := s.t.send(msgs)
			s.rule.wrote()
			s.count(len(msgs), n, err)
		}
		var n int64
		for _, it := range batch {
			if it.flushed != nil {
				close(it.flushed)
				continue
			}
			n += int64(len(it.b))
			if cap(it.b) <= keepBuf {
				select {
				case s.free <- it.b:
				default:
				}
			}
		}
		s.queued.Add(-n)
		select {
		case s.room <- struct{}{}:
		default:
		}
	}
}

// count books one send: n of m messages delivered, the rest lost.
func (s *sender) count(m, n int, err error) { s.book.book(uint64(n), uint64(m-n), err, true) }

// flush waits until every message queued so far was sent or counted
// lost, or until Abort.
func (s *sender) flush() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	marker := item{flushed: make(chan struct{})}
	ok := true
	select {
	case s.q <- marker:
	case <-s.opts.Abort:
		ok = false
	}
	s.mu.Unlock()
	if ok {
		select {
		case <-marker.flushed:
		case <-s.opts.Abort:
			ok = false
		}
	}
	if !ok {
		s.abandon()
	}
	return nil
}

// close flushes, stops the sender and closes the transport. A daemon
// that is down is no error: what it did not take is counted lost.
func (s *sender) close() error {
	_ = s.flush()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.q)
	s.mu.Unlock()
	select {
	case <-s.done:
		return s.t.close()
	case <-s.opts.Abort:
		s.abandon()
		return nil
	}
}

// abandon stops waiting for a stalled daemon: every message accepted and
// not yet sent is counted lost now, so the totals add up even if the
// process exits with a send still blocked.
func (s *sender) abandon() { s.book.abandon(s.accepted.Load()) }

// reconnect makes the sender dial the daemon anew before its next send.
func (s *sender) reconnect() { s.redial.Store(true) }

func (s *sender) loss() tracer.OutputLoss {
	return s.book.loss()
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
