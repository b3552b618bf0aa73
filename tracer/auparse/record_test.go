// SPDX-License-Identifier: Apache-2.0

package auparse

import (
	"bytes"
	"os"
	"reflect"
	"strconv"
	"testing"
)

// A line of auditd's log in the ENRICHED format reads as the record the
// kernel sent: the fields auditd appends after 0x1d are not part of it,
// and the key (after comm, where ParseSyscall stops) is read by Field.
func TestLogRecord(t *testing.T) {
	line := "type=SYSCALL msg=audit(1796012089.707:405546): arch=c000003e syscall=56 success=yes exit=4242 a0=1200011 a1=0 a2=0 a3=7f items=0 ppid=1 pid=4000 auid=4294967295 uid=0 comm=\"sh\" exe=\"/usr/bin/dash\" key=\"tracer\"\x1dARCH=x86_64 SYSCALL=clone key=\"other\"\n"
	typ, msg, ok := LogRecord([]byte(line))
	if !ok || typ != "SYSCALL" {
		t.Fatalf("LogRecord = %q, %v", typ, ok)
	}
	_, serial, body, err := Header(msg)
	if err != nil || serial != 405546 {
		t.Fatalf("header: serial %d, %v", serial, err)
	}
	var r Syscall
	ParseSyscall(body, &r)
	if r.Arch != 0xc000003e || r.Syscall != 56 || !r.HasExit || r.Exit != 4242 || r.PID != 4000 || r.PPID != 1 || r.Args[0] != 0x1200011 || r.AUID != 4294967295 {
		t.Errorf("record %+v", r)
	}
	if k, ok := Field(body, "key"); !ok || k != "tracer" {
		t.Errorf("key %q %v: want the kernel's, not auditd's", k, ok)
	}
	if k, ok := Field([]byte(`arch=c000003e key=(null)`), "key"); !ok || k != "" {
		t.Errorf("no key: %q %v", k, ok)
	}
	if _, ok := Field(body, "nokey"); ok {
		t.Error("a field the record does not have")
	}
	for _, bad := range []string{"", "node=x type=SYSCALL", "type=EOE"} {
		if _, _, ok := LogRecord([]byte(bad)); ok {
			t.Errorf("LogRecord(%q) accepted", bad)
		}
	}
}

// The inline number readers agree with strconv on every form.
func TestNumberReaders(t *testing.T) {
	for _, v := range []string{"0", "7ffce334d9f6", "FFFFFFFFFFFFFFFF", "ffffffffffffffff1", "", "x", "12g", "00000000000000001"} {
		want, _ := strconv.ParseUint(v, 16, 64)
		if got := HexArg([]byte(v)); got != want {
			t.Errorf("HexArg(%q) = %d, want %d", v, got, want)
		}
	}
	for _, v := range []string{"0", "-1", "+5", "4294967295", "-9223372036854775808", "9223372036854775808", "", "-", "1a", "123456789012345678", "1234567890123456789"} {
		want, _ := strconv.ParseInt(v, 10, 64)
		if got := DecInt([]byte(v)); got != want {
			t.Errorf("DecInt(%q) = %d, want %d", v, got, want)
		}
	}
}

// Reading a SYSCALL record in the kernel's field order gives what reading
// it key by key does, on every recorded record and on the forms without
// success/exit (exit_group); a record in another order is read key by key.
func TestParseSyscallInOrder(t *testing.T) {
	b, err := os.ReadFile("../audit/testdata/workload.raw") // the audit backend's recording
	if err != nil {
		t.Fatal(err)
	}
	var bodies [][]byte
	for l := range bytes.Lines(b) {
		if typ, msg, ok := bytes.Cut(bytes.TrimSpace(l), []byte(" ")); ok && string(typ) == "1300" {
			_, _, body, err := Header(msg)
			if err != nil {
				t.Fatal(err)
			}
			bodies = append(bodies, body)
		}
	}
	if len(bodies) < 15 {
		t.Fatalf("only %d SYSCALL records", len(bodies))
	}
	inOrder := 0
	for _, body := range bodies {
		var a, k Syscall
		if parseSyscallInOrder(body, &a) {
			inOrder++
		} else {
			a = Syscall{}
			parseSyscallByKey(body, &a)
		}
		parseSyscallByKey(body, &k)
		if string(a.CommRaw) != string(k.CommRaw) {
			t.Errorf("comm %q, key by key %q", a.CommRaw, k.CommRaw)
		}
		for _, f := range [...]struct{ a, k *[]byte }{{&a.CommRaw, &k.CommRaw}, {&a.ExeRaw, &k.ExeRaw}, {&a.KeyRaw, &k.KeyRaw}, {&a.TTYRaw, &k.TTYRaw}} {
			if string(*f.a) != string(*f.k) {
				t.Errorf("raw field %q, key by key %q", *f.a, *f.k)
			}
			*f.a, *f.k = nil, nil
		}
		if !reflect.DeepEqual(a, k) {
			t.Errorf("in order %+v\nkey by key %+v\nof %s", a, k, body)
		}
	}
	if inOrder != len(bodies) {
		t.Errorf("%d of %d recorded records read in order", inOrder, len(bodies))
	}
	var r Syscall
	if parseSyscallInOrder([]byte(`syscall=62 arch=c000003e a0=1 a1=2 a2=0 a3=0 items=0 ppid=1 pid=2 auid=0 uid=0 comm="x"`), &r) {
		t.Error("a record in another order was read in order")
	}
	ParseSyscall([]byte(`syscall=62 arch=c000003e a0=1 a1=2 a2=0 a3=0 items=0 ppid=1 pid=2 auid=0 uid=0 comm="x"`), &r)
	if r.Syscall != 62 || r.Arch != 0xc000003e || r.PID != 2 || string(r.CommRaw) != `"x"` {
		t.Errorf("reordered record read as %+v", r)
	}
}
