// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"encoding/binary"
	"errors"

	"github.com/tracer-dev/tracer/tracer"
)

// The journal's fields are the event's JSON object, flattened: every key
// of the object AppendJSON writes becomes TRACER_KEY (upper case),
// a nested object's keys TRACER_KEY_SUBKEY (killed_by.pid:
// TRACER_KILLED_BY_PID), and an array (argv, ancestors) stays one field
// holding its JSON. Walking the JSON line rather than the Event keeps the
// journal's fields the JSON format's, present exactly when JSON has them.

// errBadJSON is a line the walker cannot read; it means a bug in the
// encoder, and the event is counted lost.
var errBadJSON = errors.New("event JSON the journal encoder cannot read")

// appendJournalField appends one field in the native protocol: KEY=value
// and a newline, or, when value holds a newline, KEY, a newline, the
// value's length (64-bit little endian), the value and a newline.
func appendJournalField(b []byte, key, value []byte) []byte {
	b = append(b, key...)
	if !containsNewline(value) {
		b = append(b, '=')
		b = append(b, value...)
		return append(b, '\n')
	}
	b = append(b, '\n')
	b = binary.LittleEndian.AppendUint64(b, uint64(len(value)))
	b = append(b, value...)
	return append(b, '\n')
}

func containsNewline(v []byte) bool {
	for _, c := range v {
		if c == '\n' {
			return true
		}
	}
	return false
}

// fieldWalker turns a JSON object into journal fields.
type fieldWalker struct {
	j     []byte // the object
	i     int
	key   []byte // the field name being built
	value []byte // a decoded string
}

// appendFields appends the fields of object j, each name prefixed.
func (w *fieldWalker) appendFields(b, j []byte, prefix string) ([]byte, error) {
	w.j, w.i = j, 0
	w.key = append(w.key[:0], prefix...)
	return w.object(b)
}

func (w *fieldWalker) object(b []byte) ([]byte, error) {
	if !w.eat('{') {
		return b, errBadJSON
	}
	base := len(w.key)
	if w.eat('}') {
		return b, nil
	}
	for {
		k, ok := w.rawString()
		if !ok || !w.eat(':') {
			return b, errBadJSON
		}
		w.key = w.key[:base]
		for _, c := range k {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			} else if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
				c = '_'
			}
			w.key = append(w.key, c)
		}
		var err error
		if b, err = w.value1(b); err != nil {
			return b, err
		}
		w.key = w.key[:base]
		if w.eat('}') {
			return b, nil
		}
		if !w.eat(',') {
			return b, errBadJSON
		}
	}
}

// value1 appends the field (or fields) of the value at w.i, named w.key.
func (w *fieldWalker) value1(b []byte) ([]byte, error) {
	if w.i >= len(w.j) {
		return b, errBadJSON
	}
	switch w.j[w.i] {
	case '"':
		if !w.stringValue() {
			return b, errBadJSON
		}
		return appendJournalField(b, w.key, w.value), nil
	case '{':
		w.key = append(w.key, '_')
		return w.object(b)
	case '[':
		start := w.i
		if !w.skipArray() {
			return b, errBadJSON
		}
		return appendJournalField(b, w.key, w.j[start:w.i]), nil
	}
	start := w.i
	for w.i < len(w.j) && w.j[w.i] != ',' && w.j[w.i] != '}' && w.j[w.i] != ']' {
		w.i++
	}
	if w.i == start {
		return b, errBadJSON
	}
	return appendJournalField(b, w.key, w.j[start:w.i]), nil
}

func (w *fieldWalker) eat(c byte) bool {
	if w.i < len(w.j) && w.j[w.i] == c {
		w.i++
		return true
	}
	return false
}

// rawString returns a string without escapes (a key) and moves past it.
func (w *fieldWalker) rawString() ([]byte, bool) {
	if !w.eat('"') {
		return nil, false
	}
	start := w.i
	for w.i < len(w.j) && w.j[w.i] != '"' {
		if w.j[w.i] == '\\' {
			return nil, false
		}
		w.i++
	}
	if w.i >= len(w.j) {
		return nil, false
	}
	w.i++
	return w.j[start : w.i-1], true
}

// skipArray moves past an array, strings and nested values included.
func (w *fieldWalker) skipArray() bool {
	depth := 0
	for w.i < len(w.j) {
		switch c := w.j[w.i]; c {
		case '"':
			w.i++
			for w.i < len(w.j) && w.j[w.i] != '"' {
				if w.j[w.i] == '\\' {
					w.i++
				}
				w.i++
			}
			if w.i >= len(w.j) {
				return false
			}
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				w.i++
				return true
			}
		}
		w.i++
	}
	return false
}

// stringValue decodes the JSON string at w.i into w.value, byte for byte
// what the event held: tracer's encoder writes a byte that is not UTF-8
// as \udcXX, and the journal's values are binary safe.
func (w *fieldWalker) stringValue() bool {
	w.i++ // the opening quote
	start := w.i
	for w.i < len(w.j) {
		switch w.j[w.i] {
		case '"':
			v, err := tracer.AppendJSONUnquoted(w.value[:0], w.j[start:w.i])
			if err != nil {
				return false
			}
			w.value = v
			w.i++
			return true
		case '\\':
			w.i += 2
		default:
			w.i++
		}
	}
	return false
}
