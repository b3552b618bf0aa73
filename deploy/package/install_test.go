// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// needRoot skips a test that installs packages, loudly, where it cannot
// run.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: installs the deb with dpkg -i, loads audit rules and BPF programs")
	}
}

// lockAudit takes the machine-wide lock of the tests that touch audit
// state (tracer/tracertest.LockAudit, which this module cannot import).
func lockAudit(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile("/run/tracer-test-audit.lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	})
}

const unitPath = "/usr/lib/systemd/system/tracer.service"

// TestDebInstallAndRemove installs the deb on this node (no systemd runs
// here: the scripts' other branch), checks what landed, runs the unit's
// commands as systemd would with both backends, leaves what a tracer
// killed with SIGKILL leaves, and removes and purges the package: nothing
// of it may be left.
func TestDebInstallAndRemove(t *testing.T) {
	needRoot(t)
	need(t, "dpkg", "dpkg-query", "auditctl", "setpriv", "unshare", "systemd-analyze", "systemctl", "systemd-tmpfiles", "logrotate")
	_, deb := packages(t)
	lockAudit(t)
	if exec.Command("dpkg", "-s", "tracer").Run() == nil {
		t.Fatal("a tracer package is installed on this node: the test would replace and remove it (dpkg -P tracer first)")
	}
	want := wantFiles(t, "deb")
	for p := range want {
		if _, err := os.Lstat(p); err == nil {
			t.Fatalf("%s exists before the package is installed: the test would remove it", p)
		}
	}
	_, runTracerErr := os.Stat("/run/tracer")
	t.Cleanup(func() {
		if exec.Command("dpkg", "-s", "tracer").Run() == nil {
			out, _ := exec.Command("dpkg", "-P", "tracer").CombinedOutput()
			t.Logf("cleanup: dpkg -P tracer:\n%s", out)
		}
		if runTracerErr != nil {
			os.Remove("/run/tracer") // made below as tmpfiles.d would; only if empty
		}
	})

	t.Logf("dpkg -i:\n%s", run(t, "dpkg", "-i", deb))

	// What landed, with its modes.
	for p, w := range want {
		st, err := os.Lstat(p)
		if err != nil {
			t.Errorf("after dpkg -i: %v", err)
			continue
		}
		if got := st.Mode().String(); got != w.mode {
			t.Errorf("%s is %s, want %s", p, got, w.mode)
		}
		if s := st.Sys().(*syscall.Stat_t); s.Uid != 0 || s.Gid != 0 {
			t.Errorf("%s belongs to %d:%d, want root", p, s.Uid, s.Gid)
		}
	}
	if c := run(t, "dpkg-query", "-W", "-f", "${Conffiles}", "tracer"); !strings.Contains(c, "/etc/default/tracer ") || !strings.Contains(c, "/etc/logrotate.d/tracer ") {
		t.Errorf("dpkg knows the conffiles %q, want /etc/default/tracer and /etc/logrotate.d/tracer", c)
	}
	ver := run(t, "/usr/bin/tracer", "version")
	t.Logf("/usr/bin/tracer version:\n%s", ver)
	first, _, _ := strings.Cut(ver, "\n")
	pv, err := packageVersion(strings.TrimPrefix(first, "tracer "))
	if err != nil || pv+"-1" != run(t, "dpkg-query", "-W", "-f", "${Version}", "tracer") {
		t.Errorf("tracer version says %q (%s, %v); the package is %s", first, pv, err, run(t, "dpkg-query", "-W", "-f", "${Version}", "tracer"))
	}

	// systemd's own check of the unit: every setting known and valid, the
	// commands and the man page of Documentation= there.
	if out, err := exec.Command("systemd-analyze", "verify", unitPath).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify %s: %v\n%s", unitPath, err, out)
	}
	if out, err := exec.Command("logrotate", "-d", "/etc/logrotate.d/tracer").CombinedOutput(); err != nil || regexp.MustCompile(`(?mi)^error`).Match(out) {
		t.Errorf("logrotate -d /etc/logrotate.d/tracer: %v\n%s", err, out)
	}
	// /run/tracer as at boot (the postinstall makes it only where systemd
	// runs).
	run(t, "systemd-tmpfiles", "--create", "/usr/lib/tmpfiles.d/tracer.conf")
	if st, err := os.Stat("/run/tracer"); err != nil || st.Mode().String() != "drwx------" {
		t.Fatalf("systemd-tmpfiles made /run/tracer %v (%v), want drwx------", st.Mode(), err)
	}

	u := unit(t, unitPath)
	env := envFile(t, "/etc/default/tracer")
	for _, backend := range []string{"audit", "ebpf"} {
		t.Run("unit-"+backend, func(t *testing.T) { testUnitRuns(t, u, env, backend) })
	}

	// A tracer the OOM killer or kill -9 ended: its rules and state stay
	// behind until a tracer cleanup; removing the package runs one.
	r := startUnit(t, u, withEnv(env, map[string]string{"TRACER_FLAGS": "--events exec,signal"}))
	pid := r.pid
	key := fmt.Sprintf("key=tracer-%d-", pid)
	if !strings.Contains(run(t, "auditctl", "-l"), key) {
		t.Errorf("the unit's tracer (pid %d) loaded no rule with %s", pid, key)
	}
	_, _ = r.stop(syscall.SIGKILL)
	state, _ := filepath.Glob(fmt.Sprintf("/run/tracer/*-%d.json", pid))
	if !strings.Contains(run(t, "auditctl", "-l"), key) || len(state) == 0 {
		t.Fatalf("after kill -9 of pid %d: its rules or its state in /run/tracer (%v) are gone already; the test proves nothing", pid, state)
	}

	// An upgrade keeps the admin's config file (noreplace).
	edited := append(readFile(t, "/etc/default/tracer"), "TRACER_BACKEND=ebpf # the admin's\n"...)
	if err := os.WriteFile("/etc/default/tracer", edited, 0o644); err != nil {
		t.Fatal(err)
	}
	newer, err := build(options{
		Binary: filepath.Join(built.dir, "build", "tracer"), ManDir: filepath.Join(built.dir, "build", "man"),
		DocDir: filepath.Join(built.dir, "build", "doc"), Out: t.TempDir(), Version: "v999.0.0",
		Maintainer: defaultMaintainer, Config: "nfpm.yaml",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("dpkg -i %s:\n%s", filepath.Base(newer[1]), run(t, "dpkg", "-i", newer[1]))
	if v := run(t, "dpkg-query", "-W", "-f", "${Version}", "tracer"); v != "999.0.0-1" {
		t.Errorf("after the upgrade dpkg has tracer %s, want 999.0.0-1", v)
	}
	if got := readFile(t, "/etc/default/tracer"); !bytes.Equal(got, edited) {
		t.Errorf("the upgrade replaced the admin's /etc/default/tracer:\n%s", got)
	}

	// Enabled while no systemd runs (an image being built): the links go
	// with the package.
	link := "/etc/systemd/system/multi-user.target.wants/tracer.service"
	run(t, "systemctl", "enable", "tracer.service")
	if _, err := os.Lstat(link); err != nil {
		t.Fatalf("systemctl enable made no link: %v", err)
	}

	t.Logf("dpkg -r:\n%s", run(t, "dpkg", "-r", "tracer"))
	if rules := run(t, "auditctl", "-l"); strings.Contains(rules, key) {
		t.Errorf("after dpkg -r the killed tracer's rules are loaded still:\n%s", rules)
	}
	if left, _ := filepath.Glob(fmt.Sprintf("/run/tracer/*-%d.json", pid)); len(left) > 0 {
		t.Errorf("after dpkg -r the killed tracer's state is left: %v", left)
	}
	if _, err := os.Lstat(link); err == nil {
		t.Errorf("after dpkg -r %s is left", link)
	}
	for p, w := range want {
		_, err := os.Lstat(p)
		// /etc/tracer holds a conffile: it goes with dpkg -P.
		switch kept := w.conf || p == "/var/log/tracer" || p == "/etc/tracer"; {
		case kept && err != nil:
			t.Errorf("dpkg -r removed %s, which stays until dpkg -P", p)
		case !kept && err == nil:
			t.Errorf("after dpkg -r %s is left", p)
		}
	}
	if _, err := os.Stat("/var/log/tracer/events.jsonl"); err != nil {
		t.Errorf("dpkg -r removed the event log: %v", err)
	}

	t.Logf("dpkg -P:\n%s", run(t, "dpkg", "-P", "tracer"))
	for p := range want {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("after dpkg -P %s is left", p)
		}
	}
	if exec.Command("dpkg", "-s", "tracer").Run() == nil {
		t.Error("dpkg -s tracer: still known after dpkg -P")
	}
	for _, p := range []string{"/etc/systemd/system/tracer.service.d", "/var/lib/systemd/deb-systemd-helper-enabled/tracer.service.dsh-also"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("after dpkg -P %s is left", p)
		}
	}
}

// testUnitRuns runs the unit's ExecStartPre and ExecStart with the shipped
// config and backend, watching the execs of a program of the test's, runs
// it a known number of times around a rotation by the shipped logrotate
// snippet and the unit's ExecReload, and stops the tracer as systemctl
// stop does: the rotated and the new log must hold exactly those execs.
func testUnitRuns(t *testing.T, u map[string][]string, env map[string]string, backend string) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(dir, "tracer-pkg-probe")
	b, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(probe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	logFile := strings.TrimSpace(env["TRACER_OUTPUT"])
	if !strings.HasPrefix(logFile, "/var/log/tracer/") {
		t.Fatalf("TRACER_OUTPUT=%s: the test expects the shipped /var/log/tracer/...", logFile)
	}
	_ = os.Remove(logFile)
	_ = os.Remove(logFile + ".1")
	if old, _ := filepath.Glob(logFile + "-[0-9]*"); len(old) > 0 {
		for _, f := range old {
			_ = os.Remove(f)
		}
	}
	env = withEnv(env, map[string]string{"TRACER_BACKEND": backend, "TRACER_FLAGS": "--events exec --exe " + probe})

	r := startUnit(t, u, env)
	probes := func(n int) {
		for range n {
			if err := exec.Command(probe).Run(); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(500 * time.Millisecond) // past --max-delay: written
	}
	// Some execs, a rotation by the shipped logrotate snippet (its
	// postrotate needs a running systemd: here the test runs ExecReload
	// itself, as systemctl reload would), more execs.
	const before, after = 4, 3
	probes(before)
	if out, err := exec.Command("logrotate", "-f", "-s", filepath.Join(dir, "logrotate.state"), "/etc/logrotate.d/tracer").CombinedOutput(); err != nil {
		t.Fatalf("logrotate -f /etc/logrotate.d/tracer: %v\n%s", err, out)
	}
	if _, err := os.Stat(logFile); err == nil {
		t.Fatalf("after logrotate %s is there: nocreate leaves it to tracer", logFile)
	}
	for _, reload := range u["ExecReload"] {
		argv := expand(reload, withEnv(env, map[string]string{"MAINPID": fmt.Sprint(r.pid)}))
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("ExecReload %v: %v\n%s", argv, err, out)
		}
	}
	for i := 0; ; i++ {
		if _, err := os.Stat(logFile); err == nil {
			break
		}
		if i == 100 {
			t.Fatalf("10 s after ExecReload (SIGHUP) tracer has not reopened %s", logFile)
		}
		time.Sleep(100 * time.Millisecond)
	}
	probes(after)
	// The snippet's dateext names the rotated file FILE-YYYYMMDD.
	rotated, _ := filepath.Glob(logFile + "-[0-9]*")
	if len(rotated) != 1 {
		t.Fatalf("logrotate left %v beside %s, want one dated file", rotated, logFile)
	}
	summary, err := r.stop(syscall.SIGTERM) // systemctl stop
	t.Logf("tracer's stderr (the journal):\n%s", summary)
	if err != nil {
		t.Fatalf("tracer watch under the unit's settings: %v", err)
	}
	if !regexp.MustCompile(`(?m)^tracer: \d+ events seen, 0 lost`).MatchString(summary) {
		t.Errorf("no summary with 0 lost")
	}
	for file, want := range map[string]int{rotated[0]: before, logFile: after} {
		if n := countExecs(t, file, probe, backend); n != want {
			t.Errorf("%s holds %d execs of %s by the %s backend, want %d", file, n, probe, backend, want)
		}
	}
	for _, f := range []string{logFile, rotated[0]} {
		_ = os.Remove(f)
	}
}

// countExecs counts the exec events of probe by backend in file, a JSON
// log, which must be root's alone.
func countExecs(t *testing.T, file, probe, backend string) int {
	t.Helper()
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s is %v, want 0600", file, st.Mode())
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct {
			Backend, Type, Filename string
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("%s: %q: %v", file, sc.Text(), err)
		}
		if ev.Type == "exec" && ev.Filename == probe && ev.Backend == backend {
			n++
		}
	}
	return n
}

func withEnv(env, more map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range env {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// sandboxScript sets up, in a mount namespace of its own, what the unit's
// settings make systemd set up, then execs the command with setpriv:
// ProtectSystem=strict (every mount read-only but /dev, /proc and the
// ReadWritePaths), ProtectKernelTunables (/proc/sys read-only,
// /proc/kallsyms gone), ProtectHome, PrivateTmp, PrivateDevices, UMask,
// CapabilityBoundingSet and NoNewPrivileges. (Not emulated: the other
// Protect*/Restrict* settings, which systemd-analyze verify checks only
// for syntax.)
func sandboxScript(u map[string][]string) (string, error) {
	var rw []string
	for _, p := range strings.Fields(strings.Join(u["ReadWritePaths"], " ")) {
		optional := strings.HasPrefix(p, "-")
		p = strings.TrimPrefix(p, "-")
		if _, err := os.Stat(p); err != nil {
			if optional {
				continue
			}
			return "", fmt.Errorf("ReadWritePaths %s: %w (systemd would refuse to start the unit)", p, err)
		}
		rw = append(rw, p)
	}
	var caps []string
	for _, c := range strings.Fields(strings.Join(u["CapabilityBoundingSet"], " ")) {
		caps = append(caps, "+"+strings.ToLower(strings.TrimPrefix(c, "CAP_")))
	}
	if len(caps) == 0 || u["ProtectSystem"][0] != "strict" || u["NoNewPrivileges"][0] != "yes" {
		return "", errors.New("the unit has no bounding set, no ProtectSystem=strict or no NoNewPrivileges=yes: the test emulates those")
	}
	s := "set -e\n"
	for _, p := range rw {
		s += fmt.Sprintf("mount --bind %s %s\n", p, p)
	}
	s += `awk '{print $5}' /proc/self/mountinfo | sort -u | while read -r mp; do
	case "$mp" in /proc|/proc/*|/dev|/dev/*) continue ;; esac
	case " ` + strings.Join(rw, " ") + ` " in *" $mp "*) continue ;; esac
	mount -o remount,bind,ro "$mp" 2>/dev/null || true
done
mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys
mount --bind /dev/null /proc/kallsyms
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=1777 tmpfs /var/tmp
for h in /home /root /run/user; do [ -d "$h" ] && mount -t tmpfs -o ro,mode=000 tmpfs "$h"; done
`
	if len(u["PrivateDevices"]) == 1 && u["PrivateDevices"][0] == "yes" {
		// A /dev of the pseudo devices alone, as systemd makes it.
		s += `d=/tmp/.dev && mkdir $d && mount -t tmpfs -o mode=755 tmpfs $d
for n in null zero full random urandom tty; do touch $d/$n; mount --bind /dev/$n $d/$n; done
mkdir $d/pts $d/shm && mount --bind /dev/pts $d/pts && mount -t tmpfs -o mode=1777 tmpfs $d/shm
ln -s /run/systemd/journal/dev-log $d/log
mount -n --move $d /dev
`
	}
	if um := u["UMask"]; len(um) == 1 {
		s += "umask " + um[0] + "\n"
	}
	s += "exec setpriv --bounding-set=-all," + strings.Join(caps, ",") + " --inh-caps=-all --no-new-privs -- \"$@\"\n"
	return s, nil
}

// sandboxed returns the command that runs argv in the unit's sandbox with
// its environment.
func sandboxed(t *testing.T, u map[string][]string, env map[string]string, argv []string) *exec.Cmd {
	t.Helper()
	script, err := sandboxScript(u)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("unshare", append([]string{"-m", "--propagation", "private", "--", "sh", "-c", script, "sandbox"}, argv...)...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

// running is a unit's ExecStart, started.
type running struct {
	cmd  *exec.Cmd
	pid  int // tracer's: unshare, sh and setpriv each exec the next
	done chan struct{}
	err  strings.Builder // its stderr, the journal
}

// stop sends sig, waits for the end and returns its stderr.
func (r *running) stop(sig syscall.Signal) (string, error) {
	_ = r.cmd.Process.Signal(sig)
	<-r.done
	err := r.cmd.Wait()
	return r.err.String(), err
}

// startUnit runs ExecStartPre to its end, then starts ExecStart and waits
// for its watching line.
func startUnit(t *testing.T, u map[string][]string, env map[string]string) *running {
	t.Helper()
	for _, pre := range u["ExecStartPre"] {
		argv := expand(pre, env)
		if out, err := sandboxed(t, u, env, argv).CombinedOutput(); err != nil {
			t.Fatalf("ExecStartPre %v: %v\n%s", argv, err, out)
		}
	}
	argv := expand(u["ExecStart"][0], env)
	t.Logf("ExecStart: %q", argv)
	r := &running{cmd: sandboxed(t, u, env, argv), done: make(chan struct{})}
	pipe, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.pid = r.cmd.Process.Pid
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_, _ = r.stop(syscall.SIGKILL)
		}
	})
	watching := make(chan struct{})
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(pipe)
		seen := false
		for sc.Scan() {
			r.err.WriteString(sc.Text() + "\n")
			if !seen && strings.Contains(sc.Text(), "tracer: watching") {
				seen = true
				close(watching)
			}
		}
	}()
	select {
	case <-watching:
		return r
	case <-r.done:
		_ = r.cmd.Wait()
		t.Fatalf("ExecStart %q ended before watching:\n%s", argv, r.err.String())
	case <-time.After(90 * time.Second):
		t.Fatalf("ExecStart %q: no watching line in 90 s", argv)
	}
	return nil
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestScriptsWhereSystemdRuns runs each maintainer script with the
// arguments rpm and dpkg give it, where systemd runs: in a mount namespace
// of its own with a /run of its own that has /run/systemd/system, and with
// systemctl and systemd-tmpfiles that only record how they were called.
// (TestDebInstallAndRemove runs them for real where no systemd runs.)
func TestScriptsWhereSystemdRuns(t *testing.T) {
	needRoot(t)
	need(t, "unshare")
	const (
		tmpfiles = "systemd-tmpfiles --create tracer.conf"
		reload   = "systemctl daemon-reload"
		restart  = "systemctl try-restart tracer.service"
		disable  = "systemctl disable --now tracer.service"
	)
	for _, c := range []struct {
		script string
		args   []string
		calls  []string
		// what is left of /run/tracer and /var/log/tracer, both there before
		runTracer, logTracer bool
	}{
		{"postinstall.sh", []string{"1"}, []string{tmpfiles, reload}, true, true},                           // rpm install
		{"postinstall.sh", []string{"2"}, []string{tmpfiles, reload}, true, true},                           // rpm upgrade
		{"postinstall.sh", []string{"configure", ""}, []string{tmpfiles, reload}, true, true},               // deb install
		{"postinstall.sh", []string{"configure", "0.9.0"}, []string{tmpfiles, reload, restart}, true, true}, // deb upgrade
		{"preremove.sh", []string{"0"}, []string{disable}, true, true},                                      // rpm erase
		{"preremove.sh", []string{"remove"}, []string{disable}, true, true},                                 // deb remove
		{"preremove.sh", []string{"1"}, nil, true, true},                                                    // rpm upgrade
		{"preremove.sh", []string{"upgrade", "1.1.0"}, nil, true, true},                                     // deb upgrade
		{"postremove.sh", []string{"0"}, []string{reload}, false, true},                                     // rpm erase
		{"postremove.sh", []string{"remove"}, []string{reload}, false, true},                                // deb remove
		{"postremove.sh", []string{"purge"}, []string{reload}, true, false},                                 // deb purge
		{"postremove.sh", []string{"1"}, []string{reload, restart}, true, true},                             // rpm upgrade
		{"postremove.sh", []string{"upgrade", "1.1.0"}, []string{reload}, true, true},                       // deb upgrade
	} {
		t.Run(strings.Join(append([]string{c.script}, c.args...), " "), func(t *testing.T) {
			dir := t.TempDir()
			calls := filepath.Join(dir, "calls")
			fake := filepath.Join(dir, "bin")
			if err := os.Mkdir(fake, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, tool := range []string{"systemctl", "systemd-tmpfiles"} {
				if err := os.WriteFile(filepath.Join(fake, tool), []byte("#!/bin/sh\necho \"${0##*/} $*\" >> "+calls+"\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			script, err := filepath.Abs(filepath.Join("scripts", c.script))
			if err != nil {
				t.Fatal(err)
			}
			// preremove runs /usr/bin/tracer cleanup: not installed here, so
			// nothing runs (the install test runs it).
			setup := `set -e
mount -t tmpfs tmpfs /run
mkdir -p /run/systemd/system /run/tracer
mount -t tmpfs tmpfs /var/log
mkdir /var/log/tracer && touch /var/log/tracer/events.jsonl
PATH=` + fake + `:$PATH sh "$@"
[ -d /run/tracer ] && echo run-tracer >> ` + calls + ` || true
[ -d /var/log/tracer ] && echo log-tracer >> ` + calls + ` || true
`
			out, err := exec.Command("unshare", append([]string{"-m", "--propagation", "private", "--", "sh", "-c", setup, "setup", script}, c.args...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			want := append([]string(nil), c.calls...)
			if c.runTracer {
				want = append(want, "run-tracer")
			}
			if c.logTracer {
				want = append(want, "log-tracer")
			}
			got := strings.Split(strings.TrimSpace(string(readFile(t, calls))), "\n")
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("calls and what is left:\n%s\nwant:\n%s\n(output: %s)", strings.Join(got, "\n"), strings.Join(want, "\n"), out)
			}
		})
	}
}
