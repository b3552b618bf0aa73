// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

func TestEscape(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"bash", "bash"},
		{"/usr/bin/grep -v \"x\"", `/usr/bin/grep -v "x"`},
		{"kworker/0:1H", "kworker/0:1H"},
		{"a\nFAKE LINE", `a\nFAKE LINE`},
		{"\r\t\a\b\f\v", `\r\t\a\b\f\v`},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"\x00\x01\x1f", `\x00\x01\x1f`},
		{"del\x7f", `del\x7f`},
		{`back\slash`, `back\\slash`},
		{"\xff\xfe", `\xff\xfe`},
		{"\xe2\x80", `\xe2\x80`},         // truncated sequence
		{"\xed\xa0\x80", `\xed\xa0\x80`}, // a surrogate is not UTF-8
		{"\xc0\xaf", `\xc0\xaf`},         // overlong '/'
		{"\xc2\x85next", `\u0085next`},   // NEL, a C1 control
		{"\xc2\x9b31m", `\u009b31m`},     // CSI, a C1 control
		{"a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"\u202egnp.exe", `\u202egnp.exe`}, // right-to-left override
		{"zero\u200bwidth", `zero\u200bwidth`},
		{"nb\u00a0sp", `nb\u00a0sp`},
		{"\ufeffbom", `\ufeffbom`},
		{"\U000f0000", `\U000f0000`},
		{"é日本語😀", "é日本語😀"},
		{"\ufffd", "\ufffd"}, // a real U+FFFD stays, an invalid byte does not become one
	}
	for _, c := range cases {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := string(AppendEscaped([]byte("pre "), c.in)); got != "pre "+c.want {
			t.Errorf("AppendEscaped(%q) = %q", c.in, got)
		}
	}
}

// The common case, a plain comm or path, costs no allocation.
func TestEscapePlainDoesNotAllocate(t *testing.T) {
	s := "/usr/lib/systemd/systemd-journald"
	if n := testing.AllocsPerRun(100, func() { _ = Escape(s) }); n != 0 {
		t.Errorf("Escape of a plain string allocates %v times", n)
	}
}

// unescape reverses Escape with strconv.Unquote: Escape's escapes are Go's,
// so every output reads back to exactly its input.
func unescape(s string) (string, error) {
	return strconv.Unquote(`"` + strings.ReplaceAll(s, `"`, `\"`) + `"`)
}

// checkEscaped fails t unless out is what Escape must make of in: valid
// UTF-8 without controls, that reads back to in, and in quoted form the
// same as strconv.Quote.
func checkEscaped(t *testing.T, in string) {
	t.Helper()
	out := Escape(in)
	if bad := firstControl(out); bad >= 0 {
		t.Fatalf("Escape(%q) = %q: control or invalid UTF-8 at byte %d", in, out, bad)
	}
	if back, err := unescape(out); err != nil || back != in {
		t.Fatalf("Escape(%q) = %q reads back as %q, %v", in, out, back, err)
	}
	if q := string(appendQuoted(nil, in)); q != strconv.Quote(in) {
		t.Fatalf("appendQuoted(%q) = %s, strconv.Quote gives %s", in, q, strconv.Quote(in))
	}
}

// firstControl returns the index of the first raw C0, DEL, C1 or invalid
// UTF-8 byte of s, or -1.
func firstControl(s string) int {
	for i, r := range s {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f {
			return i
		}
		if r == utf8.RuneError && !strings.HasPrefix(s[i:], "\ufffd") {
			return i
		}
	}
	return -1
}

// randomString returns n bytes biased towards what breaks output: control
// bytes, backslashes, quotes, C1 lead bytes and stray UTF-8 continuation bytes.
func randomString(r *rand.Rand, n int) string {
	var b []byte
	for len(b) < n {
		switch r.IntN(6) {
		case 0:
			b = append(b, byte(r.IntN(0x20)))
		case 1:
			const tricky = "\\\"\x7f\xc2\xe2\x80\xa8"
			b = append(b, tricky[r.IntN(len(tricky))])
		case 2:
			b = utf8.AppendRune(b, rune(r.IntN(0x3000)))
		case 3:
			b = append(b, byte(r.IntN(256)))
		default:
			b = append(b, byte(0x20+r.IntN(0x5f)))
		}
	}
	return string(b)
}

func TestEscapeRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		checkEscaped(t, randomString(r, r.IntN(40)))
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"bash", "x\nFAKE\x1b[31m", "\xff\xc2\x85", `a\"b`, "\u2028\U000f0000"} {
		f.Add(s)
	}
	f.Fuzz(checkEscaped)
}

func hostileEvents() []*tracer.Event {
	when := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.Local)
	comm := "x\nFAKE\x1b[31m\xff"
	file := "/tmp/a\nb\x1b]0;t\x07\xfe\xc2\x9b"
	return []*tracer.Event{
		{Time: when, Backend: "ebpf", Type: vocab.TypeExec, PID: 42, Comm: comm, PPID: 1, Filename: file,
			Argv: []string{file, "\r\t", "ok \"q\"", "\xc2\x85\u2028"}},
		{Time: when, Backend: "audit", Type: vocab.TypeFork, PID: 42, Comm: comm, Syscall: "clone\n", ChildPID: 43},
		{Time: when, Backend: "b\x1bx", Type: vocab.TypeSignal, PID: 42, Comm: comm, Syscall: "kill", TargetPID: -1, Signal: 10},
		{Time: when, Backend: "ebpf", Type: vocab.TypeExit, PID: 43, Comm: "\x7f\x85\n", ExitCode: 1},
		{Time: when, Backend: "ebpf", Type: vocab.Type(200), PID: 44, Comm: comm},
		// Strings without a C0 control, which a helper may take for plain.
		{Time: when, Backend: "ebpf", Type: vocab.TypeSignal, PID: 42, Comm: comm, Syscall: "kill", TargetPID: 43, Signal: 15,
			TargetComm: "\xc2\x9b2J\xff"},
		{Time: when, Backend: "ebpf", Type: vocab.TypeExit, PID: 43, Comm: comm, Signal: 9,
			KilledBy: tracer.KilledBy{Origin: vocab.OriginUser, PID: 42, Comm: "\xc2\x9b2J\xff\u202e", Syscall: "kill\xc2\x85"}},
	}
}

func TestAppendTextHostile(t *testing.T) {
	for _, e := range hostileEvents() {
		line := string(AppendText(nil, e))
		if strings.Contains(line, "\n") || firstControl(line) >= 0 {
			t.Errorf("AppendText = %q: not one clean line", line)
		}
	}
	e := hostileEvents()[0]
	want := `03:04:05.006 ebpf    exec   42      x\nFAKE\x1b[31m\xff 0          ppid=1 ret=0 /tmp/a\nb\x1b]0;t\a\xfe\u009b ` +
		`"/tmp/a\nb\x1b]0;t\a\xfe\u009b" "\r\t" "ok \"q\"" "\u0085\u2028"`
	if got := string(AppendText(nil, e)); got != want {
		t.Errorf("AppendText =\n%s\nwant\n%s", got, want)
	}
}

// A process that names itself (or its file) with spaces cannot forge the
// columns: such a field is quoted, so the line splits at the same places
// as one with plain names, and a quote in a name cannot open a field.
func TestAppendTextQuotesSpaces(t *testing.T) {
	when := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.Local)
	cases := []struct {
		e    *tracer.Event
		want string
	}{
		{&tracer.Event{Time: when, Backend: "ebpf", Type: vocab.TypeExec, PID: 42, Comm: "x 0 ppid=1", UID: 1000, PPID: 1,
			Filename: "/tmp/a b", Argv: []string{"a b"}},
			`03:04:05.006 ebpf    exec   42      "x 0 ppid=1"     1000       ppid=1 ret=0 "/tmp/a b" "a b"`},
		{&tracer.Event{Time: when, Backend: "ebpf", Type: vocab.TypeExec, PID: 42, Comm: `"q`, PPID: 1, Filename: `/tmp/"x`},
			`03:04:05.006 ebpf    exec   42      "\"q"            0          ppid=1 ret=0 "/tmp/\"x"`},
		{&tracer.Event{Time: when, Backend: "ebpf", Type: vocab.TypeFork, PID: 42, Comm: "", Syscall: "clone 3", ChildPID: 43},
			`03:04:05.006 ebpf    fork   42      ""               0          "clone 3" -> 43`},
		{&tracer.Event{Time: when, Backend: "ebpf", Type: vocab.TypeSignal, PID: 42, Comm: "a b", Syscall: "kill", TargetPID: 43, Signal: 15,
			TargetComm: "sl eep"},
			`03:04:05.006 ebpf    signal 42      "a b"            0          kill -> 43 SIGTERM ret=0 (to "sl eep")`},
		{&tracer.Event{Time: when, Backend: "ebpf", Type: vocab.TypeExit, PID: 43, Comm: "sleep", Signal: 15,
			KilledBy: tracer.KilledBy{Origin: vocab.OriginUser, PID: 1, Comm: "sys temd", Syscall: "kill"}},
			`03:04:05.006 ebpf    exit   43      sleep            0          killed by SIGTERM from "sys temd" (pid 1) via kill`},
	}
	for _, c := range cases {
		if got := string(AppendText(nil, c.e)); got != c.want {
			t.Errorf("AppendText =\n%s\nwant\n%s", got, c.want)
		}
	}
	// Whatever the comm, the fields before DETAILS are six and the comm
	// reads back.
	r := rand.New(rand.NewPCG(7, 8))
	for range 5000 {
		comm := randomString(r, r.IntN(16))
		if r.IntN(2) == 0 {
			comm = strings.Repeat(" ", r.IntN(3)) + comm + " \"x"
		}
		line := string(AppendText(nil, &tracer.Event{Time: when, Backend: "ebpf", Type: vocab.TypeExit, PID: 7, Comm: comm}))
		f := splitQuoted(line)
		if len(f) != 7 || f[6] != "code=0" {
			t.Fatalf("comm %q: line %q splits into %q", comm, line, f)
		}
		if back, err := unescape(strings.Trim(f[4], `"`)); f[4][0] == '"' {
			if back, err = strconv.Unquote(f[4]); err != nil || back != comm {
				t.Fatalf("comm %q printed as %s", comm, f[4])
			}
		} else if err != nil || back != comm {
			t.Fatalf("comm %q printed as %s", comm, f[4])
		}
	}
}

// splitQuoted splits a text line at spaces outside double quotes.
func splitQuoted(line string) []string {
	var f []string
	for line = strings.TrimLeft(line, " "); line != ""; line = strings.TrimLeft(line, " ") {
		end := strings.IndexByte(line, ' ')
		if line[0] == '"' {
			end = 1
			for end < len(line) && line[end] != '"' {
				if line[end] == '\\' {
					end++
				}
				end++
			}
			end++
		}
		if end < 0 || end > len(line) {
			end = len(line)
		}
		f, line = append(f, line[:end]), line[end:]
	}
	return f
}

// oldAppendText is AppendText as it was before escaping, with fmt: for
// plain strings the columns must not move.
func oldAppendText(b []byte, e *tracer.Event) []byte {
	b = e.Time.Local().AppendFormat(b, "15:04:05.000")
	b = fmt.Appendf(b, " %-7s %-6s %-7d %-16s %-10d ", e.Backend, e.Type, e.PID, e.Comm, e.UID)
	switch e.Type {
	case vocab.TypeExec:
		b = fmt.Appendf(b, "ppid=%d ret=%s %s", e.PPID, appendRet(nil, e.Ret), e.Filename)
		for _, a := range e.Argv {
			b = append(b, ' ')
			b = strconv.AppendQuote(b, a)
		}
	case vocab.TypeFork:
		b = fmt.Appendf(b, "%s -> %d", e.Syscall, e.ChildPID)
	case vocab.TypeSignal:
		b = appendSignalText(b, e)
	case vocab.TypeExit:
		b = appendExitText(b, e)
	}
	return b
}

func TestAppendTextPlainUnchanged(t *testing.T) {
	when := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.Local)
	events := []*tracer.Event{
		{Time: when, Backend: "ebpf", Type: vocab.TypeExec, PID: 4243, Comm: "bash", UID: 1000, PPID: 4242,
			Filename: "/usr/bin/grep", Argv: []string{"grep", "-v", "a b", "x\ty", "é"}, Ret: 0},
		{Time: when, Backend: "audit", Type: vocab.TypeExec, PID: 4294967295, Comm: "a-very-long-comm", UID: 4294967295,
			Filename: "/nonexistent", Ret: -2},
		{Time: when, Backend: "audit", Type: vocab.TypeFork, PID: 1, Comm: "systemd", Syscall: "clone3", ChildPID: 4300},
		{Time: when, Backend: "ebpf", Type: vocab.TypeSignal, PID: 4242, Comm: "kill", Syscall: "tgkill", TargetPID: -4242, Signal: 10, Ret: -3},
		{Time: when, Backend: "ebpf", Type: vocab.TypeSignal, PID: 7, Comm: "日本語", Syscall: "kill", TargetPID: 0, Signal: 99},
		{Time: when, Backend: "ebpf", Type: vocab.TypeExit, PID: 7, Comm: "sh", ExitCode: -1},
		{Time: when, Backend: "ebpf", Type: vocab.TypeNone, PID: 7, Comm: "sh"},
		{Time: when, Backend: "ebpf", Type: vocab.TypeSignal, PID: 1, Comm: "systemd", Syscall: "kill", TargetPID: 4300, Signal: 15,
			HasCode: true, Code: vocab.SIUser, Result: vocab.ResultDelivered, TargetComm: "sleep"},
		{Time: when, Backend: "ebpf", Type: vocab.TypeExit, PID: 4300, Comm: "sleep", Signal: 15,
			KilledBy: tracer.KilledBy{Origin: vocab.OriginUser, PID: 1, Comm: "systemd", Syscall: "kill"}},
	}
	for _, e := range events {
		if got, want := string(AppendText(nil, e)), string(oldAppendText(nil, e)); got != want {
			t.Errorf("AppendText =\n%q\nwas\n%q", got, want)
		}
	}
}

func TestSanitizeFrom(t *testing.T) {
	cases := []struct{ in, want string }{
		{`kill -> 1 SIGTERM (to "a\x1b")`, `kill -> 1 SIGTERM (to "a\x1b")`}, // already escaped: untouched
		{"to \xc2\x9bx\xff", `to \u009bx\xff`},
		{"a\nb\\", `a\nb\`},
		{"日本", "日本"},
	}
	for _, c := range cases {
		if got := string(sanitizeFrom([]byte("head "+c.in), 5)); got != "head "+c.want {
			t.Errorf("sanitizeFrom(%q) = %q, want %q", c.in, got, "head "+c.want)
		}
	}
}

func TestTextSinkOneLinePerEvent(t *testing.T) {
	var out bytes.Buffer
	s := NewTextSink(&out)
	events := hostileEvents()
	for _, e := range events {
		if err := s.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(events)+1 || lines[0]+"\n" != TextHeader {
		t.Fatalf("%d lines for %d events:\n%s", len(lines), len(events), out.String())
	}
	for _, l := range lines {
		if firstControl(l) >= 0 {
			t.Errorf("line %q holds a control byte or invalid UTF-8", l)
		}
	}
}

// jsonDecoded is what a JSON reader gets back for s: each byte that is
// not UTF-8 read as U+FFFD.
func jsonDecoded(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r)
	}
	return b.String()
}

// checkJSON fails t unless e's JSON line is valid, one line, free of raw
// controls, and holds its strings as a reader should get them.
func checkJSON(t *testing.T, e *tracer.Event) {
	t.Helper()
	line := AppendJSON(nil, e)
	if !json.Valid(line) {
		t.Fatalf("invalid JSON: %q", line)
	}
	if bytes.IndexByte(line, '\n') >= 0 || firstControl(string(line)) >= 0 {
		t.Fatalf("JSON line holds a raw control or invalid UTF-8: %q", line)
	}
	var got struct {
		Backend, Comm, Filename, Syscall, Cgroup, Unit string
		TargetComm                                     string                         `json:"target_comm"`
		ContainerID                                    string                         `json:"container_id"`
		KilledBy                                       struct{ Comm, Syscall string } `json:"killed_by"`
		Argv                                           []string
	}
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatal(err)
	}
	if got.Backend != jsonDecoded(e.Backend) || got.Comm != jsonDecoded(e.Comm) || got.Filename != jsonDecoded(e.Filename) ||
		got.Syscall != jsonDecoded(e.Syscall) || len(got.Argv) != len(e.Argv) ||
		got.Cgroup != jsonDecoded(e.Cgroup) || got.Unit != jsonDecoded(e.Unit) || got.ContainerID != jsonDecoded(e.ContainerID) ||
		got.TargetComm != jsonDecoded(e.TargetComm) ||
		got.KilledBy.Comm != jsonDecoded(e.KilledBy.Comm) || got.KilledBy.Syscall != jsonDecoded(e.KilledBy.Syscall) {
		t.Fatalf("JSON %q decodes to %q", line, fmt.Sprintf("%+v", got))
	}
	for i, a := range e.Argv {
		if got.Argv[i] != jsonDecoded(a) {
			t.Fatalf("argv[%d] %q decodes to %q", i, a, got.Argv[i])
		}
	}
	// The schemas' documents: strict JSON whatever the bytes.
	strictJSON(t, "ecs", AppendECS(nil, e))
	strictJSON(t, "ocsf", AppendOCSF(nil, e))
}

func TestJSONValidForAnyBytes(t *testing.T) {
	for _, e := range hostileEvents() {
		checkJSON(t, e)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 5000; i++ {
		str := func() string { return randomString(r, r.IntN(30)) }
		e := &tracer.Event{Type: vocab.AllTypes[r.IntN(len(vocab.AllTypes))], Backend: str(), Comm: str(), Filename: str(), Syscall: str(),
			Cgroup: str(), ContainerID: str(), Unit: str()}
		if e.Type != vocab.TypeExec {
			e.Filename = ""
		}
		if e.Type != vocab.TypeFork && e.Type != vocab.TypeSignal {
			e.Syscall = ""
		}
		if e.Type == vocab.TypeSignal {
			e.TargetComm = str()
		}
		if e.Type == vocab.TypeExit && r.IntN(2) == 0 {
			e.Signal = 9
			e.KilledBy = tracer.KilledBy{Origin: vocab.OriginUser, PID: 1, Comm: str(), Syscall: str()}
		}
		if e.Type == vocab.TypeExec {
			for j := r.IntN(4); j > 0; j-- {
				e.Argv = append(e.Argv, str())
			}
		}
		checkJSON(t, e)
	}
}

func FuzzAppendJSON(f *testing.F) {
	f.Add("x\nFAKE\x1b[31m\xff", "/tmp/a\x00\xc2\x9b", "\u2028\"\\")
	f.Add("bash", "/usr/bin/grep", "-v")
	f.Fuzz(func(t *testing.T, comm, filename, arg string) {
		checkJSON(t, &tracer.Event{Type: vocab.TypeExec, Backend: "audit", Comm: comm, Filename: filename, Argv: []string{arg, comm}})
		line := AppendText(nil, &tracer.Event{Type: vocab.TypeExec, Backend: "audit", Comm: comm, Filename: filename, Argv: []string{arg}})
		if bytes.IndexByte(line, '\n') >= 0 || firstControl(string(line)) >= 0 {
			t.Fatalf("text line %q", line)
		}
	})
}

func BenchmarkAppendText(b *testing.B) {
	e := &tracer.Event{Time: time.Now(), Backend: "ebpf", Type: vocab.TypeExec, PID: 4243, Comm: "bash", UID: 1000, PPID: 4242,
		Filename: "/usr/bin/grep", Argv: []string{"grep", "-v", "pattern", "/var/log/messages"}}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendText(buf[:0], e)
	}
}
