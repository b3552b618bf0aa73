package main

import (
	"os"

	"github.com/tracer-dev/tracer/tracer/sink"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// openOutput opens --output (mode 0600, never through a symlink: see
// sink.CreateOutput), or returns stdout.
func openOutput(path string) (*os.File, error) {
	if path == "" || path == "-" {
		return os.Stdout, nil
	}
	f, err := sink.CreateOutput(path)
	if err != nil {
		return nil, vocab.Usagef("cannot write --output: %v", err)
	}
	return f, nil
}
