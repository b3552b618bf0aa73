// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/sink"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// selectFlags are watch's execsnoop-like selectors and text conveniences.
type selectFlags struct {
	comm, pid, uid []string // comma lists, or the flag given again
	exe            string
	timeMode       string
	maxArgs        int
	quiet          bool
	cmd            *cobra.Command
}

func (f *selectFlags) register(cmd *cobra.Command) {
	f.cmd = cmd
	fl := cmd.Flags()
	fl.StringSliceVar(&f.comm, "comm", nil, "only events of processes with one of these comms (comma-separated, at most 15 characters each); an exec is matched by the comm before it, the program that called exec: --exe matches the new program")
	fl.StringVar(&f.exe, "exe", "", "only execs of this program: a path (/usr/bin/true), or a name (true) matching the path's last element; watches exec events")
	fl.StringSliceVar(&f.pid, "pid", nil, "only events of these processes (comma-separated pids of running processes) and their descendants")
	fl.StringSliceVar(&f.uid, "uid", nil, "only events of processes with one of these real uids (comma-separated numbers)")
	fl.StringVar(&f.timeMode, "time", "clock", "text output's time column: clock (15:04:05.000), iso (date, time and offset), relative (seconds since the start) or none")
	fl.IntVar(&f.maxArgs, "max-args", vocab.ArgvMax, "keep at most N arguments of an exec (1 to 20; argv_truncated marks a cut)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print no banner, notes or summary on stderr (errors and warnings still)")
	_ = cmd.RegisterFlagCompletionFunc("time", completeOne(sink.TimeModes...))
}

// apply puts the selectors in cfg and returns the text time mode, and a
// note to print when --comm is likely not what the user meant.
func (f *selectFlags) apply(cfg *tracer.Config) (sink.TimeMode, string, error) {
	var err error
	if cfg.Comms, err = tracer.ParseComms(strings.Join(f.comm, ",")); err != nil {
		return 0, "", err
	}
	if cfg.PIDs, err = tracer.ParseIDs("--pid", strings.Join(f.pid, ","), true); err != nil {
		return 0, "", err
	}
	if cfg.UIDs, err = tracer.ParseIDs("--uid", strings.Join(f.uid, ","), false); err != nil {
		return 0, "", err
	}
	if f.maxArgs < 1 || f.maxArgs > vocab.ArgvMax {
		return 0, "", vocab.Usagef("--max-args %d is out of range: give 1 to %d (tracer keeps at most %d arguments)", f.maxArgs, vocab.ArgvMax, vocab.ArgvMax)
	}
	if f.maxArgs < vocab.ArgvMax {
		cfg.MaxArgs = f.maxArgs
	}
	mode, err := sink.ParseTimeMode(f.timeMode)
	if err != nil {
		return 0, "", err
	}
	execOnly := vocab.TypeSet(0).With(vocab.TypeExec)
	if f.exe != "" {
		switch {
		case f.cmd.Flags().Changed("target"):
			return 0, "", vocab.Usagef("--exe keeps execs and --target signals and exits: give one of them")
		case !f.cmd.Flags().Changed("events"):
			cfg.Types = execOnly
		case cfg.Types != execOnly:
			return 0, "", vocab.Usagef("--exe keeps only exec events, which --events %s would mix with others: use --events exec, or leave --events out", cfg.Types)
		}
		cfg.Exe = f.exe
	}
	var note string
	if len(cfg.Comms) > 0 && cfg.Types == execOnly && f.exe == "" {
		note = "--comm matches an exec by the comm before it (the program that called exec, a shell's); --exe NAME matches the program it starts"
	}
	return mode, note, nil
}
