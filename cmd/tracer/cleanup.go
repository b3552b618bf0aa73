// SPDX-License-Identifier: Apache-2.0

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
	"github.com/tracer-dev/tracer/tracer/auditstate"
)

func newCleanupCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "cleanup",
		Short: "Remove what killed tracers left behind: their audit rules and settings; never a running tracer's, never the node's",
		Long: `Remove what tracers that are gone (killed with SIGKILL, OOM-killed, a pod
deleted with --force) left on the node: audit rules with their instance key
(tracer-PID-START), the lean-records exclude rules they recorded, their state
files in /run/tracer, and, when no tracer runs any more, the audit settings
they changed, each only while it still holds the value a tracer set, and
metrics sockets there that nothing serves on any more. Rules
of running tracers, the node's own rules and rules persisted from
'tracer rules' are never touched. The audit DaemonSet runs it at every pod
start.`,
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
			removed = append(removed, removeStaleRegistrations(auditstate.StateDir)...)
			// A killed tracer.service's metrics socket; rmdir of the
			// state directory on package removal needs it gone.
			removed = append(removed, removeStaleSockets(auditstate.StateDir)...)
			for _, r := range removed {
				fmt.Fprintln(cmd.OutOrStdout(), r)
			}
			if err = errors.Join(err, benchErr); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "tracer: cleanup done (%d changes; only rules with the key %q of a tracer that is gone, and the exclude rules tracers recorded, are removed; rules persisted from tracer rules are the node's)\n",
				len(removed), auditrules.Key+"-PID-START")
			return nil
		},
	}
}

// removeStaleRegistrations removes the registrations of tracers that are
// gone (an earlier version's peer-PID.json included) that audit.Cleanup
// left: it removes them too, but only where the audit socket opens.
func removeStaleRegistrations(dir string) []string {
	_, dead := auditstate.Registrations(dir)
	var done []string
	for _, r := range dead {
		if auditstate.Remove(dir, r) == nil {
			done = append(done, fmt.Sprintf("removed the registration of tracer pid %d, which is gone", r.PID))
		}
	}
	return done
}
