//go:build linux

package tracer

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A zombie's cgroup reads as the root: ReadProcIdentity must leave it out.
func TestReadProcIdentityZombie(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := uint32(cmd.Process.Pid)
	defer cmd.Wait()
	for range 1000 { // until it has exited (and is not reaped: nobody waits yet)
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if st, ok := ParseProcStat(b); ok && st.State == 'Z' {
				break
			}
		}
		time.Sleep(time.Millisecond)
	}
	id, err := ReadProcIdentity(pid)
	if err != nil {
		t.Fatal(err)
	}
	if id.Cgroup != "" || id.ExecID.PID != pid {
		t.Errorf("zombie %d: %+v, want its exec id and no cgroup", pid, id)
	}
}

// readProcFile reads a /proc file whole however long it is, as os.ReadFile
// does: /proc/self/status is longer than the pooled buffer's first size.
func TestReadProcFileWhole(t *testing.T) {
	for _, path := range []string{"/proc/self/status", "/proc/self/stat", "/proc/self/cgroup"} {
		b := make([]byte, 0, 16)
		got, err := readProcFile(path, &b)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// stat and status hold counters that move between two reads:
		// compare what stays (the pid and comm, status's Name line) and
		// the length's order.
		first := func(b []byte) string {
			l, _, _ := strings.Cut(string(b), "\n")
			l, _, _ = strings.Cut(l, ")")
			return l
		}
		if first(got) != first(want) || len(got) < len(want)/2 || len(got) == 0 {
			t.Errorf("%s: read %d bytes (%q...), os.ReadFile %d", path, len(got), first(got), len(want))
		}
	}
	if _, err := readProcFile("/proc/no-such-pid/stat", new([]byte)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v, want ErrNotExist", err)
	}
}
