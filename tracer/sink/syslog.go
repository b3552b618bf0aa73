// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// DevLog is the local syslog socket.
const DevLog = "/dev/log"

// SyslogConfig says where syslog messages go.
type SyslogConfig struct {
	// Network is unixgram (a local socket), tcp or udp.
	Network string
	// Addr is the socket's path, or HOST:PORT.
	Addr string
	// TLS: tcp in TLS (RFC 5425, syslog+tls://), the server's certificate
	// checked against the system's roots, or CAFile's alone when set.
	TLS    bool
	CAFile string
}

// Cleartext reports whether cfg sends over the network without TLS.
func (cfg SyslogConfig) Cleartext() bool { return cfg.Network != "unixgram" && !cfg.TLS }

// ParseSyslog reads an --output value that names a syslog destination:
// syslog (the local socket, /dev/log), syslog:/PATH (another local
// socket), syslog://HOST:PORT or syslog+tcp://HOST:PORT (TCP, each message
// framed by its length as RFC 6587 says), syslog+tls://HOST:PORT (the
// same in TLS, RFC 5425), syslog+udp://HOST:PORT (UDP, a message a
// datagram). ok is false when v names no syslog destination.
func ParseSyslog(v string) (cfg SyslogConfig, ok bool, err error) {
	if v == "syslog" {
		return SyslogConfig{Network: "unixgram", Addr: DevLog}, true, nil
	}
	scheme, rest, found := strings.Cut(v, ":")
	if !found || (scheme != "syslog" && !strings.HasPrefix(scheme, "syslog+")) {
		return cfg, false, nil
	}
	if !strings.HasPrefix(rest, "//") {
		if scheme == "syslog" && strings.HasPrefix(rest, "/") {
			return SyslogConfig{Network: "unixgram", Addr: rest}, true, nil
		}
		return cfg, true, vocab.Usagef("--output %q: use syslog, syslog:/SOCKET, syslog://HOST:PORT (TCP) or syslog+udp://HOST:PORT", v)
	}
	switch scheme {
	case "syslog", "syslog+tcp":
		cfg.Network = "tcp"
	case "syslog+tls":
		cfg.Network, cfg.TLS = "tcp", true
	case "syslog+udp":
		cfg.Network = "udp"
	default:
		return cfg, true, vocab.Usagef("--output %q: unknown syslog transport %q: use syslog+tls://HOST:PORT (TLS), syslog://HOST:PORT (TCP) or syslog+udp://HOST:PORT", v, strings.TrimPrefix(scheme, "syslog+"))
	}
	u, perr := url.Parse(v)
	if perr != nil || u.Port() == "" || u.Hostname() == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return cfg, true, vocab.Usagef("--output %q: give the syslog server as %s://HOST:PORT", v, scheme)
	}
	if _, err := strconv.ParseUint(u.Port(), 10, 16); err != nil {
		return cfg, true, vocab.Usagef("--output %q: port %q is not a port number", v, u.Port())
	}
	cfg.Addr = u.Host
	return cfg, true, nil
}

// ParseJournal reads an --output value that names the journal: journal
// (journald's socket), or journal:/SOCKET. ok is false for other values.
func ParseJournal(v string) (socket string, ok bool, err error) {
	if v == "journal" {
		return JournalSocket, true, nil
	}
	rest, found := strings.CutPrefix(v, "journal:")
	if !found {
		return "", false, nil
	}
	if !strings.HasPrefix(rest, "/") || strings.HasPrefix(rest, "//") {
		return "", true, vocab.Usagef("--output %q: use journal, or journal:/SOCKET for a journald socket elsewhere", v)
	}
	return rest, true, nil
}

// Syslog sends each event as one syslog message, facility authpriv, its
// severity as severity says, APP-NAME tracer. The body is the event's
// line in the format given (FormatEncoder). To the local socket
// the message is in the form glibc's syslog(3) writes there,
// "<PRI>Mmm dd hh:mm:ss tracer[PID]: BODY", the one form every reader of
// /dev/log parses (journald reads no RFC 5424 header there, nor does
// rsyslog's imuxsock by default). Over the network it is RFC 5424:
// "<PRI>1 TIMESTAMP HOSTNAME tracer PID TYPE - BODY", the event's time in
// UTC to the microsecond, the event type as MSGID, no structured data.
// Sends happen on a goroutine of their own from a bounded queue; what the
// queue cannot hold, or the server does not take, is counted lost.
type Syslog struct {
	s      *sender
	enc    Encoder
	local  bool
	framed bool // TCP: each message after its length and a space
	host   string
	procid string
	line   []byte
	msg    []byte // the message being encoded
}

// NewSyslog sends events to cfg's destination, each body as format
// encodes it. It does not dial: a server that is down is dialled again
// as events come (what comes meanwhile is counted lost).
func NewSyslog(cfg SyslogConfig, format string, opts OutputOptions) (*Syslog, error) {
	enc, ok := FormatEncoder(format)
	if !ok {
		return nil, vocab.Usagef("unknown format %q: use %s", format, strings.Join(FormatNames(), ", "))
	}
	s := &Syslog{enc: enc, local: cfg.Network == "unixgram", framed: cfg.Network == "tcp", procid: strconv.Itoa(os.Getpid())}
	s.host = hostname()
	var t transport
	switch cfg.Network {
	case "unixgram", "udp":
		d := &dgramTransport{}
		d.l.dial = func() (net.Conn, error) { return net.Dial(cfg.Network, cfg.Addr) }
		t = d
	case "tcp":
		c := &tcpTransport{}
		c.l.dial = func() (net.Conn, error) { return net.DialTimeout("tcp", cfg.Addr, dialTimeout) }
		if cfg.TLS {
			tc, err := syslogTLS(cfg)
			if err != nil {
				return nil, err
			}
			c.l.dial = func() (net.Conn, error) {
				return tls.DialWithDialer(&net.Dialer{Timeout: dialTimeout}, "tcp", cfg.Addr, tc)
			}
		}
		t = c
	default:
		return nil, fmt.Errorf("syslog network %q: want unixgram, tcp or udp", cfg.Network)
	}
	s.s = newSender(t, opts)
	return s, nil
}

// syslogTLS is the TLS client configuration for cfg: the server's name
// from Addr, CAFile's certificates as the only roots when set.
func syslogTLS(cfg SyslogConfig) (*tls.Config, error) {
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("syslog address %q: %w", cfg.Addr, err)
	}
	tc := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		if tc.RootCAs, err = loadCA(cfg.CAFile); err != nil {
			return nil, err
		}
	}
	return tc, nil
}

// CheckSyslogCA checks --output-ca-file for syslog+tls://, in a one-line
// usage error.
func CheckSyslogCA(file string) error {
	_, err := loadCA(file)
	return err
}

// hostname is RFC 5424's HOSTNAME: printable ASCII without spaces, at
// most 255 bytes, "-" when unknown.
func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "-"
	}
	b := []byte(h)
	for i, c := range b {
		if c <= ' ' || c > '~' {
			b[i] = '_'
		}
	}
	return string(b[:min(len(b), 255)])
}

// Write encodes e and queues it; it never waits for the server.
func (s *Syslog) Write(e *tracer.Event) error {
	s.msg = s.encode(s.msg[:0], e)
	s.s.put(s.msg)
	return nil
}

func (s *Syslog) encode(b []byte, e *tracer.Event) []byte {
	s.line = s.enc(s.line[:0], e)
	pri := facilityAuthpriv*8 + severity(e)
	if s.local {
		b = append(b, '<')
		b = strconv.AppendInt(b, int64(pri), 10)
		b = append(b, '>')
		b = e.Time.Local().AppendFormat(b, time.Stamp)
		b = append(b, " "+identifier+"["...)
		b = append(b, s.procid...)
		b = append(b, "]: "...)
		return append(b, s.line...)
	}
	start := len(b)
	if s.framed {
		// The length goes first; reserve room for it and move the message
		// up once its length is known.
		b = append(b, "0000000000 "...)
	}
	msg := len(b)
	b = append(b, '<')
	b = strconv.AppendInt(b, int64(pri), 10)
	b = append(b, ">1 "...)
	b = e.Time.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z07:00")
	b = append(b, ' ')
	b = append(b, s.host...)
	b = append(b, " "+identifier+" "...)
	b = append(b, s.procid...)
	b = append(b, ' ')
	b = append(b, e.Type.String()...)
	b = append(b, " - "...)
	b = append(b, s.line...)
	if s.framed {
		var nb [12]byte
		n := strconv.AppendInt(nb[:0], int64(len(b)-msg), 10)
		n = append(n, ' ')
		copy(b[start:], n)
		b = append(b[:start+len(n)], b[msg:]...)
	}
	return b
}

// Flush waits until every event written so far was sent or counted lost.
func (s *Syslog) Flush() error { return s.s.flush() }

// Kick has the queued messages sent now.
func (s *Syslog) Kick() { s.s.kick() }

// Close flushes and closes the connection.
func (s *Syslog) Close() error { return s.s.close() }

// Reconnect makes the next send dial the server anew (SIGHUP: HOST
// resolved again, a new connection after the server moved or restarted,
// without waiting for a failed send).
func (s *Syslog) Reconnect() { s.s.reconnect() }

// Loss reports events the queue could not hold and events the server did
// not take.
func (s *Syslog) Loss() tracer.OutputLoss { return s.s.loss() }

const dialTimeout = 2 * time.Second

// dgramTransport sends a message a datagram (the local socket, UDP).
// Over UDP what the network drops is not seen, and a server that is down
// is seen only from the ICMP error the next send reports.
type dgramTransport struct{ l link }

func (t *dgramTransport) send(msgs [][]byte) (int, error) {
	return t.l.sendEach(msgs, func(c net.Conn, m []byte) (lost, err error) {
		_, err = c.Write(m)
		if errors.Is(err, syscall.EMSGSIZE) {
			return fmt.Errorf("a syslog message of %d bytes: %w", len(m), err), nil // this one alone is lost
		}
		return nil, err
	})
}

func (t *dgramTransport) reset()       { t.l.reset() }
func (t *dgramTransport) close() error { return t.l.close() }

// tcpTransport writes a batch of framed messages at once. A write that
// fails or times out tears a frame, so the connection is dropped and
// dialled again; the frames written whole before count as sent.
type tcpTransport struct {
	l   link
	buf []byte
	end []int // where each message ends in buf
}

// tcpWriteTimeout bounds one batch's write to a server that stopped
// reading.
const tcpWriteTimeout = 5 * time.Second

func (t *tcpTransport) send(msgs [][]byte) (int, error) {
	c, err := t.l.get()
	if err != nil {
		return 0, err
	}
	if peerClosed(c) {
		// The server closed the connection (it stopped or restarted):
		// writing would succeed into a socket nobody reads.
		t.l.fail(errors.New("the syslog server closed the connection"))
		if c, err = t.l.get(); err != nil {
			return 0, err
		}
	}
	t.buf, t.end = t.buf[:0], t.end[:0]
	for _, m := range msgs {
		t.buf = append(t.buf, m...)
		t.end = append(t.end, len(t.buf))
	}
	_ = c.SetWriteDeadline(time.Now().Add(tcpWriteTimeout))
	n, err := c.Write(t.buf)
	if err != nil {
		sent := 0
		for sent < len(t.end) && t.end[sent] <= n {
			sent++
		}
		t.l.fail(err)
		return sent, t.l.lastErr
	}
	t.l.ok()
	return len(msgs), nil
}

func (t *tcpTransport) reset()       { t.l.reset() }
func (t *tcpTransport) close() error { return t.l.close() }

// peerClosed reports whether the server closed its end: a syslog server
// never writes, so anything readable is its EOF or an error.
func peerClosed(c net.Conn) bool {
	if tc, ok := c.(*tls.Conn); ok {
		return tlsPeerClosed(tc)
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	_ = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		closed = n == 0 && err == nil || err != nil && !errors.Is(err, unix.EAGAIN)
		return true
	})
	return closed
}

// tlsPeerClosed is peerClosed through TLS, whose server may send records
// of its own (TLS 1.3 session tickets) that a peek would take for data:
// a read of at most a millisecond consumes them and sees the server's
// close_notify or EOF; a timeout means the connection is open. A read
// timeout leaves a tls.Conn usable.
func tlsPeerClosed(c *tls.Conn) bool {
	var b [1]byte
	_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
	_, err := c.Read(b[:])
	_ = c.SetReadDeadline(time.Time{})
	return !errors.Is(err, os.ErrDeadlineExceeded)
}

func init() {
	RegisterDestination(&Destination{
		Forms:          []string{"syslog (/dev/log)", "syslog+tls://HOST:PORT"},
		CleartextForms: []string{"syslog://HOST:PORT (TCP)", "syslog+udp://HOST:PORT"},
		Complete:       []string{"syslog", "syslog:/", "syslog+tls://", "syslog://", "syslog+udp://"},
		Match: func(output string) bool {
			_, ok, _ := ParseSyslog(output)
			return ok
		},
		Prepare: prepareSyslog,
	})
}

// prepareSyslog takes syslog[:/SOCKET] and syslog[+tcp|+udp|+tls]://HOST:PORT.
func prepareSyslog(output string, c DestinationConfig) (*Output, error) {
	cfg, _, err := ParseSyslog(output)
	if err != nil {
		return nil, err
	}
	if err := refuseDestFlags(c, cfg.TLS, cfg.Cleartext()); err != nil {
		return nil, err
	}
	var o Output
	// As for otlp://: the messages name every command line, and whoever
	// holds the port (any user, on loopback) would get them.
	if cfg.Cleartext() {
		if !c.AllowCleartext {
			return nil, vocab.Usagef("--output %s is cleartext: every command line would go to whoever holds %s: use syslog+tls://%s (TLS; --output-ca-file CA.pem pins the server's CA) or the local socket (syslog, syslog:/SOCKET), or add --allow-cleartext", output, cfg.Addr, cfg.Addr)
		}
		o.Warning = "--allow-cleartext: events go to " + output + " unencrypted and unauthenticated; whoever holds the port gets every command line (use syslog+tls://)"
	}
	if cfg.TLS && c.CAFile != "" {
		if err := CheckSyslogCA(c.CAFile); err != nil {
			return nil, err
		}
		cfg.CAFile = c.CAFile
	}
	if c.TimeGiven {
		return nil, vocab.Usagef("--time is for text lines: a syslog message carries the event's time in its header: drop --time")
	}
	// A syslog server's pipelines parse JSON; --format text asks for the
	// text line instead.
	format := "json"
	if c.FormatGiven {
		format = c.Format
	}
	if _, ok := FormatEncoder(format); !ok {
		return nil, vocab.Usagef("unknown format %q: use %s", format, strings.Join(FormatNames(), ", "))
	}
	o.Open = func(Rotation) (*OpenOutput, error) {
		var r reconnector
		return &OpenOutput{Reconnect: r.reconnect, NewSink: func(opts OutputOptions) (tracer.Sink, error) {
			s, err := NewSyslog(cfg, format, opts)
			if err != nil {
				return nil, err
			}
			r.set(s.Reconnect)
			return s, nil
		}}, nil
	}
	return &o, nil
}
