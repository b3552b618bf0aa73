// SPDX-License-Identifier: Apache-2.0

package tracertest

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// StartInCgroup starts bin args in the cgroup v2 directory dir from its
// first instruction (clone3's CLONE_INTO_CGROUP), so that all its events,
// its exec too, are that cgroup's.
func StartInCgroup(t testing.TB, dir, bin string, args ...string) *exec.Cmd {
	t.Helper()
	fd, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(fd.Fd())}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s in %s: %v", bin, dir, err)
	}
	return cmd
}
