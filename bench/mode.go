// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/tracer-dev/tracer/bench/result"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Mode is one way of watching a workload: none, this tool's backends, the
// node's auditd, bpftrace. The runner calls Setup once, then Start and Stop
// around every run of a workload (outside the timed part), and Teardown once
// at the end, also after an error or Ctrl-C.
type Mode interface {
	// Name is what results show: none, audit, ebpf, auditd-sync, ...
	Name() string
	// WritesLog tells whether the mode writes an event log, so that the
	// storage it writes to matters.
	WritesLog() bool
	// Setup checks that the mode can run on this node and prepares what it
	// shares between runs. A *SkipError says the mode cannot run here (its
	// tool is not installed) and how to fix that.
	Setup(ctx context.Context) error
	// Start begins watching and returns once watching: rules or probes in
	// place. The workload has not started yet.
	Start(ctx context.Context, run *Run) error
	// Stop ends watching after the workload ended (drains what is queued,
	// removes rules and probes) and reports what the mode saw of the run.
	Stop(ctx context.Context, run *Run) (Observation, error)
	// Teardown undoes Setup and anything a failed run left behind.
	Teardown() error
}

// Run is one run of a workload under a mode.
type Run struct {
	Workload *Workload
	Round    int
	// Dir is a fresh directory on the run's storage, for the mode's event
	// log; it is removed after Stop.
	Dir string
	// LogCgroup, when set, is the cgroup a mode's log writer must run in:
	// the simulated HDD's throttle (cgroup v2 io.max) applies there.
	LogCgroup *Cgroup
	// Own, when set, is the cgroup the workload runs in. bpftrace filters
	// on its id; its Scope (bench's --cgroup), when set, is what the
	// tracer modes watch, with everything below it. Modes that watch
	// execs alone filter on Own itself (execsnoop -c, tracer --cgroup) and
	// count every exec they saw: without fork events the workload's tree
	// cannot be followed through a subshell that forks without an exec.
	Own *Cgroup

	// Interrupted is closed when the bench is interrupted (Ctrl-C): a Stop
	// that waits for a log to catch up gives up then, and only cleans up.
	Interrupted <-chan struct{}

	// Set once the workload ended, before Stop.
	RootPID int
	// Threads are the thread ids of a GoRuntime workload's process.
	Threads map[uint32]bool
}

// ownFor is the cgroup the mode named watches on its own (Run.Own): the
// workload's, for a mode that watches execs alone; nil otherwise.
func (r *Run) ownFor(mode string) *Cgroup {
	if modeSpecs[mode].execOnly {
		return r.Own
	}
	return nil
}

// Observation is what a mode saw of one run.
type Observation struct {
	// Seen counts the events of the workload's process tree; -1 when the
	// mode does not watch (none) or cannot tell.
	Seen int64
	// Lost is what the watcher reported lost, node-wide.
	Lost       int64
	TracerCPU  float64
	KauditdCPU float64
	// BacklogWait is how long processes slept on a full audit backlog during
	// the run, in the kernel's jiffies (audit modes, where auditctl is installed).
	BacklogWait float64
	Note        string
	// Label is how the mode ran when its name does not say it:
	// "audit (beside auditd)", "auditd (node's)".
	Label string
	// Queued is how many records still waited in the kernel's audit
	// backlog when the workload ended, of QueueLimit (modes that use
	// audit; else 0): a reader that falls behind loses once a longer burst
	// fills it.
	Queued, QueueLimit int64
	// DelayP99Ms is the watcher's own delay_p99_ms (tracer's --stats-file:
	// kernel time to output), 0 where it gives none.
	DelayP99Ms float64
}

// SkipError says why a mode cannot run on this node and how to fix it.
type SkipError struct{ Reason string }

func (e *SkipError) Error() string { return e.Reason }

// Skipf builds a SkipError.
func Skipf(format string, args ...any) error { return &SkipError{Reason: fmt.Sprintf(format, args...)} }

// IsSkip reports whether err says a mode cannot run here.
func IsSkip(err error) bool {
	var s *SkipError
	return errors.As(err, &s)
}

// ModeNames lists the modes bench knows, in the order it runs them in the
// first round (later rounds rotate the order). Each mode registers itself
// from its own file (registerMode); this list and the others are made of
// the registrations.
var ModeNames []string

// DefaultModes is what bench runs without --modes: every way of watching,
// with auditd in the flush mode the node configured, the peers and the
// floors.
var DefaultModes []string

// QuickModes is what --quick runs without --modes: DefaultModes but the
// modes too slow to set up for a short run (QuickLeavesOut).
var QuickModes []string

// modeSpec is what a mode tells bench of itself when it registers.
type modeSpec struct {
	name string
	// watches and countedFrom say, in Markdown, what watches in this mode
	// and where bench counts its events from: docs/overhead.md's table
	// of modes is made of them.
	watches, countedFrom string
	// rank orders the lists: this tool's modes, its floors, then the peers.
	rank int
	// inDefault and inQuick put it in DefaultModes and QuickModes.
	inDefault, inQuick bool
	// peer: it measures another tool (see IsPeer).
	peer bool
	// floor names its lower bound (see FloorOf), a registered mode.
	floor string
	// counterpart names the registered mode of this tool that the mode is
	// read beside and compared with: a peer's (result.Mode.Counterpart), or
	// the mode a variant varies.
	counterpart string
	// color is the "#rrggbb" of its bars in the report; "" for the
	// report's default.
	color string
	// audit: it loads audit rules or runs an audit daemon, so bench saves
	// and restores the kernel's audit settings around it.
	audit bool
	// privateAuditd: it runs an audit daemon of its own, which cannot run
	// while the node's auditd holds the audit PID.
	privateAuditd bool
	// nodeAuditd: while the node's own auditd runs (and --restart-auditd
	// did not stop it), the mode's auditd is the node's, measured as it is
	// (or the mode skipped where it would change it): its log goes where
	// the node configured it, whatever --storage says.
	nodeAuditd bool
	// execOnly: it watches exec events alone (ebpf-exec, execsnoop).
	execOnly bool
	needs    needs
	make     func(env modeEnv) (Mode, error)
	// file is where the mode registered (set by registerMode).
	file string
}

// needs is what a mode needs of the node.
type needs struct {
	// root: the mode loads rules or probes; bench refuses to run it
	// without root.
	root bool
	// tools are the programs the mode runs; Setup finds them (findTools)
	// and skips the mode, saying how to install what is missing.
	tools []tool
}

// tool is a program a mode runs, and how to install it.
type tool struct {
	// names are what packages install it as, the usual one first (Debian
	// installs execsnoop, RHEL bpf-execsnoop).
	names []string
	// deb is its Debian package, which make deps installs.
	deb string
	// install says how to install it: "apt-get install X (Debian, Ubuntu)
	// or dnf install Y (RHEL)".
	install string
}

// modeEnv is what a mode is made with.
type modeEnv struct {
	self      string // this program: the watcher and the Go loops
	hasCgroup bool   // workloads run in a cgroup of their own
	ringBytes int    // the eBPF watchers' --ring-size (0: watch's default)
}

var modeSpecs = map[string]modeSpec{}

// registerMode adds a mode; each mode's file calls it from init. The
// lists stay in rank order whatever order the files register in.
func registerMode(s modeSpec) {
	if _, dup := modeSpecs[s.name]; dup {
		panic("bench: mode " + s.name + " registered twice")
	}
	if _, file, _, ok := runtime.Caller(1); ok {
		s.file = filepath.Base(file)
	}
	modeSpecs[s.name] = s
	insert := func(list []string) []string {
		i := 0
		for i < len(list) && modeSpecs[list[i]].rank <= s.rank {
			i++
		}
		return append(list[:i:i], append([]string{s.name}, list[i:]...)...)
	}
	ModeNames = insert(ModeNames)
	if s.inDefault {
		DefaultModes = insert(DefaultModes)
	}
	if s.inQuick {
		QuickModes = insert(QuickModes)
	}
}

// newMode makes the registered mode name.
func newMode(name string, env modeEnv) (Mode, error) {
	spec, ok := modeSpecs[name]
	if !ok {
		return nil, unknownMode(name)
	}
	return spec.make(env)
}

func unknownMode(name string) error {
	return vocab.Usagef("unknown mode %q: use %s", name, strings.Join(ModeNames, ", "))
}

// QuickLeavesOut lists the default modes that --quick leaves out.
func QuickLeavesOut() []string {
	var out []string
	for _, m := range DefaultModes {
		if !modeSpecs[m].inQuick {
			out = append(out, m)
		}
	}
	return out
}

// IsPeer reports whether a mode measures another tool (auditd, laurel,
// bpftrace, the libbpf-tools) rather than this one: its failure is a
// finding about the node, not a failure of the bench.
func IsPeer(mode string) bool { return modeSpecs[mode].peer }

// FloorOf names the mode that is mode's lower bound, or "": the audit
// floor (the same rules, a consumer that discards every record) for this
// tool's audit backend, auditd and laurel, the eBPF floor (empty programs
// on the same hooks) for the ebpf backend's default probes.
func FloorOf(mode string) string { return modeSpecs[mode].floor }

// resultModes says in the result file what each of modes is, so that the
// report orders, pairs and colours them from the file alone.
func resultModes(modes []string) []result.Mode {
	var out []result.Mode
	for _, m := range modes {
		s, ok := modeSpecs[m]
		if !ok {
			continue
		}
		out = append(out, result.Mode{Name: s.name, Rank: s.rank, Peer: s.peer, Floor: s.floor,
			Counterpart: s.counterpart, Color: s.color})
	}
	return out
}

// isFloor reports whether mode is another mode's floor.
func isFloor(mode string) bool {
	for _, s := range modeSpecs {
		if s.floor == mode {
			return true
		}
	}
	return false
}

// expectedOf is what mode must see of workload w: its execs alone for a
// mode that watches execs alone, else all its events.
func expectedOf(mode string, w *Workload) Tally {
	if modeSpecs[mode].execOnly {
		return Tally{Exec: w.Expected.Exec}
	}
	return w.Expected
}

// usesAudit reports whether a mode loads audit rules or runs an audit daemon.
func usesAudit(mode string) bool { return modeSpecs[mode].audit }

// privateAuditd reports whether a mode runs an audit daemon of its own.
func privateAuditd(mode string) bool { return modeSpecs[mode].privateAuditd }

// measuresNodeAuditd reports whether a mode's auditd is the node's own
// while that runs.
func measuresNodeAuditd(mode string) bool { return modeSpecs[mode].nodeAuditd }

// needsRoot reports whether a mode needs root.
func needsRoot(mode string) bool { return modeSpecs[mode].needs.root }

// findTools finds the programs mode needs, by the first name of each; a
// *SkipError says which is missing and how to install it.
func findTools(mode string) (map[string]string, error) {
	paths := map[string]string{}
	for _, t := range modeSpecs[mode].needs.tools {
		for _, n := range t.names {
			if p, err := lookSbin(n); err == nil {
				paths[t.names[0]] = p
				break
			}
		}
		if paths[t.names[0]] == "" {
			return nil, Skipf("%s is not installed: %s", t.names[0], t.install)
		}
	}
	return paths, nil
}

// lookSbin finds a program in $PATH or, where root's $PATH would have it,
// /usr/sbin and /sbin.
func lookSbin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin"} {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", name)
}
