// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// trace --user runs CMD where it cannot reach root: tracer runs on a
// terminal (a pty of the test's, its controlling terminal) with more
// descriptors than 0-2 and a secret in its environment; CMD, as nobody,
// tries TIOCSTI on its stdin and reports its session, terminal,
// descriptors and environment. Nothing it pushes may land in root's
// terminal, it must be in a session of its own on another terminal, hold
// only 0-2, and see only the reset environment.
func TestTraceUserCannotReachRoot(t *testing.T) {
	tracertest.NeedRoot(t)
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody on this node")
	}
	if b, _ := os.ReadFile("/proc/sys/dev/tty/legacy_tiocsti"); strings.TrimSpace(string(b)) == "0" {
		t.Log("dev.tty.legacy_tiocsti is 0: the kernel refuses TIOCSTI anyway; the other checks still hold")
	}
	reach := tracertest.BuildReach(t)
	report := filepath.Join(tracertest.ReachDir(t), "reach.out")

	master, slave, err := tracer.OpenPTY()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(slave.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	rootTTY := int(st.Rdev)
	extra, err := os.Open("/etc/hostname")
	if err != nil {
		extra, _ = os.Open(os.DevNull)
	}
	defer extra.Close()

	out := filepath.Join(t.TempDir(), "trace.json")
	cmd := exec.Command(tracerBin, "trace", "--backend", "ebpf", "--user", "nobody", "--format", "json", "-o", out, "--", reach, report)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.ExtraFiles = []*os.File{extra, extra} // tracer's fds 3 and 4
	cmd.Env = []string{"PATH=/usr/bin:/bin", "TERM=xterm-256color", "LC_ALL=C.UTF-8", "HOME=/root", "USER=root",
		"TRACER_TEST_SECRET=root-only", "LD_LIBRARY_PATH=/root/lib"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Read the terminal's output as a terminal emulator would, else
	// tracer blocks on a full pty.
	var shown strings.Builder
	done := make(chan struct{})
	go func() { _, _ = io.Copy(&shown, master); close(done) }()
	werr := cmd.Wait()
	tracerSID := cmd.Process.Pid

	// What is left in root's terminal's input queue: what root's shell
	// would read next.
	if err := unix.SetNonblock(int(slave.Fd()), true); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS); err != nil {
		t.Fatal(err)
	}
	queued := make([]byte, 4096)
	n, _ := unix.Read(int(slave.Fd()), queued)
	_ = master.Close()
	<-done
	if werr != nil {
		t.Fatalf("trace: %v; terminal: %q", werr, shown.String())
	}
	r := tracertest.ReadReach(t, report)
	t.Logf("CMD: sid %d tty %d tiocsti %s fds %v env %q; root's terminal %d, tracer's session %d", r.SID, r.TTY, r.TIOCSTI, r.FDs, r.Env, rootTTY, tracerSID)

	if n > 0 && strings.Contains(string(queued[:n]), "reach-tiocsti") {
		t.Errorf("CMD pushed input into root's terminal (TIOCSTI %s): %q is queued for root's shell", r.TIOCSTI, queued[:n])
	}
	if r.SID == tracerSID || r.SID == 0 {
		t.Errorf("CMD is in session %d, tracer's is %d: want a session of its own", r.SID, tracerSID)
	}
	if r.TTY == rootTTY {
		t.Errorf("CMD's controlling terminal is root's (%d)", rootTTY)
	}
	if !slices.Equal(r.FDs, []int{0, 1, 2}) {
		t.Errorf("CMD holds descriptors %v, want only 0, 1, 2", r.FDs)
	}
	want := []string{"TERM=xterm-256color", "LC_ALL=C.UTF-8", "PATH=" + tracer.SafePath, "HOME=" + nobody.HomeDir,
		"USER=nobody", "LOGNAME=nobody"}
	env := map[string]bool{}
	for _, kv := range r.Env {
		env[kv] = true
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "TERM", "LC_ALL", "PATH", "HOME", "USER", "LOGNAME", "SHELL":
		default:
			t.Errorf("CMD's environment has %s", kv)
		}
	}
	for _, kv := range want {
		if !env[kv] {
			t.Errorf("CMD's environment lacks %s: %q", kv, r.Env)
		}
	}
}

// --keep-env gives CMD tracer's environment.
func TestTraceUserKeepEnv(t *testing.T) {
	tracertest.NeedRoot(t)
	if _, err := user.Lookup("nobody"); err != nil {
		t.Skip("no user nobody on this node")
	}
	cmd := exec.Command(tracerBin, "trace", "--backend", "ebpf", "--user", "nobody", "--keep-env", "-o", os.DevNull, "--", "/usr/bin/env")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "TRACER_TEST_KEPT=yes"}
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("trace: %v", err)
	}
	if !strings.Contains(string(stdout), "TRACER_TEST_KEPT=yes\n") {
		t.Errorf("--keep-env: CMD's environment %q lacks TRACER_TEST_KEPT", stdout)
	}
}
