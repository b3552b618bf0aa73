//go:build linux

package main

import (
	"strings"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/sink"
)

// logDestination returns how watch makes its sink when --output names a
// log daemon, which takes events rather than lines: journal[:/SOCKET],
// syslog[:/SOCKET], syslog[+tcp|+udp]://HOST:PORT (tracer/sink). It
// returns nil for every other value (stdout, FILE, otlp://), and a usage
// error for a destination it cannot use.
func logDestination(o *watchOptions) (func(tracer.OutputOptions) (tracer.Sink, error), error) {
	out := o.output
	formatGiven := o.flags.Changed("format")
	timeGiven := o.flags.Changed("time") && o.sel.timeMode != "clock"
	if socket, ok, err := sink.ParseJournal(out); ok {
		if err != nil {
			return nil, err
		}
		// The fields are tracer's own JSON fields: text and json (a
		// service's config may name either) change nothing; a schema
		// would be a promise the journal does not keep.
		if formatGiven && o.format != "text" && o.format != "json" && o.format != "" {
			return nil, tracer.Usagef("--output journal stores each event's tracer fields (TRACER_*, docs/events.md), not %s: drop --format %s", o.format, o.format)
		}
		if timeGiven {
			return nil, tracer.Usagef("--time is for text lines: the journal stores each event's time (TRACER_TIME): drop --time")
		}
		return func(opts tracer.OutputOptions) (tracer.Sink, error) { return sink.NewJournal(socket, opts), nil }, nil
	}
	if cfg, ok, err := sink.ParseSyslog(out); ok {
		if err != nil {
			return nil, err
		}
		if timeGiven {
			return nil, tracer.Usagef("--time is for text lines: a syslog message carries the event's time in its header: drop --time")
		}
		// A syslog server's pipelines parse JSON; --format text asks for
		// the text line instead.
		format := "json"
		if formatGiven {
			format = o.format
		}
		if _, ok := tracer.FormatEncoder(format); !ok {
			return nil, tracer.Usagef("unknown format %q: use %s", format, strings.Join(tracer.FormatNames(), ", "))
		}
		return func(opts tracer.OutputOptions) (tracer.Sink, error) { return sink.NewSyslog(cfg, format, opts) }, nil
	}
	if scheme, _, found := strings.Cut(out, "://"); found && !strings.HasPrefix(scheme, "otlp") && !strings.ContainsAny(scheme, "/.") {
		return nil, tracer.Usagef("--output %q: unknown destination %s://: use FILE, journal, syslog, syslog://HOST:PORT, syslog+udp://HOST:PORT or otlp://HOST:PORT", out, scheme)
	}
	return nil, nil
}
