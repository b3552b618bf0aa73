// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfbackend

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/sink"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// fixedClock stops a decoder's clock from syncing, so that two decoders
// give one record the same time.
func fixedClock(d *decoder) *decoder {
	d.clock = clock{nextSync: math.MaxUint64}
	return d
}

// FuzzDecodeAcrossRecords decodes a sequence of records with one decoder,
// as Run does: each record is the one before with a few bytes changed
// (the time alone, the sender and target alone, any byte, or its length),
// so the paths that reuse the last event (decode's same-but-time and
// otherParties) are taken. Each record must decode as a fresh decoder
// decodes it alone; a record's bytes are read within its length (the
// ring's buffer goes on past it, and is overwritten after each record); a
// record too short for its type is an error.
func FuzzDecodeAcrossRecords(f *testing.F) {
	sig := smallRecord(vocab.TypeSignal, 7, 4300, 10, 0)
	f.Add(sig, []byte{1, 0, 9, 0, 2, offPID, 3, 0, 2, offA, 250, 0, 1, 0, 1, 0})
	f.Add(sig, []byte{2, offXPID, 1, 0, 2, offStart, 7, 0, 0, offXFlags, xfTarget, 0, 2, offXStart, 1, 0, 3, 100, 0, 0})
	f.Add(smallRecord(vocab.TypeExit, 14, 3, 0, 0), []byte{1, 0, 1, 0, 0, offB, 9, 0, 0, offXFlags, xfKilled | xfKiller, 0})
	f.Add(smallRecord(vocab.TypeFork, 5, 4243, 0, 0), []byte{1, 0, 5, 0, 0, offType, uint8(vocab.TypeExec), 0, 3, 80, 0, 0})
	f.Add(execRecord("/usr/bin/grep", []string{"grep", "-q", "x"}, 0), []byte{1, 0, 1, 0, 0, offArgc, 30, 0, 0, offFilenameSize, 0xff, 0})
	f.Fuzz(func(t *testing.T, first, edits []byte) {
		if len(first) > 4096 {
			return
		}
		d := fixedClock(newDecoder())
		rec := append([]byte(nil), first...)
		buf := make([]byte, 0, 4096+256)
		var e tracer.Event // reused, as Run reuses one
		for {
			// The record in a larger buffer, what follows it poisoned.
			buf = append(buf[:0], rec...)
			for range 64 {
				buf = append(buf, 0xa5)
			}
			raw := buf[:len(rec)]
			err := d.decode(raw, &e)
			checkRecordLength(t, raw, err)

			alone := fixedClock(newDecoder())
			var want tracer.Event
			werr := alone.decode(bytes.Clone(rec), &want)
			if (err == nil) != (werr == nil) {
				t.Fatalf("record %x: %v after the records before, %v alone", rec, err, werr)
			}
			if err == nil {
				checkDecoded(t, raw, &e)
				// A ktime at the clock's end makes both sync, to nearly one offset.
				if !e.Time.Equal(want.Time) && binary.LittleEndian.Uint64(rec[offKtime:]) != math.MaxUint64 {
					t.Fatalf("record %x: time %v after the records before, %v alone", rec, e.Time, want.Time)
				}
				got, wantLine := e, want
				got.Time, wantLine.Time = time.Time{}, time.Time{}
				if g, w := sink.AppendJSON(nil, &got), sink.AppendJSON(nil, &wantLine); !bytes.Equal(g, w) {
					t.Fatalf("record %x:\n after the records before %s\n alone                    %s", rec, g, w)
				}
			}
			// The ring reuses its memory: nothing may point into it.
			for i := range buf {
				buf[i] = 0x5a
			}

			if len(edits) < 4 {
				return
			}
			rec = editRecord(rec, edits[:4])
			edits = edits[4:]
		}
	})
}

// editRecord changes record rec as edit (kind, offset, value, unused)
// says, the way consecutive records of a storm differ.
func editRecord(rec []byte, edit []byte) []byte {
	kind, off, v := edit[0], int(edit[1]), edit[2]
	le := binary.LittleEndian
	switch kind % 4 {
	case 0: // any byte
		if len(rec) > 0 {
			rec[off%len(rec)] = v
		}
	case 1: // a later time
		if len(rec) >= offKtime+8 {
			le.PutUint64(rec[offKtime:], le.Uint64(rec[offKtime:])+uint64(v)*1_000_003)
		}
	case 2: // the sender's or the target's pid or start, by v
		f := [...]int{offPID, offStart, offA, offXPID, offXStart}[off%5]
		if f+4 <= len(rec) {
			le.PutUint32(rec[f:], le.Uint32(rec[f:])+uint32(v))
		}
	case 3: // another length: cut short, or padded as a perf sample is
		if n := int(v) * 2; n < len(rec) {
			rec = rec[:n]
		} else {
			rec = append(rec, make([]byte, n-len(rec))...)
		}
	}
	return rec
}

// checkRecordLength fails t when decode accepted a record too short for
// its type, or refused a short one without saying so.
func checkRecordLength(t *testing.T, raw []byte, err error) {
	t.Helper()
	need := hdrSize
	if len(raw) >= hdrSize {
		switch vocab.Type(raw[offType]) {
		case vocab.TypeExec:
			need = offData
			if len(raw) >= offData {
				le := binary.LittleEndian
				need += int(le.Uint16(raw[offFilenameSize:])) + int(le.Uint16(raw[offArgvSize:]))
			}
		case vocab.TypeFork, vocab.TypeSignal, vocab.TypeExit:
			need = eventSize
		}
	}
	switch {
	case len(raw) < need && err == nil:
		t.Fatalf("a record of %d bytes, %d needed, decoded", len(raw), need)
	case len(raw) < need && !errors.Is(err, errShortRecord):
		t.Fatalf("a record of %d bytes, %d needed: %v, not a short record", len(raw), need, err)
	}
}
