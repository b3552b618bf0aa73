// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// TestFidelity runs one workload under tracer (both backends), laurel and
// the libbpf-tools at once, and checks that tracer saw every exec, fork,
// signal and exit each peer saw of the workload's process tree, with the
// fields the peer has agreeing: pid, ppid, uid, argv (to the smaller of
// the two caps), signal number and target, exit code or killing signal.
//
// What each peer can see, and so what is compared (docs/overhead.md,
// "Fidelity against the peers", says the same for operators):
//
//   - execsnoop (-U -q): successful execve calls (not execveat), read at
//     syscall entry: pid, ppid, uid; as arguments the filename in place of
//     argv[0], then argv[1:], at most 20 in all (--max-args), each cut to
//     127 bytes; " ..." when there were more (also, wrongly, for exactly
//     20). -q quotes each argument and escapes '"', tab and newline, but
//     not a backslash (the workload's arguments hold none).
//   - exitsnoop: every process end (not threads'): pid, ppid at exit, and
//     the wait status's low 16 bits, so an exit code only mod 256.
//   - sigsnoop: every signal generated (signal_generate), by a process or by
//     the kernel, in the context of the generating task: sender pid, signal,
//     target task; no uid, no syscall. SIGCHLD (the kernel's, at a child's
//     end) is not a signal tracer reports, and is left out.
//   - laurel: the audit records of its auditd's rules (tracer's, `tracer
//     rules --signal all`, with exit): every field of the SYSCALL record
//     (pid, ppid, uid, the arguments, hence a signal's target and number and
//     an exit code), the EXECVE record's arguments in full (no
//     execve-argv-limit-bytes in the packaged config), and ANOM_ABEND for a
//     death by a core-dumping signal; no other death by a signal.
//
// tracer's own limits, by backend (docs/events.md): argv at most 20
// arguments and 2,560 bytes; the audit backend sees no signal the kernel
// sends on its own (a fault's SIGSEGV) and no death by a signal that dumps
// no core (SIGKILL). Those the peers saw are counted and excused, by name.
//
// The node's auditd, when it runs, is stopped until the test ends and
// started again after, as `tracer bench --restart-auditd` does: laurel runs
// as the plugin of an auditd of the test's own.
func TestFidelity(t *testing.T) {
	tracertest.LockAudit(t)
	testFidelity(t)
}

func testFidelity(t *testing.T) {
	for _, tool := range []string{"laurel", "auditd", "auditctl", "execsnoop", "exitsnoop", "sigsnoop"} {
		if _, err := lookSbin(tool); err != nil {
			tracertest.MissingTool(t, tool+" is not installed: apt-get install -y laurel libbpf-tools auditd")
		}
	}
	bin := buildTracer(t)
	stopNodeAuditd(t)
	wl := tracertest.BuildWorkload(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rules0, err := listRules()
	if err != nil {
		t.Fatal(err)
	}
	holder, _ := auditHolder()

	newRun := func(name string) *Run {
		d := filepath.Join(dir, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		return &Run{Workload: &Workload{Name: "fidelity"}, Dir: d}
	}
	laurelMode, err := newMode("laurel", modeEnv{self: bin})
	if err != nil {
		t.Fatal(err)
	}
	laurelMode.(*auditdMode).events = "exec,fork,signal,exit"
	lm, err := newMode("libbpf-tools", modeEnv{self: bin})
	if err != nil {
		t.Fatal(err)
	}
	libbpf := lm.(*libbpfMode)
	libbpf.args = map[string][]string{"execsnoop": {"-U", "-q"}}
	auditMode, err := newMode("audit", modeEnv{self: bin})
	if err != nil {
		t.Fatal(err)
	}
	ebpfMode, err := newMode("ebpf", modeEnv{self: bin})
	if err != nil {
		t.Fatal(err)
	}
	auditMode.(*tracerMode).events = "all"
	ebpfMode.(*tracerMode).events = "all"
	// laurel's auditd first: it takes the audit PID, and tracer's audit
	// backend then reads the multicast copy of the records beside it.
	modes := []struct {
		name string
		m    Mode
		run  *Run
	}{
		{"laurel", laurelMode, newRun("laurel")},
		{"libbpf-tools", libbpf, newRun("libbpf-tools")},
		{"audit", auditMode, newRun("audit")},
		{"ebpf", ebpfMode, newRun("ebpf")},
	}
	started := 0
	defer func() {
		for _, m := range modes[:started] {
			if err := m.m.Teardown(); err != nil {
				t.Errorf("%s: teardown: %v", m.name, err)
			}
		}
		if after, _ := listRules(); !slices.Equal(after, rules0) {
			t.Errorf("audit rules after the test %q, before %q", after, rules0)
		}
		if pid, comm := auditHolder(); pid != holder {
			t.Errorf("process %d (%s) holds the audit PID after the test, %d before", pid, comm, holder)
		}
	}()
	for _, m := range modes {
		if err := m.m.Setup(ctx); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		t0 := time.Now()
		if err := m.m.Start(ctx, m.run); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		started++
		t.Logf("%s watching after %s", m.name, time.Since(t0).Round(time.Millisecond))
	}

	cmd := exec.CommandContext(ctx, wl, fidelityWorkload(wl)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("workload: %v\n%s", err, out)
	}
	root := uint32(cmd.Process.Pid)

	for _, m := range slices.Backward(modes) {
		m.run.RootPID = int(root)
		t0 := time.Now()
		obs, err := m.m.Stop(ctx, m.run)
		t.Logf("%s stopped in %s", m.name, time.Since(t0).Round(time.Millisecond))
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		if obs.Lost != 0 {
			// Node-wide (another process's signal storm): whether the
			// workload's events were among them, the counts below say.
			t.Logf("%s lost %d events node-wide: %s", m.name, obs.Lost, obs.Note)
		}
	}

	trAudit := readTracerEvents(t, auditMode.(*tracerMode).logPath(modes[2].run))
	trEBPF := readTracerEvents(t, ebpfMode.(*tracerMode).logPath(modes[3].run))
	peers := map[string][]fidEvent{
		"execsnoop": readExecsnoop(t, libbpf.out("execsnoop")),
		"exitsnoop": readExitsnoop(t, libbpf.out("exitsnoop")),
		"sigsnoop":  readSigsnoop(t, libbpf.out("sigsnoop")),
		"laurel":    readLaurel(t, filepath.Join(modes[0].run.Dir, "laurel", "audit.log")),
	}
	var all []fidEvent
	all = append(all, trAudit...)
	all = append(all, trEBPF...)
	for _, evs := range peers {
		all = append(all, evs...)
	}
	tree := fidTree(all, root)
	trAudit, trEBPF = tree.keep(trAudit), tree.keep(trEBPF)
	for p, evs := range peers {
		peers[p] = tree.keep(evs)
	}
	// The kernel's own signals, as the eBPF backend saw them: audit
	// cannot see them.
	kernelSignals := map[string]bool{}
	for _, e := range trEBPF {
		if e.Type == vocab.TypeSignal && e.Origin == vocab.OriginKernel {
			kernelSignals[e.key()] = true
		}
	}
	auditExcuse := func(p fidEvent) string {
		switch {
		case p.Type == vocab.TypeSignal && kernelSignals[p.key()]:
			return "a signal the kernel sent on its own"
		case p.Type == vocab.TypeExit && p.Signal != 0 && !vocab.DumpsCore(p.Signal):
			return "a death by a signal that dumps no core"
		}
		return ""
	}
	backends := []struct {
		name   string
		evs    []fidEvent
		excuse func(fidEvent) string
	}{
		{"ebpf", trEBPF, func(fidEvent) string { return "" }},
		{"audit", trAudit, auditExcuse},
	}
	for _, b := range backends {
		for _, p := range []string{"laurel", "execsnoop", "exitsnoop", "sigsnoop"} {
			r := compareFidelity(p, peers[p], b.evs, b.excuse)
			t.Logf("%s vs %s: %s", b.name, p, r.summary())
			for _, d := range r.diffs {
				t.Errorf("%s vs %s: %s", b.name, p, d)
			}
		}
	}
	// The workload's own events, whoever saw them: every peer must have
	// seen something of each kind it watches, or the comparison above
	// compared nothing.
	want := map[string]map[vocab.Type]int{
		"laurel":    {vocab.TypeExec: fidelityExecs, vocab.TypeFork: fidelityForks, vocab.TypeSignal: fidelitySignals, vocab.TypeExit: fidelityCodeExits + 2},
		"execsnoop": {vocab.TypeExec: fidelityExecs},
		"exitsnoop": {vocab.TypeExit: fidelityForks + 1},
		"sigsnoop":  {vocab.TypeSignal: fidelitySignals + 1},
	}
	for p, w := range want {
		got := map[vocab.Type]int{}
		for _, e := range peers[p] {
			got[e.Type]++
		}
		for typ, n := range w {
			if got[typ] != n {
				t.Errorf("%s saw %d %s events of the workload, want %d", p, got[typ], typ, n)
			}
		}
	}

	// The comparison itself can fail: against the eBPF backend's events
	// with one signal left out, one exit code changed and one byte of an
	// argument changed, each peer finds what it can see of that.
	doctored := slices.Clone(trEBPF)
	i := slices.IndexFunc(doctored, func(e fidEvent) bool { return e.Type == vocab.TypeExit && e.HasCode && e.ExitCode == 3 })
	j := slices.IndexFunc(doctored, func(e fidEvent) bool {
		return e.Type == vocab.TypeExec && e.Filename == "/bin/true" && slices.Contains(e.Argv, "new\nline")
	})
	k := slices.IndexFunc(doctored, func(e fidEvent) bool { return e.Type == vocab.TypeSignal && e.Signal == 12 })
	if i < 0 || j < 0 || k < 0 {
		t.Fatalf("the eBPF backend saw no exit 3, no exec with the odd arguments, or no SIGUSR2")
	}
	doctored[i].ExitCode = 4
	doctored[j].Argv = slices.Clone(doctored[j].Argv)
	doctored[j].Argv[slices.Index(doctored[j].Argv, "new\nline")] = "new\nlinE"
	doctored = slices.Delete(doctored, k, k+1)
	for p, want := range map[string]int{"laurel": 3, "execsnoop": 1, "exitsnoop": 1, "sigsnoop": 1} {
		r := compareFidelity(p, peers[p], doctored, func(fidEvent) string { return "" })
		if len(r.diffs) != want {
			t.Errorf("%s against a doctored eBPF log: %d differences, want %d", p, len(r.diffs), want)
		}
		for _, d := range r.diffs {
			t.Logf("doctored eBPF log vs %s, as it should: %s", p, d)
		}
	}
}

// stopNodeAuditd stops the node's auditd, as `tracer bench
// --restart-auditd` does, until the test ends: laurel runs as the plugin of
// an auditd of the test's own, which needs the audit PID. The bench's state
// file says what to put back should the test be killed (`tracer cleanup`).
func stopNodeAuditd(t *testing.T) {
	t.Helper()
	a, err := findNodeAuditd()
	if err != nil {
		t.Fatal(err)
	}
	if a == nil {
		if pid, comm := auditHolder(); pid != 0 {
			t.Skipf("process %d (%s) holds the audit PID: laurel runs as the plugin of an auditd of the test's own", pid, comm)
		}
		return
	}
	if why := a.restartable(); why != "" {
		t.Skipf("%s: laurel runs as the plugin of an auditd of the test's own", why)
	}
	st := &benchState{PID: os.Getpid(), StoppedAuditd: a}
	if st.Audit, err = readAuditSettings(); err != nil {
		t.Fatal(err)
	}
	if a.Rules, err = nodeOwnRules(); err != nil {
		t.Fatal(err)
	}
	if err := st.write(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		done, err := st.undo()
		if err != nil {
			t.Errorf("starting the node's auditd again: %v", err)
		}
		st.remove()
		t.Logf("after the test: %s", strings.Join(done, "; "))
	})
	t.Logf("stopping the node's auditd (pid %d) until the test ends", a.PID)
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
}

// The workload's known events (the root process's own exec included).
const (
	fidelityExecs     = 11 // root's, 4 argvs, exit 0, 3, 255, segv, uid and its /bin/true
	fidelityForks     = 14 // 9 execv, 2 forks, 2 victims, uid's exec
	fidelitySignals   = 6  // USR1, USR2, KILL to one victim; HUP, TERM, SEGV to the other
	fidelityCodeExits = 12 // the 15 processes but the 3 killed by a signal
)

// fidelityWorkload is the workload's command line (workload.c): execs
// with arguments beyond every cap and with odd bytes, forks, signals to
// other processes, exits with codes 0, 3 and 255, by SIGKILL and by
// SIGSEGV (sent, and a real fault), and an exec as another user.
func fidelityWorkload(wl string) []string {
	odd := []string{"with space", `"double" 'single'`, "new\nline", "tab\there", "\xff\xfe not UTF-8 \xc3\x28", "", "-", "ünïcödé", "%41 percent"}
	var many []string
	for i := 1; i <= 25; i++ {
		many = append(many, fmt.Sprintf("arg%02d", i))
	}
	var big []string
	for i := 0; i < 12; i++ {
		big = append(big, strings.Repeat(string(rune('a'+i)), 250))
	}
	long := strings.Repeat("L", 300)
	var args []string
	execv := func(path string, a ...string) {
		args = append(append(args, "execv", path, strconv.Itoa(len(a))), a...)
	}
	execv("/bin/true", odd...)
	execv("/bin/true", many...)
	execv("/bin/true", big...)
	// An argument past the audit's EXECVE record size, which the kernel
	// splits across records (a3_len=, a3[0]=, a3[1]=...).
	execv("/bin/true", long, "x", long+"y", strings.Repeat("M", 10000))
	args = append(args, "fork", "2")
	execv(wl, "exit", "0")
	execv(wl, "exit", "3")
	execv(wl, "exit", "255")
	execv(wl, "segv")
	// SIGUSR1 and SIGUSR2 (blocked), then SIGKILL; SIGHUP and SIGTERM, then SIGSEGV.
	args = append(args, "victim", "9", "2", "10", "12", "victim", "11", "2", "1", "15")
	execv(wl, "uid", "65534", "exec", "1", "/bin/true")
	return args
}
