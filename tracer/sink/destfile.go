// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"os"
	"strings"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// The file destination takes every --output value no other destination
// does: FILE, or stdout ("" or -), in a --format's lines.
func init() {
	RegisterDestination(&Destination{Prepare: prepareFile})
}

func prepareFile(output string, c DestinationConfig) (*Output, error) {
	if scheme, ok := unknownScheme(output); ok {
		forms, cleartext := DestinationForms()
		var use []string
		for _, f := range append(forms, cleartext...) {
			f, _, _ = strings.Cut(f, " (")
			use = append(use, f)
		}
		return nil, vocab.Usagef("--output %q: unknown destination %s://: use FILE, %s or %s", output, scheme,
			strings.Join(use[:len(use)-1], ", "), use[len(use)-1])
	}
	if err := refuseDestFlags(c, false, false); err != nil {
		return nil, err
	}
	// Before FILE is created: a refused flag leaves none behind.
	if err := CheckFormat(c.Format, c.Time); err != nil {
		return nil, err
	}
	stdout := output == "" || output == "-"
	return &Output{Rotates: !stdout, Open: func(rot Rotation) (*OpenOutput, error) {
		if stdout {
			return &OpenOutput{File: os.Stdout, NewSink: func(opts OutputOptions) (tracer.Sink, error) {
				return NewSink(c.Format, os.Stdout, opts)
			}}, nil
		}
		// Mode 0600, never through a symbolic link (CreateOutput);
		// rotation and SIGHUP's reopen happen in the writer goroutine.
		f, err := OpenRotatingFile(output, rot)
		if err != nil {
			return nil, vocab.Usagef("cannot write --output: %v", err)
		}
		return &OpenOutput{Reopen: f.Reopen, NewSink: func(opts OutputOptions) (tracer.Sink, error) {
			return NewSink(c.Format, f, opts)
		}}, nil
	}}, nil
}
