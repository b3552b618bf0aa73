// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/trace"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

type traceOptions struct {
	streamFlags
	user    string
	keepEnv bool
}

func newTraceCmd() *cobra.Command {
	var o traceOptions
	cmd := &cobra.Command{
		Use:   "trace --backend audit|ebpf [flags] -- CMD [ARGS...]",
		Short: "Run CMD, trace only its process tree, print counts and its resource use",
		Long: "trace runs CMD and counts the execs, forks and signals of CMD and every\n" +
			"descendant, keyed as bpftrace maps would be, then prints the counts and the\n" +
			"tree's rusage. CMD's stdin, stdout and stderr pass through; the report goes\n" +
			"to stderr or --output. The exit status is CMD's.",
		Example: `  tracer trace --backend ebpf -- sh ./cis-check.sh
  tracer trace --backend audit --format json -o counts.json -- make -j2
  tracer trace --backend ebpf --events signal --signal USR1 -- ./app
  tracer trace --backend ebpf --user nobody -- ./untrusted-script`,
		Args:         needCommand,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTrace(cmd.Context(), &o, args)
		},
	}
	o.register(cmd, []string{"table", "json", "text"}, "report format: table (text is the same) or json", "write the report to FILE instead of stderr")
	cmd.Flags().StringVarP(&o.user, "user", "u", "", "run CMD as this user: its uid, primary gid and supplementary groups, in a session of its own, on a pty of its own when on a terminal, with a reset environment")
	cmd.Flags().BoolVar(&o.keepEnv, "keep-env", false, "with --user: give CMD tracer's environment instead of a reset one (TERM, LANG, LC_*, TZ; PATH, HOME, USER, LOGNAME, SHELL for the user)")
	return cmd
}

// runTrace checks the flags, runs trace.Run and writes its report.
func runTrace(ctx context.Context, o *traceOptions, args []string) error {
	cfg, err := o.config()
	if err != nil {
		return err
	}
	if o.format == "text" {
		o.format = "table" // watch's name for its lines
	}
	if o.format != "table" && o.format != "json" {
		return vocab.Usagef("unknown format %q: use table or json", o.format)
	}
	b, err := newBackend(o.backend)
	if err != nil {
		return err
	}
	cred, err := trace.LookupUser(o.user)
	if err != nil {
		return err
	}
	if err := needRoot("tracer trace"); err != nil {
		return err
	}
	var report io.Writer = os.Stderr
	if o.output != "" {
		f, err := openOutput(o.output)
		if err != nil {
			return err
		}
		defer f.Close()
		report = f
	}
	res, err := trace.Run(ctx, trace.Options{
		Backend: b, Config: cfg, Args: args, Cred: cred, KeepEnv: o.keepEnv,
		// Metrics count events as the pipeline sees them.
		StreamEvents: o.metricsAddr != "",
		Observe: func(ctx context.Context, p *tracer.Pipeline) (func(), error) {
			return startMetrics(ctx, o.metricsAddr, p, b, metricsOptions{byComm: o.metricsComm})
		},
	})
	if err != nil {
		return err
	}
	slog.Debug("traced", "backend", b.Name(), "pid", res.PID, "auid", res.AUID)
	if res.CloseErr != nil {
		slog.Warn("removing rules or probes", "err", res.CloseErr)
	}
	if o.format == "json" {
		data, err := json.Marshal(res.Report)
		if err != nil {
			return err
		}
		if _, err := report.Write(append(data, '\n')); err != nil {
			return err
		}
	} else if err := res.Report.WriteTable(report); err != nil {
		return err
	}
	if code := res.Report.ExitCode; code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// newHeldCmd is the hidden step trace starts its command through
// (trace.RunHeld); it parses its own arguments.
func newHeldCmd() *cobra.Command {
	return &cobra.Command{
		Use:                trace.HeldCommand + " [--loginuid N] [--uid N --gid N --groups N,...] -- CMD [ARGS...]",
		Hidden:             true,
		DisableFlagParsing: true,
		Run:                func(_ *cobra.Command, args []string) { trace.RunHeld(args) },
	}
}
