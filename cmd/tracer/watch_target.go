// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"github.com/spf13/cobra"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// targetFlags are watch's --target ("who killed it" in one command) and
// --ancestry.
type targetFlags struct {
	target   string
	ancestry int
	cmd      *cobra.Command
}

func (f *targetFlags) register(cmd *cobra.Command) {
	f.cmd = cmd
	cmd.Flags().StringVar(&f.target, "target", "",
		"only signals sent to, and the exit of, this process (a pid), or of every process of this name (a comm): who killed it")
	cmd.Flags().IntVar(&f.ancestry, "ancestry", 0,
		"add to each event the pid, comm and exec_id of up to N ancestors (parent first; at most 16)")
}

// apply puts --target in cfg. Without --events it keeps signals and exits.
func (f *targetFlags) apply(cfg *tracer.Config) error {
	if f.ancestry < 0 || f.ancestry > tracer.MaxAncestry {
		return vocab.Usagef("--ancestry %d is out of range: give 0 to %d ancestors", f.ancestry, tracer.MaxAncestry)
	}
	if f.target == "" {
		return nil
	}
	pid, _, err := tracer.ParseTarget(f.target)
	if err != nil {
		return err
	}
	if pid != 0 && !tracer.ProcessAlive(int(pid)) {
		return vocab.Usagef("--target %d: no such process: give the pid of a running process, or a process name (comm) to watch for", pid)
	}
	cfg.Target = f.target
	switch {
	case f.cmd == nil || !f.cmd.Flags().Changed("events"):
		cfg.Types = tracer.TargetTypes
	case !cfg.Types.Has(vocab.TypeSignal) && !cfg.Types.Has(vocab.TypeExit):
		return vocab.Usagef("--target keeps only signals and exits: add signal or exit to --events")
	}
	return nil
}
