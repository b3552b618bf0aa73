// Package testutil holds what the privileged tests of every package share:
// the root check and the machine-wide lock that keeps tests which touch
// audit state from running at the same time (go test runs packages in
// parallel processes, and the kernel has one audit PID).
package testutil

import (
	"os"
	"syscall"
	"testing"
)

// NeedRoot skips t, loudly, when not running as root.
func NeedRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: loads audit rules or BPF programs (run the tests as root, e.g. sudo make test)")
	}
}

// LockFile is the lock every test that changes audit state holds.
const LockFile = "/run/tracer-test-audit.lock"

// LockAudit takes the machine-wide audit test lock until the test ends.
func LockAudit(t testing.TB) {
	t.Helper()
	NeedRoot(t)
	f, err := os.OpenFile(LockFile, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("opening audit test lock: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("locking audit test lock: %v", err)
	}
	t.Cleanup(func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	})
}
