//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/watch"
)

type watchOptions struct {
	streamFlags
	duration time.Duration
	comm     string
	pid      string
	target   targetFlags // watch_target.go
	// statsFile receives the exit summary as JSON (tracer.StatsFile).
	statsFile string
}

func newWatchCmd() *cobra.Command {
	var o watchOptions
	cmd := &cobra.Command{
		Use:   "watch --backend audit|ebpf",
		Short: "Stream exec, fork, signal and exit events until Ctrl-C, SIGTERM or --duration",
		Example: `  tracer watch --backend ebpf
  tracer watch --backend audit --events signal --signal USR1 --format json
  tracer watch --backend ebpf --pid 4242 --duration 30s -o events.jsonl --format json`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWatch(cmd.Context(), &o)
		},
	}
	o.register(cmd, "text", "output format: text or json")
	cmd.Flags().DurationVar(&o.duration, "duration", 0, "stop after this long (e.g. 30s); default: until Ctrl-C or SIGTERM")
	cmd.Flags().StringVar(&o.comm, "comm", "", "only events of processes with this comm")
	cmd.Flags().StringVar(&o.pid, "pid", "", "only events of this process and its descendants")
	cmd.Flags().StringVar(&o.statsFile, "stats-file", "", "on exit, write events seen and lost per stage as JSON to FILE")
	o.target.register(cmd)
	return cmd
}

// runWatch checks the flags, runs watch.Run until a signal or --duration
// ends it, and prints the summary.
func runWatch(parent context.Context, o *watchOptions) error {
	cfg, err := o.config()
	if err != nil {
		return err
	}
	if cfg.Comms, err = tracer.ParseComms(o.comm); err != nil {
		return err
	}
	if cfg.PID, err = parsePID(o.pid); err != nil {
		return err
	}
	if err := o.target.apply(&cfg); err != nil {
		return err
	}
	if o.statsFile != "" {
		if err := tracer.CheckOutput(o.statsFile); err != nil {
			return err
		}
	}
	if o.duration < 0 {
		return tracer.Usagef("--duration must be positive")
	}
	b, err := newBackend(o.backend)
	if err != nil {
		return err
	}
	if err := needRoot("tracer watch"); err != nil {
		return err
	}
	out, err := openOutput(o.output)
	if err != nil {
		return err
	}
	if o.backend == "ebpf" {
		if err := batchScheduling(); err != nil {
			slog.Debug("staying with the default scheduling policy", "err", err)
		}
	}
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := context.WithCancelCause(parent)
	defer stop(nil)
	sd := newShutdown(stop)
	defer sd.release()
	res, err := watch.Run(ctx, watch.Options{
		Backend: b, Config: cfg, Format: o.format, Output: out,
		Duration: o.duration, Ancestry: o.target.ancestry, Abort: sd.abort,
		Observe: func(ctx context.Context, p *tracer.Pipeline) (func(), error) {
			return startMetrics(ctx, o.metricsAddr, p, b, metricsOptions{byComm: o.metricsComm})
		},
		Started: func() {
			// What starting left (the parsed kernel types) is collected
			// now, not beside a workload once events flow.
			runtime.GC()
			debug.FreeOSMemory()
			printNotes(b)
			printLateNotes(ctx, b)
			fmt.Fprintf(os.Stderr, "tracer: watching %s events with the %s backend (Ctrl-C to stop)\n", cfg.Types, b.Name())
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
	fmt.Fprintf(os.Stderr, "tracer: %d events seen, %s%d lost (%s)\n",
		res.Emitted, map[bool]string{true: ">="}[st.LostIsLowerBound()], st.TotalLost(), st.LossSummary())
	if res.CloseErr != nil {
		slog.Warn("removing rules or probes", "err", res.CloseErr)
	}
	return err
}

// writeStatsFile writes the exit figures (watch's tracer.StatsFile, the
// audit floor's bench.AuditFloorStats) as one JSON object.
func writeStatsFile(path string, sf any) error {
	f, err := tracer.CreateOutput(path)
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
