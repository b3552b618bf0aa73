// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"strings"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/sink"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// otlpDestination returns how watch makes its sink when --output is
// otlp://HOST:PORT or otlps://HOST:PORT (an OpenTelemetry collector), and
// nil for any other value. Its records carry the ECS fields, so --format
// and --time, which shape lines, are refused.
func otlpDestination(o *watchOptions) (func(sink.OutputOptions) (tracer.Sink, error), error) {
	// otlpx:// too: a mistyped scheme is refused, not taken for a file.
	if scheme, _, found := strings.Cut(o.output, "://"); !found || !strings.HasPrefix(scheme, "otlp") {
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
	// The URL is checked now, before any rule or probe is loaded.
	if err := sink.CheckOTLP(target); err != nil {
		return nil, err
	}
	return func(opts sink.OutputOptions) (tracer.Sink, error) {
		return sink.NewOTLPSink(target, opts, sink.OTLPOptions{Version: version})
	}, nil
}
