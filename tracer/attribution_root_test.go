// SPDX-License-Identifier: Apache-2.0

//go:build linux

package tracer_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/audit"
	"github.com/tracer-dev/tracer/tracer/bpfbackend"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// runDeathsUnder runs deaths args under b (everything, unscoped) and returns the
// events of processes deaths reported, and deaths's report.
func runDeathsUnder(t *testing.T, b tracer.Backend, bin string, args ...string) ([]tracer.Event, tracertest.DeathsOutput) {
	t.Helper()
	var deaths tracertest.DeathsOutput
	var main tracertest.DeathProc
	events := watchWhile(t, b, func() {
		cmd := exec.Command(bin, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr, cmd.Dir = &out, os.Stderr, t.TempDir()
		if err := cmd.Run(); err != nil {
			t.Fatalf("deaths: %v", err)
		}
		deaths = tracertest.ParseDeaths(out.Bytes())
		main, _ = deaths.Proc("main", 0)
	}, func(evs []tracer.Event) bool { return hasExit(evs, main.ExecID.PID) })
	pids := map[uint32]bool{}
	for _, p := range deaths.Procs {
		pids[p.ExecID.PID] = true
	}
	var mine []tracer.Event
	for _, e := range events {
		if pids[e.PID] {
			mine = append(mine, e)
		}
	}
	return mine, deaths
}

// watchWhile runs b (everything, unscoped) while run runs, then until
// seen holds for the events so far (records reach user space
// asynchronously) or 10 s pass, and returns every event.
func watchWhile(t *testing.T, b tracer.Backend, run func(), seen func([]tracer.Event) bool) []tracer.Event {
	t.Helper()
	cfg := tracer.DefaultConfig()
	cfg.Types, _ = vocab.ParseTypes("all")
	if err := b.Start(cfg); err != nil {
		t.Fatalf("%s Start: %v", b.Name(), err)
	}
	t.Cleanup(func() { _ = b.Close() })
	var c tracertest.Collector
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx, c.Emit) }()
	run()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if seen(c.Events()) {
			break
		}
	}
	time.Sleep(100 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("%s Run: %v", b.Name(), err)
	}
	return c.Events()
}

func hasExit(events []tracer.Event, pid uint32) bool {
	for _, e := range events {
		if e.Type == vocab.TypeExit && e.PID == pid {
			return true
		}
	}
	return false
}

// The deaths workload under audit and eBPF: what audit sees of each death it
// sees the same as eBPF: the exit code of exits, the signal of a death by
// a core-dumping signal (ANOM_ABEND), the kill(2) with its code and
// origin; exec ids, where audit could read them, equal eBPF's and /proc's.
func TestWhoBothBackends(t *testing.T) {
	tracertest.LockAudit(t)
	bin := tracertest.BuildDeaths(t)
	procs := tracertest.MemoryCgroup(t, "tracer-test-oom-both-"+strconv.Itoa(os.Getpid()), 32<<20)
	args := []string{"segv", "segvnocore", "kill9", "pipe", "timer", "oom", procs, "exit3", "orphan", "reuse"}
	got := map[string][]tracer.Event{}
	deathsOf := map[string]tracertest.DeathsOutput{}
	for _, b := range []tracer.Backend{audit.New(), bpfbackend.New()} {
		got[b.Name()], deathsOf[b.Name()] = runDeathsUnder(t, b, bin, args...)
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// What each backend says of each process's death, by role.
	type death struct {
		exitCode, signal int
		killed           bool
		killer           string
		ids              tracer.ExecID
	}
	deaths := func(name string) map[string]death {
		out := map[string]death{}
		for _, p := range deathsOf[name].Procs {
			for _, e := range got[name] {
				if e.Type != vocab.TypeExit || e.PID != p.ExecID.PID || (!e.ExecID.IsZero() && e.ExecID != p.ExecID) {
					continue
				}
				if p.Role == "reuse1" || p.Role == "reuse2" {
					if e.ExecID.IsZero() {
						continue // which of the two, audit could not tell
					}
				}
				d := death{exitCode: e.ExitCode, signal: e.Signal, killed: e.Killed(), ids: e.ExecID}
				if e.KilledBy.Seen() {
					d.killer = e.KilledBy.Comm + "/" + e.KilledBy.Origin.String() + "/" + vocab.SigCodeName(e.Signal, e.KilledBy.Code)
				}
				out[p.Role] = d
			}
		}
		return out
	}
	a, e := deaths("audit"), deaths("ebpf")
	// eBPF sees every death.
	for _, role := range []string{"segv", "segvnocore", "kill9", "pipe", "timer", "oom", "exit3", "orphan", "grandchild", "reuse1", "reuse2", "main"} {
		if _, ok := e[role]; !ok {
			t.Errorf("ebpf: no exit event of %s", role)
		}
	}
	// Audit sees the exit calls and the core-dumping signals, nothing of
	// the other deaths (SIGKILL, SIGPIPE, SIGALRM, the OOM killer).
	for _, role := range []string{"kill9", "pipe", "timer", "oom"} {
		if d, ok := a[role]; ok {
			t.Errorf("audit reported the death of %s: %+v", role, d)
		}
	}
	for _, role := range []string{"segv", "segvnocore", "exit3", "orphan", "grandchild", "main"} {
		ad, ok := a[role]
		if !ok {
			t.Errorf("audit: no exit event of %s", role)
			continue
		}
		ed := e[role]
		if ad.exitCode != ed.exitCode || ad.signal != ed.signal || ad.killed != ed.killed {
			t.Errorf("%s: audit says %+v, ebpf %+v", role, ad, ed)
		}
		// The fault's sender is the kernel, which audit does not record.
		if ad.killer != "" {
			t.Errorf("%s: audit named a sender %q", role, ad.killer)
		}
		if deaths, _ := deathsOf["audit"].Proc(role, 0); !ad.ids.IsZero() && ad.ids != deaths.ExecID {
			t.Errorf("%s: audit exec_id %s, /proc says %s", role, ad.ids, deaths.ExecID)
		}
	}
	// deaths itself lived through its events: audit read its identity.
	if main, _ := deathsOf["audit"].Proc("main", 0); a["main"].ids != main.ExecID {
		t.Errorf("audit: deaths's exit exec_id %s, /proc says %s", a["main"].ids, main.ExecID)
	}
	// The kill(2): the same code and origin on both.
	for name, events := range got {
		main, _ := deathsOf[name].Proc("main", 0)
		victim, _ := deathsOf[name].Proc("kill9", 0)
		n := 0
		for _, ev := range events {
			if ev.Type == vocab.TypeSignal && ev.PID == main.ExecID.PID && ev.TargetPID == int32(victim.ExecID.PID) {
				n++
				if ev.Signal != 9 || ev.Code != vocab.SIUser || ev.Origin != vocab.OriginUser || ev.Syscall != "kill" || ev.ExecID != main.ExecID {
					t.Errorf("%s: kill event %+v", name, ev)
				}
			}
		}
		if n != 1 {
			t.Errorf("%s: %d kill events of deaths to its child", name, n)
		}
	}
}

// Cgroups a user names in a delegated subtree (a user manager's, a
// Delegate=yes unit's) pass for no service and no container on either
// backend: a process in .../user@UID.service/app.slice/sshd.service is
// the user's manager's, one in a scope's own docker-ID.scope is that
// scope's. A runtime's scope where runtimes make them still names its
// container.
func TestAttributionIgnoresDelegatedNames(t *testing.T) {
	tracertest.LockAudit(t)
	mount := tracertest.Cgroup2(t)
	const id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	pid := strconv.Itoa(os.Getpid())
	base := "/tracer-test-" + pid + ".slice"
	own := base + "/tracer-test-" + pid + ".scope"
	want := map[string]tracer.CgroupInfo{
		// A user's manager's subtree, as systemd lays it out.
		base + "/user-60000.slice/user@60000.service/app.slice/sshd.service": {Unit: "user@60000.service"},
		// A delegated scope of the test's own, holding what a runtime would make.
		own + "/system.slice/docker-" + id + ".scope": {Unit: "tracer-test-" + pid + ".scope"},
		own + "/docker/" + id:                         {Unit: "tracer-test-" + pid + ".scope"},
		// Where a runtime makes its scope.
		base + "/docker-" + id + ".scope": {ContainerID: id, Unit: "docker-" + id + ".scope"},
	}
	procs := map[string]string{}
	for cg := range want {
		procs[cg] = tracertest.MakeCgroup(t, mount, cg) + "/cgroup.procs"
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip(err)
	}
	for _, b := range []tracer.Backend{audit.New(), bpfbackend.New()} {
		t.Run(b.Name(), func(t *testing.T) {
			// Each shell moves itself into its cgroup, then execs sleep:
			// the exec is read while sleep runs (audit reads /proc then).
			pids := map[uint32]string{}
			events := watchWhile(t, b, func() {
				var cmds []*exec.Cmd
				for cg, p := range procs {
					cmd := exec.Command("sh", "-c", `echo $$ > "$1" && exec "$2" 1`, "sh", p, sleep)
					cmd.Stderr = os.Stderr
					if err := cmd.Start(); err != nil {
						t.Fatal(err)
					}
					pids[uint32(cmd.Process.Pid)] = cg
					cmds = append(cmds, cmd)
				}
				for _, cmd := range cmds {
					if err := cmd.Wait(); err != nil {
						t.Fatalf("moving into %s: %v", pids[uint32(cmd.Process.Pid)], err)
					}
				}
			}, func(evs []tracer.Event) bool {
				n := 0
				for _, e := range evs {
					if _, ok := pids[e.PID]; ok && e.Type == vocab.TypeExit {
						n++
					}
				}
				return n == len(pids)
			})
			seen := map[string]int{}
			for _, e := range events {
				cg, ok := pids[e.PID]
				if !ok || !(e.Type == vocab.TypeExec && e.Filename == sleep || e.Type == vocab.TypeExit) {
					continue
				}
				seen[cg]++
				w := want[cg]
				w.Path = cg
				if got := (tracer.CgroupInfo{Path: e.Cgroup, ContainerID: e.ContainerID, Unit: e.Unit}); got != w {
					t.Errorf("%s event in %s: %+v, want %+v", e.Type, cg, got, w)
				}
			}
			for cg := range want {
				if seen[cg] != 2 {
					t.Errorf("%d exec and exit events of sleep in %s, want 2", seen[cg], cg)
				}
			}
		})
	}
}
