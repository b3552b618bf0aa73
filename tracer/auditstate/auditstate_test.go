// SPDX-License-Identifier: Apache-2.0

//go:build linux

package auditstate_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	libaudit "github.com/elastic/go-libaudit/v2"

	"github.com/tracer-dev/tracer/tracer/auditstate"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

func TestLocked(t *testing.T) {
	for enabled, want := range map[uint32]bool{0: false, 1: false, 2: true} {
		if got := auditstate.Locked(&libaudit.AuditStatus{Enabled: enabled}); got != want {
			t.Errorf("Locked(enabled %d) = %v, want %v", enabled, got, want)
		}
	}
	if auditstate.Locked(nil) {
		t.Error("Locked(nil) = true")
	}
}

// State files go in and come back whole; a directory another user could
// write is refused in one line, as a usage error.
func TestStateDir(t *testing.T) {
	auditstate.StateDir = filepath.Join(t.TempDir(), "tracer")
	t.Cleanup(func() { auditstate.StateDir = auditstate.DefaultStateDir })
	unlock, err := auditstate.Lock() // makes it
	if err != nil {
		t.Fatal(err)
	}
	u := func(v uint32) *uint32 { return &v }
	if err := (&auditstate.Record{BacklogLimit: u(64), BacklogLimitSet: u(131072), Excludes: []string{"CWD"}}).Write(); err != nil {
		t.Fatal(err)
	}
	unlock()
	r, err := auditstate.ReadRecord()
	if err != nil || r.Before(auditstate.BacklogLimit) == nil || *r.Before(auditstate.BacklogLimit) != 64 ||
		r.Before(auditstate.Enabled) != nil || r.Before(auditstate.Failure) != nil || !slices.Equal(r.Excludes, []string{"CWD"}) || r.Empty() {
		t.Fatalf("ReadRecord = %+v, %v", r, err)
	}
	if err := os.Chmod(auditstate.StateDir, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err = auditstate.Lock()
	if !errors.Is(err, vocab.ErrUsage) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "writable by group or others") {
		t.Errorf("Lock of a directory others can write = %v, want one line saying so", err)
	}
}

// The multicast socket is listed among the group's members, with its drop
// counter.
func TestConn(t *testing.T) {
	tracertest.NeedRoot(t)
	c, err := auditstate.NewConn(auditstate.GroupReadLog)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !slices.Contains(auditstate.MulticastPorts(), c.Port()) {
		t.Errorf("port %d not among the multicast group's %v", c.Port(), auditstate.MulticastPorts())
	}
	if _, ok := auditstate.SocketDrops(c.Port()); !ok {
		t.Errorf("no drop counter for port %d", c.Port())
	}
	if got := c.SetRecvBuffer(1 << 20); got < 1<<20 {
		t.Errorf("receive buffer %d, asked for %d (root has SO_RCVBUFFORCE)", got, 1<<20)
	}
}

// A snapshot puts back every setting that differs, in one call; a locked
// audit is left alone.
func TestSettingsRestore(t *testing.T) {
	tracertest.LockAudit(t)
	tracertest.KeepAuditSettings(t)
	c, err := auditstate.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	found := auditstate.SettingsOf(tracertest.AuditStatus(t))
	changed := found
	changed.BacklogLimit, changed.BacklogWaitTime, changed.RateLimit = found.BacklogLimit+1000, found.BacklogWaitTime+1, found.RateLimit+7
	for _, s := range []auditstate.Setting{auditstate.BacklogLimit, auditstate.BacklogWaitTime, auditstate.RateLimit} {
		if err := s.Apply(c, s.In(changed)); err != nil {
			t.Fatal(err)
		}
	}
	if now := auditstate.SettingsOf(tracertest.AuditStatus(t)); now != changed {
		t.Fatalf("settings %+v after changing them, want %+v", now, changed)
	}
	done, err := found.Restore(c, tracertest.AuditStatus(t))
	if err != nil || len(done) != 3 {
		t.Errorf("Restore = %q, %v; want 3 settings restored", done, err)
	}
	if now := auditstate.SettingsOf(tracertest.AuditStatus(t)); now != found {
		t.Errorf("settings %+v after Restore, want %+v", now, found)
	}
	if done, err := found.Restore(c, &libaudit.AuditStatus{Enabled: 2, BacklogLimit: 1}); done != nil || err != nil {
		t.Errorf("Restore on a locked audit = %q, %v; want nothing done", done, err)
	}
}

// A setting tracers changed goes back to the node's value while it holds
// the value set; one another program set since is left, and said so.
func TestRecordCompareAndRestore(t *testing.T) {
	tracertest.LockAudit(t)
	tracertest.KeepAuditSettings(t)
	auditstate.StateDir = t.TempDir()
	t.Cleanup(func() { auditstate.StateDir = auditstate.DefaultStateDir })
	c, err := auditstate.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	node := tracertest.AuditStatus(t)
	var steps []string
	auditstate.SetChangeHook(func(s string) { steps = append(steps, s) })
	t.Cleanup(func() { auditstate.SetChangeHook(nil) })

	if err := auditstate.Change(c, auditstate.BacklogWaitTime, node.BacklogWaitTime, node.BacklogWaitTime+5); err != nil {
		t.Fatal(err)
	}
	if err := auditstate.Change(c, auditstate.BacklogLimit, node.BacklogLimit, node.BacklogLimit+500); err != nil {
		t.Fatal(err)
	}
	// Another program sets backlog_limit after the tracer did.
	if err := auditstate.BacklogLimit.Apply(c, node.BacklogLimit+900); err != nil {
		t.Fatal(err)
	}
	r, err := auditstate.ReadRecord()
	if err != nil {
		t.Fatal(err)
	}
	done, err := r.RestoreRecorded(c, tracertest.AuditStatus(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	now := tracertest.AuditStatus(t)
	if now.BacklogWaitTime != node.BacklogWaitTime || now.BacklogLimit != node.BacklogLimit+900 {
		t.Errorf("after restore: backlog_wait_time %d (want the node's %d), backlog_limit %d (want the other program's %d); said %q",
			now.BacklogWaitTime, node.BacklogWaitTime, now.BacklogLimit, node.BacklogLimit+900, done)
	}
	if len(done) != 2 || !strings.HasPrefix(done[0], "restored backlog_wait_time") || !strings.Contains(done[1], "set by another program") {
		t.Errorf("said %q", done)
	}
	want := []string{"record backlog_wait_time", "set backlog_wait_time", "record backlog_limit", "set backlog_limit", "restore backlog_wait_time"}
	if !slices.Equal(steps, want) {
		t.Errorf("change hook saw %q, want %q", steps, want)
	}

	// A program that changed backlog_limit hands the node's value over to
	// the running tracers: the last of them restores it.
	r.HandOver(auditstate.BacklogLimit, node.BacklogLimit, now)
	if _, err := r.RestoreRecorded(c, now, 0); err != nil {
		t.Fatal(err)
	}
	if got := tracertest.AuditStatus(t).BacklogLimit; got != node.BacklogLimit {
		t.Errorf("backlog_limit %d after a hand-over and restore, want the node's %d", got, node.BacklogLimit)
	}
}

// The metrics socket tracer.service serves in /run/tracer is tracer's own,
// not state another user planted: the state directory is still used, while
// a regular file another user could write is still refused.
func TestStateDirKeepsMetricsSocket(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tracer")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "metrics.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Chmod(filepath.Join(dir, "metrics.sock"), 0o660); err != nil {
		t.Fatal(err)
	}
	f, err := auditstate.OpenStateDir(dir)
	if err != nil {
		t.Fatalf("a state directory holding tracer's metrics socket: %v", err)
	}
	f.Close()
	if err := os.WriteFile(filepath.Join(dir, "x.json"), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "x.json"), 0o666); err != nil {
		t.Fatal(err)
	}
	if f, err := auditstate.OpenStateDir(dir); err == nil || !errors.Is(err, vocab.ErrUsage) {
		if f != nil {
			f.Close()
		}
		t.Errorf("a state file others can write: err %v, want a usage error", err)
	}
}
