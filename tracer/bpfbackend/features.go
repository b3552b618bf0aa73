// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfbackend

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Attach kinds of the event probes (Config.Attach, Features.Attach).
const (
	AttachAuto       = "auto"
	AttachTpBTF      = "tp_btf"     // BTF tracepoints: the sched set
	AttachTracepoint = "tracepoint" // classic tracepoints: the syscalls set
	AttachFEntry     = "fentry"     // reported only: --probes fentry
	AttachRawTP      = "raw_tp"     // reported only: the process tree, and who killed it, without BTF tracepoints
	// AttributionNone: no probe sees deaths by a signal or the kernel's
	// own signals (exit events come from exit calls only, without
	// killed_by): none is attached, as when --types has neither signal
	// nor exit.
	AttributionNone = "none"
)

// Ways the programs' global data reaches them (Features.GlobalData).
const (
	// GlobalMmap: .rodata constants are set at load, and the ring's
	// reader shares reader_parked with the programs through a memory
	// mapping of .bss (BPF_F_MMAPABLE, Linux 5.5+).
	GlobalMmap = "mmap"
	// GlobalConstants: constants set at load only; nothing is shared
	// through memory, so the ring's reader never parks (it reads every
	// --max-delay/2 however quiet the node) and the perf buffer needs
	// nothing shared.
	GlobalConstants = "constants"
)

// TransportChoices and AttachChoices are the values of --ebpf-transport and
// --ebpf-attach, for their help and completion.
var (
	TransportChoices = []string{TransportAuto, TransportRingbuf, TransportPerf}
	AttachChoices    = []string{AttachAuto, AttachTpBTF, AttachTracepoint}
)

// CheckTransport says whether s is a --ebpf-transport value ("" is auto).
func CheckTransport(s string) error {
	switch s {
	case "", TransportAuto, TransportRingbuf, TransportPerf:
		return nil
	}
	return vocab.Usagef("unknown --ebpf-transport %q: use auto, ringbuf or perf", s)
}

// CheckAttach says whether s is a --ebpf-attach value ("" is auto).
func CheckAttach(s string) error {
	switch s {
	case "", AttachAuto, AttachTpBTF, AttachTracepoint:
		return nil
	}
	return vocab.Usagef("unknown --ebpf-attach %q: use auto, tp_btf or tracepoint", s)
}

// Features are the choices Start made from what the kernel has, each
// probed (never assumed from a kernel version), for watch's log and
// metrics; doctor names the same from the node's facts.
type Features struct {
	Transport  string // "ringbuf" or "perfbuf"
	Attach     string // the event probes: "tp_btf", "tracepoint" or "fentry"
	Track      string // the process tree's probes: "tp_btf" or "raw_tp"; "" when no tree was followed
	GlobalData string // GlobalMmap or GlobalConstants
	BTF        string // "kernel", or the --btf file the types came from
	// Attribution is what sees deaths by a signal, their senders and the
	// kernel's own signals (signal_generate, sched_process_exit,
	// mark_victim): "tp_btf", "raw_tp" (no BTF tracepoints, or
	// --ebpf-attach tracepoint), or AttributionNone; "" when counting.
	Attribution string
	Probes      string // the probe set: sched, syscalls or fentry
}

// Features returns what Start chose; the zero value before Start.
func (b *Backend) Features() Features {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.started {
		return Features{}
	}
	f := Features{
		Transport:  "perfbuf",
		Attach:     attachOf(b.probes),
		Track:      AttachTpBTF,
		GlobalData: GlobalConstants,
		BTF:        b.kernel.btfSource,
		Probes:     b.probes,

		Attribution: b.attribution,
	}
	if b.kernel.transport == TransportRingbuf {
		f.Transport = "ringbuf"
		if b.kernel.mmap {
			f.GlobalData = GlobalMmap
		}
	}
	switch {
	case !b.followed:
		f.Track = "" // no process tree followed
	case len(b.track) > 0 && b.track[0].hook == hookRawTP:
		f.Track = AttachRawTP
	}
	return f
}

// attachOf is the hook kind of a probe set's event probes.
func attachOf(set string) string {
	switch set {
	case ProbesSched:
		return AttachTpBTF
	case ProbesFEntry:
		return AttachFEntry
	}
	return AttachTracepoint
}

// loadKernelBTF reads the kernel's own BTF, and haveMmapable says whether
// data sections can be memory-mapped (BPF_F_MMAPABLE, Linux 5.5); tests
// make a kernel without.
var (
	loadKernelBTF = btf.LoadKernelSpec
	haveMmapable  = func() bool { return features.HaveMapFlag(features.BPF_F_MMAPABLE) == nil }
)

// kernelFeatures is what Start probed of the kernel and chose from it.
type kernelFeatures struct {
	own       *btf.Spec // the kernel's own BTF; nil without: BTF tracepoints and fentry need it
	types     *btf.Spec // what CO-RE relocations are made against: own, or --btf's file
	btfSource string    // "kernel" or the --btf file
	transport string    // TransportRingbuf or TransportPerf
	mmap      bool      // data sections can be memory-mapped (BPF_F_MMAPABLE)
}

// probeKernel probes the kernel's BTF, transport and global data, and
// checks cfg's forced choices against them: a choice the kernel cannot
// make is a one-line usage error naming what is missing.
func probeKernel(cfg tracer.Config) (kernelFeatures, error) {
	var kf kernelFeatures
	own, err := loadKernelBTF()
	switch {
	case err == nil:
		kf.own = own
	case errors.Is(err, btf.ErrNotFound) || errors.Is(err, os.ErrNotExist):
	default:
		return kf, fmt.Errorf("reading kernel BTF: %w", err)
	}
	switch {
	case cfg.BTFFile != "":
		spec, err := btf.LoadSpec(cfg.BTFFile)
		if err != nil {
			return kf, vocab.Usagef("--btf %s: %v: give this kernel's BTF file (BTFHub: github.com/aquasecurity/btfhub-archive)", cfg.BTFFile, err)
		}
		kf.types, kf.btfSource = spec, cfg.BTFFile
	case own == nil:
		return kf, vocab.Usagef("the kernel has no BTF (/sys/kernel/btf/vmlinux): pass --btf FILE with this kernel's BTF (from BTFHub, github.com/aquasecurity/btfhub-archive, by distribution and kernel release), or use --backend audit")
	default:
		kf.types, kf.btfSource = own, "kernel"
	}

	ringErr := features.HaveMapType(ebpf.RingBuf)
	switch cfg.Transport {
	case TransportRingbuf:
		if ringErr != nil {
			return kf, vocab.Usagef("--ebpf-transport ringbuf: the kernel has no BPF ring buffer (BPF_MAP_TYPE_RINGBUF: %v): use --ebpf-transport auto or perf", ringErr)
		}
		kf.transport = TransportRingbuf
	case TransportPerf:
		kf.transport = TransportPerf
	default:
		kf.transport = TransportRingbuf
		if ringErr != nil {
			kf.transport = TransportPerf // Linux < 5.8, RHEL 8 before 8.4
		}
	}
	kf.mmap = haveMmapable()

	if cfg.Attach == AttachTpBTF {
		switch {
		case own == nil:
			return kf, vocab.Usagef("--ebpf-attach tp_btf: the kernel has no BTF of its own (/sys/kernel/btf/vmlinux; a --btf file serves relocations only): use --ebpf-attach tracepoint or auto")
		case !hasTracepoint(own, "sched_process_exec"):
			return kf, vocab.Usagef("--ebpf-attach tp_btf: the kernel's BTF has no tracepoint sched_process_exec (btf_trace_sched_process_exec): use --ebpf-attach tracepoint or auto")
		}
	}
	return kf, nil
}

// Choices is tracer.Chooser's: the Features by name (transport, attach,
// track, global_data, btf, probes); none before Start.
func (b *Backend) Choices() []tracer.Choice {
	f := b.Features()
	if f.Transport == "" {
		return nil
	}
	var out []tracer.Choice
	for _, c := range []tracer.Choice{
		{Name: "transport", Value: f.Transport},
		{Name: "attach", Value: f.Attach},
		{Name: "track", Value: f.Track},
		{Name: "global_data", Value: f.GlobalData},
		{Name: "attribution", Value: f.Attribution},
		{Name: "btf", Value: f.BTF},
		{Name: "probes", Value: f.Probes},
	} {
		if c.Value != "" {
			out = append(out, c)
		}
	}
	return out
}
