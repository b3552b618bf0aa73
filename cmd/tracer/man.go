// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// newManCmd is the hidden step `make man` runs: tracer(8) and a page per
// command, from the commands' own help, so that they cannot disagree.
func newManCmd() *cobra.Command {
	return &cobra.Command{
		Use:          "man DIR",
		Short:        "Write the man pages, tracer(8) and tracer-COMMAND(8), to DIR",
		Hidden:       true,
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return fmt.Errorf("making the man page directory: %w", err)
			}
			root := cmd.Root()
			root.DisableAutoGenTag = true
			return doc.GenManTree(root, &doc.GenManHeader{
				Title: "TRACER", Section: "8", Source: "tracer " + version, Manual: "System Administration",
			}, args[0])
		},
	}
}
