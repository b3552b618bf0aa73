// SPDX-License-Identifier: Apache-2.0

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
	// Root's signals first: the stream is in order, so once nobody's 5
	// are out, any of root's the kernel let through would be out too.
	runAs(t, nil, wl, "kill", "7", "10", "exit", "0")
	runAs(t, nobody, wl, "kill", "5", "10", "exit", "0")
	// Nobody's 5 signals reach the output (audit writes on its own time).
	waitFor(5, func() int {
		b, _ := os.ReadFile(f.Name())
		return strings.Count(string(b), " 65534 ")
	})
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

// On audit, --exe PATH (an absolute path of a file) is a kernel filter:
// the watch's exec rule carries -F path=PATH, and the stream holds the
// execs of that program only; --exe NAME stays in user space, with a note.
func TestAuditExeInKernel(t *testing.T) {
	tracertest.LockAudit(t)
	dir, err := os.MkdirTemp("", "tracer-exe")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	prog := filepath.Join(dir, "tracer-exe-prog")
	if out, err := exec.Command("cp", "/bin/true", prog).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := startWatcher(t, f, "--backend", "audit", "--exe", prog, "--format", "json")
	b, err := exec.Command("auditctl", "-l").CombinedOutput()
	if err != nil {
		t.Fatalf("auditctl -l: %v %s", err, b)
	}
	for range 3 {
		runAs(t, nil, prog)
		runAs(t, nil, "/bin/true")
	}
	// Past a check of the rules (every 2 s): the kernel lists the watch
	// rule as it was added, so it is not taken for one deleted.
	time.Sleep(2500 * time.Millisecond)
	w.stop(t)
	if strings.Contains(w.stderr(), "deleted by another program") {
		t.Errorf("the -F path= rule taken for deleted:\n%s", w.stderr())
	}
	key := fmt.Sprintf("key=tracer-%d-", w.cmd.Process.Pid)
	var ours []string
	for line := range strings.Lines(string(b)) {
		if strings.Contains(line, key) && strings.Contains(line, "-S ") {
			ours = append(ours, line)
		}
	}
	if len(ours) == 0 || !strings.Contains(strings.Join(ours, ""), "-F path="+prog) {
		t.Errorf("--exe %s: the watch's rules have no -F path=:\n%s", prog, strings.Join(ours, ""))
	}
	out, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(out), `"filename":"`+prog+`"`); n != 3 || strings.Count(string(out), "\n") != 3 {
		t.Errorf("--exe %s: want its 3 execs only:\n%s", prog, out)
	}
	_, stderr := watchRun(t, func() {}, "--backend", "audit", "--exe", "true")
	if !strings.Contains(stderr, "--exe true is matched in user space") {
		t.Errorf("--exe NAME: no note that it is matched in user space:\n%s", stderr)
	}
}
