// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// A recorded auditd log (ENRICHED format) with tracer's rules: `sh
// cis-shell.sh 1` as pid 23029, then `env GODEBUG=... tracer bench workload
// signal-storm --count 3` as pid 23036 (env execs tracer in place), whose
// Go runtime made threads 23037-23040; other processes of the node around.
func TestCountAuditdLog(t *testing.T) {
	evs, err := readAuditLogFile("testdata/count/auditd-cis-shell-1.log", "tracer")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 57 {
		t.Fatalf("read %d SYSCALL records with key tracer, want 57", len(evs))
	}
	sh := countTree(evs, 23029, nil)
	if want := (Tally{Exec: 1 + 4, Fork: 6}); sh.Tally != want {
		t.Errorf("cis-shell, 1 iteration: %v, want %v (the workload's own formula)", sh.Tally, want)
	}
	if sh.Procs != 7 {
		t.Errorf("cis-shell tree has %d processes, want 7", sh.Procs)
	}
	threads := map[uint32]bool{23036: true, 23037: true, 23038: true, 23039: true, 23040: true}
	g := countTree(evs, 23036, threads)
	if want := (Tally{Exec: 2, Signal: 3}); g.Tally != want || g.ThreadForks != 4 {
		t.Errorf("signal-storm: %v and %d thread forks, want %v and 4", g.Tally, g.ThreadForks, want)
	}
	// Without the thread ids the runtime's clone3 calls look like forks.
	if g := countTree(evs, 23036, nil); g.Fork != 4 {
		t.Errorf("signal-storm without thread ids: %d forks, want 4", g.Fork)
	}
}

func TestParseAuditSyscall(t *testing.T) {
	line := `type=SYSCALL msg=audit(1796012089.707:405546): arch=c000003e syscall=56 success=yes exit=4242 a0=1200011 a1=0 a2=0 a3=7f items=0 ppid=1 pid=4000 auid=4294967295 uid=0 comm="sh" exe="/usr/bin/dash" key="tracer"`
	e, ok := parseAuditSyscall(line)
	if !ok || e.Type != vocab.TypeFork || e.PID != 4000 || e.PPID != 1 || e.Child != 4242 {
		t.Errorf("clone record: %+v %v", e, ok)
	}
	// A failed clone has no child.
	e, ok = parseAuditSyscall(strings.Replace(strings.Replace(line, "success=yes", "success=no", 1), "exit=4242", "exit=-11", 1))
	if !ok || e.Child != 0 {
		t.Errorf("failed clone: %+v", e)
	}
	// i386 ABI: syscall 37 is kill there (62 on x86_64).
	e, ok = parseAuditSyscall(`type=SYSCALL msg=audit(1.2:3): arch=40000003 syscall=37 success=yes exit=0 ppid=1 pid=9 key="tracer"`)
	if !ok || e.Type != vocab.TypeSignal {
		t.Errorf("i386 kill: %+v %v", e, ok)
	}
	if _, ok := parseAuditSyscall(`type=SYSCALL msg=audit(1.2:3): arch=c000003e syscall=39 success=yes exit=1 ppid=1 pid=9 key="tracer"`); ok {
		t.Error("getpid taken for a process event")
	}
}

// A JSON log as `tracer watch --format json` writes it, with the hard cases:
// a grandchild's exec logged before its parent's fork, a process known only
// by an exec whose ppid is in the tree, a Go thread creation, an unrelated
// process that signals a member, and a fork made from outside the tree.
const jsonLog = `{"time":"2026-11-30T04:00:00.000000001Z","backend":"ebpf","type":"exec","pid":100,"comm":"bench","uid":0,"auid":4294967295,"ppid":1,"filename":"/bin/sh","argv":["sh","x"],"ret":0}
{"time":"2026-11-30T04:00:00.000000002Z","backend":"ebpf","type":"exec","pid":102,"comm":"sh","uid":0,"auid":4294967295,"ppid":101,"filename":"/usr/bin/grep","argv":["grep"],"ret":0}
{"time":"2026-11-30T04:00:00.000000003Z","backend":"ebpf","type":"fork","pid":100,"comm":"sh","uid":0,"auid":4294967295,"child_pid":101,"syscall":"clone"}
{"time":"2026-11-30T04:00:00.000000004Z","backend":"ebpf","type":"fork","pid":101,"comm":"sh","uid":0,"auid":4294967295,"child_pid":102,"syscall":"vfork"}
{"time":"2026-11-30T04:00:00.000000005Z","backend":"ebpf","type":"exec","pid":103,"comm":"sh","uid":0,"auid":4294967295,"ppid":100,"filename":"/bin/true","argv":["true"],"ret":0}
{"time":"2026-11-30T04:00:00.000000006Z","backend":"ebpf","type":"fork","pid":100,"comm":"sh","uid":0,"auid":4294967295,"child_pid":104,"syscall":"clone3"}
{"time":"2026-11-30T04:00:00.000000007Z","backend":"ebpf","type":"signal","pid":100,"comm":"sh","uid":0,"auid":4294967295,"target_pid":100,"signal":10,"signal_name":"SIGUSR1","syscall":"kill","ret":0}
{"time":"2026-11-30T04:00:00.000000008Z","backend":"ebpf","type":"signal","pid":555,"comm":"other","uid":0,"auid":4294967295,"target_pid":100,"signal":10,"signal_name":"SIGUSR1","syscall":"kill","ret":0}
{"time":"2026-11-30T04:00:00.000000009Z","backend":"ebpf","type":"fork","pid":555,"comm":"other","uid":0,"auid":4294967295,"child_pid":556,"syscall":"clone"}
{"time":"2026-11-30T04:00:00.000000010Z","backend":"ebpf","type":"exec","pid":556,"comm":"other","uid":0,"auid":4294967295,"ppid":555,"filename":"/bin/ls","argv":["ls"],"ret":0}
`

func TestCountJSONLog(t *testing.T) {
	evs, err := readJSONLog(strings.NewReader(jsonLog))
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 10 {
		t.Fatalf("read %d events, want 10", len(evs))
	}
	c := countTree(evs, 100, map[uint32]bool{100: true, 104: true})
	if want := (Tally{Exec: 3, Fork: 2, Signal: 1}); c.Tally != want || c.ThreadForks != 1 {
		t.Errorf("tree of 100: %v, %d thread forks; want %v, 1", c.Tally, c.ThreadForks, want)
	}
	if c.Procs != 4 { // 100, 101, 102, 103
		t.Errorf("tree of 100 has %d processes, want 4", c.Procs)
	}
	if _, err := readJSONLog(strings.NewReader("{\"type\":\"exec\"}\nnot json\n")); err == nil ||
		!strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad line: err = %v, want one naming line 2", err)
	}
}

// A clone interrupted by a signal fails with ERESTARTNOINTR and is made
// again: the audit log has both calls, but only one process was made.
func TestCountRestartedClone(t *testing.T) {
	log := `type=SYSCALL msg=audit(1.000:1): arch=c000003e syscall=59 success=yes exit=0 ppid=1 pid=500 comm="sh" key="tracer"
type=SYSCALL msg=audit(1.001:2): arch=c000003e syscall=56 success=no exit=-513 ppid=1 pid=500 comm="sh" key="tracer"
type=SYSCALL msg=audit(1.002:3): arch=c000003e syscall=56 success=yes exit=501 ppid=1 pid=500 comm="sh" key="tracer"
type=SYSCALL msg=audit(1.003:4): arch=c000003e syscall=59 success=yes exit=0 ppid=500 pid=501 comm="sh" key="tracer"
`
	evs, err := readAuditLog(strings.NewReader(log), "tracer")
	if err != nil {
		t.Fatal(err)
	}
	c := countTree(evs, 500, nil)
	if want := (Tally{Exec: 2, Fork: 1}); c.Tally != want || c.FailedForks != 1 {
		t.Errorf("%v, %d failed; want %v, 1", c.Tally, c.FailedForks, want)
	}
	if n := countNote(&Workload{Known: true, Expected: Tally{Exec: 2, Fork: 1}}, Tally{Exec: 2, Fork: 1}, c); n != "1 fork calls that made no process (restarted clones) not counted" {
		t.Errorf("note %q", n)
	}
}

func TestNotesByRound(t *testing.T) {
	got := notes([]Sample{{Round: 1, Note: "flush=SYNC"}, {Round: 2, Note: "flush=SYNC; saw x"}, {Round: 3, Note: "flush=SYNC"}})
	if got != "flush=SYNC; saw x (round 2)" {
		t.Errorf("notes = %q", got)
	}
}
