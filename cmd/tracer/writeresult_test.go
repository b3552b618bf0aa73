// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tracer-dev/tracer/bench/result"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// bench's result file is made as every output file is: mode 0600, never
// through a symbolic link; and it reads back.
func TestWriteResultMode0600(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	want := &result.File{Schema: result.Schema, Node: result.Facts{Hostname: "web-1", Kernel: "6.1.0"},
		Results: []result.Row{{Workload: "signal-storm", Mode: "none", Rounds: 1}}}
	if err := writeResult(path, want); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("result file mode: %v, %v; want 0600", fi, err)
	}
	if got, err := result.Read(path); err != nil || got.Node.Hostname != "web-1" || len(got.Results) != 1 {
		t.Errorf("read back: %+v, %v", got, err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(filepath.Join(dir, "elsewhere.json"), link); err != nil {
		t.Fatal(err)
	}
	if err := writeResult(link, want); !errors.Is(err, vocab.ErrUsage) {
		t.Errorf("through a symbolic link: %v, want a usage error", err)
	}
}
