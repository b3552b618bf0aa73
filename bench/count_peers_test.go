package bench

import (
	"bufio"
	"os"
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
