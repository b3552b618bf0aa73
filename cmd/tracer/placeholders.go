package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// Commands whose issues are in progress. Each moves to a file of its own.

func notYet(use, short string) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, RunE: func(*cobra.Command, []string) error {
		return errors.New(use + " is not built yet")
	}}
}

func newTraceCmd() *cobra.Command  { return notYet("trace", "run CMD and trace its process tree") }
func newBenchCmd() *cobra.Command  { return notYet("bench", "measure tracing overhead") }
func newReportCmd() *cobra.Command { return notYet("report", "render bench results") }
func newDoctorCmd() *cobra.Command { return notYet("doctor", "what this node supports") }
