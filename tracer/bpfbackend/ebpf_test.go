// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfbackend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracefs"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// n and m are the workload's counts per syscall (m: signals outside the filter).
const n, m = 3, 2

// workloadArgs makes n events of each kind, one failed exec, n orphaned
// grandchildren that exec from pages their fork did not copy, m SIGUSR2,
// and exits 7.
func workloadArgs() []string {
	N, M := strconv.Itoa(n), strconv.Itoa(m)
	return []string{"exec", N, "/bin/true", "execfail", "1", "fork", N, "vfork", N, "clone", N, "clone3", N,
		"doublefork", N, "kill", N, "10", "tkill", N, "10", "tgkill", N, "10", "kill", M, "12", "exit", "7"}
}

// held is a command started under sh, waiting on its stdin before it execs
// the real program: the backend is scoped to its pid before it does anything.
type held struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func startHeld(t *testing.T, bin string, args ...string) *held {
	t.Helper()
	return startHeldIn(t, os.Stderr, "", bin, args...)
}

// startHeldIn is startHeld with the command's output and directory.
func startHeldIn(t *testing.T, stdout io.Writer, dir, bin string, args ...string) *held {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{"-c", `read _ && exec "$0" "$@"`, bin}, args...)...)
	cmd.Stdout, cmd.Stderr, cmd.Dir = stdout, os.Stderr, dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return &held{cmd: cmd, stdin: stdin}
}

func (h *held) pid() uint32 { return uint32(h.cmd.Process.Pid) }

// run lets the command exec and waits for it; it returns its exit status.
func (h *held) run(t *testing.T) int {
	t.Helper()
	if _, err := io.WriteString(h.stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	err := h.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return h.cmd.ProcessState.ExitCode()
}

// runScoped traces the workload with cfg scoped to its pid, in the kernel
// only (no user-space filter), and returns every event delivered.
func runScoped(t *testing.T, b *Backend, cfg tracer.Config, bin string, args ...string) ([]tracer.Event, uint32) {
	t.Helper()
	h := startHeld(t, bin, args...)
	cfg.PID = h.pid()
	var c tracertest.Collector
	var all []tracer.Event
	stop := startRun(t, b, cfg, func(e *tracer.Event) {
		c.Emit(e)
		all = append(all, *e)
	})
	if code := h.run(t); code != 7 {
		t.Errorf("workload exit status %d, want 7", code)
	}
	// Every event was written before the process ended: Run must deliver
	// what is queued when ctx ends.
	stop()
	tree := c.Tree(cfg.PID)
	if len(all) != len(tree) { // the kernel let through an event outside the tree
		for _, e := range all {
			if !slices.ContainsFunc(tree, func(t tracer.Event) bool { return t.PID == e.PID }) {
				t.Errorf("event outside the tree of %d: %+v", cfg.PID, e)
			}
		}
	}
	return tree, cfg.PID
}

// traceHeld traces the workload bin args with cfg scoped to its pid,
// delivers every event to emit until it exited and Run drained the ring,
// and returns the backend (closed at the end of the test) for its Stats.
func traceHeld(t *testing.T, cfg tracer.Config, emit func(*tracer.Event), bin string, args ...string) *Backend {
	t.Helper()
	b := New()
	h := startHeld(t, bin, args...)
	cfg.PID = h.pid()
	stop := startRun(t, b, cfg, emit)
	h.run(t)
	stop()
	return b
}

// startRun starts b with cfg (closed at the end of the test) and runs it,
// delivering every event to emit, until stop: stop ends Run once it has
// delivered what was queued, and fails the test if Run failed.
func startRun(t *testing.T, b *Backend, cfg tracer.Config, emit func(*tracer.Event)) (stop func()) {
	t.Helper()
	if err := b.Start(cfg); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx, emit) }()
	return func() {
		t.Helper()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
}

func allTypes() vocab.TypeSet {
	ts, _ := vocab.ParseTypes("all")
	return ts
}

func usr1() vocab.SignalSet {
	s, _ := vocab.ParseSignals("USR1")
	return s
}

// wantKeys is the multiset of tracertest.Key the workload makes with the
// signal filter USR1, for the sched probe set; the syscalls set also sees
// the failed exec.
func wantKeys(bin string, failedExec bool) map[string]int {
	want := map[string]int{
		"exec sh " + bin:                 1,
		"exec workload /bin/true":        3 * n, // exec, the clone3 (posix_spawn) children, the grandchildren
		"fork workload vfork":            n + 1 + n,
		"fork workload fork":             n + 2*n,
		"fork workload clone":            n,
		"fork workload clone3":           n,
		"signal workload kill SIGUSR1":   n,
		"signal workload tkill SIGUSR1":  n,
		"signal workload tgkill SIGUSR1": n,
		"exit true":                      3 * n,
		"exit workload":                  1 + n + n + n + n + 1, // execfail, fork, vfork, clone, doublefork children, root
	}
	if failedExec {
		want["exec workload /nonexistent/tracer-enoent failed"] = 1
	}
	return want
}

func keys(events []tracer.Event) map[string]int {
	got := map[string]int{}
	for _, e := range events {
		got[tracertest.Key(e)]++
	}
	return got
}

func diffKeys(t *testing.T, got, want map[string]int) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k] != want[k] {
			t.Errorf("%q: %d events, want %d", k, got[k], want[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			t.Errorf("%q: %d unexpected events", k, got[k])
		}
	}
}

func loginUID(t *testing.T) uint32 {
	b, err := os.ReadFile("/proc/self/loginuid")
	if err != nil {
		return vocab.UnsetID
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(v)
}

// checkFields checks what the keys do not: pids, targets, argv, exit codes.
func checkFields(t *testing.T, events []tracer.Event, root uint32, start time.Time) {
	t.Helper()
	auid := loginUID(t)
	pids := map[uint32]bool{}
	for _, e := range events {
		pids[e.PID] = true
	}
	var rootExit bool
	for _, e := range events {
		if e.Backend != "ebpf" || e.UID != 0 || e.AUID != auid {
			t.Errorf("%s event: backend %q uid %d auid %d, want ebpf 0 %d", e.Type, e.Backend, e.UID, e.AUID, auid)
		}
		if e.Time.Before(start.Add(-20*time.Millisecond)) || e.Time.After(time.Now().Add(20*time.Millisecond)) {
			t.Errorf("%s event at %v, outside the test's run from %v", e.Type, e.Time, start)
		}
		switch e.Type {
		case vocab.TypeExec:
			wantPPID := root
			if e.PID == root {
				wantPPID = uint32(os.Getpid())
			}
			if len(e.Argv) == 1 && e.Argv[0] == "/bin/true" {
				wantPPID = e.PPID // an orphan: reparented to a subreaper or init
			}
			if e.PPID != wantPPID {
				t.Errorf("exec %s by %d: ppid %d, want %d", e.Filename, e.PID, e.PPID, wantPPID)
			}
			if e.Filename == "/bin/true" && !slices.Equal(e.Argv, []string{"/bin/true", "arg1"}) &&
				!slices.Equal(e.Argv, []string{"true"}) && !slices.Equal(e.Argv, []string{"/bin/true"}) {
				t.Errorf("exec /bin/true argv %q", e.Argv)
			}
		case vocab.TypeFork:
			if !pids[e.PID] || !pids[e.ChildPID] || e.ChildPID == root {
				t.Errorf("fork by %d: child %d is not a process of the tree", e.PID, e.ChildPID)
			}
		case vocab.TypeSignal:
			if e.TargetPID != int32(root) || e.Signal != 10 || e.Ret != 0 {
				t.Errorf("signal %+v: want target %d, SIGUSR1, ret 0", e, root)
			}
		case vocab.TypeExit:
			if e.PID == root {
				rootExit = true
				if e.ExitCode != 7 {
					t.Errorf("root exit code %d, want 7", e.ExitCode)
				}
			} else if e.ExitCode != 0 && e.ExitCode != 127 {
				t.Errorf("child %d exit code %d", e.PID, e.ExitCode)
			}
		}
	}
	if !rootExit {
		t.Errorf("no exit event of the root %d", root)
	}
}

// The workload's exact events per syscall, scoped in the kernel to its
// process tree, with the signal filter applied in the kernel.
func TestWorkloadEvents(t *testing.T) {
	tracertest.NeedRoot(t)
	bin := tracertest.BuildWorkload(t)
	for _, c := range []struct {
		name       string
		probes     string
		force      func(*tracer.Config)
		failedExec bool
	}{
		{"default", "", nil, false},
		{"syscalls", ProbesSyscalls, nil, true},
		// By default the syscalls set reports successful execs only, as
		// the sched set and audit do.
		{"syscalls without --exec-failures", ProbesSyscalls, nil, false},
		{"syscalls with raw tracepoints", ProbesSyscalls, func(cfg *tracer.Config) { cfg.Attach = AttachTracepoint }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := New()
			cfg := tracer.DefaultConfig()
			cfg.Types, cfg.Signals, cfg.Probes = allTypes(), usr1(), c.probes
			if c.force != nil {
				c.force(&cfg)
			}
			cfg.ExecFailures = c.failedExec
			start := time.Now()
			all, root := runScoped(t, b, cfg, bin, workloadArgs()...)
			t.Logf("%+v: %d events", b.Features(), len(all))
			diffKeys(t, keys(all), wantKeys(bin, c.failedExec))
			checkFields(t, all, root, start)
			st := b.Stats()
			if st.TotalLost() != 0 || st.TotalEvents() != uint64(len(all)) {
				t.Errorf("stats: %d events, lost %v; delivered %d", st.TotalEvents(), st.Lost, len(all))
			}
			// Every process of the tree has exited: none stays tracked.
			var pid uint32
			var one uint8
			if it := b.coll.Maps["tracked"].Iterate(); it.Next(&pid, &one) {
				t.Errorf("pid %d still in the tracked set after the tree exited", pid)
			}
			if c.failedExec {
				for _, e := range all {
					if e.Type == vocab.TypeExec && e.Filename == "/nonexistent/tracer-enoent" && e.Ret != -2 {
						t.Errorf("failed exec ret %d, want -2 (ENOENT)", e.Ret)
					}
				}
			}
		})
	}
}

// The kernel's filters: event classes, comm, all signals.
func TestKernelFilters(t *testing.T) {
	tracertest.NeedRoot(t)
	bin := tracertest.BuildWorkload(t)
	t.Run("signals of one comm", func(t *testing.T) {
		cfg := tracer.DefaultConfig()
		cfg.Types = vocab.TypeSet(0).With(vocab.TypeSignal)
		cfg.Comms = []string{"workload"}
		evs, _ := runScoped(t, New(), cfg, bin, workloadArgs()...)
		diffKeys(t, keys(evs), map[string]int{
			"signal workload kill SIGUSR1":   n,
			"signal workload tkill SIGUSR1":  n,
			"signal workload tgkill SIGUSR1": n,
			"signal workload kill SIGUSR2":   m,
		})
	})
	t.Run("no such comm", func(t *testing.T) {
		cfg := tracer.DefaultConfig()
		cfg.Types, cfg.Comms = allTypes(), []string{"nosuchcomm"}
		if evs, _ := runScoped(t, New(), cfg, bin, workloadArgs()...); len(evs) != 0 {
			t.Errorf("%d events of comm %q", len(evs), evs[0].Comm)
		}
	})
}

func wantCounts(bin string, failedExec bool) *tracer.Counts {
	c := tracer.NewCounts()
	c.Exec[tracer.ExecKey{Comm: "sh", Filename: bin}] = 1
	c.Exec[tracer.ExecKey{Comm: "workload", Filename: "/bin/true"}] = 3 * n
	c.Fork["workload"] = 7*n + 1
	c.Signals[tracer.SignalKey{Comm: "workload", Signal: 10}] = 3 * n // Target set by the caller
	c.SetTotal(vocab.TypeExec, 3*n+1)
	c.SetTotal(vocab.TypeFork, 7*n+1)
	c.SetTotal(vocab.TypeSignal, 3*n)
	c.SetTotal(vocab.TypeExit, 7*n+2)
	if failedExec {
		c.Exec[tracer.ExecKey{Comm: "workload", Filename: "/nonexistent/tracer-enoent"}] = 1
		c.SetTotal(vocab.TypeExec, 3*n+2)
	}
	return c
}

func compareCounts(t *testing.T, got, want *tracer.Counts, root uint32) {
	t.Helper()
	for k, v := range want.Signals {
		delete(want.Signals, k)
		k.Target = int32(root)
		want.Signals[k] = v
	}
	if !maps.Equal(got.Exec, want.Exec) {
		t.Errorf("exec counts %v, want %v", got.Exec, want.Exec)
	}
	if !maps.Equal(got.Fork, want.Fork) {
		t.Errorf("fork counts %v, want %v", got.Fork, want.Fork)
	}
	if !maps.Equal(got.Signals, want.Signals) {
		t.Errorf("signal counts %v, want %v", got.Signals, want.Signals)
	}
	if got.Totals != want.Totals || got.Lost != 0 {
		t.Errorf("totals %v lost %d, want %v lost 0", got.Totals, got.Lost, want.Totals)
	}
}

// Counting mode: per-key counts in kernel maps, nothing streamed; the tree
// given in Config.PID. By default it counts at the syscall tracepoints;
// failed execs with Config.ExecFailures.
func TestCountOnly(t *testing.T) {
	tracertest.NeedRoot(t)
	bin := tracertest.BuildWorkload(t)
	for _, c := range []struct {
		name       string
		probes     string
		failedExec bool
	}{
		{"default (syscalls)", "", true},
		{"sched", ProbesSched, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := tracer.DefaultConfig()
			cfg.Types, cfg.Signals, cfg.Probes, cfg.CountOnly = allTypes(), usr1(), c.probes, true
			cfg.ExecFailures = c.failedExec
			b := New()
			h := startHeld(t, bin, workloadArgs()...)
			cfg.PID = h.pid()
			if err := b.Start(cfg); err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			ctx, cancel := context.WithCancel(context.Background())
			delivered := 0
			done := make(chan error, 1)
			go func() { done <- b.Run(ctx, func(*tracer.Event) { delivered++ }) }()
			if code := h.run(t); code != 7 {
				t.Errorf("exit status %d", code)
			}
			cancel()
			if err := <-done; err != nil || delivered != 0 {
				t.Errorf("Run in counting mode: %v, %d events delivered", err, delivered)
			}
			got, err := b.Counts()
			if err != nil {
				t.Fatal(err)
			}
			compareCounts(t, got, wantCounts(bin, c.failedExec), h.pid())
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			after, err := b.Counts()
			if err != nil || !maps.Equal(after.Fork, got.Fork) || after.Totals != got.Totals {
				t.Errorf("Counts after Close: %v, %v; want %v", after, err, got)
			}
		})
	}
}

// A full ring buffer loses records; the kernel counts each event, so that
// delivered + lost is what happened: records of their own (signals that
// differ from the one before), and a storm's repeats of one record. A full
// perf buffer's lost samples, which it reports per CPU, count in the same
// stage.
func TestRingFullIsCounted(t *testing.T) {
	tracertest.NeedRoot(t)
	bin := tracertest.BuildWorkload(t)
	const pairs, repeats = 2500, 5000
	const kills = 2*pairs + repeats
	for _, transport := range []string{TransportRingbuf, TransportPerf} {
		t.Run(transport, func(t *testing.T) {
			cfg := tracer.DefaultConfig()
			cfg.Types, cfg.RingBytes, cfg.Transport = vocab.TypeSet(0).With(vocab.TypeSignal), os.Getpagesize(), transport
			b := New()
			var args []string
			for range pairs {
				args = append(args, "kill", "1", "10", "tkill", "1", "12")
			}
			h := startHeld(t, bin, append(args, "kill", strconv.Itoa(repeats), "10", "exit", "7")...)
			cfg.PID = h.pid()
			if err := b.Start(cfg); err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			h.run(t) // no reader yet: the ring fills
			delivered := 0
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // Run still drains what is queued
			if err := b.Run(ctx, func(*tracer.Event) { delivered++ }); err != nil {
				t.Fatal(err)
			}
			st := b.Stats()
			lost := st.Lost[tracer.LostRingbuf]
			t.Logf("%s: delivered %d, lost %d", b.Features().Transport, delivered, lost)
			if delivered == 0 || lost == 0 || uint64(delivered)+lost != kills || st.TotalEvents() != uint64(delivered) {
				t.Errorf("delivered %d + lost %d, want %d (stats %+v)", delivered, lost, kills, st)
			}
		})
	}
}

// Close removes every program and map, and the tracefs mount Start made.
func TestCloseLeavesNothing(t *testing.T) {
	tracertest.NeedRoot(t)
	hadTracefs := tracefs.Mounted()
	cfg := tracer.DefaultConfig()
	cfg.Probes, cfg.BPFStats = ProbesSyscalls, true
	b := New()
	if err := b.Start(cfg); err != nil {
		t.Fatal(err)
	}
	var progs []ebpf.ProgramID
	for _, p := range b.coll.Programs {
		info, err := p.Info()
		if err != nil {
			t.Fatal(err)
		}
		id, _ := info.ID()
		progs = append(progs, id)
	}
	st := b.Stats()
	if len(st.Programs) == 0 {
		t.Error("no per-program statistics with BPFStats")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for _, id := range progs {
		if p, err := ebpf.NewProgramFromID(id); err == nil {
			p.Close()
			t.Errorf("program %d still loaded after Close", id)
		}
	}
	if tracefs.Mounted() != hadTracefs {
		t.Errorf("tracefs mounted: %v before Start, %v after Close", hadTracefs, tracefs.Mounted())
	}
	if err := b.Start(cfg); err == nil {
		t.Error("Start after Close succeeded")
	}
}

func TestStartRejectsBadConfig(t *testing.T) {
	for name, cfg := range map[string]tracer.Config{
		"ring size not a power of two":  {RingBytes: 10000},
		"ring size below a page":        {RingBytes: 64},
		"unknown probe set":             {Probes: "kprobes"},
		"comm longer than the kernel's": {Comms: []string{"a-very-long-command-name"}},
	} {
		err := New().Start(cfg)
		if !errors.Is(err, vocab.ErrUsage) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want a one-line usage error", name, err)
		}
	}
}

// Not root: a one-line usage error that says what to do, before loading
// anything. As root, the test runs itself again as nobody.
func TestNotRootIsUsageError(t *testing.T) {
	if os.Getenv("TRACER_EBPF_NOT_ROOT") == "1" {
		err := New().Start(tracer.DefaultConfig())
		if !errors.Is(err, vocab.ErrUsage) || !strings.Contains(err.Error(), "root") {
			fmt.Println("WRONG:", err)
			os.Exit(1)
		}
		fmt.Println("usage error:", err)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("runs itself as nobody, which needs root")
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} { // nobody must reach the binary
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "ebpf.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestNotRootIsUsageError$", "-test.v")
	cmd.Env = append(os.Environ(), "TRACER_EBPF_NOT_ROOT=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "usage error:") {
		t.Errorf("as nobody: %v\n%s", err, out)
	}
}

// TestSignalStormIdentityChanges renames the sender and changes its uid
// between kill loops, within a tick: each event carries the comm and uid
// the sender had when it sent it, though the kernel batches a kill loop
// as one record with a repeat count.
func TestSignalStormIdentityChanges(t *testing.T) {
	// A storm of signals floods every audit test running beside it
	// (the audit tests watch SIGUSR1 too): storms take the audit lock.
	tracertest.LockAudit(t)
	bin := tracertest.BuildWorkload(t)
	const kills = 2000
	cfg := tracer.DefaultConfig()
	cfg.Types = vocab.TypeSet(0).With(vocab.TypeSignal)
	type who struct {
		comm   string
		uid    uint32
		events int
	}
	var got []who
	b := traceHeld(t, cfg, func(e *tracer.Event) {
		if e.Type == vocab.TypeSignal {
			if n := len(got); n == 0 || got[n-1].comm != e.Comm || got[n-1].uid != e.UID {
				got = append(got, who{e.Comm, e.UID, 0})
			}
			got[len(got)-1].events++
		}
	}, bin, "kill", strconv.Itoa(kills), "10", "comm", "renamed", "kill", strconv.Itoa(kills), "10",
		"uid", "65534", "kill", strconv.Itoa(kills), "10", "exit", "0")
	want := []who{{filepath.Base(bin), 0, kills}, {"renamed", 0, kills}, {"renamed", 65534, kills}}
	if !slices.Equal(got, want) {
		t.Errorf("senders in order %v, want %v", got, want)
	}
	if st := b.Stats(); st.TotalEvents() != 3*kills || st.TotalLost() != 0 {
		t.Errorf("%d events, lost %v; want %d", st.TotalEvents(), st.Lost, 3*kills)
	}
}

// TestSignalOrderAcrossCPUs moves a process from CPU to CPU in the middle
// of kill loops: the signals it sent on one CPU, batched there, come
// before those it sends on the next, as it sent them.
func TestSignalOrderAcrossCPUs(t *testing.T) {
	// A storm of signals floods every audit test running beside it
	// (the audit tests watch SIGUSR1 too): storms take the audit lock.
	tracertest.LockAudit(t)
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs: this tests a process moving between them")
	}
	bin := tracertest.BuildWorkload(t)
	const kills, moves = 3000, 12
	args := []string{"cpu", "0"}
	var want []int
	for m := range moves {
		args = append(args, "kill", strconv.Itoa(kills), "10", "cpu", strconv.Itoa((m+1)%2), "tkill", "1", "12")
		for range kills {
			want = append(want, 10)
		}
		want = append(want, 12)
	}
	args = append(args, "exit", "0")
	cfg := tracer.DefaultConfig()
	cfg.Types = vocab.TypeSet(0).With(vocab.TypeSignal)
	var sigs []int
	b := traceHeld(t, cfg, func(e *tracer.Event) {
		if e.Type == vocab.TypeSignal {
			sigs = append(sigs, e.Signal)
		}
	}, bin, args...)
	if !slices.Equal(sigs, want) {
		var at []int
		for i, s := range sigs {
			if s == 12 {
				at = append(at, i)
			}
		}
		t.Errorf("%d signals, SIGUSR2 at %v; want %d, SIGUSR2 after every %d SIGUSR1", len(sigs), at, len(want), kills)
	}
	if st := b.Stats(); st.TotalLost() != 0 {
		t.Errorf("lost %v", st.Lost)
	}
}

// A signal storm at the default ring size: every signal delivered, none
// lost, in the order sent (the per-CPU batches keep it).
func TestSignalStormDelivered(t *testing.T) {
	// A storm of signals floods every audit test running beside it
	// (the audit tests watch SIGUSR1 too): storms take the audit lock.
	tracertest.LockAudit(t)
	bin := tracertest.BuildWorkload(t)
	const kills = 50000
	cfg := tracer.DefaultConfig()
	cfg.Types = vocab.TypeSet(0).With(vocab.TypeSignal).With(vocab.TypeExit)
	var sigs []int
	exits := 0
	b := traceHeld(t, cfg, func(e *tracer.Event) {
		switch e.Type {
		case vocab.TypeSignal:
			sigs = append(sigs, e.Signal)
		case vocab.TypeExit:
			exits++
		}
	}, bin, "kill", strconv.Itoa(kills), "10", "tkill", "1", "12", "exit", "7")
	if len(sigs) != kills+1 || sigs[kills] != 12 || exits != 1 || slices.Index(sigs, 12) != kills {
		t.Errorf("%d signals (last %v), %d exits; want %d SIGUSR1 then one SIGUSR2, one exit", len(sigs), sigs[max(0, len(sigs)-1):], exits, kills)
	}
	if st := b.Stats(); st.TotalLost() != 0 {
		t.Errorf("lost %v", st.Lost)
	}
}
