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
