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
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/tracer"
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

	probes      string // the probe set attached: ProbesSched, ProbesSyscalls or ProbesFEntry
	batch       bool   // signal records are batched per CPU (see flushFunc)
	canBatch    bool   // the kernel and transport allow batching
	kernel      kernelFeatures
	linked      []string // program and attach point of each link, so one program is not attached twice
	coll        *ebpf.Collection
	links       []link.Link
	track       []probe // process-tree probes, attached when tracking is on
	tracking    bool
	followed    bool   // the process-tree probes were attached (Features.Track)
	attribution string // Features.Attribution
	// rawAttribution: who killed it from raw tracepoints (no BTF
	// tracepoints to use), with the signal syscalls filling sig_calls.
	rawAttribution bool
	tr             transport // nil in counting mode
	batchEnd       func()    // OnBatchEnd's
	running        bool      // Run reads the ring
	bpfStats       io.Closer
	cgroups        *cgroupNames // names the cgroup ids of records
	sweep          bool         // rate_sweep and rate_final are loaded (--rate-limit)

	events  [vocab.TypeThrottle + 1]atomic.Uint64
	badRecs atomic.Uint64

	detachErr   error          // detaching when Run's context ended, reported by Close
	final       *tracer.Stats  // taken at Close
	finalCounts *tracer.Counts // taken at Close in counting mode

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
	if err := preflight(); err != nil {
		return err
	}
	kf, err := probeKernel(cfg)
	if err != nil {
		return err
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return fmt.Errorf("removing the memlock limit for BPF maps: %w", err)
	}
	b.cfg = cfg
	b.kernel = kf
	// Batching needs a way to flush each CPU's batch from user space.
	b.canBatch = kf.transport == TransportRingbuf && !cfg.CountOnly && haveRunOnCPU()

	// The default: the sched set when streaming, so that no other syscall
	// pays; the syscalls set when counting, which counts every call as
	// audit and bench's bpftrace program do, failed execs included (a
	// count run is short and scoped to one command's tree). Either falls
	// back to the other where the kernel lacks what it needs.
	sets := []string{cfg.Probes}
	switch {
	case cfg.Attach == AttachTpBTF:
		sets = []string{ProbesSched}
	case cfg.Attach == AttachTracepoint:
		sets = []string{ProbesSyscalls}
	case cfg.Probes != ProbesDefault:
	case kf.own == nil:
		// BTF tracepoints and fentry resolve their targets in the
		// kernel's own BTF: a --btf file serves relocations only.
		sets = []string{ProbesSyscalls}
	case cfg.CountOnly, syscallsOnly(cfg) != "":
		// Failed execs and existence checks happen only at the syscall.
		sets = []string{ProbesSyscalls, ProbesSched}
	default:
		sets = []string{ProbesSched, ProbesSyscalls}
	}
	var first error
	for _, set := range sets {
		if err = b.start(cfg, set); err == nil {
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
	if err := CheckTransport(cfg.Transport); err != nil {
		return err
	}
	if err := CheckAttach(cfg.Attach); err != nil {
		return err
	}
	// --ebpf-attach picks the probe set whose hooks are of that kind.
	switch want := map[string]string{AttachTpBTF: ProbesSched, AttachTracepoint: ProbesSyscalls}[cfg.Attach]; {
	case want == "":
	case cfg.Probes != ProbesDefault && cfg.Probes != want:
		return vocab.Usagef("--ebpf-attach %s attaches the %s probes, not --probes %s: give one of them", cfg.Attach, want, cfg.Probes)
	case want == ProbesSched && syscallsOnly(*cfg) != "":
		return vocab.Usagef("%s are seen only at the syscall: use --ebpf-attach tracepoint (or auto) with them, not --ebpf-attach tp_btf", syscallsOnly(*cfg))
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

// Run delivers events until ctx is done, then what the kernel queued
// before, and returns. In counting mode it only waits for ctx.
func (b *Backend) Run(ctx context.Context, emit func(*tracer.Event)) error {
	b.mu.Lock()
	started, countOnly, tr := b.started, b.cfg.CountOnly, b.tr
	b.mu.Unlock()
	switch {
	case !started:
		return errors.New("ebpf backend not started")
	case countOnly:
		<-ctx.Done()
		return nil
	case tr == nil:
		return errors.New("ebpf backend closed")
	}
	b.setRunning(true)
	defer b.setRunning(false)
	return tr.read(ctx, emit)
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
	if b.tr != nil {
		st.Lost[tracer.LostRingbuf] += b.tr.unread()
	}
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
	if b.tr != nil {
		errs = append(errs, b.tr.close())
		b.tr = nil
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
