// SPDX-License-Identifier: Apache-2.0

//go:build linux

package host

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// readProcFile reads a /proc file whole however long it is, as os.ReadFile
// does: /proc/self/status is longer than the pooled buffer's first size.
func TestReadProcFileWhole(t *testing.T) {
	for _, path := range []string{"/proc/self/status", "/proc/self/stat", "/proc/self/cgroup"} {
		b := make([]byte, 0, 16)
		got, err := readProcFile(path, &b)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// stat and status hold counters that move between two reads:
		// compare what stays (the pid and comm, status's Name line) and
		// the length's order.
		first := func(b []byte) string {
			l, _, _ := strings.Cut(string(b), "\n")
			l, _, _ = strings.Cut(l, ")")
			return l
		}
		if first(got) != first(want) || len(got) < len(want)/2 || len(got) == 0 {
			t.Errorf("%s: read %d bytes (%q...), os.ReadFile %d", path, len(got), first(got), len(want))
		}
	}
	if _, err := readProcFile("/proc/no-such-pid/stat", new([]byte)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v, want ErrNotExist", err)
	}
}
