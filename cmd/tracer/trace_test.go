// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/tracer/tracertest"
)

type traceJSON struct {
	Backend   string `json:"backend"`
	ExecCalls []struct {
		Comm     string `json:"comm"`
		Filename string `json:"filename"`
		Count    int    `json:"count"`
	} `json:"exec_calls"`
	ForkCalls []struct {
		Comm  string `json:"comm"`
		Count int    `json:"count"`
	} `json:"fork_calls"`
	Signals []struct {
		Comm      string `json:"comm"`
		TargetPID int    `json:"target_pid"`
		Signal    int    `json:"signal"`
		Count     int    `json:"count"`
	} `json:"signals"`
	Totals struct {
		Exec, Fork, Signal, Exit, Lost int
	} `json:"totals"`
	Rusage struct {
		ElapsedS float64 `json:"elapsed_s"`
		UserS    float64 `json:"user_s"`
		SysS     float64 `json:"sys_s"`
	} `json:"rusage"`
	ExitCode int `json:"exit_code"`
}

// traceRun runs `tracer trace --format json -o FILE` and returns the report and exit status.
func traceRun(t *testing.T, backend string, flags []string, cmd ...string) (traceJSON, int) {
	t.Helper()
	if backend == "audit" {
		tracertest.LockAudit(t)
	}
	out := filepath.Join(t.TempDir(), "trace.json")
	args := append([]string{"trace", "--backend", backend, "--format", "json", "-o", out}, flags...)
	args = append(append(args, "--"), cmd...)
	code, _, stderr := runTracer(t, nil, args...)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("tracer %v: exit %d, %s, no report: %v", args, code, stderr, err)
	}
	var r traceJSON
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("report %s: %v", data, err)
	}
	return r, code
}

// shape is a report with pids taken out, for comparing runs and backends.
func shape(r traceJSON) string {
	var b strings.Builder
	for _, e := range r.ExecCalls {
		fmt.Fprintf(&b, "exec[%s,%s]=%d ", e.Comm, e.Filename, e.Count)
	}
	for _, f := range r.ForkCalls {
		fmt.Fprintf(&b, "fork[%s]=%d ", f.Comm, f.Count)
	}
	for _, s := range r.Signals {
		fmt.Fprintf(&b, "signal[%s,%d]=%d ", s.Comm, s.Signal, s.Count)
	}
	fmt.Fprintf(&b, "totals=%+v exit=%d", r.Totals, r.ExitCode)
	return b.String()
}

// A workload with known numbers: grandchildren (posix_spawn children exec),
// an orphaned double-fork grandchild, a failed exec (--exec-failures),
// signals in and out of the filter; both backends count exactly the same.
func TestTraceExactCountsBothBackends(t *testing.T) {
	tracertest.NeedRoot(t)
	wl := tracertest.BuildWorkload(t)
	cmd := []string{wl, "exec", "3", "/bin/true", "execfail", "1", "fork", "2", "vfork", "1", "clone", "1", "clone3", "2",
		"doublefork", "2", "kill", "4", "10", "tgkill", "3", "10", "tkill", "2", "12", "exit", "3"}
	// forks: fork 2, vfork 1, clone 1, clone3 2, doublefork 2x2, and the vforks of exec 3 and execfail 1.
	want := "exec[tracer," + wl + "]=1 exec[workload,/nonexistent/tracer-enoent]=1 exec[workload,/bin/true]=7 " +
		"fork[workload]=14 signal[workload,10]=7 totals={Exec:9 Fork:14 Signal:7 Exit:0 Lost:0} exit=3"
	shapes := map[string]string{}
	for _, backend := range []string{"audit", "ebpf"} {
		t.Run(backend, func(t *testing.T) {
			r, code := traceRun(t, backend, []string{"--signal", "USR1", "--exec-failures"}, cmd...)
			if code != 3 {
				t.Errorf("exit status %d, want the command's 3", code)
			}
			shapes[backend] = shape(r)
			if shapes[backend] != want {
				t.Errorf("trace --backend %s:\n got  %s\n want %s", backend, shapes[backend], want)
			}
		})
	}
	if shapes["audit"] != "" && shapes["ebpf"] != "" && shapes["audit"] != shapes["ebpf"] {
		t.Errorf("backends differ:\n audit %s\n ebpf  %s", shapes["audit"], shapes["ebpf"])
	}
}

// straceTruth counts execs and successful forks of a command's tree with
// strace -f, independently of tracer.
func straceTruth(t *testing.T, cmd ...string) (execs, forks int) {
	t.Helper()
	strace := tracertest.NeedTool(t, "strace", "apt-get install -y strace")
	out := filepath.Join(t.TempDir(), "strace.out")
	args := append([]string{"-f", "-qq", "-o", out, "-e", "trace=execve,execveat,fork,vfork,clone,clone3", "-e", "signal=none"}, cmd...)
	c := exec.Command(strace, args...)
	if b, err := c.CombinedOutput(); err != nil {
		t.Fatalf("strace: %v\n%s", err, b)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ret := regexp.MustCompile(`= (-?\d+)`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		isExec := strings.Contains(line, "execve(") || strings.Contains(line, "execveat(")
		isFork := regexp.MustCompile(`\b(fork|vfork|clone|clone3)\(`).MatchString(line)
		resumed := regexp.MustCompile(`<\.\.\. (fork|vfork|clone|clone3) resumed>`).MatchString(line)
		switch {
		case isExec:
			execs++
		case isFork && !strings.Contains(line, "<unfinished"), resumed:
			if m := ret.FindStringSubmatch(line); m != nil {
				if n, _ := strconv.Atoi(m[1]); n > 0 {
					forks++
				}
			}
		}
	}
	return execs, forks
}

// On the CIS check loop (bench's cis-shell workload) the counts equal the true numbers of execs
// and forks, as strace counts them.
func TestTraceCISLoopTruth(t *testing.T) {
	tracertest.NeedRoot(t)
	script, err := filepath.Abs("../../bench/scripts/cis-shell.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := []string{"/bin/sh", script, "20"}
	execs, forks := straceTruth(t, cmd...)
	if execs == 0 || forks == 0 {
		t.Fatalf("strace saw execs %d forks %d", execs, forks)
	}
	for _, backend := range []string{"audit", "ebpf"} {
		t.Run(backend, func(t *testing.T) {
			r, _ := traceRun(t, backend, nil, cmd...)
			if r.Totals.Exec != execs || r.Totals.Fork != forks || r.Totals.Lost != 0 {
				t.Errorf("trace --backend %s: exec %d fork %d lost %d; strace: exec %d fork %d",
					backend, r.Totals.Exec, r.Totals.Fork, r.Totals.Lost, execs, forks)
			}
		})
	}
}

// The rusage figures agree with /usr/bin/time on the same command within
// noise. /usr/bin/time runs inside the traced tree, so both measure the
// same run under the same tracing cost, and the test checks the accounting
// rather than the machine's mood.
func TestTraceRusageMatchesTime(t *testing.T) {
	tracertest.NeedRoot(t)
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		tracertest.MissingTool(t, "/usr/bin/time is not installed: apt-get install -y time")
	}
	wl := tracertest.BuildWorkload(t)
	tf := filepath.Join(t.TempDir(), "time.out")
	cmd := []string{"/usr/bin/time", "-o", tf, "-f", "%e %U %S", wl, "exec", "300", "/bin/true", "kill", "100000", "10", "exit", "0"}
	for _, backend := range []string{"ebpf", "audit"} {
		t.Run(backend, func(t *testing.T) {
			if backend != "audit" { // traceRun locks for audit
				// The command's 100,000 kills flood the tests of other
				// packages that count signals node-wide: storms take the lock.
				tracertest.LockAudit(t)
			}
			r, code := traceRun(t, backend, nil, cmd...)
			if code != 0 {
				t.Fatalf("exit status %d", code)
			}
			b, _ := os.ReadFile(tf)
			var e, u, s float64
			if _, err := fmt.Sscanf(string(b), "%f %f %f", &e, &u, &s); err != nil {
				t.Fatalf("parsing %q: %v", b, err)
			}
			near := func(a, b float64) bool { return math.Abs(a-b) <= math.Max(0.1, 0.2*b) }
			if !near(r.Rusage.UserS+r.Rusage.SysS, u+s) || !near(r.Rusage.ElapsedS, e) {
				t.Errorf("trace rusage elapsed %.2f user %.2f sys %.2f; /usr/bin/time elapsed %.2f user %.2f sys %.2f",
					r.Rusage.ElapsedS, r.Rusage.UserS, r.Rusage.SysS, e, u, s)
			}
		})
	}
}

// trace counts the command's own CPU time, from its release, as
// /usr/bin/time does: not the held step's, which is a whole Go runtime
// started from tracer's binary. A command that does nothing uses almost
// nothing; a command that computes for a second shows what /usr/bin/time
// shows, run for run (interleaved, medians: the machine may be shared).
func TestTraceRusageIsTheCommands(t *testing.T) {
	// The lock keeps the audit storms of other packages' tests off the
	// CPUs while the 1 s computations are compared.
	tracertest.LockAudit(t)
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		tracertest.MissingTool(t, "/usr/bin/time is not installed: apt-get install -y time")
	}
	median := func(xs []float64) float64 {
		xs = slices.Clone(xs)
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	var idle []float64
	for range 5 {
		r, _ := traceRun(t, "ebpf", nil, "/bin/true")
		idle = append(idle, r.Rusage.UserS+r.Rusage.SysS)
	}
	if m := median(idle); m > 0.01 {
		t.Errorf("trace -- /bin/true: user+sys %.3fs (median of %v), want at most 0.01s", m, idle)
	}

	wl := tracertest.BuildWorkload(t)
	tf := filepath.Join(t.TempDir(), "time.out")
	var traceCPU, timeCPU, tracePct, timePct []float64
	for range 7 {
		r, code := traceRun(t, "ebpf", nil, wl, "spin", "1000")
		if code != 0 || r.Rusage.ElapsedS <= 0 {
			t.Fatalf("trace: exit status %d, rusage %+v", code, r.Rusage)
		}
		traceCPU = append(traceCPU, r.Rusage.UserS+r.Rusage.SysS)
		tracePct = append(tracePct, 100*(r.Rusage.UserS+r.Rusage.SysS)/r.Rusage.ElapsedS)
		if b, err := exec.Command("/usr/bin/time", "-o", tf, "-f", "%e %U %S", wl, "spin", "1000").CombinedOutput(); err != nil {
			t.Fatalf("/usr/bin/time: %v %s", err, b)
		}
		b, _ := os.ReadFile(tf)
		var e, u, s float64
		if _, err := fmt.Sscanf(string(b), "%f %f %f", &e, &u, &s); err != nil || e <= 0 {
			t.Fatalf("parsing %q: %v", b, err)
		}
		timeCPU = append(timeCPU, u+s)
		timePct = append(timePct, 100*(u+s)/e)
	}
	tc, mc := median(traceCPU), median(timeCPU)
	t.Logf("/bin/true: user+sys %v; spin 1000: trace user+sys %v cpu%% %v, /usr/bin/time user+sys %v cpu%% %v",
		idle, traceCPU, tracePct, timeCPU, timePct)
	if math.Abs(tc-mc) > 0.05*mc {
		t.Errorf("a 1 s computation: trace user+sys %.3fs (%v), /usr/bin/time %.3fs (%v): more than 5%% apart", tc, traceCPU, mc, timeCPU)
	}
	if tp, mp := median(tracePct), median(timePct); math.Abs(tp-mp) > 5 {
		t.Errorf("a 1 s computation: trace cpu %.0f%% (%v), /usr/bin/time %.0f%% (%v): more than 5 points apart", tp, tracePct, mp, timePct)
	}
}

// --events decides what trace counts and prints, on both backends: the
// eBPF backend follows the tree by its forks, and counted them too.
func TestTraceEventsFilter(t *testing.T) {
	tracertest.NeedRoot(t)
	cmd := []string{"/bin/sh", "-c", "/bin/true; sleep 3 & kill $!"}
	for _, backend := range []string{"audit", "ebpf"} {
		t.Run(backend, func(t *testing.T) {
			r, _ := traceRun(t, backend, []string{"--events", "signal"}, cmd...)
			if len(r.ExecCalls) != 0 || len(r.ForkCalls) != 0 || r.Totals.Exec != 0 || r.Totals.Fork != 0 {
				t.Errorf("trace --backend %s --events signal: %s; want no exec or fork", backend, shape(r))
			}
			if len(r.Signals) != 1 || r.Totals.Signal != 1 {
				t.Errorf("trace --backend %s --events signal: %s; want the one kill", backend, shape(r))
			}
		})
	}
}
