// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// needApps skips unless every application workload can run (make test
// installs their packages).
func needApps(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if why := AppMissing(n); why != "" {
			t.Skip(why)
		}
	}
}

// benchServers lists the servers bench would leave: redis-server or nginx
// processes whose working directory (or command line) is in a bench work
// directory.
func benchServers(t *testing.T) []string {
	t.Helper()
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		comm, _ := os.ReadFile(filepath.Join(p, "comm"))
		if c := strings.TrimSpace(string(comm)); c != "redis-server" && c != "nginx" {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		cwd, _ := os.Readlink(filepath.Join(p, "cwd"))
		argv := strings.ReplaceAll(string(cmdline), "\x00", " ")
		if strings.Contains(cwd, "/tracer-bench-") || strings.Contains(argv, "/tracer-bench-") {
			out = append(out, filepath.Base(p)+" "+argv)
		}
	}
	return out
}

// TestAppWorkloads runs every application workload for one short round
// untraced and under ebpf: each figure is read and positive, ebpf's
// change against none is there, nothing is lost, and no server is left.
func TestAppWorkloads(t *testing.T) {
	needApps(t, Apps()...)
	tracertest.LockAudit(t)
	bin := buildTracer(t)
	before := strings.Join(leftovers(t), " ")
	// stress-kill sends some 150,000 signals a second: with the default
	// 8 MiB ring, a reader that CI's other packages keep off the CPU for
	// a quarter second loses some (counted; CI run of stop 37). The test
	// is that nothing is lost, so the ring holds the whole round.
	f, _ := runBench(t, bin, "--workload", "apps", "--modes", "none,ebpf", "--rounds", "1", "--target", "300ms", "--ring-size", "67108864")
	want := map[string]bool{}
	for _, w := range Apps() {
		want[w+"/none"], want[w+"/ebpf"] = true, true
	}
	for _, r := range f.Results {
		key := r.Workload + "/" + r.Mode
		if !want[key] {
			t.Errorf("unexpected result %s", key)
			continue
		}
		delete(want, key)
		if r.Skipped != "" || r.Rounds != 1 {
			t.Errorf("%s: skipped %q, %d rounds", key, r.Skipped, r.Rounds)
			continue
		}
		w, _ := NewApp(r.Workload, 1)
		if r.Metric != w.Metric.Name || r.MetricUnit != w.Metric.Unit || !r.MetricHigherIsBetter || !(r.MetricValue > 0) {
			t.Errorf("%s: metric %q (%s) = %v, higher is better %v; want %s > 0", key, r.Metric, r.MetricUnit, r.MetricValue, r.MetricHigherIsBetter, w.Metric.Name)
		}
		if r.EventsExpected != -1 || r.MetricChangePct == nil {
			t.Errorf("%s: events expected %d, change %v", key, r.EventsExpected, r.MetricChangePct)
		}
		if strings.HasPrefix(r.Workload, "stress-") && r.Ops <= 0 {
			t.Errorf("%s: no bogo ops", key)
		}
		if r.Mode == "none" {
			if *r.MetricChangePct != 0 || r.EventsSeen != -1 {
				t.Errorf("%s: change %v, seen %d", key, *r.MetricChangePct, r.EventsSeen)
			}
			continue
		}
		// The client's exec at least; the stressors' children too.
		if r.EventsSeen < 1 || r.EventsLost != 0 {
			t.Errorf("%s: seen %d, lost %d (%s)", key, r.EventsSeen, r.EventsLost, r.Note)
		}
		if strings.HasPrefix(r.Workload, "stress-") && r.EventsPerOp == nil {
			t.Errorf("%s: events seen not compared with bogo ops", key)
		}
	}
	for k := range want {
		t.Errorf("no result for %s", k)
	}
	if left := benchServers(t); len(left) > 0 {
		t.Errorf("servers left running: %s", strings.Join(left, "; "))
	}
	if after := strings.Join(leftovers(t), " "); after != before {
		t.Errorf("bench left behind: %s (before: %s)", after, before)
	}
}

// TestStressForkEvents: stress-ng's fork stressor makes one fork per bogo
// op, and ebpf sees them all. Beyond them the tree holds stress-ng's own
// exec and its per-CPU workers' forks: a handful, within 1% of 3000 ops.
func TestStressForkEvents(t *testing.T) {
	needApps(t, "stress-fork")
	tracertest.LockAudit(t)
	bin := buildTracer(t)
	f, _ := runBench(t, bin, "--workload", "stress-fork", "--modes", "none,ebpf", "--rounds", "1", "--count", "3000")
	found := false
	for _, r := range f.Results {
		if r.Mode != "ebpf" {
			continue
		}
		found = true
		if r.Ops < 3000 || r.EventsLost != 0 {
			t.Fatalf("stress-fork under ebpf: %d bogo ops, %d lost: %+v", r.Ops, r.EventsLost, r)
		}
		if d := r.EventsSeen - r.Ops; d < 0 || d > r.Ops/100 {
			t.Errorf("stress-fork under ebpf: %d events seen for %d forks (bogo ops): want within 1%% above", r.EventsSeen, r.Ops)
		}
	}
	if !found {
		t.Fatalf("no ebpf result: %+v", f.Results)
	}
}

// TestAppServerInterrupted: Ctrl-C in the middle of the redis rounds
// stops and reaps redis-server; nothing of bench is left.
func TestAppServerInterrupted(t *testing.T) {
	needApps(t, "redis")
	tracertest.NeedRoot(t)
	bin := buildTracer(t)
	before := strings.Join(leftovers(t), " ")
	cmd := exec.Command(bin, "bench", "--workload", "redis", "--modes", "none", "--rounds", "20", "--count", "20000")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The first round done: redis-server is up.
	sc := bufio.NewScanner(stderr)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.Contains(sc.Text(), "redis none round 1") {
			break
		}
	}
	if len(benchServers(t)) == 0 {
		t.Errorf("no redis-server running during the rounds:\n%s", strings.Join(lines, "\n"))
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("bench did not end a minute after SIGINT")
	}
	if left := benchServers(t); len(left) > 0 {
		t.Errorf("after SIGINT, servers left running: %s", strings.Join(left, "; "))
	}
	if after := strings.Join(leftovers(t), " "); after != before {
		t.Errorf("bench left behind: %s (before: %s)", after, before)
	}
}
