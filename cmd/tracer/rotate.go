// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"log/slog"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tracer-dev/tracer/tracer/sink"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// rotateFlags are watch's --output-max-size and --output-keep: --output
// FILE for a watch that runs for months.
type rotateFlags struct {
	maxSize string
	keep    int
	flags   *pflag.FlagSet // to tell --output-keep given from its default
}

const (
	defaultOutputKeep = 5
	// minOutputSize catches a size given without its unit (100 for 100MB).
	minOutputSize = 4096
	// maxOutputKeep bounds the renames of one rotation.
	maxOutputKeep = 1000
)

func (r *rotateFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	r.flags = fl
	fl.StringVar(&r.maxSize, "output-max-size", "", "with --output FILE: before FILE would grow past SIZE (e.g. 100MB, 512KB, 1GiB; KB, MB, GB are powers of 1000, KiB, MiB, GiB and K, M, G of 1024), it becomes FILE.1 (FILE.1 becomes FILE.2, ...) and a new FILE starts, at a line's end. With or without it, an existing FILE is continued, not emptied, and SIGHUP reopens FILE (logrotate)")
	fl.IntVar(&r.keep, "output-keep", defaultOutputKeep, "with --output-max-size: how many rotated files to keep, FILE.1 (the newest) to FILE.N (at most 1000)")
}

// rotation checks the flags against --output; rotates says it is a file.
func (r *rotateFlags) rotation(output string, rotates bool) (sink.Rotation, error) {
	if r.maxSize == "" {
		if r.flags.Changed("output-keep") {
			return sink.Rotation{}, vocab.Usagef("--output-keep goes with --output-max-size: add --output-max-size SIZE (e.g. 100MB), or drop --output-keep where logrotate keeps the files (SIGHUP reopens FILE)")
		}
		return sink.Rotation{}, nil
	}
	if !rotates {
		return sink.Rotation{}, vocab.Usagef("--output-max-size rotates a file: name one with --output FILE")
	}
	n, err := sink.ParseSize(r.maxSize)
	if err != nil {
		return sink.Rotation{}, vocab.Usagef("--output-max-size: %v", err)
	}
	if n < minOutputSize {
		return sink.Rotation{}, vocab.Usagef("--output-max-size %s is %d bytes, under the least of 4KiB: give a unit, e.g. 100MB", r.maxSize, n)
	}
	if r.keep < 1 || r.keep > maxOutputKeep {
		return sink.Rotation{}, vocab.Usagef("--output-keep %d: keep from 1 to %d rotated files", r.keep, maxOutputKeep)
	}
	// Before the root check and anything installed; OpenRotatingFile
	// checks again when it opens the directory.
	if err := sink.CheckRotationDir(output); err != nil {
		return sink.Rotation{}, err
	}
	return sink.Rotation{MaxSize: n, Keep: r.keep, OnError: func(err error) {
		if err != nil {
			slog.Warn("rotating --output fails; FILE takes no more past --output-max-size, its events are counted lost at stage output, and rotating is tried again each second", "err", err)
		} else {
			slog.Warn("rotating --output again")
		}
	}}, nil
}

// reopenOnHangup is what SIGHUP does to a watch writing --output FILE:
// logrotate renamed FILE and asks for a new one.
func reopenOnHangup(reopen func() error) func() {
	return func() {
		if err := reopen(); err != nil {
			slog.Warn("SIGHUP: reopening --output failed; writing goes on in the file open until now", "err", err)
			return
		}
		slog.Debug("SIGHUP: reopened --output")
	}
}
