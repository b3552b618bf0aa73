// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/tracer/host"
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
