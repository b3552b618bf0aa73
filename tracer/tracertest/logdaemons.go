// SPDX-License-Identifier: Apache-2.0

package tracertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Journald is a systemd-journald of a test's own: it runs without
// systemd, in private mount, pid and network namespaces (its audit
// socket can change nothing there), with its socket and its journal
// files in the test's directory.
type Journald struct {
	// Socket is its native protocol socket (journal:SOCKET).
	Socket string
	// DevLog is its syslog socket, what /dev/log is on a systemd node.
	DevLog string
	dir    string
	cmd    *exec.Cmd
}

// StartJournald starts a journald for t, stopped when t ends.
func StartJournald(t testing.TB) *Journald {
	t.Helper()
	NeedRoot(t)
	bin := "/lib/systemd/systemd-journald"
	if _, err := os.Stat(bin); err != nil {
		MissingTool(t, fmt.Sprintf("no systemd-journald (the systemd package): %v", err))
	}
	dir := t.TempDir()
	for _, d := range []string{"run", "log"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// No rate limit: the tests count every event.
	conf := "[Journal]\nStorage=volatile\nReadKMsg=no\nRateLimitBurst=0\nForwardToSyslog=no\nForwardToKMsg=no\nForwardToConsole=no\nForwardToWall=no\n"
	if err := os.WriteFile(filepath.Join(dir, "journald.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	// A tmpfs over /run in the namespace: journald's /run/systemd/journal
	// (its sockets) and /run/log (its files) are the test's directories.
	script := fmt.Sprintf(`set -e
mount --make-rprivate /
mount -t tmpfs tmpfs /run
mkdir -p /run/systemd/journal /run/log
mount --bind %[1]s/run /run/systemd/journal
mount --bind %[1]s/log /run/log
mount --bind %[1]s/journald.conf /etc/systemd/journald.conf
exec %[2]s`, dir, bin)
	j := &Journald{Socket: filepath.Join(dir, "run", "socket"), DevLog: filepath.Join(dir, "run", "dev-log"), dir: dir}
	j.cmd = exec.Command("unshare", "--mount", "--pid", "--net", "--fork", "--kill-child", "sh", "-c", script)
	var out bytes.Buffer
	j.cmd.Stdout, j.cmd.Stderr = &out, &out
	if err := j.cmd.Start(); err != nil {
		t.Fatalf("starting journald: %v", err)
	}
	t.Cleanup(func() { j.Stop(t) })
	deadline := time.Now().Add(10 * time.Second)
	for {
		if st, err := os.Stat(j.Socket); err == nil && st.Mode()&os.ModeSocket != 0 {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("journald made no socket in 10s: %s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop stops journald (again: nothing); its journal stays readable.
func (j *Journald) Stop(t testing.TB) {
	t.Helper()
	if j.cmd.ProcessState != nil {
		return
	}
	// unshare waits with SIGTERM blocked: journald, its child, is told.
	// As the namespace's init it takes only the signals it handles, and
	// it handles SIGTERM. --kill-child kills it if unshare dies first.
	pid := j.cmd.Process.Pid
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)); err == nil {
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(c, syscall.SIGTERM)
			}
		}
	}
	done := make(chan struct{})
	go func() { _ = j.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = j.cmd.Process.Kill()
		<-done
	}
	_ = os.Remove(j.Socket)
}

// Entries reads the journal's entries that match (journalctl matches,
// e.g. SYSLOG_IDENTIFIER=tracer), each field's value as its bytes.
func (j *Journald) Entries(t testing.TB, match ...string) []map[string]string {
	t.Helper()
	args := append([]string{"-D", filepath.Join(j.dir, "log", "journal"), "-o", "json", "--all", "--no-pager"}, match...)
	out, err := exec.Command("journalctl", args...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok && len(out) == 0 && strings.Contains(string(ee.Stderr), "No entries") {
			return nil
		}
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("journalctl %v: %v: %s", args, err, ee.Stderr)
		}
		t.Fatalf("journalctl: %v", err)
	}
	var entries []map[string]string
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var raw map[string]json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatalf("reading journalctl's JSON: %v", err)
		}
		e := make(map[string]string, len(raw))
		for k, v := range raw {
			var s string
			if json.Unmarshal(v, &s) == nil {
				e[k] = s
				continue
			}
			// A value that is not UTF-8 or has controls: its bytes.
			var bs []byte
			var nums []int
			if json.Unmarshal(v, &nums) == nil {
				for _, n := range nums {
					bs = append(bs, byte(n))
				}
				e[k] = string(bs)
			}
		}
		entries = append(entries, e)
	}
	return entries
}

// Rsyslog is an rsyslogd of a test's own: its local socket (Socket, in
// place of /dev/log), a TCP and a UDP listener on 127.0.0.1, and every
// message in one file, a line each:
// FACILITY|SEVERITY|APP-NAME|PROCID|MSGID|MSG.
type Rsyslog struct {
	Socket  string
	TCPAddr string
	UDPAddr string
	Out     string
	dir     string
	cmd     *exec.Cmd
	log     *bytes.Buffer
}

// StartRsyslog starts an rsyslogd for t, stopped when t ends.
func StartRsyslog(t testing.TB) *Rsyslog {
	t.Helper()
	NeedRoot(t)
	bin, err := exec.LookPath("rsyslogd")
	if err != nil {
		MissingTool(t, fmt.Sprintf("no rsyslogd (the rsyslog package): %v", err))
	}
	dir := t.TempDir()
	r := &Rsyslog{Socket: filepath.Join(dir, "log.sock"), Out: filepath.Join(dir, "out.log"), dir: dir, log: &bytes.Buffer{}}
	// imudp cannot say which port it took: take a free one and hand it over.
	l, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.UDPAddr = l.LocalAddr().String()
	_, udpPort, _ := net.SplitHostPort(r.UDPAddr)
	l.Close()
	portFile := filepath.Join(dir, "tcp.port")
	conf := fmt.Sprintf(`global(workDirectory=%[1]q maxMessageSize="64k")
module(load="imuxsock" SysSock.Use="off")
input(type="imuxsock" Socket=%[2]q RateLimit.Interval="0")
module(load="imtcp")
input(type="imtcp" address="127.0.0.1" port="0" listenPortFileName=%[3]q)
module(load="imudp")
input(type="imudp" address="127.0.0.1" port=%[4]q)
template(name="fields" type="string" string="%%syslogfacility%%|%%syslogseverity%%|%%app-name%%|%%procid%%|%%msgid%%|%%msg%%\n")
*.* action(type="omfile" file=%[5]q template="fields")
`, dir, r.Socket, portFile, udpPort, r.Out)
	confFile := filepath.Join(dir, "rsyslog.conf")
	if err := os.WriteFile(confFile, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command(bin, "-n", "-f", confFile, "-i", filepath.Join(dir, "rsyslogd.pid"))
	r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("starting rsyslogd: %v", err)
	}
	t.Cleanup(func() { r.Stop(t) })
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := os.ReadFile(portFile)
		_, serr := os.Stat(r.Socket)
		if err == nil && len(bytes.TrimSpace(p)) > 0 && serr == nil {
			r.TCPAddr = net.JoinHostPort("127.0.0.1", strings.TrimSpace(string(p)))
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("rsyslogd did not listen in 10s: %s", r.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop stops rsyslogd (again: nothing); its file stays.
func (r *Rsyslog) Stop(t testing.TB) {
	t.Helper()
	if r.cmd.ProcessState != nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = r.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = r.cmd.Process.Kill()
		<-done
	}
}

// SyslogLine is one message rsyslogd wrote.
type SyslogLine struct {
	Facility, Severity int
	AppName, ProcID    string
	MsgID, Msg         string
}

// Lines reads the messages rsyslogd wrote so far.
func (r *Rsyslog) Lines(t testing.TB) []SyslogLine {
	t.Helper()
	b, err := os.ReadFile(r.Out)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var lines []SyslogLine
	for l := range strings.Lines(string(b)) {
		f := strings.SplitN(strings.TrimSuffix(l, "\n"), "|", 6)
		if len(f) != 6 {
			t.Fatalf("rsyslogd wrote %q, not FACILITY|SEVERITY|APP-NAME|PROCID|MSGID|MSG", l)
		}
		fac, _ := strconv.Atoi(f[0])
		sev, _ := strconv.Atoi(f[1])
		lines = append(lines, SyslogLine{Facility: fac, Severity: sev, AppName: f[2], ProcID: f[3], MsgID: f[4], Msg: strings.TrimPrefix(f[5], " ")})
	}
	return lines
}
