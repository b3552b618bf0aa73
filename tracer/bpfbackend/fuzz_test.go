// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfbackend

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/sink"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// FuzzDecode holds the record decoder, and the batch splitter in front of
// it, to: no panic on any bytes, nothing kept of an earlier event, and
// output no larger than the record. The BPF programs write the records,
// but a layout mismatch or a perf sample's padding must cost a bad-record
// count, not the process. The corpus in testdata/fuzz/FuzzDecode holds
// records built to the layout of bpf/headers/types.h (see decode_test.go).
func FuzzDecode(f *testing.F) {
	f.Add(smallRecord(vocab.TypeSignal, 7, 4300, 10, 0))
	f.Add(execRecord("/usr/bin/grep", []string{"grep", "-q", "x"}, 0))
	f.Fuzz(func(t *testing.T, raw []byte) {
		d := newDecoder()
		e := tracer.Event{Argv: []string{"stale"}, Filename: "stale", Syscall: "stale"}
		err := d.decode(raw, &e)
		checkDecoded(t, raw, &e)
		if err != nil {
			return
		}
		switch e.Type {
		case vocab.TypeExec, vocab.TypeFork, vocab.TypeSignal, vocab.TypeExit:
		default:
			t.Fatalf("decoded an event of type %v", e.Type)
		}
		if e.Type != vocab.TypeExec && (len(e.Argv) != 0 || e.Filename != "") {
			t.Fatalf("%v event kept exec fields: %q %q", e.Type, e.Filename, e.Argv)
		}

		// The same bytes as a ring record of batched records, each
		// standing for 1 + its repeat count events.
		b := New()
		n := 0
		b.deliverBatch(d, raw, new(tracer.Event), func(e *tracer.Event) {
			if n++; n <= 64 {
				checkDecoded(t, raw, e)
			}
		})
		if n > (len(raw)/eventSize+1)*(maxRepeat+1) {
			t.Fatalf("%d events from a record of %d bytes", n, len(raw))
		}
	})
}

// checkDecoded fails t when e holds more than raw could, or prints as
// anything but one clean text line and one valid JSON object.
func checkDecoded(t *testing.T, raw []byte, e *tracer.Event) {
	t.Helper()
	if len(e.Comm) > commLen || len(e.TargetComm) > commLen || len(e.KilledBy.Comm) > commLen {
		t.Fatalf("comms of %d, %d, %d bytes", len(e.Comm), len(e.TargetComm), len(e.KilledBy.Comm))
	}
	if line := sink.AppendText(nil, e); bytes.ContainsAny(line, "\n\r\x1b\x7f\u0085\u009b") || !utf8.Valid(line) {
		t.Fatalf("text line %q", line)
	}
	if line := sink.AppendJSON(nil, e); !json.Valid(line) {
		t.Fatalf("invalid JSON %q", line)
	}
	if len(e.Argv) > 255 { // argc is one byte
		t.Fatalf("%d arguments", len(e.Argv))
	}
	total := len(e.Filename)
	for _, a := range e.Argv {
		total += len(a)
	}
	if e.Type == vocab.TypeExec && total > len(raw) {
		t.Fatalf("filename and argv of %d bytes from a record of %d", total, len(raw))
	}
}
