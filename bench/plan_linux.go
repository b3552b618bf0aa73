//go:build linux

package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/tracer-dev/tracer/tracer"
)

// Options is what `tracer bench` asks for.
type Options struct {
	// Workloads are built-in names; none and no Command: all built-ins.
	Workloads []string
	// Command, when set, is the one workload (a command given after --).
	Command []string
	// Count overrides the built-in workloads' counts (0: default).
	Count  int64
	Modes  []string
	Rounds int // 0: 5, or 2 with Quick
	Quick  bool
	// Storage kinds (ssd, hdd) for modes that write a log; LogDir instead
	// puts the logs in a directory of the user's.
	Storage []string
	LogDir  string
	// Self is this program: the watcher and the Go workload loops.
	Self     string
	Progress func(Progress)
}

// DefaultRounds is the number of rounds of a full run and of a --quick run.
const (
	DefaultRounds = 5
	QuickRounds   = 2
)

// Bench is a prepared bench run: storages mounted, workload cgroup made,
// modes chosen. Close undoes all of it.
type Bench struct {
	Runner    *Runner
	Workloads []*Workload
	Storages  []*Storage
	cgroup    *Cgroup
	workDir   string
}

// Prepare checks o and sets up what the runs need. Errors that the user can
// fix are tracer.UsageError.
func Prepare(o Options) (b *Bench, err error) {
	rounds := o.Rounds
	if rounds == 0 {
		rounds = DefaultRounds
		if o.Quick {
			rounds = QuickRounds
		}
	}
	if rounds < 1 {
		return nil, tracer.Usagef("--rounds must be at least 1")
	}
	if o.Count < 0 {
		return nil, tracer.Usagef("--count must be positive")
	}
	modes, err := parseModes(o.Modes)
	if err != nil {
		return nil, err
	}
	if len(o.Command) > 0 && len(o.Workloads) > 0 {
		return nil, tracer.Usagef("give --workload or a command after --, not both")
	}
	names := o.Workloads
	if len(names) == 0 && len(o.Command) == 0 {
		names = Builtins()
	}
	for _, n := range names {
		if !slices.Contains(Builtins(), n) {
			return nil, tracer.Usagef("unknown workload %q: use %s, or give a command after --", n, strings.Join(Builtins(), ", "))
		}
	}
	if o.LogDir != "" && len(o.Storage) > 0 {
		return nil, tracer.Usagef("give --storage or --log-dir, not both")
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
			return nil, tracer.Usagef("unknown --storage %q: use ssd or hdd (or --log-dir DIR)", k)
		}
	}
	if slices.ContainsFunc(modes, func(m string) bool { return m != "none" }) && os.Geteuid() != 0 {
		return nil, tracer.Usagef("tracer bench needs root for modes other than none (rules, probes, auditd): run it with sudo")
	}

	b = &Bench{}
	defer func() {
		if err != nil {
			_ = b.Close()
		}
	}()
	if b.workDir, err = os.MkdirTemp("/var/tmp", stalePrefix()); err != nil {
		return nil, fmt.Errorf("making work directory: %w", err)
	}
	for _, n := range names {
		w, err := NewBuiltin(n, o.Count, o.Quick, o.Self, b.workDir)
		if err != nil {
			return nil, err
		}
		b.Workloads = append(b.Workloads, w)
	}
	if len(o.Command) > 0 {
		b.Workloads = append(b.Workloads, NewCommand(o.Command))
	}
	if os.Geteuid() == 0 {
		removeStale()
		if b.cgroup, err = NewCgroup(); err != nil {
			return nil, err
		}
	}
	needLog := slices.ContainsFunc(modes, func(m string) bool { return m != "none" && m != "bpftrace" })
	if needLog {
		for _, k := range kinds {
			s, err := OpenStorage(k, o.LogDir)
			if err != nil {
				return nil, err
			}
			b.Storages = append(b.Storages, s)
		}
	}
	var variants []Variant
	for _, name := range modes {
		if name == "none" || name == "bpftrace" {
			m, err := newMode(name, o.Self, b.cgroup != nil)
			if err != nil {
				return nil, err
			}
			variants = append(variants, Variant{Mode: m})
			continue
		}
		for _, s := range b.Storages {
			m, err := newMode(name, o.Self, b.cgroup != nil)
			if err != nil {
				return nil, err
			}
			variants = append(variants, Variant{Mode: m, Storage: s})
		}
	}
	b.Runner = &Runner{Workloads: b.Workloads, Variants: variants, Rounds: rounds,
		WorkDir: b.workDir, Cgroup: b.cgroup, Progress: o.Progress}
	return b, nil
}

// parseModes checks mode names and puts the baseline first.
func parseModes(in []string) ([]string, error) {
	if len(in) == 0 {
		in = DefaultModes
	}
	out := []string{"none"}
	for _, m := range in {
		m = strings.TrimSpace(m)
		if m == "" || slices.Contains(out, m) {
			continue
		}
		if !slices.Contains(ModeNames, m) {
			return nil, tracer.Usagef("unknown mode %q: use %s", m, strings.Join(ModeNames, ", "))
		}
		out = append(out, m)
	}
	return out, nil
}

func newMode(name, self string, hasCgroup bool) (Mode, error) {
	switch name {
	case "none":
		return noneMode{}, nil
	case "audit", "ebpf", "ebpf-syscalls":
		return NewTracerMode(name, self)
	case "auditd", "auditd-incremental", "auditd-sync", "auditd-data":
		return NewAuditdMode(name, self)
	case "bpftrace":
		return NewBpftraceMode(hasCgroup), nil
	}
	return nil, tracer.Usagef("unknown mode %q: use %s", name, strings.Join(ModeNames, ", "))
}

// Run runs the bench (see Runner.Run).
func (b *Bench) Run(ctx context.Context) ([]Result, error) { return b.Runner.Run(ctx) }

// Close removes the storages, the cgroup and the work directory.
func (b *Bench) Close() error {
	var errs []error
	for i := len(b.Storages) - 1; i >= 0; i-- {
		errs = append(errs, b.Storages[i].Close())
	}
	errs = append(errs, b.cgroup.Close())
	if b.workDir != "" {
		errs = append(errs, os.RemoveAll(b.workDir))
	}
	return errors.Join(errs...)
}
