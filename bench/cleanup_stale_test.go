// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// A stale state file whose pid a process named like tracer now holds is
// a dead bench's: the pid and the start time tell, not the name, which
// any user picks (and pids are reused).
func TestStaleStatePidReusedByTracerName(t *testing.T) {
	dir := t.TempDir()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(dir, "tracer-x")
	if err := os.WriteFile(fake, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(fake, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	var start uint64
	for range 100 { // until it has exec'd (its comm is tracer-x)
		if isTracer(pid) {
			start = processStart(pid)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if start == 0 {
		t.Fatal("tracer-x did not start")
	}
	// The bench that wrote it started earlier, with the same pid.
	stale := benchState{PID: pid, Start: start - 1}
	if stale.running() {
		t.Errorf("state of pid %d started at %d: taken for running, by the name of pid %d (started at %d)", pid, start-1, pid, start)
	}
	if live := (benchState{PID: pid, Start: start}); !live.running() {
		t.Error("a state whose pid and start time match: taken for dead")
	}
	if s := newBenchState(); s.Start == 0 || !s.running() {
		t.Errorf("this process's state %+v: not running", s)
	}
}

// Cleanup acts only on root's own 0700 directories named like bench's:
// another user's, a 0755 one and a link are left alone, and a mount in
// one of bench's whose source names a loop device not backed by a file
// in it (a FUSE mount's fsname can be /dev/loop0) is neither unmounted
// nor detached.
func TestRemoveStaleOnlyBenchOwn(t *testing.T) {
	tracertest.NeedRoot(t)
	base := t.TempDir()
	// pids above the kernel's pid_max: never alive.
	mk := func(name string, mode os.FileMode, uid int) string {
		t.Helper()
		d := filepath.Join(base, name)
		if err := os.Mkdir(d, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "keep"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, uid, uid); err != nil {
			t.Fatal(err)
		}
		return d
	}
	nobodys := mk("tracer-bench-99999991-a", 0o700, 65534)
	open := mk("tracer-bench-99999992-b", 0o755, 0)
	own := mk("tracer-bench-99999993-c", 0o700, 0)
	target := mk("elsewhere", 0o700, 0)
	link := filepath.Join(base, "tracer-bench-99999994-d")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	// A mount whose source claims a loop device, in a directory of bench's form.
	spoofed := mk("tracer-bench-99999995-e", 0o700, 0)
	mnt := filepath.Join(spoofed, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("/dev/loop0", mnt, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })
	var detached []string
	old := detachLoop
	detachLoop = func(dev string) error { detached = append(detached, dev); return nil }
	t.Cleanup(func() { detachLoop = old })

	removeStaleIn(base)

	for _, d := range []string{nobodys, open, target, spoofed} {
		if _, err := os.Stat(filepath.Join(d, "keep")); err != nil {
			t.Errorf("%s: removed (%v)", d, err)
		}
	}
	if _, err := os.Stat(own); !os.IsNotExist(err) {
		t.Errorf("bench's own stale directory %s left (%v)", own, err)
	}
	if len(detached) > 0 {
		t.Errorf("detached %v: not backed by a file in bench's directory", detached)
	}
	mounts, _ := hostFacts.Mounts()
	if !slices.ContainsFunc(mounts, func(m host.Mount) bool { return m.MountPoint == mnt }) {
		t.Errorf("the mount at %s was unmounted", mnt)
	}
}
