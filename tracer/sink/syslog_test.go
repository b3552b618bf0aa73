// SPDX-License-Identifier: Apache-2.0

//go:build linux

package sink

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

func TestParseSyslogAndJournal(t *testing.T) {
	cases := []struct {
		in      string
		ok      bool
		network string
		addr    string
		bad     string // the usage error holds this
	}{
		{in: "syslog", ok: true, network: "unixgram", addr: "/dev/log"},
		{in: "syslog:/run/rsyslog.sock", ok: true, network: "unixgram", addr: "/run/rsyslog.sock"},
		{in: "syslog://logs.example.com:514", ok: true, network: "tcp", addr: "logs.example.com:514"},
		{in: "syslog+tcp://10.0.0.1:6514", ok: true, network: "tcp", addr: "10.0.0.1:6514"},
		{in: "syslog+udp://[::1]:514", ok: true, network: "udp", addr: "[::1]:514"},
		{in: "syslog://logs.example.com", ok: true, bad: "HOST:PORT"},
		{in: "syslog://:514", ok: true, bad: "HOST:PORT"},
		{in: "syslog://h:99999", ok: true, bad: "not a port"},
		{in: "syslog+tls://h:6514", ok: true, network: "tcp", addr: "h:6514"},
		{in: "syslog+tlz://h:6514", ok: true, bad: "unknown syslog transport"},
		{in: "syslog:relative", ok: true, bad: "syslog:/SOCKET"},
		{in: "syslog.log"},
		{in: "events.jsonl"},
		{in: "/var/log/syslog"},
	}
	for _, c := range cases {
		cfg, ok, err := ParseSyslog(c.in)
		if ok != c.ok {
			t.Errorf("%q: ok %v, want %v", c.in, ok, c.ok)
		}
		if c.bad != "" {
			if err == nil || !strings.Contains(err.Error(), c.bad) || !errors.Is(err, vocab.ErrUsage) {
				t.Errorf("%q: error %v, want a usage error saying %q", c.in, err, c.bad)
			}
			continue
		}
		if err != nil || cfg.Network != c.network || cfg.Addr != c.addr {
			t.Errorf("%q: %+v %v, want %s %s", c.in, cfg, err, c.network, c.addr)
		}
	}
	for in, want := range map[string]string{"journal": JournalSocket, "journal:/tmp/j.sock": "/tmp/j.sock", "journal.log": "", "journal:x": "!", "journal://h:1": "!"} {
		s, ok, err := ParseJournal(in)
		switch want {
		case "":
			if ok {
				t.Errorf("%q: taken as the journal", in)
			}
		case "!":
			if !ok || err == nil || !errors.Is(err, vocab.ErrUsage) {
				t.Errorf("%q: %v %v, want a usage error", in, ok, err)
			}
		default:
			if !ok || err != nil || s != want {
				t.Errorf("%q: %q %v %v, want %q", in, s, ok, err, want)
			}
		}
	}
}

var (
	rfc5424 = regexp.MustCompile(`^<(\d+)>1 (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z) (\S+) tracer (\d+) (exec|fork|signal|exit) - (\{.*\})$`)
	local   = regexp.MustCompile(`^<(\d+)>([A-Z][a-z]{2} [ 1-3]\d \d\d:\d\d:\d\d) tracer\[(\d+)\]: (\{.*\})$`)
)

// checkJSONBody checks that body reads back as event e.
func checkJSONBody(t *testing.T, body string, e *tracer.Event) {
	t.Helper()
	var got tracer.Event
	if err := got.UnmarshalJSON([]byte(body)); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	if string(AppendJSON(nil, &got)) != string(AppendJSON(nil, e)) {
		t.Errorf("body %s, want %s", body, AppendJSON(nil, e))
	}
}

// Over TCP each message is its length, a space and an RFC 5424 message:
// facility authpriv, the event's severity and time, MSGID its type, the
// JSON line as MSG.
func TestSyslogTCPFrames(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := NewSyslog(SyslogConfig{Network: "tcp", Addr: l.Addr().String()}, "json", OutputOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev := testEvents()
	for i := range ev {
		_ = s.Write(&ev[i])
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	for i := range ev {
		msg := readFrame(t, r)
		m := rfc5424.FindStringSubmatch(msg)
		if m == nil {
			t.Fatalf("frame %d is not the RFC 5424 message expected: %q", i, msg)
		}
		if pri, _ := strconv.Atoi(m[1]); pri != 10*8+severity(&ev[i]) {
			t.Errorf("PRI %d, want authpriv (10) and severity %d", pri, severity(&ev[i]))
		}
		if m[2] != "2026-12-01T10:00:00.123456Z" || m[4] != fmt.Sprint(os.Getpid()) || m[5] != ev[i].Type.String() {
			t.Errorf("header %q %q %q", m[2], m[4], m[5])
		}
		checkJSONBody(t, m[6], &ev[i])
	}
	if _, err := r.ReadByte(); err != io.EOF {
		t.Errorf("more after the last frame: %v", err)
	}
	if l := s.Loss(); l != (tracer.OutputLoss{}) {
		t.Errorf("loss %+v", l)
	}
}

func readFrame(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	n, err := r.ReadString(' ')
	if err != nil {
		t.Fatalf("reading a frame's length: %v", err)
	}
	size, err := strconv.Atoi(strings.TrimSuffix(n, " "))
	if err != nil {
		t.Fatalf("frame length %q: %v", n, err)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sendLocalSyslog writes testEvents as JSON lines to the local syslog
// socket at path and closes the sink; it returns the sink and the events.
func sendLocalSyslog(t *testing.T, path string) (*Syslog, []tracer.Event) {
	t.Helper()
	s, err := NewSyslog(SyslogConfig{Network: "unixgram", Addr: path}, "json", OutputOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev := testEvents()
	for i := range ev {
		_ = s.Write(&ev[i])
	}
	_ = s.Close()
	return s, ev
}

// To a local socket the message is in syslog(3)'s form; --format text
// puts the text line in it.
func TestSyslogLocalForm(t *testing.T) {
	r := listenUnixgram(t)
	_, ev := sendLocalSyslog(t, r.path)
	for i := range ev {
		b := r.read(t, time.Second)
		m := local.FindStringSubmatch(string(b))
		if m == nil {
			t.Fatalf("datagram %d: %q", i, b)
		}
		if m[2] != ev[i].Time.Local().Format(time.Stamp) || m[3] != fmt.Sprint(os.Getpid()) {
			t.Errorf("header %q %q", m[2], m[3])
		}
		checkJSONBody(t, m[4], &ev[i])
	}
	s, _ := NewSyslog(SyslogConfig{Network: "unixgram", Addr: r.path}, "text", OutputOptions{})
	_ = s.Write(&ev[2])
	_ = s.Close()
	if b := string(r.read(t, time.Second)); !strings.HasSuffix(b, "]: ebpf    fork   1234    bash             1000       clone3 -> 1235") {
		t.Errorf("text body: %q", b)
	}
	if _, err := NewSyslog(SyslogConfig{Network: "unixgram", Addr: r.path}, "xml", OutputOptions{}); !errors.Is(err, vocab.ErrUsage) {
		t.Errorf("--format xml: %v, want a usage error", err)
	}
}

// A server that refuses (down) or goes away costs the events sent
// meanwhile, counted at stage output, never a wait; once it is back the
// events reach it again.
func TestSyslogTCPServerDownAndBack(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // refused from now on
	var failing []error
	s, _ := NewSyslog(SyslogConfig{Network: "tcp", Addr: addr}, "json", OutputOptions{OnFailing: func(err error) { failing = append(failing, err) }})
	ev := testEvents()[0]
	start := time.Now()
	for range 1000 {
		_ = s.Write(&ev)
	}
	_ = s.Flush()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("1000 events to a refusing server took %v", d)
	}
	if lo := s.Loss(); lo.Output != 1000 {
		t.Fatalf("loss %+v, want 1000 at stage output", lo)
	}
	if len(failing) != 1 || !errors.Is(failing[0], errDown) {
		t.Errorf("OnFailing got %v, want one error", failing)
	}
	l, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	defer l.Close()
	time.Sleep(backoffMax + 100*time.Millisecond)
	for range 10 {
		_ = s.Write(&ev)
	}
	_ = s.Flush()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	for range 10 {
		readFrame(t, r)
	}
	if len(failing) != 2 || failing[1] != nil {
		t.Errorf("OnFailing got %v, want the error then nil", failing)
	}
	// The server goes away: the next batch finds the connection closed,
	// redials, is refused, and counts its events lost.
	c.Close()
	l.Close()
	time.Sleep(50 * time.Millisecond)
	for range 5 {
		_ = s.Write(&ev)
	}
	_ = s.Close()
	if lo := s.Loss(); lo.Output != 1005 {
		t.Errorf("loss %+v, want 1005 at stage output", lo)
	}
}

// Reconnect (SIGHUP) makes the next send dial anew, at once: a new
// connection to a server that is up, and no wait left from failures.
func TestSyslogReconnect(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, _ := NewSyslog(SyslogConfig{Network: "tcp", Addr: l.Addr().String()}, "json", OutputOptions{})
	defer s.Close()
	ev := testEvents()[0]
	_ = s.Write(&ev)
	_ = s.Flush()
	c1, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	readFrame(t, bufio.NewReader(c1))
	s.Reconnect()
	_ = s.Write(&ev)
	_ = s.Flush()
	c2, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	readFrame(t, bufio.NewReader(c2))

	// A server that was down: failures made the wait grow; Reconnect
	// ends it, and the next event is sent at once.
	addr := l.Addr().String()
	l.Close()
	c2.Close()
	for range 5 {
		_ = s.Write(&ev)
		_ = s.Flush()
		time.Sleep(backoffMin)
	}
	if lost := s.Loss().Output; lost == 0 {
		t.Fatalf("no loss with the server down")
	}
	l2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	defer l2.Close()
	lost := s.Loss().Output
	s.Reconnect()
	_ = s.Write(&ev)
	_ = s.Flush()
	if s.Loss().Output != lost {
		t.Errorf("the event after Reconnect was lost: the sender still waited to dial")
	}
}

// The real rsyslogd takes every event on each transport. Its inputs run
// on threads of their own, so the file's order is not the sending order:
// each transport's events carry pids of their own.
func TestRsyslogTakesEveryEvent(t *testing.T) {
	rs := tracertest.StartRsyslog(t)
	const pidStep = 100000
	cfgs := []SyslogConfig{
		{Network: "unixgram", Addr: rs.Socket},
		{Network: "tcp", Addr: rs.TCPAddr},
		{Network: "udp", Addr: rs.UDPAddr},
	}
	sent := map[uint32]tracer.Event{}
	for k, cfg := range cfgs {
		s, err := NewSyslog(cfg, "json", OutputOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range testEvents() {
			e.PID = uint32(k*pidStep + i)
			sent[e.PID] = e
			_ = s.Write(&e)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if l := s.Loss(); l != (tracer.OutputLoss{}) {
			t.Errorf("%s: loss %+v", cfg.Network, l)
		}
	}
	var lines []tracertest.SyslogLine
	deadline := time.Now().Add(10 * time.Second)
	for len(lines) < len(sent) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		lines = rs.Lines(t)
	}
	if len(lines) != len(sent) {
		t.Fatalf("rsyslogd wrote %d messages, want %d", len(lines), len(sent))
	}
	for _, l := range lines {
		var got tracer.Event
		if err := got.UnmarshalJSON([]byte(l.Msg)); err != nil {
			t.Fatalf("message %q: %v", l.Msg, err)
		}
		e, ok := sent[got.PID]
		if !ok {
			t.Errorf("message %q: not sent, or twice", l.Msg)
			continue
		}
		delete(sent, got.PID)
		if l.Facility != 10 || l.Severity != severity(&e) || l.AppName != "tracer" || l.ProcID != fmt.Sprint(os.Getpid()) {
			t.Errorf("%s over %s: %+v", e.Type, cfgs[e.PID/pidStep].Network, l)
		}
		// RFC 5424's MSGID; the local form has none.
		if want := map[bool]string{true: "-", false: e.Type.String()}[e.PID < pidStep]; l.MsgID != want {
			t.Errorf("%s over %s: MSGID %q, want %q", e.Type, cfgs[e.PID/pidStep].Network, l.MsgID, want)
		}
		checkJSONBody(t, l.Msg, &e)
	}
}

func BenchmarkSyslogEncode(b *testing.B) {
	s := &Syslog{enc: AppendJSON, framed: true, host: "node-1", procid: "4242"}
	e := testEvents()[0]
	buf := make([]byte, 0, 4096)
	for b.Loop() {
		buf = s.encode(buf[:0], &e)
	}
}

// On a systemd node /dev/log is journald's: it reads the local form, the
// identifier, pid, facility and severity, and keeps the JSON line as the
// message.
func TestJournaldReadsTheLocalForm(t *testing.T) {
	jd := tracertest.StartJournald(t)
	s, ev := sendLocalSyslog(t, jd.DevLog)
	var got []map[string]string
	for deadline := time.Now().Add(10 * time.Second); len(got) < len(ev) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		got = jd.Entries(t, "SYSLOG_IDENTIFIER=tracer")
	}
	if len(got) != len(ev) || s.Loss() != (tracer.OutputLoss{}) {
		t.Fatalf("journald has %d entries of %d; loss %+v", len(got), len(ev), s.Loss())
	}
	for i, f := range got {
		if f["SYSLOG_PID"] != fmt.Sprint(os.Getpid()) || f["SYSLOG_FACILITY"] != "10" || f["PRIORITY"] != fmt.Sprint(severity(&ev[i])) {
			t.Errorf("entry %d: SYSLOG_PID %q SYSLOG_FACILITY %q PRIORITY %q", i, f["SYSLOG_PID"], f["SYSLOG_FACILITY"], f["PRIORITY"])
		}
		checkJSONBody(t, f["MESSAGE"], &ev[i])
	}
}
