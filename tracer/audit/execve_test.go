// SPDX-License-Identifier: Apache-2.0

package audit

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/auparse"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// kernelExecve returns the EXECVE record bodies the kernel writes for argv:
// audit_log_execve_info (kernel/auditsc.c) ported statement for statement,
// with lenMax for MAX_EXECVE_AUDIT_LEN, the 7,500 bytes of arguments it
// puts in a record and reads of user memory at a time. An argument that
// does not fit in what is left of a record goes on in the next as
// aN_len=... aN[0]=... aN[1]=...; one longer than a read is hex-encoded
// throughout, one that holds a space, quote or control byte too.
func kernelExecve(argv []string, lenMax int) []string {
	const abuf = 96                                    // sizeof(abuf): room for " aN_len=... aN[k]="
	mem := []byte(strings.Join(argv, "\x00") + "\x00") // the new image's argument area
	p := 0
	var recs []string
	var rec strings.Builder
	fmt.Fprintf(&rec, "argc=%d", len(argv))
	var buf []byte // read but not yet logged
	lenRem, lenFull, lenAbuf := lenMax, 0, 0
	requireData, encode := true, false
	iter, arg := 0, 0
	for {
		if lenFull == 0 {
			lenFull = bytes.IndexByte(mem[p:], 0)
		}
		if requireData {
			room := lenMax - len(buf)
			n := min(bytes.IndexByte(mem[p:], 0), room) // strncpy_from_user
			buf = append(buf, mem[p:p+n]...)
			if n == room {
				encode = true // spanning reads: hex, for a sane aN_len
				lenFull *= 2
				p += n
			} else {
				requireData = false
				if !encode {
					encode = slices.ContainsFunc(buf, func(c byte) bool { return c == '"' || c < 0x21 || c > 0x7e })
				}
				if lenFull < lenMax {
					lenFull = n
					if encode {
						lenFull = 2 * n
					}
				}
				p += n + 1
			}
			lenAbuf = len(buf) + 2
			if encode {
				lenAbuf = 2 * len(buf)
			}
		}
		if abuf+8 > lenRem {
			recs = append(recs, rec.String())
			rec.Reset()
			lenRem = lenMax
		}
		pre := fmt.Sprintf(" a%d=", arg)
		if requireData || iter > 0 || lenAbuf+abuf > lenRem {
			pre = ""
			if iter == 0 {
				pre = fmt.Sprintf(" a%d_len=%d", arg, lenFull)
			}
			pre += fmt.Sprintf(" a%d[%d]=", arg, iter)
			iter++
		}
		rec.WriteString(pre)
		lenRem -= len(pre)
		n := len(buf)
		if encode {
			if lenAbuf > lenRem {
				n = lenRem / 2
			}
			rec.WriteString(strings.ToUpper(hex.EncodeToString(buf[:n])))
			lenRem -= 2 * n
			lenAbuf -= 2 * n
		} else {
			if lenAbuf > lenRem {
				n = lenRem - 2
			}
			rec.WriteString(`"` + string(buf[:n]) + `"`)
			lenRem -= n + 2
			lenAbuf -= n
		}
		buf = buf[n:]
		if len(buf) == 0 && !requireData {
			arg++
			iter, lenFull = 0, 0
			requireData, encode = true, false
		}
		if arg >= len(argv) {
			return append(recs, rec.String())
		}
	}
}

// execveNr is execve's number in this machine's 64-bit ABI.
func execveNr(t testing.TB) int {
	for nr := range 1024 {
		if auditrules.SyscallName(nr, false) == "execve" {
			return nr
		}
	}
	t.Fatal("no execve in the syscall table")
	return 0
}

// execRecords is an exec event's records as the kernel sends them, with
// EXECVE bodies execve: "TYPE audit(...): body" lines, as FuzzReassemble reads.
func execRecords(t testing.TB, serial int, execve []string) []string {
	h := fmt.Sprintf("audit(1796011828.799:%d): ", serial)
	out := []string{fmt.Sprintf("%d %sarch=%x syscall=%d success=yes exit=0 a0=1 a1=2 a2=3 a3=4 items=1 ppid=1 pid=2 auid=0 uid=0 comm=\"true\"",
		auparse.TypeSyscall, h, archValue(false), execveNr(t))}
	for _, b := range execve {
		out = append(out, fmt.Sprintf("%d %s%s", auparse.TypeExecve, h, b))
	}
	return append(out, fmt.Sprintf("%d %sitem=0 name=\"/bin/true\"", auparse.TypePath, h), fmt.Sprintf("%d %s", auparse.TypeEOE, h))
}

// feedLines feeds "TYPE body" lines to r and returns copies of the events.
func feedLines(t testing.TB, r *reassembler, lines []string) []tracer.Event {
	t.Helper()
	var out []tracer.Event
	for _, l := range lines {
		typ, msg, _ := strings.Cut(l, " ")
		var n uint16
		fmt.Sscan(typ, &n)
		r.feed(n, []byte(msg), func(e *tracer.Event) {
			c := *e
			c.Argv = slices.Clone(e.Argv)
			out = append(out, c)
		})
	}
	return out
}

func testReassembler() *reassembler {
	r := newReassembler(vocab.TypeSet(0).With(vocab.TypeExec), vocab.UnsetID)
	r.procComm = func(uint32) (string, bool) { return "", false }
	r.ids.readProc = func(uint32, procParts) (tracer.ProcIdentity, bool) { return tracer.ProcIdentity{}, false }
	return r
}

// An argument of any length is whole in the event up to the cap both
// backends apply (vocab.ArgvMax, vocab.ArgvBytesMax), wherever the kernel
// split it across EXECVE records and however it encoded the pieces; and
// argv_truncated says exactly when it was cut.
func TestExecveLongArguments(t *testing.T) {
	long := tracertest.LongArgs(tracertest.ArgSizes...)
	var argvs [][]string
	for _, a := range long {
		argvs = append(argvs, []string{"/bin/sh", "-c", a, "TAIL_MARKER"}, []string{a}, []string{a, a, "x"})
	}
	// Under the byte cap, cut by count, and every long argument at once.
	var many []string
	for i := range vocab.ArgvMax + 1 {
		many = append(many, fmt.Sprint("x", i))
	}
	argvs = append(argvs, many[:vocab.ArgvMax], many, append([]string{"/bin/true"}, long...))
	// Just under, at and over the byte cap, and a NUL short of it: the
	// boundaries of the cut.
	for _, n := range []int{vocab.ArgvBytesMax - 9, vocab.ArgvBytesMax - 8, vocab.ArgvBytesMax - 7, vocab.ArgvBytesMax - 6} {
		argvs = append(argvs, []string{"/bin/sh", "-c", strings.Repeat("y", n)})
	}

	r := testReassembler()
	serial := 0
	// The record size moves every boundary the kernel chooses: the first
	// record's arguments, where a long one starts its pieces, where pieces
	// end. The smallest is the least the kernel's arithmetic allows.
	for _, lenMax := range []int{7500, 7499, 4096, 1001, 333, 200, 105} {
		for _, argv := range argvs {
			if lenMax < 1000 && len(strings.Join(argv, "")) > 20000 {
				argv = []string{argv[0], long[len(long)-1]} // the 131,072-byte hex argument alone, to keep the test quick
			}
			serial++
			recs := kernelExecve(argv, lenMax)
			evs := feedLines(t, r, execRecords(t, serial, recs))
			want, cut := tracertest.CutArgv(argv)
			if len(evs) != 1 {
				t.Fatalf("record size %d, argv of %d: %d events", lenMax, len(argv), len(evs))
			}
			if e := evs[0]; !slices.Equal(e.Argv, want) || e.ArgvTruncated != cut {
				t.Errorf("record size %d, %d records, argv of %d arguments, %d bytes:\n got  %d arguments %s, truncated %v\n want %d arguments %s, truncated %v",
					lenMax, len(recs), len(argv), len(strings.Join(argv, "")), len(e.Argv), describe(e.Argv), e.ArgvTruncated, len(want), describe(want), cut)
			}
		}
	}
}

// describe names argv by its arguments' lengths and ends, for messages of a
// readable length.
func describe(argv []string) string {
	var b strings.Builder
	for _, a := range argv {
		if len(a) > 24 {
			fmt.Fprintf(&b, "[%d: %q...%q] ", len(a), a[:8], a[len(a)-8:])
		} else {
			fmt.Fprintf(&b, "%q ", a)
		}
	}
	return b.String()
}

// Records the format allows beyond what kernelExecve writes: pieces of one
// argument encoded differently (the format decides per piece), a record
// repeated (the two sockets of a handover carry one event twice), records
// lost.
func TestExecvePieces(t *testing.T) {
	cases := []struct {
		name   string
		bodies []string
		want   []string
		cut    bool
	}{
		{"quoted then hex, across records", []string{`argc=3 a0="sh" a1="-c" a2_len=6 a2[0]="abc"`, ` a2[1]=646566`}, []string{"sh", "-c", "abcdef"}, false},
		{"hex then quoted, then an argument", []string{`argc=3 a0_len=6 a0[0]=20`, ` a0[1]="b" a0[2]=2263 a1="x"`, ` a2=""`}, []string{` b"c`, "x", ""}, false},
		{"an empty last piece", []string{`argc=2 a0="sh" a1_len=4 a1[0]=6162`, ` a1[1]=`}, []string{"sh", "ab"}, false},
		{"a record twice", []string{`argc=2 a0="sh" a1_len=4 a1[0]=6162`, `argc=2 a0="sh" a1_len=4 a1[0]=6162`, ` a1[1]=6364`, ` a1[1]=6364`}, []string{"sh", "abcd"}, false},
		// What follows a loss is not kept: argv is the beginning of the arguments.
		{"a piece lost", []string{`argc=2 a0="sh" a1_len=6 a1[0]=6162`, ` a1[2]=6566`}, []string{"sh", "ab"}, true},
		{"an argument lost", []string{`argc=3 a0="sh"`, ` a2="z"`}, []string{"sh"}, true},
		{"the last argument lost", []string{`argc=3 a0="sh" a1="y"`}, []string{"sh", "y"}, true},
	}
	r := testReassembler()
	for i, c := range cases {
		evs := feedLines(t, r, execRecords(t, 100+i, c.bodies))
		if len(evs) != 1 || !slices.Equal(evs[0].Argv, c.want) || evs[0].ArgvTruncated != c.cut {
			t.Errorf("%s: got %+v, want argv %q truncated %v", c.name, evs, c.want, c.cut)
		}
	}
}

// A 128 KiB argument costs an open event no more memory than the cap: its
// bytes past it are parsed and dropped.
func TestExecveMemoryBounded(t *testing.T) {
	r := testReassembler()
	long := tracertest.LongArgs(131072)
	for i, a := range long {
		lines := execRecords(t, 200+i, kernelExecve([]string{"/bin/sh", "-c", a, "TAIL_MARKER"}, 7500))
		feedLines(t, r, lines[:len(lines)-1]) // all but EOE: the event is open
		p := r.pending[uint64(200+i)]
		if p == nil {
			t.Fatal("no open event")
		}
		if c := p.args.Cap(); c > 2*vocab.ArgvBytesMax {
			t.Errorf("argument of %d bytes: the open event holds %d bytes of it, the cap is %d", len(a), c, vocab.ArgvBytesMax)
		}
		if evs := feedLines(t, r, lines[len(lines)-1:]); len(evs) != 1 || !evs[0].ArgvTruncated {
			t.Errorf("events %+v", evs)
		}
	}
}
