// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/tracer-dev/tracer/tracer/sink"
	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// Flags that would match nothing, or be ignored, are refused in one line.
func TestFirstHourRefusals(t *testing.T) {
	if os.Geteuid() == 0 && !testing.Short() {
		tracertest.LockAudit(t) // a refusal that failed would watch with audit
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"watch", "--backend", "ebpf", "--pid", "999999"}, "--pid 999999: no such process"},
		{[]string{"watch", "--backend", "ebpf", "--pid", "1,999999"}, "--pid 999999: no such process"},
		{[]string{"watch", "--backend", "ebpf", "--target", "999999"}, "--target 999999: no such process"},
		{[]string{"watch", "--backend", "audit", "--comm", "averyveryverylongcommname"}, "longer than the kernel's 15-byte comm"},
		{[]string{"watch", "--backend", "ebpf", "--comm", "bash,averyveryverylongcommname"}, "longer than the kernel's 15-byte comm"},
		{[]string{"watch", "--backend", "audit", "--events", "exec", "--signal", "USR1"}, "add signal to --events"},
		{[]string{"rules", "--events", "exec", "--signal", "USR1"}, "add signal to --events"},
		{[]string{"trace", "--backend", "ebpf"}, "trace needs a command to run: tracer trace --backend ebpf -- CMD"},
		{[]string{"watch", "--backend", "ebpf", "--exe", "true", "--events", "exec,fork"}, "use --events exec"},
		{[]string{"watch", "--backend", "ebpf", "--exe", "true", "--target", "1"}, "give one of them"},
		{[]string{"watch", "--backend", "ebpf", "--max-args", "21"}, "give 1 to 20"},
		{[]string{"watch", "--backend", "ebpf", "--uid", "root"}, "bad --uid"},
		{[]string{"watch", "--backend", "ebpf", "--time", "epoch"}, "unknown --time"},
		{[]string{"watch", "--backend", "ebpf", "--time", "iso", "--format", "json"}, "--time is for text output"},
	} {
		code, stdout, stderr := runTracerWithin(t, 10*time.Second, c.args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("tracer %v: exit %d, stderr %q (want exit 2 and one line containing %q)", c.args, code, stderr, c.want)
		}
	}
}

// runTracerWithin is runTracer for commands that might run on forever
// (exit -1: killed after limit).
func runTracerWithin(t *testing.T, limit time.Duration, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, tracerBin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return -1, stdout.String(), stderr.String()
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), stdout.String(), stderr.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, stdout.String(), stderr.String()
}

func TestVersionCommand(t *testing.T) {
	code, stdout, stderr := runTracer(t, nil, "version")
	for _, want := range []string{"tracer ", "\ngo go1.", "\ncilium/ebpf v", "\ngo-libaudit v"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("tracer version: exit %d, %q, stderr %q: no %q", code, stdout, stderr, want)
		}
	}
}

// The man pages name every command users can run.
func TestManPage(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runTracer(t, nil, "man", dir); code != 0 {
		t.Fatalf("tracer man: exit %d: %s", code, stderr)
	}
	page, err := os.ReadFile(filepath.Join(dir, "tracer.8"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `.TH "TRACER" "8"`) {
		t.Errorf("tracer.8 is not a section 8 page:\n%.300s", page)
	}
	for _, c := range newRootCmd().Commands() {
		if !c.IsAvailableCommand() {
			continue
		}
		if !strings.Contains(string(page), "tracer-"+c.Name()+"(8)") {
			t.Errorf("tracer.8 does not name %s", c.Name())
		}
		sub, err := os.ReadFile(filepath.Join(dir, "tracer-"+c.Name()+".8"))
		if err != nil || !strings.Contains(string(sub), c.Short[:20]) && !strings.Contains(string(sub), strings.ReplaceAll(c.Short[:20], "-", `\-`)) {
			t.Errorf("tracer-%s.8 is missing or does not say what the command does: %v", c.Name(), err)
		}
	}
}

// Each page is headed by its own name and has the sections a man page
// reader looks for; watch's names its text columns.
func TestManPageSections(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runTracer(t, nil, "man", dir); code != 0 {
		t.Fatalf("tracer man: exit %d: %s", code, stderr)
	}
	pages, _ := filepath.Glob(filepath.Join(dir, "*.8"))
	if len(pages) < 10 {
		t.Fatalf("tracer man wrote %v", pages)
	}
	var cmds []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		cmds = append(cmds, c)
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() {
				walk(s)
			}
		}
	}
	walk(newRootCmd())
	for _, c := range cmds {
		name := strings.ReplaceAll(c.CommandPath(), " ", "-")
		b, err := os.ReadFile(filepath.Join(dir, name+".8"))
		if err != nil {
			t.Errorf("no page for %s: %v", c.CommandPath(), err)
			continue
		}
		page := string(b)
		if th := `.TH "` + strings.ToUpper(name) + `" "8"`; !strings.Contains(page, th) {
			t.Errorf("%s.8 is not headed %s:\n%.200s", name, th, page)
		}
		want := []string{".SH EXIT STATUS"}
		if c.Example != "" {
			want = append(want, ".SH EXAMPLES")
		}
		switch name {
		case "tracer":
			want = append(want, ".SH ENVIRONMENT", ".SH FILES", ".SH EXAMPLES", "SUDO_UID", "OTEL_EXPORTER_OTLP_HEADERS", "GOMAXPROCS",
				"/run/tracer", "/etc/sysconfig/tracer", "/etc/default/tracer", "/var/log/tracer", "/usr/share/bash-completion/completions/tracer")
		case "tracer-watch":
			want = append(want, ".SH OUTPUT", "docs/events.md")
			want = append(want, strings.Fields(sink.TextHeader)...)
		case "tracer-trace":
			want = append(want, ".SH OUTPUT", "@exec_calls")
		}
		for _, w := range want {
			if !strings.Contains(page, w) {
				t.Errorf("%s.8 has no %q", name, w)
			}
		}
		for _, code := range []string{"0", "1", "2"} {
			if !strings.Contains(page, `\fB`+code+`\fP`) {
				t.Errorf("%s.8: EXIT STATUS does not give %s", name, code)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "tracer-completion-powershell.8")); err == nil {
		t.Error("tracer man wrote a page for powershell completion")
	}
}

func TestFlagValueCompletion(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"watch", "--backend", ""}, []string{"audit", "ebpf"}},
		{[]string{"trace", "--backend", ""}, []string{"audit", "ebpf"}},
		{[]string{"watch", "--events", "exec,f"}, []string{"exec,fork"}},
		{[]string{"rules", "--events", ""}, []string{"exec", "fork", "signal", "exit", "all"}},
		{[]string{"watch", "--signal", "USR1,"}, []string{"USR1,TERM", "USR1,KILL"}},
		{[]string{"watch", "--format", ""}, []string{"text", "json"}},
		{[]string{"trace", "--format", ""}, []string{"table", "json"}},
		{[]string{"watch", "--time", ""}, []string{"iso", "relative", "none"}},
		{[]string{"bench", "--modes", ""}, []string{"none", "audit", "ebpf", "auditd", "laurel"}},
		{[]string{"bench", "--modes", "none,au"}, []string{"none,audit", "none,auditd"}},
		{[]string{"bench", "--workload", ""}, []string{"cis-shell", "signal-storm", "exec-rate", "redis", "apps"}},
		{[]string{"bench", "--workload", "cis-shell,"}, []string{"cis-shell,signal-storm"}},
		{[]string{"bench", "--storage", ""}, []string{"ssd", "hdd"}},
		{[]string{"bench", "--storage", "ssd,"}, []string{"ssd,hdd"}},
		{[]string{"report", "--format", ""}, []string{"md", "html"}},
		{[]string{"doctor", "--format", ""}, []string{"text", "json"}},
		{[]string{"rules", "--machine", ""}, []string{"x86_64", "aarch64", "ppc64le", "s390x"}},
		{[]string{"watch", "--log-level", ""}, []string{"debug", "info", "warn", "error"}},
		{[]string{"watch", "--probes", ""}, []string{"default", "sched", "syscalls", "fentry"}},
		{[]string{"trace", "--backpressure", ""}, []string{"drop", "block"}},
		{[]string{"watch", "--output", ""}, []string{"journal", "syslog", "syslog+tls://", "otlps://"}},
	} {
		code, stdout, _ := runTracer(t, nil, append([]string{"__complete"}, c.args...)...)
		got := strings.Split(stdout, "\n")
		for _, w := range c.want {
			found := false
			for _, g := range got {
				found = found || g == w
			}
			if code != 0 || !found {
				t.Errorf("tracer __complete %q: exit %d, %q: no %q", c.args, code, stdout, w)
			}
		}
	}
}

// Help says what defaults and values mean, where each output goes, and
// the same flag names across commands.
func TestHelpTexts(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"watch", "--help"}, []string{"Stream the node's", "or default (sched", "auto (b64, and b32 too", "comm before it", "--exe", "--uid", "--quiet", "--time", "--max-args"}},
		{[]string{"trace", "--help"}, []string{"or default (sched", "auto (b64, and b32 too", "write the report to FILE instead of stderr", "table (text is the same)"}},
		{[]string{"rules", "--help"}, []string{"Print the audit rules tracer's", "auto (b64, and b32 too"}},
		{[]string{"cleanup", "--help"}, []string{"Remove what tracers that are gone"}},
		{[]string{"bench", "--help"}, []string{"-o, --output"}},
	} {
		code, stdout, _ := runTracer(t, nil, c.args...)
		for _, w := range c.want {
			if code != 0 || !strings.Contains(stdout, w) {
				t.Errorf("tracer %v: exit %d: no %q in\n%s", c.args, code, w, stdout)
			}
		}
	}
	if _, stdout, _ := runTracer(t, nil, "bench", "--help"); strings.Contains(stdout, "--out string") {
		t.Errorf("bench --help still offers --out:\n%s", stdout)
	}
}

// watchRun starts a watch with stdout to a file, runs work once it
// watches, stops it, and returns its stdout and stderr. No wait is needed
// between work and the stop for the eBPF backend, which every caller with
// events uses: work's events are in the ring (or a CPU's batch) once its
// processes are reaped, and a stopping watch detaches, flushes the
// batches and reads the ring to its end before it exits.
func watchRun(t *testing.T, work func(), args ...string) (stdout, stderr string) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := startWatcher(t, f, args...)
	work()
	w.stop(t)
	out, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(out), w.stderr()
}

// programs makes links named after each name to /bin/sleep, so that each
// process has a comm and a program of its own.
func programs(t *testing.T, names ...string) string {
	dir, err := os.MkdirTemp("", "tracer-programs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// Runnable by nobody (--uid).
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.Symlink("/bin/sleep", filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runAs(t *testing.T, cred *syscall.Credential, path string, args ...string) {
	cmd := exec.Command(path, args...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v %s", path, err, out)
	}
}

// linesOf returns the event lines (no header) of text output.
func linesOf(out string) []string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if !strings.HasPrefix(sc.Text(), "TIME") && !strings.HasPrefix(sc.Text(), "BACKEND") {
			lines = append(lines, sc.Text())
		}
	}
	return lines
}

func TestWatchSelectors(t *testing.T) {
	tracertest.NeedRoot(t)
	dir := programs(t, "fhcomma", "fhcommb", "fhcommc")
	work := func() {
		for _, n := range []string{"fhcomma", "fhcommb", "fhcommc"} {
			runAs(t, nil, filepath.Join(dir, n), "0")
		}
	}
	count := func(out, s string) int { return strings.Count(out, s) }

	t.Run("comm list", func(t *testing.T) {
		out, _ := watchRun(t, work, "--backend", "ebpf", "--events", "exit", "--comm", "fhcomma,fhcommb")
		if count(out, " fhcomma ") != 1 || count(out, " fhcommb ") != 1 || count(out, "fhcommc") != 0 {
			t.Errorf("--comm fhcomma,fhcommb: want one exit of each, none of fhcommc:\n%s", out)
		}
	})
	t.Run("comm given twice, one in the kernel", func(t *testing.T) {
		out, _ := watchRun(t, work, "--backend", "ebpf", "--events", "exit", "--comm", "fhcommb", "--comm", "fhcommc")
		if count(out, " fhcommb ") != 1 || count(out, " fhcommc ") != 1 || count(out, "fhcomma") != 0 {
			t.Errorf("--comm fhcommb --comm fhcommc:\n%s", out)
		}
	})
	t.Run("exe", func(t *testing.T) {
		out, stderr := watchRun(t, work, "--backend", "ebpf", "--exe", "fhcommb", "--time", "none", "--max-args", "1")
		lines := linesOf(out)
		if len(lines) != 1 || !strings.HasPrefix(lines[0], "ebpf    exec") || !strings.Contains(lines[0], filepath.Join(dir, "fhcommb")+` "`+filepath.Join(dir, "fhcommb")+`" [argv truncated]`) {
			t.Errorf("--exe fhcommb --time none --max-args 1: want the one exec, no time, one argument:\n%s", out)
		}
		if !strings.Contains(stderr, "watching exec events") {
			t.Errorf("--exe does not watch execs alone: %s", stderr)
		}
	})
	t.Run("uid", func(t *testing.T) {
		nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
		out, _ := watchRun(t, func() {
			runAs(t, nobody, filepath.Join(dir, "fhcomma"), "0")
			runAs(t, nil, filepath.Join(dir, "fhcommb"), "0")
		}, "--backend", "ebpf", "--events", "exit", "--uid", "65534,4242", "--comm", "fhcomma,fhcommb")
		lines := linesOf(out)
		if len(lines) != 1 || !strings.Contains(lines[0], " fhcomma ") || !strings.Contains(lines[0], " 65534      code=0") {
			t.Errorf("--uid 65534: want nobody's one exit, the UID column 10 wide:\n%s", out)
		}
	})
	t.Run("several pids", func(t *testing.T) {
		var procs []*exec.Cmd
		for _, n := range []string{"fhcomma", "fhcommb", "fhcommc"} {
			c := exec.Command(filepath.Join(dir, n), "60")
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			procs = append(procs, c)
		}
		defer func() {
			for _, p := range procs {
				_ = p.Process.Kill()
				_ = p.Wait()
			}
		}()
		kill := func() {
			for _, p := range procs {
				_ = p.Process.Kill()
				_ = p.Wait()
			}
		}
		out, _ := watchRun(t, kill, "--backend", "ebpf", "--events", "exit",
			"--pid", strconv.Itoa(procs[0].Process.Pid), "--pid", strconv.Itoa(procs[1].Process.Pid))
		if count(out, " fhcomma ") != 1 || count(out, " fhcommb ") != 1 || count(out, "fhcommc") != 0 {
			t.Errorf("--pid A --pid B: want the exits of A and B only:\n%s", out)
		}
	})
	t.Run("errno names", func(t *testing.T) {
		out, _ := watchRun(t, func() {
			_ = syscall.Kill(999999, syscall.SIGUSR2) // ESRCH
		}, "--backend", "ebpf", "--probes", "syscalls", "--events", "signal", "--signal", "USR2", "--time", "iso")
		if !strings.Contains(out, "kill -> 999999 SIGUSR2 ret=ESRCH") {
			t.Errorf("a failed kill's ret is not named:\n%s", out)
		}
		if lines := linesOf(out); len(lines) == 0 || len(lines[0]) < 30 || lines[0][4] != '-' || lines[0][10] != 'T' {
			t.Errorf("--time iso: %q", lines)
		}
	})
	t.Run("quiet and duration", func(t *testing.T) {
		code, _, stderr := runTracerWithin(t, 20*time.Second, "watch", "--backend", "ebpf", "--events", "exit", "--comm", "fhnone", "--duration", "1s", "--quiet")
		if code != 0 || stderr != "" {
			t.Errorf("--quiet: exit %d, stderr %q", code, stderr)
		}
		code, _, stderr = runTracerWithin(t, 20*time.Second, "watch", "--backend", "ebpf", "--events", "exit", "--comm", "fhnone", "--duration", "1s")
		if code != 0 || !strings.Contains(stderr, "(for 1s; Ctrl-C stops sooner)") || strings.Contains(stderr, "(Ctrl-C to stop)") {
			t.Errorf("--duration 1s banner: %q", stderr)
		}
	})
}

// A watch into a pipe whose reader went away ends at once, not at its
// next event: here none ever comes.
func TestWatchEndsWhenPipeReaderGoes(t *testing.T) {
	tracertest.NeedRoot(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	wt := startWatcher(t, w, "--backend", "ebpf", "--events", "exit", "--comm", "fhnever", "--duration", "60s")
	w.Close()
	start := time.Now()
	r.Close()
	select {
	case <-wt.done:
	case <-time.After(10 * time.Second):
		_ = wt.cmd.Process.Kill()
		t.Fatal("tracer watch did not end within 10s of its reader going away")
	}
	_ = wt.cmd.Wait()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("tracer watch ended %v after its reader went away", d)
	}
	if !summaryLine.MatchString(wt.stderr()) {
		t.Errorf("no summary:\n%s", wt.stderr())
	}
}
