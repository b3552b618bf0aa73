// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tracer-dev/tracer/tracer/sink"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// version is set by the Makefile through -ldflags.
var version = "dev"

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "tracer",
		Short: "Who forks, execs and signals what on this node, and what watching it costs",
		Long: "tracer watches process events (exec, fork, signal, exit) with the Linux audit\n" +
			"subsystem or with eBPF, and measures what each way of watching costs.",
		Example: `  sudo tracer doctor
  sudo tracer watch --backend ebpf
  sudo tracer trace --backend ebpf -- make -j2
  sudo tracer bench --quick -o bench.json
  tracer report --format html -o bench.html bench.json
  tracer rules > /etc/audit/rules.d/tracer.rules`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.PersistentFlags().String("log-level", "info", "log level: debug, info, warn, error")
	root.PersistentFlags().String("cpuprofile", "", "write a Go CPU profile of tracer itself to FILE")
	_ = root.PersistentFlags().MarkHidden("cpuprofile")
	_ = root.RegisterFlagCompletionFunc("log-level", completeOne("debug", "info", "warn", "error"))
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		lvl, _ := cmd.Flags().GetString("log-level")
		var l slog.Level
		if err := l.UnmarshalText([]byte(lvl)); err != nil {
			return vocab.Usagef("unknown --log-level %q: use debug, info, warn or error", lvl)
		}
		slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})))
		if path, _ := cmd.Flags().GetString("cpuprofile"); path != "" {
			f, err := sink.CreateOutput(path)
			if err != nil {
				return vocab.Usagef("cannot write --cpuprofile: %v", err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				return err
			}
		}
		return nil
	}
	root.PersistentPostRun = func(*cobra.Command, []string) { pprof.StopCPUProfile() }
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &vocab.UsageError{Msg: err.Error() + " (see --help)", Err: err}
	})
	root.AddCommand(
		newRulesCmd(),
		newReportCmd(),
		newDoctorCmd(),
		newVersionCmd(),
		newManCmd(),
	)
	// watch, trace, cleanup, bench and their hidden helpers (commands_linux.go);
	// elsewhere each says in one line that it needs Linux (commands_other.go).
	root.AddCommand(linuxCommands()...)
	initCompletionCmd(root)
	return root
}

// initCompletionCmd adds cobra's completion command, made to refuse a
// shell it has no script for (cobra prints its help and exits 0), and
// without a man page for powershell, which no Linux node runs.
func initCompletionCmd(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return vocab.Usagef("unknown shell %q: use bash, zsh, fish or powershell (e.g. tracer completion bash)", args[0])
		}
		for _, sh := range c.Commands() {
			if sh.Name() == "powershell" {
				sh.Hidden = true
			}
		}
	}
}

// run executes the CLI and maps errors to exit statuses: 2 for what the user
// can fix (bad input, not root, audit locked), 1 for everything else.
func run(args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var exit *exitError
	if errors.As(err, &exit) {
		return exit.code
	}
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	fmt.Fprintf(os.Stderr, "tracer: %s\n", msg)
	if errors.Is(err, vocab.ErrUsage) || isCobraUsage(err) {
		return 2
	}
	return 1
}

// exitError carries an exit status without a message (trace returns its command's).
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// isCobraUsage recognises cobra's own argument errors, which it does not route through SetFlagErrorFunc.
func isCobraUsage(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "unknown command") || strings.Contains(s, "arg(s)") ||
		strings.HasPrefix(s, "unknown flag") || strings.HasPrefix(s, "required flag")
}
