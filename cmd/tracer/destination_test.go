// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// destWorkload is a watch scoped to a cgroup of its own and the workload
// that runs in it: one process that execs /bin/true 5 times (vfork),
// forks 3 times and sends itself SIGUSR1 4 times.
type destWorkload struct {
	rel, dir, bin string
}

// destWant is what one run of the workload makes, by type: its own exec
// and the 5 of /bin/true; 5 vforks and 3 forks; 4 signals; the exits of
// its 8 children and its own.
var destWant = map[string]int{"exec": 6, "fork": 8, "signal": 4, "exit": 9}

func newDestWorkload(t *testing.T) *destWorkload {
	t.Helper()
	mount := tracertest.Cgroup2(t)
	rel := fmt.Sprintf("tracer-dest-%d", os.Getpid())
	return &destWorkload{rel: rel, dir: tracertest.MakeCgroup(t, mount, rel), bin: tracertest.BuildWorkload(t)}
}

func (d *destWorkload) watchArgs(output string, more ...string) []string {
	if strings.HasPrefix(output, "syslog://") {
		// The test's own server on loopback.
		more = append(more, "--allow-cleartext")
	}
	return append([]string{"--backend", "ebpf", "--events", "all", "--cgroup", "/" + d.rel, "--output", output}, more...)
}

// run runs the workload, born in the cgroup (clone3 CLONE_INTO_CGROUP),
// and gives the watch time to pass its events on.
func (d *destWorkload) run(t *testing.T) {
	t.Helper()
	cg, err := os.Open(d.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	cmd := exec.Command(d.bin, "exec", "5", "/bin/true", "fork", "3", "kill", "4", "10")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(cg.Fd())}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("workload: %v %s", err, out)
	}
	time.Sleep(500 * time.Millisecond) // more than --max-delay
}

// checkCounts compares counts by type with n runs of the workload.
func checkCounts(t *testing.T, what string, got map[string]int, n int) {
	t.Helper()
	for typ, want := range destWant {
		if got[typ] != n*want {
			t.Errorf("%s: %d %s events, want %d (all: %v)", what, got[typ], typ, n*want, got)
		}
	}
	if len(got) != len(destWant) {
		t.Errorf("%s: event types %v, want only %v", what, got, destWant)
	}
}

// waitFor polls count until it reaches want (the daemon writes on its
// own time), or 10 s pass.
func waitFor(want int, count func() int) int {
	n := count()
	for deadline := time.Now().Add(10 * time.Second); n < want && time.Now().Before(deadline); n = count() {
		time.Sleep(50 * time.Millisecond)
	}
	return n
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// watch --output syslog (a local socket) and syslog://HOST:PORT (TCP)
// deliver every event of the workload to rsyslogd, which writes each
// with facility authpriv, APP-NAME tracer, PROCID the watch's pid, and
// the JSON line as its message. Once rsyslogd is stopped the watch goes
// on and counts what it could not deliver, lost at stage output.
func TestWatchToRsyslog(t *testing.T) {
	tracertest.NeedRoot(t)
	d := newDestWorkload(t)
	rs := tracertest.StartRsyslog(t)
	counts := func(pid int) map[string]int {
		got := map[string]int{}
		for _, l := range rs.Lines(t) {
			if l.ProcID != fmt.Sprint(pid) {
				continue
			}
			var e tracer.Event
			if err := e.UnmarshalJSON([]byte(l.Msg)); err != nil {
				t.Fatalf("rsyslogd wrote %q: %v", l.Msg, err)
			}
			if l.Facility != 10 || l.AppName != "tracer" {
				t.Errorf("facility %d app-name %q, want 10 (authpriv) and tracer", l.Facility, l.AppName)
			}
			got[e.Type.String()]++
		}
		return got
	}
	for _, c := range []struct{ name, output string }{
		{"local", "syslog:" + rs.Socket},
		{"tcp", "syslog://" + rs.TCPAddr},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := startWatcher(t, nil, d.watchArgs(c.output)...)
			pid := w.cmd.Process.Pid
			d.run(t)
			waitFor(total(destWant), func() int { return total(counts(pid)) })
			checkCounts(t, "rsyslogd's file", counts(pid), 1)
			if c.name != "tcp" {
				w.stop(t)
				if seen, lost, stages := w.summary(t); seen != total(destWant) || lost != 0 {
					t.Errorf("summary: %d seen, %d lost (%s); want %d seen, none lost", seen, lost, stages, total(destWant))
				}
				return
			}
			// rsyslogd goes away: the watch goes on, and counts the
			// second run's events lost at stage output.
			rs.Stop(t)
			start := time.Now()
			d.run(t)
			w.stop(t)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the watch took %v to run the workload and stop with rsyslogd down", d)
			}
			seen, lost, stages := w.summary(t)
			if seen != 2*total(destWant) || lost != total(destWant) || !strings.Contains(stages, fmt.Sprintf("output %d", total(destWant))) {
				t.Errorf("summary: %d seen, %d lost (%s); want %d seen, %d lost at stage output", seen, lost, stages, 2*total(destWant), total(destWant))
			}
			if !strings.Contains(w.stderr(), "counted lost at stage output") {
				t.Errorf("the watch did not say that events are lost:\n%s", w.stderr())
			}
			checkCounts(t, "rsyslogd's file after it stopped", counts(pid), 1)
		})
	}
}

// watch --output journal delivers every event of the workload to a real
// journald (one of the test's own: no systemd runs here), each entry with
// SYSLOG_IDENTIFIER=tracer and the event's fields as TRACER_*.
func TestWatchToJournald(t *testing.T) {
	tracertest.NeedRoot(t)
	d := newDestWorkload(t)
	jd := tracertest.StartJournald(t)
	// --format json as the packaged service passes it: the entries are the same.
	w := startWatcher(t, nil, d.watchArgs("journal:"+jd.Socket, "--format", "json")...)
	// SIGHUP (a service's reload) connects anew; the watch goes on.
	_ = w.cmd.Process.Signal(syscall.SIGHUP)
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(w.stderr(), "SIGHUP: connecting to --output anew"); {
		if time.Now().After(deadline) {
			t.Fatalf("no word of the SIGHUP:\n%s", w.stderr())
		}
		time.Sleep(20 * time.Millisecond)
	}
	d.run(t)
	counts := func() map[string]int {
		got := map[string]int{}
		for _, e := range jd.Entries(t, "SYSLOG_IDENTIFIER=tracer") {
			if e["TRACER_BACKEND"] != "ebpf" || e["SYSLOG_FACILITY"] != "10" || e["MESSAGE"] == "" || e["PRIORITY"] == "" {
				t.Errorf("entry %v", e)
			}
			got[e["TRACER_TYPE"]]++
		}
		return got
	}
	waitFor(total(destWant), func() int { return total(counts()) })
	w.stop(t)
	checkCounts(t, "the journal", counts(), 1)
	if seen, lost, stages := w.summary(t); seen != total(destWant) || lost != 0 {
		t.Errorf("summary: %d seen, %d lost (%s); want %d seen, none lost", seen, lost, stages, total(destWant))
	}
}

// No daemon (no journald socket, a TCP port that refuses): the watch
// starts, goes on, never stalls, and counts every event lost at stage
// output.
func TestWatchToDaemonThatIsDown(t *testing.T) {
	tracertest.NeedRoot(t)
	d := newDestWorkload(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := l.Addr().String()
	l.Close()
	for _, output := range []string{
		"journal:" + filepath.Join(t.TempDir(), "no-journald"),
		"syslog://" + refused,
		"syslog:" + filepath.Join(t.TempDir(), "no-syslogd"),
	} {
		t.Run(output[:strings.IndexAny(output, ":")], func(t *testing.T) {
			w := startWatcher(t, nil, d.watchArgs(output)...)
			start := time.Now()
			d.run(t)
			w.stop(t)
			if el := time.Since(start); el > 5*time.Second {
				t.Errorf("the watch took %v to run the workload and stop", el)
			}
			seen, lost, stages := w.summary(t)
			if seen != total(destWant) || lost != seen || !strings.Contains(stages, fmt.Sprintf("output %d", seen)) {
				t.Errorf("summary: %d seen, %d lost (%s); want %d seen, all lost at stage output", seen, lost, stages, total(destWant))
			}
		})
	}
}

// Values of --output that cannot work end in one line and exit 2, before
// anything is installed.
func TestDestinationUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--output", "journal", "--format", "ecs"}, "drop --format ecs"},
		{[]string{"--output", "journal", "--time", "iso"}, "drop --time"},
		{[]string{"--output", "syslog", "--time", "relative"}, "drop --time"},
		{[]string{"--output", "syslog://logs.example.com"}, "HOST:PORT"},
		{[]string{"--output", "syslog+tlz://h:6514"}, "unknown syslog transport"},
		{[]string{"--output", "syslog://127.0.0.1:514"}, "--allow-cleartext"},
		{[]string{"--output", "syslog+udp://127.0.0.1:514"}, "syslog+tls://127.0.0.1:514"},
		{[]string{"--output", "otlp://127.0.0.1:4318"}, "--allow-cleartext"},
		{[]string{"--output", "syslog", "--allow-cleartext"}, "drop it"},
		{[]string{"--output", "otlp://127.0.0.1:4318", "--output-ca-file", "/etc/hostname"}, "--output-ca-file is for"},
		{[]string{"--output", "syslog+tls://127.0.0.1:6514", "--output-ca-file", "/etc/hostname"}, "no PEM certificate"},
		{[]string{"--output", "syslog", "--format", "xml"}, "unknown format"},
		{[]string{"--output", "kafka://h:9092"}, "unknown destination"},
		{[]string{"--output", "journal", "--output-max-size", "10MB"}, "--output-max-size rotates a file"},
	} {
		// In a directory of its own, for --duration: a tracer that took
		// "journal" for a file name would write it there, for a while.
		cmd := exec.Command(tracerBin, append([]string{"watch", "--backend", "ebpf", "--events", "exec", "--duration", "2s"}, c.args...)...)
		cmd.Dir = t.TempDir()
		var stderrB strings.Builder
		cmd.Stderr = &stderrB
		_ = cmd.Run()
		code, stderr := cmd.ProcessState.ExitCode(), stderrB.String()
		if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("watch %q: exit %d, stderr %q; want exit 2 and one line saying %q", c.args, code, stderr, c.want)
		}
	}
}
