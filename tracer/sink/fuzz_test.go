// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// fuzzStrings are strings events carry, hostile ones among them, of
// several lengths: a segment changes length when one follows another.
var fuzzStrings = []string{"", "sh", "storm", "x\nFAKE\x1b[31m\xff", "\u2028\"\\", "/usr/bin/grep", "\xc2\x9b2J", "a-much-longer-string-0123456789"}

// fuzzNumbers are pids, starts and codes whose digit counts differ, so
// that patches in place and rebuilt lines both happen.
var fuzzNumbers = []uint64{0, 1, 9, 10, 4242, 4243, 99999, 100000, 4194304, 123456789, 1 << 40}

// eventsFromBytes makes a sequence of events from data: each event is the
// one before with a few fields changed, the way consecutive events of a
// storm differ (another pid, exec id, target, time, or argv), with now and
// then an event of another type in between. Like a backend, it reuses one
// Event, its Argv and Ancestors arrays included; each is passed to emit.
func eventsFromBytes(data []byte, emit func(*tracer.Event)) {
	templates := attributionEvents()
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range templates {
			if !yield(k) {
				return
			}
		}
	})
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	e := tracer.Event{Time: t0, Backend: "ebpf", Type: vocab.TypeExec, PID: 4242, Comm: "sh", Filename: "/bin/true",
		Argv: []string{"true", "x"}, ExecID: tracer.ExecID{PID: 4242, Start: 100}, Cgroup: "/"}
	emit(&e)
	for len(data) >= 2 {
		op, v := data[0], data[1]
		data = data[2:]
		n, s := fuzzNumbers[int(v)%len(fuzzNumbers)], fuzzStrings[int(v)%len(fuzzStrings)]
		switch op % 22 {
		case 0: // another event altogether
			argv, anc := e.Argv[:0], e.Ancestors[:0]
			e = templates[names[int(v)%len(names)]]
			e.Argv, e.Ancestors = append(argv, e.Argv...), append(anc, e.Ancestors...)
		case 1:
			e.Type = vocab.Type(v % uint8(vocab.NumTypes+1))
		case 2:
			e.PID = uint32(n)
		case 3:
			e.ExecID.PID = uint32(n)
		case 4:
			e.ExecID.Start = n
		case 5:
			e.ParentExecID = tracer.ExecID{PID: uint32(n), Start: n / 3}
		case 6:
			e.TargetPID = int32(n)
			if v&1 != 0 {
				e.TargetPID = -e.TargetPID
			}
		case 7:
			e.TargetExecID = tracer.ExecID{PID: uint32(n), Start: fuzzNumbers[int(v/16)%len(fuzzNumbers)]}
		case 8: // times whose fractions print with another number of digits
			e.Time = e.Time.Add(time.Duration(n%1000) * time.Duration([]int{1, 1e3, 1e6, 1e9}[v%4]))
			if v&4 != 0 {
				e.Time = e.Time.Truncate(time.Millisecond)
			}
		case 9:
			e.Comm = s
		case 10:
			e.TargetComm = s
		case 11:
			e.Cgroup, e.ContainerID, e.Unit = s, fuzzStrings[int(v/8)%len(fuzzStrings)], ""
		case 12: // the backend reuses its argv array
			if len(e.Argv) > 0 {
				e.Argv[int(v)%len(e.Argv)] = s
			}
		case 13:
			e.Argv = append(e.Argv, s)
			if v&1 != 0 {
				e.Argv = e.Argv[:0]
			}
		case 14:
			e.Signal, e.Ret = int(v%65), -int64(v%4)
		case 15:
			e.Ancestors = append(e.Ancestors[:0], tracer.Ancestor{PID: uint32(n), Comm: s, ExecID: tracer.ExecID{PID: uint32(n), Start: 7}})
			if v&1 != 0 {
				e.Ancestors = e.Ancestors[:0]
			}
		case 16:
			e.KilledBy = tracer.KilledBy{Origin: vocab.Origin(v % 3), PID: uint32(n), Comm: s, Code: int32(v) - 128}
		case 17:
			e.ExitCode, e.CoreDumped, e.OOMKill = int(n%256), v&1 != 0, v&2 != 0
		case 18:
			e.Code, e.HasCode, e.Origin, e.Result = int32(v)-6, v&1 != 0, vocab.Origin(v%3), vocab.SignalResult(v%4)
		case 19:
			e.UID, e.AUID, e.PPID, e.ChildPID = uint32(n), uint32(v)*1000, uint32(n/2), uint32(n+1)
		case 20: // a setuid program's ids, or the same ids again
			e.HasCreds, e.GID, e.Session = v&1 != 0, uint32(n/3), uint32(v)
			e.SameCreds()
			if v&2 != 0 {
				e.EUID, e.SUID = 0, 0
			}
			if v&4 != 0 {
				e.FSGID = uint32(n)
			}
		case 21:
			e.TTY, e.Exe, e.Cwd, e.Key = s, fuzzStrings[int(v/2)%len(fuzzStrings)], fuzzStrings[int(v/4)%len(fuzzStrings)], ""
			if v&1 != 0 {
				e.Key = s
			}
		}
		emit(&e)
	}
}

// FuzzJSONSinkMatchesAppendJSON: JSONSink rewrites only the segments of
// its last line that changed; over any sequence of events each line it
// writes is AppendJSON's for that event.
func FuzzJSONSinkMatchesAppendJSON(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{8, 1, 8, 1, 2, 4, 3, 4, 2, 5, 8, 6})
	f.Add([]byte{0, 5, 2, 3, 3, 3, 6, 2, 7, 2, 2, 9, 3, 9, 6, 9, 7, 9, 0, 1, 12, 3, 13, 4})
	// Eight bytes from a clock: the fuzzer's words.
	f.Add(binary.LittleEndian.AppendUint64(nil, uint64(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC).UnixNano())))
	f.Fuzz(func(t *testing.T, data []byte) {
		var out, want bytes.Buffer
		s := NewJSONSink(&out)
		n := 0
		eventsFromBytes(data, func(e *tracer.Event) {
			n++
			want.Write(AppendJSON(nil, e))
			want.WriteByte('\n')
			if err := s.Write(e); err != nil {
				t.Fatal(err)
			}
		})
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		got, wantLines := strings.SplitAfter(out.String(), "\n"), strings.SplitAfter(want.String(), "\n")
		if len(got) != n+1 {
			t.Fatalf("%d lines for %d events", len(got)-1, n)
		}
		for i := range got {
			if got[i] != wantLines[i] {
				t.Fatalf("event %d:\n got %s\nwant %s", i, got[i], wantLines[i])
			}
		}
	})
}
