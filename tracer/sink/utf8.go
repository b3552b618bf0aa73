// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"encoding/base64"
	"unicode/utf8"

	"github.com/tracer-dev/tracer/tracer"
)

// The ECS and OCSF documents go to pipelines whose JSON parsers refuse
// the lone surrogate (\udcXX) tracer's own JSON lines write for a byte
// that is not UTF-8 (serde_json, Vector's parse_json): one such byte in
// an argv would cost the whole event there. Those formats write U+FFFD
// for each such byte instead, and the raw bytes under raw_base64
// (appendRawBase64), so nothing is lost and every parser reads the
// document.

// eventUTF8 reports whether every string of e is UTF-8.
func eventUTF8(e *tracer.Event) bool {
	if !utf8.ValidString(e.Backend) || !utf8.ValidString(e.Comm) || !utf8.ValidString(e.Filename) ||
		!utf8.ValidString(e.Syscall) || !utf8.ValidString(e.TargetComm) || !utf8.ValidString(e.Cgroup) ||
		!utf8.ValidString(e.ContainerID) || !utf8.ValidString(e.Unit) || !utf8.ValidString(e.TTY) ||
		!utf8.ValidString(e.Exe) || !utf8.ValidString(e.Cwd) || !utf8.ValidString(e.Key) ||
		!utf8.ValidString(e.KilledBy.Comm) || !utf8.ValidString(e.KilledBy.Syscall) {
		return false
	}
	for _, a := range e.Argv {
		if !utf8.ValidString(a) {
			return false
		}
	}
	for i := range e.Ancestors {
		if !utf8.ValidString(e.Ancestors[i].Comm) {
			return false
		}
	}
	return true
}

// utf8Event returns a copy of e whose strings have U+FFFD for each byte
// that is not UTF-8 (one per byte, not per run, so lengths still tell).
func utf8Event(e *tracer.Event) tracer.Event {
	c := *e
	for _, s := range []*string{&c.Backend, &c.Comm, &c.Filename, &c.Syscall, &c.TargetComm, &c.Cgroup,
		&c.ContainerID, &c.Unit, &c.KilledBy.Comm, &c.KilledBy.Syscall, &c.TTY, &c.Exe, &c.Cwd, &c.Key} {
		*s = validUTF8(*s)
	}
	c.Argv = make([]string, len(e.Argv))
	for i, a := range e.Argv {
		c.Argv[i] = validUTF8(a)
	}
	c.Ancestors = append([]tracer.Ancestor(nil), e.Ancestors...)
	for i := range c.Ancestors {
		c.Ancestors[i].Comm = validUTF8(c.Ancestors[i].Comm)
	}
	return c
}

// validUTF8 is s with U+FFFD for each byte that is not UTF-8.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}

// appendRawBase64 appends ,"raw_base64":{...}: the fields of e that are
// not UTF-8, under the names and in the shape of tracer's JSON lines,
// each value the standard base64 of the raw bytes. argv and ancestors,
// when one of theirs is not UTF-8, are given whole, so indexes match.
// Nothing is appended when every string is UTF-8.
func appendRawBase64(b []byte, e *tracer.Event) []byte {
	start := len(b)
	b = append(b, `,"raw_base64":{`...)
	sep := byte(0)
	field := func(name, s string) {
		if utf8.ValidString(s) {
			return
		}
		if sep != 0 {
			b = append(b, sep)
		}
		sep = ','
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":"`...)
		b = base64.StdEncoding.AppendEncode(b, []byte(s))
		b = append(b, '"')
	}
	field("backend", e.Backend)
	field("comm", e.Comm)
	field("filename", e.Filename)
	for _, a := range e.Argv {
		if utf8.ValidString(a) {
			continue
		}
		if sep != 0 {
			b = append(b, sep)
		}
		sep = ','
		b = append(b, `"argv":[`...)
		for i, a := range e.Argv {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, []byte(a))
			b = append(b, '"')
		}
		b = append(b, ']')
		break
	}
	for _, f := range rawAfterArgv(e) {
		field(f.name, f.s)
	}
	if !utf8.ValidString(e.KilledBy.Comm) || !utf8.ValidString(e.KilledBy.Syscall) {
		if sep != 0 {
			b = append(b, sep)
		}
		b = append(b, `"killed_by":{`...)
		sep = 0
		field("comm", e.KilledBy.Comm)
		field("syscall", e.KilledBy.Syscall)
		b = append(b, '}')
		sep = ','
	}
	for i := range e.Ancestors {
		if utf8.ValidString(e.Ancestors[i].Comm) {
			continue
		}
		if sep != 0 {
			b = append(b, sep)
		}
		sep = ','
		b = append(b, `"ancestors":[`...)
		for j := range e.Ancestors {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"comm":"`...)
			b = base64.StdEncoding.AppendEncode(b, []byte(e.Ancestors[j].Comm))
			b = append(b, `"}`...)
		}
		b = append(b, ']')
		break
	}
	if sep == 0 {
		return b[:start]
	}
	return append(b, '}')
}

// rawField is a string field raw_base64 may give, by its name there.
type rawField struct{ name, s string }

// rawAfterArgv are the flat string fields raw_base64 gives after argv, in
// its order: one list for the ECS document and OTLP's attributes.
func rawAfterArgv(e *tracer.Event) [9]rawField {
	return [9]rawField{{"syscall", e.Syscall}, {"target_comm", e.TargetComm}, {"cgroup", e.Cgroup},
		{"container_id", e.ContainerID}, {"unit", e.Unit}, {"tty", e.TTY}, {"exe", e.Exe}, {"cwd", e.Cwd}, {"key", e.Key}}
}
