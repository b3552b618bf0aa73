//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// On audit, --uid is a kernel filter: while the watch runs, each of its
// rules carries -F uid=N (so other users' syscalls make no record), and
// the stream holds the named user's events only.
func TestAuditUIDInKernel(t *testing.T) {
	tracertest.LockAudit(t)
	dir, err := os.MkdirTemp("", "tracer-uid")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	wl := filepath.Join(dir, "workload")
	if out, err := exec.Command("cp", tracertest.BuildWorkload(t), wl).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := startWatcher(t, f, "--backend", "audit", "--events", "signal", "--signal", "USR1", "--uid", "65534", "--comm", "workload", "--time", "none")
	b, err := exec.Command("auditctl", "-l").CombinedOutput()
	if err != nil {
		t.Fatalf("auditctl -l: %v %s", err, b)
	}
	rules := string(b)
	runAs(t, nobody, wl, "kill", "5", "10", "exit", "0")
	runAs(t, nil, wl, "kill", "7", "10", "exit", "0")
	time.Sleep(300 * time.Millisecond) // the last events reach the output
	w.stop(t)
	ob, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	out := string(ob)
	key := fmt.Sprintf("key=tracer-%d-", w.cmd.Process.Pid)
	var ours []string
	for line := range strings.Lines(rules) {
		if strings.Contains(line, key) && strings.Contains(line, "-S ") {
			ours = append(ours, line)
		}
	}
	if len(ours) == 0 {
		t.Fatalf("no rule of the watch in auditctl -l:\n%s", rules)
	}
	for _, r := range ours {
		if !strings.Contains(r, "-F uid=65534") {
			t.Errorf("a rule of --uid 65534 without -F uid=65534: %s", r)
		}
	}
	if lines := linesOf(out); len(lines) != 5 || strings.Count(out, " 65534 ") != 5 {
		t.Errorf("--uid 65534: want nobody's 5 signals:\n%s", out)
	}
}
