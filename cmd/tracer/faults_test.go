// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// persistRules loads what `tracer rules` prints, as an admin persisting
// them under /etc/audit/rules.d would, and removes them when the test
// ends: they are the node's rules, which no tracer may touch.
func persistRules(t *testing.T, args ...string) {
	t.Helper()
	code, out, errOut := runTracer(t, nil, append([]string{"rules"}, args...)...)
	if code != 0 {
		t.Fatalf("tracer rules: exit %d: %s", code, errOut)
	}
	file := filepath.Join(t.TempDir(), "tracer.rules")
	if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	if o, err := exec.Command("auditctl", "-R", file).CombinedOutput(); err != nil {
		t.Fatalf("auditctl -R %s: %v %s", file, err, o)
	}
	t.Cleanup(func() {
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "-a ") {
				_ = exec.Command("sh", "-c", "auditctl -d "+strings.TrimPrefix(line, "-a ")).Run()
			}
		}
	})
}

// Rules printed by `tracer rules` and loaded by the node survive `tracer
// cleanup`, a tracer's exit, and a tracer's SIGKILL followed by cleanup.
func TestPersistedRulesSurvive(t *testing.T) {
	tracertest.LockAudit(t)
	persistRules(t, "--events", "exec")
	persistRules(t, "--events", "signal", "--key", "node-signals")
	before := nodeSnapshot(t)
	if !strings.Contains(before, "key=tracer") || !strings.Contains(before, "key=node-signals") {
		t.Fatalf("persisted rules not loaded:\n%s", before)
	}
	if code, _, errOut := runTracer(t, nil, "cleanup"); code != 0 {
		t.Fatalf("cleanup: exit %d: %s", code, errOut)
	}
	waitNodeBack(t, before)
	w := startWatcher(t, nil, "--backend", "audit", "--events", "exec")
	w.stop(t)
	waitNodeBack(t, before)
	w = startWatcher(t, nil, "--backend", "audit", "--events", "exec")
	_ = w.cmd.Process.Kill()
	<-w.done
	_ = w.cmd.Wait()
	if code, _, errOut := runTracer(t, nil, "cleanup"); code != 0 {
		t.Fatalf("cleanup: exit %d: %s", code, errOut)
	}
	waitNodeBack(t, before)
}

// A tracer killed with SIGKILL right after each change it makes to the
// node (state files, settings, exclude rules, its rules; at start, in
// lean-records setup and at exit), then `tracer cleanup`: rules, exclude
// list, status and /run/tracer are as they were, a persisted `tracer
// rules` rule and a running auditd included.
func TestKilledAfterEveryChange(t *testing.T) {
	for _, beside := range []bool{false, true} {
		name := map[bool]string{false: "alone", true: "beside-auditd"}[beside]
		t.Run(name, func(t *testing.T) {
			tracertest.LockAudit(t)
			tracertest.PauseNodeAuditd(t)
			tracertest.KeepAuditSettings(t)
			if beside {
				tracertest.StartAuditd(t, t.TempDir())
			}
			persistRules(t, "--events", "exec")
			before := nodeSnapshot(t)
			killed := 0
			for n := 1; n <= 200; n++ {
				cmd := exec.Command(tracerBin, "watch", "--backend", "audit", "--events", "all", "--duration", "300ms", "-o", os.DevNull)
				cmd.Env = append(os.Environ(), killAfterChangesEnv+"="+strconv.Itoa(n))
				out, err := cmd.CombinedOutput()
				ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
				if err == nil {
					if killed == 0 {
						t.Fatalf("tracer made no change to kill it after:\n%s", out)
					}
					t.Logf("killed after each of %d changes; cleanup restored the node every time", killed)
					waitNodeBack(t, before)
					return
				}
				if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
					t.Fatalf("run %d: %v\n%s", n, err, out)
				}
				killed++
				step := strings.TrimSpace(string(out))
				if code, cout, errOut := runTracer(t, nil, "cleanup"); code != 0 {
					t.Fatalf("after %s: cleanup exit %d: %s %s", step, code, cout, errOut)
				}
				waitNodeBack(t, before)
				if t.Failed() {
					t.Fatalf("node not as found after: %s", step)
				}
			}
			t.Fatal("still killed after 200 changes")
		})
	}
}
