// Package workload builds the C program that tests use to make a known
// number of process events per syscall (see workload.c for its commands).
package workload

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Build compiles workload.c with the system C compiler into a temporary
// directory and returns the binary's path. Tests that need it are
// privileged tests on Linux, where cc is part of the machine's toolchain.
func Build(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "workload.c")
	out := filepath.Join(t.TempDir(), "workload")
	cmd := exec.Command("cc", "-O2", "-o", out, "-x", "c", src)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("building workload.c with cc: %v", err)
	}
	return out
}
