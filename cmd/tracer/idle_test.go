// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// maxIdleWakes is how many times a second an idle eBPF watcher may be
// switched out. Parked, its reader costs none: what is left is the peer
// registry's refresh (once a second) and the runtime's monitor after it.
// The reader that woke every 25 ms (--max-delay/2) for nothing came to
// about 80.
const maxIdleWakes = 30

// switches is how many times pid's threads were switched out so far.
func switches(t *testing.T, pid int) int {
	t.Helper()
	paths, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if err != nil || len(paths) == 0 {
		t.Fatalf("threads of %d: %v", pid, err)
	}
	n := 0
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // a thread that ended
		}
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				c, _ := strconv.Atoi(strings.TrimSpace(v))
				n += c
			}
		}
	}
	return n
}

// An idle eBPF watcher sleeps: with nothing to read, its reader parks on
// the empty ring and the kernel wakes it for the first record. So a quiet
// node (here: nothing passes --comm) costs it almost no wake-ups, and the
// first event after the quiet still comes out, with no later event to
// push it.
func TestIdleEBPFWatcherSleeps(t *testing.T) {
	// Its wakeups are counted: no other test's storm may run beside it.
	tracertest.LockAudit(t)
	dir := t.TempDir()
	const comm = "tracer-idle"
	out := filepath.Join(dir, "events.json")
	w := startWatcher(t, nil, "--backend", "ebpf", "--events", "exec", "--comm", comm,
		"--format", "json", "-o", out)
	pid := w.cmd.Process.Pid
	time.Sleep(time.Second) // past the start's own work

	s0, t0 := switches(t, pid), time.Now()
	time.Sleep(5 * time.Second)
	rate := float64(switches(t, pid)-s0) / time.Since(t0).Seconds()

	// An exec event carries its caller's comm: a shell named comm.
	sh := filepath.Join(dir, comm)
	if b, err := os.ReadFile("/bin/sh"); err != nil || os.WriteFile(sh, b, 0o755) != nil {
		t.Fatalf("copying /bin/sh: %v", err)
	}
	if o, err := exec.Command(sh, "-c", "/bin/true idle-test").CombinedOutput(); err != nil {
		t.Fatalf("workload: %v %s", err, o)
	}
	var got []byte
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if got, _ = os.ReadFile(out); bytes.Contains(got, []byte("idle-test")) {
			break
		}
	}
	w.stop(t)
	if !bytes.Contains(got, []byte("idle-test")) {
		t.Errorf("the exec after the quiet was not written within 5 s (the parked reader was not woken):\n%s", got)
	}
	t.Logf("idle watcher: %.1f switches a second", rate)
	if rate > maxIdleWakes {
		t.Errorf("an idle watcher was switched out %.1f times a second, want at most %d: its reader does not park", rate, maxIdleWakes)
	}
}
