// SPDX-License-Identifier: Apache-2.0

package tracer_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// AppendArgv makes the cut that docs/events.md documents (as the tests
// read it, tracertest.CutArgv), from the whole argument area or from the
// capped part of it that the eBPF side reads.
func TestAppendArgvCut(t *testing.T) {
	var argvs [][]string
	for _, a := range tracertest.LongArgs(tracertest.ArgSizes...) {
		argvs = append(argvs, []string{"/bin/sh", "-c", a, "TAIL_MARKER"})
	}
	for _, n := range []int{0, 1, vocab.ArgvBytesMax - 2, vocab.ArgvBytesMax - 1, vocab.ArgvBytesMax, vocab.ArgvBytesMax + 1} {
		argvs = append(argvs, []string{strings.Repeat("z", n)}, []string{"a", strings.Repeat("z", n), "b"})
	}
	for n := range vocab.ArgvMax + 2 {
		argvs = append(argvs, slices.Repeat([]string{"x"}, n))
	}
	for _, argv := range argvs {
		block := []byte(strings.Join(argv, "\x00") + "\x00")
		want, cut := tracertest.CutArgv(argv)
		for _, read := range []int{len(block), min(len(block), vocab.ArgvBytesMax)} {
			got, trunc := tracer.AppendArgv(nil, block[:read], len(argv), read < len(block))
			if !slices.Equal(got, want) || trunc != cut {
				t.Errorf("%d arguments of %d bytes, %d read: got %d arguments, truncated %v; want %d, %v",
					len(argv), len(block), read, len(got), trunc, len(want), cut)
			}
		}
	}
}
