// SPDX-License-Identifier: Apache-2.0

package auparse

import (
	"bytes"
	"testing"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// The kernel writes the records these parsers read, but their strings come
// from whoever runs a process, and a record can arrive cut short (a full
// socket buffer, a kernel that logs a field differently). The fuzz target
// holds the parsers to: no panic, and output no larger than the input. The
// corpus in testdata/fuzz comes from the audit backend's
// testdata/workload.raw and the kernel's record formats
// (audit_log_untrustedstring, audit_log_execve_info).

// FuzzParseRecord runs every record parser over one record, header included.
func FuzzParseRecord(f *testing.F) {
	f.Add([]byte(`audit(1796011828.799:16): opid=9134 oauid=-1 ouid=0 oses=-1 ocomm="workload"`))
	// An argument continued from the record before: hex, then quoted.
	f.Add([]byte(`audit(1796011828.799:17):  a2[1]=20746865207461696C a3="TAIL_MARKER"`))
	f.Add([]byte(`audit(1796011828.799:17):  a0[3]="abc" a0[4]=`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		_, _, body, err := Header(msg)
		if err != nil {
			body = msg // the field parsers must hold up on anything
		} else if len(body) > len(msg) {
			t.Fatalf("body of %d bytes from a record of %d", len(body), len(msg))
		}

		fs := NewFields(body)
		for n := 0; ; n++ {
			k, v, ok := fs.Next()
			if !ok {
				break
			}
			if n > len(body) {
				t.Fatalf("more fields than bytes in %q", body)
			}
			if s := Untrusted(v); len(s) > len(v) {
				t.Fatalf("Untrusted(%q) = %q grew", v, s)
			}
			_ = HexArg(v)
			_ = DecInt(v)
			_ = k
		}

		var sc Syscall
		ParseSyscall(body, &sc)
		if len(sc.CommRaw) > len(body) {
			t.Fatalf("comm %q longer than the record", sc.CommRaw)
		}
		var args Execve
		args.Parse(body)
		block, _, _ := args.Args()
		// The block holds each argument kept with its NUL: no more bytes
		// than the record, a NUL each, and the cap.
		if len(block) > vocab.ArgvBytesMax || len(block) > len(body)+bytes.Count(block, []byte{0}) {
			t.Fatalf("argument block of %d bytes from a record of %d", len(block), len(body))
		}
		if _, name := Path(body); len(name) > len(body) {
			t.Fatalf("path %q longer than the record", name)
		}
		_ = ObjPID(body)
		if c := ObjComm(body); len(c) > len(body) {
			t.Fatalf("ocomm %q longer than the record", c)
		}
	})
}
