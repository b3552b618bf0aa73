// SPDX-License-Identifier: Apache-2.0

//go:build linux

package audit

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	libaudit "github.com/elastic/go-libaudit/v2"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/auditstate"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// coexistConfig watches everything the known workload does.
func coexistConfig() tracer.Config {
	cfg := tracer.DefaultConfig()
	cfg.Types, _ = vocab.ParseTypes("all")
	cfg.Signals, _ = vocab.ParseSignals("USR1")
	cfg.ExecFailures = true // the workload's execfail is counted
	return cfg
}

// checkKnown runs the known workload in s and checks its exact counts; it
// returns the workload's root pid.
func checkKnown(t *testing.T, s *tracertest.Session, bin, when string) uint32 {
	t.Helper()
	events, root := s.Workload(bin, knownWorkload...)
	if got := countEvents(events, coexistConfig()); !mapsEqual(got, knownCounts) {
		t.Errorf("counts %s:\n got  %v\n want %v", when, got, knownCounts)
	}
	return root
}

// waitLog waits until auditd's log holds want.
func waitLog(t *testing.T, file, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(file); strings.Contains(string(b), want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("auditd's log %s lacks %q", file, want)
}

// auditd stopped and started again while a tracer runs (systemctl restart
// auditd, a package update) comes up on its first try and holds the PID;
// tracer keeps reading across the switch and loses nothing.
func TestAuditdRestartBesideTracer(t *testing.T) {
	tracertest.LockAudit(t)
	tracertest.PauseNodeAuditd(t)
	tracertest.KeepAuditSettings(t)
	bin := tracertest.BuildWorkload(t)
	a := tracertest.StartAuditd(t, t.TempDir())
	rules0 := loadedRules(t)
	b := New()
	s := tracertest.StartSession(t, b, coexistConfig())
	checkKnown(t, s, bin, "before auditd's restart")
	// A package update leaves seconds between stop and start; half of one
	// is ten times what tracer used to need to take the free PID.
	a.Restart(t, 500*time.Millisecond) // fails unless the new auditd holds the PID within 2 s
	root := checkKnown(t, s, bin, "after auditd's restart")
	waitLog(t, a.LogFile, "pid="+strconv.Itoa(int(root))+" ")
	st1 := auditStatus(t)
	s.Stop()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// The workload's counts above are exact. The loss figures are the
	// node's (the kernel's lost counter counts every record it dropped,
	// whoever made it, and other packages' tests run beside this one):
	// said, not asserted.
	t.Logf("loss by stage over the run: %v", b.Stats().Lost)
	st2 := auditStatus(t)
	if int(st2.PID) != a.PID || st2.Enabled != st1.Enabled || st2.BacklogLimit != st1.BacklogLimit || st2.BacklogWaitTime != st1.BacklogWaitTime {
		t.Errorf("after tracer exited: %+v, want auditd (pid %d) holding the PID with the settings it had (%+v)", st2, a.PID, st1)
	}
	if after := loadedRules(t); !slices.Equal(after, rules0) {
		t.Errorf("rules after tracer: %v, want auditd's %v", after, rules0)
	}
}

// auditd started for the first time while a tracer runs (a DaemonSet that
// started before auditd was installed or enabled) comes up on its first
// try; tracer gives up lean records for it and still sees everything.
func TestAuditdFirstStartBesideTracer(t *testing.T) {
	tracertest.LockAudit(t)
	tracertest.PauseNodeAuditd(t)
	tracertest.KeepAuditSettings(t)
	if other := otherReader(auditStatus(t)); other != "" {
		t.Skipf("%s reads the audit records: this test needs a node where nothing does", other)
	}
	rules0 := loadedRules(t)
	bin := tracertest.BuildWorkload(t)
	b := New()
	s := tracertest.StartSession(t, b, coexistConfig())
	checkKnown(t, s, bin, "alone")
	if !b.lean {
		t.Errorf("alone, lean records are off")
	}
	a := tracertest.StartAuditd(t, t.TempDir())
	// The exclude rules go as soon as the poller sees the new reader.
	deadline := time.Now().Add(time.Second)
	for len(excludeRules(loadedRules(t))) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if ex := excludeRules(loadedRules(t)); len(ex) > 0 {
		t.Errorf("exclude rules still loaded 1 s after auditd started: %v", ex)
	}
	root := checkKnown(t, s, bin, "beside the new auditd")
	waitLog(t, a.LogFile, "pid="+strconv.Itoa(int(root))+" ")
	stA := auditStatus(t)
	s.Stop()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// The workload's counts above are exact. The loss figures are the
	// node's (the kernel's lost counter counts every record it dropped,
	// whoever made it, and other packages' tests run beside this one):
	// said, not asserted.
	t.Logf("loss by stage over the run: %v", b.Stats().Lost)
	st := auditStatus(t)
	if int(st.PID) != a.PID || st.Enabled != 1 || st.Enabled != stA.Enabled {
		t.Errorf("after tracer exited: pid %d enabled %d, want auditd's pid %d and audit still enabled", st.PID, st.Enabled, a.PID)
	}
	if after := loadedRules(t); !slices.Equal(after, rules0) {
		t.Errorf("rules after tracer: %v, want %v", after, rules0)
	}
	if _, err := os.Stat(nodePath()); err == nil {
		t.Errorf("%s left behind", nodePath())
	}
}

// Another program deletes every rule (auditctl -D, as augenrules --load
// does when auditd starts): tracer puts its own back and goes on.
func TestRulesDeletedBesideTracer(t *testing.T) {
	tracertest.LockAudit(t)
	tracertest.PauseNodeAuditd(t)
	bin := tracertest.BuildWorkload(t)
	rules0 := loadedRules(t)
	b := New()
	s := tracertest.StartSession(t, b, coexistConfig())
	ours := func() int { return strings.Count(strings.Join(loadedRules(t), "\n"), b.Key()) }
	n := ours()
	if out, err := exec.Command("auditctl", "-D").CombinedOutput(); err != nil {
		t.Fatalf("auditctl -D: %v %s", err, out)
	}
	// Every rule back, not just the first.
	deadline := time.Now().Add(3 * time.Second)
	for ours() < n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	checkKnown(t, s, bin, "after auditctl -D")
	s.Stop()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(b.Notes(), func(n string) bool { return strings.Contains(n, "deleted by another program") }) {
		t.Errorf("no note says the rules were deleted and added back: %v", b.Notes())
	}
	// The node's own rules went with -D; those are the test's to put back.
	for _, r := range rules0 {
		if out, err := exec.Command("sh", "-c", "auditctl "+r).CombinedOutput(); err != nil {
			t.Errorf("restoring %q: %v %s", r, err, out)
		}
	}
}

// The last tracer puts a setting back only where it still holds the value
// tracer set: a backlog limit another program set meanwhile stays.
func TestRestoreComparesSettings(t *testing.T) {
	tracertest.LockAudit(t)
	tracertest.PauseNodeAuditd(t)
	tracertest.KeepAuditSettings(t)
	c, err := libaudit.NewAuditClient(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A node as tracer finds it without auditd: audit off, a small backlog
	// with a wait time.
	for _, err := range []error{
		c.SetEnabled(false, libaudit.WaitForReply),
		c.SetBacklogLimit(64, libaudit.WaitForReply),
		c.SetBacklogWaitTime(15000, libaudit.WaitForReply),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	b := New()
	if err := b.Start(coexistConfig()); err != nil {
		t.Fatal(err)
	}
	if st := auditStatus(t); st.Enabled != 1 || st.BacklogLimit != BacklogLimit || st.BacklogWaitTime != 0 {
		t.Fatalf("tracer alone set %+v", st)
	}
	if err := c.SetBacklogLimit(8192, libaudit.WaitForReply); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	st := auditStatus(t)
	if st.BacklogLimit != 8192 || st.BacklogWaitTime != 15000 || st.Enabled != 0 {
		t.Errorf("after tracer: backlog_limit %d (want 8192, set by another program), backlog_wait_time %d (want 15000), enabled %d (want 0)",
			st.BacklogLimit, st.BacklogWaitTime, st.Enabled)
	}
}

// A second, non-tracer reader joins the multicast group while tracer runs
// lean: the exclude rules are gone within 1 s, and events stay exact.
func TestLeanDroppedForNewReader(t *testing.T) {
	tracertest.LockAudit(t)
	tracertest.PauseNodeAuditd(t)
	if other := otherReader(auditStatus(t)); other != "" {
		t.Skipf("%s reads the audit records: this test needs a node where nothing does", other)
	}
	bin := tracertest.BuildWorkload(t)
	rules0 := loadedRules(t)
	b := New()
	s := tracertest.StartSession(t, b, coexistConfig())
	if len(excludeRules(loadedRules(t))) == 0 {
		t.Fatal("no lean records on a node where only tracer reads")
	}
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.NETLINK_AUDIT)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK, Groups: auditstate.GroupReadLog}); err != nil {
		t.Fatal(err)
	}
	joined := time.Now()
	for len(excludeRules(loadedRules(t))) > 0 && time.Since(joined) < 2*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	if took := time.Since(joined); took > time.Second {
		t.Errorf("exclude rules still loaded %v after a reader joined: %v", took, excludeRules(loadedRules(t)))
	}
	checkKnown(t, s, bin, "after a reader joined")
	s.Stop()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(b.Notes(), func(n string) bool { return strings.Contains(n, "lean records off") }) {
		t.Errorf("no note says lean records went off: %v", b.Notes())
	}
	if after := loadedRules(t); !slices.Equal(after, rules0) {
		t.Errorf("rules after: %v, want %v", after, rules0)
	}
}
