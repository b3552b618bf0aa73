package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tracer-dev/tracer/tracer"
)

var update = flag.Bool("update", false, "rewrite golden files")

// replay feeds a recorded file of "TYPE audit(...): body" lines, as read from
// the netlink socket on this machine, through the reassembler.
func replay(t *testing.T, path string, types tracer.TypeSet) []tracer.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := newReassembler(types, tracer.UnsetID)
	// The recording's processes are gone: comm lookups through /proc must not leak in.
	r.procComm = func(uint32) (string, bool) { return "", false }
	r.who.readProc = func(uint32) (tracer.ProcIdentity, bool) { return tracer.ProcIdentity{}, false }
	var out []tracer.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		sp := bytes.IndexByte(line, ' ')
		typ, err := strconv.Atoi(string(line[:sp]))
		if err != nil {
			t.Fatalf("bad line %q", line)
		}
		r.feed(uint16(typ), append([]byte(nil), line[sp+1:]...), func(e *tracer.Event) {
			c := *e
			c.Argv = append([]string(nil), e.Argv...)
			out = append(out, c)
		})
	}
	if r.bad != 0 {
		t.Errorf("%d records failed to parse", r.bad)
	}
	return out
}

func TestReassembleGolden(t *testing.T) {
	all := tracer.TypeSet(0).With(tracer.TypeExec).With(tracer.TypeFork).With(tracer.TypeSignal).With(tracer.TypeExit)
	events := replay(t, "testdata/workload.raw", all)
	var buf bytes.Buffer
	for i := range events {
		buf.Write(tracer.AppendJSON(nil, &events[i]))
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

// Both backends keep tracer.ArgvMax arguments and say when they cut argv.
func TestParseExecveCap(t *testing.T) {
	record := func(n int) []byte {
		b := []byte("argc=" + strconv.Itoa(n))
		for i := range n {
			b = append(b, " a"+strconv.Itoa(i)+"=\"x"+strconv.Itoa(i)+"\""...)
		}
		return b
	}
	for _, n := range []int{3, tracer.ArgvMax, tracer.ArgvMax + 1, 64} {
		argv, cut := parseExecve(record(n), nil, maxArgv)
		if want := min(n, tracer.ArgvMax); len(argv) != want || cut != (n > tracer.ArgvMax) {
			t.Errorf("%d arguments: kept %d, cut %v; want %d, %v", n, len(argv), cut, want, n > tracer.ArgvMax)
		}
		if len(argv) > 0 && argv[len(argv)-1] != "x"+strconv.Itoa(len(argv)-1) {
			t.Errorf("%d arguments: last kept %q", n, argv[len(argv)-1])
		}
	}
}
