// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"os"
	"strings"
	"sync"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// What the schemas (ECS, OCSF) share.

// ProductVersion is tracer's version as the schemas name the product that
// wrote an event; the command sets it from its build.
var ProductVersion = "dev"

// nodeHostname is the node's name, read once: every event of a watch is of one
// node. Empty when it cannot be read (host is then left out).
var nodeHostname = sync.OnceValue(func() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return h
})

// carriesRet reports whether e carries a syscall's return value: an exec, and
// a signal a process sent with a syscall.
func carriesRet(e *tracer.Event) bool {
	return e.Type == vocab.TypeExec || e.Type == vocab.TypeSignal && e.Syscall != ""
}

// appendCommandLine appends argv as one JSON string, joined as a shell
// would read it back: an argument with a space, a quote or another
// character a shell treats specially is single-quoted, so that "a b" and
// "a" "b" never give the same line. Escaped as every string (no string
// is built: this runs for every exec).
func appendCommandLine(b []byte, argv []string) []byte {
	b = append(b, '"')
	for i, a := range argv {
		if i > 0 {
			b = append(b, ' ')
		}
		if shellPlain(a) {
			b = appendJSONContent(b, a)
			continue
		}
		b = append(b, '\'')
		for {
			j := strings.IndexByte(a, '\'')
			if j < 0 {
				break
			}
			b = appendJSONContent(b, a[:j])
			b = append(b, `'\\''`...) // close, an escaped quote, open again
			a = a[j+1:]
		}
		b = appendJSONContent(b, a)
		b = append(b, '\'')
	}
	return append(b, '"')
}

// appendJSONContent appends s escaped as in a JSON string, without the
// quotes around it.
func appendJSONContent(b []byte, s string) []byte {
	at := len(b)
	b = AppendJSONString(b, s)
	copy(b[at:], b[at+1:len(b)-1])
	return b[:len(b)-2]
}

// shellPlain reports whether a shell reads s as one word as it is.
func shellPlain(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '_' || c == '.' || c == '/' || c == ',' || c == ':' || c == '=' ||
			c == '+' || c == '@' || c == '%' || c >= 0x80) {
			return false
		}
	}
	return true
}
