// SPDX-License-Identifier: Apache-2.0

//go:build linux

package tracer

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer/host"
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
			if st, ok := host.ParseProcStat(b); ok && st.State == 'Z' {
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
