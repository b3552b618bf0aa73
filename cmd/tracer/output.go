package main

import (
	"os"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// openOutput opens --output (mode 0600, never through a symlink: see
// tracer.CreateOutput), or returns stdout.
func openOutput(path string) (*os.File, error) {
	if path == "" || path == "-" {
		return os.Stdout, nil
	}
	f, err := tracer.CreateOutput(path)
	if err != nil {
		return nil, vocab.Usagef("cannot write --output: %v", err)
	}
	return f, nil
}
