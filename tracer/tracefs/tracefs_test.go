// SPDX-License-Identifier: Apache-2.0

//go:build linux

package tracefs

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDo runs work where tracefs is mounted, and leaves the mount table as
// it was.
func TestDo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting tracefs privately needs root")
	}
	before := Mounted()
	err := Do(func() error {
		_, err := os.Stat(filepath.Join(Path, "events"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if after := Mounted(); after != before {
		t.Errorf("tracefs mounted %v before Do, %v after", before, after)
	}
}
