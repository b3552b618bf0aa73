// SPDX-License-Identifier: Apache-2.0

package auparse

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzLogRecord: a line of auditd's log, RAW or ENRICHED, gives back the
// record type and the record as the kernel sent it, whatever the record
// holds; and of any bytes, what LogRecord returns is the line's: a type
// without " msg=", a record without auditd's 0x1d part or the line's end.
// The corpus in testdata/fuzz/FuzzLogRecord holds lines of
// bench/testdata/count/auditd-cis-shell-1.log.
func FuzzLogRecord(f *testing.F) {
	f.Add("SYSCALL", []byte(`audit(1796013584.643:2386144): arch=c000003e syscall=56 success=yes exit=23029 ppid=23011 pid=23012 comm="sh" key="tracer"`),
		[]byte(`ARCH=x86_64 SYSCALL=clone AUID="unset" UID="root"`), []byte("type=EOE msg=audit(1796013584.643:2386144): \n"))
	f.Add("PROCTITLE", []byte(`audit(1796013584.107:2386140): proctitle=617564697464002D6E`), []byte{}, []byte("type= msg=\x1d msg=\n\n"))
	f.Fuzz(func(t *testing.T, typ string, msg, enriched, raw []byte) {
		// auditd's record types are names; the kernel's record text has
		// no 0x1d (it logs control bytes in hex) and no newline.
		typ = strings.Map(func(r rune) rune {
			if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
				return r
			}
			return -1
		}, typ)
		msg = bytes.ReplaceAll(bytes.ReplaceAll(msg, []byte{0x1d}, nil), []byte("\n"), nil)
		raw0 := "type=" + typ + " msg=" + string(msg)
		for _, line := range []string{raw0 + "\n", raw0, raw0 + "\x1d" + string(enriched) + "\n"} {
			gt, gm, ok := LogRecord([]byte(line))
			if !ok || gt != typ || !bytes.Equal(gm, msg) {
				t.Fatalf("LogRecord(%q) = %q, %q, %v; want %q, %q", line, gt, gm, ok, typ, msg)
			}
		}

		gt, gm, ok := LogRecord(raw)
		if !ok {
			if bytes.HasPrefix(raw, []byte("type=")) && bytes.Contains(raw, []byte(" msg=")) {
				t.Fatalf("LogRecord(%q) refused a line of the log's form", raw)
			}
			return
		}
		if strings.Contains(gt, " msg=") || bytes.IndexByte(gm, 0x1d) >= 0 || bytes.HasSuffix(gm, []byte("\n")) ||
			!bytes.HasPrefix(raw, []byte("type="+gt+" msg="+string(gm))) {
			t.Fatalf("LogRecord(%q) = %q, %q: not the line's type and record", raw, gt, gm)
		}
	})
}
