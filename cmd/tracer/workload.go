// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"github.com/spf13/cobra"

	"github.com/tracer-dev/tracer/bench"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// newWorkloadCmd is the hidden `tracer bench workload` command that runs the
// Go loops of bench's built-in workloads (signal-storm, syscall-tax, the
// sweep's paced exec-storm, and the rate workloads exec-rate and signal-rate) as a process of their own. It hangs under
// bench, which owns it.
func newWorkloadCmd() *cobra.Command {
	var count int64
	var rate float64
	var tids string
	cmd := &cobra.Command{
		Use:          "workload signal-storm|syscall-tax|exec-storm|exec-rate|signal-rate --count N [--rate R]",
		Short:        "Run a built-in bench workload loop (used by tracer bench)",
		Hidden:       true,
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if count < 0 {
				return vocab.Usagef("--count must not be negative")
			}
			if rate < 0 {
				return vocab.Usagef("--rate must not be negative")
			}
			return bench.RunLoop(args[0], count, rate, tids)
		},
	}
	cmd.Flags().Int64Var(&count, "count", 0, "how many kills, calls or spawns")
	cmd.Flags().Float64Var(&rate, "rate", 0, "events a second (0: as fast as it goes)")
	cmd.Flags().StringVar(&tids, "tids", "", "write the process's thread ids to FILE at the end")
	return cmd
}
