// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	libaudit "github.com/elastic/go-libaudit/v2"

	"github.com/tracer-dev/tracer/tracer/tracertest"
)

var tracerBin string

// TestMain builds the tracer binary once: the CLI is tested as users run it.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tracer-cli-test")
	if err != nil {
		panic(err)
	}
	// Readable by all: TestNotRoot runs the binary as nobody.
	if err := os.Chmod(dir, 0o755); err != nil {
		panic(err)
	}
	tracerBin = filepath.Join(dir, "tracer")
	out, err := exec.Command("go", "build", "-o", tracerBin, ".").CombinedOutput()
	if err != nil {
		os.Stderr.Write(out)
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runTracer runs the binary and returns its exit status and output.
func runTracer(t *testing.T, cred *syscall.Credential, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(tracerBin, args...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

// Bad input ends in one line that says what to do, and exit status 2.
func TestBadInputExitsTwo(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"watch", "--backend", "dtrace"}, "use --backend audit or --backend ebpf"},
		{[]string{"watch"}, "--backend is required"},
		{[]string{"watch", "--backend", "audit", "--signal", "SIGFOO"}, "unknown signal"},
		{[]string{"watch", "--backend", "audit", "--events", "exec,open"}, "unknown event class"},
		{[]string{"watch", "--backend", "audit", "--arch", "b16"}, "unknown --arch"},
		{[]string{"watch", "--backend", "ebpf", "--probes", "kprobes"}, "unknown --probes"},
		{[]string{"watch", "--backend", "audit", "--format", "xml"}, "unknown format"},
		{[]string{"watch", "--backend", "audit", "--no-such-flag"}, "unknown flag"},
		{[]string{"rules", "--signal", "99"}, "out of range"},
		{[]string{"rules", "--machine", "sparc"}, "no audit syscall table"},
		{[]string{"bench", "--modes", "none", "--metric", "([0-9]+)"}, "command given after --"},
		{[]string{"bench", "--modes", "none", "--metric", "rps", "--", "true"}, "no capture group"},
		{[]string{"bench", "--modes", "none", "--metric", "([0-9]+", "--", "true"}, "not a regular expression"},
		{[]string{"bench", "--modes", "none", "--higher-is-better", "--", "true"}, "goes with --metric"},
		{[]string{"bench", "--cgroup", "/no-such-cgroup-here", "--modes", "none", "--", "true"}, "no such cgroup"},
		{[]string{"bench", "--modes", "none", "--workload", "redis,memcached"}, "unknown workload \"memcached\""},
		{[]string{"bench", "--modes", "none,x"}, "unknown mode \"x\": use none, audit, "},
		{[]string{"bench", "--modes", "none", "--workload", "signal-storm:many"}, "the count after : is a positive number"},
		{[]string{"bench", "--modes", "none,auditd@nvme", "--workload", "cis-shell"}, "the storage after @ is ssd or hdd"},
		{[]string{"bench", "--modes", "none,auditd-sync@hdd", "--workload", "cis-shell"}, "hdd is not among the storages"},
		{[]string{"bench", "--modes", "none", "--budget", "-1s", "--", "true"}, "--budget -1s is out of range"},
		{[]string{"bench", "--modes", "none", "--budget", "1m", "--rounds", "1", "--", "true"}, "--budget needs at least 3 rounds"},
		{[]string{"report", "-o", "/tmp/x.md", "--mode", "rw", "x.json"}, "is not an octal file mode"},
	}
	for _, c := range cases {
		code, stdout, stderr := runTracer(t, nil, c.args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("tracer %v: exit %d, stderr %q (want exit 2 and one line containing %q)", c.args, code, stderr, c.want)
		}
	}
}

func TestNotRoot(t *testing.T) {
	tracertest.NeedRoot(t) // to drop to nobody we must be root
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	for _, backend := range []string{"audit", "ebpf"} {
		code, _, stderr := runTracer(t, nobody, "watch", "--backend", backend, "--duration", "1s")
		if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "root") {
			t.Errorf("watch --backend %s as nobody: exit %d, stderr %q", backend, code, stderr)
		}
	}
	if code, _, stderr := runTracer(t, nobody, "cleanup"); code != 2 || !strings.Contains(stderr, "root") {
		t.Errorf("cleanup as nobody: exit %d, stderr %q", code, stderr)
	}
}

func TestRulesCommand(t *testing.T) {
	code, stdout, _ := runTracer(t, nil, "rules", "--events", "signal", "--signal", "USR1", "--arch", "b64")
	want := "-a always,exit -F arch=b64 -S kill -S tkill -S rt_sigqueueinfo -S pidfd_send_signal -F a1=10 -k tracer\n" +
		"-a always,exit -F arch=b64 -S tgkill -S rt_tgsigqueueinfo -F a2=10 -k tracer\n"
	if code != 0 || stdout != want {
		t.Errorf("tracer rules: exit %d\n%s\nwant\n%s", code, stdout, want)
	}
}

func kernelRules(t *testing.T) []string { return tracertest.AuditRules(t) }

func kernelStatus(t *testing.T) *libaudit.AuditStatus { return tracertest.AuditStatus(t) }

// watchingLine reads a tracer's stderr r to its end; the channel it
// returns gets true at the first line that says "watching", false if none
// did. each, when not nil, gets every line; done, when not nil, is closed
// at the end.
func watchingLine(r io.Reader, each func(string), done chan struct{}) <-chan bool {
	ready := make(chan bool, 1)
	go func() {
		if done != nil {
			defer close(done)
		}
		sc := bufio.NewScanner(r)
		sent := false
		for sc.Scan() {
			if each != nil {
				each(sc.Text())
			}
			if !sent && strings.Contains(sc.Text(), "watching") {
				ready <- true
				sent = true
			}
		}
		if !sent {
			ready <- false
		}
	}()
	return ready
}

// startWatch starts `tracer watch` and waits for its "watching" line.
func startWatch(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(tracerBin, append([]string{"watch"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := watchingLine(stderr, nil, nil)
	select {
	case ok := <-ready:
		if !ok {
			cmd.Wait()
			t.Fatalf("tracer %v exited before watching", args)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("tracer %v did not print its watching line", args)
	}
	return cmd
}

// A tracer killed with SIGKILL cannot remove its rules; cleanup removes
// them (and only them) and restores the settings it changed.
func TestSIGKILLThenCleanup(t *testing.T) {
	tracertest.LockAudit(t)
	before := kernelRules(t)
	stBefore := kernelStatus(t)
	// A rule of the node's own, which cleanup must leave alone.
	c, err := libaudit.NewAuditClient(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nodeRule := "-a always,exit -F arch=b64 -S getppid -F uid=4242 -k node-own"
	if out, err := exec.Command("true").CombinedOutput(); err != nil {
		t.Fatal(string(out))
	}
	wf := buildRule(t, nodeRule)
	if err := c.AddRule(wf); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// c is closed by then: remove the node's rule on a client of its own.
		c2, err := libaudit.NewAuditClient(nil)
		if err != nil {
			t.Error(err)
			return
		}
		defer c2.Close()
		if err := c2.DeleteRule(wf); err != nil {
			t.Errorf("removing the test's node rule: %v", err)
		}
	})

	w := startWatch(t, "--backend", "audit", "--format", "json", "-o", os.DevNull)
	during := kernelRules(t)
	if len(during) <= len(before)+1 {
		t.Fatalf("no tracer rules loaded while watching: %v", during)
	}
	_ = w.Process.Kill()
	_ = w.Wait()
	if left := kernelRules(t); len(left) != len(during) {
		t.Fatalf("rules changed by SIGKILL itself? %v", left)
	}
	code, stdout, stderr := runTracer(t, nil, "cleanup")
	if code != 0 {
		t.Fatalf("cleanup: exit %d: %s", code, stderr)
	}
	after := kernelRules(t)
	want := append(append([]string(nil), before...), strings.TrimPrefix(ruleText(t, wf), ""))
	if strings.Join(after, "\n") != strings.Join(want, "\n") {
		t.Errorf("after cleanup rules are\n%v\nwant\n%v\ncleanup said:\n%s", after, want, stdout)
	}
	st := kernelStatus(t)
	if st.Enabled != stBefore.Enabled || st.BacklogLimit != stBefore.BacklogLimit {
		t.Errorf("settings not restored by cleanup: before %+v after %+v\ncleanup said:\n%s", stBefore, st, stdout)
	}
	// The kernel lets go of a dead audit PID at its next failed send.
	deadline := time.Now().Add(5 * time.Second)
	for kernelStatus(t).PID != stBefore.PID && time.Now().Before(deadline) {
		_ = exec.Command("true").Run()
		time.Sleep(100 * time.Millisecond)
	}
	if st := kernelStatus(t); st.PID != stBefore.PID {
		t.Errorf("audit PID still %d, want %d", st.PID, stBefore.PID)
	}
}
