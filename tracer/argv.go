// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"bytes"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// AppendArgv appends to argv what an exec event keeps of its arguments,
// and reports whether anything was left out. block is the start of the
// exec's argument area, as the new image holds it: each argument followed
// by its NUL. argc is how many arguments the exec had; more says the area
// went on past block. Both backends cut here, so that they cannot
// disagree: at most ArgvBytesMax bytes of block, the last argument kept
// possibly cut short, and at most ArgvMax arguments.
func AppendArgv(argv []string, block []byte, argc int, more bool) (_ []string, truncated bool) {
	if len(block) > vocab.ArgvBytesMax {
		block, more = block[:vocab.ArgvBytesMax], true
	}
	for i := 0; i < min(argc, vocab.ArgvMax) && len(block) > 0; i++ {
		end := bytes.IndexByte(block, 0)
		if end < 0 {
			end = len(block) // cut short: no NUL
		}
		argv = append(argv, string(block[:end]))
		block = block[min(end+1, len(block)):]
	}
	return argv, more || argc > vocab.ArgvMax
}
