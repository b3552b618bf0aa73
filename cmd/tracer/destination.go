// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tracer-dev/tracer/tracer/sink"
)

// prepareOutput checks --output and the flags that go with it against its
// destination (sink.RegisterDestination: a file or stdout, the journal,
// syslog, OTLP), before anything is installed, and logs the risk the
// flags accepted.
func prepareOutput(o *watchOptions, timeMode sink.TimeMode) (*sink.Output, error) {
	out, err := sink.PrepareOutput(o.output, sink.DestinationConfig{
		Format: o.format, FormatGiven: o.flags.Changed("format"),
		Time: timeMode, TimeGiven: o.flags.Changed("time") && o.sel.timeMode != "clock",
		CAFile: o.dest.caFile, AllowCleartext: o.dest.allowCleartext, Version: version,
	})
	if err != nil {
		return nil, err
	}
	if out.Warning != "" {
		slog.Warn(out.Warning)
	}
	return out, nil
}

// hangupAction is what SIGHUP does to a watch writing to out: connect to
// a daemon anew (a service's reload; there is no file to reopen, and
// ending the watch would stop the service), reopen FILE (logrotate), or
// nil: end the watch, as a terminal's hangup should.
func hangupAction(out *sink.OpenOutput, output string) func() {
	switch {
	case out.Reconnect != nil:
		return func() {
			out.Reconnect()
			slog.Info("SIGHUP: connecting to --output anew", "output", output)
		}
	case out.Reopen != nil:
		return reopenOnHangup(out.Reopen)
	}
	return nil
}

// outputHelp is --output's help, its destinations from the registry.
func outputHelp() string {
	forms, cleartext := sink.DestinationForms()
	h := "write the events to FILE instead of stdout; or " + strings.Join(forms, ", ")
	if len(cleartext) > 0 {
		h += "; with --allow-cleartext " + strings.Join(cleartext, ", ")
	}
	return h
}

// completeOutput offers the destinations, and file names.
func completeOutput(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return sink.DestinationCompletions(), cobra.ShellCompDirectiveDefault | cobra.ShellCompDirectiveNoSpace
}
