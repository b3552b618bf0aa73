// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// noiseRun is one watch over the noise workload: the events of the
// workload's cgroup, keyed by comm, syscall and signal (or exec and
// result), and the stats file.
type noiseRun struct {
	keys  map[string]int
	stats tracer.StatsFile
}

// runNoise watches while the C workload sends its own threads SIGURG by
// tgkill (the runtime's preemption), checks existence with kill(pid, 0),
// sends itself SIGURG by kill (a real signal), fails an exec, and a shell
// searches PATH; and while a Go program runs. All in a cgroup of their
// own, which the watch is scoped to.
func runNoise(t *testing.T, backend string, flags ...string) noiseRun {
	t.Helper()
	mount := tracertest.Cgroup2(t)
	rel := fmt.Sprintf("tracer-noise-%d", os.Getpid())
	dir := tracertest.MakeCgroup(t, mount, rel)
	wl := tracertest.BuildWorkload(t)
	spin := filepath.Join(t.TempDir(), "gospin")
	if out, err := exec.Command("go", "build", "-o", spin, "./testdata/gospin").CombinedOutput(); err != nil {
		t.Fatalf("building gospin: %v %s", err, out)
	}
	out := filepath.Join(t.TempDir(), "events.json")
	stats := filepath.Join(t.TempDir(), "stats.json")
	args := append([]string{"--backend", backend, "--events", "all", "--cgroup", "/" + rel, "--format", "json", "-o", out, "--stats-file", stats}, flags...)
	w := startWatcher(t, nil, args...)
	// One shell in the cgroup runs them all: a child that exits before
	// tracer reads its /proc takes its parent's cgroup, so the parent
	// lives throughout.
	script := fmt.Sprintf("sleep 0.3; %s tgkill 50 23 kill 7 0 kill 3 23 execfail 1 exit 0; /usr/bin/env PATH=/a:/b:/c:/usr/bin true; %s; sleep 0.3", wl, spin)
	cg, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	// Born in the cgroup (clone3 CLONE_INTO_CGROUP): audit reads a
	// process's cgroup from /proc once, when it first sees it.
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(cg.Fd())}
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v %s", script, err, o)
	}
	waitQuiet(t, out)
	w.stop(t)
	r := noiseRun{keys: map[string]int{}}
	for _, e := range readEvents(t, out) {
		switch e.Type {
		case vocab.TypeSignal:
			r.keys[fmt.Sprintf("signal %s %s %d", e.Comm, e.Syscall, e.Signal)]++
		case vocab.TypeExec:
			r.keys[fmt.Sprintf("exec %s %s ret=%d", e.Comm, filepath.Base(e.Filename), e.Ret)]++
		}
	}
	b, err := os.ReadFile(stats)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r.stats); err != nil {
		t.Fatal(err)
	}
	return r
}

// waitQuiet waits until the output file stops growing.
func waitQuiet(t *testing.T, file string) {
	t.Helper()
	last := int64(-1)
	for range 50 {
		st, err := os.Stat(file)
		if err == nil && st.Size() == last {
			return
		}
		if err == nil {
			last = st.Size()
		}
		sleepShort()
	}
}

// Runtime noise is not an event by default, on either backend: a
// runtime's SIGURG to its own threads and signal 0 are left out (in the
// kernel with eBPF) and counted by reason, never as loss; --signal all
// shows them. Failed exec attempts only with --exec-failures. Both
// backends give the same stream in each mode.
func TestRuntimeNoiseSameOnBothBackends(t *testing.T) {
	tracertest.LockAudit(t)
	streams := map[string]map[string]noiseRun{}
	for _, backend := range []string{"audit", "ebpf"} {
		streams[backend] = map[string]noiseRun{
			"default":  runNoise(t, backend),
			"all":      runNoise(t, backend, "--signal", "all"),
			"failures": runNoise(t, backend, "--exec-failures"),
		}
	}
	for _, backend := range []string{"audit", "ebpf"} {
		def, all := streams[backend]["default"], streams[backend]["all"]
		if n := def.keys["signal workload tgkill 23"] + def.keys["signal workload kill 0"]; n != 0 {
			t.Errorf("%s: %d noise events by default: %v", backend, n, def.keys)
		}
		for k, n := range def.keys {
			if strings.HasPrefix(k, "signal gospin") {
				t.Errorf("%s: the Go program's runtime signals reported by default: %s x%d", backend, k, n)
			}
		}
		if def.keys["signal workload kill 23"] != 3 {
			t.Errorf("%s: SIGURG sent by kill (a real signal) reported %d times, want 3", backend, def.keys["signal workload kill 23"])
		}
		// Existence checks make no event and are not counted: eBPF's
		// default probes never see one (no signal is generated), audit's
		// rules leave them out in the kernel (-F a1!=0). Runtime
		// preemption: eBPF's programs count what they leave out; audit's
		// tgkill rule leaves SIGURG out in the kernel (-F a2!=23), where
		// no record is made, so it counts none.
		if got := def.stats.Filtered["existence-check"]; got != 0 {
			t.Errorf("%s: existence checks filtered %d, want 0 (left out in the kernel)", backend, got)
		}
		if got := def.stats.Filtered["runtime-preemption"]; backend == "ebpf" && got < 50 || backend == "audit" && got != 0 {
			t.Errorf("%s: runtime preemptions filtered %d, want at least the workload's 50 on ebpf, 0 on audit (no record made)", backend, got)
		}
		if def.stats.LostTotal != 0 || all.stats.LostTotal != 0 {
			t.Errorf("%s: lost %v / %v", backend, def.stats.Lost, all.stats.Lost)
		}
		if all.keys["signal workload tgkill 23"] != 50 || all.keys["signal workload kill 0"] != 7 || all.stats.FilteredTotal != 0 {
			t.Errorf("%s --signal all: %v, filtered %v", backend, all.keys, all.stats.Filtered)
		}
		if def.keys["exec env true ret=0"] != 1 || def.keys["exec workload tracer-enoent ret=-2"] != 0 || def.keys["exec env true ret=-2"] != 0 {
			t.Errorf("%s: PATH search by default: %v", backend, def.keys)
		}
		if f := streams[backend]["failures"].keys; f["exec env true ret=-2"] != 3 || f["exec env true ret=0"] != 1 || f["exec workload tracer-enoent ret=-2"] != 1 {
			t.Errorf("%s --exec-failures: PATH search: %v", backend, f)
		}
	}
	for _, mode := range []string{"default", "failures"} {
		a, e := streams["audit"][mode].keys, streams["ebpf"][mode].keys
		for k := range a {
			// The runtime's own timing: counts differ run to run.
			if strings.HasPrefix(k, "signal gospin") {
				delete(a, k)
			}
		}
		for k := range e {
			if strings.HasPrefix(k, "signal gospin") {
				delete(e, k)
			}
		}
		if fmt.Sprint(a) != fmt.Sprint(e) {
			t.Errorf("%s: the backends' streams differ:\n audit %v\n ebpf  %v", mode, a, e)
		}
	}
}

func sleepShort() { time.Sleep(100 * time.Millisecond) }

// Two tracers on the node, one per backend, idle for 10 s: neither
// reports anything either tracer's processes did (their runtimes'
// preemption signals, the audit backend's liveness checks).
func TestTwoTracersIdleReportNoTracer(t *testing.T) {
	tracertest.LockAudit(t)
	dir := t.TempDir()
	a := startWatcher(t, nil, "--backend", "audit", "--events", "all", "--format", "json", "-o", filepath.Join(dir, "audit.json"))
	e := startWatcher(t, nil, "--backend", "ebpf", "--events", "all", "--format", "json", "-o", filepath.Join(dir, "ebpf.json"))
	// Idle from when each has seen the other register (once a second).
	from := time.Now().Add(1500 * time.Millisecond)
	time.Sleep(10 * time.Second)
	a.stop(t)
	e.stop(t)
	tracers := map[int]bool{a.cmd.Process.Pid: true, e.cmd.Process.Pid: true}
	for _, name := range []string{"audit.json", "ebpf.json"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(b)) {
			var ev struct {
				PID  int
				Time time.Time
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("%s: bad line %s: %v", name, line, err)
			}
			if tracers[ev.PID] && ev.Time.After(from) {
				t.Errorf("%s reports a tracer's own event: %s", name, line)
			}
		}
	}
}
