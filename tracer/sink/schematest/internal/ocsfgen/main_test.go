// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"
)

// The source archive is the one testdata/ocsf/README.md names.
const (
	sourceFile   = "../../testdata/ocsf/ocsf-schema-1.8.0.tar.gz"
	sourceSHA256 = "1c37dca7b94133e067021c3c7feaa8d7a06a1fa3cf5e8934295c8560e0d2e1ee"
	schemaFile   = "../../testdata/ocsf/process_activity.schema.json"
)

// TestSourceChecksum: the committed OCSF source is the archive README.md
// describes, unchanged.
func TestSourceChecksum(t *testing.T) {
	b, err := os.ReadFile(sourceFile)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != sourceSHA256 {
		t.Errorf("%s: sha256 %s, want %s (testdata/ocsf/README.md)", sourceFile, got, sourceSHA256)
	}
}

// TestSchemaIsGenerated: the schema schematest validates against is what
// the generator builds from the source (go generate ./tracer/sink/schematest).
func TestSchemaIsGenerated(t *testing.T) {
	want, err := build(sourceFile)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what ocsfgen builds from %s: run go generate ./tracer/sink/schematest", schemaFile, sourceFile)
	}
}
