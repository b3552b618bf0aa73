// SPDX-License-Identifier: Apache-2.0

//go:build linux

package tracer_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/audit"
	"github.com/tracer-dev/tracer/tracer/bpfbackend"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Execs of arguments of every length and kind, for real under both
// backends: each exec's argv is its arguments up to the documented cap
// (vocab.ArgvMax, vocab.ArgvBytesMax), argv_truncated says exactly when
// they were cut, and the backends agree byte for byte. The audit backend
// reads the long ones from many EXECVE records, in hex and quoted pieces.
func TestLongArgvBothBackends(t *testing.T) {
	tracertest.LockAudit(t)
	bin := tracertest.BuildWorkload(t)
	var sizes []int
	for _, n := range tracertest.ArgSizes {
		sizes = append(sizes, min(n, tracertest.MaxExecArg)) // longer, the exec fails with E2BIG
	}
	// One child exec per argument, and the workload's own exec with them
	// all: over both caps.
	args := []string{"execargs", "/bin/true", "TAIL_MARKER"}
	var want [][]string
	for _, a := range tracertest.LongArgs(sizes...) {
		args = append(args, "execargs", "/bin/true", a)
		want = append(want, []string{"/bin/true", a})
	}
	args = append(args, "exit", "0")
	want = append([][]string{append([]string{bin}, args...), {"/bin/true", "TAIL_MARKER"}}, want...)

	cfg := tracer.DefaultConfig()
	cfg.Types, _ = vocab.ParseTypes("exec,fork,exit")
	seen := map[string][]tracer.Event{}
	for _, r := range []struct {
		name   string
		b      tracer.Backend
		probes string
	}{{"audit", audit.New(), ""}, {"ebpf", bpfbackend.New(), ""}, {"ebpf-syscalls", bpfbackend.New(), "syscalls"}} {
		cfg.Probes = r.probes
		events, _ := tracertest.RunWorkload(t, r.b, cfg, bin, args...)
		if err := r.b.Close(); err != nil {
			t.Fatalf("%s Close: %v", r.name, err)
		}
		if st := r.b.Stats(); st.TotalLost() != 0 {
			t.Errorf("%s lost %v", r.name, st.Lost)
		}
		var execs []tracer.Event
		for _, e := range events {
			if e.Type == vocab.TypeExec {
				execs = append(execs, e)
			}
		}
		if len(execs) != len(want) {
			t.Fatalf("%s: %d execs, want %d", r.name, len(execs), len(want))
		}
		// vfork: each child execs before the next starts, in argument order.
		for i, e := range execs {
			kept, cut := tracertest.CutArgv(want[i])
			if !slices.Equal(e.Argv, kept) || e.ArgvTruncated != cut {
				t.Errorf("%s, exec %d of %d arguments, %d bytes: argv of %d arguments %v, truncated %v; want %d %v, %v",
					r.name, i, len(want[i]), len(strings.Join(want[i], "")), len(e.Argv), lengths(e.Argv), e.ArgvTruncated, len(kept), lengths(kept), cut)
			}
		}
		seen[r.name] = execs
	}
	for _, name := range []string{"ebpf", "ebpf-syscalls"} {
		for i, a := range seen["audit"] {
			if e := seen[name][i]; !slices.Equal(a.Argv, e.Argv) || a.ArgvTruncated != e.ArgvTruncated {
				t.Errorf("exec %d: audit and %s differ: %v %v and %v %v", i, name, lengths(a.Argv), a.ArgvTruncated, lengths(e.Argv), e.ArgvTruncated)
			}
		}
	}
}

// lengths is argv's shape, for messages of a readable length.
func lengths(argv []string) []int {
	var n []int
	for _, a := range argv {
		n = append(n, len(a))
	}
	return n
}
