// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/sink"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// otlpDestination returns how watch makes its sink when --output is
// otlps://HOST:PORT, otlp:/SOCKET or otlp://HOST:PORT (an OpenTelemetry
// collector), and
// nil for any other value. Its records carry the ECS fields, so --format
// and --time, which shape lines, are refused.
func otlpDestination(o *watchOptions) (func(sink.OutputOptions) (tracer.Sink, error), error) {
	// otlpx:// too: a mistyped scheme is refused, not taken for a file.
	scheme, _, found := strings.Cut(o.output, "://")
	if !(found && strings.HasPrefix(scheme, "otlp")) && !strings.HasPrefix(o.output, "otlp:/") {
		return nil, nil
	}
	// An empty --format= (tracer.service's TRACER_FORMAT left empty) is the default.
	if o.flags.Changed("format") && o.format != "" && o.format != "ecs" {
		return nil, vocab.Usagef("--output %s sends OpenTelemetry log records whose attributes are the ECS fields (docs/events.md), not --format lines: drop --format", o.output)
	}
	if o.flags.Changed("time") && o.sel.timeMode != "clock" {
		return nil, vocab.Usagef("--time is for text lines: an OTLP log record carries the event's time: drop --time")
	}
	target := o.output
	so := sink.OTLPOptions{Version: version, CAFile: o.dest.caFile, AllowCleartext: o.dest.allowCleartext}
	// The URL is checked now, before any rule or probe is loaded.
	if err := sink.CheckOTLP(target, so); err != nil {
		return nil, err
	}
	if sink.OTLPCleartext(target) {
		slog.Warn("--allow-cleartext: events go to " + target + " unencrypted and unauthenticated; whoever holds the port gets every command line (use otlps:// or otlp:/SOCKET)")
	}
	return func(opts sink.OutputOptions) (tracer.Sink, error) {
		return sink.NewOTLPSink(target, opts, so)
	}, nil
}

// destFlags are how watch may reach a destination over the network.
type destFlags struct {
	allowCleartext bool   // --allow-cleartext
	caFile         string // --output-ca-file
}

func (d *destFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&d.allowCleartext, "allow-cleartext", false, "send --output otlp://, syslog:// or syslog+udp:// unencrypted (refused by default: whoever holds the port, any user of the node on loopback, gets every command line; never with OTLP headers)")
	cmd.Flags().StringVar(&d.caFile, "output-ca-file", "", "otlps:// and syslog+tls://: trust only the CA certificates in FILE (PEM) for the server, instead of the system's")
}

// checkDestFlags refuses the destination flags where --output has no use
// for them.
func checkDestFlags(o *watchOptions) error {
	scheme, _, found := strings.Cut(o.output, "://")
	if !found {
		scheme = "" // a file, journal, syslog, syslog:/SOCKET, otlp:/SOCKET
	}
	if o.dest.caFile != "" && scheme != "otlps" && scheme != "syslog+tls" {
		return vocab.Usagef("--output-ca-file is for --output otlps://HOST:PORT or syslog+tls://HOST:PORT")
	}
	if o.dest.allowCleartext && scheme != "otlp" && scheme != "syslog" && scheme != "syslog+tcp" && scheme != "syslog+udp" {
		return vocab.Usagef("--allow-cleartext is for --output otlp://, syslog:// or syslog+udp:// (HOST:PORT): drop it")
	}
	return nil
}
