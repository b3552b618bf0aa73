// SPDX-License-Identifier: Apache-2.0

package bpfbackend

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// execPathsRecord is an exec record with the cwd's and the new program's
// names after argv, leaf first, as path.h lays them out.
func execPathsRecord(cwd, exe []string, flags uint8) []byte {
	b := execRecord("/usr/bin/python3", []string{"python3"}, 0)
	b = b[:len(b)-5]
	le := binary.LittleEndian
	var c, x string
	for _, n := range cwd {
		c += n + "\x00"
	}
	for _, n := range exe {
		x += n + "\x00"
	}
	le.PutUint16(b[offCwdSize:], uint16(len(c)))
	le.PutUint16(b[offExeSize:], uint16(len(x)))
	b[offPFlags] = flags
	return append(append(b, c+x...), 0xa5, 0xa5)
}

func TestDecodeExecPaths(t *testing.T) {
	long := strings.Repeat("x", 255)
	for _, c := range []struct {
		name           string
		raw            []byte
		cwd, exe       string
		filename, argv string
	}{
		{"both", execPathsRecord([]string{"src", "home"}, []string{"python3.11", "bin", "usr"}, 0), "/home/src", "/usr/bin/python3.11", "/usr/bin/python3", "python3"},
		{"root", execPathsRecord(nil, []string{"true", "bin"}, 0), "/", "/bin/true", "/usr/bin/python3", "python3"},
		{"cut walk", execPathsRecord([]string{"c", "b"}, []string{"prog", "x"}, exfCwdTrunc|exfExeTrunc), "b/c", "x/prog", "/usr/bin/python3", "python3"},
		{"failed walk", execPathsRecord(nil, nil, exfCwdTrunc), "", "", "/usr/bin/python3", "python3"},
		{"cut to FilenameMax", execPathsRecord([]string{long, long, long, long, long}, nil, 0), "/" + strings.Repeat(long+"/", 4)[:tracer.FilenameMax-1], "", "/usr/bin/python3", "python3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := newDecoder()
			var e tracer.Event
			if err := d.decode(c.raw, &e); err != nil {
				t.Fatal(err)
			}
			if e.Cwd != c.cwd || d.newExe != c.exe || e.Filename != c.filename || len(e.Argv) != 1 || e.Argv[0] != c.argv {
				t.Errorf("cwd %q new exe %q filename %q argv %q; want %q %q %q [%s]", e.Cwd, d.newExe, e.Filename, e.Argv, c.cwd, c.exe, c.filename, c.argv)
			}
		})
	}
	// Sizes past the record are an error.
	raw := execPathsRecord(nil, nil, 0)
	binary.LittleEndian.PutUint16(raw[offCwdSize:], 200)
	if err := newDecoder().decode(raw, new(tracer.Event)); err == nil {
		t.Error("cwd part past the record: no error")
	}
}

func TestExeCache(t *testing.T) {
	reads := map[uint32]int{}
	proc := map[uint32]string{10: "/usr/bin/bash", 20: "/usr/bin/python3.11"}
	c := newExeCache(4, func(pid uint32) string { reads[pid]++; return proc[pid] })
	id := func(pid uint32, start uint64) tracer.ExecID { return tracer.ExecID{PID: pid, Start: start} }
	ev := func(typ vocab.Type, pid uint32, start uint64) *tracer.Event {
		return &tracer.Event{Type: typ, PID: pid, ExecID: id(pid, start), ParentExecID: id(10, 1)}
	}
	// A signal storm of one process reads /proc once.
	for range 3 {
		e := ev(vocab.TypeSignal, 20, 2)
		c.fill(e, "")
		if e.Exe != "/usr/bin/python3.11" {
			t.Fatalf("signal: exe %q", e.Exe)
		}
	}
	if reads[20] != 1 {
		t.Errorf("%d reads of /proc/20/exe, want 1", reads[20])
	}
	// bash forks 30, which execs ls: before the exec it runs bash.
	f := ev(vocab.TypeFork, 10, 1)
	f.ChildPID = 30
	c.fill(f, "")
	x := ev(vocab.TypeExec, 30, 3)
	c.fill(x, "/usr/bin/ls")
	if f.Exe != "/usr/bin/bash" || x.Exe != "/usr/bin/bash" {
		t.Errorf("fork exe %q, exec exe %q; want bash's", f.Exe, x.Exe)
	}
	// Its exit has the new program, and forgets it.
	e := ev(vocab.TypeExit, 30, 3)
	c.fill(e, "")
	if e.Exe != "/usr/bin/ls" {
		t.Errorf("exit exe %q, want /usr/bin/ls", e.Exe)
	}
	// An exec not seen at its fork: the parent's program.
	x = ev(vocab.TypeExec, 40, 4)
	c.fill(x, "/usr/bin/env")
	if x.Exe != "/usr/bin/bash" || reads[10] != 1 {
		t.Errorf("exec of an unseen child: exe %q (%d reads of the parent)", x.Exe, reads[10])
	}
	// A reused pid is not taken for the old process; gone, it has none.
	e = ev(vocab.TypeSignal, 40, 5)
	c.fill(e, "")
	if e.Exe != "" || reads[40] != 1 {
		t.Errorf("reused pid: exe %q, %d reads", e.Exe, reads[40])
	}
	// Bounded: never more than max entries.
	for pid := uint32(100); pid < 200; pid++ {
		c.fill(ev(vocab.TypeSignal, pid, 1), "")
		if n := len(c.cur) + len(c.old); n > 4 {
			t.Fatalf("%d entries, max 4", n)
		}
	}
}

// A batched record's repeats carry the program too, and the same-but-time
// path (an equal record after it) has it again.
func TestDeliverBatchExe(t *testing.T) {
	b := New()
	d := newDecoder()
	d.exes = newExeCache(8, func(uint32) string { return "/usr/bin/kill-loop" })
	r := smallRecord(vocab.TypeSignal, 7, 99, 15, 0)
	binary.LittleEndian.PutUint32(r[offRepeat:], 2)
	raw := append(append([]byte(nil), r...), smallRecord(vocab.TypeSignal, 7, 99, 15, 0)...)
	var got []string
	b.deliverBatch(d, raw, new(tracer.Event), func(e *tracer.Event) { got = append(got, e.Exe) })
	if len(got) != 4 || got[0] != "/usr/bin/kill-loop" || got[1] != got[0] || got[2] != got[0] || got[3] != got[0] {
		t.Errorf("exe of a record and its repeats: %q", got)
	}
}
