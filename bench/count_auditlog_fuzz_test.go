// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// kernelString logs s as the kernel's audit_log_untrustedstring does:
// quoted when plain, upper-case hex when it holds a space, a quote, a
// control byte or a byte past '~'.
func kernelString(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '"' {
			return strings.ToUpper(hex.EncodeToString([]byte(s)))
		}
	}
	return `"` + s + `"`
}

// auditLogSyscalls are syscalls of the recorded log, on x86_64, with the
// event each makes.
var auditLogSyscalls = []struct {
	nr   int
	name string
	typ  vocab.Type
}{{56, "clone", vocab.TypeFork}, {435, "clone3", vocab.TypeFork}, {59, "execve", vocab.TypeExec}, {62, "kill", vocab.TypeSignal}}

// FuzzReadAuditLog reads auditd's log as bench counts it, around a
// record made by a process of any name (key=..., quotes, spaces, a
// newline in its comm or exe): that record is counted once, as what it
// is, and lines of any bytes around it change nothing of it, nor one
// another: the log reads as its lines read one by one. The corpus in
// testdata/fuzz/FuzzReadAuditLog holds runs of lines of
// testdata/count/auditd-cis-shell-1.log.
func FuzzReadAuditLog(f *testing.F) {
	f.Add("sh", "/usr/bin/dash", uint32(23012), uint32(23011), int32(23029), uint8(0),
		[]byte("type=EOE msg=audit(1796013584.643:2386144): \ntype=SYSCALL msg=audit(1.2:3): arch=40000003 syscall=37 success=yes exit=0 ppid=1 pid=9 key=\"tracer\"\n"))
	f.Add(`x" key="tracer`, "/tmp/a b\nc", uint32(1), uint32(0), int32(-11), uint8(3), []byte("type=SYSCALL msg=\x1d\r\n\ntype=SYSCALL"))
	f.Fuzz(func(t *testing.T, comm, exe string, pid, ppid uint32, exit int32, sc uint8, junk []byte) {
		s := auditLogSyscalls[int(sc)%len(auditLogSyscalls)]
		line := fmt.Sprintf(`type=SYSCALL msg=audit(1796013584.643:2386144): arch=c000003e syscall=%d success=yes exit=%d a0=1200011 a1=0 a2=0 a3=7fb0f7640a10 items=0 ppid=%d pid=%d auid=4294967295 uid=0 gid=0 euid=0 suid=0 fsuid=0 egid=0 sgid=0 fsgid=0 tty=(none) ses=4294967295 comm=%s exe=%s key="tracer"`+
			"\x1dARCH=x86_64 SYSCALL=%s AUID=\"unset\" UID=\"root\"", s.nr, exit, ppid, pid, kernelString(comm), kernelString(exe), s.name)
		want := procEvent{Type: s.typ, PID: pid, PPID: ppid}
		if s.typ == vocab.TypeFork && exit > 0 {
			want.Child = uint32(exit)
		}

		around := readAuditLogBytes(t, junk)
		log := bytes.Join([][]byte{junk, []byte(line), junk}, []byte("\n"))
		got := readAuditLogBytes(t, log)
		if wantAll := append(append(append([]procEvent{}, around...), want), around...); !reflect.DeepEqual(got, wantAll) {
			t.Fatalf("log %q:\n got %+v\nwant %+v", log, got, wantAll)
		}
		// Under another key, the record is not counted.
		other := strings.Replace(line, `key="tracer"`, `key="tracerx"`, 1)
		if got := readAuditLogBytes(t, []byte(other)); len(got) != 0 {
			t.Fatalf("record of key tracerx counted: %+v", got)
		}

		var byLine []procEvent
		for _, l := range bytes.Split(junk, []byte("\n")) {
			byLine = append(byLine, readAuditLogBytes(t, l)...)
		}
		if len(byLine) != len(around) || len(around) > bytes.Count(junk, []byte("type=SYSCALL")) {
			t.Fatalf("log %q: %+v, line by line %+v", junk, around, byLine)
		}
		if len(around) > 0 && !reflect.DeepEqual(byLine, around) {
			t.Fatalf("log %q: %+v, line by line %+v", junk, around, byLine)
		}
	})
}

// readAuditLogBytes reads the records of key tracer of log; logs of a
// fuzzer's size are read without error.
func readAuditLogBytes(t *testing.T, log []byte) []procEvent {
	t.Helper()
	evs, err := readAuditLog(bytes.NewReader(log), "tracer")
	if err != nil {
		t.Fatal(err)
	}
	return evs
}
