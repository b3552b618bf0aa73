// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Comm, file names and argv are chosen by whoever runs a process, so the
// text formats print them escaped: a newline would forge an output line,
// ESC or a C1 control (U+009B is CSI) would drive the reader's terminal.
// The escapes are Go's (\n, \t, \x1b, \u0085, \xff for a byte that is not
// UTF-8), so a field reads like a Go string literal; printable UTF-8 stays
// as it is.

// Escape returns s with control characters, non-printable runes, invalid
// UTF-8 and backslashes escaped. It returns s itself when nothing needs
// escaping, which is the common case, without allocating.
func Escape(s string) string {
	for i := 0; i < len(s); i++ {
		if !plainByte(s[i]) {
			return string(AppendEscaped(make([]byte, 0, len(s)+8), s))
		}
	}
	return s
}

// AppendEscaped appends s to b escaped as Escape does. The result is valid
// UTF-8 and holds no byte below 0x20, no DEL and no C1 control.
func AppendEscaped(b []byte, s string) []byte {
	return appendEscaped(b, s, 0, true)
}

// appendField appends s escaped, and in double quotes when it is empty
// or holds a space or a quote: a reader that splits a line at spaces
// (awk, an eye on the columns) sees one field whatever a process named
// itself, and a field without quotes holds neither. Other whitespace is
// escaped already (strconv.IsPrint takes only the ASCII space).
func appendField(b []byte, s string) []byte {
	if needsQuotes(s) {
		return appendQuoted(b, s)
	}
	return AppendEscaped(b, s)
}

// needsQuotes reports whether appendField quotes s.
func needsQuotes(s string) bool { return s == "" || strings.ContainsAny(s, ` "`) }

// appendQuoted appends s in double quotes, escaped as strconv.Quote does.
func appendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendEscaped(b, s, '"', true)
	return append(b, '"')
}

// sanitizeFrom escapes what Escape would in b[from:], except backslashes:
// text that helpers already escaped stays as it is, and whatever they
// missed still cannot reach the reader raw.
func sanitizeFrom(b []byte, from int) []byte {
	for i := from; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c >= 0x7f {
			tail := string(b[from:]) // a copy: b[from:] is written over
			return appendEscaped(b[:from], tail, 0, false)
		}
	}
	return b
}

// plainByte reports whether c is printable ASCII other than a backslash:
// the bytes that are copied as they are.
func plainByte(c byte) bool {
	return c >= 0x20 && c < 0x7f && c != '\\'
}

// appendEscaped escapes s onto b; quote, when not 0, is escaped too, and
// backslashes when backslash is set.
func appendEscaped(b []byte, s string, quote byte, backslash bool) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c == '\\' && backslash || quote != 0 && c == quote:
				b = append(b, '\\', c)
			case c >= 0x20 && c < 0x7f:
				b = append(b, c)
			default:
				b = appendControl(b, c)
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
		case strconv.IsPrint(r): // false for C1 controls, U+2028, bidi overrides
			b = append(b, s[i:i+size]...)
		case r < 0x10000:
			b = append(b, '\\', 'u')
			b = appendHex(b, uint32(r), 4)
		default:
			b = append(b, '\\', 'U')
			b = appendHex(b, uint32(r), 8)
		}
		i += size
	}
	return b
}

// controlLetters holds the letter of the control characters that have a
// one-letter escape (\n), zero for the others.
var controlLetters = [...]byte{'\a': 'a', '\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't', '\v': 'v'}

// appendControl escapes an ASCII control character or DEL.
func appendControl(b []byte, c byte) []byte {
	if int(c) < len(controlLetters) && controlLetters[c] != 0 {
		return append(b, '\\', controlLetters[c])
	}
	return append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
}

// appendHex appends the low digits hex digits of v.
func appendHex(b []byte, v uint32, digits int) []byte {
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		b = append(b, hexDigits[v>>uint(shift)&0xf])
	}
	return b
}

// appendColumn appends s as a field (appendField) left-aligned in a
// column of width runes, as fmt's %-*s did: a longer string widens its
// column.
func appendColumn(b []byte, s string, width int) []byte {
	start := len(b)
	b = appendField(b, s)
	return appendPad(b, width-utf8.RuneCount(b[start:]))
}

// appendUintColumn appends v left-aligned in a column of width digits.
func appendUintColumn(b []byte, v uint64, width int) []byte {
	start := len(b)
	b = strconv.AppendUint(b, v, 10)
	return appendPad(b, width-(len(b)-start))
}

func appendPad(b []byte, n int) []byte {
	for ; n > 0; n-- {
		b = append(b, ' ')
	}
	return b
}
