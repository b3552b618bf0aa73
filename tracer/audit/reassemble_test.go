// SPDX-License-Identifier: Apache-2.0

package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/auparse"
	"github.com/tracer-dev/tracer/tracer/sink"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

var update = flag.Bool("update", false, "rewrite golden files")

// replay feeds a recorded file of "TYPE audit(...): body" lines, as read from
// the netlink socket on this machine, through the reassembler.
func replay(t *testing.T, path string, types vocab.TypeSet) []tracer.Event {
	return replayLean(t, path, types, nil, -1)
}

// replayLean replays a recording as the kernel would have sent it with
// the record types in drop excluded, and switches the reassembler to end
// events without EOE before the eoelessAt'th record fed (-1: never).
func replayLean(t *testing.T, path string, types vocab.TypeSet, drop []uint16, eoelessAt int) []tracer.Event {
	t.Helper()
	return replayExcluded(t, path, types, drop, recEOE, eoelessAt)
}

// replayExcluded is replayLean with the reassembler told, before the at'th
// record fed, that the kernel excludes the record types in ex.
func replayExcluded(t *testing.T, path string, types vocab.TypeSet, drop []uint16, ex recordSet, at int) []tracer.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := newReassembler(types, vocab.UnsetID)
	r.execFailures = true // the recording's failed exec is part of the golden file
	// The recording's processes are gone: comm lookups through /proc must not leak in.
	r.procComm = func(uint32) (string, bool) { return "", false }
	r.ids.readProc = func(uint32, procParts) (tracer.ProcIdentity, bool) { return tracer.ProcIdentity{}, false }
	var out []tracer.Event
	emit := func(e *tracer.Event) {
		c := *e
		c.Argv = append([]string(nil), e.Argv...)
		out = append(out, c)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	fed := 0
	for sc.Scan() {
		line := sc.Bytes()
		sp := bytes.IndexByte(line, ' ')
		typ, err := strconv.Atoi(string(line[:sp]))
		if err != nil {
			t.Fatalf("bad line %q", line)
		}
		if slices.Contains(drop, uint16(typ)) {
			continue
		}
		if fed == at {
			r.setExcluded(ex, emit)
		}
		fed++
		r.feed(uint16(typ), append([]byte(nil), line[sp+1:]...), emit)
	}
	if r.bad != 0 {
		t.Errorf("%d records failed to parse", r.bad)
	}
	r.flush(emit)
	if r.lost != 0 {
		t.Errorf("%d events never ended", r.lost)
	}
	return out
}

func TestReassembleGolden(t *testing.T) {
	all := vocab.TypeSet(0).With(vocab.TypeExec).With(vocab.TypeFork).With(vocab.TypeSignal).With(vocab.TypeExit)
	events := replay(t, "testdata/workload.raw", all)
	var buf bytes.Buffer
	for i := range events {
		buf.Write(sink.AppendJSON(nil, &events[i]))
		buf.WriteByte('\n')
	}
	golden := filepath.Join("testdata", "workload.json.golden")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("reassembled events differ from %s:\n%s", golden, buf.String())
	}
	for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Errorf("invalid JSON %s: %v", line, err)
		}
	}
}

func TestSerialAfterWraps(t *testing.T) {
	cases := []struct {
		a, b uint64
		want bool
	}{
		{2, 1, true}, {1, 2, false}, {5, 5, false},
		{3, 0xfffffff0, true}, {0xfffffff0, 3, false}, // across the 32-bit wrap
		{70000 + 0xffff0000, 0xffff0000, true},
	}
	for _, c := range cases {
		if got := serialAfter(c.a, c.b); got != c.want {
			t.Errorf("serialAfter(%#x, %#x) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// Both backends keep vocab.ArgvMax arguments and say when they cut argv.
func TestParseExecveCap(t *testing.T) {
	record := func(n int) []byte {
		b := []byte("argc=" + strconv.Itoa(n))
		for i := range n {
			b = append(b, " a"+strconv.Itoa(i)+"=\"x"+strconv.Itoa(i)+"\""...)
		}
		return b
	}
	for _, n := range []int{3, vocab.ArgvMax, vocab.ArgvMax + 1, 64} {
		var args auparse.Execve
		args.Parse(record(n))
		argv, cut := appendArgv(nil, &args)
		if want := min(n, vocab.ArgvMax); len(argv) != want || cut != (n > vocab.ArgvMax) {
			t.Errorf("%d arguments: kept %d, cut %v; want %d, %v", n, len(argv), cut, want, n > vocab.ArgvMax)
		}
		if len(argv) > 0 && argv[len(argv)-1] != "x"+strconv.Itoa(len(argv)-1) {
			t.Errorf("%d arguments: last kept %q", n, argv[len(argv)-1])
		}
	}
}

// Without EOE records (lean records exclude them), every event ends at its
// last record tracer reads, with the same content as when its EOE ends it;
// a tracer that learns of the exclusion late ends the events left waiting.
// The order may differ: records of concurrent events interleave (a vfork
// parent's records arrive between its child's exec's), so which ends first
// is a matter of timing either way.
func TestReassembleWithoutEOE(t *testing.T) {
	all := vocab.TypeSet(0).With(vocab.TypeExec).With(vocab.TypeFork).With(vocab.TypeSignal).With(vocab.TypeExit)
	const raw = "testdata/workload.raw"
	lines := func(evs []tracer.Event) []string {
		var out []string
		for i := range evs {
			out = append(out, string(sink.AppendJSON(nil, &evs[i])))
		}
		slices.Sort(out)
		return out
	}
	lean := []uint16{auparse.TypeProctitle, auparse.TypeCwd, auparse.TypeObjPID}
	want := lines(replayLean(t, raw, all, lean, -1))
	if len(want) < 15 {
		t.Fatalf("only %d events in the recording", len(want))
	}
	eoeless := append(slices.Clone(lean), auparse.TypeEOE)
	// -1: the tracer never learns of the exclusion (another tracer's lean
	// records came and went between two polls): the events end anyway.
	for _, at := range []int{0, 7, 30, -1} {
		if got := lines(replayLean(t, raw, all, eoeless, at)); !slices.Equal(got, want) {
			t.Errorf("eoeless from record %d:\n got  %q\n want %q", at, got, want)
		}
	}
	// With EOE still sent, ending early changes nothing: the EOE that
	// follows finds no open event.
	if got := lines(replayLean(t, raw, all, lean, 0)); !slices.Equal(got, want) {
		t.Errorf("eoeless with EOE records:\n got  %q\n want %q", got, want)
	}
}

// The node's own rules exclude PATH records, and EOE is excluded too: an
// exec then ends once its EXECVE records held every argument, and every
// event still ends, with the same argv as when its EOE ends it.
func TestReassembleWithoutPathAndEOE(t *testing.T) {
	all := vocab.TypeSet(0).With(vocab.TypeExec).With(vocab.TypeFork).With(vocab.TypeSignal).With(vocab.TypeExit)
	const raw = "testdata/workload.raw"
	key := func(evs []tracer.Event) []string {
		var out []string
		for _, e := range evs {
			out = append(out, fmt.Sprintf("%s %d %s %q %v", e.Type, e.PID, e.Syscall, e.Argv, e.ArgvTruncated))
		}
		slices.Sort(out)
		return out
	}
	want := key(replay(t, raw, all))
	drop := []uint16{auparse.TypeProctitle, auparse.TypeCwd, auparse.TypeObjPID, auparse.TypePath, auparse.TypeEOE}
	if got := key(replayExcluded(t, raw, all, drop, recEOE|recPath, 0)); !slices.Equal(got, want) {
		t.Errorf("without PATH and EOE:\n got  %q\n want %q", got, want)
	}
}

// An exec whose one argument the kernel split across EXECVE records ends
// only with its last piece when neither PATH nor EOE records come.
func TestExecveCompleteAtLastPiece(t *testing.T) {
	var a auparse.Execve
	a.Parse([]byte(`argc=2 a0="sh"`))
	if a.Complete() {
		t.Fatal("complete before a1")
	}
	a.Parse([]byte(`a1_len=6 a1[0]="abc"`))
	if a.Complete() {
		t.Fatal("complete after 3 of a1's 6 bytes")
	}
	a.Parse([]byte(`a1[1]=646566`))
	if !a.Complete() {
		t.Fatal("not complete after a1's last piece")
	}
	if argv, cut := appendArgv(nil, &a); !slices.Equal(argv, []string{"sh", "abcdef"}) || cut {
		t.Errorf("argv %q cut %v", argv, cut)
	}
	var none auparse.Execve
	none.Parse([]byte(`argc=0`))
	if !none.Complete() {
		t.Error("an exec without arguments is not complete at its EXECVE record")
	}
}

// An event whole but for its EOE ends at the second sweep after it
// opened, not at shutdown; an exec still waiting for its PATH stays open.
func TestSweepEndsWholeEvents(t *testing.T) {
	all, _ := vocab.ParseTypes("all")
	r := newReassembler(all, vocab.UnsetID)
	r.procComm = func(uint32) (string, bool) { return "", false }
	r.ids.readProc = func(uint32, procParts) (tracer.ProcIdentity, bool) { return tracer.ProcIdentity{}, false }
	var got []string
	emit := func(e *tracer.Event) { got = append(got, e.Type.String()) }
	feed := func(serial int, rest string) {
		r.feed(auparse.TypeSyscall, fmt.Appendf(nil, "audit(1796011828.799:%d): arch=%x %s", serial, archValue(false), rest), emit)
	}
	feed(1, `syscall=62 success=yes exit=0 a0=1 a1=a ppid=1 pid=2 auid=0 uid=0 items=0 comm="kill"`)
	feed(2, `syscall=59 success=yes exit=0 a0=1 a1=a ppid=1 pid=2 auid=0 uid=0 items=2 comm="sh"`)
	r.sweep(emit)
	if len(got) != 0 {
		t.Fatalf("first sweep ended %v: an event gets a sweep's interval for its EOE", got)
	}
	r.sweep(emit)
	if !slices.Equal(got, []string{"signal"}) || len(r.pending) != 1 || r.lost != 0 {
		t.Errorf("after two sweeps: ended %v, %d open, %d lost; want the signal ended, the exec open", got, len(r.pending), r.lost)
	}
}

// Runtime noise is counted among the processes the watch's --comm and
// --cgroup keep, as eBPF counts it in the kernel: a Go program outside the
// watched cgroup, or of another comm, adds nothing to the filtered count.
func TestNoiseCountedInScope(t *testing.T) {
	sigs, _ := vocab.ParseTypes("signal")
	cgroups := map[uint32]string{10: "/build/go", 11: "/system.slice/other", 12: "/build"}
	for _, c := range []struct {
		cfg  tracer.Config
		want uint64
	}{
		{tracer.Config{}, 4},
		{tracer.Config{Cgroup: "/build"}, 3},
		{tracer.Config{Cgroup: "build/go/"}, 1},
		{tracer.Config{Comms: []string{"compile"}}, 2},
		{tracer.Config{Comms: []string{"compile"}, Cgroup: "/build"}, 1},
	} {
		r := newReassembler(sigs, vocab.UnsetID)
		r.procComm = func(uint32) (string, bool) { return "", false }
		r.ids.readProc = func(pid uint32, _ procParts) (tracer.ProcIdentity, bool) {
			cg, ok := cgroups[pid]
			return tracer.ProcIdentity{PPID: 1, Cgroup: cg}, ok
		}
		r.scope = noiseScope(c.cfg)
		emit := func(e *tracer.Event) { t.Errorf("%+v: noise emitted: %+v", c.cfg, e) }
		// tgkill(pid, tid, SIGURG) to a thread of the sender's own process.
		for i, s := range []struct {
			pid  int
			comm string
		}{{10, "compile"}, {11, "compile"}, {12, "go"}, {12, "go"}} {
			r.feed(auparse.TypeSyscall, fmt.Appendf(nil, "audit(1796011828.799:%d): arch=%x syscall=234 success=yes exit=0 a0=%x a1=%x a2=17 a3=0 items=0 ppid=1 pid=%d auid=0 uid=0 comm=%q",
				i+1, archValue(false), s.pid, s.pid+100, s.pid, s.comm), emit)
		}
		if got := r.filtered[vocab.FilteredPreemption]; got != c.want {
			t.Errorf("%+v: filtered %d, want %d", c.cfg, got, c.want)
		}
	}
}
