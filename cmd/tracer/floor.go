// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tracer-dev/tracer/bench"
	"github.com/tracer-dev/tracer/tracer/sink"
)

// newAuditFloorCmd is the hidden `tracer __audit-floor` command: bench's
// audit-floor mode runs it around each run as the audit mode runs `tracer
// watch`. It loads the audit mode's rules and discards every record until
// SIGTERM, then prints what it read, and writes it as JSON to
// --stats-file, which bench reads.
func newAuditFloorCmd() *cobra.Command {
	var statsFile string
	var classic bool
	cmd := &cobra.Command{
		Use:          "__audit-floor",
		Short:        "Load the audit rules and discard every record (tracer bench's audit floor)",
		Hidden:       true,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			parent := cmd.Context()
			if parent == nil {
				parent = context.Background()
			}
			if statsFile != "" {
				if err := sink.CheckOutput(statsFile); err != nil {
					return err
				}
			}
			ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
			defer stop()
			st, err := bench.RunAuditFloor(ctx, !classic, func(beside string) {
				fmt.Fprintln(os.Stderr, bench.FormatAuditFloorReady(beside))
			})
			fmt.Fprintln(os.Stderr, bench.FormatAuditFloorSummary(st))
			if statsFile != "" && err == nil {
				err = writeStatsFile(statsFile, st)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&statsFile, "stats-file", "", "on exit, write what the floor read as JSON to FILE")
	cmd.Flags().BoolVar(&classic, "classic", false, "every record (as auditd reads them), not the audit mode's lean records")
	return cmd
}
