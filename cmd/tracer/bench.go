// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/tracer-dev/tracer/bench"
	"github.com/tracer-dev/tracer/bench/report"
	"github.com/tracer-dev/tracer/bench/result"
	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/bpfbackend"
	"github.com/tracer-dev/tracer/tracer/node"
	"github.com/tracer-dev/tracer/tracer/sink"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

type benchOptions struct {
	workloads     string
	modes         string
	rounds        int
	out           string
	quick         bool
	storage       string
	logDir        string
	count         int64
	rate          string
	target        time.Duration
	sweep         bool
	restartAuditd bool
	cgroup        string
	metric        string
	higherBetter  bool
	budget        time.Duration
	ringBytes     int
}

func newBenchCmd() *cobra.Command {
	var o benchOptions
	cmd := &cobra.Command{
		Use:   "bench [--workload NAME|-- CMD [ARGS...]]",
		Short: "Measure what watching costs: workloads untraced and under each way of tracing",
		Long: "bench runs workloads untraced (none) and under this tool's audit and eBPF backends,\n" +
			"their floors (the kernel's own cost of the same rules or hooks), the node's auditd and\n" +
			"an equivalent bpftrace program, rounds interleaved, and reports median elapsed, user,\n" +
			"sys and CPU% of the workload, the ratio to none with its 95% interval and to the\n" +
			"mode's floor, the tracer's own CPU and events expected, seen and lost. Built-in\n" +
			"workloads are sized so that their untraced run lasts at least --target. --sweep adds\n" +
			"each mode's ceiling: the highest event rate it delivers with nothing lost.\n\n" +
			"A node's running auditd is measured as it is (mode auditd, labelled \"node's\"; the\n" +
			"audit modes run beside it); --restart-auditd stops it for the bench and starts it\n" +
			"again after, as it was. The exit status is 0 when this tool's own modes worked; a\n" +
			"peer mode (auditd, bpftrace) that failed is listed with its cause.\n\n" +
			"Workloads: " + strings.Join(bench.Builtins(), ", ") + ", or a command after --.\n" +
			"Rate workloads, run when named, pace their events at --rate a second (laurel's method)\n" +
			"and add the watcher's CPU per event: " + strings.Join(bench.RateWorkloads, ", ") + ".\n" +
			"Application workloads, run when named (apps: all installed ones), compare their own\n" +
			"throughput per mode: " + strings.Join(bench.Apps(), ", ") + ".\n" +
			"A command's own figure is compared the same way with --metric REGEX.\n" +
			"Modes: " + strings.Join(bench.ModeNames, ", ") + ".",
		Example: `  tracer bench --quick
  tracer bench -o bench.json --sweep
  tracer bench --workload signal-storm --modes none,audit,audit-floor,ebpf,ebpf-floor --rounds 9
  tracer bench --workload cis-shell --modes auditd,auditd-sync,audit --storage ssd,hdd --restart-auditd
  tracer bench --workload exec-rate --rate 300 --target 10s --modes ebpf-exec,execsnoop,ebpf,libbpf-tools,audit,auditd,laurel
  tracer bench --modes none,ebpf -- make -j2
  tracer bench --cgroup /kubepods.slice --modes none,audit,ebpf -- ./load.sh
  tracer bench --workload redis,nginx,stress-fork --modes none,audit,ebpf
  tracer bench --modes none,ebpf --metric 'Requests per second:\s+([0-9.]+)' --higher-is-better -- ab -n 5000 http://127.0.0.1/`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
				return vocab.Usagef("unexpected argument %q: give a command to measure after --", args[0])
			}
			return nil
		},
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBench(cmd.Context(), &o, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.workloads, "workload", "", "workloads, comma-separated: "+strings.Join(bench.Builtins(), ", ")+" (default: these four), application workloads "+strings.Join(bench.Apps(), ", ")+", or apps (all installed ones); NAME:COUNT fixes one workload's count (signal-storm:20000; a rate workload's events per rate)")
	fl.StringVar(&o.metric, "metric", "", "with a command after --: a regular expression whose capture group is the command's own figure in its output (the last match counts); bench compares it per mode")
	fl.BoolVar(&o.higherBetter, "higher-is-better", false, "the --metric figure is a throughput: a lower value under a mode is its cost (default: lower is better, like a time)")
	fl.StringVar(&o.modes, "modes", "", "modes, comma-separated: "+strings.Join(bench.ModeNames, ", ")+" (default "+strings.Join(bench.DefaultModes, ",")+"; --quick leaves out "+strings.Join(bench.QuickLeavesOut(), ", ")+"); MODE@ssd or MODE@hdd runs a mode that writes a log on that storage only")
	fl.IntVar(&o.rounds, "rounds", 0, fmt.Sprintf("rounds per workload and mode (default: %d to %d, --quick %d to %d; past the first, only for modes whose cost is still within noise)",
		bench.DefaultMinRounds, bench.DefaultRounds, bench.QuickMinRounds, bench.QuickRounds))
	fl.StringVarP(&o.out, "output", "o", "", "write the result file (JSON) to FILE")
	// --out was bench's name before it took watch's and trace's.
	fl.StringVar(&o.out, "out", "", "write the result file (JSON) to FILE")
	_ = fl.MarkDeprecated("out", "use -o/--output")
	fl.DurationVar(&o.budget, "budget", 0, fmt.Sprintf("time the rounds may take: past the first 3 (up to %d, or --rounds), each workload gets rounds while a mode's 95%% interval overlaps its neighbour's, so that the modes can be ranked; the report says which could not be", bench.BudgetRounds))
	fl.BoolVar(&o.quick, "quick", false, fmt.Sprintf("a short run: %d to %d rounds, workloads sized to %s untraced", bench.QuickMinRounds, bench.QuickRounds, bench.QuickTarget))
	fl.StringVar(&o.storage, "storage", "", "where event logs go: ssd, hdd, or both (ssd,hdd); hdd is simulated when the node has no rotational disk (default ssd)")
	fl.StringVar(&o.logDir, "log-dir", "", "write event logs under DIR instead of --storage")
	fl.StringVar(&o.rate, "rate", "", "events a second the rate workloads ("+strings.Join(bench.RateWorkloads, ", ")+") are paced at, comma-separated for several (default "+joinRates(bench.DefaultRates)+"); each runs for --target")
	fl.Int64Var(&o.count, "count", 0, "fix the workloads' count (iterations, kills, calls, spawns) instead of sizing them by --target")
	fl.DurationVar(&o.target, "target", 0, fmt.Sprintf("size each built-in workload so that its untraced run lasts at least this long (default %s, --quick %s)", bench.DefaultTarget, bench.QuickTarget))
	fl.BoolVar(&o.sweep, "sweep", false, "also raise the event rate of signal-storm and exec-storm step by step: each mode's highest rate with nothing lost")
	fl.BoolVar(&o.restartAuditd, "restart-auditd", false, "stop the node's running auditd for the bench (a private one per run in mode auditd) and start it again after")
	fl.StringVar(&o.cgroup, "cgroup", "", "run the workloads in a cgroup made below this cgroup v2 (a pod, a service) and have the tracer modes watch only it and what is below it")
	fl.IntVar(&o.ringBytes, "ring-size", 0, "the eBPF modes' ring buffer size in bytes, as watch's --ring-size (a power of two; default 8 MiB): a storm that overflows the default is then measured with nothing lost")
	_ = cmd.RegisterFlagCompletionFunc("modes", completeList(bench.ModeNames...))
	_ = cmd.RegisterFlagCompletionFunc("workload", completeList(workloadChoices()...))
	_ = cmd.RegisterFlagCompletionFunc("storage", completeList("ssd", "hdd"))
	cmd.AddCommand(newWorkloadCmd())
	return cmd
}

// workloadChoices are the names --workload completes: the built-in, rate
// and application workloads, and apps.
func workloadChoices() []string {
	out := bench.Builtins()
	for _, r := range bench.RateWorkloads {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return append(append(out, bench.Apps()...), "apps")
}

func joinRates(rs []float64) string {
	var s []string
	for _, r := range rs {
		s = append(s, strconv.FormatFloat(r, 'f', -1, 64))
	}
	return strings.Join(s, ",")
}

// parseRates reads --rate: events a second, comma-separated.
func parseRates(s string) ([]float64, error) {
	var out []float64
	for _, f := range tracer.SplitList(s) {
		r, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, vocab.Usagef("--rate %q is not a number of events a second: give e.g. --rate 300 or --rate 100,300,1000", f)
		}
		out = append(out, r)
	}
	return out, nil
}

func runBench(parent context.Context, o *benchOptions, command []string) error {
	// Refuse an --output that cannot be written before the runs, not after.
	if o.out != "" {
		if err := sink.CheckOutput(o.out); err != nil {
			return vocab.Usagef("cannot write --out: %v", err)
		}
	}
	if o.cgroup != "" {
		if err := tracer.CheckCgroup(o.cgroup); err != nil {
			return err
		}
	}
	if o.ringBytes != 0 {
		if err := bpfbackend.CheckRingBytes(o.ringBytes); err != nil {
			return err
		}
	}
	rates, err := parseRates(o.rate)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this program: %w", err)
	}
	if parent == nil {
		parent = context.Background()
	}
	// Ctrl-C cancels the runs; everything is then stopped and removed in order.
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()

	prog := newBenchProgress()
	b, err := bench.Prepare(ctx, bench.Options{
		Workloads: tracer.SplitList(o.workloads), Command: command, Metric: o.metric, HigherIsBetter: o.higherBetter,
		Count: o.count, Target: o.target, Rates: rates,
		Modes: tracer.SplitList(o.modes), Rounds: o.rounds, Quick: o.quick, Budget: o.budget,
		Storage: tracer.SplitList(o.storage), LogDir: o.logDir, Sweep: o.sweep, RestartAuditd: o.restartAuditd,
		Cgroup: o.cgroup, RingBytes: o.ringBytes,
		Self: self, Progress: prog.update,
		Log: func(s string) { fmt.Fprintf(os.Stderr, "tracer: %s\n", s) },
	})
	if err != nil {
		return err
	}
	defer func() {
		if err := b.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "tracer: cleaning up: %v\n", err)
		}
	}()
	for _, w := range b.Workloads {
		exp := "events not known in advance"
		if w.Known {
			exp = "expects " + w.Expected.String()
		}
		fmt.Fprintf(os.Stderr, "tracer: workload %s: %s; %s\n", w.Name, w.Desc, exp)
	}
	for _, s := range b.Storages {
		fmt.Fprintf(os.Stderr, "tracer: storage %s: %s\n", s.Label, s.Desc)
	}

	results, runErr := b.Run(ctx)
	prog.finish()
	if err := report.WriteTable(os.Stdout, results); err != nil {
		return err
	}
	if err := report.WritePerEventTable(os.Stdout, results, b.Info.Modes); err != nil {
		return err
	}
	if steps := b.Runner.SweepSteps; len(steps) > 0 {
		if err := report.WriteSweepTable(os.Stdout, results, steps); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return errors.New("interrupted: rules, probes and daemons are removed; no result file written")
	}
	if o.out != "" {
		facts, ferr := node.Collect()
		if ferr != nil {
			fmt.Fprintf(os.Stderr, "tracer: reading node facts: %v\n", ferr)
		}
		info := b.Info
		info.DurationS = math.Round(time.Since(info.Started).Seconds())
		if err := writeResult(o.out, &result.File{Schema: result.Schema, Node: facts, Run: &info,
			Results: results, Sweep: b.Runner.SweepSteps}); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "tracer: results written to %s\n", o.out)
	}
	// A peer tool that failed (auditd could not keep up, bpftrace missing a
	// probe) is a finding about the node: listed, not a failed bench.
	var fail *bench.Failures
	if errors.As(runErr, &fail) && len(fail.Own) == 0 {
		for _, e := range fail.Peer {
			fmt.Fprintf(os.Stderr, "tracer: peer mode failed (this tool's modes are measured): %v\n", e)
		}
		return nil
	}
	return runErr
}

// writeResult writes a result file to path, made by sink.CreateOutput
// (mode 0600, never through a symlink).
func writeResult(path string, f *result.File) error {
	out, err := sink.CreateOutput(path)
	if err != nil {
		return fmt.Errorf("writing result file: %w", err)
	}
	err = result.Encode(out, f)
	if err == nil {
		err = handOver(out, 0)
	}
	if cerr := out.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("writing result file: %w", cerr)
	}
	return err
}

// benchProgress shows a progress bar on a terminal and one line per run
// otherwise (CI logs).
type benchProgress struct {
	bar *progressbar.ProgressBar
}

func newBenchProgress() *benchProgress {
	p := &benchProgress{}
	if term.IsTerminal(int(os.Stderr.Fd())) {
		p.bar = progressbar.NewOptions(1,
			progressbar.OptionSetWriter(os.Stderr),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionClearOnFinish(),
		)
	}
	return p
}

func (p *benchProgress) update(u bench.Progress) {
	line := fmt.Sprintf("%s %s round %d", u.Workload, u.Variant, u.Round)
	if u.Total < 0 { // the sweep: its length depends on where modes reach their ceiling
		line = fmt.Sprintf("%s %s", u.Workload, u.Variant)
		if p.bar != nil {
			_ = p.bar.Clear()
		}
		if u.Err != nil {
			fmt.Fprintf(os.Stderr, "tracer: %s: %v\n", line, u.Err)
			return
		}
		fmt.Fprintf(os.Stderr, "tracer: %s: %.2fs (seen %d, lost %d)\n", line, u.Sample.Elapsed, u.Sample.Seen, u.Sample.Lost)
		return
	}
	if p.bar != nil {
		p.bar.ChangeMax(u.Total)
		p.bar.Describe(line)
		_ = p.bar.Set(u.Done)
		if u.Err != nil {
			_ = p.bar.Clear()
			fmt.Fprintf(os.Stderr, "tracer: %s: %v\n", line, u.Err)
		}
		return
	}
	if u.Err != nil {
		fmt.Fprintf(os.Stderr, "tracer: [%d/%d] %s: %v\n", u.Done, u.Total, line, u.Err)
		return
	}
	s := u.Sample
	seen := ""
	if s.Seen >= 0 {
		seen = fmt.Sprintf(", seen %d, lost %d", s.Seen, s.Lost)
	}
	if s.Metric > 0 {
		seen += fmt.Sprintf(", %.6g", s.Metric)
	}
	fmt.Fprintf(os.Stderr, "tracer: [%d/%d] %s: %.2fs (user %.2f sys %.2f%s)\n", u.Done, u.Total, line, s.Elapsed, s.User, s.Sys, seen)
}

func (p *benchProgress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
