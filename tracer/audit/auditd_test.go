//go:build linux

package audit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	libaudit "github.com/elastic/go-libaudit/v2"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// startAuditd runs the node's auditd in the foreground with a private
// config that logs to dir, waits until it holds the audit PID, and on
// cleanup stops it and restores the audit settings it changed.
func startAuditd(t *testing.T, dir string) (pid int, logFile string) {
	t.Helper()
	bin, err := exec.LookPath("auditd")
	if err != nil {
		for _, p := range []string{"/sbin/auditd", "/usr/sbin/auditd"} {
			if _, err := os.Stat(p); err == nil {
				bin = p
			}
		}
	}
	if bin == "" {
		t.Fatal("auditd is not installed: apt-get install -y auditd (the CI script installs it)")
	}
	before := auditStatus(t)
	logFile = filepath.Join(dir, "audit.log")
	conf := "log_file = " + logFile + "\nlog_format = RAW\nflush = INCREMENTAL_ASYNC\nfreq = 50\n" +
		"max_log_file = 100\nmax_log_file_action = IGNORE\nspace_left = 2\nadmin_space_left = 1\n" +
		"disk_full_action = IGNORE\ndisk_error_action = IGNORE\nspace_left_action = IGNORE\nadmin_space_left_action = IGNORE\n" +
		"local_events = yes\nwrite_logs = yes\nq_depth = 2000\nplugin_dir = " + filepath.Join(dir, "plugins.d") + "\n"
	if err := os.MkdirAll(filepath.Join(dir, "plugins.d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "auditd.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-n", "-c", dir)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting auditd: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		// auditd enabled audit and set its own backlog; give the node back its settings.
		c, err := libaudit.NewAuditClient(nil)
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		_ = c.SetBacklogLimit(before.BacklogLimit, libaudit.WaitForReply)
		_ = c.SetBacklogWaitTime(int32(before.BacklogWaitTime), libaudit.WaitForReply)
		_ = c.SetEnabled(before.Enabled == 1, libaudit.WaitForReply)
	})
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if int(auditStatus(t).PID) == cmd.Process.Pid {
			return cmd.Process.Pid, logFile
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("auditd (pid %d) did not take the audit PID", cmd.Process.Pid)
	return 0, ""
}

// With auditd running, the backend reads the multicast copy: auditd keeps
// its PID and its log keeps receiving records, ours included.
func TestAlongsideAuditd(t *testing.T) {
	tracertest.LockAudit(t)
	before := loadedRules(t)
	auditdPID, logFile := startAuditd(t, t.TempDir())

	cfg := tracer.DefaultConfig()
	cfg.Types, _ = tracer.ParseTypes("all")
	cfg.Signals, _ = tracer.ParseSignals("USR1")
	b := New()
	events, _ := runWorkload(t, b, cfg, knownWorkload...)
	if !b.multicast || b.pidc != nil {
		t.Errorf("backend did not use multicast (multicast=%v holds PID=%v)", b.multicast, b.pidc != nil)
	}
	if pid := int(auditStatus(t).PID); pid != auditdPID {
		t.Errorf("audit PID is %d while tracer runs, want auditd's %d", pid, auditdPID)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := countEvents(events, cfg); !mapsEqual(got, knownCounts) {
		t.Errorf("counts alongside auditd:\n got  %v\n want %v", got, knownCounts)
	}
	if pid := int(auditStatus(t).PID); pid != auditdPID {
		t.Errorf("audit PID is %d after tracer stopped, want auditd's %d", pid, auditdPID)
	}
	if after := loadedRules(t); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("rules changed: before %v after %v", before, after)
	}
	// auditd's log got the workload's records and our rule removal; and it
	// keeps receiving: a new event after we left lands there too.
	key := b.Key()
	marker := exec.Command("/bin/sh", "-c", "exit 0")
	_ = marker.Run()
	deadline := time.Now().Add(5 * time.Second)
	var log []byte
	for time.Now().Before(deadline) {
		log, _ = os.ReadFile(logFile)
		if strings.Contains(string(log), `op=remove_rule key="`+key+`"`) && strings.Contains(string(log), `comm="workload"`) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, want := range []string{`comm="workload"`, `key="` + key + `"`, `op=remove_rule key="` + key + `"`} {
		if !strings.Contains(string(log), want) {
			t.Errorf("auditd's log %s lacks %s", logFile, want)
		}
	}
}
