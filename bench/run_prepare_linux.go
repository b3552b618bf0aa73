// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tracer-dev/tracer/bench/result"
	"github.com/tracer-dev/tracer/tracer/audit"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Options is what `tracer bench` asks for.
type Options struct {
	// Workloads are built-in names; none and no Command: all built-ins.
	Workloads []string
	// Command, when set, is the one workload (a command given after --).
	Command []string
	// Metric, with Command, is a regular expression whose first capture
	// group is the command's own figure in its output (see NewMetric);
	// HigherIsBetter says it is a throughput.
	Metric         string
	HigherIsBetter bool
	// Count fixes the built-in workloads' counts (0: sized by Target).
	Count int64
	// Rates are the events a second the rate workloads (exec-rate,
	// signal-rate) are paced at, each a workload of its own (none:
	// DefaultRates). Without Count, each runs for Target.
	Rates []float64
	// Target is how long each built-in workload's untraced run lasts at
	// least (0: DefaultTarget, or QuickTarget with Quick).
	Target time.Duration
	Modes  []string
	// Rounds fixes the rounds; 0: adaptive, from DefaultMinRounds to
	// DefaultRounds (QuickMinRounds to QuickRounds with Quick).
	Rounds int
	Quick  bool
	// Budget, when set, is the time the rounds may take: past the first
	// BudgetMinRounds (up to BudgetRounds, or Rounds), a workload gets more rounds
	// while a mode's interval still overlaps its neighbour's (Runner.Budget).
	Budget time.Duration
	// Storage kinds (ssd, hdd) for modes that write a log; LogDir instead
	// puts the logs in a directory of the user's.
	Storage []string
	LogDir  string
	// Sweep adds the ceiling sweep of signal-storm and exec-storm.
	Sweep bool
	// RestartAuditd stops the node's running auditd for the bench (the
	// auditd mode then starts a private one per run, the audit modes run
	// alone) and starts it again after, as it was.
	RestartAuditd bool
	// Cgroup, when set, is a cgroup v2 path (as in /proc/PID/cgroup): the
	// workloads run in a cgroup made below it and the tracer modes watch
	// only it and what is below it, as a watcher scoped to a pod or a
	// service would.
	Cgroup string
	// RingBytes, when set, is the eBPF modes' ring buffer size (watch's
	// --ring-size): a storm that overflows the default is then measured
	// with nothing lost.
	RingBytes int
	// Self is this program: the watcher and the Go workload loops.
	Self     string
	Progress func(Progress)
	// Log, when set, is told what bench does before the runs (sizing
	// workloads, stopping auditd).
	Log func(string)
}

// The default rounds (at least, at most) and untraced duration of a full
// and of a --quick run.
const (
	DefaultMinRounds = 3
	DefaultRounds    = 5
	QuickMinRounds   = 2
	QuickRounds      = 3
	DefaultTarget    = time.Second
	QuickTarget      = 300 * time.Millisecond
	// Under a --budget a workload gets BudgetMinRounds rounds (the fewest
	// whose 95% interval says something: Student's t is 4.3 for three,
	// 12.7 for two) and at most BudgetRounds.
	BudgetMinRounds = 3
	BudgetRounds    = 10
)

// Bench is a prepared bench run: storages mounted, workload cgroup made,
// workloads sized, modes chosen. Close undoes all of it.
type Bench struct {
	Runner    *Runner
	Workloads []*Workload
	Storages  []*Storage
	Info      result.RunInfo
	cgroup    *Cgroup
	workDir   string
	state     *benchState
}

// Prepare checks o and sets up what the runs need. Errors that the user can
// fix are vocab.UsageError, returned before anything changed on the node.
func Prepare(ctx context.Context, o Options) (b *Bench, err error) {
	rounds, minRounds := o.Rounds, o.Rounds
	switch {
	case rounds < 0:
		return nil, vocab.Usagef("--rounds must be at least 1")
	case o.Budget < 0 || o.Budget > 24*time.Hour:
		return nil, vocab.Usagef("--budget %s is out of range: give a duration up to 24h, e.g. 6m", o.Budget)
	case o.Budget > 0 && rounds > 0 && rounds < BudgetMinRounds:
		return nil, vocab.Usagef("--budget needs at least %d rounds to rank modes: leave --rounds out or give more", BudgetMinRounds)
	case o.Budget > 0 && rounds == 0:
		rounds, minRounds = BudgetRounds, BudgetMinRounds
	case o.Budget > 0:
		minRounds = min(rounds, BudgetMinRounds)
	case rounds == 0 && o.Quick:
		rounds, minRounds = QuickRounds, QuickMinRounds
	case rounds == 0:
		rounds, minRounds = DefaultRounds, DefaultMinRounds
	}
	if o.Count < 0 {
		return nil, vocab.Usagef("--count must be positive")
	}
	target := o.Target
	if target == 0 {
		target = DefaultTarget
		if o.Quick {
			target = QuickTarget
		}
	}
	if target < 10*time.Millisecond || target > time.Hour {
		return nil, vocab.Usagef("--target %s is out of range: give a duration from 10ms to 1h, e.g. 1s", target)
	}
	if len(o.Modes) == 0 && o.Quick {
		o.Modes = QuickModes
	}
	only, plain, err := splitModeStorage(o.Modes)
	if err != nil {
		return nil, err
	}
	modes, err := parseModes(plain)
	if err != nil {
		return nil, err
	}
	if len(o.Command) > 0 && len(o.Workloads) > 0 {
		return nil, vocab.Usagef("give --workload or a command after --, not both")
	}
	var metric *Metric
	switch {
	case o.Metric != "" && len(o.Command) == 0:
		return nil, vocab.Usagef("--metric reads a figure from the output of a command given after --: add one, e.g. -- ab -n 1000 http://127.0.0.1/")
	case o.HigherIsBetter && o.Metric == "":
		return nil, vocab.Usagef("--higher-is-better goes with --metric REGEX")
	case o.Metric != "":
		if metric, err = NewMetric(o.Metric, o.HigherIsBetter); err != nil {
			return nil, err
		}
	}
	names, counts, err := splitWorkloadCounts(o.Workloads)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 && len(o.Command) == 0 {
		names = Builtins()
	}
	for _, n := range names {
		if !slices.Contains(Builtins(), n) && !isApp(n) && n != "apps" && !IsRate(n) {
			return nil, vocab.Usagef("unknown workload %q: use %s, the rate workloads %s (with --rate), the application workloads %s (or apps: all installed ones), or give a command after --",
				n, strings.Join(Builtins(), ", "), strings.Join(RateWorkloads, ", "), strings.Join(Apps(), ", "))
		}
	}
	rates := o.Rates
	switch {
	case len(rates) > 0 && !slices.ContainsFunc(names, IsRate):
		return nil, vocab.Usagef("--rate paces %s: add one of them to --workload, e.g. --workload exec-rate --rate %s",
			strings.Join(RateWorkloads, " or "), strconv.FormatFloat(rates[0], 'f', -1, 64))
	case len(rates) == 0:
		rates = DefaultRates
	}
	for _, r := range rates {
		if !(r >= 1 && r <= 1e6) {
			return nil, vocab.Usagef("--rate %v is out of range: give events a second from 1 to 1000000, e.g. 300", r)
		}
	}
	if names, err = expandWorkloads(names); err != nil {
		return nil, err
	}
	appTarget := AppTarget
	switch {
	case o.Target != 0:
		appTarget = o.Target
	case o.Quick:
		appTarget = QuickAppTarget
	}
	var sweepNames []string
	for _, n := range names {
		if slices.Contains(SweepWorkloads, n) {
			sweepNames = append(sweepNames, n)
		}
	}
	if o.Sweep && len(sweepNames) == 0 {
		return nil, vocab.Usagef("--sweep paces %s: include one of them in --workload", strings.Join(SweepWorkloads, " or "))
	}
	if o.LogDir != "" && len(o.Storage) > 0 {
		return nil, vocab.Usagef("give --storage or --log-dir, not both")
	}
	kinds := o.Storage
	if o.LogDir != "" {
		kinds = []string{"dir"}
	}
	if len(kinds) == 0 {
		kinds = []string{"ssd"}
	}
	for _, k := range kinds {
		if k != "ssd" && k != "hdd" && k != "dir" {
			return nil, vocab.Usagef("unknown --storage %q: use ssd or hdd (or --log-dir DIR)", k)
		}
	}
	for m, ks := range only {
		for _, k := range ks {
			if !slices.Contains(kinds, k) {
				return nil, vocab.Usagef("--modes %s@%s: %s is not among the storages (%s): add it to --storage, e.g. --storage ssd,hdd", m, k, k, strings.Join(kinds, ","))
			}
		}
	}
	root := os.Geteuid() == 0
	if rootOnly := slices.DeleteFunc(slices.Clone(modes), func(m string) bool { return !needsRoot(m) }); len(rootOnly) > 0 && !root {
		return nil, vocab.Usagef("tracer bench needs root for modes %s (rules, probes, auditd): run it with sudo", strings.Join(rootOnly, ", "))
	}
	if o.RestartAuditd && !root {
		return nil, vocab.Usagef("--restart-auditd needs root: run it with sudo")
	}
	touchesAudit := slices.ContainsFunc(modes, usesAudit)
	var nodeAud *nodeAuditd
	if root && (touchesAudit || o.RestartAuditd) {
		if nodeAud, err = findNodeAuditd(); err != nil {
			return nil, err
		}
	}
	if o.RestartAuditd && nodeAud != nil {
		if why := nodeAud.restartable(); why != "" {
			return nil, vocab.Usagef("--restart-auditd: %s; stop it yourself, or run without --restart-auditd to measure it as it runs", why)
		}
	}

	b = &Bench{Info: result.RunInfo{Started: time.Now().UTC(), Quick: o.Quick, Modes: resultModes(modes)}}
	b.Info.MachineID, b.Info.BootID = machineIdentity()
	made := b // the named result is nil on the error paths below
	defer func() {
		if err != nil {
			_ = made.Close()
		}
	}()
	logf := func(format string, args ...any) {
		if o.Log != nil {
			o.Log(fmt.Sprintf(format, args...))
		}
	}
	if root && (touchesAudit || o.RestartAuditd || slices.Contains(kinds, "hdd")) {
		b.state = newBenchState()
		if touchesAudit || o.RestartAuditd {
			if b.state.Audit, err = readAuditSettings(); err != nil {
				b.state.Audit = nil // audit not in this kernel: the audit modes skip themselves
			}
		}
		if err := b.state.write(); err != nil {
			return nil, err
		}
	}
	switch {
	case nodeAud == nil && (touchesAudit || o.RestartAuditd):
		b.Info.Auditd = "none running"
	case nodeAud == nil:
	case o.RestartAuditd:
		if nodeAud.Rules, err = nodeOwnRules(); err != nil {
			return nil, err
		}
		b.state.StoppedAuditd = nodeAud
		if err := b.state.write(); err != nil {
			return nil, err
		}
		logf("stopping the node's auditd (pid %d, %s) for the bench; it is started again after", nodeAud.PID, strings.Join(nodeAud.Argv, " "))
		if err := nodeAud.stop(); err != nil {
			return nil, err
		}
		b.Info.Auditd = fmt.Sprintf("the node's auditd (%s) stopped for the bench and started again after", strings.Join(nodeAud.Argv, " "))
	default:
		b.Info.Auditd = fmt.Sprintf("the node's auditd running (pid %d): measured as it is, the audit modes beside it", nodeAud.PID)
	}

	if b.workDir, err = os.MkdirTemp("/var/tmp", stalePrefix()); err != nil {
		return nil, fmt.Errorf("making work directory: %w", err)
	}
	if o.Cgroup != "" && !root {
		return nil, errors.New("--cgroup needs root: the workloads' cgroup is made below it")
	}
	if root {
		removeStale()
		if b.cgroup, err = NewCgroup(o.Cgroup); err != nil {
			return nil, err
		}
		if o.Cgroup != "" {
			b.Info.Cgroup = b.cgroup.Scope
			logf("workloads run in %s; the tracer modes watch %s and below it (bpftrace: the workload's cgroup)", b.cgroup.Path, b.cgroup.Scope)
		}
	}
	if o.Count == 0 {
		b.Info.TargetS = target.Seconds()
	}
	// A workload's own count (NAME:COUNT) before --count.
	countOf := func(n string) int64 {
		if c := counts[n]; c > 0 {
			return c
		}
		return o.Count
	}
	for _, n := range names {
		var w *Workload
		if IsRate(n) {
			// Paced, not calibrated: the count is the rate times the target.
			for _, r := range rates {
				count := countOf(n)
				if count == 0 {
					count = max(1, int64(math.Round(r*target.Seconds())))
				}
				if w, err = NewRate(n, r, count, o.Self); err != nil {
					return nil, err
				}
				b.Workloads = append(b.Workloads, w)
			}
			continue
		}
		if isApp(n) {
			if c := countOf(n); c > 0 {
				w, err = NewApp(n, c)
			} else {
				var el float64
				w, el, err = CalibrateApp(ctx, n, appTarget, b.workDir, b.cgroup)
				if err == nil {
					logf("workload %s sized to %d for at least %s untraced (took %.2fs)", n, w.Count, appTarget, el)
				}
			}
			if err != nil {
				return nil, err
			}
			b.Workloads = append(b.Workloads, w)
			continue
		}
		if c := countOf(n); c > 0 {
			w, err = NewBuiltin(n, c, o.Self, b.workDir)
		} else {
			var el float64
			w, el, err = Calibrate(ctx, n, target, o.Self, b.workDir, b.cgroup)
			if err == nil {
				logf("workload %s sized to %d for at least %s untraced (took %.2fs)", n, w.Count, target, el)
			}
		}
		if err != nil {
			return nil, err
		}
		b.Workloads = append(b.Workloads, w)
	}
	if len(o.Command) > 0 {
		w := NewCommand(o.Command)
		w.Metric = metric
		b.Workloads = append(b.Workloads, w)
	}
	env := modeEnv{self: o.Self, hasCgroup: b.cgroup != nil, ringBytes: o.RingBytes}
	var all []Mode
	needLog := false
	for _, name := range modes {
		m, err := newMode(name, env)
		if err != nil {
			return nil, err
		}
		all = append(all, m)
		// The node's own auditd writes its own log: the storage is not bench's to choose.
		if m.WritesLog() && !(measuresNodeAuditd(name) && nodeAud != nil && !o.RestartAuditd) {
			needLog = true
		}
	}
	if needLog {
		for _, k := range kinds {
			s, err := OpenStorage(k, o.LogDir, b.recordControllers)
			if err != nil {
				return nil, err
			}
			b.Storages = append(b.Storages, s)
		}
	}
	var variants []Variant
	for i, name := range modes {
		m := all[i]
		nodeOwn := measuresNodeAuditd(name) && nodeAud != nil && !o.RestartAuditd
		if !m.WritesLog() || nodeOwn {
			variants = append(variants, Variant{Mode: m})
			continue
		}
		made := 0
		for _, s := range b.Storages {
			if ks := only[name]; len(ks) > 0 && !slices.Contains(ks, s.Kind) && !(s.Kind == "hdd-simulated" && slices.Contains(ks, "hdd")) {
				continue
			}
			made++
			if made > 1 {
				if m, err = newMode(name, env); err != nil {
					return nil, err
				}
			}
			variants = append(variants, Variant{Mode: m, Storage: s})
		}
	}
	b.Runner = &Runner{Workloads: b.Workloads, Variants: variants, Rounds: rounds, MinRounds: minRounds,
		Budget: o.Budget, WorkDir: b.workDir, Cgroup: b.cgroup, Progress: o.Progress}
	b.Info.BudgetS = o.Budget.Seconds()
	for _, s := range b.Storages {
		b.Info.Storages = append(b.Info.Storages, result.StorageInfo{Label: s.Label, Desc: s.Desc})
	}
	if o.Sweep {
		step := max(target.Seconds(), 0.5)
		b.Runner.Sweep = NewSweep(sweepNames, step, o.Self)
	}
	return b, nil
}

// splitModeStorage reads --modes entries of the form MODE@STORAGE (a mode
// run on that storage only, e.g. auditd-sync@ssd: flush=SYNC on a spinning
// disk writes a few records a second), returning the storages per mode and
// the plain mode names.
func splitModeStorage(in []string) (map[string][]string, []string, error) {
	only := map[string][]string{}
	var plain []string
	for _, m := range in {
		name, kind, ok := strings.Cut(strings.TrimSpace(m), "@")
		if ok {
			if kind != "ssd" && kind != "hdd" {
				return nil, nil, vocab.Usagef("--modes %s: the storage after @ is ssd or hdd, e.g. auditd-sync@ssd", m)
			}
			only[name] = append(only[name], kind)
		}
		plain = append(plain, name)
	}
	return only, plain, nil
}

// splitWorkloadCounts reads --workload entries of the form NAME:COUNT (a
// built-in's iterations, kills, calls or spawns; a rate workload's events
// per rate), returning the plain names and the counts.
func splitWorkloadCounts(in []string) ([]string, map[string]int64, error) {
	counts := map[string]int64{}
	var names []string
	for _, w := range in {
		name, c, ok := strings.Cut(strings.TrimSpace(w), ":")
		if ok {
			n, err := strconv.ParseInt(c, 10, 64)
			if err != nil || n < 1 {
				return nil, nil, vocab.Usagef("--workload %s: the count after : is a positive number, e.g. signal-storm:20000", w)
			}
			counts[name] = n
		}
		names = append(names, name)
	}
	return names, counts, nil
}

// recordControllers notes in the state file the cgroup controllers the
// simulated HDD is about to enable.
func (b *Bench) recordControllers(enabled []string) error {
	if b.state == nil {
		b.state = newBenchState()
	}
	b.state.IOEnabled = append(b.state.IOEnabled, enabled...)
	return b.state.write()
}

// parseModes checks mode names and puts the baseline first.
func parseModes(in []string) ([]string, error) {
	if len(in) == 0 {
		in = DefaultModes
	}
	out := []string{baseline}
	for _, m := range in {
		m = strings.TrimSpace(m)
		if m == "" || slices.Contains(out, m) {
			continue
		}
		if _, ok := modeSpecs[m]; !ok {
			return nil, unknownMode(m)
		}
		out = append(out, m)
	}
	return out, nil
}

// Run runs the bench (see Runner.Run).
func (b *Bench) Run(ctx context.Context) ([]result.Row, error) { return b.Runner.Run(ctx) }

// Close removes the storages, the cgroup and the work directory, starts
// the node's auditd again when bench stopped it, and puts back the audit
// settings as bench found them.
func (b *Bench) Close() error {
	var errs []error
	for i := len(b.Storages) - 1; i >= 0; i-- {
		errs = append(errs, b.Storages[i].Close())
	}
	errs = append(errs, b.cgroup.Close())
	if b.workDir != "" {
		errs = append(errs, os.RemoveAll(b.workDir))
	}
	if b.state != nil {
		// Every mode put back what it changed; this catches what a mode
		// that failed half-way could not. While another tracer runs, its
		// own bookkeeping restores the settings when it leaves.
		if audit.TracersRunning() {
			b.state.Audit = nil
		}
		_, err := b.state.undo()
		errs = append(errs, err)
		if err == nil {
			b.state.remove()
		}
	}
	return errors.Join(errs...)
}

// machineIdentity reads the machine id and the boot id, which tell apart
// nodes that share a hostname, and boots of one node.
func machineIdentity() (machine, boot string) {
	if b, err := os.ReadFile("/etc/machine-id"); err == nil {
		machine = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		boot = strings.TrimSpace(string(b))
	}
	return machine, boot
}
