package sink

import (
	"os"
	"sync"

	"github.com/tracer-dev/tracer/tracer"
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
	return e.Type == tracer.TypeExec || e.Type == tracer.TypeSignal && e.Syscall != ""
}

// shellCommandLine joins argv as a shell would read it back: an argument with
// a space, a quote or another character a shell treats specially is
// single-quoted, so that "a b" and "a" "b" never give the same line.
func shellCommandLine(argv []string) string {
	var b []byte
	for i, a := range argv {
		if i > 0 {
			b = append(b, ' ')
		}
		b = appendShellWord(b, a)
	}
	return string(b)
}

func appendShellWord(b []byte, s string) []byte {
	plain := s != ""
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '_' || c == '.' || c == '/' || c == ',' || c == ':' || c == '=' ||
			c == '+' || c == '@' || c == '%' || c >= 0x80
	}
	if plain {
		return append(b, s...)
	}
	b = append(b, '\'')
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			b = append(b, `'\''`...)
		} else {
			b = append(b, s[i])
		}
	}
	return append(b, '\'')
}
