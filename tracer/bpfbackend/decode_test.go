// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfbackend

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/bpf"
	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// header builds an event_hdr as the BPF programs write it.
func header(b []byte, ktime uint64, pid, uid, auid uint32, typ vocab.Type, sc, flags uint8, comm string) {
	le := binary.LittleEndian
	le.PutUint64(b[offKtime:], ktime)
	le.PutUint32(b[offPID:], pid)
	le.PutUint32(b[offUID:], uid)
	le.PutUint32(b[offAUID:], auid)
	b[offType], b[offSyscall], b[offFlags] = uint8(typ), sc, flags
	copy(b[offComm:offComm+commLen], comm)
	le.PutUint64(b[offStart:], 123_456_789_000) // 12345 clock ticks
	le.PutUint32(b[offHdrPPID:], 1)
	le.PutUint64(b[offPStart:], 29_999_999) // 2 ticks, rounded down
	// gid, then a setuid program's euid 0 and suid 0, fsuid uid, the gids gid.
	for i, v := range []uint32{uid + 1, 0, 0, uid, uid + 1, uid + 1, uid + 1} {
		le.PutUint32(b[offGID+4*i:], v)
	}
	le.PutUint32(b[offSes:], 7)
	copy(b[offTTY:offTTY+ttyLen], "pts3")
}

// withCreds is e with the ids, session and terminal header writes.
func withCreds(e tracer.Event) tracer.Event {
	e.HasCreds, e.GID, e.EUID, e.SUID, e.FSUID = true, e.UID+1, 0, 0, e.UID
	e.EGID, e.SGID, e.FSGID, e.Session, e.TTY = e.UID+1, e.UID+1, e.UID+1, 7, "pts3"
	return e
}

func smallRecord(typ vocab.Type, sc uint8, a, sig int32, ret int64) []byte {
	b := make([]byte, eventSize)
	header(b, 5_000_000_000, 4242, 1000, 1001, typ, sc, 0, "sh")
	le := binary.LittleEndian
	le.PutUint32(b[offA:], uint32(a))
	le.PutUint32(b[offB:], uint32(sig))
	le.PutUint64(b[offRet:], uint64(ret))
	return b
}

func execRecord(filename string, argv []string, ret int64) []byte {
	data := filename + "\x00" + strings.Join(argv, "\x00")
	if len(argv) > 0 {
		data += "\x00"
	}
	b := make([]byte, offData+len(data)+5) // trailing bytes a perf sample may pad with
	header(b, 7_000_000_000, 4243, 0, vocab.UnsetID, vocab.TypeExec, 1, 0, "bash")
	le := binary.LittleEndian
	le.PutUint32(b[offPPID:], 4242)
	le.PutUint16(b[offFilenameSize:], uint16(len(filename)+1))
	le.PutUint16(b[offArgvSize:], uint16(len(data)-len(filename)-1))
	le.PutUint64(b[offExecRet:], uint64(ret))
	b[offArgc] = uint8(len(argv))
	copy(b[offData:], data)
	return b
}

func TestDecodeRecords(t *testing.T) {
	d := newDecoder()
	base := tracer.Event{Backend: "ebpf", PID: 4242, Comm: "sh", UID: 1000, AUID: 1001}
	cases := []struct {
		name string
		raw  []byte
		want tracer.Event
	}{
		{"fork", smallRecord(vocab.TypeFork, 6, 4300, 0, 0),
			tracer.Event{Type: vocab.TypeFork, Syscall: "clone3", ChildPID: 4300}},
		{"kill to a process group", smallRecord(vocab.TypeSignal, 7, -4242, 15, 0),
			tracer.Event{Type: vocab.TypeSignal, Syscall: "kill", TargetPID: -4242, Signal: 15,
				HasCode: true, Code: vocab.SIUser, Origin: vocab.OriginUser}},
		{"failed tgkill", smallRecord(vocab.TypeSignal, 9, 77, 10, -3),
			tracer.Event{Type: vocab.TypeSignal, Syscall: "tgkill", TargetPID: 77, Signal: 10, Ret: -3,
				HasCode: true, Code: vocab.SITkill, Origin: vocab.OriginUser}},
		{"pidfd_send_signal: the record does not say whether a siginfo was passed", smallRecord(vocab.TypeSignal, 12, 77, 10, 0),
			tracer.Event{Type: vocab.TypeSignal, Syscall: "pidfd_send_signal", TargetPID: 77, Signal: 10, Origin: vocab.OriginUser}},
		{"exit with a negative code", smallRecord(vocab.TypeExit, 14, -1, 0, 0),
			tracer.Event{Type: vocab.TypeExit, ExitCode: -1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got tracer.Event
			if err := d.decode(c.raw, &got); err != nil {
				t.Fatal(err)
			}
			want := c.want
			want.Backend, want.PID, want.Comm, want.UID, want.AUID = base.Backend, base.PID, base.Comm, base.UID, base.AUID
			want.ExecID, want.ParentExecID = tracer.ExecID{PID: 4242, Start: 12345}, tracer.ExecID{PID: 1, Start: 2}
			want = withCreds(want)
			want.Time, got.Time = time.Time{}, time.Time{}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestDecodeExec(t *testing.T) {
	d := newDecoder()
	var e tracer.Event
	e.Argv = []string{"stale", "entries", "from", "a", "previous", "event"}
	if err := d.decode(execRecord("/usr/bin/grep", []string{"grep", "-q", "", "x y"}, 0), &e); err != nil {
		t.Fatal(err)
	}
	want := tracer.Event{Backend: "ebpf", Type: vocab.TypeExec, PID: 4243, Comm: "bash", AUID: vocab.UnsetID,
		PPID: 4242, Filename: "/usr/bin/grep", Argv: []string{"grep", "-q", "", "x y"}, Cwd: "/", // no cwd names: the root
		ExecID: tracer.ExecID{PID: 4243, Start: 12345}, ParentExecID: tracer.ExecID{PID: 1, Start: 2}}
	want = withCreds(want)
	e.Time = time.Time{}
	if !reflect.DeepEqual(e, want) {
		t.Errorf("got  %+v\nwant %+v", e, want)
	}

	// A failed exec, and argv cut short by the kernel's cap (no final NUL).
	raw := execRecord("/nonexistent", []string{"a", "bcdef"}, -2)
	binary.LittleEndian.PutUint16(raw[offArgvSize:], 4) // "a\0bc"
	raw[offFlags] |= flagArgvTrunc
	if err := d.decode(raw, &e); err != nil {
		t.Fatal(err)
	}
	if !e.ArgvTruncated {
		t.Error("argv cut by the kernel side is not marked argv_truncated")
	}
	if e.Ret != -2 || e.Filename != "/nonexistent" || !reflect.DeepEqual(e.Argv, []string{"a", "bc"}) {
		t.Errorf("truncated failed exec: ret %d filename %q argv %q", e.Ret, e.Filename, e.Argv)
	}

	// More arguments than vocab.ArgvMax in the argument area: the first
	// ArgvMax are kept.
	long := make([]string, vocab.ArgvMax+5)
	for i := range long {
		long[i] = strconv.Itoa(i)
	}
	if err := d.decode(execRecord("/bin/echo", long, 0), &e); err != nil {
		t.Fatal(err)
	}
	if !e.ArgvTruncated || !reflect.DeepEqual(e.Argv, long[:vocab.ArgvMax]) {
		t.Errorf("%d arguments: kept %q, argv_truncated %v", len(long), e.Argv, e.ArgvTruncated)
	}
	if err := d.decode(execRecord("/bin/echo", long[:vocab.ArgvMax], 0), &e); err != nil || e.ArgvTruncated {
		t.Errorf("%d arguments: argv_truncated %v, %v", vocab.ArgvMax, e.ArgvTruncated, err)
	}

	// A long argument area, as the kernel side reads it: its first
	// vocab.ArgvBytesMax bytes, marked cut.
	for _, a := range tracertest.LongArgs(tracertest.ArgSizes...) {
		argv := []string{"/bin/sh", "-c", a, "TAIL_MARKER"}
		block := []byte(strings.Join(argv, "\x00") + "\x00")
		read := block[:min(len(block), vocab.ArgvBytesMax)]
		raw := append(execRecord("/bin/sh", nil, 0)[:offData+len("/bin/sh\x00")], read...)
		binary.LittleEndian.PutUint16(raw[offArgvSize:], uint16(len(read)))
		raw[offArgc] = uint8(len(argv))
		if len(read) < len(block) {
			raw[offFlags] |= flagArgvTrunc
		}
		want, cut := tracertest.CutArgv(argv)
		if err := d.decode(raw, &e); err != nil || !reflect.DeepEqual(e.Argv, want) || e.ArgvTruncated != cut {
			t.Errorf("argument of %d bytes: kept %d arguments, argv_truncated %v, %v; want %d, %v", len(a), len(e.Argv), e.ArgvTruncated, err, len(want), cut)
		}
	}
}

func TestDecodeTime(t *testing.T) {
	d := newDecoder()
	var e tracer.Event
	var mono, real = monoNow(), time.Now()
	raw := smallRecord(vocab.TypeExit, 14, 0, 0, 0)
	binary.LittleEndian.PutUint64(raw[offKtime:], mono)
	if err := d.decode(raw, &e); err != nil {
		t.Fatal(err)
	}
	if diff := e.Time.Sub(real); diff < -time.Millisecond || diff > time.Millisecond {
		t.Errorf("kernel time %d became %v, %v from the wall clock", mono, e.Time, diff)
	}
}

func monoNow() uint64 {
	var c clock
	c.sync()
	return uint64(time.Now().UnixNano() - c.offset)
}

func TestDecodeRejectsBadRecords(t *testing.T) {
	d := newDecoder()
	var e tracer.Event
	bad := map[string][]byte{
		"short header":     make([]byte, hdrSize-1),
		"short signal":     smallRecord(vocab.TypeSignal, 7, 1, 1, 0)[:eventSize-8],
		"exec beyond data": execRecord("/bin/true", []string{"true"}, 0)[:offData+4],
		"unknown type":     smallRecord(9, 0, 0, 0, 0),
	}
	for name, raw := range bad {
		if err := d.decode(raw, &e); err == nil {
			t.Errorf("%s: decoded without error: %+v", name, e)
		}
	}
	if err := d.decode(make([]byte, 3), &e); !errors.Is(err, errShortRecord) {
		t.Errorf("short record: %v", err)
	}
}

// Decoding reuses the Event and allocates nothing but argv strings.
func TestDecodeAllocations(t *testing.T) {
	d := newDecoder()
	var e tracer.Event
	sig := smallRecord(vocab.TypeSignal, 7, 1, 10, 0)
	if n := testing.AllocsPerRun(1000, func() { _ = d.decode(sig, &e) }); n != 0 {
		t.Errorf("signal record: %v allocations per decode, want 0", n)
	}
	ex := execRecord("/usr/bin/grep", []string{"grep", "-q", "x"}, 0)
	if n := testing.AllocsPerRun(1000, func() { _ = d.decode(ex, &e) }); n > 3 {
		t.Errorf("exec record with 3 arguments: %v allocations per decode, want at most 3", n)
	}
}

// The offsets decode.go uses are those of the types bpf2go generated from
// the C structs.
func TestLayoutMatchesGenerated(t *testing.T) {
	var h bpf.TracerEventHdr
	var ev bpf.TracerEvent
	var ex bpf.TracerExecEvent
	var th bpf.TracerThrottleEvent
	checks := []struct {
		name      string
		got, want uintptr
	}{
		{"ktime", unsafe.Offsetof(h.Ktime), offKtime},
		{"pid", unsafe.Offsetof(h.Pid), offPID},
		{"uid", unsafe.Offsetof(h.Uid), offUID},
		{"auid", unsafe.Offsetof(h.Auid), offAUID},
		{"type", unsafe.Offsetof(h.Type), offType},
		{"syscall", unsafe.Offsetof(h.Syscall), offSyscall},
		{"flags", unsafe.Offsetof(h.Flags), offFlags},
		{"comm", unsafe.Offsetof(h.Comm), offComm},
		{"start", unsafe.Offsetof(h.Start), offStart},
		{"pstart", unsafe.Offsetof(h.Pstart), offPStart},
		{"cgid", unsafe.Offsetof(h.Cgid), offCgid},
		{"header ppid", unsafe.Offsetof(h.Ppid), offHdrPPID},
		{"repeat", unsafe.Offsetof(h.Repeat), offRepeat},
		{"gid", unsafe.Offsetof(h.Gid), offGID},
		{"fsgid", unsafe.Offsetof(h.Fsgid), offGID + 24},
		{"ses", unsafe.Offsetof(h.Ses), offSes},
		{"tty", unsafe.Offsetof(h.Tty), offTTY},
		{"header size", unsafe.Sizeof(h), hdrSize},
		{"code", unsafe.Offsetof(ev.Code), offCode},
		{"xpid", unsafe.Offsetof(ev.Xpid), offXPID},
		{"xstart", unsafe.Offsetof(ev.Xstart), offXStart},
		{"xcomm", unsafe.Offsetof(ev.Xcomm), offXComm},
		{"status", unsafe.Offsetof(ev.Status), offStatus},
		{"result", unsafe.Offsetof(ev.Result), offResult},
		{"xflags", unsafe.Offsetof(ev.Xflags), offXFlags},
		{"xsyscall", unsafe.Offsetof(ev.Xsyscall), offXSyscall},
		{"a", unsafe.Offsetof(ev.A), offA},
		{"b", unsafe.Offsetof(ev.B), offB},
		{"ret", unsafe.Offsetof(ev.Ret), offRet},
		{"event size", unsafe.Sizeof(ev), eventSize},
		{"ppid", unsafe.Offsetof(ex.Ppid), offPPID},
		{"filename_size", unsafe.Offsetof(ex.FilenameSize), offFilenameSize},
		{"argv_size", unsafe.Offsetof(ex.ArgvSize), offArgvSize},
		{"exec ret", unsafe.Offsetof(ex.Ret), offExecRet},
		{"argc", unsafe.Offsetof(ex.Argc), offArgc},
		{"pflags", unsafe.Offsetof(ex.Pflags), offPFlags},
		{"cwd_size", unsafe.Offsetof(ex.CwdSize), offCwdSize},
		{"exe_size", unsafe.Offsetof(ex.ExeSize), offExeSize},
		{"data", unsafe.Offsetof(ex.Data), offData},
		{"wstart", unsafe.Offsetof(th.Wstart), offWStart},
		{"wend", unsafe.Offsetof(th.Wend), offWEnd},
		{"dropped", unsafe.Offsetof(th.Dropped), offDropped},
		{"throttle size", unsafe.Sizeof(th), eventSize},
		{"data size", unsafe.Sizeof(ex.Data), FilenameMax + 1 + vocab.ArgvMax*128 + 2*pathBytes}, // ARG_MAX: 128 bytes per argument, NUL included
		{"exec key size", unsafe.Sizeof(bpf.TracerExecKey{}), execKeySize},
		{"signal key size", unsafe.Sizeof(bpf.TracerSignalKey{}), signalKeySize},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: generated %d, decode.go %d", c.name, c.got, c.want)
		}
	}
	if len(syscallNames) != 15 {
		t.Errorf("%d syscall names, enum syscall_id has 15", len(syscallNames))
	}
}

func BenchmarkDecodeSignal(b *testing.B) {
	d := newDecoder()
	var e tracer.Event
	raw := smallRecord(vocab.TypeSignal, 7, 1, 10, 0)
	b.ReportAllocs()
	for b.Loop() {
		if err := d.decode(raw, &e); err != nil {
			b.Fatal(err)
		}
	}
}

// A batched record stands for 1 + its repeat count events, all the same,
// in their place in the batch; a count beyond the kernel's cap is a bad
// record.
func TestDeliverBatchRepeats(t *testing.T) {
	b := New()
	d := newDecoder()
	rec := func(sig int32, repeat uint32) []byte {
		r := smallRecord(vocab.TypeSignal, 7, 99, sig, 0)
		binary.LittleEndian.PutUint32(r[offRepeat:], repeat)
		return r
	}
	var raw []byte
	raw = append(raw, rec(1, 0)...)
	raw = append(raw, rec(2, 3)...)
	raw = append(raw, rec(3, maxRepeat+1)...)
	raw = append(raw, rec(4, 1)...)
	var got []int
	b.deliverBatch(d, raw, new(tracer.Event), func(e *tracer.Event) {
		got = append(got, e.Signal)
		e.Ancestors = append(e.Ancestors, tracer.Ancestor{PID: 1}) // what --ancestry does to an event
	})
	if want := []int{1, 2, 2, 2, 2, 4, 4}; !reflect.DeepEqual(got, want) {
		t.Errorf("delivered %v, want %v", got, want)
	}
	if st := b.Stats(); st.Events[vocab.TypeSignal] != 7 || b.badRecs.Load() != 1 {
		t.Errorf("%v events, %d bad records, want 7 signals and 1 bad record", st.Events, b.badRecs.Load())
	}
}

// A ring record holding a CPU's batch of signal records is split; an exec
// record (variable size) is not.
func TestDeliverBatch(t *testing.T) {
	b := New()
	d := newDecoder()
	var raw []byte
	for sig := int32(1); sig <= 3; sig++ {
		raw = append(raw, smallRecord(vocab.TypeSignal, 7, 99, sig, 0)...)
	}
	var got []int
	b.deliverBatch(d, raw, new(tracer.Event), func(e *tracer.Event) { got = append(got, e.Signal) })
	b.deliverBatch(d, execRecord("/bin/true", []string{"true"}, 0), new(tracer.Event), func(e *tracer.Event) { got = append(got, -int(e.Type)) })
	if want := []int{1, 2, 3, -int(vocab.TypeExec)}; !reflect.DeepEqual(got, want) {
		t.Errorf("delivered %v, want %v", got, want)
	}
	if st := b.Stats(); st.Events[vocab.TypeSignal] != 3 || st.Events[vocab.TypeExec] != 1 || st.TotalLost() != 0 {
		t.Errorf("stats %+v", st)
	}
}

// The kernel side keeps as many arguments and bytes as the audit backend:
// vocab.ArgvMax is ARGC_MAX in bpf/headers/types.h, vocab.ArgvBytesMax its
// ARGV_BYTES (ARGC_MAX * ARG_MAX).
func TestArgvMaxIsTheCSide(t *testing.T) {
	src, err := os.ReadFile("../../bpf/headers/types.h")
	if err != nil {
		t.Fatal(err)
	}
	define := func(name string) int {
		m := regexp.MustCompile(`(?m)^#define ` + name + ` (\d+)`).FindSubmatch(src)
		if m == nil {
			t.Fatalf("no #define %s in bpf/headers/types.h", name)
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	if n := define("ARGC_MAX"); n != vocab.ArgvMax {
		t.Errorf("ARGC_MAX is %d, vocab.ArgvMax %d: change both (and run make generate)", n, vocab.ArgvMax)
	}
	if !regexp.MustCompile(`(?m)^#define ARGV_BYTES \(ARGC_MAX \* ARG_MAX\)$`).Match(src) {
		t.Error("ARGV_BYTES is no longer ARGC_MAX * ARG_MAX")
	}
	if n := vocab.ArgvMax * define("ARG_MAX"); n != vocab.ArgvBytesMax {
		t.Errorf("ARGV_BYTES is %d, vocab.ArgvBytesMax %d: change both (and run make generate)", n, vocab.ArgvBytesMax)
	}
}

// A program the verifier rejects (EACCES with a log) is reported as the
// verifier's verdict with its reason, not as missing privileges.
func TestLoadErrorVerifier(t *testing.T) {
	ve := fmt.Errorf("program sched_signal: load program: %w", &ebpf.VerifierError{
		Cause: unix.EACCES, Log: []string{"190: (61) r5 = *(u32 *)(r9 +8)", "R9 invalid mem access 'scalar'"}})
	msg := loadError(ve, ProbesDefault).Error()
	if strings.Contains(msg, "run as root") || !strings.Contains(msg, "verifier") || !strings.Contains(msg, "invalid mem access") {
		t.Errorf("verifier rejection reads %q", msg)
	}
	if msg := loadError(fmt.Errorf("load program: %w", unix.EPERM), ProbesDefault).Error(); !strings.Contains(msg, "root") {
		t.Errorf("EPERM reads %q", msg)
	}
}

// A throttle record (struct throttle_event) decodes to a throttle event:
// the first process left out, the window, the counts by type; a process
// source has no cgroup id.
func TestDecodeThrottle(t *testing.T) {
	le := binary.LittleEndian
	rec := func(flags uint8) []byte {
		b := make([]byte, eventSize)
		header(b, 6_000_000_000, 4242, 0, vocab.UnsetID, vocab.TypeThrottle, 0, flags, "storm")
		le.PutUint64(b[offCgid:], 8214)
		le.PutUint64(b[offWStart:], 5_000_000_000)
		le.PutUint64(b[offWEnd:], 6_000_000_000)
		for i, n := range []uint64{1, 2, 99_000, 4} {
			le.PutUint64(b[offDropped+8*i:], n)
		}
		return b
	}
	d := newDecoder()
	d.limit = 1000
	var e tracer.Event
	if err := d.decode(rec(0), &e); err != nil {
		t.Fatal(err)
	}
	th := e.Throttle
	if e.Type != vocab.TypeThrottle || e.PID != 4242 || e.Comm != "storm" || th.Source != tracer.SourceCgroup || th.CgroupID != 8214 ||
		th.Limit != 1000 || th.Exec != 1 || th.Fork != 2 || th.Signal != 99_000 || th.Exit != 4 ||
		th.End.Sub(th.Start) != time.Second || !e.Time.Equal(th.End) || e.Syscall != "" {
		t.Errorf("throttle event %+v", e)
	}
	if err := d.decode(rec(flagThrottleProcess), &e); err != nil {
		t.Fatal(err)
	}
	if e.Throttle.Source != tracer.SourceProcess || e.Throttle.CgroupID != 0 {
		t.Errorf("a process source: %+v", e.Throttle)
	}
	if err := d.decode(rec(0)[:hdrSize+8], &e); !errors.Is(err, errShortRecord) {
		t.Errorf("a short throttle record: %v", err)
	}
}
