// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfbackend

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/bpf"
	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracefs"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// unavailable reports whether a load or attach error means the kernel
// lacks something the probe set needs.
func unavailable(err error) bool {
	var ve *ebpf.VerifierError
	return errors.Is(err, errMissingTarget) || errors.Is(err, errNoTracefs) || errors.Is(err, ebpf.ErrNotSupported) ||
		(errors.As(err, &ve) && strings.Contains(fmt.Sprint(ve.Log), "unknown func"))
}

// syscallsOnly names what cfg asks for that only the syscalls probe set
// sees, or "": failed exec attempts, and signal 0 (no signal is generated).
func syscallsOnly(cfg tracer.Config) string {
	switch {
	case cfg.ExecFailures && cfg.Types.Has(vocab.TypeExec):
		return "failed exec attempts (--exec-failures)"
	case cfg.Signals.KeepsNoise(vocab.FilteredExistence) && cfg.Types.Has(vocab.TypeSignal):
		return "existence checks (--signal 0)"
	}
	return ""
}

func (b *Backend) start(cfg tracer.Config, set string) error {
	kernel := b.kernel.own // nil without the kernel's own BTF
	var (
		events []probe
		err    error
	)
	// The syscalls set sends its signal records directly.
	b.batch = b.canBatch && set != ProbesSyscalls
	// BTF tracepoints follow the process tree where the kernel has them.
	b.track = trackProbes(hasTracepoint(kernel, "sched_process_fork") && cfg.Attach != AttachTracepoint)
	// Who killed it comes from raw tracepoints where BTF tracepoints are
	// not to be used; the signal syscalls then say which one a thread is
	// in (sig_calls), which those cannot read.
	b.rawAttribution = set == ProbesSyscalls && !cfg.CountOnly &&
		(kernel == nil || cfg.Attach == AttachTracepoint) &&
		(cfg.Types.Has(vocab.TypeSignal) || cfg.Types.Has(vocab.TypeExit))
	switch set {
	case ProbesSched:
		if events, b.track, err = schedProbes(kernel, cfg.Types); err != nil {
			return err
		}
	case ProbesFEntry:
		if events, err = fentryProbes(kernel, cfg.Types); err != nil {
			return vocab.Usagef("--probes fentry: %w: use --probes default", err)
		}
	default:
		events = tracepointProbes(cfg.Types, b.rawAttribution)
	}
	if !cfg.CountOnly {
		who := attributionProbes(kernel, b.kernel.types, cfg.Types, set, b.rawAttribution)
		for _, p := range who {
			if p.name == "proc_exit" {
				// It removes exited processes from the tree after
				// reporting them: it replaces the tree's exit probe.
				for i := range b.track {
					if b.track[i].target == "sched_process_exit" {
						b.track[i] = p
					}
				}
			}
		}
		events = append(events, who...)
		// Who killed it: the sched set's own BTF tracepoints, the other
		// sets' attribution probes (BTF or raw tracepoints), or nothing
		// when none is attached.
		b.attribution = AttributionNone
		switch {
		case b.rawAttribution:
			b.attribution = AttachRawTP
		case set == ProbesSched || slices.ContainsFunc(who, func(p probe) bool { return p.name == "sched_signal" || p.name == "proc_exit" }):
			b.attribution = AttachTpBTF
		}
	}
	b.probes = set

	spec, err := bpf.LoadTracer()
	if err != nil {
		return fmt.Errorf("loading the BPF object: %w", err)
	}
	if err := b.configure(spec, cfg, set); err != nil {
		return err
	}
	if b.batch {
		// Attached first: a task's batched records go to the ring when it
		// leaves a CPU, before it can send others from another.
		events = append([]probe{{name: "switch_flush", prog: "switch_flush", hook: hookRawTP, target: "sched_switch"}}, events...)
	}
	progs := append(events, b.track...)
	if b.batch {
		progs = append(progs, probe{name: "flush_batch", prog: "flush_batch", hook: hookNone})
	}
	// A throttle that ends in silence is said by a sweep of the rate
	// limit's map, where the kernel can run one (Linux 5.13+); elsewhere
	// at the source's next event, or never.
	b.sweep = cfg.RateLimit > 0 && !cfg.CountOnly && b.kernel.transport == TransportRingbuf &&
		features.HaveProgramHelper(ebpf.RawTracepoint, asm.FnForEachMapElem) == nil && haveRunOnCPU()
	if b.sweep {
		progs = append(progs, probe{name: "rate_sweep", prog: "rate_sweep", hook: hookNone},
			probe{name: "rate_final", prog: "rate_final", hook: hookNone})
	}
	if spec.Programs, err = programSpecs(spec, progs); err != nil {
		return err
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{
		Programs: ebpf.ProgramOptions{KernelTypes: b.kernel.types},
	})
	if err != nil {
		return loadError(err, set)
	}
	b.coll = coll
	if err := b.fillSelection(cfg); err != nil {
		return err
	}
	if !cfg.CountOnly {
		b.cgroups = newCgroupNames()
	}

	// Readers exist before the first record: perf output to a CPU
	// without a reader fails.
	if !cfg.CountOnly {
		if b.tr, err = b.openTransport(coll, spec); err != nil {
			return err
		}
	}
	if cfg.BPFStats {
		if b.bpfStats, err = ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME)); err != nil {
			return fmt.Errorf("enabling BPF run-time statistics: %w", err)
		}
	}
	// The tracked set is filled, and its probes attached, before any event
	// probe: nothing outside the tree slips through at start.
	for _, pid := range cfg.TreeRoots() {
		if err := b.startTracking(pid); err != nil {
			return err
		}
	}
	attachAll := func() error {
		for _, p := range events {
			if err := b.attach(p); err != nil {
				if p.optional && errors.Is(err, os.ErrNotExist) {
					continue
				}
				return err
			}
		}
		return nil
	}
	if set != ProbesSyscalls {
		return attachAll()
	}
	// Tracepoint ids come from tracefs, needed only while attaching. Where
	// it is not mounted, attach in a private mount namespace: nothing is
	// mounted for the node, and concurrent tracers cannot unmount it from
	// under each other.
	err = tracefs.Do(attachAll)
	if errors.Is(err, tracefs.ErrUnavailable) {
		return &noTracefsError{vocab.UsageError{Msg: fmt.Sprintf(
			"syscall tracepoints need tracefs (%v): mount -t tracefs tracefs %s, or use --probes sched", err, tracefs.Path)}}
	}
	return err
}

// haveRunOnCPU reports whether a raw tracepoint program can be run on a
// chosen CPU (BPF_PROG_TEST_RUN with BPF_F_TEST_RUN_ON_CPU, Linux 5.10+).
func haveRunOnCPU() bool {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:         ebpf.RawTracepoint,
		License:      "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	})
	if err != nil {
		return false
	}
	defer prog.Close()
	_, err = prog.Run(&ebpf.RunOptions{CPU: 0, Flags: unix.BPF_F_TEST_RUN_ON_CPU})
	return err == nil
}

func bitsLen(n int) int {
	l := 0
	for ; n > 0; n >>= 1 {
		l++
	}
	return l
}

// configure sets the programs' constants and sizes the maps for cfg.
func (b *Backend) configure(spec *ebpf.CollectionSpec, cfg tracer.Config, set string) error {
	var sigLo, sigHi uint64
	for _, n := range cfg.Signals.List() {
		if n < 64 {
			sigLo |= 1 << n
		} else {
			sigHi |= 1 << (n - 64)
		}
	}
	// One comm is two constants; several are the comms map
	// (fillSelection).
	sel := selectionOf(cfg)
	var comm [commLen]byte
	commOn := uint8(0)
	switch {
	case len(sel.comms) == 1:
		commOn = 1
		copy(comm[:], sel.comms[0])
	case len(sel.comms) > 1:
		commOn = 2
	}
	var exe [FilenameMax + 1]byte
	copy(exe[:], sel.exe)
	consts := map[string]any{
		"cfg_count_only": boolByte(cfg.CountOnly),
		"cfg_types":      uint8(cfg.Types),
		"cfg_perfbuf":    boolByte(b.kernel.transport == TransportPerf),
		"cfg_batch":      boolByte(b.batch),
		"cfg_sig_all":    boolByte(cfg.Signals.All()),
		"cfg_sig_lo":     sigLo,
		"cfg_sig_hi":     sigHi,
		"cfg_comm_on":    commOn,
		"cfg_comm_lo":    binary.LittleEndian.Uint64(comm[:8]),
		"cfg_comm_hi":    binary.LittleEndian.Uint64(comm[8:]),
		"cfg_wake_bytes": uint64(cfg.RingBytes / 4),
		// With --max-delay the reader's timer bounds the delay: no wakeup
		// per event (see wake_flags).
		"cfg_wake_interval_ns": wakeInterval(cfg),
		"cfg_sig_sched":        boolByte(set == ProbesSched),
		"cfg_sig_calls":        boolByte(b.rawAttribution),
		// tracer never reports itself: its runtime's signals, its own
		// liveness checks, the children it starts.
		"cfg_self_tgid":      uint32(os.Getpid()),
		"cfg_keep_preempt":   boolByte(cfg.Signals.KeepsNoise(vocab.FilteredPreemption)),
		"cfg_keep_existence": boolByte(cfg.Signals.KeepsNoise(vocab.FilteredExistence)),
		"cfg_exec_failures":  boolByte(cfg.ExecFailures),
		"cfg_rate_limit":     rateLimit(cfg),
		"cfg_uid_on":         boolByte(len(sel.uids) > 0),
		"cfg_auid_set":       boolByte(cfg.AuidSet),
		"cfg_exe_len":        uint32(len(sel.exe)),
		"cfg_exe":            exe,
	}
	cg, err := cgroupFilter(cfg.Cgroup)
	if err != nil {
		return err
	}
	consts["cfg_cgroup_id"], consts["cfg_cgroup_level"] = cg.id, cg.level
	for name, v := range consts {
		vs, ok := spec.Variables[name]
		if !ok {
			return fmt.Errorf("BPF object has no variable %s", name)
		}
		if err := vs.Set(v); err != nil {
			return fmt.Errorf("setting %s: %w", name, err)
		}
	}

	events := spec.Maps["events"]
	if b.kernel.transport == TransportPerf {
		events.Type, events.KeySize, events.ValueSize, events.MaxEntries = ebpf.PerfEventArray, 4, 4, 0
	} else if cfg.CountOnly {
		events.MaxEntries = uint32(os.Getpagesize())
	} else {
		events.MaxEntries = uint32(cfg.RingBytes)
	}
	// Maps a configuration does not use keep one entry: they must exist
	// for the programs to load, but need not take memory.
	unused := func(name string, used bool) {
		if !used {
			spec.Maps[name].MaxEntries = 1
		}
	}
	unused("execs", set != ProbesSched && cfg.Types.Has(vocab.TypeExec))
	unused("exec_comm", set == ProbesSched && cfg.Types.Has(vocab.TypeExec))
	unused("pending", set == ProbesSyscalls && cfg.Types.Has(vocab.TypeSignal))
	unused("sig_calls", b.rawAttribution)
	unused("exec_counts", cfg.CountOnly && cfg.Types.Has(vocab.TypeExec))
	unused("fork_counts", cfg.CountOnly && cfg.Types.Has(vocab.TypeFork))
	unused("signal_counts", cfg.CountOnly && cfg.Types.Has(vocab.TypeSignal))
	unused("killers", !cfg.CountOnly && cfg.Types.Has(vocab.TypeExit))
	unused("oom_victims", !cfg.CountOnly && cfg.Types.Has(vocab.TypeExit))
	unused("rates", rateLimit(cfg) != 0)
	unused("uids", len(sel.uids) > 0)
	unused("comms", len(sel.comms) > 1)
	return nil
}

// maxSelection bounds the uids and comms the kernel filters (the size of
// the uids and comms maps); past it they are filtered in user space only.
const maxSelection = 1024

// selection is what of --uid, --comm and --exe the kernel filters:
// tracer.Filter applies them all again in user space.
type selection struct {
	uids  []uint32
	comms []string
	exe   string // the last element of --exe's path: the kernel's part of tracer.MatchExe
}

func selectionOf(cfg tracer.Config) selection {
	var s selection
	if len(cfg.UIDs) <= maxSelection {
		s.uids = cfg.UIDs
	}
	if len(cfg.Comms) <= maxSelection {
		s.comms = cfg.Comms
	}
	if cfg.Exe != "" {
		if base := filepath.Base(filepath.Clean(cfg.Exe)); len(base) <= FilenameMax && base != "/" && base != "." && base != ".." {
			s.exe = base
		}
	}
	return s
}

// fillSelection fills the uids and comms maps the programs filter with,
// before they are attached.
func (b *Backend) fillSelection(cfg tracer.Config) error {
	sel := selectionOf(cfg)
	for _, uid := range sel.uids {
		if err := b.coll.Maps["uids"].Update(uid, uint8(1), ebpf.UpdateAny); err != nil {
			return fmt.Errorf("filling the uids map: %w", err)
		}
	}
	if len(sel.comms) > 1 {
		for _, c := range sel.comms {
			var key [commLen]byte
			copy(key[:], c)
			if err := b.coll.Maps["comms"].Update(key, uint8(1), ebpf.UpdateAny); err != nil {
				return fmt.Errorf("filling the comms map: %w", err)
			}
		}
	}
	return nil
}

// rateLimit is cfg_rate_limit: --rate-limit when streaming, 0 when
// counting (trace counts one command's events in kernel maps: nothing
// floods an output).
func rateLimit(cfg tracer.Config) uint32 {
	if cfg.CountOnly {
		return 0
	}
	return cfg.RateLimit
}

func boolByte(v bool) uint8 {
	if v {
		return 1
	}
	return 0
}

// loadError turns the kernel's refusals into what the user can do.
func loadError(err error, set string) error {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) && !errors.Is(err, unix.EPERM) {
		// EACCES with a log is the verifier's verdict on this kernel, not
		// a missing privilege: say which instruction it refused.
		return fmt.Errorf("this kernel's BPF verifier rejected a program (use --backend audit meanwhile, and report it): %w", err)
	}
	if !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EACCES) {
		return fmt.Errorf("loading BPF programs: %w", err)
	}
	if mode := lockdownMode(); mode != "" && mode != "none" {
		return vocab.Usagef("the kernel refused the BPF programs (lockdown=%s): boot with lockdown=none, or use --backend audit", mode)
	}
	if set == ProbesFEntry {
		return vocab.Usagef("the kernel refused fentry programs (%v): it does not allow BPF trampolines here, use --probes default", unix.EPERM)
	}
	return vocab.Usagef("the kernel refused the BPF programs (%v): run as root (CAP_BPF and CAP_PERFMON), or use --backend audit", unix.EPERM)
}

// startTracking puts pid in the tracked set, turns the filter on, and
// attaches the process-tree probes if they are not yet. The filter goes on
// first: in the sched set those probes are also the fork and exit event
// programs, which pass every process while it is off. They follow forks
// only once it is on, so this order loses nothing.
func (b *Backend) startTracking(pid uint32) error {
	if err := b.coll.Maps["tracked"].Put(pid, uint8(1)); err != nil {
		return fmt.Errorf("adding pid %d to the tracked set: %w", pid, err)
	}
	if !b.tracking {
		if err := b.setTrackOn(); err != nil {
			return err
		}
		for _, p := range b.track {
			if err := b.attach(p); err != nil {
				return err
			}
		}
		b.tracking, b.followed = true, true
	}
	return nil
}

// attach attaches p unless it is attached already (the sched set's fork
// and exit programs serve both events and the process tree).
func (b *Backend) attach(p probe) error {
	key := p.name + " " + p.String()
	if slices.Contains(b.linked, key) {
		return nil
	}
	l, err := attach(b.coll, p)
	if err != nil {
		return fmt.Errorf("attaching %s: %w", p, err)
	}
	b.links = append(b.links, l)
	b.linked = append(b.linked, key)
	return nil
}

func (b *Backend) setTrackOn() error {
	if err := b.coll.Maps["track_on"].Put(uint32(0), uint32(1)); err != nil {
		return fmt.Errorf("turning the process-tree filter on: %w", err)
	}
	return nil
}
