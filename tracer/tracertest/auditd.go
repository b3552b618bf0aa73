// SPDX-License-Identifier: Apache-2.0

//go:build linux

package tracertest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer/auditstate"
)

// Auditd is a real audit daemon a test runs in the foreground with a
// private configuration that logs to its own directory and loads no
// plugins.
type Auditd struct {
	Bin, Dir, LogFile string
	PID               int
	cmd               *exec.Cmd
	exited            chan struct{} // closed when the running auditd exits
}

// AuditdBin is the path of the node's auditd; MissingTool when it is not
// installed.
func AuditdBin(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"/sbin/auditd", "/usr/sbin/auditd"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("auditd"); err == nil {
		return p
	}
	MissingTool(t, "auditd is not installed: apt-get install -y auditd")
	return ""
}

// StartAuditd starts a private auditd logging to dir and waits until it
// holds the audit PID; it fails the test if that takes more than 2 s or
// auditd exits (it does not retry a refused PID claim). The test's
// cleanup stops it.
func StartAuditd(t testing.TB, dir string) *Auditd {
	t.Helper()
	a := &Auditd{Bin: AuditdBin(t), Dir: dir, LogFile: filepath.Join(dir, "audit.log")}
	conf := "log_file = " + a.LogFile + "\nlog_format = RAW\nflush = INCREMENTAL_ASYNC\nfreq = 50\n" +
		"max_log_file = 100\nmax_log_file_action = IGNORE\nspace_left = 2\nadmin_space_left = 1\n" +
		"disk_full_action = IGNORE\ndisk_error_action = IGNORE\nspace_left_action = IGNORE\nadmin_space_left_action = IGNORE\n" +
		"local_events = yes\nwrite_logs = yes\nq_depth = 2000\nplugin_dir = " + filepath.Join(dir, "plugins.d") + "\n"
	if err := os.MkdirAll(filepath.Join(dir, "plugins.d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "auditd.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	a.start(t)
	t.Cleanup(func() { a.Stop(t) })
	return a
}

func (a *Auditd) start(t testing.TB) {
	t.Helper()
	a.cmd = exec.Command(a.Bin, "-n", "-c", a.Dir)
	a.cmd.Stderr = os.Stderr
	if err := a.cmd.Start(); err != nil {
		t.Fatalf("starting auditd: %v", err)
	}
	a.PID = a.cmd.Process.Pid
	exited := make(chan struct{})
	go func() { _ = a.cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			log, _ := os.ReadFile(a.LogFile)
			t.Fatalf("auditd (pid %d) exited on start: it could not take the audit PID\n%s", a.PID, lastLines(log, 3))
		default:
		}
		if int(AuditStatus(t).PID) == a.PID {
			a.exited = exited
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("auditd (pid %d) did not hold the audit PID within 2 s of its start (holder: %d)", a.PID, AuditStatus(t).PID)
}

// Stop ends auditd (SIGTERM, as systemctl stop does) and waits for it.
func (a *Auditd) Stop(t testing.TB) {
	t.Helper()
	if a.exited == nil {
		return
	}
	_ = syscall.Kill(a.PID, syscall.SIGTERM)
	select {
	case <-a.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(a.PID, syscall.SIGKILL)
		<-a.exited
	}
	a.exited = nil
}

// Restart stops auditd and starts it again after gap, as systemctl
// restart or a package update does; the new one must hold the PID on its
// first try.
func (a *Auditd) Restart(t testing.TB, gap time.Duration) {
	t.Helper()
	a.Stop(t)
	time.Sleep(gap)
	a.start(t)
}

func lastLines(b []byte, n int) string {
	l := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

// PauseNodeAuditd stops the node's own audit daemon, when one runs, for a
// test that runs a private one, and starts it again as it was (its
// command line) when the test ends. Its rules stay loaded meanwhile.
func PauseNodeAuditd(t testing.TB) {
	t.Helper()
	st := AuditStatus(t)
	pid := int(st.PID)
	if pid == 0 || syscall.Kill(pid, 0) != nil {
		return
	}
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		t.Fatalf("reading the audit daemon's command line: %v", err)
	}
	argv := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	if filepath.Base(argv[0]) != "auditd" {
		t.Fatalf("pid %d (%s) holds the audit PID: not an auditd this test can pause", pid, argv[0])
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatalf("stopping the node's auditd: %v", err)
	}
	waitAuditPID(t, func(p uint32) bool { return int(p) != pid }, "the node's auditd to exit")
	t.Cleanup(func() {
		// It daemonizes: the command returns once it runs.
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Errorf("starting the node's auditd again (%v): %v %s", argv, err, out)
			return
		}
		waitAuditPID(t, func(p uint32) bool { return p != 0 }, "the node's auditd to hold the audit PID again")
	})
}

func waitAuditPID(t testing.TB, ok func(uint32) bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if ok(AuditStatus(t).PID) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// KeepAuditSettings puts the audit settings back as they are now when the
// test ends (auditstate.Settings: enabled, failure, rate limit, backlog
// limit and wait time).
func KeepAuditSettings(t testing.TB) {
	t.Helper()
	found := auditstate.SettingsOf(AuditStatus(t))
	t.Cleanup(func() {
		c, err := auditstate.Open()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		now, err := c.GetStatus()
		if err == nil {
			_, err = found.Restore(c, now)
		}
		if err != nil {
			t.Errorf("putting the audit settings back: %v", err)
		}
	})
}
