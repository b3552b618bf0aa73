// SPDX-License-Identifier: Apache-2.0

// Package tracertest holds what the privileged tests of every package share:
// the root check, the machine-wide lock that keeps tests which touch audit
// state from running at the same time (go test runs packages in parallel
// processes, and the kernel has one audit PID), and the C workload that
// makes a known number of events per syscall (workload.c).
package tracertest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// NeedRoot skips t, loudly, when not running as root, and under -short:
// these are the integration tests.
func NeedRoot(t testing.TB) {
	t.Helper()
	if testing.Short() {
		// make test runs the unit tests with -race -short first, and
		// these in a pass of their own.
		t.Skip("needs root, skipped under -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: loads audit rules or BPF programs (run the tests as root, e.g. sudo make test)")
	}
}

// PrebuiltEnv names the directory of the C workloads (workload, deaths,
// reach) built beforehand, for test binaries run without a C compiler.
const PrebuiltEnv = "TRACER_TEST_PREBUILT"

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

// BuildWorkload compiles workload.c with the system C compiler into a
// temporary directory and returns the binary's path.
func BuildWorkload(t testing.TB) string {
	t.Helper()
	return compileOwn(t, t.TempDir(), "workload")
}

// CompileC compiles the C program src with the system C compiler (cc)
// into dir/name and returns the binary's path: the tests' workloads in C.
// Where $TRACER_TEST_PREBUILT holds a program of that name, it is copied
// instead: make test-kernels builds every test's C program with gcc
// -static for its guests, which have no compiler.
func CompileC(t testing.TB, dir, name string, src []byte) string {
	t.Helper()
	out := filepath.Join(dir, name)
	if copyPrebuilt(t, out) {
		return out
	}
	cmd := exec.Command("cc", "-O2", "-o", out, "-x", "c", "-")
	cmd.Stdin = bytes.NewReader(src)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s with cc: %v\n%s", name, err, b)
	}
	return out
}

// copyPrebuilt copies the program of out's name from $TRACER_TEST_PREBUILT
// to out, if there is one.
func copyPrebuilt(t testing.TB, out string) bool {
	t.Helper()
	pre := os.Getenv(PrebuiltEnv)
	if pre == "" {
		return false
	}
	b, err := os.ReadFile(filepath.Join(pre, filepath.Base(out)))
	if err != nil {
		return false
	}
	if err := os.WriteFile(out, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return true
}

// compileOwn compiles this package's NAME.c into dir/NAME.
func compileOwn(t testing.TB, dir, name string) string {
	t.Helper()
	// A test binary run where there is no C compiler (a guest kernel's
	// VM) takes the workloads built beforehand: $TRACER_TEST_PREBUILT/NAME.
	if pre := os.Getenv(PrebuiltEnv); pre != "" {
		bin := filepath.Join(pre, name)
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("%s=%s: %v", PrebuiltEnv, pre, err)
		}
		return bin
	}
	_, file, _, _ := runtime.Caller(0)
	src, err := os.ReadFile(filepath.Join(filepath.Dir(file), name+".c"))
	if err != nil {
		t.Fatal(err)
	}
	return CompileC(t, dir, name, src)
}
