// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// The testdata under testdata/peers was captured on a development machine
// from the real tools: laurel 0.5.1 as the plugin of a private auditd
// 3.0.9 with tracer's rules, and libbpf-tools 0.26 (execsnoop, exitsnoop,
// sigsnoop at once), while `tracer bench workload exec-rate --count 3` (pid
// 28134 under laurel, 28860 under the libbpf-tools) and `signal-rate
// --count 3` (28146, 28882) ran, then a marker: kill(28062, 0) under laurel,
// /bin/true (28898) under the libbpf-tools. A few of the node's other
// events were kept around them.

func TestLaurelSyscall(t *testing.T) {
	f, err := os.Open("testdata/peers/laurel.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []procEvent
	names := map[string]int{}
	nonSyscall, marker := 0, 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		rec, key, ok := laurelSyscall(sc.Bytes())
		if !ok {
			nonSyscall++
			continue
		}
		if markerRecord(rec, 28062) {
			marker++
		}
		if rec.Arch != 0xc000003e {
			t.Errorf("arch %#x, want x86_64's 0xc000003e", rec.Arch)
		}
		if key == "" && rec.Syscall != 44 { // the sendto of auditctl carries no key
			t.Errorf("no key in %s", sc.Text())
		}
		if e, ok := syscallEvent(rec); ok {
			evs = append(evs, e)
			names[e.Type.String()]++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// DAEMON_END has no SYSCALL record (CONFIG_CHANGE has auditctl's sendto).
	if nonSyscall != 1 || marker != 1 {
		t.Errorf("%d lines without a SYSCALL record (want 1), %d marker records (want 1)", nonSyscall, marker)
	}
	// 6 execve, 13 clone and clone3 (5 + 8), 17 kill and tgkill (4 + 13).
	if names["exec"] != 6 || names["fork"] != 13 || names["signal"] != 17 {
		t.Errorf("parsed %v, want exec 6, fork 13, signal 17", names)
	}
	// exec-rate's tree: its exec and its three /bin/true's, the three
	// spawns; its runtime threads (clone3, with their tids as exit) apart.
	// The loops ran without GODEBUG=asyncpreemptoff=1, which bench sets:
	// the runtime's tgkills (preemption) are signals the process sent
	// itself, counted as such.
	threads := map[uint32]bool{28138: true, 28139: true, 28140: true, 28141: true}
	if c := countTree(evs, 28134, threads); c.Tally != (Tally{Exec: 4, Fork: 3, Signal: 6}) || c.ThreadForks != 4 {
		t.Errorf("exec-rate: %s, %d thread forks; want exec 4, fork 3, signal 6 and 4", c.Tally, c.ThreadForks)
	}
	// signal-rate: its exec, /bin/cat's fork and exec, three SIGUSR1, six
	// tgkills of the runtime.
	threads = map[uint32]bool{28147: true, 28148: true, 28149: true, 28150: true}
	if c := countTree(evs, 28146, threads); c.Tally != (Tally{Exec: 2, Fork: 1, Signal: 3 + 6}) {
		t.Errorf("signal-rate: %s, want exec 2, fork 1, signal 9", c.Tally)
	}
	// The fields as laurel wrote them, for one line.
	line := `{"ID":"1.0:1","SYSCALL":{"arch":"0xc000003e","syscall":62,"success":"yes","exit":-3,"items":0,"ppid":7,"pid":8,"key":"tracer","ARCH":"x86_64","SYSCALL":"kill","ARGV":["0x9","0xa","0x0","0x7f"],"PPID":{"comm":"sh"},"PID":{"EVENT_ID":"1.0:1"}}}`
	rec, key, ok := laurelSyscall([]byte(line))
	if !ok || key != "tracer" || rec.Syscall != 62 || rec.PID != 8 || rec.PPID != 7 || !rec.HasExit || rec.Exit != -3 || rec.Args != [4]uint64{9, 10, 0, 0x7f} {
		t.Errorf("parsed %+v key %q ok %v", rec, key, ok)
	}
	for _, bad := range []string{``, `{}`, `{"SYSCALL":{"arch":"x"}}`, `not json "SYSCALL":{`} {
		if _, _, ok := laurelSyscall([]byte(bad)); ok {
			t.Errorf("laurelSyscall(%q) ok", bad)
		}
	}
}

func readPeerOutput(t *testing.T, tool string) ([]procEvent, string) {
	t.Helper()
	b, err := os.ReadFile("testdata/peers/" + tool + ".txt")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := readLibbpfOutput(tool, strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return evs, string(b)
}

func TestLibbpfOutput(t *testing.T) {
	var all []procEvent
	for _, tc := range []struct {
		tool   string
		events int
		typ    vocab.Type
	}{
		// 10 execs (the header apart), 10 exits, 13 signals of which
		// 9 SIGCHLD that no process sent.
		{"execsnoop", 10, vocab.TypeExec},
		{"exitsnoop", 10, vocab.TypeFork},
		{"sigsnoop", 6, vocab.TypeSignal},
	} {
		evs, text := readPeerOutput(t, tc.tool)
		if len(evs) != tc.events {
			t.Errorf("%s: %d events, want %d", tc.tool, len(evs), tc.events)
		}
		for _, e := range evs {
			if e.Type != tc.typ {
				t.Errorf("%s: event %+v, want type %v", tc.tool, e, tc.typ)
			}
		}
		marked := false
		for _, l := range strings.Split(text, "\n") {
			marked = marked || libbpfMarker(tc.tool, l, 28898)
		}
		if !marked {
			t.Errorf("%s: the marker process 28898 not found", tc.tool)
		}
		all = append(all, evs...)
	}
	// exec-rate (28860): its exec, three /bin/true execs and their ends
	// (the forks that made them); its own end is its parent's business.
	if c := countTree(all, 28860, nil); c.Tally != (Tally{Exec: 4, Fork: 3}) {
		t.Errorf("exec-rate: %s, want exec 4, fork 3, signal 0", c.Tally)
	}
	// signal-rate (28882): its exec, /bin/cat's exec and end, three SIGUSR1.
	if c := countTree(all, 28882, nil); c.Tally != (Tally{Exec: 2, Fork: 1, Signal: 3}) {
		t.Errorf("signal-rate: %s, want exec 2, fork 1, signal 3", c.Tally)
	}
	// execsnoop alone: the execs.
	ex, _ := readPeerOutput(t, "execsnoop")
	if c := countTree(ex, 28860, nil); c.Tally != (Tally{Exec: 4}) {
		t.Errorf("execsnoop, exec-rate: %s, want exec 4", c.Tally)
	}

	// A comm with spaces, a failed exec (-x), a signal by name.
	if e, ok := parseLibbpfLine("execsnoop", "Web Content      4242   4000     0 /usr/lib/firefox/firefox -contentproc"); !ok || e.PID != 4242 || e.PPID != 4000 {
		t.Errorf("comm with spaces: %+v %v", e, ok)
	}
	if _, ok := parseLibbpfLine("execsnoop", "sh               4243   4000    -2 /nonexistent"); ok {
		t.Error("a failed exec counted")
	}
	if e, ok := parseLibbpfLine("sigsnoop", "23:57:28 28882   my tool          10        28895   0     "); !ok || e.PID != 28882 {
		t.Errorf("sigsnoop comm with spaces: %+v %v", e, ok)
	}
	if got := libbpfLost("Lost 12 events on CPU #1!\nlost 3 events on CPU #0\nsomething else\n"); got != 15 {
		t.Errorf("libbpfLost = %d, want 15", got)
	}
}

// The columns of the libbpf-tools 0.26 as the fidelity test reads them:
// execsnoop -U -q, exitsnoop's exit codes and signals, sigsnoop's target.
func TestLibbpfDetail(t *testing.T) {
	x, ok := parseExecsnoop(`65534 true             4243   4242     0 "/bin/true" "a b" "say \"hi\"" "new\nline" "tab\tx" "" "`+"\xff"+`"`, true)
	if !ok || x.UID != 65534 || x.PID != 4243 || x.PPID != 4242 || x.Ret != 0 {
		t.Fatalf("execsnoop -U -q: %+v %v", x, ok)
	}
	args, more, ok := execsnoopArgs(x.Args)
	if want := []string{"/bin/true", "a b", `say "hi"`, "new\nline", "tab\tx", "", "\xff"}; !ok || more || !slices.Equal(args, want) {
		t.Errorf("arguments %q more %v ok %v, want %q", args, more, ok, want)
	}
	// More than --max-args: a quote opened for an argument not read, " ...".
	if args, more, ok := execsnoopArgs(`"/bin/true" "arg01" " ...`); !ok || !more || !slices.Equal(args, []string{"/bin/true", "arg01"}) {
		t.Errorf("cut arguments: %q %v %v", args, more, ok)
	}
	if _, _, ok := execsnoopArgs(`"/bin/true" unquoted`); ok {
		t.Error("unquoted arguments read as -q's")
	}
	if x, ok := parseExecsnoop("4294967295sh               1      0       0 \"/bin/sh\"", true); !ok || x.UID != 4294967295 || x.PID != 1 {
		t.Errorf("a uid wider than its column: %+v %v", x, ok)
	}
	if _, ok := parseExecsnoop("UID   PCOMM            PID    PPID   RET ARGS", true); ok {
		t.Error("execsnoop -U's header read as an event")
	}
	for line, want := range map[string]exitsnoopLine{
		"true             4250    4242    4250    0.00    0":                                           {PID: 4250, PPID: 4242, TID: 4250},
		"workload         4251    4242    4251    0.01    code 255":                                    {PID: 4251, PPID: 4242, TID: 4251, Code: 255},
		"workload         4252    4242    4252    0.01    signal 9 (Killed)":                           {PID: 4252, PPID: 4242, TID: 4252, Signal: 9},
		"workload         4253    4242    4253    0.01    signal 11 (Segmentation fault), core dumped": {PID: 4253, PPID: 4242, TID: 4253, Signal: 11, Core: true},
	} {
		if got, ok := parseExitsnoop(line); !ok || got != want {
			t.Errorf("exitsnoop %q: %+v %v, want %+v", line, got, ok, want)
		}
	}
	if got, ok := parseSigsnoop("03:09:45 4242    my tool          12        4252    0     "); !ok || got != (sigsnoopLine{PID: 4242, Signal: 12, TPID: 4252}) {
		t.Errorf("sigsnoop: %+v %v", got, ok)
	}
}

// laurel 0.5's EXECVE arguments (%XX for control characters, bytes that
// are not UTF-8 and '%') and its ANOM_ABEND, an array of one record.
func TestLaurelDetail(t *testing.T) {
	e, ok := parseLaurel([]byte(`{"ID":"1.0:1","SYSCALL":{"arch":"0xc000003e","syscall":59,"success":"yes","exit":0,"ppid":7,"pid":8,"auid":4294967295,"uid":65534,"key":"tracer","UID":"nobody","ARGV":["0x1","0x2","0x3","0x4"]},"EXECVE":{"argc":4,"ARGV":["/bin/true","new%0aline","%ff%fe ünï","%2541"]}}`))
	if !ok || !e.HasSyscall || e.Key != "tracer" || e.Syscall.PID != 8 || e.Syscall.PPID != 7 || e.Syscall.UID != 65534 || e.Argc != 4 {
		t.Fatalf("parsed %+v %v", e, ok)
	}
	if want := []string{"/bin/true", "new\nline", "\xff\xfe ünï", "%41"}; !slices.Equal(e.Argv, want) {
		t.Errorf("arguments %q, want %q", e.Argv, want)
	}
	e, ok = parseLaurel([]byte(`{"ID":"1.0:2","ANOM_ABEND":[{"auid":4294967295,"uid":0,"pid":26407,"comm":"workload","sig":11,"res":1,"AUID":"unset","UID":"root"}]}`))
	if !ok || e.HasSyscall || e.AbendPID != 26407 || e.AbendSig != 11 {
		t.Errorf("ANOM_ABEND: %+v %v", e, ok)
	}
	if _, ok := parseLaurel([]byte(`{"ID":"1.0:3","DAEMON_END":{"op":"terminate"}}`)); ok {
		t.Error("DAEMON_END read as an event")
	}
}
