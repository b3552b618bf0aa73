// SPDX-License-Identifier: Apache-2.0

//go:build linux

package audit

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tracer-dev/tracer/tracer/sink"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// testdata/hostile.raw holds the kernel's records of a process that set its
// comm to "x\nF\x1b[31m\xff\x7f\u0085", signalled itself, forked and
// exec'd a file named with a newline, ESC sequences, DEL, a C1 control and
// bytes that are not UTF-8. The kernel logs such strings in hex; they must
// come back byte for byte, and print as one escaped line per event.
func TestReassembleHostileRecording(t *testing.T) {
	all, _ := vocab.ParseTypes("all")
	events := replay(t, "testdata/hostile.raw", all)
	const (
		comm = "x\nF\x1b[31m\xff\x7f\xc2\x85"
		file = "/tmp/cap/t\n\x1b[2Jfake\xfe\x7f\xc2\x9bz"
	)
	args := []string{"a\nFAKE\x1b]0;title\x07", "\xff\xfe\r\t", "\xc2\x85\xe2\x80\xa8ok"}
	type short struct {
		Type     vocab.Type
		Comm     string
		Filename string
		Argv     []string
	}
	want := []short{
		{vocab.TypeExec, "hostile", "./hostile", append([]string{"./hostile", comm, file}, args...)},
		{vocab.TypeSignal, comm, "", nil},
		{vocab.TypeFork, comm, "", nil},
		{vocab.TypeExec, comm, file, args},
		{vocab.TypeExit, "t\n\x1b[2Jfake\xfe\x7f\xc2\x9bz", "", nil},
		{vocab.TypeExit, comm, "", nil},
	}
	var got []short
	for _, e := range events {
		got = append(got, short{e.Type, e.Comm, e.Filename, e.Argv})
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events\n%q\nwant\n%q", got, want)
	}
	for i := range events {
		line := string(sink.AppendText(nil, &events[i]))
		if strings.ContainsAny(line, "\n\r\x1b\x7f\u0085\u009b") || !utf8.ValidString(line) {
			t.Errorf("text line %q is not one clean line", line)
		}
	}
}
