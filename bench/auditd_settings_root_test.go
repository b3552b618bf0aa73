// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// A tracer runs alone (it enabled audit, raised backlog_limit, set
// backlog_wait_time 0) while bench's auditd mode loads the settings of the
// node's audit.rules (Debian's: -b 8192, --backlog_wait_time 60000) and
// then gives the settings back: a tracer runs, so they are handed to it,
// and when it exits every setting is as the node had it -- not the
// tracer's values, not audit.rules'.
func TestAuditdModeSettingsBackThroughARunningTracer(t *testing.T) {
	tracertest.LockAudit(t)
	tracertest.PauseNodeAuditd(t)
	tracertest.KeepAuditSettings(t)
	bin := buildTracer(t)
	// The kernel's defaults, which the tracer changes all three of.
	for _, set := range [][]string{{"-e", "0"}, {"-b", "64"}, {"--backlog_wait_time", "15000"}} {
		if out, err := exec.Command("auditctl", set...).CombinedOutput(); err != nil {
			t.Fatalf("auditctl %v: %v %s", set, err, out)
		}
	}
	node := tracertest.AuditStatus(t)

	tr := exec.Command(bin, "watch", "--backend", "audit", "--events", "exec", "-o", os.DevNull)
	var stderr strings.Builder
	tr.Stderr = &stderr
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- tr.Wait() }()
	t.Cleanup(func() {
		if tr.ProcessState == nil {
			_ = tr.Process.Kill()
			<-exited
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := tracertest.AuditStatus(t)
		if st.Enabled == 1 && st.BacklogWaitTime == 0 && strings.Contains(strings.Join(tracertest.AuditRules(t), "\n"), "key=tracer-") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tracer watch did not set up within 30s:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	mode, err := newMode("auditd", modeEnv{self: bin})
	if err != nil {
		t.Fatal(err)
	}
	m := mode.(*auditdMode)
	ctx := context.Background()
	if err := m.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	// What Start loads from Debian's audit.rules once its auditd runs.
	for _, set := range [][]string{{"-b", "8192"}, {"--backlog_wait_time", "60000"}} {
		if err := m.ctl(ctx, set...); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.restore(); err != nil {
		t.Fatal(err)
	}

	_ = tr.Process.Signal(syscall.SIGTERM)
	if err := <-exited; err != nil {
		t.Fatalf("tracer watch: %v\n%s", err, stderr.String())
	}
	after := tracertest.AuditStatus(t)
	if after.Enabled != node.Enabled || after.Failure != node.Failure || after.RateLimit != node.RateLimit ||
		after.BacklogLimit != node.BacklogLimit || after.BacklogWaitTime != node.BacklogWaitTime {
		t.Errorf("after the tracer exited: enabled %d, failure %d, rate_limit %d, backlog_limit %d, backlog_wait_time %d; the node had %d, %d, %d, %d, %d\ntracer said:\n%s",
			after.Enabled, after.Failure, after.RateLimit, after.BacklogLimit, after.BacklogWaitTime,
			node.Enabled, node.Failure, node.RateLimit, node.BacklogLimit, node.BacklogWaitTime, stderr.String())
	}
}
