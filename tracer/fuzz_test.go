package tracer

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// The parsers here read what other users of the node control: a process
// names itself (comm, in /proc/PID/stat), and a user with a delegated
// cgroup names its cgroups (/proc/PID/cgroup). The corpora in
// testdata/fuzz hold lines read from a node's /proc and the hostile
// names of the unit tests.

// statStates are the states proc(5) lists.
const statStates = "RSDZTtXxKWPI"

// statLine formats a /proc/PID/stat line as the kernel does (proc(5)),
// with the fields ParseProcStat reads set and the others as a shell's.
func statLine(comm string, st host.ProcStat) []byte {
	b := append(append(append([]byte("4242 ("), comm...), ") "...), st.State) // a byte, not a rune
	return fmt.Appendf(b, " %d 4242 4242 34817 -1 4194560 1200 0 0 0 %d %d 0 0 20 -5 1 0 %d 9207808 1011 18446744073709551615 1 1 0 0 0 0 65536 3686404 1266761467 0 0 0 17 1 0 0 0 0 0",
		st.PPID, st.UTime, st.STime, st.Start)
}

// FuzzParseProcStat: whatever a process calls itself (spaces, ')',
// digits, "S 1 2" that looks like fields), the fields after its comm are
// read right and the comm comes back whole; and a line of any bytes that
// parses parses again, the same, when formatted as the kernel would.
func FuzzParseProcStat(f *testing.F) {
	f.Add("bash", byte('S'), uint32(1), uint64(250), uint64(75), uint64(100), []byte("14527 (cat) R 14513 14513 31477 0 -1 4194304 97 0 0 0 0 0 0 0 20 0 1 0 127795 3133440 375 18446744073709551615 94317635706880 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0"))
	f.Add("tracer (x) y", byte('R'), uint32(4242), uint64(1)<<40, uint64(0), uint64(123456789), []byte("1 (a) b) S"))
	f.Add(") S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 (", byte('Z'), uint32(0), uint64(0), uint64(0), uint64(0), []byte("(((())) ) Z"))
	f.Fuzz(func(t *testing.T, comm string, state byte, ppid uint32, utime, stime, start uint64, raw []byte) {
		want := host.ProcStat{Comm: comm, State: statStates[int(state)%len(statStates)], PPID: ppid, UTime: utime, STime: stime, Start: start}
		line := statLine(comm, want)
		got, ok := host.ParseProcStat(line)
		if !ok || got != want {
			t.Fatalf("ParseProcStat(%q) = %+v, %v; want %+v", line, got, ok, want)
		}
		if p, s, ok := host.ParseStat(line); !ok || p != ppid || s != start {
			t.Fatalf("ParseStat(%q) = %d, %d, %v", line, p, s, ok)
		}

		st, ok := host.ParseProcStat(raw)
		if !ok {
			return
		}
		// The comm runs from the first '(' to the last ')'.
		if open := bytes.IndexByte(raw, '('); !bytes.HasPrefix(raw[open+1:], []byte(st.Comm+")")) ||
			bytes.IndexByte(raw[open+len(st.Comm)+2:], ')') >= 0 || st.State == ' ' {
			t.Fatalf("ParseProcStat(%q) = %+v: comm or state not where the line has them", raw, st)
		}
		if again, ok := host.ParseProcStat(statLine(st.Comm, st)); !ok || again != st {
			t.Fatalf("ParseProcStat(%q) = %+v, formatted and read again %+v, %v", raw, st, again, ok)
		}
	})
}

// cgroupFile formats a /proc/PID/cgroup file of a hybrid node (v1
// hierarchies, name=systemd among them, then the v2 line), or of a v1 or
// v2 node alone: the kernel lists the v2 hierarchy last.
func cgroupFile(systemd, v2 string, hasSystemd, hasV2 bool) []byte {
	var b []byte
	b = append(b, "12:pids:/user.slice/user-1000.slice\n4:memory:/x:y\n"...)
	if hasSystemd {
		b = append(b, "1:name=systemd:"+systemd+"\n"...)
	}
	if hasV2 {
		b = append(b, "0::"+v2+"\n"...)
	}
	return b
}

// FuzzParseProcCgroup: a cgroup a user names (colons, "name=systemd",
// "0::" in it) does not change which line is read: the v2 line's path,
// else the name=systemd line's. A name with a newline is left out: the
// kernel prints it as it is, and such a file cannot be told from one with
// another line. Any bytes that parse give a path of one line, which the
// file holds after "0::" or "name=systemd:".
func FuzzParseProcCgroup(f *testing.F) {
	f.Add("/user.slice/user-1000.slice/session-3.scope", "/user.slice/user-1000.slice/session-3.scope", true, true,
		[]byte("9:name=systemd:/\n8:pids:/\n4:memory:/process_api/2ccf1b21fd8d6a2b061e446cd6f2da4b\n1:cpu:/\n0::/\n"))
	f.Add("/a:0::/system.slice", "/system.slice/x.service/0::/y", true, false, []byte("0::/only"))
	f.Add("", "/name=systemd:/z", false, true, []byte("1:name=systemd:/v1\n2::\n"))
	f.Fuzz(func(t *testing.T, systemd, v2 string, hasSystemd, hasV2 bool, raw []byte) {
		systemd, v2 = strings.ReplaceAll(systemd, "\n", ""), strings.ReplaceAll(v2, "\n", "")
		want, wantOK := "", false
		switch {
		case hasV2:
			want, wantOK = v2, true
		case hasSystemd:
			want, wantOK = systemd, true
		}
		file := cgroupFile(systemd, v2, hasSystemd, hasV2)
		for _, data := range [][]byte{file, bytes.TrimSuffix(file, []byte("\n"))} {
			if got, ok := host.ParseProcCgroup(data); got != want || ok != wantOK {
				t.Fatalf("ParseProcCgroup(%q) = %q, %v; want %q, %v", data, got, ok, want, wantOK)
			}
		}

		got, ok := host.ParseProcCgroup(raw)
		if !ok {
			if got != "" {
				t.Fatalf("ParseProcCgroup(%q) = %q, false", raw, got)
			}
			return
		}
		if strings.Contains(got, "\n") ||
			!bytes.Contains(raw, []byte("0::"+got)) && !bytes.Contains(raw, []byte("name=systemd:"+got)) {
			t.Fatalf("ParseProcCgroup(%q) = %q: not a line's path", raw, got)
		}
	})
}

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
func eventsFromBytes(data []byte, emit func(*Event)) {
	templates := whoEvents()
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range templates {
			if !yield(k) {
				return
			}
		}
	})
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	e := Event{Time: t0, Backend: "ebpf", Type: vocab.TypeExec, PID: 4242, Comm: "sh", Filename: "/bin/true",
		Argv: []string{"true", "x"}, ExecID: ExecID{PID: 4242, Start: 100}, Cgroup: "/"}
	emit(&e)
	for len(data) >= 2 {
		op, v := data[0], data[1]
		data = data[2:]
		n, s := fuzzNumbers[int(v)%len(fuzzNumbers)], fuzzStrings[int(v)%len(fuzzStrings)]
		switch op % 20 {
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
			e.ParentExecID = ExecID{PID: uint32(n), Start: n / 3}
		case 6:
			e.TargetPID = int32(n)
			if v&1 != 0 {
				e.TargetPID = -e.TargetPID
			}
		case 7:
			e.TargetExecID = ExecID{PID: uint32(n), Start: fuzzNumbers[int(v/16)%len(fuzzNumbers)]}
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
			e.Ancestors = append(e.Ancestors[:0], Ancestor{PID: uint32(n), Comm: s, ExecID: ExecID{PID: uint32(n), Start: 7}})
			if v&1 != 0 {
				e.Ancestors = e.Ancestors[:0]
			}
		case 16:
			e.KilledBy = KilledBy{Origin: vocab.Origin(v % 3), PID: uint32(n), Comm: s, Code: int32(v) - 128}
		case 17:
			e.ExitCode, e.CoreDumped, e.OOMKill = int(n%256), v&1 != 0, v&2 != 0
		case 18:
			e.Code, e.HasCode, e.Origin, e.Result = int32(v)-6, v&1 != 0, vocab.Origin(v%3), vocab.SignalResult(v%4)
		case 19:
			e.UID, e.AUID, e.PPID, e.ChildPID = uint32(n), uint32(v)*1000, uint32(n/2), uint32(n+1)
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
		eventsFromBytes(data, func(e *Event) {
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
