// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// appendStringByByte is appendString as it was before its fast path: one
// byte or rune at a time. The fast path must write exactly what it wrote.
func appendStringByByte(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, '\\', 'u', 'd', 'c', hexDigits[c>>4], hexDigits[c&0xf])
		case r <= 0x9f || r == 0x2028 || r == 0x2029 || r == 0x061c || r >= 0x200b && r <= 0x200f ||
			r >= 0x202a && r <= 0x202e || r == 0x2060 || r >= 0x2066 && r <= 0x2069 || r == 0xfeff:
			b = append(b, '\\', 'u')
			b = appendHex(b, uint32(r), 4)
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

var stringCases = []string{
	"", "storm", "/user.slice/user-0.slice/session-3.scope", `a"b\c`, "x\ny\tz\r", "\x00\x01\x1f\x7f",
	"caf\u00e9", "\u00e9t\u00e9", "\xff", "a\xffb", "\xc2\x9b", "\xc2\x80\xc2\x9f\xc2\xa0", "\u2028\u2029",
	"\xe2\x80", "\xf0\x9f\x98\x80 smile", "\xed\xa0\x80", "tail\\", "\"", strings.Repeat("ab\x1b", 40),
	"\u202egnp.exe", "a\u061cb\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u2060\u2066\u2067\u2068\u2069\ufeff", "\u200a\u2030\u206a\ufffd",
}

func TestAppendStringMatchesByteAtATime(t *testing.T) {
	for _, s := range stringCases {
		got, want := appendString([]byte("x"), s), appendStringByByte([]byte("x"), s)
		if !bytes.Equal(got, want) {
			t.Errorf("appendString(%q) = %q, want %q", s, got, want)
		}
	}
	// Every byte at every place of the words plainLen reads at once.
	for c := range 256 {
		for pos := range 17 {
			w := []byte(strings.Repeat("a~ ", 6))[:17]
			w[pos] = byte(c)
			if got, want := appendString(nil, string(w)), appendStringByByte(nil, string(w)); !bytes.Equal(got, want) {
				t.Fatalf("appendString(%q) = %q, want %q", w, got, want)
			}
		}
	}
	// Every single byte and every pair, around plain runs.
	for c := range 256 {
		for _, s := range []string{string(rune(c)), string([]byte{byte(c)}), "ab" + string([]byte{byte(c)}) + "cd",
			string([]byte{0xc2, byte(c)}), string([]byte{0xe2, 0x80, byte(c)})} {
			if got, want := appendString(nil, s), appendStringByByte(nil, s); !bytes.Equal(got, want) {
				t.Fatalf("appendString(%q) = %q, want %q", s, got, want)
			}
		}
	}
}

func FuzzAppendStringMatchesByteAtATime(f *testing.F) {
	for _, s := range stringCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := appendString(nil, s), appendStringByByte(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("appendString(%q) = %q, want %q", s, got, want)
		}
	})
}

// sameButTime must name every field of Event but Time: one it missed
// would make JSONSink write the last event's line for a different event.
func TestSameButTimeSeesEveryField(t *testing.T) {
	base := tracer.Event{Time: time.Unix(1, 0), Backend: "ebpf", Type: vocab.TypeSignal, Comm: "storm",
		Argv: []string{"a"}, Ancestors: []tracer.Ancestor{{PID: 1, Comm: "init"}}}
	twin := base
	twin.Time = time.Unix(2, 0)
	twin.Argv = append([]string(nil), base.Argv...)
	twin.Ancestors = append([]tracer.Ancestor(nil), base.Ancestors...)
	if !sameButTime(&base, &twin) {
		t.Fatal("events that differ in time alone are not the same")
	}
	changed := eachFieldChange(t, &twin, true, func(path string) {
		if sameButTime(&base, &twin) || sameButTime(&twin, &base) {
			t.Errorf("%s differs, but sameButTime says the events are the same", path)
		}
	})
	if changed < 40 {
		t.Errorf("only %d fields changed: the walk missed some", changed)
	}
}

// eachFieldChange changes each field of *e but Time in turn, calls f, and
// puts the field back; a slice is made longer, then its first element's
// fields change. Without enums, the uint8 fields (Type, Origin, Result:
// one more is no value) are left as they are. It returns how many fields
// it changed.
func eachFieldChange(t *testing.T, e *tracer.Event, enums bool, f func(path string)) int {
	t.Helper()
	var changed int
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			if v.Type() == reflect.TypeFor[time.Time]() {
				return
			}
			for i := range v.NumField() {
				walk(path+"."+v.Type().Field(i).Name, v.Field(i))
			}
			return
		case reflect.Slice:
			// Another element, and another value of the first one.
			old := v.Interface()
			v.Set(reflect.Append(v, reflect.New(v.Type().Elem()).Elem()))
			f(path + " (longer)")
			v.Set(reflect.ValueOf(old))
			if v.Len() > 0 {
				walk(path+"[0]", v.Index(0))
			}
			return
		}
		old := reflect.New(v.Type()).Elem()
		old.Set(v)
		switch v.Kind() {
		case reflect.String:
			v.SetString(v.String() + "x")
		case reflect.Bool:
			v.SetBool(!v.Bool())
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			v.SetInt(v.Int() + 1)
		case reflect.Uint8:
			if !enums {
				return
			}
			v.SetUint(v.Uint() + 1)
		case reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			v.SetUint(v.Uint() + 1)
		default:
			t.Fatalf("%s: a field of kind %s: teach this test and sameButTime about it", path, v.Kind())
		}
		f(path)
		changed++
		v.Set(old)
	}
	walk("Event", reflect.ValueOf(e).Elem())
	return changed
}

// changedSegs must compare every field a segment prints: one it missed
// would make JSONSink keep the last line's bytes for a field that changed. For
// events of each type, in shapes that print each optional field, every
// field change that changes a segment's bytes must make sameSeg false.
func TestJSONSegsSeeTheirFields(t *testing.T) {
	id := tracer.ExecID{PID: 4242, Start: 100}
	who := tracer.Event{Time: time.Unix(1, 0), Backend: "ebpf", PID: 4242, Comm: "storm", UID: 1, AUID: 2,
		ExecID: id, ParentExecID: id, Cgroup: "/a", ContainerID: "c", Unit: "u.service",
		Ancestors: []tracer.Ancestor{{PID: 1, Comm: "init", ExecID: id}}}
	var bases []tracer.Event
	for _, typ := range []vocab.Type{vocab.TypeNone, vocab.TypeExec, vocab.TypeFork, vocab.TypeSignal, vocab.TypeExit, vocab.TypeThrottle, vocab.NumTypes} {
		e := who
		e.Type = typ
		bases = append(bases, e)
	}
	exec := who
	exec.Type, exec.PPID, exec.Filename, exec.Argv, exec.ArgvTruncated, exec.Ret = vocab.TypeExec, 1, "/bin/sh", []string{"sh"}, true, -2
	fork := who
	fork.Type, fork.ChildPID, fork.Syscall = vocab.TypeFork, 4243, "clone"
	sig := who
	sig.Type, sig.TargetPID, sig.Signal, sig.Syscall, sig.Ret, sig.HasCode, sig.Code = vocab.TypeSignal, 4243, 11, "kill", -3, true, 1
	sig.Origin, sig.Result, sig.TargetComm, sig.TargetExecID = vocab.OriginUser, vocab.ResultIgnored, "t", id
	exit := who
	exit.Type, exit.ExitCode = vocab.TypeExit, 3
	killed := who
	killed.Type, killed.Signal, killed.CoreDumped, killed.OOMKill = vocab.TypeExit, 9, true, true
	killed.KilledBy = tracer.KilledBy{Origin: vocab.OriginUser, PID: 1, Comm: "init", ExecID: id, Code: -6, Syscall: "tgkill"}
	throttle := who
	throttle.Type = vocab.TypeThrottle
	throttle.Throttle = tracer.Throttle{Source: tracer.SourceCgroup, CgroupID: 9, Start: time.Unix(1, 0), End: time.Unix(2, 0), Limit: 5, Exec: 1, Fork: 2, Signal: 3, Exit: 4}
	bases = append(bases, exec, fork, sig, exit, killed, throttle)

	for _, base := range bases {
		twin := base
		twin.Argv = slices.Clone(base.Argv)
		twin.Ancestors = slices.Clone(base.Ancestors)
		segs := jsonSegs(base.Type)
		if d := changedSegs(&base, &twin); d != 0 {
			t.Fatalf("%s: segments %b of twins differ", base.Type, d)
		}
		eachFieldChange(t, &twin, true, func(path string) {
			if twin.Type != base.Type {
				return // JSONSink reuses segments of events of one type alone
			}
			for _, sg := range segs {
				if !bytes.Equal(appendSeg(nil, &base, sg), appendSeg(nil, &twin, sg)) &&
					(changedSegs(&base, &twin)&(1<<sg) == 0 || changedSegs(&twin, &base)&(1<<sg) == 0) {
					t.Errorf("%s event: %s changes segment %d, but changedSegs does not say so", base.Type, path, sg)
				}
			}
		})
	}
}

// A JSONSink writes what AppendJSON gives, whatever event follows which:
// every field of an event of each type changed in turn, then changed back,
// so that its segments keep or change their lengths, go empty or come back.
func TestJSONSinkUpdatesAsAppendJSON(t *testing.T) {
	var out, want bytes.Buffer
	s := NewJSONSink(&out)
	write := func(e *tracer.Event) {
		want.Write(AppendJSON(nil, e))
		want.WriteByte('\n')
		if err := s.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	id := tracer.ExecID{PID: 4242, Start: 100}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	for _, typ := range []vocab.Type{vocab.TypeExec, vocab.TypeFork, vocab.TypeSignal, vocab.TypeExit, vocab.TypeThrottle} {
		e := tracer.Event{Time: t0, Backend: "ebpf", Type: typ, PID: 4242, Comm: "storm", AUID: vocab.UnsetID, ExecID: id,
			ParentExecID: id, Cgroup: "/a", Argv: []string{"a"}, Ancestors: []tracer.Ancestor{{PID: 1, Comm: "init", ExecID: id}},
			TargetPID: 4242, Signal: 9, Syscall: "kill", HasCode: true, Origin: vocab.OriginUser, TargetComm: "t", TargetExecID: id,
			KilledBy: tracer.KilledBy{Origin: vocab.OriginUser, PID: 1, Comm: "init"},
			Throttle: tracer.Throttle{Source: tracer.SourceCgroup, CgroupID: 5, Start: t0, End: t0.Add(time.Second), Limit: 1000, Signal: 7}}
		write(&e)
		n := 0
		eachFieldChange(t, &e, true, func(string) {
			n++
			if n%3 == 0 {
				e.Time = e.Time.Add(time.Duration(n) * time.Millisecond)
			}
			write(&e)
		})
		write(&e)
		e.PID, e.ExecID.PID, e.TargetPID = 99999, 99999, 7 // lengths change at once
		write(&e)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if out.String() != want.String() {
		t.Errorf("lines:\n%s\nwant\n%s", out.String(), want.String())
	}
}

// A JSONSink writes for each event what AppendJSON gives it, whatever
// came before: repeated events, new times, times of another length.
func TestJSONSinkLinesAreAppendJSON(t *testing.T) {
	var out bytes.Buffer
	s := NewJSONSink(&out)
	sig := tracer.Event{Backend: "ebpf", Type: vocab.TypeSignal, PID: 4242, Comm: "storm", AUID: vocab.UnsetID, TargetPID: 4242, Signal: 10,
		Syscall: "kill", HasCode: true, Origin: vocab.OriginUser, Result: vocab.ResultIgnored, TargetComm: "storm",
		ExecID: tracer.ExecID{PID: 4242, Start: 100}, TargetExecID: tracer.ExecID{PID: 4242, Start: 100}, Cgroup: "/"}
	exec := tracer.Event{Backend: "ebpf", Type: vocab.TypeExec, PID: 4243, Comm: "sh", Filename: "/bin/true", Argv: []string{"true", "x"}}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	times := []time.Time{t0, t0, t0.Add(time.Millisecond), t0.Add(time.Second), t0.Truncate(time.Millisecond),
		t0.Truncate(time.Second), t0.Add(7 * time.Nanosecond), t0.Add(7 * time.Nanosecond)}
	var want bytes.Buffer
	argv := exec.Argv
	for i, tm := range times {
		for _, e := range []*tracer.Event{&sig, &sig, &exec, &exec, &sig} {
			e.Time = tm
			if i%3 == 1 && e == &exec {
				argv[1] = "y" // the backend reuses its argv: the copy must not follow
			}
			want.Write(AppendJSON(nil, e))
			want.WriteByte('\n')
			if err := s.Write(e); err != nil {
				t.Fatal(err)
			}
		}
		sig.Ret = int64(i % 2) // and now and then another event
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if out.String() != want.String() {
		t.Errorf("lines:\n%s\nwant\n%s", out.String(), want.String())
	}
}

// A JSONSink that patches pids and exec ids in place writes what
// AppendJSON gives: pids and starts that keep their number of digits or
// not, go to 0 or come from it, exec ids unknown, negative targets, and
// starts of more than 8 digits, in every order.
func TestJSONSinkPatchesPIDsAsAppendJSON(t *testing.T) {
	var out, want bytes.Buffer
	s := NewJSONSink(&out)
	pids := []uint32{4242, 4243, 4299, 9, 0, 1, 10, 99, 100, 65535, 4194304, 4194303, 4242}
	starts := []uint64{12345, 12346, 99999, 100000, 0, 7, 123456789, 987654321, 1 << 40}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	n := 0
	for _, typ := range []vocab.Type{vocab.TypeSignal, vocab.TypeFork, vocab.TypeExit, vocab.TypeExec} {
		for i := range 3 * len(pids) * len(starts) {
			p := pids[i%len(pids)]
			q := pids[(i/3)%len(pids)]
			st := starts[(i/len(pids))%len(starts)]
			e := tracer.Event{Time: t0, Backend: "ebpf", Type: typ, PID: p, Comm: "storm", AUID: vocab.UnsetID,
				ExecID: tracer.ExecID{PID: p, Start: st}, ParentExecID: tracer.ExecID{PID: q, Start: 2},
				TargetPID: int32(q), Signal: 10, Syscall: "kill", TargetComm: "t",
				TargetExecID: tracer.ExecID{PID: q, Start: starts[i%len(starts)]}}
			if i%7 == 3 {
				e.TargetPID = -int32(q)
			}
			if i%11 == 5 {
				e.Time = e.Time.Add(time.Duration(i) * time.Microsecond)
			}
			want.Write(AppendJSON(nil, &e))
			want.WriteByte('\n')
			if err := s.Write(&e); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got, wantLines := strings.Split(out.String(), "\n"), strings.Split(want.String(), "\n")
	if len(got) != n+1 {
		t.Fatalf("%d lines, want %d", len(got)-1, n)
	}
	for i := range got {
		if got[i] != wantLines[i] {
			t.Fatalf("line %d:\n%s\nwant\n%s", i, got[i], wantLines[i])
		}
	}
}
