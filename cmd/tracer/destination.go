// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/sink"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// logDestination returns how watch makes its sink when --output names a
// log daemon, which takes events rather than lines: journal[:/SOCKET],
// syslog[:/SOCKET], syslog[+tcp|+udp|+tls]://HOST:PORT (tracer/sink), and
// what SIGHUP does then: connect to the daemon anew (a service's reload;
// there is no file to reopen, and ending the watch would stop the
// service). It returns nil for every other value (stdout, FILE,
// otlp://), and a usage error for a destination it cannot use.
func logDestination(o *watchOptions) (newSink func(sink.OutputOptions) (tracer.Sink, error), hangup func(), err error) {
	var reconnect atomic.Pointer[func()]
	hangup = func() {
		if f := reconnect.Load(); f != nil {
			(*f)()
			slog.Info("SIGHUP: connecting to --output anew", "output", o.output)
		}
	}
	out := o.output
	formatGiven := o.flags.Changed("format")
	timeGiven := o.flags.Changed("time") && o.sel.timeMode != "clock"
	if socket, ok, err := sink.ParseJournal(out); ok {
		if err != nil {
			return nil, nil, err
		}
		// The fields are tracer's own JSON fields: text and json (a
		// service's config may name either) change nothing; a schema
		// would be a promise the journal does not keep.
		if formatGiven && o.format != "text" && o.format != "json" && o.format != "" {
			return nil, nil, vocab.Usagef("--output journal stores each event's tracer fields (TRACER_*, docs/events.md), not %s: drop --format %s", o.format, o.format)
		}
		if timeGiven {
			return nil, nil, vocab.Usagef("--time is for text lines: the journal stores each event's time (TRACER_TIME): drop --time")
		}
		return func(opts sink.OutputOptions) (tracer.Sink, error) {
			j := sink.NewJournal(socket, opts)
			f := j.Reconnect
			reconnect.Store(&f)
			return j, nil
		}, hangup, nil
	}
	if cfg, ok, err := sink.ParseSyslog(out); ok {
		if err != nil {
			return nil, nil, err
		}
		// As for otlp://: the messages name every command line, and
		// whoever holds the port (any user, on loopback) would get them.
		if cfg.Cleartext() {
			if !o.dest.allowCleartext {
				return nil, nil, vocab.Usagef("--output %s is cleartext: every command line would go to whoever holds %s: use syslog+tls://%s (TLS; --output-ca-file CA.pem pins the server's CA) or the local socket (syslog, syslog:/SOCKET), or add --allow-cleartext", out, cfg.Addr, cfg.Addr)
			}
			slog.Warn("--allow-cleartext: events go to " + out + " unencrypted and unauthenticated; whoever holds the port gets every command line (use syslog+tls://)")
		}
		if cfg.TLS && o.dest.caFile != "" {
			if err := sink.CheckSyslogCA(o.dest.caFile); err != nil {
				return nil, nil, err
			}
			cfg.CAFile = o.dest.caFile
		}
		if timeGiven {
			return nil, nil, vocab.Usagef("--time is for text lines: a syslog message carries the event's time in its header: drop --time")
		}
		// A syslog server's pipelines parse JSON; --format text asks for
		// the text line instead.
		format := "json"
		if formatGiven {
			format = o.format
		}
		if _, ok := sink.FormatEncoder(format); !ok {
			return nil, nil, vocab.Usagef("unknown format %q: use %s", format, strings.Join(sink.FormatNames(), ", "))
		}
		return func(opts sink.OutputOptions) (tracer.Sink, error) {
			s, err := sink.NewSyslog(cfg, format, opts)
			if err != nil {
				return nil, err
			}
			f := s.Reconnect
			reconnect.Store(&f)
			return s, nil
		}, hangup, nil
	}
	if scheme, _, found := strings.Cut(out, "://"); found && !strings.HasPrefix(scheme, "otlp") && !strings.ContainsAny(scheme, "/.") {
		return nil, nil, vocab.Usagef("--output %q: unknown destination %s://: use FILE, journal, syslog, syslog+tls://HOST:PORT, syslog://HOST:PORT, syslog+udp://HOST:PORT, otlps://HOST:PORT, otlp:/SOCKET or otlp://HOST:PORT", out, scheme)
	}
	return nil, nil, nil
}
