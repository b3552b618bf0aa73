package tracer

import (
	"io"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"
)

// Sink writes events somewhere. Write is called from one goroutine; Flush and
// Close may be called from another.
type Sink interface {
	Write(e *Event) error
	Flush() error
	Close() error
}

// NewSink returns the sink for a --format value: "text" or "json".
func NewSink(format string, w io.Writer, opts OutputOptions) (Sink, error) {
	switch format {
	case "text", "":
		return NewTextSink(w, opts), nil
	case "json":
		return NewJSONSink(w, opts), nil
	}
	return nil, Usagef("unknown format %q: use text or json", format)
}

// JSONSink writes JSON lines: one object per event (docs/events.md).
type JSONSink struct {
	bufSink
	// The last event encoded: in a storm one process sends the same signal
	// to the same target again and again, and the kernel stamps events
	// once per tick, so most lines are the last one again, or the last one
	// with another time. buf holds the last line; body is where its part
	// after the time starts.
	last     Event
	haveLast bool
	body     int
	tbuf     []byte // a new time
	spare    []byte // a line being rebuilt around a new time
}

// NewJSONSink writes JSON lines to w through an output queue (opts: at
// most one; default: drop and count when the queue is full).
func NewJSONSink(w io.Writer, opts ...OutputOptions) *JSONSink {
	s := &JSONSink{}
	s.init(w, opts)
	return s
}

// Write encodes e. The encoder is hand-written: at 200,000 events a second
// encoding/json's reflection would be the consumer's largest cost.
func (s *JSONSink) Write(e *Event) error {
	switch {
	case !s.haveLast || !sameButTime(e, &s.last):
		s.buf = appendJSONTime(s.buf[:0], e.Time)
		s.body = len(s.buf)
		s.buf = appendJSONBody(s.buf, e)
		s.buf = append(s.buf, '\n')
		s.remember(e)
	case !e.Time.Equal(s.last.Time):
		t := appendJSONTime(s.tbuf[:0], e.Time)
		s.tbuf = t
		if len(t) == s.body {
			copy(s.buf, t)
		} else { // a fraction with another number of digits
			s.spare = append(append(s.spare[:0], t...), s.buf[s.body:]...)
			s.buf, s.spare, s.body = s.spare, s.buf, len(t)
		}
		s.last.Time = e.Time
	}
	return s.write(s.buf)
}

// remember keeps a copy of e, its slices included (backends reuse theirs).
func (s *JSONSink) remember(e *Event) {
	argv, anc := s.last.Argv[:0], s.last.Ancestors[:0]
	s.last = *e
	s.last.Argv = append(argv, e.Argv...)
	s.last.Ancestors = append(anc, e.Ancestors...)
	s.haveLast = true
}

// sameButTime reports whether a and b differ at most in their time, that
// is whether their JSON lines differ at most there. It names every field
// of Event but Time (TestSameButTimeSeesEveryField checks that).
func sameButTime(a, b *Event) bool {
	return a.Type == b.Type && a.PID == b.PID && a.UID == b.UID && a.AUID == b.AUID &&
		a.PPID == b.PPID && a.ArgvTruncated == b.ArgvTruncated && a.Ret == b.Ret && a.ChildPID == b.ChildPID &&
		a.TargetPID == b.TargetPID && a.Signal == b.Signal && a.ExitCode == b.ExitCode &&
		a.CoreDumped == b.CoreDumped && a.CoreUnknown == b.CoreUnknown && a.OOMKill == b.OOMKill &&
		a.Code == b.Code && a.HasCode == b.HasCode && a.Origin == b.Origin && a.Result == b.Result &&
		a.TargetExecID == b.TargetExecID && a.ExecID == b.ExecID && a.ParentExecID == b.ParentExecID &&
		sameString(a.Backend, b.Backend) && sameString(a.Comm, b.Comm) && sameString(a.Filename, b.Filename) &&
		sameString(a.Syscall, b.Syscall) && sameString(a.TargetComm, b.TargetComm) &&
		sameString(a.Cgroup, b.Cgroup) && sameString(a.ContainerID, b.ContainerID) && sameString(a.Unit, b.Unit) &&
		sameKiller(&a.KilledBy, &b.KilledBy) &&
		slices.Equal(a.Argv, b.Argv) && slices.Equal(a.Ancestors, b.Ancestors)
}

func sameKiller(a, b *KilledBy) bool {
	return a.Origin == b.Origin && a.PID == b.PID && a.ExecID == b.ExecID && a.Code == b.Code &&
		sameString(a.Comm, b.Comm) && sameString(a.Syscall, b.Syscall)
}

// sameString is a == b, without a call where both are the same string:
// backends intern the strings of their events.
func sameString(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

// AppendJSON appends e as one JSON object, with the fields docs/events.md gives its type.
func AppendJSON(b []byte, e *Event) []byte {
	return appendJSONBody(appendJSONTime(b, e.Time), e)
}

// appendJSONTime appends the start of an event's object, up to and with
// the closing quote of its time.
func appendJSONTime(b []byte, t time.Time) []byte {
	b = append(b, `{"time":"`...)
	b = appendRFC3339Nano(b, t)
	return append(b, '"')
}

// appendJSONBody appends the rest of the object after its time.
func appendJSONBody(b []byte, e *Event) []byte {
	b = append(b, `,"backend":`...)
	b = appendString(b, e.Backend)
	b = append(b, `,"type":"`...)
	b = append(b, e.Type.String()...)
	b = append(b, `","pid":`...)
	b = strconv.AppendUint(b, uint64(e.PID), 10)
	b = append(b, `,"comm":`...)
	b = appendString(b, e.Comm)
	b = append(b, `,"uid":`...)
	b = strconv.AppendUint(b, uint64(e.UID), 10)
	b = append(b, `,"auid":`...)
	b = strconv.AppendUint(b, uint64(e.AUID), 10)
	b = appendIdentityJSON(b, e)
	switch e.Type {
	case TypeExec:
		b = append(b, `,"ppid":`...)
		b = strconv.AppendUint(b, uint64(e.PPID), 10)
		b = append(b, `,"filename":`...)
		b = appendString(b, e.Filename)
		b = append(b, `,"argv":[`...)
		for i, a := range e.Argv {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, a)
		}
		b = append(b, ']')
		if e.ArgvTruncated {
			b = append(b, `,"argv_truncated":true`...)
		}
		b = append(b, `,"ret":`...)
		b = strconv.AppendInt(b, e.Ret, 10)
	case TypeFork:
		b = append(b, `,"child_pid":`...)
		b = strconv.AppendUint(b, uint64(e.ChildPID), 10)
		b = append(b, `,"syscall":`...)
		b = appendString(b, e.Syscall)
	case TypeSignal:
		b = append(b, `,"target_pid":`...)
		b = strconv.AppendInt(b, int64(e.TargetPID), 10)
		b = append(b, `,"signal":`...)
		b = strconv.AppendInt(b, int64(e.Signal), 10)
		b = append(b, `,"signal_name":`...)
		b = appendString(b, SignalName(e.Signal))
		b = appendSignalJSON(b, e)
	case TypeExit:
		b = appendExitJSON(b, e)
	}
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// jsonPlain marks the bytes appendString copies as they are: printable
// ASCII other than '"' and '\\'. Every other byte starts an escape or a
// multi-byte rune to check.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendString appends s as a JSON string; invalid UTF-8 becomes U+FFFD,
// control characters (C0, DEL, C1) and U+2028/U+2029 become \u escapes.
// Runs of bytes that need nothing are appended at once: comms, paths and
// cgroups are almost always plain ASCII, and a byte-at-a-time append was
// the largest cost of a JSON line.
func appendString(b []byte, s string) []byte {
	i := plainLen(s)
	if i == len(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	return appendEscapedString(b, s, i)
}

// appendEscapedString is appendString for s whose first byte that is not
// plain is at i.
func appendEscapedString(b []byte, s string, i int) []byte {
	b = append(b, '"')
	start := 0 // s[start:i] is plain, not yet appended
	for ; i < len(s); i += plainLen(s[i:]) {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if !(r == utf8.RuneError && size == 1) && r > 0x9f && r != 0x2028 && r != 0x2029 {
				i += size // a valid rune that needs no escape: part of the run
				continue
			}
			b = append(b, s[start:i]...)
			if r == utf8.RuneError && size == 1 {
				b = append(b, `\ufffd`...)
			} else {
				// Valid JSON raw, but C1 controls drive terminals that cat or
				// tail the file, and JavaScript ends a line at U+2028/U+2029.
				b = append(b, '\\', 'u')
				b = appendHex(b, uint32(r), 4)
			}
			i += size
			start = i
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\t':
			b = append(b, '\\', 't')
		case '\r':
			b = append(b, '\\', 'r')
		default: // C0 and DEL
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// plainLen is the length of the run of plain bytes s starts with, 8 bytes
// at a time.
func plainLen(s string) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := s[i : i+8]
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		if !plainWord(x) {
			break
		}
	}
	for ; i < len(s); i++ {
		if !jsonPlain[s[i]] {
			return i
		}
	}
	return len(s)
}

// plainWord reports whether the 8 bytes of x are all plain: no byte below
// 0x20 or above 0x7e, none '"' or '\\'. Each test is exact for "some byte
// of x": a borrow or carry can only spread from a byte that was bad.
func plainWord(x uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	below := (x - lo*0x20) & ^x & hi // a byte < 0x20
	above := ((x + lo) | x) & hi     // a byte > 0x7e
	quote := x ^ (lo * '"')
	bslash := x ^ (lo * '\\')
	zero := ((quote - lo) & ^quote) | ((bslash - lo) & ^bslash)
	return (below|above|zero)&hi == 0
}

// TextSink prints one readable line per event, in columns like execsnoop and killsnoop.
type TextSink struct {
	bufSink
	header bool
}

// NewTextSink writes text lines to w through an output queue (opts as
// for NewJSONSink).
func NewTextSink(w io.Writer, opts ...OutputOptions) *TextSink {
	s := &TextSink{}
	s.init(w, opts)
	return s
}

// TextHeader is the column header TextSink prints first.
const TextHeader = "TIME         BACKEND TYPE   PID     COMM             UID   DETAILS\n"

// Write prints e.
func (s *TextSink) Write(e *Event) error {
	b := s.buf[:0]
	if !s.header {
		s.header = true
		b = append(b, TextHeader...)
	}
	b = AppendText(b, e)
	b = append(b, '\n')
	s.buf = b
	return s.write(b)
}

// AppendText appends the text line for e, without a newline. Every string
// is escaped (see Escape): comm, file names and argv come from whoever runs
// a process, and one event must stay one line that drives no terminal.
func AppendText(b []byte, e *Event) []byte {
	b = e.Time.Local().AppendFormat(b, "15:04:05.000")
	b = append(b, ' ')
	b = appendColumn(b, e.Backend, 7)
	b = append(b, ' ')
	b = appendColumn(b, e.Type.String(), 6)
	b = append(b, ' ')
	b = appendUintColumn(b, uint64(e.PID), 7)
	b = append(b, ' ')
	b = appendColumn(b, e.Comm, 16)
	b = append(b, ' ')
	b = appendUintColumn(b, uint64(e.UID), 5)
	b = append(b, ' ')
	switch e.Type {
	case TypeExec:
		b = append(b, "ppid="...)
		b = strconv.AppendUint(b, uint64(e.PPID), 10)
		b = append(b, " ret="...)
		b = strconv.AppendInt(b, e.Ret, 10)
		b = append(b, ' ')
		b = AppendEscaped(b, e.Filename)
		for _, a := range e.Argv {
			b = append(b, ' ')
			b = appendQuoted(b, a)
		}
		if e.ArgvTruncated {
			b = append(b, " [argv truncated]"...)
		}
	case TypeFork:
		b = AppendEscaped(b, e.Syscall)
		b = append(b, " -> "...)
		b = strconv.AppendUint(b, uint64(e.ChildPID), 10)
	case TypeSignal:
		// The helpers quote the comms they print; sanitizeFrom holds the
		// line to its guarantee whatever they let through.
		at := len(b)
		b = sanitizeFrom(appendSignalText(b, e), at)
	case TypeExit:
		at := len(b)
		b = sanitizeFrom(appendExitText(b, e), at)
	}
	return b
}
