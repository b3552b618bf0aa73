// SPDX-License-Identifier: Apache-2.0

package audit

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"strconv"
	"testing"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/auparse"
	"github.com/tracer-dev/tracer/tracer/sink"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// BenchmarkReassembleSignal measures the user-space cost of one signal
// event (SYSCALL, OBJ_PID, PROCTITLE, EOE records recorded on this machine;
// with lean records the SYSCALL record alone) through reassembly and the
// JSON sink: the consumer's share of an audited kill(2).
func BenchmarkReassembleSignal(b *testing.B) {
	f, err := os.Open("testdata/workload.raw")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	type rec struct {
		typ  uint16
		data []byte
	}
	var kill []rec
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	serial := ""
	for sc.Scan() {
		line := sc.Bytes()
		sp := bytes.IndexByte(line, ' ')
		typ, _ := strconv.Atoi(string(line[:sp]))
		body := append([]byte(nil), line[sp+1:]...)
		if typ == auparse.TypeSyscall && bytes.Contains(body, []byte(" syscall=62 ")) && serial == "" {
			serial = string(body[:bytes.IndexByte(body, ')')])
		}
		if serial != "" && bytes.HasPrefix(body, []byte(serial)) {
			kill = append(kill, rec{uint16(typ), body})
		}
	}
	if len(kill) != 4 {
		b.Fatalf("recorded kill event has %d records, want 4", len(kill))
	}
	// lean: what tracer reads with lean records, the SYSCALL record alone.
	for _, c := range []struct {
		name string
		recs []rec
	}{{"classic", kill}, {"lean", kill[:1]}} {
		b.Run(c.name, func(b *testing.B) {
			r := newReassembler(vocab.DefaultTypes, vocab.UnsetID)
			r.eoeless = c.name == "lean"
			// The recording's processes are gone; in a storm sender and
			// target live, and are read from /proc once.
			r.ids.readProc = func(pid uint32, _ procParts) (tracer.ProcIdentity, bool) {
				return tracer.ProcIdentity{PPID: 1, Comm: "workload", Cgroup: "/user.slice"}, true
			}
			r.procComm = func(uint32) (string, bool) { return "workload", true }
			r.procExe = func(uint32) (string, bool) { return "", false }
			s := sink.NewJSONSink(io.Discard)
			emit := func(e *tracer.Event) { _ = s.Write(e) }
			b.ReportAllocs()
			for b.Loop() {
				for _, rc := range c.recs {
					r.feed(rc.typ, rc.data, emit)
				}
			}
			if got := r.delivered[vocab.TypeSignal]; got != uint64(b.N) {
				b.Fatalf("delivered %d signal events, want %d", got, b.N)
			}
		})
	}
}
