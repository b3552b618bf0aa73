// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/audit"
	"github.com/tracer-dev/tracer/tracer/bpfbackend"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// streamFlags are the flags watch and trace share (README.md, "Common flags").
type streamFlags struct {
	backend     string
	events      string
	signals     string
	format      string
	output      string
	metricsAddr string
	metricsComm bool
	// backpressure: drop (count and go on) or block when output falls behind
	backpressure string
	cgroup       string // a cgroup v2 path: it and below it
	execFailures bool

	// audit
	arch        string
	auidSet     bool
	enableAudit bool
	allowPanic  bool
	leanRecords bool
	flags       *pflag.FlagSet // to tell a flag given from its default
	// ebpf
	probes    string
	ringBytes int
	bpfStats  bool
	transport string // --ebpf-transport
	attach    string // --ebpf-attach
	btfFile   string // --btf
}

// register adds the flags to cmd; formats are the --format values, the
// first the default.
func (f *streamFlags) register(cmd *cobra.Command, formats []string, formatHelp, outputHelp string) {
	fl := cmd.Flags()
	f.flags = fl
	fl.StringVar(&f.backend, "backend", "", "audit or ebpf (required)")
	fl.StringVar(&f.events, "events", "exec,fork,signal", eventsHelp)
	fl.StringVar(&f.signals, "signal", "", "signals to keep, numbers or names (10, USR1, SIGUSR1), or all; default all but runtime noise: SIGURG a process sends its own threads (Go's preemption) and signal 0 (existence checks), which --signal URG, --signal 0 or --signal all keep; what is left out is counted")
	fl.BoolVar(&f.execFailures, "exec-failures", false, "also report failed exec attempts (a shell's PATH search makes one per directory); ebpf: seen only with the syscalls probes, which this selects")
	fl.StringVar(&f.format, "format", formats[0], formatHelp)
	fl.StringVarP(&f.output, "output", "o", "", outputHelp)
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at HOST:PORT/metrics")
	fl.StringVar(&webConfigFile, "web.config.file", "", webConfigHelp)
	fl.StringVar(&f.cgroup, "cgroup", "", "only processes in this cgroup v2 and below it (a service, a pod, a container), e.g. /system.slice/nginx.service")
	fl.StringVar(&f.backpressure, "backpressure", "drop", "when output falls behind: drop events and count them (the node never waits), or block (audited processes may wait)")
	fl.BoolVar(&f.metricsComm, "metrics-comm", false, "label tracer_events_by_comm_total by comm (capped at 100 comms)")
	fl.StringVar(&f.arch, "arch", "auto", "audit: "+archHelp)
	fl.BoolVar(&f.auidSet, "auid-set", false, "audit: only processes with a login uid (-F auid!=unset)")
	fl.BoolVar(&f.leanRecords, "lean-records", true, "audit: ask the kernel not to build the records tracer does not read (PROCTITLE, OBJ_PID, EOE; global exclude rules); default: only where no other consumer such as auditd reads the records; --lean-records forces it beside auditd (EOE then stays), --lean-records=false turns it off")
	fl.BoolVar(&f.allowPanic, "allow-panic-failure-mode", false, "audit: run even when the failure mode is 2 (panic) and no audit daemon holds the audit PID: tracer reads the multicast copy of the records, so those of its rules wait in the kernel's hold queue for a daemon, and the queue overflowing panics the node")
	fl.BoolVar(&f.enableAudit, "enable-audit", false, "audit: run even when audit=0 is on the kernel command line (processes older than tracer are not audited)")
	fl.StringVar(&f.probes, "probes", "default", "ebpf: sched (scheduler BTF tracepoints: cheapest; no failed execs), syscalls (the audit rules' syscall tracepoints), fentry, or default (sched; syscalls where the kernel lacks sched's tracepoints, where what is asked for is seen only at the syscall, and for trace's counts unless --metrics-addr streams its events)")
	fl.IntVar(&f.ringBytes, "ring-size", 0, "ebpf: ring buffer size in bytes (power of two; default 8 MiB)")
	fl.BoolVar(&f.bpfStats, "bpf-stats", false, "ebpf: turn on the kernel's BPF run-time accounting (costs a little per event)")
	fl.StringVar(&f.transport, "ebpf-transport", "auto", "ebpf: auto (the ring buffer where the kernel has one, else the perf buffer), ringbuf or perf: forces one, and fails where the kernel lacks it")
	fl.StringVar(&f.attach, "ebpf-attach", "auto", "ebpf: auto, tp_btf (BTF tracepoints: the sched probes) or tracepoint (classic tracepoints: the syscalls probes, the process tree on raw tracepoints): forces one, and fails where the kernel lacks it")
	fl.StringVar(&f.btfFile, "btf", "", "ebpf: the kernel's types from FILE (a BTFHub or BTFGen file) where the kernel has no BTF of its own (/sys/kernel/btf/vmlinux)")
	registerEventCompletions(cmd)
	_ = cmd.RegisterFlagCompletionFunc("backend", completeOne("audit", "ebpf"))
	_ = cmd.RegisterFlagCompletionFunc("format", completeOne(formats...))
	_ = cmd.RegisterFlagCompletionFunc("probes", completeOne("default", "sched", "syscalls", "fentry"))
	_ = cmd.RegisterFlagCompletionFunc("ebpf-transport", completeOne(bpfbackend.TransportChoices...))
	_ = cmd.RegisterFlagCompletionFunc("ebpf-attach", completeOne(bpfbackend.AttachChoices...))
	_ = cmd.RegisterFlagCompletionFunc("arch", completeOne("auto", "b64", "b32", "both"))
	_ = cmd.RegisterFlagCompletionFunc("backpressure", completeOne("drop", "block"))
}

// config validates the flags into a backend Config.
func (f *streamFlags) config() (tracer.Config, error) {
	cfg := tracer.DefaultConfig()
	var err error
	if cfg.Types, err = vocab.ParseTypes(f.events); err != nil {
		return cfg, vocab.Usagef("%v", err)
	}
	if cfg.Signals, err = vocab.ParseSignals(f.signals); err != nil {
		return cfg, vocab.Usagef("%v", err)
	}
	if err := checkSignalsKept(cfg.Types, cfg.Signals, f.signals != ""); err != nil {
		return cfg, err
	}
	// Checked here as well as at Start: before anything is installed.
	if err := auditrules.CheckArch(f.arch); err != nil {
		return cfg, vocab.Usagef("%w", err)
	}
	if err := bpfbackend.CheckProbes(f.probes); err != nil {
		return cfg, vocab.Usagef("%w", err)
	}
	if err := bpfbackend.CheckTransport(f.transport); err != nil {
		return cfg, err
	}
	if err := bpfbackend.CheckAttach(f.attach); err != nil {
		return cfg, err
	}
	cfg.Arch, cfg.AuidSet, cfg.EnableAudit, cfg.AllowPanicFailureMode = f.arch, f.auidSet, f.enableAudit, f.allowPanic
	cfg.ExecFailures = f.execFailures
	if f.cgroup != "" {
		if err := tracer.CheckCgroup(f.cgroup); err != nil {
			return cfg, err
		}
		cfg.Cgroup = f.cgroup
	}
	if cfg.Backpressure, err = tracer.ParseBackpressure(f.backpressure); err != nil {
		return cfg, err
	}
	// Checked here as well as at Start: before the root check, so that a
	// user without root hears of the value.
	if f.backend == "ebpf" && f.ringBytes != 0 {
		if err := bpfbackend.CheckRingBytes(f.ringBytes); err != nil {
			return cfg, err
		}
	}
	if err := checkMetricsFlags(f.metricsAddr, metricsOptions{byComm: f.metricsComm}); err != nil {
		return cfg, err
	}
	cfg.Probes, cfg.RingBytes, cfg.BPFStats = f.probes, f.ringBytes, f.bpfStats
	cfg.Transport, cfg.Attach, cfg.BTFFile = f.transport, f.attach, f.btfFile
	if fl := f.flags.Lookup("lean-records"); fl != nil && fl.Changed {
		cfg.LeanRecords = tracer.LeanOff
		if f.leanRecords {
			cfg.LeanRecords = tracer.LeanOn
		}
	}
	return cfg, nil
}

// newBackend returns the backend a --backend value names.
func newBackend(name string) (tracer.Backend, error) {
	switch name {
	case "audit":
		return audit.New(), nil
	case "ebpf":
		return bpfbackend.New(), nil
	case "":
		return nil, vocab.Usagef("--backend is required: use --backend audit or --backend ebpf")
	}
	return nil, vocab.Usagef("unknown backend %q: use --backend audit or --backend ebpf", name)
}

// needRoot fails early, before anything is installed, when not root.
func needRoot(what string) error {
	if os.Geteuid() != 0 {
		return vocab.Usagef("%s needs root (CAP_AUDIT_CONTROL and CAP_AUDIT_READ for audit, CAP_BPF and CAP_PERFMON for ebpf): run it with sudo", what)
	}
	return nil
}

// printLateNotes prints, until ctx ends, what a backend changes on the
// node while it runs (lean records given up, rules put back).
func printLateNotes(ctx context.Context, b tracer.Backend) {
	n, ok := b.(tracer.LateNoter)
	if !ok {
		return
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case s := <-n.LateNotes():
				fmt.Fprintf(os.Stderr, "tracer: note: %s\n", s)
			}
		}
	}()
}

// printNotes prints what a backend found or changed on the node (audit
// enabled for the session, auditd holding the PID, probes chosen).
func printNotes(b tracer.Backend) {
	if n, ok := b.(tracer.Noter); ok {
		for _, s := range n.Notes() {
			fmt.Fprintf(os.Stderr, "tracer: note: %s\n", s)
		}
	}
}

// logChoices logs once what a backend chose from the kernel's features
// (the eBPF backend's transport, attach kind, global data and BTF source).
func logChoices(b tracer.Backend) {
	c, ok := b.(tracer.Chooser)
	if !ok {
		return
	}
	var attrs []any
	for _, ch := range c.Choices() {
		attrs = append(attrs, ch.Name, ch.Value)
	}
	if len(attrs) > 0 {
		slog.Info("ebpf kernel features chosen", attrs...)
	}
}
