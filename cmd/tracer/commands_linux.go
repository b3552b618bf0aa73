// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import "github.com/spf13/cobra"

// linuxCommands are the commands that watch, measure or change the node,
// and the hidden commands tracer runs of itself for them.
func linuxCommands() []*cobra.Command {
	return []*cobra.Command{
		newWatchCmd(),
		newTraceCmd(),
		newCleanupCmd(),
		newBenchCmd(),
		newHeldCmd(),
		newAuditFloorCmd(),
	}
}

// needLinux is nil: this is Linux.
func needLinux(string) error { return nil }
