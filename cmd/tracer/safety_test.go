// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// The node as tracers must leave it: audit rules, the settings tracers
// change, and the state directory.
func nodeSnapshot(t *testing.T) string {
	t.Helper()
	st := kernelStatus(t)
	var b strings.Builder
	fmt.Fprintf(&b, "enabled=%d failure=%d pid=%d backlog_limit=%d backlog_wait_time=%d\n",
		st.Enabled, st.Failure, st.PID, st.BacklogLimit, st.BacklogWaitTime)
	for _, r := range kernelRules(t) {
		b.WriteString(r + "\n")
	}
	ents, _ := os.ReadDir("/run/tracer")
	for _, e := range ents {
		// A live tracer's registration is another user's (a tracer of
		// another package's test beside this one); one left by a dead
		// tracer is state left behind.
		var pid int
		if n, _ := fmt.Sscanf(e.Name(), "tracer-%d.json", &pid); n == 1 && syscall.Kill(pid, 0) == nil {
			continue
		}
		b.WriteString("/run/tracer/" + e.Name() + "\n")
	}
	return b.String()
}

// waitNodeBack polls until the node is as before (the kernel lets go of a
// dead audit PID only at its next failed send).
func waitNodeBack(t *testing.T, before string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	now := nodeSnapshot(t)
	for now != before && time.Now().Before(deadline) {
		_ = exec.Command("true").Run()
		time.Sleep(100 * time.Millisecond)
		now = nodeSnapshot(t)
	}
	if now != before {
		t.Errorf("node not as found:\nbefore:\n%safter:\n%s", before, now)
	}
}

// watcher is a running `tracer watch` whose stderr is collected.
type watcher struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	lines  []string
	done   chan struct{}
	waited chan error
}

// startWatcher starts `tracer watch args` with stdout to out (nil: a file
// is not needed) and waits for its watching line.
func startWatcher(t *testing.T, out *os.File, args ...string) *watcher {
	t.Helper()
	return startWatcherCmd(t, out, exec.Command(tracerBin, append([]string{"watch"}, args...)...))
}

// startWatcherCmd is startWatcher for a command line of the caller's (a
// tracer watch run under prlimit).
func startWatcherCmd(t *testing.T, out *os.File, cmd *exec.Cmd) *watcher {
	t.Helper()
	args := cmd.Args
	w := &watcher{cmd: cmd, done: make(chan struct{}), waited: make(chan error, 1)}
	w.cmd.Stdout = out
	stderr, err := w.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := watchingLine(stderr, func(line string) {
		w.mu.Lock()
		w.lines = append(w.lines, line)
		w.mu.Unlock()
	}, w.done)
	select {
	case ok := <-ready:
		if !ok {
			<-w.done
			_ = w.cmd.Wait()
			t.Fatalf("tracer watch %v exited before watching: %s", args, w.stderr())
		}
	case <-time.After(30 * time.Second):
		_ = w.cmd.Process.Kill()
		t.Fatalf("tracer watch %v did not print its watching line", args)
	}
	t.Cleanup(func() {
		if w.cmd.ProcessState == nil {
			_ = w.cmd.Process.Kill()
			_ = w.cmd.Wait()
		}
	})
	return w
}

func (w *watcher) stderr() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines, "\n")
}

// stop sends SIGTERM and waits for the exit.
func (w *watcher) stop(t *testing.T) {
	t.Helper()
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	w.wait(t)
}

func (w *watcher) wait(t *testing.T) {
	t.Helper()
	<-w.done
	if err := w.cmd.Wait(); err != nil {
		t.Fatalf("tracer watch: %v\n%s", err, w.stderr())
	}
}

var summaryLine = regexp.MustCompile(`tracer: (\d+) events seen, (>=)?(\d+) lost \(([^)]*)\)`)

// summary returns the exit line's events seen and lost, and the stages.
func (w *watcher) summary(t *testing.T) (seen, lost int, stages string) {
	t.Helper()
	m := summaryLine.FindStringSubmatch(w.stderr())
	if m == nil {
		t.Fatalf("no summary line in watch's stderr:\n%s", w.stderr())
	}
	seen, _ = strconv.Atoi(m[1])
	lost, _ = strconv.Atoi(m[3])
	return seen, lost, m[4]
}

// buildStorm compiles a program that sends itself SIGUSR1 n times
// (argv[1]), handled. With ignored, SIGUSR1 is ignored: the kernel discards
// each signal at once, so that is the fastest stream of signal events one
// process can make.
func buildStorm(t *testing.T, ignored bool) string {
	t.Helper()
	disposition := "h"
	if ignored {
		disposition = "SIG_IGN"
	}
	return tracertest.CompileC(t, t.TempDir(), "storm", []byte(`#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
static void h(int s) { (void)s; }
int main(int argc, char **argv) {
	long n = atol(argv[1]);
	pid_t self = getpid();
	signal(SIGUSR1, `+disposition+`);
	for (long i = 0; i < n; i++) kill(self, SIGUSR1);
	return 0;
}
`))
}

func timeRun(t *testing.T, bin string, args ...string) time.Duration {
	t.Helper()
	start := time.Now()
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, out)
	}
	return time.Since(start)
}

// countLines reads r to the end and counts lines that contain want.
func countLines(r io.Reader, want string) int {
	n := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), want) {
			n++
		}
	}
	return n
}

// A pipe nobody reads must not stall the node: the storm finishes within
// 3x of its time with a reading consumer, and every event the storm made is
// either written or counted lost.
func TestStalledPipeStorm(t *testing.T) {
	for _, backend := range []string{"audit", "ebpf"} {
		t.Run(backend, func(t *testing.T) {
			tracertest.LockAudit(t)
			// A comm of its own: other tests' storms must not count here.
			storm := filepath.Join(t.TempDir(), "stallstorm")
			if err := os.Link(buildStorm(t, false), storm); err != nil {
				t.Fatal(err)
			}
			const kills = 200_000
			before := nodeSnapshot(t)
			args := []string{"--backend", backend, "--events", "signal", "--signal", "USR1", "--comm", "stallstorm", "--format", "json"}

			// With a consumer that reads.
			r, wr, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			w := startWatcher(t, wr, args...)
			wr.Close()
			counted := make(chan int, 1)
			go func() { counted <- countLines(r, `"type":"signal"`) }()
			reading := timeRun(t, storm, strconv.Itoa(kills))
			w.stop(t)
			r.Close()
			got := <-counted
			_, lost, stages := w.summary(t)
			checkAccounted(t, "reading consumer", got, lost, stages, kills)

			// With a consumer that does not read until the storm is over.
			r, wr, err = os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			w = startWatcher(t, wr, args...)
			wr.Close()
			stalled := timeRun(t, storm, strconv.Itoa(kills))
			go func() { counted <- countLines(r, `"type":"signal"`) }()
			w.stop(t)
			r.Close()
			got = <-counted
			_, lost, stages = w.summary(t)
			t.Logf("%s: storm %v with a reader, %v with a stalled pipe; %d written, %d lost (%s)", backend, reading, stalled, got, lost, stages)
			if limit := 3*reading + time.Second; stalled > limit {
				t.Errorf("the stalled pipe stalled the workload: %v, want at most %v (3x %v + 1s)", stalled, limit, reading)
			}
			checkAccounted(t, "stalled consumer", got, lost, stages, kills)
			if lost == 0 {
				t.Logf("nothing lost: the queue absorbed the whole storm")
			}
			waitNodeBack(t, before)
		})
	}
}

// `tracer watch | head -1`: SIGPIPE/EPIPE is a normal end: rules removed,
// settings restored, the summary printed.
func TestWatchIntoHeadOne(t *testing.T) {
	for _, backend := range []string{"audit", "ebpf"} {
		t.Run(backend, func(t *testing.T) {
			tracertest.LockAudit(t)
			before := nodeSnapshot(t)
			sh := exec.Command("sh", "-c", tracerBin+" watch --backend "+backend+" --events exec | head -1 >/dev/null")
			stderr, err := sh.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := sh.Start(); err != nil {
				t.Fatal(err)
			}
			var lines []string
			done := make(chan struct{})
			watching := make(chan struct{})
			go func() {
				defer close(done)
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					lines = append(lines, sc.Text())
					if strings.Contains(sc.Text(), "watching") {
						close(watching)
					}
				}
			}()
			select {
			case <-watching:
			case <-time.After(30 * time.Second):
				_ = sh.Process.Kill()
				t.Fatal("no watching line")
			}
			// Execs until the pipeline ends: the first fills head's line,
			// a later write meets the closed pipe.
			deadline := time.Now().Add(30 * time.Second)
			for {
				select {
				case <-done:
				default:
					if time.Now().After(deadline) {
						_ = sh.Process.Kill()
						t.Fatal("tracer did not end after head exited")
					}
					_ = exec.Command("/bin/true").Run()
					time.Sleep(20 * time.Millisecond)
					continue
				}
				break
			}
			_ = sh.Wait()
			out := strings.Join(lines, "\n")
			if !summaryLine.MatchString(out) {
				t.Errorf("no exit summary after EPIPE:\n%s", out)
			}
			if strings.Contains(out, "signal: broken pipe") {
				t.Errorf("tracer died of SIGPIPE:\n%s", out)
			}
			waitNodeBack(t, before)
		})
	}
}

// execWorkload runs a shell that execs /bin/true 5 times and returns its pid.
func execWorkload(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "for i in 1 2 3 4 5; do /bin/true; done")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// countMatching counts exec events with ppid pid and a true binary.
func countMatching(t *testing.T, file string, pid int) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for l := range strings.Lines(string(b)) {
		if strings.Contains(l, `"type":"exec"`) && strings.Contains(l, fmt.Sprintf(`"ppid":%d,`, pid)) && strings.Contains(l, `true"`) {
			n++
		}
	}
	return n
}

// Two tracers at once each see every event, whichever exits first, and the
// node is restored only when the last one leaves. A third variant kills the
// first with SIGKILL and runs cleanup while the second runs.
func TestTwoTracers(t *testing.T) {
	cases := []struct {
		name string
		// end ends tracer a while b runs.
		end func(t *testing.T, a *watcher)
	}{
		{"first-exits-first", func(t *testing.T, a *watcher) { a.stop(t) }},
		{"first-killed-then-cleanup", func(t *testing.T, a *watcher) {
			_ = a.cmd.Process.Kill()
			<-a.done
			_ = a.cmd.Wait()
			if code, out, errOut := runTracer(t, nil, "cleanup"); code != 0 {
				t.Fatalf("cleanup: exit %d: %s %s", code, out, errOut)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tracertest.LockAudit(t)
			before := nodeSnapshot(t)
			dir := t.TempDir()
			args := func(out string) []string {
				return []string{"--backend", "audit", "--events", "exec,fork", "--format", "json", "-o", filepath.Join(dir, out)}
			}
			a := startWatcher(t, nil, args("a.jsonl")...)
			b := startWatcher(t, nil, args("b.jsonl")...)
			rulesBoth := kernelRules(t)
			c.end(t, a)
			// b's rules are all still there.
			if now := kernelRules(t); len(now) == 0 || len(now) >= len(rulesBoth) {
				t.Errorf("after the first tracer left, rules are %v (both had %v)", now, rulesBoth)
			}
			pid := execWorkload(t)
			time.Sleep(300 * time.Millisecond)
			b.stop(t)
			if got := countMatching(t, filepath.Join(dir, "b.jsonl"), pid); got != 5 {
				t.Errorf("second tracer saw %d of the 5 execs after the first left\n%s", got, b.stderr())
			}
			if _, lost, stages := b.summary(t); lost != 0 {
				t.Errorf("second tracer lost %d (%s)", lost, stages)
			}
			waitNodeBack(t, before)
		})
	}
	// The second tracer leaves first: the first still sees everything.
	t.Run("second-exits-first", func(t *testing.T) {
		tracertest.LockAudit(t)
		before := nodeSnapshot(t)
		dir := t.TempDir()
		a := startWatcher(t, nil, "--backend", "audit", "--events", "exec", "--format", "json", "-o", filepath.Join(dir, "a.jsonl"))
		b := startWatcher(t, nil, "--backend", "audit", "--events", "exec", "--format", "json", "-o", filepath.Join(dir, "b.jsonl"))
		b.stop(t)
		pid := execWorkload(t)
		time.Sleep(300 * time.Millisecond)
		a.stop(t)
		if got := countMatching(t, filepath.Join(dir, "a.jsonl"), pid); got != 5 {
			t.Errorf("first tracer saw %d of the 5 execs after the second left", got)
		}
		waitNodeBack(t, before)
	})
}

// Failure mode 2 (panic): tracer refuses to become the audit daemon, in
// one line, exit 2, and changes nothing.
func TestFailureModePanicRefused(t *testing.T) {
	tracertest.LockAudit(t)
	st := kernelStatus(t)
	if st.PID != 0 {
		t.Skipf("pid %d holds the audit PID: tracer would read beside it", st.PID)
	}
	if out, err := exec.Command("auditctl", "-f", "2").CombinedOutput(); err != nil {
		t.Fatalf("auditctl -f 2: %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("auditctl", "-f", strconv.Itoa(int(st.Failure))).CombinedOutput(); err != nil {
			t.Errorf("restoring the failure mode: %v %s", err, out)
		}
	})
	if got := kernelStatus(t).Failure; got != 2 {
		t.Fatalf("failure mode %d after auditctl -f 2", got)
	}
	before := nodeSnapshot(t)
	code, _, stderr := runTracer(t, nil, "watch", "--backend", "audit", "--duration", "1s")
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if code != 2 || len(lines) != 1 || !strings.Contains(stderr, "failure mode is 2") || !strings.Contains(stderr, "--allow-panic-failure-mode") {
		t.Errorf("exit %d, stderr %q: want exit 2 and one line naming the failure mode and the flag", code, stderr)
	}
	if after := nodeSnapshot(t); after != before {
		t.Errorf("refusal changed the node:\nbefore:\n%safter:\n%s", before, after)
	}
}

// --stats-file holds the summary line's figures, for programs.
func TestStatsFileMatchesSummary(t *testing.T) {
	tracertest.NeedRoot(t)
	dir := t.TempDir()
	sf := filepath.Join(dir, "stats.json")
	w := startWatcher(t, nil, "--backend", "ebpf", "--events", "exec", "--format", "json", "-o", filepath.Join(dir, "ev.jsonl"), "--stats-file", sf)
	execWorkload(t)
	time.Sleep(200 * time.Millisecond)
	w.stop(t)
	seen, lost, _ := w.summary(t)
	b, err := os.ReadFile(sf)
	if err != nil {
		t.Fatal(err)
	}
	var got tracer.StatsFile
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if int(got.EventsSeen) != seen || int(got.LostTotal) != lost || got.Backend != "ebpf" || got.EventsByType["exec"] < 5 {
		t.Errorf("stats file %+v, summary seen %d lost %d", got, seen, lost)
	}
	if fi, err := os.Stat(sf); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("stats file mode %v (%v), want 0600", fi.Mode(), err)
	}
}

// checkAccounted: every event the workload made was written or counted
// lost. Audit's kernel stage counts the records the kernel dropped (an
// event has two or more), node-wide: with kernel loss the sum may exceed
// the events made, never fall short.
func checkAccounted(t *testing.T, what string, written, lost int, stages string, made int) {
	t.Helper()
	kernel := strings.Contains(stages, "kernel ") && !strings.Contains(stages, "kernel 0,")
	switch {
	case written > made:
		t.Errorf("%s: %d written, more than the %d made", what, written, made)
	case !kernel && written+lost != made:
		t.Errorf("%s: %d written + %d lost (%s) = %d, want %d", what, written, lost, stages, written+lost, made)
	case kernel && written+lost < made:
		t.Errorf("%s: %d written + %d lost (%s) = %d, fewer than the %d made", what, written, lost, stages, written+lost, made)
	}
}

// Lean records are global, and the EOE records they exclude end events: a
// tracer running without lean records (so ending events at their EOE)
// keeps every event when a second tracer starts with them, and after that
// one leaves, while the exclusions stay until the last tracer exits.
func TestTwoTracersLeanMixed(t *testing.T) {
	tracertest.LockAudit(t)
	// Lean records need a node where only tracers read the records: the
	// node's auditd, if one runs, is paused (beside it lean records stay
	// off, which TestLeanRecordsBesideAuditd covers).
	tracertest.PauseNodeAuditd(t)
	before := nodeSnapshot(t)
	dir := t.TempDir()
	storm := buildStorm(t, false)
	const kills = 20000
	args := func(out string, extra ...string) []string {
		return append([]string{"--backend", "audit", "--events", "exec,signal", "--signal", "USR1", "--format", "json", "-o", filepath.Join(dir, out)}, extra...)
	}
	runStorm := func() int {
		cmd := exec.Command(storm, strconv.Itoa(kills))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("storm: %v %s", err, out)
		}
		return cmd.Process.Pid
	}
	a := startWatcher(t, nil, args("a.jsonl", "--lean-records=false")...)
	b := startWatcher(t, nil, args("b.jsonl")...)
	if rules := strings.Join(kernelRules(t), "\n"); !strings.Contains(rules, "msgtype=EOE") {
		t.Fatalf("the second tracer added no EOE exclusion:\n%s", rules)
	}
	both, shell := runStorm(), execWorkload(t)
	time.Sleep(300 * time.Millisecond)
	b.stop(t)
	if rules := strings.Join(kernelRules(t), "\n"); !strings.Contains(rules, "msgtype=EOE") {
		t.Errorf("the exclusions went with the second tracer, before the last one left:\n%s", rules)
	}
	after := runStorm()
	time.Sleep(300 * time.Millisecond)
	a.stop(t)
	for _, c := range []struct {
		who, file string
		w         *watcher
		pids      []int
	}{{"first (no lean records)", "a.jsonl", a, []int{both, after}}, {"second (lean)", "b.jsonl", b, []int{both}}} {
		for _, pid := range c.pids {
			if n, _ := countSignalLines(t, filepath.Join(dir, c.file), pid, 10); n != kills {
				t.Errorf("%s tracer: %d of the %d kills of pid %d", c.who, n, kills, pid)
			}
		}
		if got := countMatching(t, filepath.Join(dir, c.file), shell); got != 5 {
			t.Errorf("%s tracer: %d of the 5 execs", c.who, got)
		}
		if _, lost, stages := c.w.summary(t); lost != 0 {
			t.Errorf("%s tracer lost %d (%s)", c.who, lost, stages)
		}
	}
	waitNodeBack(t, before)
}
