//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/bench"
	"github.com/tracer-dev/tracer/tracer/audit"
)

func newCleanupCmd() *cobra.Command {
	return &cobra.Command{
		Use:          "cleanup",
		Short:        "Remove what killed tracers left behind: their audit rules and settings; never a running tracer's",
		Example:      `  tracer cleanup`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := needRoot("tracer cleanup"); err != nil {
				return err
			}
			removed, err := audit.Cleanup()
			// What a killed tracer bench changed: a stopped auditd, audit
			// settings, a simulated disk.
			benchDone, benchErr := bench.Cleanup()
			removed = append(removed, benchDone...)
			for _, r := range removed {
				fmt.Fprintln(cmd.OutOrStdout(), r)
			}
			if err = errors.Join(err, benchErr); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "tracer: cleanup done (%d changes; only rules with key %q or %q of a tracer that is gone are removed)\n",
				len(removed), auditrules.Key, auditrules.Key+"-PID-START")
			return nil
		},
	}
}
