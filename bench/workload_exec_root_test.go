// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// A workload run as another user (the application workloads' clients run
// as nobody) gets a session of its own, the reset environment and only
// descriptors 0-2, though bench holds more and has a secret in its
// environment.
func TestWorkloadAsUserReachesNothing(t *testing.T) {
	tracertest.NeedRoot(t)
	reach := tracertest.BuildReach(t)
	report := filepath.Join(tracertest.ReachDir(t), "reach.out")
	leak, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer leak.Close()
	// Inherited without close-on-exec, as from bench's own caller.
	if _, _, e := syscall.Syscall(syscall.SYS_FCNTL, leak.Fd(), syscall.F_SETFD, 0); e != 0 {
		t.Fatal(e)
	}
	t.Setenv("TRACER_TEST_SECRET", "root-only")
	w := &Workload{Name: "reach", argv: func(string) []string { return []string{reach, report} },
		Credential: &syscall.Credential{Uid: 65534, Gid: 65534}, Dir: "/"}
	if _, err := runWorkload(context.Background(), w, &Run{Workload: w}, "", nil); err != nil {
		t.Fatal(err)
	}
	r := tracertest.ReadReach(t, report)
	t.Logf("workload: sid %d fds %v env %q", r.SID, r.FDs, r.Env)
	if sid, _ := unix.Getsid(0); r.SID == sid {
		t.Errorf("the workload is in bench's session %d", sid)
	}
	if !slices.Equal(r.FDs, []int{0, 1, 2}) {
		t.Errorf("the workload holds descriptors %v, want only 0, 1, 2", r.FDs)
	}
	for _, kv := range r.Env {
		if strings.HasPrefix(kv, "TRACER_TEST_SECRET=") {
			t.Errorf("the workload's environment has %s", kv)
		}
	}
	if !slices.Contains(r.Env, "PATH="+tracer.SafePath) {
		t.Errorf("the workload's environment %q lacks PATH=%s", r.Env, tracer.SafePath)
	}
}
