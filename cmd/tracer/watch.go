// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/auditstate"
	"github.com/tracer-dev/tracer/tracer/sink"
	"github.com/tracer-dev/tracer/tracer/vocab"
	"github.com/tracer-dev/tracer/tracer/watch"
)

type watchOptions struct {
	streamFlags
	duration time.Duration
	sel      selectFlags // watch_select.go
	target   targetFlags // watch_target.go
	// statsFile receives the exit summary as JSON (tracer.StatsFile).
	statsFile string
	rate      rateFlags   // watch_ratelimit.go
	rotate    rotateFlags // rotate.go
	// maxDelay is --max-delay (eBPF); maxDelaySet says it was given.
	maxDelay    time.Duration
	maxDelaySet bool
	dest        destFlags   // destflags.go
	kube        kubeFlags   // watch_kube.go
	follow      followFlags // watch_follow.go
}

// maxMaxDelay bounds --max-delay: longer, the ring buffer and the batches
// hold events long enough for a stop or a crash to matter.
const maxMaxDelay = 10 * time.Second

// applyMaxDelay puts --max-delay in cfg: eBPF only, since the audit
// backend hands each event on as soon as its records are complete.
func (o *watchOptions) applyMaxDelay(cfg *tracer.Config) error {
	if o.maxDelay < 0 || o.maxDelay > maxMaxDelay {
		return vocab.Usagef("--max-delay must be between 0 and %v (e.g. 100ms; 0: wake the reader per event)", maxMaxDelay)
	}
	if o.backend != "ebpf" {
		if o.maxDelaySet && o.backend == "audit" {
			return vocab.Usagef("--max-delay is for --backend ebpf: the audit backend hands each event on when its records are complete")
		}
		return nil
	}
	cfg.MaxDelay = o.maxDelay
	return nil
}

func newWatchCmd() *cobra.Command {
	var o watchOptions
	cmd := &cobra.Command{
		Use:   "watch --backend audit|ebpf",
		Short: "Stream exec, fork, signal and exit events until Ctrl-C, SIGTERM or --duration",
		Long: `Stream the node's exec, fork, signal and exit events, one line each (text
columns, or JSON lines: docs/events.md), until Ctrl-C, SIGTERM or --duration.
The filters combine: --events and --signal choose classes and signals;
--comm, --exe, --uid, --pid, --cgroup and --target choose processes. On
exit tracer prints how many events it saw and lost, stage by stage. The
audit backend loads rules of its own and removes them on exit; the ebpf
backend loads probes; neither changes what the node's auditd logs.

With --keys KEY (or --rules existing) the audit backend adds no rules and
reads the records of the node's loaded rules with that key: for nodes that
persist their rules, and for rules locked with -e 2 (STIG, CIS), where
watch --backend audit follows the loaded keyed rules by itself. With
--from-auditd, tracer runs as auditd's plugin (/etc/audit/plugins.d/
tracer.conf) and reads auditd's output on stdin: the way on kernels whose
audit multicast group delivers nothing (before 3.16, RHEL 7).`,
		Example: `  tracer watch --backend ebpf
  tracer watch --backend audit --events signal --signal USR1 --format json
  tracer watch --backend ebpf --pid 4242 --duration 30s -o events.jsonl --format json
  tracer watch --backend ebpf --exe curl --uid 1000,1001 --time iso
  tracer watch --backend ebpf --target nginx
  tracer rules --key tracer > /etc/audit/rules.d/tracer.rules && auditctl -R /etc/audit/rules.d/tracer.rules
  tracer watch --backend audit --keys tracer
  tracer watch --flags-file=/etc/tracer/auditd-plugin.flags  # auditd's plugin: /etc/audit/plugins.d/tracer.conf`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.follow.loadFlagsFile(cmd); err != nil {
				return err
			}
			o.maxDelaySet = cmd.Flags().Changed("max-delay")
			return runWatch(cmd.Context(), &o)
		},
	}
	o.register(cmd, sink.FormatNames(), "output format: "+formatList(), outputHelp())
	_ = cmd.RegisterFlagCompletionFunc("output", completeOutput)
	cmd.Flags().DurationVar(&o.duration, "duration", 0, "stop after this long (e.g. 30s); default: until Ctrl-C or SIGTERM")
	o.sel.register(cmd)
	cmd.Flags().StringVar(&o.statsFile, "stats-file", "", "on exit, write events seen and lost per stage as JSON to FILE")
	o.target.register(cmd)
	o.rate.register(cmd)
	o.rotate.register(cmd)
	o.dest.register(cmd)
	o.kube.register(cmd)
	o.follow.register(cmd)
	cmd.Flags().DurationVar(&o.maxDelay, "max-delay", 100*time.Millisecond, "ebpf: the most an event may wait in the kernel and the output before it is written; the reader then wakes a few times a second instead of per event (0: woken per event)")
	return cmd
}

// runWatch checks the flags, runs watch.Run until a signal or --duration
// ends it, and prints the summary.
func runWatch(parent context.Context, o *watchOptions) error {
	cfg, err := o.config()
	if err != nil {
		return err
	}
	timeMode, commNote, err := o.sel.apply(&cfg)
	if err != nil {
		return err
	}
	if err := o.target.apply(&cfg); err != nil {
		return err
	}
	if err := o.rate.apply(&cfg); err != nil {
		return err
	}
	if err := o.applyMaxDelay(&cfg); err != nil {
		return err
	}
	if o.statsFile != "" {
		if err := sink.CheckOutput(o.statsFile); err != nil {
			return err
		}
	}
	if o.duration < 0 {
		return vocab.Usagef("--duration must be positive")
	}
	if err := o.kube.check(); err != nil {
		return err
	}
	dest, err := prepareOutput(o, timeMode) // destination.go
	if err != nil {
		return err
	}
	rot, err := o.rotate.rotation(o.output, dest.Rotates)
	if err != nil {
		return err
	}
	b, err := newBackend(o.backend)
	if err != nil {
		return err
	}
	plugin, err := o.follow.apply(o.backend, b)
	if err != nil {
		return err
	}
	// As auditd's plugin, tracer reads its stdin: the kernel is auditd's.
	if !plugin {
		if err := needRoot("tracer watch"); err != nil {
			return err
		}
	}
	kubeEnricher, err := o.kube.open()
	if err != nil {
		return err
	}
	if kubeEnricher != nil {
		defer kubeEnricher.Close()
	}
	out, err := dest.Open(rot)
	if err != nil {
		return err
	}
	// A reader that delivers in batches does best on one P, scheduled as
	// a batch job: it wakes a few times a second, not per event.
	if _, ok := b.(tracer.Batcher); ok {
		if err := batchScheduling(); err != nil {
			slog.Debug("staying with the default scheduling policy", "err", err)
		}
		oneProc()
	}
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := context.WithCancelCause(parent)
	defer stop(nil)
	sd := newShutdown(stop)
	defer sd.release()
	if hangup := hangupAction(out, o.output); hangup != nil {
		sd.onHangup(hangup)
	}
	if out.File != nil {
		stopOnHangup(out.File, stop)
	}
	info := io.Writer(os.Stderr) // banner, notes, summary: not with --quiet
	if o.sel.quiet {
		info = io.Discard
	}
	until := "Ctrl-C to stop"
	if o.duration > 0 {
		until = "for " + o.duration.String() + "; Ctrl-C stops sooner"
	}
	res, err := watch.Run(ctx, watch.Options{
		Backend: b, Config: cfg, Format: o.format, NewSink: out.NewSink, Time: timeMode,
		Duration: o.duration, Ancestry: o.target.ancestry, Abort: sd.abort, StateDir: auditstate.StateDir,
		Kubernetes: kubeEnricher,
		Note:       func(s string) { fmt.Fprintf(os.Stderr, "tracer: note: %s\n", s) },
		Observe: func(ctx context.Context, p *tracer.Pipeline) (func(), error) {
			return startMetrics(ctx, o.metricsAddr, p, b, metricsOptions{byComm: o.metricsComm})
		},
		Started: func() {
			// What starting left (the parsed kernel types) is collected
			// now, not beside a workload once events flow.
			runtime.GC()
			debug.FreeOSMemory()
			if o.sel.quiet {
				return
			}
			logChoices(b)
			printNotes(b)
			printLateNotes(ctx, b)
			if commNote != "" {
				fmt.Fprintf(info, "tracer: note: %s\n", commNote)
			}
			fmt.Fprintf(info, "tracer: watching %s events with the %s backend (%s)\n", cfg.Types, b.Name(), until)
		},
		OutputFailing: func(err error) {
			if err != nil {
				slog.Warn("writing --output fails; watching goes on, and the events not written are counted lost at stage output until a write succeeds", "err", err)
			} else {
				slog.Warn("writing --output again")
			}
		},
	})
	if res == nil {
		return err
	}
	if o.statsFile != "" {
		if err := writeStatsFile(o.statsFile, res.StatsFile); err != nil {
			slog.Warn("writing --stats-file", "err", err)
		}
	}
	st := res.Stats
	selected := ""
	if n := st.TotalFiltered() - st.TotalNoise(); n > 0 {
		selected = fmt.Sprintf(", %d left out by filters in the kernel (%s)", n, st.SelectionSummary())
	}
	fmt.Fprintf(info, "tracer: %d events seen, %s%d lost (%s), %d filtered as runtime noise (%s)%s%s\n",
		res.Emitted, map[bool]string{true: ">="}[st.LostIsLowerBound()], st.TotalLost(), st.LossSummary(),
		st.TotalNoise(), st.FilterSummary(), selected, o.rate.summary(st, res.StatsFile.ThrottleEvents))
	if st.RotationsFailed > 0 {
		fmt.Fprintf(info, "tracer: rotating --output failed %d times; the events FILE could not take meanwhile are among those lost at stage output\n", st.RotationsFailed)
	}
	if res.CloseErr != nil {
		slog.Warn("removing rules or probes", "err", res.CloseErr)
	}
	return err
}

// writeStatsFile writes the exit figures (watch's tracer.StatsFile, the
// audit floor's bench.AuditFloorStats) as one JSON object.
func writeStatsFile(path string, sf any) error {
	f, err := sink.CreateOutput(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	enc.SetIndent("", "  ")
	if err := enc.Encode(sf); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}
