// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/bench/result"
	"github.com/tracer-dev/tracer/tracer/auditstate"
	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// nodeAuditdConf is a private auditd.conf: small log files, so that a
// short signal storm makes auditd rotate its log during a run, as a busy
// run does on a node with the default 8 MB files.
func nodeAuditdConf(dir string) string {
	return "log_file = " + filepath.Join(dir, "audit.log") + "\nlog_format = ENRICHED\nflush = INCREMENTAL_ASYNC\nfreq = 50\n" +
		"max_log_file = 1\nmax_log_file_action = ROTATE\nnum_logs = 3\nspace_left = 2\nadmin_space_left = 1\n" +
		"disk_full_action = IGNORE\ndisk_error_action = IGNORE\nspace_left_action = IGNORE\nadmin_space_left_action = IGNORE\n" +
		"local_events = yes\nwrite_logs = yes\nq_depth = 2000\nplugin_dir = " + filepath.Join(dir, "plugins.d") + "\n"
}

// startNodeAuditd starts a real auditd the way an init system does -- it
// daemonises -- with a config of its own in dir, plus a rule of the node's
// own, and waits until it holds the audit PID. On cleanup it stops every
// auditd with that config and puts the audit settings and rules back.
func startNodeAuditd(t *testing.T, dir string) {
	t.Helper()
	bin, err := lookSbin("auditd")
	if err != nil {
		tracertest.MissingTool(t, "auditd is not installed: apt-get install -y auditd")
	}
	if pid, comm := auditHolder(); pid != 0 {
		t.Fatalf("%s (pid %d) already holds the audit PID", comm, pid)
	}
	settings, err := readAuditSettings()
	if err != nil {
		t.Fatal(err)
	}
	rules, _ := listRules()
	if err := os.MkdirAll(filepath.Join(dir, "plugins.d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "auditd.conf"), []byte(nodeAuditdConf(dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, pid := range auditdsWith(dir) {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
		for i := 0; i < 100 && len(auditdsWith(dir)) > 0; i++ {
			time.Sleep(50 * time.Millisecond)
		}
		ctl("-d", "always,exit", "-F", "arch=b64", "-S", "chmod", "-k", "bench-test-node")
		if _, err := restoreAuditSettings(settings); err != nil {
			t.Error(err)
		}
		if after, _ := listRules(); !reflect.DeepEqual(after, rules) {
			t.Errorf("audit rules after the test %q, before %q", after, rules)
		}
	})
	if out, err := exec.Command(bin, "-c", dir).CombinedOutput(); err != nil {
		t.Fatalf("starting auditd: %v: %s", err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if pid, comm := auditHolder(); pid != 0 && comm == "auditd" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("auditd did not take the audit PID within 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	ctl("-a", "always,exit", "-F", "arch=b64", "-S", "chmod", "-k", "bench-test-node")
}

func ctl(args ...string) {
	if p, err := lookSbin("auditctl"); err == nil {
		_ = exec.Command(p, args...).Run()
	}
}

// nodeState is what bench must leave as it found it.
type nodeState struct {
	Settings   auditSettings
	Holder     string // comm of the audit PID's holder
	AuditdArgv []string
	Rules      []string
	Leftovers  []string
	BenchState []string
	BPF        []string
}

func snapshot(t *testing.T) nodeState {
	t.Helper()
	var s nodeState
	st, err := readAuditSettings()
	if err != nil {
		t.Fatal(err)
	}
	s.Settings = *st
	_, s.Holder = auditHolder()
	if a, _ := findNodeAuditd(); a != nil {
		s.AuditdArgv = a.Argv
	}
	s.Rules, _ = listRules()
	s.Leftovers = leftovers(t)
	s.BenchState, _ = filepath.Glob(filepath.Join(auditstate.StateDir, "bench-*.json"))
	s.BPF, _ = filepath.Glob("/sys/fs/bpf/*")
	return s
}

// withNodeAuditd takes the audit lock and starts an auditd that plays the
// node's. It returns tracer's binary, the auditd's directory and the node's
// state as found.
func withNodeAuditd(t *testing.T) (bin, dir string, found nodeState) {
	t.Helper()
	tracertest.LockAudit(t)
	// The test plays the node's auditd itself, or needs a node no daemon
	// reads (the audit ceiling): the node's own, if one runs, is paused.
	tracertest.PauseNodeAuditd(t)
	bin = buildTracer(t)
	dir = t.TempDir()
	startNodeAuditd(t, dir)
	return bin, dir, snapshot(t)
}

// The node's auditd already runs, as on a RHEL node or right after apt
// installed it: bench measures it as it is, runs the audit modes beside it
// and says so, and leaves auditd, its rules and the audit settings as it
// found them. With --restart-auditd it stops auditd for the bench and
// starts it again after, as it was.
func TestBenchBesideAuditd(t *testing.T) {
	bin, dir, found := withNodeAuditd(t)
	pid, _ := auditHolder()

	// laurel runs as the plugin of an auditd of bench's own, which the
	// node's running auditd leaves no room for: it is skipped here by design.
	modes := slices.DeleteFunc(slices.Clone(DefaultModes), privateAuditd)
	f, _ := runBench(t, bin, "--workload", "signal-storm,exec-storm", "--count", "4000", "--rounds", "2",
		"--modes", strings.Join(modes, ","))
	labels := map[string]string{"audit": "audit (beside auditd)", "audit-floor": "audit-floor (beside auditd)",
		"audit-floor-classic": "audit-floor-classic (beside auditd)", "auditd": "auditd (node's)"}
	got := map[string]int{}
	for _, r := range f.Results {
		got[r.Mode]++
		if r.Skipped != "" {
			t.Errorf("%s %s: %s", r.Workload, r.Mode, r.Skipped)
			continue
		}
		if r.Label != labels[r.Mode] {
			t.Errorf("%s %s: label %q, want %q", r.Workload, r.Mode, r.Label, labels[r.Mode])
		}
		// Counted from its own log, across the rotations of a 1 MB
		// max_log_file. The eBPF peers (sigsnoop's perf buffer on a
		// loaded machine) may drop events: what they then say they lost
		// (the whole machine's samples, not only the workload's) must
		// cover what they did not see.
		peer := slices.ContainsFunc(f.Run.Modes, func(m result.Mode) bool { return m.Name == r.Mode && m.Peer })
		ebpfPeer := peer && r.Mode != "auditd"
		switch {
		case r.EventsSeen < 0:
		case ebpfPeer && r.EventsSeen != r.EventsExpected && r.EventsSeen+r.EventsLost < r.EventsExpected:
			t.Errorf("%s %s: saw %d and lost %d of %d (%s)", r.Workload, r.Mode, r.EventsSeen, r.EventsLost, r.EventsExpected, r.Note)
		case !ebpfPeer && r.EventsSeen != r.EventsExpected:
			t.Errorf("%s %s: saw %d of %d (%s)", r.Workload, r.Mode, r.EventsSeen, r.EventsExpected, r.Note)
		}
	}
	for _, m := range modes {
		if got[m] != 2 {
			t.Errorf("mode %s: %d results, want one per workload", m, got[m])
		}
	}
	if now, _ := auditHolder(); now != pid {
		t.Errorf("the audit PID is %d after bench, auditd's was %d", now, pid)
	}
	if after := snapshot(t); !reflect.DeepEqual(after, found) {
		t.Errorf("node after bench:\n%+v\nas found:\n%+v", after, found)
	}
	rotated, _ := filepath.Glob(filepath.Join(dir, "audit.log.*"))
	if len(rotated) == 0 {
		t.Error("auditd never rotated its log: the test does not check reading across rotations")
	}

	f, _ = runBench(t, bin, "--restart-auditd", "--workload", "exec-storm", "--count", "50", "--rounds", "2",
		"--modes", "none,audit,audit-floor,auditd")
	for _, r := range f.Results {
		if r.Skipped != "" || r.Label != "" {
			t.Errorf("%s %s with --restart-auditd: label %q, skipped %q", r.Workload, r.Mode, r.Label, r.Skipped)
		}
		if r.Mode == "auditd" && r.EventsSeen != r.EventsExpected {
			t.Errorf("the private auditd saw %d of %d (%s)", r.EventsSeen, r.EventsExpected, r.Note)
		}
	}
	if f.Run == nil || !strings.Contains(f.Run.Auditd, "stopped for the bench") {
		t.Errorf("run info %+v does not say auditd was stopped", f.Run)
	}
	if after := snapshot(t); !reflect.DeepEqual(after, found) {
		t.Errorf("node after bench --restart-auditd:\n%+v\nas found:\n%+v", after, found)
	}
}

// A bench killed with SIGKILL while it had the node's auditd stopped: tracer
// cleanup starts auditd again, as it was, and puts the settings back.
func TestBenchCleanupAfterKill(t *testing.T) {
	bin, dir, found := withNodeAuditd(t)

	cmd := exec.Command(bin, "bench", "--restart-auditd", "--modes", "none,audit,auditd", "--workload", "cis-shell",
		"--count", "5000", "--rounds", "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	state := statePath(cmd.Process.Pid)
	deadline := time.Now().Add(60 * time.Second)
	for {
		var s benchState
		b, err := os.ReadFile(state)
		if err == nil && json.Unmarshal(b, &s) == nil && s.StoppedAuditd != nil && len(auditdsWith(dir)) == 0 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatal("bench did not stop auditd within 60s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // into the runs
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	time.Sleep(500 * time.Millisecond) // its watcher, told by PDEATHSIG, cleans up after itself

	out, err := exec.Command(bin, "cleanup").CombinedOutput()
	if err != nil {
		t.Fatalf("tracer cleanup: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "started the node's auditd again") {
		t.Errorf("cleanup did not say it started auditd:\n%s", out)
	}
	if after := snapshot(t); !reflect.DeepEqual(after, found) {
		t.Errorf("node after SIGKILL and cleanup:\n%+v\nas found:\n%+v\ncleanup said:\n%s", after, found, out)
	}
}

// auditd suspends its log when the log's filesystem drops below
// admin_space_left (Debian and RHEL: 50 MB, SUSPEND): it reads every record
// and writes none, and the kernel loses none. bench says exactly that, at
// once, instead of "records were lost" a minute later, and the run goes on.
func TestBenchAuditdLowDisk(t *testing.T) {
	tracertest.NeedRoot(t)
	tracertest.LockAudit(t)
	tracertest.PauseNodeAuditd(t)
	conf, err := os.ReadFile(auditdConf)
	if err != nil {
		t.Skipf("no %s: %v", auditdConf, err)
	}
	lines := strings.Split(string(conf), "\n")
	// A percentage threshold needs a size: a 1 GiB filesystem's.
	sp := auditdSpaceOf(lines, 1<<30)
	if sp.adminLeft == 0 || sp.adminLeft > 512<<20 || sp.adminAction == "IGNORE" {
		t.Skipf("auditd.conf's admin_space_left is %d bytes, action %s: nothing to suspend in a small filesystem", sp.adminLeft, sp.adminAction)
	}
	bin := buildTracer(t)
	mnt := t.TempDir()
	size := sp.adminLeft + 16<<20
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.FormatUint(size, 10), "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", mnt).Run() })
	// Leave 2 MiB less than admin_space_left free.
	if err := os.WriteFile(filepath.Join(mnt, "fill"), make([]byte, 18<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	f, out := runBench(t, bin, "--workload", "cis-shell", "--count", "5", "--rounds", "1", "--modes", "none,auditd,ebpf", "--log-dir", mnt)
	var auditd, ebpf *result.Row
	for i, r := range f.Results {
		switch r.Mode {
		case "auditd":
			auditd = &f.Results[i]
		case "ebpf":
			ebpf = &f.Results[i]
		}
	}
	if auditd == nil || ebpf == nil {
		t.Fatalf("rows: %+v", f.Results)
	}
	if !strings.Contains(auditd.Skipped, "admin_space_left") || !strings.Contains(auditd.Skipped, "3 tries") ||
		strings.Contains(auditd.Skipped, "records were lost") || strings.Count(auditd.Skipped, "admin_space_left") != 1 {
		t.Errorf("auditd: want its exact cause, said once: %q", auditd.Skipped)
	}
	if ebpf.Skipped != "" || ebpf.EventsSeen != ebpf.EventsExpected {
		t.Errorf("ebpf: want measured beside the failed peer: %+v\n%s", ebpf, out)
	}
}
