package main

import (
	"github.com/spf13/cobra"

	"github.com/tracer-dev/tracer/tracer"
)

// targetFlags is watch's --target: "who killed it" in one command.
type targetFlags struct {
	target string
	cmd    *cobra.Command
}

func (f *targetFlags) register(cmd *cobra.Command) {
	f.cmd = cmd
	cmd.Flags().StringVar(&f.target, "target", "",
		"only signals sent to, and the exit of, this process (a pid), or of every process of this name (a comm): who killed it")
}

// apply puts --target in cfg. Without --events it keeps signals and exits.
func (f *targetFlags) apply(cfg *tracer.Config) error {
	if f.target == "" {
		return nil
	}
	if _, _, err := tracer.ParseTarget(f.target); err != nil {
		return err
	}
	cfg.Target = f.target
	switch {
	case f.cmd == nil || !f.cmd.Flags().Changed("events"):
		cfg.Types = tracer.TargetTypes
	case !cfg.Types.Has(tracer.TypeSignal) && !cfg.Types.Has(tracer.TypeExit):
		return tracer.Usagef("--target keeps only signals and exits: add signal or exit to --events")
	}
	return nil
}
