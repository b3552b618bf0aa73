// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// buildPacer compiles mdpace: it runs /bin/true rate times a second for
// secs seconds, each start at its time on a schedule (not after the last
// one's end), and waits for each. Its name is the comm its children exec
// from, which --comm selects in the kernel.
func buildPacer(t *testing.T) string {
	t.Helper()
	return tracertest.CompileC(t, t.TempDir(), "mdpace", []byte(`#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
int main(int argc, char **argv) {
	long rate = atol(argv[1]), n = rate * atol(argv[2]);
	struct timespec t0, at;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++) {
		long long ns = (long long)t0.tv_nsec + i * 1000000000LL / rate;
		at.tv_sec = t0.tv_sec + ns / 1000000000LL;
		at.tv_nsec = ns % 1000000000LL;
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
		pid_t p = fork();
		if (p == 0) { execl("/bin/true", "true", (char *)0); _exit(127); }
		if (p < 0 || waitpid(p, 0, 0) < 0) return 1;
	}
	return 0;
}
`))
}

// processCPU is the CPU time a process's threads have run (schedstat, in
// nanoseconds: finer than the tick-counted utime and stime).
func processCPU(t testing.TB, pid int) time.Duration {
	t.Helper()
	if pid == 0 {
		return 0 // none (watchRound's kthread)
	}
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "schedstat"))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("no schedstat for %d: %v", pid, err)
	}
	var sum time.Duration
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b))
		ns, _ := strconv.ParseInt(f[0], 10, 64)
		sum += time.Duration(ns)
	}
	return sum
}

// readDelayP99 reads delay_p99_ms from a --stats-file.
func readDelayP99(t *testing.T, path string) float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sf struct {
		DelayP99Ms *float64 `json:"delay_p99_ms"`
	}
	if err := json.Unmarshal(b, &sf); err != nil {
		t.Fatal(err)
	}
	if sf.DelayP99Ms == nil {
		t.Fatalf("no delay_p99_ms in the stats file: %s", b)
	}
	return *sf.DelayP99Ms
}

// delaySlack is what the measured delay may exceed --max-delay by: the
// kernel time is the scheduler tick's (up to 10 ms early at HZ=100), the
// histogram rounds up to the millisecond, and on this loaded 2-vCPU
// machine a SCHED_BATCH reader's timer can be late by a time slice or two.
// The measured delay ends at the hand-over to the output, so its bound is
// half of --max-delay: the slack is generous for a test that must not
// flake, and still fails a reader that waits a whole default poll longer.
const delaySlack = 40 * time.Millisecond

// A steady 300 execs a second: with the default --max-delay every exec is
// written, none later than --max-delay, and the watcher spends less CPU per
// exec than when woken per event (--max-delay 0). Rounds alternate so that
// the machine's other load falls on both.
func TestEBPFMaxDelaySteadyExecs(t *testing.T) {
	// CPU per exec is measured: no other test's storm may run beside it.
	tracertest.LockAudit(t)
	const rate, secs, rounds = 300, 3, 3
	pacer := buildPacer(t)
	cpu := map[string][]float64{}
	for r := 0; r < rounds; r++ {
		for _, md := range []string{"100ms", "0"} {
			dir := t.TempDir()
			out, stats := filepath.Join(dir, "events.jsonl"), filepath.Join(dir, "stats.json")
			w := startWatcher(t, nil, "--backend", "ebpf", "--events", "exec", "--comm", "mdpace",
				"--format", "json", "--output", out, "--stats-file", stats, "--max-delay", md)
			before := processCPU(t, w.cmd.Process.Pid)
			if b, err := exec.Command(pacer, strconv.Itoa(rate), strconv.Itoa(secs)).CombinedOutput(); err != nil {
				w.stop(t)
				t.Fatalf("mdpace: %v %s", err, b)
			}
			// Past --max-delay, so the last execs are read before the
			// CPU is: the watcher's exit is not the figure.
			time.Sleep(150 * time.Millisecond)
			used := processCPU(t, w.cmd.Process.Pid) - before
			w.stop(t)
			seen, lost, stages := w.summary(t)
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Count(string(b), `"type":"exec"`)
			p99 := readDelayP99(t, stats)
			perExec := float64(used.Microseconds()) / float64(rate*secs)
			cpu[md] = append(cpu[md], perExec)
			t.Logf("--max-delay %s round %d: %d exec lines, seen %d, lost %d; delay p99 %.0f ms; watcher CPU %v, %.1f µs per exec",
				md, r, lines, seen, lost, p99, used.Round(time.Millisecond), perExec)
			if lines != rate*secs || lost != 0 {
				t.Errorf("--max-delay %s: %d exec lines, want %d; lost %d (%s)", md, lines, rate*secs, lost, stages)
			}
			bound := 100 * time.Millisecond
			if md == "100ms" && p99 > float64((bound+delaySlack)/time.Millisecond) {
				t.Errorf("--max-delay 100ms: delay p99 %.0f ms, want at most %v (+%v slack)", p99, bound, delaySlack)
			}
		}
	}
	med := func(v []float64) float64 { sort.Float64s(v); return v[len(v)/2] }
	lazy, eager := med(cpu["100ms"]), med(cpu["0"])
	t.Logf("watcher CPU per exec, medians of %d rounds: %.1f µs with --max-delay 100ms, %.1f µs with 0 (ratio %.2f)", rounds, lazy, eager, lazy/eager)
	// Only the direction, loosely: the machine is shared.
	if lazy > eager*1.1 {
		t.Errorf("watcher CPU per exec %.1f µs with --max-delay 100ms, more than %.1f µs when woken per event", lazy, eager)
	}
}

// A 2,000,000-kill storm with the default --max-delay: the reader sleeps
// between timer ticks, so only the kernel's wakeup at a quarter of the
// ring keeps it from filling. Every kill is written, none late.
func TestEBPFMaxDelayStormDelivered(t *testing.T) {
	tracertest.LockAudit(t) // a storm floods the audit tests beside it
	const kills = 2_000_000
	storm := buildStorm(t, true)
	dir := t.TempDir()
	out, stats := filepath.Join(dir, "events.jsonl"), filepath.Join(dir, "stats.json")
	w := startWatcher(t, nil, "--backend", "ebpf", "--events", "signal", "--format", "json",
		"--output", out, "--stats-file", stats, "--max-delay", "100ms")
	cmd, took := runStorm(t, w, storm, kills)
	seen, lost, stages := w.summary(t)
	lines, _ := countSignalLines(t, out, cmd.Process.Pid, 10)
	p99 := readDelayP99(t, stats)
	t.Logf("%d kills in %v (%.0f/s); watch saw %d, lost %d (%s); %d lines of the storm; delay p99 %.0f ms",
		kills, took.Round(time.Millisecond), kills/took.Seconds(), seen, lost, stages, lines, p99)
	if lost != 0 {
		t.Errorf("lost %d events (%s), want 0", lost, stages)
	}
	if lines != kills {
		t.Errorf("%d JSON lines of the storm's signals, want %d", lines, kills)
	}
	if p99 > float64((100*time.Millisecond+delaySlack)/time.Millisecond) {
		t.Errorf("delay p99 %.0f ms, want at most 100 ms (+%v slack)", p99, delaySlack)
	}
}

// --max-delay out of range, or given to the audit backend, is refused in
// one line with exit status 2, before anything is loaded.
func TestMaxDelayRefused(t *testing.T) {
	for _, args := range [][]string{
		{"watch", "--backend", "ebpf", "--max-delay", "-1s"},
		{"watch", "--backend", "ebpf", "--max-delay", "11s"},
		{"watch", "--backend", "audit", "--max-delay", "50ms"},
	} {
		code, stdout, stderr := runTracer(t, nil, args...)
		if code != 2 || stdout != "" || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "--max-delay") {
			t.Errorf("tracer %v: exit %d, stdout %q, stderr %q; want 2 and one line about --max-delay", args, code, stdout, stderr)
		}
	}
}
