package main

import "github.com/spf13/cobra"

func newRulesCmd() *cobra.Command   { return notYet("rules", "print the minimal audit rules") }
func newCleanupCmd() *cobra.Command { return notYet("cleanup", "remove rules a killed tracer left") }
