package tracer

import (
	"io"
	"strconv"
	"unicode/utf8"
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
type JSONSink struct{ bufSink }

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
	s.buf = AppendJSON(s.buf[:0], e)
	s.buf = append(s.buf, '\n')
	return s.write(s.buf)
}

// AppendJSON appends e as one JSON object, with the fields docs/events.md gives its type.
func AppendJSON(b []byte, e *Event) []byte {
	b = append(b, `{"time":"`...)
	b = appendRFC3339Nano(b, e.Time)
	b = append(b, `","backend":`...)
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
		b = append(b, `],"ret":`...)
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

// appendString appends s as a JSON string; invalid UTF-8 becomes U+FFFD,
// control characters (C0, DEL, C1) and U+2028/U+2029 become \u escapes.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r <= 0x9f || r == 0x2028 || r == 0x2029:
			// Valid JSON raw, but C1 controls drive terminals that cat or
			// tail the file, and JavaScript ends a line at U+2028/U+2029.
			b = append(b, '\\', 'u')
			b = appendHex(b, uint32(r), 4)
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
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
