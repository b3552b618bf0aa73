// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"syscall"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// JournalSocket is where systemd-journald takes native messages.
const JournalSocket = "/run/systemd/journal/socket"

// Journal sends each event to systemd-journald as one entry, in the
// native protocol sd_journal_sendv speaks: MESSAGE (a short sentence),
// PRIORITY, SYSLOG_FACILITY, SYSLOG_IDENTIFIER=tracer, and the event's
// fields as TRACER_* (the table in fieldtable.go: the JSON lines' keys). An entry too large for a datagram goes
// in a sealed memfd passed with SCM_RIGHTS, as sd_journal_sendv does.
// Sends happen on a goroutine of their own, from a bounded queue: what
// the queue cannot hold, or journald does not take (it is down, it
// stopped reading), is counted lost (tracer.LossReporter).
type Journal struct {
	s   *sender
	t   *journalTransport
	v   fieldValue // appendJournalFields' scratch
	msg []byte     // the entry being encoded
}

// NewJournal sends events to the journal's socket (JournalSocket when
// empty). It does not dial: a journald that is not running yet, or
// restarts, is dialled again as events come (what comes meanwhile is
// counted lost).
func NewJournal(socket string, opts OutputOptions) *Journal {
	if socket == "" {
		socket = JournalSocket
	}
	t := &journalTransport{}
	t.l.dial = func() (net.Conn, error) {
		c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: socket, Net: "unixgram"})
		if err != nil {
			return nil, err
		}
		// As sd_journal_sendv: room for bursts before a send waits.
		_ = c.SetWriteBuffer(8 << 20)
		return c, nil
	}
	return &Journal{s: newSender(t, opts), t: t}
}

// Write encodes e and queues it; it never waits for journald.
func (j *Journal) Write(e *tracer.Event) error {
	j.msg = j.encode(j.msg[:0], e)
	j.s.put(j.msg)
	return nil
}

// encode appends e's entry in the native protocol.
func (j *Journal) encode(b []byte, e *tracer.Event) []byte {
	b = append(b, "MESSAGE="...)
	b = appendMessage(b, e)
	b = append(b, "\nPRIORITY="...)
	b = strconv.AppendInt(b, int64(severity(e)), 10)
	b = append(b, "\nSYSLOG_FACILITY="...)
	b = strconv.AppendInt(b, facilityAuthpriv, 10)
	b = append(b, "\nSYSLOG_IDENTIFIER="+identifier+"\n"...)
	return appendJournalFields(b, e, &j.v)
}

// Flush waits until every event written so far was sent or counted lost.
func (j *Journal) Flush() error { return j.s.flush() }

// Kick has the queued entries sent now.
func (j *Journal) Kick() { j.s.kick() }

// Close flushes and closes the socket.
func (j *Journal) Close() error { return j.s.close() }

// Reconnect makes the next send open the socket anew (SIGHUP: after
// journald moved or restarted, without waiting for a failed send).
func (j *Journal) Reconnect() { j.s.reconnect() }

// Loss reports events the queue could not hold and events journald did
// not take.
func (j *Journal) Loss() tracer.OutputLoss { return j.s.loss() }

// journalTransport sends entries as datagrams, and an entry a datagram
// cannot hold in a memfd.
type journalTransport struct {
	l link
	// maxDatagram, when positive, sends larger entries in a memfd at once
	// (tests use it to take the memfd path).
	maxDatagram int
}

func (t *journalTransport) send(msgs [][]byte) (int, error) {
	return t.l.sendEach(msgs, func(c net.Conn, m []byte) (lost, err error) {
		uc := c.(*net.UnixConn)
		if t.maxDatagram > 0 && len(m) > t.maxDatagram {
			err = syscall.EMSGSIZE
		} else {
			_, err = uc.Write(m)
		}
		if errors.Is(err, syscall.EMSGSIZE) || errors.Is(err, syscall.ENOBUFS) {
			if err := sendMemfd(uc, m); err != nil {
				// This entry alone is lost; the socket is fine.
				return fmt.Errorf("sending a journal entry of %d bytes in a memfd: %w", len(m), err), nil
			}
			return nil, nil
		}
		return nil, err
	})
}

func (t *journalTransport) reset()       { t.l.reset() }
func (t *journalTransport) close() error { return t.l.close() }

func init() {
	RegisterDestination(&Destination{
		Forms:    []string{"journal (journald)"},
		Complete: []string{"journal", "journal:/"},
		Match: func(output string) bool {
			_, ok, _ := ParseJournal(output)
			return ok
		},
		Prepare: prepareJournal,
	})
}

// prepareJournal takes journal[:/SOCKET]. The fields are tracer's own
// JSON fields: --format text and json (a service's config may name
// either) change nothing; a schema would be a promise the journal does
// not keep.
func prepareJournal(output string, c DestinationConfig) (*Output, error) {
	socket, _, err := ParseJournal(output)
	if err != nil {
		return nil, err
	}
	if err := refuseDestFlags(c, false, false); err != nil {
		return nil, err
	}
	if c.FormatGiven && c.Format != "text" && c.Format != "json" && c.Format != "" {
		return nil, vocab.Usagef("--output journal stores each event's tracer fields (TRACER_*, docs/events.md), not %s: drop --format %s", c.Format, c.Format)
	}
	if c.TimeGiven {
		return nil, vocab.Usagef("--time is for text lines: the journal stores each event's time (TRACER_TIME): drop --time")
	}
	return &Output{Open: func(Rotation) (*OpenOutput, error) {
		var r reconnector
		return &OpenOutput{Reconnect: r.reconnect, NewSink: func(opts OutputOptions) (tracer.Sink, error) {
			j := NewJournal(socket, opts)
			r.set(j.Reconnect)
			return j, nil
		}}, nil
	}}, nil
}

// reconnector is a daemon sink's Reconnect, for SIGHUP, which may come
// before the sink is made and from another goroutine.
type reconnector struct{ f atomic.Pointer[func()] }

func (r *reconnector) set(f func()) { r.f.Store(&f) }

func (r *reconnector) reconnect() {
	if f := r.f.Load(); f != nil {
		(*f)()
	}
}
