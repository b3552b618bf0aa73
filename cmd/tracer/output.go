// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"strconv"

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

// handOver gives a file tracer wrote for a person to the user who ran
// sudo (SUDO_UID, SUDO_GID), so that they can open it without root, and
// sets its mode when mode is not 0. Files of a root that did not come
// through sudo stay root's.
func handOver(f *os.File, mode os.FileMode) error {
	if mode != 0 {
		if err := f.Chmod(mode); err != nil {
			return fmt.Errorf("setting the mode of %s: %w", f.Name(), err)
		}
	}
	if os.Geteuid() != 0 {
		return nil
	}
	uid, uerr := strconv.Atoi(os.Getenv("SUDO_UID"))
	gid, gerr := strconv.Atoi(os.Getenv("SUDO_GID"))
	if uerr != nil || gerr != nil || uid <= 0 {
		return nil
	}
	if err := f.Chown(uid, gid); err != nil {
		return fmt.Errorf("giving %s to the user who ran sudo (uid %d): %w", f.Name(), uid, err)
	}
	return nil
}

// parseMode reads an octal file mode flag ("0644", "644").
func parseMode(s string) (os.FileMode, error) {
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil || v > 0o777 {
		return 0, vocab.Usagef("--mode %q is not an octal file mode: give e.g. --mode 0644", s)
	}
	return os.FileMode(v), nil
}
