// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"os"
	"slices"
	"strings"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// A Destination is a kind of --output: a file or stdout (outfile.go), the
// journal (journal.go), syslog (syslog.go), an OpenTelemetry collector
// (otlp.go). Each registers itself with RegisterDestination from its own
// file, so a command lists, completes and opens them from the registry
// and never tests an --output value itself.
type Destination struct {
	// Forms are the --output values it takes, as help lists them
	// ("journal (journald)"); CleartextForms those it takes only with
	// --allow-cleartext.
	Forms, CleartextForms []string
	// Complete are the values shell completion offers.
	Complete []string
	// Match reports whether an --output value is this destination's,
	// mistyped ones included, so that Prepare says what is wrong. Nil
	// for the one destination that takes what no other does (a file).
	Match func(output string) bool
	// Prepare checks the value and the flags that go with it, and
	// returns a usage error for what the destination cannot do. It opens
	// nothing: it runs before anything is installed.
	Prepare func(output string, c DestinationConfig) (*Output, error)
}

// DestinationConfig is what the command's flags say of the output,
// besides --output itself.
type DestinationConfig struct {
	// Format is --format; FormatGiven says it was given.
	Format      string
	FormatGiven bool
	// Time is --time; TimeGiven says it was given as other than clock.
	Time      TimeMode
	TimeGiven bool
	// CAFile is --output-ca-file.
	CAFile string
	// AllowCleartext is --allow-cleartext.
	AllowCleartext bool
	// Version is tracer's, for a destination that names its sender.
	Version string
}

// Output is an --output value its destination accepted.
type Output struct {
	// Warning, when not "", is for the command to log: a risk the flags
	// accepted (a cleartext destination).
	Warning string
	// Rotates says --output-max-size applies (a file).
	Rotates bool
	// Open opens the output after the root check, before the backend
	// starts: a file is created here; a daemon is dialled by its sink.
	Open func(rot Rotation) (*OpenOutput, error)
}

// OpenOutput is an output opened: how watch makes its sink, and what
// SIGHUP does to it.
type OpenOutput struct {
	// NewSink makes the sink.
	NewSink func(OutputOptions) (tracer.Sink, error)
	// File is the file or pipe written, nil for a daemon.
	File *os.File
	// Reconnect, for a daemon, has the next send connect anew (SIGHUP:
	// a service's reload; there is no file to reopen).
	Reconnect func()
	// Reopen, for a file, opens its name anew (SIGHUP: logrotate renamed
	// it).
	Reopen func() error
}

var (
	destinations []*Destination
	fileDest     *Destination // Match nil: what no other takes
)

// RegisterDestination adds d to the --output destinations. It is called
// from init functions, before any output is prepared.
func RegisterDestination(d *Destination) {
	if d.Match == nil {
		if fileDest != nil {
			panic("sink: two destinations take what no other does")
		}
		fileDest = d
		return
	}
	destinations = append(destinations, d)
}

// destinationOf is the destination of an --output value.
func destinationOf(output string) *Destination {
	for _, d := range destinations {
		if d.Match(output) {
			return d
		}
	}
	return fileDest
}

// PrepareOutput checks an --output value against its destination and
// the flags that go with it: a usage error for what cannot work, before
// anything is installed.
func PrepareOutput(output string, c DestinationConfig) (*Output, error) {
	return destinationOf(output).Prepare(output, c)
}

// DestinationForms lists the --output values of every destination, and
// those each takes only with --allow-cleartext, in registration order
// with the file first.
func DestinationForms() (forms, cleartext []string) {
	for _, d := range append([]*Destination{fileDest}, destinations...) {
		forms = append(forms, d.Forms...)
		cleartext = append(cleartext, d.CleartextForms...)
	}
	return forms, cleartext
}

// DestinationCompletions are the --output values shell completion offers
// besides file names.
func DestinationCompletions() []string {
	var c []string
	for _, d := range destinations {
		c = append(c, d.Complete...)
	}
	return slices.Compact(c)
}

// refuseDestFlags refuses --output-ca-file and --allow-cleartext where
// the output has no use for them: ca and cleartext say whether it has.
func refuseDestFlags(c DestinationConfig, ca, cleartext bool) error {
	if c.CAFile != "" && !ca {
		return vocab.Usagef("--output-ca-file is for --output otlps://HOST:PORT or syslog+tls://HOST:PORT")
	}
	if c.AllowCleartext && !cleartext {
		return vocab.Usagef("--allow-cleartext is for --output otlp://, syslog:// or syslog+udp:// (HOST:PORT): drop it")
	}
	return nil
}

// unknownScheme reports whether output looks like a URL of a scheme no
// destination takes (kafka://), which is refused, not taken for a file.
func unknownScheme(output string) (string, bool) {
	scheme, _, found := strings.Cut(output, "://")
	return scheme, found && scheme != "" && !strings.ContainsAny(scheme, "/.")
}
