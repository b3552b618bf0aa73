// SPDX-License-Identifier: Apache-2.0

//go:build linux

package sink

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// testEvents are one event of each type, with the strings a process can
// choose at their worst: a newline, bytes that are not UTF-8, a bidi control.
func testEvents() []tracer.Event {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	id := tracer.ExecID{PID: 1234, Start: 5678}
	return []tracer.Event{
		{Time: t0, Backend: "ebpf", Type: vocab.TypeExec, PID: 1234, Comm: "ba\xffsh", UID: 1000, AUID: 1000, PPID: 1,
			Filename: "/usr/bin/curl", Argv: []string{"curl", "-d", "a\nb", "x\u202ey"}, ExecID: id, Cgroup: "/user.slice"},
		{Time: t0, Backend: "audit", Type: vocab.TypeExec, PID: 99, Comm: "sh", UID: 0, AUID: vocab.UnsetID, PPID: 1,
			Filename: "/nonexistent", Argv: []string{"x"}, ArgvTruncated: true, Ret: -2},
		{Time: t0, Backend: "ebpf", Type: vocab.TypeFork, PID: 1234, Comm: "bash", UID: 1000, ChildPID: 1235, Syscall: "clone3"},
		{Time: t0, Backend: "ebpf", Type: vocab.TypeSignal, PID: 1234, Comm: "bash", TargetPID: 4242, Signal: 15, Syscall: "kill",
			HasCode: true, Code: 0, Origin: vocab.OriginUser, Result: vocab.ResultDelivered, TargetComm: "nginx"},
		{Time: t0, Backend: "ebpf", Type: vocab.TypeExit, PID: 4242, Comm: "nginx", ExitCode: 0, Signal: 9,
			KilledBy: tracer.KilledBy{Origin: vocab.OriginUser, PID: 1234, Comm: "bash", Syscall: "kill"}},
		{Time: t0, Backend: "ebpf", Type: vocab.TypeExit, PID: 77, Comm: "true", ExitCode: 3},
		{Time: t0, Backend: "ebpf", Type: vocab.TypeExit, PID: 78, Comm: "hog", Signal: 9, OOMKill: true},
	}
}

// parseNative reads one native-protocol entry as journald does
// (journald-native.c): KEY=value lines, and KEY, a newline, a 64-bit
// little-endian length and that many bytes of value, then a newline.
func parseNative(t *testing.T, b []byte) map[string]string {
	t.Helper()
	f := map[string]string{}
	for len(b) > 0 {
		nl := strings.IndexByte(string(b), '\n')
		if nl < 0 {
			t.Fatalf("entry ends without a newline: %q", b)
		}
		line := b[:nl]
		if k, v, ok := strings.Cut(string(line), "="); ok {
			f[k] = v
			b = b[nl+1:]
			continue
		}
		k := string(line)
		b = b[nl+1:]
		if len(b) < 8 {
			t.Fatalf("field %s: no length", k)
		}
		n := binary.LittleEndian.Uint64(b)
		b = b[8:]
		if uint64(len(b)) < n+1 || b[n] != '\n' {
			t.Fatalf("field %s: %d bytes and a newline do not follow", k, n)
		}
		f[k] = string(b[:n])
		b = b[n+1:]
	}
	for k := range f {
		for _, c := range k {
			if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
				t.Errorf("field name %q: journald takes only A-Z, 0-9 and _", k)
			}
		}
	}
	return f
}

// journalFields is the journal fields the JSON line's keys make: TRACER_KEY,
// TRACER_KEY_SUBKEY for an object's keys, arrays as their JSON.
func journalFields(t *testing.T, line []byte) map[string]any {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	var walk func(prefix string, m map[string]json.RawMessage)
	walk = func(prefix string, m map[string]json.RawMessage) {
		for k, v := range m {
			name := prefix + strings.ToUpper(k)
			switch v[0] {
			case '{':
				var sub map[string]json.RawMessage
				if err := json.Unmarshal(v, &sub); err != nil {
					t.Fatal(err)
				}
				walk(name+"_", sub)
			case '"':
				out[name] = v // compared decoded, below
			default:
				out[name] = string(v)
			}
		}
	}
	walk("TRACER_", m)
	return out
}

// Every key of the JSON line is a journal field, and no other TRACER_
// field is there; strings are the event's bytes, newline and all.
func TestJournalFieldsAreTheJSONFields(t *testing.T) {
	for _, e := range testEvents() {
		t.Run(e.Type.String(), func(t *testing.T) {
			var j Journal
			b := j.encode(nil, &e)
			f := parseNative(t, b)
			want := journalFields(t, AppendJSON(nil, &e))
			for k, v := range want {
				got, ok := f[k]
				if !ok {
					t.Errorf("no %s (JSON has it)", k)
					continue
				}
				if raw, isString := v.(json.RawMessage); isString {
					var s string
					_ = json.Unmarshal(raw, &s)
					if strings.ContainsRune(s, '\ufffd') { // not UTF-8: compared below
						continue
					}
					v = s
				}
				if got != v {
					t.Errorf("%s = %q, JSON says %q", k, got, v)
				}
			}
			for k := range f {
				if _, ok := want[k]; strings.HasPrefix(k, "TRACER_") && !ok {
					t.Errorf("%s is not in the JSON line", k)
				}
			}
			if f["TRACER_COMM"] != e.Comm {
				t.Errorf("TRACER_COMM = %q, want the comm's bytes %q", f["TRACER_COMM"], e.Comm)
			}
			if f["SYSLOG_IDENTIFIER"] != "tracer" || f["SYSLOG_FACILITY"] != "10" {
				t.Errorf("SYSLOG_IDENTIFIER %q SYSLOG_FACILITY %q, want tracer and 10", f["SYSLOG_IDENTIFIER"], f["SYSLOG_FACILITY"])
			}
			if f["PRIORITY"] != fmt.Sprint(severity(&e)) {
				t.Errorf("PRIORITY %q, want %d", f["PRIORITY"], severity(&e))
			}
			if msg := f["MESSAGE"]; strings.Contains(msg, "\n") || !utf8.ValidString(msg) {
				t.Errorf("MESSAGE %q holds a raw newline or a byte that is not UTF-8", msg)
			}
		})
	}
}

func TestJournalMessageAndPriority(t *testing.T) {
	ev := testEvents()
	want := []struct {
		msg string
		pri int
	}{
		{`exec /usr/bin/curl pid 1234 by uid 1000`, 6},
		{`exec /nonexistent pid 99 by uid 0 failed: ENOENT`, 6},
		{`fork pid 1234 (bash) made pid 1235 by uid 1000`, 6},
		{`signal SIGTERM from pid 1234 (bash) to pid 4242 (nginx) by uid 0`, 5},
		{`exit pid 4242 (nginx) killed by SIGKILL from pid 1234 (bash)`, 5},
		{`exit pid 77 (true) code 3`, 6},
		{`exit pid 78 (hog) killed by SIGKILL (OOM kill)`, 4},
	}
	for i, w := range want {
		if got := string(appendMessage(nil, &ev[i])); got != w.msg {
			t.Errorf("MESSAGE %q, want %q", got, w.msg)
		}
		if got := severity(&ev[i]); got != w.pri {
			t.Errorf("%s: PRIORITY %d, want %d", w.msg, got, w.pri)
		}
	}
}

// unixgramReader is a datagram socket the test reads as journald would,
// memfds included.
type unixgramReader struct {
	c    *net.UnixConn
	path string
}

func listenUnixgram(t *testing.T) *unixgramReader {
	t.Helper()
	path := filepath.Join(t.TempDir(), "socket")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &unixgramReader{c: c, path: path}
}

// read returns the next datagram, or what the memfd it carries holds
// (checked sealed, as journald checks it); nil after d with none.
func (r *unixgramReader) read(t *testing.T, d time.Duration) []byte {
	t.Helper()
	buf, oob := make([]byte, 1<<20), make([]byte, 1024)
	_ = r.c.SetReadDeadline(time.Now().Add(d))
	n, oobn, _, _, err := r.c.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil
	}
	if oobn == 0 {
		return buf[:n]
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		t.Fatalf("control message: %v", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 || n != 0 {
		t.Fatalf("want one fd and no data, got %d fds, %d bytes: %v", len(fds), n, err)
	}
	f := os.NewFile(uintptr(fds[0]), "memfd")
	defer f.Close()
	seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
	want := unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if err != nil || seals&want != want {
		t.Fatalf("memfd seals %#x (%v): journald takes only a memfd sealed against writes and resizes", seals, err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Each event is one datagram, whole; an entry too large for a datagram
// comes in a sealed memfd.
func TestJournalSendsEachEvent(t *testing.T) {
	r := listenUnixgram(t)
	j := NewJournal(r.path, OutputOptions{})
	j.t.maxDatagram = 600
	ev := testEvents()
	for i := range ev {
		if err := j.Write(&ev[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range ev {
		b := r.read(t, time.Second)
		if b == nil {
			t.Fatalf("datagram %d of %d missing", i+1, len(ev))
		}
		if f := parseNative(t, b); f["TRACER_PID"] != fmt.Sprint(ev[i].PID) || f["TRACER_TYPE"] != ev[i].Type.String() {
			t.Errorf("entry %d: pid %s type %s, want %d %s", i, f["TRACER_PID"], f["TRACER_TYPE"], ev[i].PID, ev[i].Type)
		}
	}
	if l := j.Loss(); l != (tracer.OutputLoss{}) {
		t.Errorf("loss %+v, want none", l)
	}
}

// No journald: every event is counted lost at stage output, Close does not
// wait, and once journald is there the events reach it.
func TestJournalDownCountsLost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "socket")
	j := NewJournal(path, OutputOptions{})
	ev := testEvents()[0]
	start := time.Now()
	for range 1000 {
		_ = j.Write(&ev)
	}
	if err := j.Flush(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("1000 events to no journald took %v", d)
	}
	if l := j.Loss(); l.Output != 1000 || l.Queue != 0 {
		t.Fatalf("loss %+v, want 1000 at stage output", l)
	}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := &unixgramReader{c: c, path: path}
	time.Sleep(backoffMax + 100*time.Millisecond) // the longest wait before a dial
	for range 10 {
		_ = j.Write(&ev)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	got := 0
	for r.read(t, 200*time.Millisecond) != nil {
		got++
	}
	if got != 10 || j.Loss().Output != 1000 {
		t.Errorf("after journald came: %d of 10 received, loss %+v (want 1000 lost before)", got, j.Loss())
	}
}

// A journald that stops reading never makes Write wait: every event is
// received or counted lost, and Close returns.
func TestJournalStalledNeverWaits(t *testing.T) {
	r := listenUnixgram(t)
	j := NewJournal(r.path, OutputOptions{})
	ev := testEvents()[0]
	const n = 50000
	start := time.Now()
	for range n {
		_ = j.Write(&ev)
	}
	wrote := time.Since(start)
	closed := make(chan struct{})
	go func() { _ = j.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close waited 30s for a journald that does not read")
	}
	got := 0
	for r.read(t, 100*time.Millisecond) != nil {
		got++
	}
	l := j.Loss()
	if uint64(got)+l.Queue+l.Output != n {
		t.Errorf("received %d + lost %+v != %d written", got, l, n)
	}
	if l.Queue+l.Output == 0 {
		t.Errorf("received %d of %d with nothing lost from a socket nobody read", got, n)
	}
	t.Logf("%d events written in %v: %d received, %d lost at queue, %d at output", n, wrote, got, l.Queue, l.Output)
}

// The real journald takes every entry, the memfd one too, with the fields
// as sent.
func TestJournaldTakesTheEntries(t *testing.T) {
	jd := tracertest.StartJournald(t)
	j := NewJournal(jd.Socket, OutputOptions{})
	j.t.maxDatagram = 600 // the exec events go in a memfd
	ev := testEvents()
	for i := range ev {
		if err := j.Write(&ev[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	var got []map[string]string
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < len(ev) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		got = jd.Entries(t, "SYSLOG_IDENTIFIER=tracer")
	}
	if len(got) != len(ev) {
		t.Fatalf("journald has %d entries, want %d", len(got), len(ev))
	}
	if l := j.Loss(); l != (tracer.OutputLoss{}) {
		t.Errorf("loss %+v, want none", l)
	}
	for i, f := range got {
		e := &ev[i]
		if f["MESSAGE"] != string(appendMessage(nil, e)) || f["TRACER_PID"] != fmt.Sprint(e.PID) || f["PRIORITY"] != fmt.Sprint(severity(e)) {
			t.Errorf("entry %d: MESSAGE %q TRACER_PID %q PRIORITY %q", i, f["MESSAGE"], f["TRACER_PID"], f["PRIORITY"])
		}
		if f["TRACER_COMM"] != e.Comm {
			t.Errorf("entry %d: TRACER_COMM %q, want %q", i, f["TRACER_COMM"], e.Comm)
		}
	}
	if argv := got[0]["TRACER_ARGV"]; argv != `["curl","-d","a\nb","x\u202ey"]` {
		t.Errorf("TRACER_ARGV %s", argv)
	}
}

// The cost on the pipeline's goroutine: encoding an entry (the send is
// the sender goroutine's).
func BenchmarkJournalEncode(b *testing.B) {
	var j Journal
	e := testEvents()[0]
	buf := make([]byte, 0, 4096)
	for b.Loop() {
		buf = j.encode(buf[:0], &e)
	}
}
