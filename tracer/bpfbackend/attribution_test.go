// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfbackend

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/metrics"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// runDeaths runs deaths with args under b, scoped in the kernel to its tree,
// and returns every event delivered and what deaths printed.
func runDeaths(t *testing.T, b *Backend, cfg tracer.Config, bin string, args ...string) ([]tracer.Event, tracertest.DeathsOutput) {
	t.Helper()
	var out bytes.Buffer
	h := startHeldIn(t, &out, t.TempDir(), bin, args...) // the core file lands in the temp dir
	if cfg.PID == 0 && cfg.Cgroup == "" {
		cfg.PID = h.pid()
	}
	var all []tracer.Event
	stop := startRun(t, b, cfg, func(e *tracer.Event) { all = append(all, *e) })
	if status := h.run(t); status != 0 {
		t.Fatalf("deaths %v: exit status %d", args, status)
	}
	time.Sleep(50 * time.Millisecond) // the reparented grandchild's exit
	stop()
	return all, tracertest.ParseDeaths(out.Bytes())
}

// find returns the events of type typ whose process is id.
func find(events []tracer.Event, typ vocab.Type, id tracer.ExecID) []tracer.Event {
	var out []tracer.Event
	for _, e := range events {
		if e.Type == typ && e.ExecID == id {
			out = append(out, e)
		}
	}
	return out
}

// One process per way to die, and exact fields for each: the exit's
// cause, the sender of the killing signal, the kernel's own signals, exec
// ids that match /proc, and parent exec ids along the tree, on both the
// default (sched) and the syscalls probe sets.
func TestWhoKilledIt(t *testing.T) {
	tracertest.NeedRoot(t)
	bin := tracertest.BuildDeaths(t)
	procs := tracertest.MemoryCgroup(t, "tracer-test-oom-"+strconv.Itoa(os.Getpid()), 32<<20)
	for _, probes := range []string{ProbesSched, ProbesSyscalls} {
		t.Run(probes, func(t *testing.T) {
			cfg := tracer.DefaultConfig()
			cfg.Types, cfg.Probes = allTypes(), probes
			events, deaths := runDeaths(t, New(), cfg, bin,
				"segv", "segvnocore", "kill9", "pipe", "timer", "oom", procs, "exit3", "orphan", "reuse")
			main, ok := deaths.Proc("main", 0)
			if !ok {
				t.Fatalf("deaths printed no main line")
			}
			checkDeaths(t, events, deaths, main)
			checkCauseMetrics(t, events)
		})
	}
}

func checkDeaths(t *testing.T, events []tracer.Event, deaths tracertest.DeathsOutput, main tracertest.DeathProc) {
	t.Helper()
	kernel := func(code int32) tracer.KilledBy {
		return tracer.KilledBy{Origin: vocab.OriginKernel, Comm: "kernel", Code: code}
	}
	cases := []struct {
		role     string
		n        int
		signal   int
		code     int32 // of the kernel's signal event, when it sent one
		core     bool
		oom      bool
		exitCode int
		killedBy tracer.KilledBy
	}{
		{role: "segv", signal: 11, code: 1, core: true, killedBy: kernel(1)},
		{role: "segvnocore", signal: 11, code: 1, killedBy: kernel(1)},
		{role: "kill9", signal: 9, killedBy: tracer.KilledBy{Origin: vocab.OriginUser, PID: main.ExecID.PID, Comm: "deaths",
			ExecID: main.ExecID, Code: vocab.SIUser, Syscall: "kill"}},
		{role: "pipe", signal: 13, code: vocab.SIUser, killedBy: kernel(vocab.SIUser)},
		{role: "timer", signal: 14, code: vocab.SITimer, killedBy: kernel(vocab.SITimer)},
		{role: "oom", signal: 9, code: vocab.SIKernel, oom: true,
			killedBy: tracer.KilledBy{Origin: vocab.OriginKernel, Comm: "oom-killer", Code: vocab.SIKernel}},
		{role: "exit3", exitCode: 3},
		{role: "reuse1", exitCode: 3},
		{role: "reuse2", exitCode: 0},
		{role: "orphan", exitCode: 0},
	}
	for _, c := range cases {
		p, ok := deaths.Proc(c.role, c.n)
		if !ok {
			t.Errorf("%s: deaths did not report it", c.role)
			continue
		}
		if want := vocab.DecodeWaitStatus(uint32(p.Status)); (want.Signal != c.signal) || (c.signal == 0 && want.Code != c.exitCode) || want.CoreDumped != c.core {
			t.Errorf("%s: deaths reaped status %#x, the test expects signal %d core %v exit %d", c.role, p.Status, c.signal, c.core, c.exitCode)
		}
		exits := find(events, vocab.TypeExit, p.ExecID)
		if len(exits) != 1 {
			t.Errorf("%s (%s): %d exit events, want 1", c.role, p.ExecID, len(exits))
			continue
		}
		e := exits[0]
		if e.ParentExecID != main.ExecID || e.PPID != 0 {
			t.Errorf("%s: parent_exec_id %s, want deaths's %s", c.role, e.ParentExecID, main.ExecID)
		}
		if e.Signal != c.signal || e.CoreDumped != c.core || e.OOMKill != c.oom || e.ExitCode != c.exitCode || e.KilledBy != c.killedBy {
			t.Errorf("%s: exit signal %d core %v oom %v code %d killed_by %+v\n  want signal %d core %v oom %v code %d killed_by %+v",
				c.role, e.Signal, e.CoreDumped, e.OOMKill, e.ExitCode, e.KilledBy, c.signal, c.core, c.oom, c.exitCode, c.killedBy)
		}
		if c.code == 0 && c.role != "kill9" {
			continue
		}
		// The signal that killed it: the kernel's (the event is the
		// target's), or deaths's kill(2).
		sigs := find(events, vocab.TypeSignal, p.ExecID)
		if c.role == "kill9" {
			sigs = nil
			for _, s := range find(events, vocab.TypeSignal, main.ExecID) {
				if s.TargetExecID == p.ExecID || s.TargetPID == int32(p.ExecID.PID) {
					sigs = append(sigs, s)
				}
			}
		}
		if len(sigs) != 1 {
			t.Errorf("%s: %d signal events, want 1: %+v", c.role, len(sigs), sigs)
			continue
		}
		s := sigs[0]
		wantOrigin, wantSyscall, wantCode := vocab.OriginKernel, "", c.code
		if c.role == "kill9" {
			wantOrigin, wantSyscall, wantCode = vocab.OriginUser, "kill", vocab.SIUser
		}
		if s.Signal != c.signal || !s.HasCode || s.Code != wantCode || s.Origin != wantOrigin || s.Syscall != wantSyscall ||
			s.TargetPID != int32(p.ExecID.PID) {
			t.Errorf("%s: signal event %+v", c.role, s)
		}
		// The syscall tracepoints see no result or target of a kill(2).
		if wantOrigin == vocab.OriginKernel || s.Result != vocab.ResultUnknown {
			if s.Result != vocab.ResultDelivered || s.TargetComm != "deaths" || s.TargetExecID != p.ExecID {
				t.Errorf("%s: signal result %q target %q %s, want delivered deaths %s", c.role, s.Result, s.TargetComm, s.TargetExecID, p.ExecID)
			}
		}
	}

	// The orphan's child: reparented before it exits.
	g, ok := deaths.Proc("grandchild", 0)
	orphan, _ := deaths.Proc("orphan", 0)
	if ok {
		exits := find(events, vocab.TypeExit, g.ExecID)
		start, alive := host.ReadStartTicks(g.PPID)
		switch {
		case len(exits) != 1:
			t.Errorf("grandchild %s: %d exit events", g.ExecID, len(exits))
		case g.PPID == orphan.ExecID.PID:
			t.Errorf("grandchild was not reparented (ppid %d)", g.PPID)
		case alive && exits[0].ParentExecID != (tracer.ExecID{PID: g.PPID, Start: start}):
			t.Errorf("grandchild's exit: parent_exec_id %s, want its new parent %d (start %d)", exits[0].ParentExecID, g.PPID, start)
		}
		forks := find(events, vocab.TypeFork, orphan.ExecID)
		if len(forks) != 1 || forks[0].ChildPID != g.ExecID.PID || forks[0].ParentExecID != main.ExecID {
			t.Errorf("the orphan's fork of the grandchild: %+v", forks)
		}
	} else {
		t.Error("no grandchild line")
	}

	// pid reuse: two processes, one pid, two exec ids.
	r1, _ := deaths.Proc("reuse1", 0)
	r2, _ := deaths.Proc("reuse2", 0)
	if r1.ExecID.PID != r2.ExecID.PID || r1.ExecID == r2.ExecID {
		t.Errorf("reuse: %s and %s", r1.ExecID, r2.ExecID)
	}

	// Every event of a process deaths reported carries its exec id, and its
	// parent's for those whose parent is deaths.
	ids := map[uint32][]tracer.ExecID{}
	for _, p := range deaths.Procs {
		ids[p.ExecID.PID] = append(ids[p.ExecID.PID], p.ExecID)
	}
	for _, e := range events {
		known := ids[e.PID]
		if len(known) == 0 {
			continue
		}
		match := false
		for _, id := range known {
			match = match || e.ExecID == id
		}
		if !match {
			t.Errorf("%s event of pid %d: exec_id %s, want one of %v", e.Type, e.PID, e.ExecID, known)
		}
	}
}

// Processes in a systemd-style transient scope and in a containerd-style
// container cgroup: exact cgroup, unit and container id; --cgroup keeps
// exactly one cgroup's events, filtered in the kernel.
func TestCgroupNamesAndScope(t *testing.T) {
	tracertest.NeedRoot(t)
	mount := tracertest.Cgroup2(t)
	bin := tracertest.BuildDeaths(t)
	const id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	base := "/tracer-test-" + strconv.Itoa(os.Getpid()) + ".slice"
	unit := base + "/run-u42.scope"
	ctr := base + "/kubepods-besteffort-pod1.slice/cri-containerd-" + id + ".scope"
	procs := map[string]string{}
	for _, p := range []string{unit, ctr} {
		procs[p] = tracertest.MakeCgroup(t, mount, p) + "/cgroup.procs"
	}
	want := map[string]tracer.CgroupInfo{
		unit: {Path: unit, Unit: "run-u42.scope"},
		ctr:  {Path: ctr, ContainerID: id, Unit: "cri-containerd-" + id + ".scope"},
	}
	// deaths joins its cgroup first, then forks a child that exits 3.
	run := func(t *testing.T, cgroup string) tracertest.DeathsOutput {
		out, err := exec.Command(bin, "join", procs[cgroup], "exit3").Output()
		if err != nil {
			t.Fatalf("deaths in %s: %v", cgroup, err)
		}
		return tracertest.ParseDeaths(out)
	}
	for _, probes := range []string{ProbesSched, ProbesSyscalls} {
		for _, scope := range []string{"", unit, ctr} {
			name := probes + ", no --cgroup"
			if scope != "" {
				name = probes + ", --cgroup " + scope
			}
			t.Run(name, func(t *testing.T) { testCgroupScope(t, probes, scope, want, run) })
		}
	}
}

func testCgroupScope(t *testing.T, probes, scope string, want map[string]tracer.CgroupInfo, run func(*testing.T, string) tracertest.DeathsOutput) {
	unit, ctr := "", ""
	for cg, ci := range want {
		if ci.ContainerID != "" {
			ctr = cg
		} else {
			unit = cg
		}
	}
	cfg := tracer.DefaultConfig()
	cfg.Types, cfg.Cgroup, cfg.Probes = allTypes(), scope, probes
	b := New()
	if err := b.Start(cfg); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var c tracertest.Collector
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx, c.Emit) }()
	ran := map[string]tracertest.DeathsOutput{unit: run(t, unit), ctr: run(t, ctr)}
	time.Sleep(100 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for cg, deaths := range ran {
		main, _ := deaths.Proc("main", 0)
		child, _ := deaths.Proc("exit3", 0)
		var events []tracer.Event
		for _, e := range c.Tree(main.ExecID.PID) {
			// Before it joined, deaths was in the test's cgroup.
			if e.Type == vocab.TypeExec {
				continue
			}
			events = append(events, e)
			if got := (tracer.CgroupInfo{Path: e.Cgroup, ContainerID: e.ContainerID, Unit: e.Unit}); got != want[cg] {
				t.Errorf("%s event of pid %d in %s: %+v, want %+v", e.Type, e.PID, cg, got, want[cg])
			}
		}
		n := len(events)
		if scope != "" && scope != cg {
			if n != 0 {
				t.Errorf("%d events of %s with --cgroup %s: %+v", n, cg, scope, events)
			}
			continue
		}
		// The fork of the child, its exit and deaths's own.
		if n != 3 || len(find(events, vocab.TypeExit, child.ExecID)) != 1 || len(find(events, vocab.TypeFork, main.ExecID)) != 1 {
			t.Errorf("events of %s: %+v", cg, events)
		}
	}
	if scope == "" {
		return
	}
	// Nothing of any other cgroup passed the kernel.
	var other int
	for _, e := range c.Events() {
		if e.Cgroup != scope {
			other++
			t.Logf("outside %s: %+v", scope, e)
		}
	}
	if other != 0 {
		t.Errorf("--cgroup %s let %d events of other cgroups through", scope, other)
	}
}

// A --cgroup that names no cgroup: a one-line usage error, nothing loaded.
func TestBadCgroupIsUsageError(t *testing.T) {
	tracertest.NeedRoot(t)
	tracertest.Cgroup2(t)
	b := New()
	err := b.Start(tracer.Config{Cgroup: "/no-such-cgroup.slice"})
	if !errors.Is(err, vocab.ErrUsage) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "--cgroup") {
		t.Errorf("Start: %v, want a one-line usage error about --cgroup", err)
	}
	if b.coll != nil || len(b.links) != 0 {
		t.Error("something stayed loaded")
	}
}

// tracer_signals_total and tracer_exits_total over the deaths workload.
func checkCauseMetrics(t *testing.T, events []tracer.Event) {
	t.Helper()
	cs := metrics.NewCauseSink()
	for i := range events {
		_ = cs.Write(&events[i])
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(cs)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			k := mf.GetName()
			for _, l := range m.GetLabel() {
				k += " " + l.GetValue()
			}
			got[k] = m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{
		"tracer_exits_total core": 1, "tracer_exits_total exit": 6, "tracer_exits_total oom": 1, "tracer_exits_total signal": 4,
		"tracer_signals_total kernel SIGSEGV": 2, "tracer_signals_total kernel SIGPIPE": 1, "tracer_signals_total kernel SIGALRM": 1,
		"tracer_signals_total kernel SIGKILL": 1, "tracer_signals_total user SIGKILL": 1,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}
