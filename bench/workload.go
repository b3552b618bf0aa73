// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Tally is a number of events per class: what a workload must make and
// what a mode saw of it. (tracer.Counts is another thing: the per-comm
// aggregation trace prints.)
type Tally struct{ Exec, Fork, Signal int64 }

// Total sums the classes.
func (c Tally) Total() int64 { return c.Exec + c.Fork + c.Signal }

func (c Tally) String() string {
	return fmt.Sprintf("exec %d, fork %d, signal %d", c.Exec, c.Fork, c.Signal)
}

// Workload is what a bench run times: a command line and the exec, fork and
// signal events its process tree must produce.
type Workload struct {
	Name  string
	Desc  string
	Count int64 // iterations or events; 0 for a command
	// Expected holds when Known: every built-in workload knows its events
	// exactly, a command after -- does not.
	Expected Tally
	Known    bool
	// GoRuntime marks workloads that run in this Go binary: the runtime's
	// thread creations (clone with CLONE_THREAD) are not events of the
	// workload, so the workload writes its thread ids to a file and the
	// counting leaves fork events that made those threads out.
	GoRuntime bool
	Env       []string
	argv      func(tidsFile string) []string

	// Metric, when set, is the workload's own figure, read from its output
	// (an application workload, or a command with --metric).
	Metric *Metric
	// Credential, when set, is the user the workload runs as; Dir, when
	// set, its working directory.
	Credential *syscall.Credential
	Dir        string
	// Rate, for exec-rate and signal-rate, is the events a second the
	// workload is paced at (spawns, signals); 0 for the others.
	Rate float64
	// server, when set, starts what the workload's client talks to; the
	// runner starts it before the workload's first round and stops it
	// after the last (see startServer).
	// place puts a server process where the workload runs (its cgroup).
	server func(ctx context.Context, dir string, place func(*exec.Cmd)) (stop func() error, err error)
}

// Args is the command line of one run; tidsFile is where a GoRuntime
// workload writes its thread ids.
func (w *Workload) Args(tidsFile string) []string { return w.argv(tidsFile) }

//go:embed scripts/cis-shell.sh
var cisShellScript []byte

//go:embed scripts/exec-storm.sh
var execStormScript []byte

type builtin struct {
	name, desc string
	// start is the count calibration begins with: small enough to run in
	// well under a tenth of a second anywhere.
	start     int64
	script    []byte
	expected  func(n int64) Tally
	goRuntime bool
	countNoun string
}

// The built-in workloads. Each expected count includes the exec of the
// workload's first process (sh, or this binary), which every mode sees
// because watching starts before the workload is spawned. Counts are not
// fixed: bench sizes each workload by time (see Calibrate).
var builtins = []builtin{
	{
		name: "cis-shell", desc: "a CIS benchmark check loop in sh (6 forks, 4 execs per iteration)",
		start: 3, script: cisShellScript, countNoun: "iterations",
		expected: func(n int64) Tally { return Tally{Exec: 1 + 4*n, Fork: 6 * n} },
	},
	{
		name: "signal-storm", desc: "kill(getpid(), SIGUSR1) in a tight loop, SIGUSR1 ignored",
		start: 10000, goRuntime: true, countNoun: "kills",
		expected: func(n int64) Tally { return Tally{Exec: 1, Signal: n} },
	},
	{
		name: "syscall-tax", desc: "getppid() in a tight loop: a syscall no rule names",
		start: 50000, goRuntime: true, countNoun: "getppid calls",
		expected: func(n int64) Tally { return Tally{Exec: 1} },
	},
	{
		name: "exec-storm", desc: "sh spawning /bin/true in a loop (1 fork, 1 exec each)",
		start: 20, script: execStormScript, countNoun: "spawns",
		expected: func(n int64) Tally { return Tally{Exec: 1 + n, Fork: n} },
	},
}

// Builtins lists the built-in workload names, in the order bench runs them.
func Builtins() []string {
	var names []string
	for _, b := range builtins {
		names = append(names, b.name)
	}
	return names
}

func findBuiltin(name string) (builtin, bool) {
	for _, b := range builtins {
		if b.name == name {
			return b, true
		}
	}
	return builtin{}, false
}

// StartCount is the count a built-in workload's calibration begins with,
// or 0 for an unknown name.
func StartCount(name string) int64 {
	b, _ := findBuiltin(name)
	return b.start
}

// NewBuiltin returns the built-in workload name with count n (0: its
// calibration's starting count). self is this program (for the Go loops),
// dir a directory to write the shell scripts to.
func NewBuiltin(name string, n int64, self, dir string) (*Workload, error) {
	b, ok := findBuiltin(name)
	if !ok {
		return nil, fmt.Errorf("unknown workload %q: use %s, or give a command after --", name, strings.Join(Builtins(), ", "))
	}
	if n <= 0 {
		n = b.start
	}
	w := &Workload{
		Name: name, Desc: fmt.Sprintf("%s; %d %s", b.desc, n, b.countNoun),
		Count: n, Expected: b.expected(n), Known: true, GoRuntime: b.goRuntime,
	}
	count := strconv.FormatInt(n, 10)
	if b.script != nil {
		path := filepath.Join(dir, name+".sh")
		if err := os.WriteFile(path, b.script, 0o644); err != nil {
			return nil, fmt.Errorf("writing workload script: %w", err)
		}
		// /bin/sh as the node has it: dash on Debian, bash on RHEL; the
		// scripts make the same processes in both.
		w.argv = func(string) []string { return []string{"/bin/sh", path, count} }
	} else {
		w.Env = goLoopEnv
		w.argv = func(tids string) []string {
			return []string{self, "bench", "workload", name, "--count", count, "--tids", tids}
		}
	}
	return w, nil
}

// Async preemption would make the runtime signal its own threads (tgkill
// SIGURG): events no workload asked for.
var goLoopEnv = []string{"GODEBUG=asyncpreemptoff=1"}

// NewPaced returns the sweep's form of signal-storm or exec-storm: a Go
// loop of this program that makes about events events at rate events a
// second (a kill is one event, a spawn two: its fork and its exec).
func NewPaced(name string, events int64, rate float64, self string) (*Workload, error) {
	b, ok := findBuiltin(name)
	if !ok || (name != "signal-storm" && name != "exec-storm") {
		return nil, fmt.Errorf("no paced form of workload %q: the sweep runs signal-storm and exec-storm", name)
	}
	per := int64(1)
	if name == "exec-storm" {
		per = 2
	}
	n := max(1, events/per)
	count := strconv.FormatInt(n, 10)
	r := strconv.FormatFloat(rate/float64(per), 'f', 0, 64)
	return &Workload{
		Name: name, Desc: fmt.Sprintf("%s, paced at %s %s a second; %d %s", b.desc, r, b.countNoun, n, b.countNoun),
		Count: n, Expected: b.expected(n), Known: true, GoRuntime: true, Env: goLoopEnv,
		argv: func(tids string) []string {
			return []string{self, "bench", "workload", name, "--count", count, "--rate", r, "--tids", tids}
		},
	}, nil
}

// RateWorkloads are the workloads paced at a steady rate (--rate), the way
// laurel's authors measure a watcher: a loop that makes one event at fixed
// intervals, so that every mode is asked for the same events per second
// and what it costs per event can be compared.
var RateWorkloads = []string{"exec-rate", "signal-rate"}

// DefaultRates are the rates (events a second) the rate workloads run at
// without --rate.
var DefaultRates = []float64{100, 300, 1000}

// IsRate reports whether name is a rate workload.
func IsRate(name string) bool { return name == "exec-rate" || name == "signal-rate" }

// NewRate returns rate workload name paced at rate events a second for n
// events: exec-rate spawns /bin/true (fork, exec, wait) n times,
// signal-rate sends SIGUSR1 n times to a child it started (/bin/cat, the
// signal ignored, which ends when its input closes). Both are a Go loop of
// self.
func NewRate(name string, rate float64, n int64, self string) (*Workload, error) {
	var exp Tally
	var desc, noun string
	switch name {
	case "exec-rate":
		exp, desc, noun = Tally{Exec: 1 + n, Fork: n}, "/bin/true spawned at a steady rate (1 fork, 1 exec each)", "spawns"
	case "signal-rate":
		// The loop's exec, then the child's fork and exec, then the kills.
		exp, desc, noun = Tally{Exec: 2, Fork: 1, Signal: n}, "SIGUSR1 sent at a steady rate to a child process that ignores it", "signals"
	default:
		return nil, fmt.Errorf("unknown rate workload %q: use %s", name, strings.Join(RateWorkloads, " or "))
	}
	if rate <= 0 || n <= 0 {
		return nil, fmt.Errorf("workload %s needs a positive rate and count, not %v and %d", name, rate, n)
	}
	count := strconv.FormatInt(n, 10)
	r := strconv.FormatFloat(rate, 'f', -1, 64)
	return &Workload{
		Name: name, Desc: fmt.Sprintf("%s; %d %s at %s a second", desc, n, noun, r),
		Count: n, Expected: exp, Known: true, GoRuntime: true, Env: goLoopEnv, Rate: rate,
		argv: func(tids string) []string {
			return []string{self, "bench", "workload", name, "--count", count, "--rate", r, "--tids", tids}
		},
	}, nil
}

// NewCommand returns a workload that runs argv. Its events are not known in
// advance: bench reports what each mode saw.
func NewCommand(argv []string) *Workload {
	a := append([]string(nil), argv...)
	return &Workload{
		Name: strings.Join(a, " "), Desc: "a command given after --",
		argv: func(string) []string { return a },
	}
}
