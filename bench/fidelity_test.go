// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// What TestFidelity (fidelity_root_test.go) compares, and how: each source's
// events in one shape, and the pairing of a peer's with tracer's.

// fidEvent is one event as a source (a tracer backend, a peer) saw it;
// fields a source does not have are zero (and Has* false).
type fidEvent struct {
	Type vocab.Type
	PID  uint32
	PPID uint32 // 0: not known to the source
	UID  uint32
	// HasUID: the source says the uid.
	HasUID bool

	// exec
	Argv []string
	// ArgvCut: the source kept only the beginning of argv (fewer
	// arguments, the last one cut).
	ArgvCut bool
	// ArgMax: the bytes of each argument the source keeps (0: all).
	ArgMax int
	// Filename: an exec's first argument is the filename (execsnoop).
	Filename string

	Child uint32 // fork

	// signal
	Target int32
	Signal int // also exit: the killing signal
	Origin vocab.Origin

	// exit
	ExitCode int
	HasCode  bool
	// Code8: only the low 8 bits of the exit code are known (exitsnoop).
	Code8 bool

	Src string // the line it came from
}

// key tells apart the events of one process that a peer and tracer must
// pair up: a signal by its target and number, a fork by its child.
func (e fidEvent) key() string {
	switch e.Type {
	case vocab.TypeSignal:
		return fmt.Sprintf("%d signal %d to %d", e.PID, e.Signal, e.Target)
	case vocab.TypeFork:
		return fmt.Sprintf("%d fork %d", e.PID, e.Child)
	}
	return fmt.Sprintf("%d %s", e.PID, e.Type)
}

func readTracerEvents(t *testing.T, path string) []fidEvent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []fidEvent
	err = eachJSONEvent(f, func(e *tracer.Event, line []byte) {
		x := fidEvent{Type: e.Type, PID: e.PID, PPID: e.PPID, UID: e.UID, HasUID: true, Src: string(line)}
		switch e.Type {
		case vocab.TypeExec:
			x.Argv, x.ArgvCut, x.Filename = slices.Clone(e.Argv), e.ArgvTruncated, e.Filename
		case vocab.TypeFork:
			x.Child = e.ChildPID
		case vocab.TypeSignal:
			x.Target, x.Signal, x.Origin = e.TargetPID, e.Signal, e.Origin
		case vocab.TypeExit:
			x.Signal, x.ExitCode, x.HasCode = e.Signal, e.ExitCode, e.Signal == 0
		default:
			return
		}
		out = append(out, x)
	})
	if err != nil {
		t.Fatal(err)
	}
	// An exit names its parent by exec id, not pid: the parent is the
	// process whose fork made it, as this backend saw it.
	parent := map[uint32]uint32{}
	for _, e := range out {
		if e.Type == vocab.TypeFork {
			parent[e.Child] = e.PID
		}
	}
	for i, e := range out {
		if e.Type == vocab.TypeExit {
			out[i].PPID = parent[e.PID]
		}
	}
	return out
}

// eachLine calls f with each line of the file at path.
func eachLine(t *testing.T, path string, f func(line string)) {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 0, 256<<10), 16<<20)
	for sc.Scan() {
		f(sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

func readExecsnoop(t *testing.T, path string) []fidEvent {
	var out []fidEvent
	eachLine(t, path, func(l string) {
		x, ok := parseExecsnoop(l, true)
		if !ok {
			return
		}
		args, more, ok := execsnoopArgs(x.Args)
		if !ok || len(args) == 0 {
			t.Errorf("execsnoop: cannot read the arguments of %q", l)
			return
		}
		out = append(out, fidEvent{Type: vocab.TypeExec, PID: x.PID, PPID: x.PPID, UID: x.UID, HasUID: true,
			Argv: args, ArgvCut: more, ArgMax: 127, Filename: args[0], Src: l})
	})
	return out
}

func readExitsnoop(t *testing.T, path string) []fidEvent {
	var out []fidEvent
	eachLine(t, path, func(l string) {
		if x, ok := parseExitsnoop(l); ok {
			out = append(out, fidEvent{Type: vocab.TypeExit, PID: x.PID, PPID: x.PPID,
				ExitCode: x.Code, HasCode: x.Signal == 0, Code8: true, Signal: x.Signal, Src: l})
		}
	})
	return out
}

func readSigsnoop(t *testing.T, path string) []fidEvent {
	var out []fidEvent
	eachLine(t, path, func(l string) {
		if x, ok := parseSigsnoop(l); ok && x.Signal != sigchld {
			out = append(out, fidEvent{Type: vocab.TypeSignal, PID: x.PID, Target: x.TPID, Signal: x.Signal, Src: l})
		}
	})
	return out
}

func readLaurel(t *testing.T, path string) []fidEvent {
	var out []fidEvent
	eachLine(t, path, func(l string) {
		x, ok := parseLaurel([]byte(l))
		if !ok {
			return
		}
		if x.AbendSig != 0 {
			out = append(out, fidEvent{Type: vocab.TypeExit, PID: x.AbendPID, UID: x.AbendUID, HasUID: true, Signal: x.AbendSig, Src: l})
			return
		}
		// Whichever rule's key the record carries (laurel's auditd's,
		// tracer's own, another program's): laurel saw it.
		rec := x.Syscall
		name := auditrules.ArchSyscallName(rec.Arch, rec.Syscall)
		e := fidEvent{Type: auditrules.ClassOf(name), PID: rec.PID, PPID: rec.PPID, UID: rec.UID, HasUID: true, Src: l}
		if rec.HasExit && rec.Exit < 0 && e.Type != vocab.TypeExit {
			return // a failed call: the workload makes none, and tracer reports none by default
		}
		switch e.Type {
		case vocab.TypeExec:
			e.Argv = x.Argv
			if x.Argc != len(x.Argv) {
				t.Errorf("laurel: argc %d, %d arguments: %s", x.Argc, len(x.Argv), l)
			}
		case vocab.TypeFork:
			if !rec.HasExit || rec.Exit <= 0 {
				return // made no process
			}
			e.Child = uint32(rec.Exit)
		case vocab.TypeSignal:
			e.Signal = int(int32(rec.Args[auditrules.SignalArg[name]]))
			if i := auditrules.TargetArg[name]; i >= 0 {
				e.Target = int32(rec.Args[i])
			}
		case vocab.TypeExit:
			e.ExitCode, e.HasCode = int(int32(rec.Args[0])), true
		default:
			return
		}
		// Every event but an exec (whose ppid tracer reports) names no
		// parent in tracer's output: only the exec's is compared.
		if e.Type != vocab.TypeExec {
			e.PPID = 0
		}
		out = append(out, e)
	})
	return out
}

// fidTreeOf is the workload's process tree, from the parentage every
// source reported (one source missing a fork does not hide the child's
// events from the comparison).
type fidTreeOf struct {
	root   uint32
	parent map[uint32]uint32
}

func fidTree(evs []fidEvent, root uint32) fidTreeOf {
	t := fidTreeOf{root: root, parent: map[uint32]uint32{}}
	for _, e := range evs {
		switch {
		case e.Type == vocab.TypeFork:
			t.parent[e.Child] = e.PID
		case e.PPID != 0 && e.PID != root:
			t.parent[e.PID] = e.PPID
		}
	}
	return t
}

func (t fidTreeOf) has(pid uint32) bool {
	for range 64 {
		if pid == t.root {
			return true
		}
		p, ok := t.parent[pid]
		if !ok || p == 0 {
			return false
		}
		pid = p
	}
	return false
}

func (t fidTreeOf) keep(evs []fidEvent) []fidEvent {
	var out []fidEvent
	for _, e := range evs {
		if t.has(e.PID) {
			out = append(out, e)
		}
	}
	return out
}

type fidelityResult struct {
	peer    int // the peer's events of the workload
	tracer  int // tracer's of the kinds the peer sees
	matched int
	excused map[string]int
	diffs   []string
}

func (r fidelityResult) summary() string {
	s := fmt.Sprintf("peer %d events, tracer %d of those kinds, %d matched", r.peer, r.tracer, r.matched)
	for why, n := range r.excused {
		s += fmt.Sprintf(", %d not seen by design (%s)", n, why)
	}
	return s + fmt.Sprintf(", %d differences", len(r.diffs))
}

// compareFidelity pairs each of the peer's events with one of tracer's
// (same kind, process and key) and checks the fields the peer has. A peer
// event tracer has no pair for is a difference unless excuse names the
// limit of tracer's that explains it.
func compareFidelity(peer string, peerEvs, trEvs []fidEvent, excuse func(fidEvent) string) fidelityResult {
	r := fidelityResult{peer: len(peerEvs), excused: map[string]int{}}
	kinds := map[vocab.Type]bool{}
	for _, p := range peerEvs {
		kinds[p.Type] = true
	}
	used := make([]bool, len(trEvs))
	for _, e := range trEvs {
		if kinds[e.Type] {
			r.tracer++
		}
	}
	for _, p := range peerEvs {
		i := slices.IndexFunc(trEvs, func(e fidEvent) bool { return e.key() == p.key() })
		for i >= 0 && used[i] {
			j := slices.IndexFunc(trEvs[i+1:], func(e fidEvent) bool { return e.key() == p.key() })
			if j < 0 {
				i = -1
				break
			}
			i += 1 + j
		}
		if i < 0 {
			if why := excuse(p); why != "" {
				r.excused[why]++
				continue
			}
			r.diffs = append(r.diffs, fmt.Sprintf("tracer missed %s that %s saw: %s", p.key(), peer, clip(p.Src)))
			continue
		}
		used[i] = true
		if d := fidDiff(p, trEvs[i]); d != "" {
			r.diffs = append(r.diffs, fmt.Sprintf("%s: %s\n\t%s: %s\n\ttracer: %s", p.key(), d, peer, clip(p.Src), clip(trEvs[i].Src)))
			continue
		}
		r.matched++
	}
	return r
}

// clip quotes a source's line, its middle left out past 600 bytes.
func clip(s string) string {
	if len(s) > 600 {
		s = s[:300] + " [...] " + s[len(s)-300:]
	}
	return strconv.Quote(s)
}

// fidDiff says how tracer's event tr disagrees with the peer's p, in the
// fields p has; "" when they agree.
func fidDiff(p, tr fidEvent) string {
	var d []string
	if p.PPID != 0 && p.PPID != tr.PPID {
		d = append(d, fmt.Sprintf("ppid %d, tracer %d", p.PPID, tr.PPID))
	}
	if p.HasUID && p.UID != tr.UID {
		d = append(d, fmt.Sprintf("uid %d, tracer %d", p.UID, tr.UID))
	}
	switch p.Type {
	case vocab.TypeExec:
		if s := argvDiff(p, tr); s != "" {
			d = append(d, s)
		}
	case vocab.TypeExit:
		code := tr.ExitCode
		if p.Code8 {
			code &= 0xff
		}
		if p.HasCode != tr.HasCode || p.Signal != tr.Signal || (p.HasCode && p.ExitCode != code) {
			d = append(d, fmt.Sprintf("exit code %d signal %d, tracer exit code %d signal %d", p.ExitCode, p.Signal, tr.ExitCode, tr.Signal))
		}
	}
	return strings.Join(d, "; ")
}

// argvDiff compares the arguments the peer and tracer kept, each to its
// own cap: as many arguments as both kept, each cut to the peer's byte
// cap, the last one tracer kept compared as a prefix when tracer cut it.
func argvDiff(p, tr fidEvent) string {
	targv := slices.Clone(tr.Argv)
	if p.Filename != "" && len(targv) > 0 {
		targv[0] = tr.Filename
	}
	n := min(len(p.Argv), len(targv))
	if len(p.Argv) > len(targv) && !tr.ArgvCut {
		return fmt.Sprintf("%d arguments, tracer %d (not cut)", len(p.Argv), len(targv))
	}
	if len(targv) > len(p.Argv) && !p.ArgvCut {
		return fmt.Sprintf("%d arguments (not cut), tracer %d", len(p.Argv), len(targv))
	}
	for i := range n {
		a, b := p.Argv[i], targv[i]
		if p.ArgMax > 0 && len(b) > p.ArgMax {
			b = b[:p.ArgMax]
		}
		if i == len(targv)-1 && tr.ArgvCut {
			if m := min(len(a), len(b)); a[:m] != b[:m] {
				return fmt.Sprintf("argument %d %q, tracer's (cut) %q", i, a, b)
			}
			continue
		}
		if a != b {
			return fmt.Sprintf("argument %d %q, tracer %q", i, a, b)
		}
	}
	return ""
}

// The argument caps of the two sides, as argvDiff applies them.
func TestArgvDiff(t *testing.T) {
	long := strings.Repeat("x", 300)
	exec := func(argv []string, cut bool, argMax int) fidEvent {
		return fidEvent{Type: vocab.TypeExec, Argv: argv, ArgvCut: cut, ArgMax: argMax}
	}
	for _, tc := range []struct {
		name   string
		peer   fidEvent
		tracer fidEvent
		agree  bool
	}{
		{"same", exec([]string{"/bin/true", "a b"}, false, 0), exec([]string{"/bin/true", "a b"}, false, 0), true},
		{"one byte", exec([]string{"/bin/true", "a b"}, false, 0), exec([]string{"/bin/true", "a c"}, false, 0), false},
		{"execsnoop's 127 bytes", exec([]string{"/bin/true", long[:127]}, false, 127), exec([]string{"/bin/true", long}, false, 0), true},
		{"tracer cut the last argument", exec([]string{"/bin/true", long}, false, 0), exec([]string{"/bin/true", long[:100]}, true, 0), true},
		{"tracer cut it wrong", exec([]string{"/bin/true", long}, false, 0), exec([]string{"/bin/true", "y"}, true, 0), false},
		{"tracer kept fewer, cut", exec([]string{"/bin/true", "a", "b"}, false, 0), exec([]string{"/bin/true", "a"}, true, 0), true},
		{"tracer kept fewer, not cut", exec([]string{"/bin/true", "a", "b"}, false, 0), exec([]string{"/bin/true", "a"}, false, 0), false},
		{"the peer kept fewer, cut", exec([]string{"/bin/true", "a"}, true, 127), exec([]string{"/bin/true", "a", "b"}, false, 0), true},
		{"the peer kept fewer, not cut", exec([]string{"/bin/true", "a"}, false, 0), exec([]string{"/bin/true", "a", "b"}, false, 0), false},
	} {
		if d := argvDiff(tc.peer, tc.tracer); (d == "") != tc.agree {
			t.Errorf("%s: argvDiff = %q, want agreement %v", tc.name, d, tc.agree)
		}
	}
	// execsnoop prints the filename where argv[0] is.
	p := exec([]string{"/usr/bin/true", "a"}, false, 127)
	p.Filename = "/usr/bin/true"
	tr := exec([]string{"true", "a"}, false, 0)
	tr.Filename = "/usr/bin/true"
	if d := argvDiff(p, tr); d != "" {
		t.Errorf("filename for argv[0]: %s", d)
	}
}
