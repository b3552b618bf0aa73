// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// decodeEvents are events of every type with every field the JSON sink
// writes, and strings that need escapes.
func decodeEvents() map[string]tracer.Event {
	evs := attributionEvents()
	anc := []tracer.Ancestor{{PID: 1, Comm: "systemd", ExecID: tracer.ExecID{PID: 1, Start: 2}}, {PID: 900, Comm: "sshd", ExecID: tracer.ExecID{PID: 900, Start: 50}}}
	evs["exec"] = tracer.Event{Time: time.Date(2026, 3, 1, 10, 41, 7, 1, time.UTC), Backend: "ebpf", Type: vocab.TypeExec, PID: 4400, Comm: "ba\"sh\x01",
		UID: 1000, AUID: 1000, PPID: 4399, Filename: "/usr/bin/gr ep", Argv: []string{"grep", "-e", "a\nb", "\u00e9\u2028"}, Ret: -2,
		ExecID: tracer.ExecID{PID: 4400, Start: 123}, ParentExecID: tracer.ExecID{PID: 4399, Start: 100}, Ancestors: anc,
		Cgroup: "/user.slice/x.scope", Unit: "x.scope",
		HasCreds: true, GID: 1000, EUID: 0, SUID: 0, FSUID: 0, EGID: 1000, SGID: 1000, FSGID: 7,
		Session: 4, TTY: "pts\"1", Exe: "/usr/bin/s u", Cwd: "/home/\xff", Key: "k\x01k"}
	evs["exec, same ids"] = tracer.Event{Time: time.Date(2026, 3, 1, 10, 41, 7, 1, time.UTC), Backend: "audit", Type: vocab.TypeExec, PID: 4400,
		Comm: "bash", UID: 1000, AUID: 1000, HasCreds: true, GID: 1000, EUID: 1000, SUID: 1000, FSUID: 1000, EGID: 1000, SGID: 1000,
		FSGID: 1000, Session: vocab.UnsetID, Filename: "/bin/true", Argv: []string{"true"}}
	evs["fork"] = tracer.Event{Time: time.Date(2026, 3, 1, 10, 41, 7, 999999999, time.UTC), Backend: "audit", Type: vocab.TypeFork, PID: 4400,
		Comm: "bash", AUID: vocab.UnsetID, ChildPID: 4401, Syscall: "clone3"}
	evs["segv-code"] = tracer.Event{Time: attributionTime, Backend: "ebpf", Type: vocab.TypeSignal, PID: 1, Comm: "a", AUID: vocab.UnsetID, TargetPID: -1,
		Signal: 11, HasCode: true, Code: 77, Origin: vocab.OriginKernel, Result: vocab.ResultOverflow}
	return evs
}

// UnmarshalJSON reads back what AppendJSON writes: the same event.
func TestEventJSONRoundTrip(t *testing.T) {
	for name, e := range decodeEvents() {
		line := AppendJSON(nil, &e)
		var got tracer.Event
		if err := json.Unmarshal(line, &got); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, line)
		}
		if again := AppendJSON(nil, &got); !bytes.Equal(again, line) {
			t.Errorf("%s: read back and written again\n got %s\nwant %s", name, again, line)
		}
		if !got.Time.Equal(e.Time) {
			t.Errorf("%s: time %v, want %v", name, got.Time, e.Time)
		}
		got.Time = e.Time
		if !reflect.DeepEqual(got, e) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got, e)
		}
	}
	// Invalid UTF-8 is written as \udcXX, and read as the same bytes.
	e := tracer.Event{Time: attributionTime, Type: vocab.TypeFork, Comm: "a\xffb\ufffd"}
	var got tracer.Event
	if err := json.Unmarshal(AppendJSON(nil, &e), &got); err != nil || got.Comm != e.Comm {
		t.Errorf("invalid UTF-8 read back as %q, %v", got.Comm, err)
	}
	for _, bad := range []string{`{"time":"x","type":"exec"}`, `{"time":"2026-03-01T10:41:07Z","type":"open"}`,
		`{"time":"2026-03-01T10:41:07Z","type":"exec","exec_id":"nope"}`, `[1]`} {
		var e tracer.Event
		if err := json.Unmarshal([]byte(bad), &e); err == nil {
			t.Errorf("%s read without error: %+v", bad, e)
		}
	}
}

// Every field AppendJSON writes is read back: each field of each event,
// changed, still reads back to a line equal to the one written.
func TestEventJSONReadsEveryField(t *testing.T) {
	for name, base := range decodeEvents() {
		e := base
		e.Argv = append([]string(nil), base.Argv...)
		e.Ancestors = append([]tracer.Ancestor(nil), base.Ancestors...)
		// Type, Origin and Result stay: decodeEvents holds each of their values.
		eachFieldChange(t, &e, false, func(path string) {
			line := AppendJSON(nil, &e)
			var got tracer.Event
			if err := json.Unmarshal(line, &got); err != nil {
				t.Errorf("%s %s: %v", name, path, err)
				return
			}
			if again := AppendJSON(nil, &got); !bytes.Equal(again, line) {
				t.Errorf("%s, %s changed: read back\n got %s\nwant %s", name, path, again, line)
			}
		})
	}
}

// Two different byte strings never print the same JSON, and every string
// reads back byte for byte: invalid UTF-8 (\udcXX) is not taken for
// U+FFFD or for a rune U+00XX, and the invisible runes are escaped.
func TestJSONStringsLossless(t *testing.T) {
	cases := map[string]string{
		"\xff":           `"\udcff"`,
		"\ufffd":         "\"\ufffd\"",
		"\u00ff":         "\"\u00ff\"",
		`\udcff`:         `"\\udcff"`,
		"\xed\xb3\xbf":   `"\udced\udcb3\udcbf"`, // U+DCFF in "UTF-8": not UTF-8
		"\u202egnp.exe":  `"\u202egnp.exe"`,
		"a\u200bb\ufeff": `"a\u200bb\ufeff"`,
		"\u061c\u200e\u200f\u202a\u202d\u2060\u2066\u2069": `"\u061c\u200e\u200f\u202a\u202d\u2060\u2066\u2069"`,
	}
	for in, want := range cases {
		if got := string(appendString(nil, in)); got != want {
			t.Errorf("appendString(%q) = %s, want %s", in, got, want)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	seen := map[string]string{}
	check := func(s string) {
		enc := string(appendString(nil, s))
		if prev, ok := seen[enc]; ok && prev != s {
			t.Fatalf("%q and %q both encode as %s", prev, s, enc)
		}
		seen[enc] = s
		e := tracer.Event{Time: attributionTime, Type: vocab.TypeExec, Backend: s, Comm: s, Filename: s, Argv: []string{s, "x" + s},
			Cgroup: s, ContainerID: s, Unit: s, Ancestors: []tracer.Ancestor{{PID: 1, Comm: s, ExecID: tracer.ExecID{PID: 1, Start: 1}}}}
		var got tracer.Event
		if err := json.Unmarshal(AppendJSON(nil, &e), &got); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		got.Time = e.Time
		if !reflect.DeepEqual(got, e) {
			t.Fatalf("%q read back as %+v", s, got)
		}
		for _, k := range []tracer.Event{
			{Time: attributionTime, Type: vocab.TypeSignal, Syscall: s, TargetComm: s, Signal: 9},
			{Time: attributionTime, Type: vocab.TypeExit, Signal: 9, CoreUnknown: true, KilledBy: tracer.KilledBy{PID: 2, Comm: s, Syscall: s, Origin: vocab.OriginUser}},
		} {
			var got tracer.Event
			if err := json.Unmarshal(AppendJSON(nil, &k), &got); err != nil || got.Syscall != k.Syscall ||
				got.TargetComm != k.TargetComm || got.KilledBy.Comm != k.KilledBy.Comm || got.KilledBy.Syscall != k.KilledBy.Syscall {
				t.Fatalf("%q read back as %+v, %v", s, got, err)
			}
		}
	}
	for in := range cases {
		check(in)
	}
	for range 20000 {
		check(randomString(r, r.IntN(12)))
	}
	// Short strings of any bytes, where collisions would show first.
	for range 20000 {
		b := make([]byte, r.IntN(5))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		check(string(b))
	}
}
