// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/tracer-dev/tracer/bench/result"
	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// buildTracer builds cmd/tracer: bench runs itself as the watcher and as
// the Go workloads, so the test needs the real binary.
func buildTracer(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(t.TempDir(), "tracer")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/tracer")
	cmd.Dir = filepath.Join(filepath.Dir(file), "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building tracer: %v\n%s", err, out)
	}
	return bin
}

// runBench runs `tracer bench args...` (bin) writing a result file (--out
// comes first: args may end in "-- CMD"), and returns the file and what
// bench printed on stdout (logged, with stderr if any).
func runBench(t *testing.T, bin string, args ...string) (*result.File, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bench.json")
	cmd := exec.Command(bin, append([]string{"bench", "--out", out}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tracer bench %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	t.Logf("tracer bench %s:\n%s", strings.Join(args, " "), stdout.String())
	if stderr.Len() > 0 {
		t.Logf("stderr:\n%s", stderr.String())
	}
	f, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	return f, stdout.String()
}

func leftovers(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, pat := range []string{"/var/tmp/tracer-bench-*"} {
		m, _ := filepath.Glob(pat)
		out = append(out, m...)
	}
	if root := cgroupV2Mount(); root != "" {
		m, _ := filepath.Glob(filepath.Join(root, "tracer-bench-*"))
		out = append(out, m...)
	}
	return out
}

// TestQuickBench runs `tracer bench --quick` for real with this tool's two
// backends and their floors: every built-in workload, sized by time,
// interleaved rounds, and checks the result file's shape (schema 2: the
// intervals, noise, the ratios to the floors), that each of our modes saw
// exactly the events each workload makes, none lost, and that nothing is
// left behind.
func TestQuickBench(t *testing.T) {
	tracertest.LockAudit(t)
	bin := buildTracer(t)
	before := strings.Join(leftovers(t), " ")
	modes := []string{"none", "audit", "audit-floor", "ebpf", "ebpf-floor"}
	f, stdout := runBench(t, bin, "--quick", "--modes", strings.Join(modes, ","))
	if f.Schema != 2 || f.Node.Kernel == "" || f.Run == nil || f.Run.BootID == "" || f.Run.TargetS != QuickTarget.Seconds() {
		t.Errorf("result file: schema %d, node %+v, run %+v", f.Schema, f.Node, f.Run)
	}
	want := map[string]bool{}
	for _, w := range Builtins() {
		for _, m := range modes {
			want[w+"/"+m] = true
		}
	}
	if len(f.Results) != len(want) {
		t.Errorf("%d results, want %d (4 workloads x %d modes)", len(f.Results), len(want), len(modes))
	}
	for _, r := range f.Results {
		key := r.Workload + "/" + r.Mode
		if !want[key] {
			t.Errorf("unexpected result %s", key)
			continue
		}
		delete(want, key)
		if r.Skipped != "" {
			t.Errorf("%s skipped: %s", key, r.Skipped)
			continue
		}
		if r.Rounds < QuickMinRounds || r.Rounds > QuickRounds {
			t.Errorf("%s: %d rounds, want %d to %d", key, r.Rounds, QuickMinRounds, QuickRounds)
		}
		// Sized by time: calibration grew every workload from its first count.
		if r.Count <= StartCount(r.Workload) {
			t.Errorf("%s: count %d, not sized up from %d", key, r.Count, StartCount(r.Workload))
		}
		if !(r.ElapsedS > 0 && r.ElapsedMinS <= r.ElapsedS && r.ElapsedS <= r.ElapsedMaxS) {
			t.Errorf("%s: elapsed %v not within min %v and max %v", key, r.ElapsedS, r.ElapsedMinS, r.ElapsedMaxS)
		}
		if r.UserS+r.SysS <= 0 || r.CPUPct <= 0 || r.RatioElapsed <= 0 {
			t.Errorf("%s: user %v sys %v cpu %v%% ratio %v", key, r.UserS, r.SysS, r.CPUPct, r.RatioElapsed)
		}
		w, err := NewBuiltin(r.Workload, r.Count, bin, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if r.EventsExpected != w.Expected.Total() {
			t.Errorf("%s: events_expected %d, want %d", key, r.EventsExpected, w.Expected.Total())
		}
		if len(r.RatioCI95) != 2 || r.RatioCI95[0] <= 0 || r.RatioCI95[0] > r.RatioCI95[1] ||
			r.Noise != (r.RatioCI95[0] <= 1 && 1 <= r.RatioCI95[1]) {
			t.Errorf("%s: ratio_ci95 %v, noise %v", key, r.RatioCI95, r.Noise)
		}
		if r.Mode == "none" {
			if r.RatioElapsed != 1 || r.EventsSeen != -1 || r.Storage != "" {
				t.Errorf("%s: ratio %v, seen %d, storage %q; want 1, -1, none", key, r.RatioElapsed, r.EventsSeen, r.Storage)
			}
			continue
		}
		if fl := FloorOf(r.Mode); fl != "" && (r.Floor != fl || r.RatioFloor <= 0 || len(r.RatioFloorCI95) != 2) {
			t.Errorf("%s: floor %q ratio %v interval %v, want the ratio to %s", key, r.Floor, r.RatioFloor, r.RatioFloorCI95, fl)
		}
		if strings.HasSuffix(r.Mode, "-floor") {
			if r.Storage != "" {
				t.Errorf("%s: storage %q", key, r.Storage)
			}
			if r.EventsLost != 0 {
				// A floor that fell behind on a busy node is reported, not
				// a failure of this tool: its row and note say so.
				t.Logf("%s: the floor lost %d records (%s)", key, r.EventsLost, r.Note)
			}
			continue
		}
		if r.EventsSeen != r.EventsExpected {
			t.Errorf("%s: seen %d of %d (note: %s)", key, r.EventsSeen, r.EventsExpected, r.Note)
		}
		// Zero events lost by our modes in every row. The count is the
		// watcher's, node-wide; the note says at which stage.
		if r.EventsLost != 0 {
			t.Errorf("%s: the %s backend lost %d events (%s)", key, r.Mode, r.EventsLost, r.Note)
		}
		if r.TracerCPUS <= 0 || r.Storage != "ssd" {
			t.Errorf("%s: tracer_cpu_s %v, storage %q", key, r.TracerCPUS, r.Storage)
		}
	}
	for k := range want {
		t.Errorf("no result for %s", k)
	}
	for _, col := range []string{"95% INTERVAL", "VS FLOOR"} {
		if !strings.Contains(stdout, col) {
			t.Errorf("the table has no %s column", col)
		}
	}
	if after := strings.Join(leftovers(t), " "); after != before {
		t.Errorf("bench left behind: %s (before: %s)", after, before)
	}
	if b, err := exec.Command("auditctl", "-l").Output(); err == nil && strings.Contains(string(b), "key=tracer") {
		t.Errorf("audit rules left after bench:\n%s", b)
	}
}

// TestBenchCommand measures a command given after --: its events are not
// known in advance, and what the ebpf mode saw of /bin/true is its exec.
func TestBenchCommand(t *testing.T) {
	tracertest.NeedRoot(t)
	bin := buildTracer(t)
	f, _ := runBench(t, bin, "--modes", "ebpf", "--rounds", "2", "--", "/bin/true")
	if len(f.Results) != 2 {
		t.Fatalf("%d results, want none and ebpf: %+v", len(f.Results), f.Results)
	}
	for _, r := range f.Results {
		if r.Workload != "/bin/true" || r.EventsExpected != -1 || r.Rounds != 2 {
			t.Errorf("%+v", r)
		}
		if r.Mode == "ebpf" && r.EventsSeen != 1 {
			t.Errorf("ebpf saw %d events of /bin/true, want 1 (its exec)", r.EventsSeen)
		}
	}
	// Bad input: exit status 2, one line saying what to do.
	for _, args := range [][]string{
		{"bench", "--modes", "none,strace"},
		{"bench", "--workload", "fork-bomb"},
		{"bench", "--storage", "tape"},
		{"bench", "--workload", "cis-shell", "--", "/bin/true"},
		{"bench", "stray"},
		{"bench", "--sweep", "--", "/bin/true"},
		{"bench", "--sweep", "--workload", "cis-shell"},
		{"bench", "--target", "1ns"},
		{"bench", "--rounds", "-1"},
	} {
		c := exec.Command(bin, args...)
		b, err := c.CombinedOutput()
		if c.ProcessState == nil || c.ProcessState.ExitCode() != 2 || strings.Count(strings.TrimSpace(string(b)), "\n") != 0 {
			t.Errorf("tracer %s: %v, output %q: want exit status 2 and one line", strings.Join(args, " "), err, b)
		}
	}
}

// TestBenchHDD runs this tool's modes on the simulated HDD (this node's
// only disk is virtual), throttled with what the node has -- io.max on
// cgroup v2, the blkio throttles on v1 -- and checks the label and that
// loop device, mount, throttle, cgroup and enabled controllers are gone
// afterwards.
func TestBenchHDD(t *testing.T) {
	tracertest.LockAudit(t)
	v2 := cgroupV2Mount()
	useV2 := v2 != "" && slices.Contains(cgroupControllers(v2), "io")
	if !useV2 && cgroupV1Mount("blkio") == "" {
		t.Skip("neither the io controller (cgroup v2) nor blkio (v1): bench cannot simulate an HDD here")
	}
	if _, _, ok := rotationalMount(); ok {
		t.Skip("this node has a rotational disk: bench uses it instead of simulating one")
	}
	bin := buildTracer(t)
	loops := func() string {
		out, _ := exec.Command("losetup", "-a").Output()
		return string(out)
	}
	before, subtree := loops(), ""
	if useV2 {
		subtree = strings.Join(cgroupSubtree(v2), " ")
	}
	leftBefore := strings.Join(leftovers(t), " ")
	out := filepath.Join(t.TempDir(), "hdd.json")
	cmd := exec.Command(bin, "bench", "--modes", "audit,ebpf", "--storage", "ssd,hdd", "--workload", "exec-storm",
		"--count", "20", "--rounds", "1", "--out", out)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tracer bench --storage ssd,hdd: %v\n%s", err, b)
	}
	how := "in the root blkio cgroup (v1)"
	if useV2 {
		how = "by io.max in cgroup"
	}
	if !strings.Contains(string(b), "storage hdd-simulated: simulated:") || !strings.Contains(string(b), how) {
		t.Errorf("the simulated disk is not described as simulated %s:\n%s", how, b)
	}
	f, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	storages := map[string]bool{}
	for _, r := range f.Results {
		if r.Mode == "ebpf" || r.Mode == "audit" {
			storages[r.Mode+"@"+r.Storage] = true
			if r.EventsSeen != r.EventsExpected {
				t.Errorf("%s@%s saw %d of %d", r.Mode, r.Storage, r.EventsSeen, r.EventsExpected)
			}
		}
	}
	if len(storages) != 4 || !storages["ebpf@hdd-simulated"] || !storages["audit@hdd-simulated"] {
		t.Errorf("rows on %v, want audit and ebpf on ssd and hdd-simulated", storages)
	}
	if after := loops(); after != before {
		t.Errorf("loop devices before:\n%s\nafter:\n%s", before, after)
	}
	if useV2 {
		if after := strings.Join(cgroupSubtree(v2), " "); after != subtree {
			t.Errorf("root cgroup controllers %q, before %q", after, subtree)
		}
	} else if b, _ := os.ReadFile(filepath.Join(cgroupV1Mount("blkio"), "blkio.throttle.write_iops_device")); strings.TrimSpace(string(b)) != "" {
		t.Errorf("throttle left: %s", b)
	}
	if after := strings.Join(leftovers(t), " "); after != leftBefore {
		t.Errorf("bench left behind: %s (before: %s)", after, leftBefore)
	}
	mounts, _ := hostFacts.Mounts()
	for _, m := range mounts {
		if strings.HasPrefix(m.MountPoint, "/var/tmp/tracer-bench-") {
			t.Errorf("mount left: %s", m.MountPoint)
		}
	}
}

// TestBenchNotRoot: modes that load rules or probes need root, and say so.
func TestBenchNotRoot(t *testing.T) {
	tracertest.NeedRoot(t) // to switch to nobody
	bin := buildTracer(t)
	dir, err := os.MkdirTemp("", "tracer-bench-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	nb := filepath.Join(dir, "tracer")
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nb, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nb, "bench", "--modes", "none,ebpf", "--workload", "exec-storm")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "needs root") {
		t.Errorf("as nobody: exit %d, %q; want exit status 2 and 'needs root'", cmd.ProcessState.ExitCode(), out)
	}
}

// TestBenchSweep raises signal-storm's rate step by step under this tool's
// modes: every mode gets a ceiling and says what stopped it, a mode leaves
// the sweep at its first step that lost or missed events, and the steps
// are in the result file.
func TestBenchSweep(t *testing.T) {
	tracertest.LockAudit(t)
	// The test plays the node's auditd itself, or needs a node no daemon
	// reads (the audit ceiling): the node's own, if one runs, is paused.
	tracertest.PauseNodeAuditd(t)
	bin := buildTracer(t)
	before := strings.Join(leftovers(t), " ")
	out := filepath.Join(t.TempDir(), "sweep.json")
	cmd := exec.Command(bin, "bench", "--sweep", "--workload", "signal-storm", "--modes", "none,audit,ebpf",
		"--count", "2000", "--rounds", "2", "--target", "300ms", "--out", out)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tracer bench --sweep: %v\n%s", err, b)
	}
	if !strings.Contains(string(b), "MAX EVENTS/S") || !strings.Contains(string(b), "CEILING") {
		t.Errorf("no ceiling in the output:\n%s", b)
	}
	f, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Sweep) == 0 {
		t.Fatal("no sweep steps in the result file")
	}
	for _, r := range f.Results {
		if r.MaxEventsPerS == nil || *r.MaxEventsPerS < 0 {
			t.Errorf("%s: no ceiling (%+v)", r.Mode, r)
			continue
		}
		if !slices.Contains([]string{"lost", "behind", "slowed", "workload"}, r.MaxEventsLimit) || (r.Mode == "none" && r.MaxEventsLimit != "workload") {
			t.Errorf("%s: ceiling %v stopped by %q", r.Mode, *r.MaxEventsPerS, r.MaxEventsLimit)
		}
	}
	last := map[string]result.SweepStep{}
	for _, s := range f.Sweep {
		if p, ok := last[s.Mode]; ok {
			if s.TargetPerS <= p.TargetPerS {
				t.Errorf("%s: step %v after %v", s.Mode, s.TargetPerS, p.TargetPerS)
			}
			if !p.OK {
				t.Errorf("%s: a step after one that lost events", s.Mode)
			}
		}
		if s.Mode == "none" && !s.OK {
			t.Errorf("none lost events at %v/s: %+v", s.TargetPerS, s)
		}
		last[s.Mode] = s
	}
	if after := strings.Join(leftovers(t), " "); after != before {
		t.Errorf("bench left behind: %s (before: %s)", after, before)
	}
}

// make demo's bench, as the Makefile gives it, scaled down (a 1 s budget,
// fewer kills and paced events): every workload has rows of auditd,
// laurel, audit and ebpf on SSD and on the simulated HDD, none skipped or
// failed, this tool's with every event and nothing lost; and the result
// file says how long it ran, its budget and its storages.
func TestDemoRows(t *testing.T) {
	tracertest.LockAudit(t)
	if pid, comm := auditHolder(); pid != 0 {
		t.Skipf("%s (pid %d) holds the audit PID: the demo's laurel and auditd flush modes need a private auditd (make demo gives --restart-auditd only where it installed auditd)", comm, pid)
	}
	flags, _ := tracertest.DemoFlags(t, "../Makefile")
	args := strings.Fields(flags)
	for i := range args {
		switch {
		case i > 0 && args[i-1] == "--budget":
			args[i] = "1s"
		case i > 0 && args[i-1] == "--workload":
			// Scaled down, each still more than the 100 events a CPU per
			// event needs but the kills (still over the backlog's 8,192
			// records under auditd, three to a kill).
			args[i] = regexp.MustCompile(`signal-storm:\d+`).ReplaceAllString(args[i], "signal-storm:4000")
			args[i] = regexp.MustCompile(`:300\b`).ReplaceAllString(args[i], ":150")
		}
	}
	if !slices.Contains(args, "--budget") || !slices.Contains(args, "--storage") {
		t.Fatalf("DEMO_FLAGS %q: no --budget or --storage", flags)
	}
	bin := buildTracer(t)
	f, stdout := runBench(t, bin, args...)
	if f.Run == nil || f.Run.DurationS <= 0 || f.Run.BudgetS != 1 || len(f.Run.Storages) != 2 {
		t.Errorf("run info: %+v", f.Run)
	}
	rows := map[string]result.Row{}
	workloads := map[string]bool{}
	for _, r := range f.Results {
		rows[r.WorkloadLabel()+"/"+r.Mode+"@"+r.Storage] = r
		workloads[r.WorkloadLabel()] = true
	}
	if len(workloads) != 4 {
		t.Errorf("workloads %v, want 4", workloads)
	}
	for w := range workloads {
		for _, m := range []string{"auditd", "laurel", "audit", "ebpf"} {
			for _, st := range []string{"ssd", "hdd-simulated"} {
				r, ok := rows[w+"/"+m+"@"+st]
				switch {
				case !ok:
					t.Errorf("%s: no %s row on %s", w, m, st)
				case r.Skipped != "" || strings.Contains(r.Note, "failed"):
					t.Errorf("%s %s@%s: %s%s", w, m, st, r.Skipped, r.Note)
				case r.Rounds < BudgetMinRounds:
					t.Errorf("%s %s@%s: %d rounds, want at least %d", w, m, st, r.Rounds, BudgetMinRounds)
				case IsPeer(m):
					// A peer's misses are its own and the row shows them
					// (laurel behind auditd's dispatcher queue in a storm).
					if r.EventsSeen < 0 || r.EventsSeen > r.EventsExpected {
						t.Errorf("%s %s@%s: seen %d of %d", w, m, st, r.EventsSeen, r.EventsExpected)
					}
				case r.EventsSeen != r.EventsExpected || r.EventsLost != 0:
					t.Errorf("%s %s@%s: seen %d of %d, lost %d", w, m, st, r.EventsSeen, r.EventsExpected, r.EventsLost)
				}
			}
		}
	}
	if t.Failed() {
		t.Log(stdout)
	}
}
