// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"encoding/json"
	"fmt"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
)

// flattener turns the ECS document AppendECS makes into OpenTelemetry
// attributes: nested objects become dotted keys (process.parent.pid),
// arrays become slice attributes, and objects inside arrays map values.
// Reading the document back, rather than mapping the event a second
// time, keeps the OTLP attributes and --format ecs from ever disagreeing.
type flattener struct {
	b    []byte
	i    int
	key  []byte            // the dotted key being built
	keys map[string]string // dotted keys made so far: ECS has a fixed set
	// depth counts the map values being read: their objects nest.
	depth int
}

// flatten appends doc's attributes to kvs; @timestamp is left out (the
// record's own timestamp carries it), and so are nulls.
func (f *flattener) flatten(kvs []attribute.KeyValue, doc []byte) ([]attribute.KeyValue, error) {
	f.b, f.i, f.key, f.depth = doc, 0, f.key[:0], 0
	if f.keys == nil {
		f.keys = make(map[string]string)
	}
	kvs, err := f.object(kvs)
	if err == nil && f.skipSpace() != len(f.b) {
		err = f.errorf("data after the document")
	}
	return kvs, err
}

func (f *flattener) errorf(format string, a ...any) error {
	return fmt.Errorf("reading ECS document at byte %d: %s", f.i, fmt.Sprintf(format, a...))
}

func (f *flattener) skipSpace() int {
	for f.i < len(f.b) && (f.b[f.i] == ' ' || f.b[f.i] == '\n' || f.b[f.i] == '\t' || f.b[f.i] == '\r') {
		f.i++
	}
	return f.i
}

func (f *flattener) expect(c byte) error {
	if f.skipSpace() >= len(f.b) || f.b[f.i] != c {
		return f.errorf("want %q", c)
	}
	f.i++
	return nil
}

// object reads an object whose members go under f.key.
func (f *flattener) object(kvs []attribute.KeyValue) ([]attribute.KeyValue, error) {
	if err := f.expect('{'); err != nil {
		return kvs, err
	}
	prefix := len(f.key)
	if f.skipSpace() < len(f.b) && f.b[f.i] == '}' {
		f.i++
		return kvs, nil
	}
	for {
		name, err := f.rawString()
		if err != nil {
			return kvs, err
		}
		if err := f.expect(':'); err != nil {
			return kvs, err
		}
		f.key = f.key[:prefix]
		if prefix > 0 {
			f.key = append(f.key, '.')
		}
		f.key = append(f.key, name...)
		if f.depth == 0 && f.skipSpace() < len(f.b) && f.b[f.i] == '{' {
			if kvs, err = f.object(kvs); err != nil {
				return kvs, err
			}
		} else {
			v, ok, err := f.value()
			if err != nil {
				return kvs, err
			}
			switch {
			case !ok, prefix == 0 && f.depth == 0 && string(name) == "@timestamp":
			case f.depth > 0:
				kvs = append(kvs, attribute.KeyValue{Key: attribute.Key(name), Value: v})
			default:
				kvs = append(kvs, attribute.KeyValue{Key: attribute.Key(f.dottedKey()), Value: v})
			}
		}
		f.skipSpace()
		if f.i < len(f.b) && f.b[f.i] == ',' {
			f.i++
			continue
		}
		f.key = f.key[:prefix]
		return kvs, f.expect('}')
	}
}

// dottedKey is f.key as a string, made once per key.
func (f *flattener) dottedKey() string {
	if k, ok := f.keys[string(f.key)]; ok {
		return k
	}
	k := string(f.key)
	f.keys[k] = k
	return k
}

// value reads a value that is not a member object; ok is false for null.
func (f *flattener) value() (attribute.Value, bool, error) {
	if f.skipSpace() >= len(f.b) {
		return attribute.Value{}, false, f.errorf("want a value")
	}
	switch f.b[f.i] {
	case '"':
		s, err := f.string()
		return attribute.StringValue(s), true, err
	case '[':
		v, err := f.array()
		return v, true, err
	case '{':
		v, err := f.mapValue()
		return v, true, err
	case 't', 'f', 'n':
		for _, w := range []string{"true", "false", "null"} {
			if len(f.b)-f.i >= len(w) && string(f.b[f.i:f.i+len(w)]) == w {
				f.i += len(w)
				return attribute.BoolValue(w == "true"), w != "null", nil
			}
		}
		return attribute.Value{}, false, f.errorf("bad literal")
	default:
		return f.number()
	}
}

// array reads an array: a slice of strings when all are (process.args),
// else a slice of values.
func (f *flattener) array() (attribute.Value, error) {
	f.i++ // [
	var vals []attribute.Value
	strs := true
	if f.skipSpace() < len(f.b) && f.b[f.i] == ']' {
		f.i++
		return attribute.StringSliceValue(nil), nil
	}
	for {
		v, ok, err := f.value()
		if err != nil {
			return v, err
		}
		if ok {
			strs = strs && v.Type() == attribute.STRING
			vals = append(vals, v)
		}
		f.skipSpace()
		if f.i < len(f.b) && f.b[f.i] == ',' {
			f.i++
			continue
		}
		if err := f.expect(']'); err != nil {
			return v, err
		}
		break
	}
	if strs {
		ss := make([]string, len(vals))
		for i, v := range vals {
			ss[i] = v.AsString()
		}
		return attribute.StringSliceValue(ss), nil
	}
	return attribute.SliceValue(vals...), nil
}

// mapValue reads an object inside an array (tracer.ancestors) as a map
// value of its own, with undotted keys.
func (f *flattener) mapValue() (attribute.Value, error) {
	outer := f.key
	f.key = nil
	f.depth++
	kvs, err := f.object(nil)
	f.depth--
	f.key = outer
	return attribute.MapValue(kvs...), err
}

func (f *flattener) number() (attribute.Value, bool, error) {
	start, isInt := f.i, true
	for f.i < len(f.b) {
		c := f.b[f.i]
		if c == '.' || c == 'e' || c == 'E' {
			isInt = false
		} else if !(c == '-' || c == '+' || '0' <= c && c <= '9') {
			break
		}
		f.i++
	}
	s := string(f.b[start:f.i])
	if isInt {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return attribute.Int64Value(n), true, nil
		}
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return attribute.Value{}, false, f.errorf("bad number %q", s)
	}
	return attribute.Float64Value(x), true, nil
}

// rawString reads a string with no escapes (a key) and returns its bytes.
func (f *flattener) rawString() ([]byte, error) {
	if err := f.expect('"'); err != nil {
		return nil, err
	}
	start := f.i
	for f.i < len(f.b) && f.b[f.i] != '"' {
		if f.b[f.i] == '\\' {
			return nil, f.errorf("escaped key")
		}
		f.i++
	}
	if f.i >= len(f.b) {
		return nil, f.errorf("unterminated key")
	}
	f.i++
	return f.b[start : f.i-1], nil
}

// string reads a string value. An escape is decoded as JSON does: a byte
// that was not UTF-8, which the lines write as \udcXX, becomes U+FFFD, as
// an OTLP string must be UTF-8.
func (f *flattener) string() (string, error) {
	start := f.i
	f.i++
	escaped := false
	for f.i < len(f.b) {
		switch f.b[f.i] {
		case '\\':
			escaped = true
			f.i += 2
			continue
		case '"':
			f.i++
			if !escaped {
				return string(f.b[start+1 : f.i-1]), nil
			}
			var s string
			if err := json.Unmarshal(f.b[start:f.i], &s); err != nil {
				return "", fmt.Errorf("reading ECS document: %w", err)
			}
			return s, nil
		}
		f.i++
	}
	return "", f.errorf("unterminated string")
}
