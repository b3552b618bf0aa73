// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package main

import (
	"runtime"

	"github.com/spf13/cobra"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// linuxCommands are, off Linux, the commands that watch, measure or change
// a Linux node, each saying in one line that it needs Linux: report and
// rules work here, on result files and rule text.
func linuxCommands() []*cobra.Command {
	var out []*cobra.Command
	for _, c := range []struct{ name, short string }{
		{"watch", "Stream exec, fork, signal and exit events (Linux only)"},
		{"trace", "Run CMD and trace its process tree (Linux only)"},
		{"cleanup", "Remove what killed tracers left behind (Linux only)"},
		{"bench", "Measure what watching costs (Linux only)"},
	} {
		out = append(out, &cobra.Command{
			Use:                c.name,
			Short:              c.short,
			DisableFlagParsing: true,
			SilenceUsage:       true,
			RunE:               func(*cobra.Command, []string) error { return needLinux(c.name) },
		})
	}
	return out
}

// needLinux says that the command what needs Linux (exit status 2).
func needLinux(what string) error {
	return vocab.Usagef("%s: needs Linux (this is %s)", what, runtime.GOOS)
}
