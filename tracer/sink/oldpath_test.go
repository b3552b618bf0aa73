// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/tracer-dev/tracer/tracer"
)

// TestFieldTableMatchesOldPath: the table gives what the JSON line and
// the ECS document, read back, gave.
func TestFieldTableMatchesOldPath(t *testing.T) {
	withHostname(t, "node-\xff1")
	names, events := fieldCorpus(t)
	var fw fieldWalker
	var f flattener
	old := renderFields(names, events, func(e *tracer.Event) []byte {
		b, err := fw.appendFields(nil, AppendJSON(nil, e), "TRACER_")
		if err != nil {
			t.Fatal(err)
		}
		return b
	}, func(e *tracer.Event) []attribute.KeyValue {
		kvs, err := f.flatten(nil, AppendECS(nil, e))
		if err != nil {
			t.Fatal(err)
		}
		return kvs
	})
	if *updateFields {
		if err := os.WriteFile(filepath.Join("testdata", "destfields.golden"), []byte(old), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := renderFields(names, events, newJournalFields, newOTLPAttributes)
	gl, wl := strings.Split(got, "\n"), strings.Split(old, "\n")
	bad := 0
	for i := range min(len(gl), len(wl)) {
		if gl[i] != wl[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, gl[i], wl[i])
			if bad++; bad > 10 {
				t.FailNow()
			}
		}
	}
	if len(gl) != len(wl) {
		t.Fatalf("%d lines, want %d", len(gl), len(wl))
	}
}
