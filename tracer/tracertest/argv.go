// SPDX-License-Identifier: Apache-2.0

package tracertest

import (
	"strings"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// ArgSizes are the lengths of the long-argument tests: empty, short, just
// under and just over the kernel's 7,500 bytes per EXECVE record (the
// latter always hex-encoded across records), and MAX_ARG_STRLEN, the
// longest the kernel takes with its NUL (an exec takes one byte less).
var ArgSizes = []int{0, 100, 7400, 8200, 131072}

// MaxExecArg is the longest argument an exec takes (MAX_ARG_STRLEN less its NUL).
const MaxExecArg = 131071

// LongArgs returns an argument of each kind for each size: plain (which
// the kernel logs quoted), with spaces and quotes, and with control and
// non-ASCII bytes (both of which it logs hex-encoded). Every argument
// differs along its length, so that a misplaced cut shows.
func LongArgs(sizes ...int) []string {
	kinds := []func(i int) byte{
		func(i int) byte { return "abcdefghijklmnopqrstuvwxyz0123456789"[i%36] },
		func(i int) byte { return `say "hi" 'x' y `[i%15] },
		func(i int) byte { return byte(1 + i%255) }, // every byte but NUL
	}
	var out []string
	for _, n := range sizes {
		for _, kind := range kinds {
			var b strings.Builder
			b.Grow(n)
			for i := range n {
				b.WriteByte(kind(i))
			}
			out = append(out, b.String())
		}
	}
	return out
}

// CutArgv is what an exec event's argv must hold for arguments args, and
// whether it must say it was cut: at most vocab.ArgvMax arguments and
// vocab.ArgvBytesMax bytes counting a NUL after each. It is the tests'
// reading of the documented cap, written apart from tracer.AppendArgv.
func CutArgv(args []string) (kept []string, truncated bool) {
	used := 0
	for i, a := range args {
		if i == vocab.ArgvMax {
			return kept, true
		}
		if used+len(a)+1 > vocab.ArgvBytesMax {
			if room := vocab.ArgvBytesMax - used; room > 0 {
				kept = append(kept, a[:room])
			}
			return kept, true
		}
		kept = append(kept, a)
		used += len(a) + 1
	}
	return kept, false
}
