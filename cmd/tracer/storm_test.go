// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// countSignalLines counts the JSON lines of signal sig sent by pid.
func countSignalLines(t *testing.T, path string, pid, sig int) (n, total int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	from := []byte(fmt.Sprintf(`,"pid":%d,`, pid))
	signal := []byte(fmt.Sprintf(`,"signal":%d,`, sig))
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 {
			total++
			if bytes.Contains(line, []byte(`"type":"signal"`)) && bytes.Contains(line, from) && bytes.Contains(line, signal) {
				n++
			}
		}
		if err == io.EOF {
			return n, total
		}
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
	}
}

// A storm from a single process never outruns the eBPF backend on a
// machine with a second CPU: 2,000,000 ignored kills, JSON to a file,
// default ring size and drop backpressure, and every one is written.
// Not a timing test: the storm goes as fast as the machine lets it.
func TestEBPFSingleProcessStormDelivered(t *testing.T) {
	// A storm of signals floods every audit test running beside it
	// (the audit tests watch SIGUSR1 too): storms take the audit lock.
	tracertest.LockAudit(t)
	const kills = 2_000_000
	storm := buildStorm(t, true)
	out := filepath.Join(t.TempDir(), "events.jsonl")
	w := startWatcher(t, nil, "--backend", "ebpf", "--events", "signal", "--format", "json", "--output", out)
	cmd, took := runStorm(t, w, storm, kills)
	seen, lost, stages := w.summary(t)
	lines, total := countSignalLines(t, out, cmd.Process.Pid, 10)
	t.Logf("%d kills in %v (%.0f/s); watch saw %d events, lost %d (%s); %d lines of the storm, %d in all",
		kills, took.Round(time.Millisecond), kills/took.Seconds(), seen, lost, stages, lines, total)
	if lost != 0 {
		t.Errorf("lost %d events (%s), want 0", lost, stages)
	}
	if lines != kills {
		t.Errorf("%d JSON lines of the storm's signals, want %d", lines, kills)
	}
}

// With the eBPF backend every thread of watch is SCHED_BATCH, so that a
// woken reader or writer does not preempt the work it watches; with audit
// they keep the default policy, as a late audit reader makes the audited
// processes wait.
func TestWatchSchedulingPolicy(t *testing.T) {
	tracertest.LockAudit(t)
	for backend, want := range map[string]int{"ebpf": unix.SCHED_BATCH, "audit": unix.SCHED_NORMAL} {
		cmd := startWatch(t, "--backend", backend, "--format", "json", "--output", filepath.Join(t.TempDir(), "events.jsonl"))
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", cmd.Process.Pid, task.Name()))
			if err != nil {
				continue // the thread exited
			}
			// Field 41, policy, counted after the parenthesised comm.
			rest := string(b[bytes.LastIndexByte(b, ')')+2:])
			f := strings.Fields(rest)
			if policy, _ := strconv.Atoi(f[41-3]); policy != want {
				t.Errorf("%s: thread %s has scheduling policy %d, want %d", backend, task.Name(), policy, want)
			}
		}
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}
}

// runStorm runs storm's kills while w watches, then stops w. It returns
// the storm's process and how long the kills took.
func runStorm(t *testing.T, w *watcher, storm string, kills int) (*exec.Cmd, time.Duration) {
	t.Helper()
	cmd := exec.Command(storm, strconv.Itoa(kills))
	start := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		w.stop(t)
		t.Fatalf("storm: %v %s", err, b)
	}
	took := time.Since(start)
	w.stop(t)
	return cmd, took
}
