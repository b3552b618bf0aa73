// SPDX-License-Identifier: Apache-2.0

//go:build linux

// Package bpfbackend is the eBPF backend: it loads the BPF programs of
// package bpf (bpf/tracer.bpf.c and its headers), attaches them where
// processes exec, fork, signal and exit, filters in the kernel, and turns
// the records of the ring buffer into the same tracer.Events the audit
// backend produces.
//
// Backend implements tracer.Backend. Its default probes, when streaming,
// are BTF tracepoints on the scheduler and signal events (the sched set):
// no other syscall pays anything. Config.Probes "syscalls" attaches the
// syscall tracepoints audit's hook points correspond to, which also see
// failed calls and are the default in counting mode (Config.CountOnly),
// where events are only counted in kernel maps, read by Backend.Counts.
// "fentry" attaches to the syscall functions, where the kernel allows BPF
// trampolines. A process tree (Config.PID, Backend.Track) is followed at
// fork in the kernel. docs/backends.md has the details and the trade-offs.
package bpfbackend

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/perf"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/bpf"
	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracefs"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// DefaultRingBytes is the ring buffer size when Config.RingBytes is 0.
const DefaultRingBytes = 8 << 20

// pollInterval bounds how long a record the kernel queued without waking
// the reader (see wake_flags in bpf/headers/maps.h) waits to be read.
const pollInterval = 100 * time.Millisecond

// Indexes of the kernel's lost map (enum lost_index).
const (
	lostOutput = 0 // ring buffer full
	lostMap    = 1 // a kernel map full
)

// Backend is the eBPF backend. Create it with New.
type Backend struct {
	mu      sync.Mutex
	cfg     tracer.Config
	started bool
	closed  bool

	probes    string   // the probe set attached: ProbesSched, ProbesSyscalls or ProbesFEntry
	batch     bool     // signal records are batched per CPU (see flushFunc)
	canBatch  bool     // the kernel and transport allow batching
	transport string   // "ringbuf" or "perf"
	linked    []string // program and attach point of each link, so one program is not attached twice
	coll      *ebpf.Collection
	links     []link.Link
	track     []probe // process-tree probes, attached when tracking is on
	tracking  bool
	ring      *ringbuf.Reader
	ringWait  *ringWait
	batchEnd  func() // OnBatchEnd's
	running   bool   // Run reads the ring
	perf      *perf.Reader
	bpfStats  io.Closer
	cgroups   *cgroupNames // names the cgroup ids of records
	sweep     bool         // rate_sweep and rate_final are loaded (--rate-limit)

	events   [vocab.TypeThrottle + 1]atomic.Uint64
	perfLost atomic.Uint64
	badRecs  atomic.Uint64

	detachErr   error          // detaching when Run's context ended, reported by Close
	final       *tracer.Stats  // taken at Close
	finalCounts *tracer.Counts // taken at Close in counting mode

	// Tests force the fallbacks that this machine does not need.
	forcePerf     bool
	forceRawTrack bool
}

// New returns an eBPF backend; Start loads and attaches its programs.
func New() *Backend { return &Backend{} }

// Name is "ebpf".
func (b *Backend) Name() string { return "ebpf" }

// Start loads the programs for cfg, fills the tracked set with cfg.PID and
// any pid given to Track before, and attaches them. On error nothing stays
// loaded or attached.
func (b *Backend) Start(cfg tracer.Config) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started {
		return errors.New("ebpf backend already started")
	}
	if err := normalize(&cfg); err != nil {
		return err
	}
	kernel, err := preflight()
	if err != nil {
		return err
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return fmt.Errorf("removing the memlock limit for BPF maps: %w", err)
	}
	b.cfg = cfg
	b.transport = "ringbuf"
	if b.forcePerf || features.HaveMapType(ebpf.RingBuf) != nil {
		b.transport = "perf" // Linux < 5.8, early RHEL 8
	}
	// Batching needs a way to flush each CPU's batch from user space.
	b.canBatch = b.transport == "ringbuf" && !cfg.CountOnly && haveRunOnCPU()

	// The default: the sched set when streaming, so that no other syscall
	// pays; the syscalls set when counting, which counts every call as
	// audit and bench's bpftrace program do, failed execs included (a
	// count run is short and scoped to one command's tree). Either falls
	// back to the other where the kernel lacks what it needs.
	sets := []string{cfg.Probes}
	switch {
	case cfg.Probes != ProbesDefault:
	case cfg.CountOnly, syscallsOnly(cfg) != "":
		// Failed execs and existence checks happen only at the syscall.
		sets = []string{ProbesSyscalls, ProbesSched}
	default:
		sets = []string{ProbesSched, ProbesSyscalls}
	}
	var first error
	for _, set := range sets {
		if err = b.start(cfg, kernel, set); err == nil {
			break
		}
		_ = b.cleanup() // the next set, or the error below, says what matters
		if first == nil {
			first = fmt.Errorf("%s probes: %w", set, err)
		} else {
			err = fmt.Errorf("%w (before: %v)", err, first)
		}
		if !unavailable(err) {
			break
		}
	}
	if err != nil {
		return err
	}
	b.started = true
	return nil
}

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

// CheckRingBytes refuses a ring buffer size the kernel would not take: a
// power of two of at least a page.
func CheckRingBytes(n int) error {
	if page := os.Getpagesize(); n < page || n&(n-1) != 0 {
		return vocab.Usagef("--ring-size %d is not a power of two of at least %d bytes: use e.g. 8388608", n, page)
	}
	return nil
}

// normalize fills defaults and checks what the user gave.
func normalize(cfg *tracer.Config) error {
	if cfg.Types == 0 {
		cfg.Types = vocab.DefaultTypes
	}
	if cfg.Probes == "" {
		cfg.Probes = ProbesDefault
	}
	if err := CheckProbes(cfg.Probes); err != nil {
		return vocab.Usagef("%w", err)
	}
	if cfg.RingBytes == 0 {
		cfg.RingBytes = DefaultRingBytes
	}
	if err := CheckRingBytes(cfg.RingBytes); err != nil {
		return err
	}
	if why := syscallsOnly(*cfg); why != "" && cfg.Probes != ProbesDefault && cfg.Probes != ProbesSyscalls {
		return vocab.Usagef("%s are seen only at the syscall: use --probes syscalls (or default) with them, not --probes %s", why, cfg.Probes)
	}
	for _, c := range cfg.Comms {
		if err := tracer.CheckComm("--comm", c); err != nil {
			return err
		}
	}
	return nil
}

func (b *Backend) start(cfg tracer.Config, kernel *btf.Spec, set string) error {
	var (
		events []probe
		err    error
	)
	// The syscalls set sends its signal records directly.
	b.batch = b.canBatch && set != ProbesSyscalls
	// BTF tracepoints follow the process tree where the kernel has them.
	b.track = trackProbes(hasTracepoint(kernel, "sched_process_fork") && !b.forceRawTrack)
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
		events = tracepointProbes(cfg.Types)
	}
	if !cfg.CountOnly {
		who := attributionProbes(kernel, cfg.Types, set)
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
	b.sweep = cfg.RateLimit > 0 && !cfg.CountOnly && b.transport == "ringbuf" &&
		features.HaveProgramHelper(ebpf.RawTracepoint, asm.FnForEachMapElem) == nil && haveRunOnCPU()
	if b.sweep {
		progs = append(progs, probe{name: "rate_sweep", prog: "rate_sweep", hook: hookNone},
			probe{name: "rate_final", prog: "rate_final", hook: hookNone})
	}
	if spec.Programs, err = programSpecs(spec, progs); err != nil {
		return err
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{
		Programs: ebpf.ProgramOptions{KernelTypes: kernel},
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
		if b.transport == "ringbuf" {
			if b.ring, err = ringbuf.NewReader(coll.Maps["events"]); err != nil {
				return fmt.Errorf("opening the ring buffer: %w", err)
			}
			if b.ringWait, err = newRingWait(b.ring, coll, spec.Variables["reader_parked"]); err != nil {
				return err
			}
		} else {
			perCPU := cfg.RingBytes / runtime.NumCPU()
			perCPU = max(1<<(bitsLen(perCPU)-1), 16*os.Getpagesize())
			b.perf, err = perf.NewReaderWithOptions(coll.Maps["events"], perCPU, perf.ReaderOptions{Watermark: perCPU / 4})
			if err != nil {
				return fmt.Errorf("opening the perf buffer: %w", err)
			}
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
		"cfg_perfbuf":    boolByte(b.transport == "perf"),
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
	if b.transport == "perf" {
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
		b.tracking = true
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

// Run delivers events until ctx is done, then what the kernel queued
// before, and returns. In counting mode it only waits for ctx.
func (b *Backend) Run(ctx context.Context, emit func(*tracer.Event)) error {
	b.mu.Lock()
	started, countOnly, ring, pr := b.started, b.cfg.CountOnly, b.ring, b.perf
	b.mu.Unlock()
	if started && ring != nil && !countOnly {
		b.setRunning(true)
		defer b.setRunning(false)
	}
	switch {
	case !started:
		return errors.New("ebpf backend not started")
	case countOnly:
		<-ctx.Done()
		return nil
	case ring != nil:
		return b.runRing(ctx, ring, emit)
	case pr != nil:
		return b.runPerf(ctx, pr, emit)
	}
	return errors.New("ebpf backend closed")
}

// OnBatchEnd is tracer.Batcher's: f runs after each read of the ring that
// delivered records.
func (b *Backend) OnBatchEnd(f func()) {
	b.mu.Lock()
	b.batchEnd = f
	b.mu.Unlock()
}

// setRunning marks the ring as Run's to read (see unread).
func (b *Backend) setRunning(on bool) {
	b.mu.Lock()
	b.running = on
	b.mu.Unlock()
}

// wakeInterval is cfg_wake_interval_ns: 0 with --max-delay (the reader's
// timer alone), 5 ms without.
func wakeInterval(cfg tracer.Config) uint64 {
	if cfg.MaxDelay > 0 {
		return 0
	}
	return uint64(5 * time.Millisecond)
}

// batchMayHold says whether a CPU may hold batched signal records, so that
// a quiet node costs no flush (a run on each CPU) per deadline. A batch only
// starts within the tick of a signal sent to the ring directly (the first
// of its tick on that CPU: see on_signal), so it follows a signal the
// reader saw at most a tick and a deadline ago: 2*every+20ms (HZ 100's tick
// twice) covers it.
func (b *Backend) batchMayHold(seen *uint64, last *time.Time, every time.Duration) bool {
	if !b.batch {
		return false
	}
	now := time.Now()
	if n := b.events[vocab.TypeSignal].Load(); n != *seen {
		*seen, *last = n, now
	}
	return now.Sub(*last) <= 2*every+20*time.Millisecond
}

// readEvery is how long the reader sleeps at most: half of --max-delay
// (the output's flush takes the other half), or pollInterval.
func readEvery(cfg tracer.Config) time.Duration {
	if cfg.MaxDelay > 0 {
		return cfg.MaxDelay / 2
	}
	return pollInterval
}

func (b *Backend) runRing(ctx context.Context, rd *ringbuf.Reader, emit func(*tracer.Event)) error {
	b.mu.Lock()
	w, batchEnd := b.ringWait, b.batchEnd
	b.mu.Unlock()
	w.start()
	every := readEvery(b.cfg)
	flush := b.flushFunc()
	sweep, final := b.sweepFuncs()
	stopped := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(stopped)
		// The probes stop first, so that what the CPUs batched and the
		// ring holds is all they took: nothing is left for Close to free.
		b.detach()
		flush()
		final()
		w.stop()
	})
	defer stop()
	if sweep != nil {
		go tracer.Every(ctx, rateSweepEvery, sweep)
	}
	d := b.newDecoder()
	ev := new(tracer.Event)
	var rec ringbuf.Record
	// drain reads what the ring holds now, without waiting, and ends the
	// batch.
	drain := func() (n int, err error) {
		rd.SetDeadline(time.Unix(1, 0))
		for {
			err := rd.ReadInto(&rec)
			if err == nil {
				n++
				b.deliverBatch(d, rec.RawSample, ev, emit)
				continue
			}
			if n > 0 && batchEnd != nil {
				batchEnd()
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return n, nil
			}
			return n, err
		}
	}
	// done ends the run: a closed ring is the end too.
	done := func(err error) error {
		if err == nil || errors.Is(err, ringbuf.ErrClosed) {
			return nil
		}
		return fmt.Errorf("reading the ring buffer: %w", err)
	}
	var (
		timedOut, flushed bool
		signals           uint64    // signal events read at the last deadline
		lastSignal        time.Time // when that count last moved
	)
	for {
		n, err := drain()
		if err != nil {
			return done(err)
		}
		if ctx.Err() != nil {
			<-stopped
			_, err := drain()
			return done(err)
		}
		mayHold := timedOut && b.batchMayHold(&signals, &lastSignal, every)
		if mayHold && !flushed {
			// What the CPUs batched reaches the ring without a wakeup:
			// read it now, not a deadline later.
			flush()
			flushed = true
			continue
		}
		flushed = false
		// Nothing came over a whole deadline and no CPU holds a batch:
		// sleep until the kernel has a record.
		park := timedOut && n == 0 && !mayHold
		if timedOut, err = w.wait(every, park); err != nil {
			return err
		}
	}
}

func (b *Backend) runPerf(ctx context.Context, rd *perf.Reader, emit func(*tracer.Event)) error {
	stop := context.AfterFunc(ctx, func() {
		b.detach()
		_ = rd.Flush()
	})
	defer stop()
	d := b.newDecoder()
	ev := new(tracer.Event)
	var rec perf.Record
	rd.SetDeadline(time.Now().Add(pollInterval))
	for {
		err := rd.ReadInto(&rec)
		switch {
		case err == nil:
			if rec.LostSamples > 0 {
				b.perfLost.Add(rec.LostSamples)
				continue
			}
			b.deliver(d, rec.RawSample, ev, emit)
		case errors.Is(err, os.ErrDeadlineExceeded):
			rd.SetDeadline(time.Now().Add(pollInterval))
		case errors.Is(err, perf.ErrFlushed), errors.Is(err, perf.ErrClosed):
			return nil
		default:
			return fmt.Errorf("reading the perf buffer: %w", err)
		}
	}
}

// deliverBatch delivers a ring buffer record: one record, or a CPU's batch
// of signal records (see struct batch in bpf/headers/batch.h), each of which
// stands for 1 + its repeat count events. The batch's events are counted
// once at its end: one locked add per batch, not per event.
func (b *Backend) deliverBatch(d *decoder, raw []byte, ev *tracer.Event, emit func(*tracer.Event)) {
	var n [vocab.TypeThrottle + 1]uint64
	for len(raw) > 0 {
		rec, repeat, ok := nextRecord(raw)
		raw = raw[len(rec):]
		if !ok {
			b.badRecs.Add(1)
			continue
		}
		if !b.decodeEmit(d, rec, ev, emit, &n) {
			continue
		}
		// Each repeat is the same event, emitted anew: emit may change it.
		for range repeat {
			d.again(ev)
			n[ev.Type]++
			emit(ev)
		}
	}
	for t, c := range n {
		if c != 0 {
			b.events[t].Add(c)
		}
	}
}

// nextRecord is the first record of a ring buffer record: one of a CPU's
// batch of fork, signal and exit records, or the whole; repeat is its
// repeat count, and ok is false when that is beyond the kernel's cap.
func nextRecord(raw []byte) (rec []byte, repeat uint32, ok bool) {
	rec = raw
	if len(raw) > eventSize && raw[offType] != uint8(vocab.TypeExec) {
		rec = raw[:eventSize]
	}
	if len(rec) == eventSize && rec[offType] != uint8(vocab.TypeExec) {
		if repeat = binary.LittleEndian.Uint32(rec[offRepeat:]); repeat > maxRepeat {
			return rec, 0, false
		}
	}
	return rec, repeat, true
}

// unread empties the ring Run is no longer reading, the CPUs' batches
// first, and returns how many events it held. b.mu is held.
func (b *Backend) unread() uint64 {
	if b.ring == nil || b.running {
		return 0
	}
	b.flushLocked()()
	var n uint64
	var rec ringbuf.Record
	b.ring.SetDeadline(time.Now())
	for b.ring.ReadInto(&rec) == nil {
		for raw := rec.RawSample; len(raw) > 0; {
			r, repeat, ok := nextRecord(raw)
			raw = raw[len(r):]
			if ok {
				n += 1 + uint64(repeat)
			}
		}
	}
	return n
}

// rateSweepEvery is how often the rate limit's windows are swept: a
// throttle that ends in silence is said within about this long after its
// window.
const rateSweepEvery = 200 * time.Millisecond

// sweepFuncs returns what says the rate limit's throttled windows that are
// over (nil without a sweep), and what says all of them, at the end.
func (b *Backend) sweepFuncs() (sweep, final func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.sweep || b.coll == nil {
		return nil, func() {}
	}
	run := func(p *ebpf.Program) func() {
		return func() { _, _ = p.Run(&ebpf.RunOptions{}) }
	}
	return run(b.coll.Programs["rate_sweep"]), run(b.coll.Programs["rate_final"])
}

// flushFunc returns what sends every CPU's batched records to the ring:
// flush_batch run on each CPU.
func (b *Backend) flushFunc() func() {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.flushLocked()
}

// flushLocked is flushFunc with b.mu held.
func (b *Backend) flushLocked() func() {
	if !b.batch || b.coll == nil {
		return func() {}
	}
	prog := b.coll.Programs["flush_batch"]
	cpus, err := ebpf.PossibleCPU()
	if err != nil || prog == nil {
		return func() {}
	}
	return func() {
		for cpu := range cpus {
			// Offline CPUs fail and hold nothing.
			_, _ = prog.Run(&ebpf.RunOptions{CPU: uint32(cpu), Flags: unix.BPF_F_TEST_RUN_ON_CPU})
		}
	}
}

func (b *Backend) deliver(d *decoder, raw []byte, ev *tracer.Event, emit func(*tracer.Event)) {
	var n [vocab.TypeThrottle + 1]uint64
	if b.decodeEmit(d, raw, ev, emit, &n) {
		b.events[ev.Type].Add(1)
	}
}

// decodeEmit decodes one record, counts it in n and emits it.
func (b *Backend) decodeEmit(d *decoder, raw []byte, ev *tracer.Event, emit func(*tracer.Event), n *[vocab.TypeThrottle + 1]uint64) bool {
	if err := d.decode(raw, ev); err != nil {
		b.badRecs.Add(1)
		return false
	}
	n[ev.Type]++
	emit(ev)
	return true
}

// Stats returns the delivered and lost counts, and per-program run time
// when Config.BPFStats is on.
func (b *Backend) Stats() tracer.Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	var st tracer.Stats
	if b.final != nil {
		st = *b.final
	} else {
		st = b.kernelStats()
	}
	for t := range b.events {
		st.Events[t] = b.events[t].Load()
	}
	return st
}

// kernelStats reads the kernel's counters; b.mu is held.
func (b *Backend) kernelStats() tracer.Stats {
	var st tracer.Stats
	if b.coll == nil {
		return st
	}
	lost := sumPerCPU(b.coll.Maps["lost"], 2)
	st.Lost[tracer.LostRingbuf] = lost[lostOutput] + b.perfLost.Load()
	st.Lost[tracer.LostKernel] = lost[lostMap]
	st.Lost[tracer.LostReassembly] = b.badRecs.Load()
	copy(st.Filtered[:], sumPerCPU(b.coll.Maps["filtered"], uint32(vocab.NumFilterReasons)))
	if b.cfg.RateLimit > 0 {
		copy(st.Throttled[:], sumPerCPU(b.coll.Maps["throttled"], uint32(vocab.TypeExit+1)))
	}
	if b.bpfStats != nil {
		for name, prog := range b.coll.Programs {
			ps, err := prog.Stats()
			if err != nil {
				continue
			}
			st.Programs = append(st.Programs, tracer.ProgramStats{Name: name, RunTime: ps.Runtime.Seconds(), RunCount: ps.RunCount})
		}
		slices.SortFunc(st.Programs, func(a, b tracer.ProgramStats) int { return strings.Compare(a.Name, b.Name) })
	}
	return st
}

// sumPerCPU sums the first n entries of a per-CPU array of uint64.
func sumPerCPU(m *ebpf.Map, n uint32) []uint64 {
	out := make([]uint64, n)
	if m == nil {
		return out
	}
	var vals []uint64
	for i := range n {
		if err := m.Lookup(i, &vals); err != nil {
			continue
		}
		for _, v := range vals {
			out[i] += v
		}
	}
	return out
}

// Close detaches and unloads everything Start loaded, and unmounts the
// tracefs it mounted. Stats and Counts keep answering from a snapshot.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || !b.started {
		_ = b.cleanup() // at most a failed Start's leftovers: Start said why
		b.closed = b.closed || b.started
		return nil
	}
	b.detachErr = errors.Join(b.detachErr, b.detachLocked())
	st := b.kernelStats()
	// What the probes took and Run did not read (it was not running when
	// they stopped) goes with the maps: counted, not freed unseen.
	st.Lost[tracer.LostRingbuf] += b.unread()
	b.final = &st
	if b.cfg.CountOnly && b.coll != nil {
		if c, err := b.readCounts(); err == nil {
			b.finalCounts = c
		}
	}
	err := errors.Join(b.detachErr, b.cleanup())
	b.closed = true
	return err
}

// detach detaches every program (Run, when its context ends); Close
// reports what failed.
func (b *Backend) detach() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.detachErr = errors.Join(b.detachErr, b.detachLocked())
}

// detachLocked detaches every program, in reverse (switch_flush last), and
// waits until none that started before still runs: one could still batch
// or write a record. b.mu is held.
func (b *Backend) detachLocked() error {
	if len(b.links) == 0 {
		return nil
	}
	var errs []error
	for i := len(b.links) - 1; i >= 0; i-- {
		if err := b.links[i].Close(); err != nil {
			errs = append(errs, fmt.Errorf("detaching: %w", err))
		}
	}
	b.links, b.linked, b.tracking = nil, nil, false
	// BPF programs on tracepoints run in RCU read-side sections:
	// membarrier's global command waits for a grace period. Where it is
	// refused (nohz_full), Close counts what a late program batched.
	_, _, _ = unix.Syscall(unix.SYS_MEMBARRIER, membarrierCmdGlobal, 0, 0)
	return errors.Join(errs...)
}

// membarrierCmdGlobal is MEMBARRIER_CMD_GLOBAL (linux/membarrier.h).
const membarrierCmdGlobal = 1

// cleanup releases what start made, in reverse; b.mu is held.
func (b *Backend) cleanup() error {
	errs := []error{b.detachLocked()}
	if b.ring != nil {
		errs = append(errs, b.ring.Close(), b.ringWait.close())
		b.ring, b.ringWait = nil, nil
	}
	if b.perf != nil {
		errs = append(errs, b.perf.Close())
		b.perf = nil
	}
	if b.coll != nil {
		b.coll.Close()
		b.coll = nil
	}
	if b.bpfStats != nil {
		errs = append(errs, b.bpfStats.Close())
		b.bpfStats = nil
	}
	b.cgroups.close()
	b.cgroups = nil
	return errors.Join(errs...)
}
