// SPDX-License-Identifier: Apache-2.0

//go:build linux

package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/auparse"
	"github.com/tracer-dev/tracer/tracer/sink"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// The kernel writes the records the reassembler reads, but their strings
// come from whoever runs a process, and a record can arrive cut short (a
// full socket buffer, a kernel that logs a field differently). The fuzz
// target holds the reassembler to: no panic, and its memory bounded
// whatever the record sequence. Its corpus in testdata/fuzz comes from
// testdata/workload.raw; tracer/auparse fuzzes the record parsers.

// checkArgv fails t when argv is over either cap.
func checkArgv(t *testing.T, argv []string) {
	t.Helper()
	if len(argv) > vocab.ArgvMax || argvBytes(argv)+len(argv) > vocab.ArgvBytesMax+1 {
		t.Fatalf("argv of %d arguments, %d bytes: the caps are %d and %d with NULs", len(argv), argvBytes(argv), vocab.ArgvMax, vocab.ArgvBytesMax)
	}
}

func argvBytes(argv []string) int {
	n := 0
	for _, a := range argv {
		n += len(a)
	}
	return n
}

// maxPending is the reassembler's bound on open events: every serial within
// evict's window of the newest one, plus those started since the last
// eviction pass.
const maxPending = 65536 + 1 + 4096

// FuzzReassemble feeds a sequence of records, in the "TYPE audit(...):
// body" lines of testdata/workload.raw, through a reassembler for every
// event class, and checks the bounds after each record.
func FuzzReassemble(f *testing.F) {
	f.Add([]byte("1300 audit(1796011828.799:16): arch=c000003e syscall=62 success=yes exit=0 a0=23ae a1=a a2=0 a3=0 items=0 ppid=1 pid=9134 auid=4294967295 uid=0 comm=\"workload\"\n" +
		"1318 audit(1796011828.799:16): opid=9134 oauid=-1 ouid=0 oses=-1 ocomm=\"workload\"\n" +
		"1320 audit(1796011828.799:16): \n"))
	// Long arguments across EXECVE records, as the kernel splits them:
	// hex (longer than a record), quoted pieces, and a record repeated.
	for i, c := range []struct {
		argv   []string
		lenMax int
	}{
		{[]string{"/bin/sh", "-c", strings.Repeat(": x; ", 1640) + "echo TAIL_MARKER"}, 7500},
		{[]string{"/bin/true", strings.Repeat("abcdefghij", 300), "x"}, 1001},
		{[]string{strings.Repeat("\x01\xff", 200), "", "y"}, 105},
	} {
		recs := execRecords(f, 20+i, kernelExecve(c.argv, c.lenMax))
		if i == 2 {
			recs = slices.Insert(recs, 3, recs[2])
		}
		f.Add([]byte(strings.Join(recs, "\n")))
	}
	all, _ := vocab.ParseTypes("all")
	f.Fuzz(func(t *testing.T, data []byte) {
		// A new reassembler per input: a copy of one would share whatever
		// state a later field adds, and inputs would leak into each other.
		r := newReassembler(all, vocab.UnsetID)
		r.procComm = func(uint32) (string, bool) { return "", false }
		r.ids.readProc = func(uint32, procParts) (tracer.ProcIdentity, bool) { return tracer.ProcIdentity{}, false }
		starts, emitted := 0, 0 // SYSCALL and ANOM_ABEND records, events
		emit := func(e *tracer.Event) {
			emitted++
			if emitted > starts {
				t.Fatalf("%d events from %d SYSCALL and ANOM_ABEND records", emitted, starts)
			}
			checkArgv(t, e.Argv)
			total := len(e.Comm) + len(e.Filename) + argvBytes(e.Argv)
			if total > 2*len(data) {
				t.Fatalf("event of %d bytes from %d bytes of records", total, len(data))
			}
			if e.Type < vocab.TypeExec || e.Type > vocab.TypeExit || e.Backend != "audit" {
				t.Fatalf("event of type %v, backend %q", e.Type, e.Backend)
			}
			if line := sink.AppendText(nil, e); bytes.ContainsAny(line, "\n\r\x1b\x7f\u0085\u009b") || !utf8.Valid(line) {
				t.Fatalf("text line %q", line)
			}
			if line := sink.AppendJSON(nil, e); !json.Valid(line) {
				t.Fatalf("invalid JSON %q", line)
			}
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			sp := bytes.IndexByte(line, ' ')
			if sp < 0 {
				continue
			}
			typ, err := strconv.ParseUint(string(line[:sp]), 10, 16)
			if err != nil {
				continue
			}
			if typ == auparse.TypeSyscall || typ == typeAnomAbend {
				starts++
			}
			// The netlink reader reuses its buffer: the reassembler must not keep msg.
			msg := append([]byte(nil), line[sp+1:]...)
			r.feed(uint16(typ), msg, emit)
			for i := range msg {
				msg[i] = 'X'
			}
			if len(r.pending) > maxPending {
				t.Fatalf("%d events pending, the bound is %d", len(r.pending), maxPending)
			}
		}
		if len(r.comms) > 1<<16+1 || len(r.intern) > 4096+1 {
			t.Fatalf("caches grew past their caps: %d comms, %d interned", len(r.comms), len(r.intern))
		}
		if w := r.ids; len(w.procs) > maxProcs || len(w.cgroups) > maxProcs || len(w.senders) > maxProcs {
			t.Fatalf("identity caches grew past their caps: %d, %d, %d", len(w.procs), len(w.cgroups), len(w.senders))
		}
		r.flush(func(*tracer.Event) {})
		if len(r.pending) != 0 {
			t.Fatalf("%d events pending after flush", len(r.pending))
		}
	})
}

// Events whose EOE never comes (the kernel or the socket dropped it) must
// not pile up, whatever the pattern of the other records around them: fuzz
// inputs are too small to reach the bound, so this drives it. An event
// whole but for its EOE is emitted when it is ended; one that lacks a
// record it needs (an exec without its PATH) is counted lost.
func TestPendingStaysBounded(t *testing.T) {
	all, _ := vocab.ParseTypes("all")
	syscalls := map[string]string{
		"kill": `syscall=62 success=yes exit=0 a0=1 a1=a ppid=1 pid=2 auid=0 uid=0 items=0 comm="kill"`,
		"exec": `syscall=59 success=yes exit=0 a0=1 a1=a ppid=1 pid=2 auid=0 uid=0 items=2 comm="sh"`,
	}
	// Other records per event: with one PROCTITLE each, every SYSCALL
	// record arrives at an odd position in the stream; with three, at
	// positions 1 mod 4.
	for _, name := range []string{"kill", "exec"} {
		for _, others := range []int{0, 1, 2, 3} {
			t.Run(fmt.Sprintf("%s, %d records after each SYSCALL", name, others), func(t *testing.T) {
				r := newReassembler(all, vocab.UnsetID)
				r.procComm = func(uint32) (string, bool) { return "", false }
				r.ids.readProc = func(uint32, procParts) (tracer.ProcIdentity, bool) { return tracer.ProcIdentity{}, false }
				most, emitted := 0, 0
				emit := func(*tracer.Event) { emitted++ }
				const events = 3 * 65536
				for serial := 1; serial <= events; serial++ {
					r.feed(auparse.TypeSyscall, fmt.Appendf(nil, "audit(1796011828.799:%d): arch=%x %s", serial, archValue(false), syscalls[name]), emit)
					for i := 0; i < others; i++ {
						r.feed(auparse.TypeProctitle, fmt.Appendf(nil, "audit(1796011828.799:%d): proctitle=6B696C6C", serial), emit)
					}
					most = max(most, len(r.pending))
				}
				if most > maxPending {
					t.Errorf("%d events pending at most, the bound is %d", most, maxPending)
				}
				r.flush(emit)
				switch {
				case emitted+int(r.lost) != events:
					t.Errorf("%d emitted + %d lost of %d events", emitted, r.lost, events)
				case name == "kill" && r.lost != 0:
					t.Errorf("%d whole events without EOE counted lost", r.lost)
				case name == "exec" && emitted != 0:
					t.Errorf("%d execs without their PATH emitted", emitted)
				}
			})
		}
	}
}
