// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfbackend

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Record layouts written by the BPF programs (bpf/headers/types.h:
// struct event_hdr, struct event, struct exec_event).
// TestLayoutMatchesGenerated checks these offsets against the types bpf2go generated from the C source.
const (
	offKtime   = 0
	offPID     = 8
	offUID     = 12
	offAUID    = 16
	offType    = 20
	offSyscall = 21
	offFlags   = 22
	offComm    = 24
	offStart   = 40 // the process's start_boottime, ns
	offPStart  = 48 // its real parent's
	offCgid    = 56 // its cgroup v2 id
	offHdrPPID = 64
	offRepeat  = 68 // batched signal records: 1 + repeat events (struct batch)
	offGID     = 72 // gid, euid, suid, fsuid, egid, sgid, fsgid: 7 x u32
	offSes     = 100
	offTTY     = 104
	ttyLen     = 16
	hdrSize    = 120
	commLen    = 16

	// struct event: fork, signal, exit.
	offA        = 120 // child pid, target pid or exit code
	offB        = 124 // signal; exit: the killing signal
	offRet      = 128
	offCode     = 136 // si_code
	offXPID     = 140 // signal: the target's tgid; exit: the killer's
	offXStart   = 144
	offXComm    = 152
	offStatus   = 168 // exit: the wait status
	offResult   = 172
	offXFlags   = 173
	offXSyscall = 174
	eventSize   = 176

	// struct throttle_event: as long as struct event.
	offWStart  = 120 // the window, ktime ns
	offWEnd    = 128
	offDropped = 136 // events left out: exec, fork, signal, exit (4 x u64)

	// struct exec_event.
	offPPID         = 120
	offFilenameSize = 124
	offArgvSize     = 126
	offExecRet      = 128
	offArgc         = 136
	offPFlags       = 137 // EXF_*
	offCwdSize      = 138
	offExeSize      = 140
	offData         = 144
)

// Flags in exec_event.pflags: a path's walk in the kernel stopped before
// the root (more than PATH_DEPTH names or PATH_BYTES bytes, in path.h).
const (
	exfCwdTrunc = 1
	exfExeTrunc = 2
)

// pathBytes is the most bytes of names the kernel side keeps of the cwd
// and of the new program's path each (PATH_BYTES), in at most 32 names
// (PATH_DEPTH).
const pathBytes = 4096

// Flags in event.xflags.
const (
	xfCode   = 1  // code is set
	xfResult = 2  // result is set
	xfKernel = 4  // signal: sent by the kernel; exit: the killer was the kernel
	xfKilled = 8  // exit: killed by a signal, status set
	xfKiller = 16 // exit: the killing signal was seen
	xfOOM    = 32 // exit: the OOM killer chose the process
	xfTarget = 64 // signal: xpid, xstart, xcomm are the target's
)

// maxRepeat bounds a record's repeat count (REPEAT_MAX in bpf/headers/batch.h):
// a record saying more is not the kernel's.
const maxRepeat = 0xffff

// FilenameMax is the most bytes of an exec's filename the kernel side
// keeps (FILENAME_MAX in bpf/headers/types.h, less its NUL). Of argv it keeps
// vocab.ArgvMax arguments (ARGC_MAX) and vocab.ArgvBytesMax bytes
// (ARGV_BYTES) after a successful exec; after a failed one, 127 bytes of
// each argument.
const FilenameMax = 255

// flagArgvTrunc in event_hdr.flags (EVF_ARGV_TRUNC): the argument area
// was longer than vocab.ArgvBytesMax, argv had more than vocab.ArgvMax
// arguments, or one could not be read whole.
const flagArgvTrunc = 2

// flagThrottleProcess in a throttle record's flags (EVF_THR_PROCESS): the
// source is the process, in the root cgroup, not its cgroup.
const flagThrottleProcess = 4

// syscallNames names enum syscall_id.
var syscallNames = [...]string{
	"", "execve", "execveat", "fork", "vfork", "clone", "clone3",
	"kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_send_signal",
	"exit", "exit_group",
}

var errShortRecord = errors.New("short record")

// decoder turns raw records into events. It interns comm and filename
// strings (they repeat: sh, /usr/bin/grep), so that decoding allocates
// nothing per event beyond the argv strings.
type decoder struct {
	clock   clock
	strings map[string]string
	cgroups *cgroupNames // nil: cgroups are not named
	limit   uint32       // --rate-limit, for throttle events
	// The last string interned and the last cgroup named: a storm's
	// records repeat them, and a map lookup costs more than the rest of
	// the record's decoding.
	lastString string
	lastCgid   uint64
	lastCg     tracer.CgroupInfo
	lastCgOK   bool
	// The last fork, signal or exit record decoded and its event: a
	// record that differs from it in its time alone is that event again.
	prevRaw []byte
	prev    tracer.Event
	// newExe: the program the last exec record decoded to ran, "" for
	// another record or a failed exec; exes keeps it (nil: no cache).
	newExe  string
	exes    *exeCache
	pathBuf []byte
}

const maxInterned = 4096

func newDecoder() *decoder {
	d := &decoder{strings: make(map[string]string)}
	d.clock.sync()
	return d
}

// intern returns b as a string, shared with earlier equal strings.
func (d *decoder) intern(b []byte) string {
	if string(b) == d.lastString { // no allocation for the comparison
		return d.lastString
	}
	s, ok := d.strings[string(b)] // no allocation for the lookup
	if !ok {
		if len(d.strings) >= maxInterned {
			clear(d.strings)
		}
		s = string(b)
		d.strings[s] = s
	}
	d.lastString = s
	return s
}

// cstring cuts b at its first NUL.
func cstring(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// decode fills e from one record. e is reset first; its Argv backing
// array is reused.
func (d *decoder) decode(raw []byte, e *tracer.Event) error {
	if len(raw) < hdrSize {
		return fmt.Errorf("%w: %d bytes", errShortRecord, len(raw))
	}
	le := binary.LittleEndian
	if len(raw) == len(d.prevRaw) {
		if bytes.Equal(raw[offKtime+8:], d.prevRaw[offKtime+8:]) {
			argv, anc := e.Argv[:0], e.Ancestors[:0]
			*e = d.prev
			e.Argv, e.Ancestors = argv, anc
			e.Time = d.clock.wall(le.Uint64(raw[offKtime:]))
			d.prev.Time = e.Time
			return nil
		}
		if raw[offType] == uint8(vocab.TypeSignal) && sameButParties(raw, d.prevRaw) {
			d.otherParties(raw, e)
			return nil
		}
	}
	d.newExe = ""
	if err := d.decodeRecord(raw, e); err != nil {
		d.prevRaw = d.prevRaw[:0]
		return err
	}
	d.prevRaw = d.prevRaw[:0]
	if e.Type != vocab.TypeExec { // fixed fields only: no argv to copy
		d.prevRaw = append(d.prevRaw, raw...)
		d.prev = *e
		d.prev.Argv, d.prev.Ancestors = nil, nil
	}
	return nil
}

// otherParties fills e from raw, a signal record that differs from the last
// one in its time, sender and target alone (sameButParties): in a storm from
// many processes, decoding each record whole cost twice as much.
func (d *decoder) otherParties(raw []byte, e *tracer.Event) {
	le := binary.LittleEndian
	d.again(e)
	e.Time = d.clock.wall(le.Uint64(raw[offKtime:]))
	e.PID, e.ExecID = le.Uint32(raw[offPID:]), senderID(raw)
	e.TargetPID = int32(le.Uint32(raw[offA:]))
	if raw[offXFlags]&xfTarget != 0 {
		e.TargetExecID = targetID(raw)
	}
	p := &d.prev
	p.Time, p.PID, p.ExecID, p.TargetPID, p.TargetExecID = e.Time, e.PID, e.ExecID, e.TargetPID, e.TargetExecID
	copy(d.prevRaw, raw)
}

// sameButParties reports whether signal records a and b differ at most in
// their time, their sender (pid and start) and their target (pid and
// start): fields that decodeRecord copies to the event as they are, and
// reads for nothing else.
func sameButParties(a, b []byte) bool {
	if len(a) < eventSize || len(b) != len(a) {
		return false
	}
	le := binary.LittleEndian
	pa, pb := (*[eventSize]byte)(a), (*[eventSize]byte)(b)
	// Unrolled: a loop cost twice as much.
	w := func(i int) uint64 { return (le.Uint64(pa[i*8:]) ^ le.Uint64(pb[i*8:])) & partiesMask[i] }
	d := w(0) | w(1) | w(2) | w(3) | w(4) | w(5) | w(6) | w(7) |
		w(8) | w(9) | w(10) | w(11) | w(12) | w(13) | w(14) | w(15) |
		w(16) | w(17) | w(18) | w(19) | w(20) | w(21)
	return d == 0 && bytes.Equal(a[eventSize:], b[eventSize:])
}

// partiesMask has the bits of a record's words (little endian) that
// sameButParties compares: all but those of the fields it lets differ.
var partiesMask = func() (m [22]uint64) {
	if eventSize != 8*len(m) {
		panic("bpfbackend: sameButParties reads 22 words")
	}
	var b [eventSize]byte
	for i := range b {
		b[i] = 0xff
	}
	for _, f := range [][2]int{{offKtime, 8}, {offPID, 4}, {offStart, 8}, {offA, 4}, {offXPID, 4}, {offXStart, 8}} {
		clear(b[f[0] : f[0]+f[1]])
	}
	for i := range m {
		m[i] = binary.LittleEndian.Uint64(b[i*8:])
	}
	return m
}()

// again fills e with the event the last record decoded to, for its
// repeats (a fork, signal or exit record that decoded without error).
func (d *decoder) again(e *tracer.Event) {
	argv, anc := e.Argv[:0], e.Ancestors[:0]
	*e = d.prev
	e.Argv, e.Ancestors = argv, anc
}

func (d *decoder) decodeRecord(raw []byte, e *tracer.Event) error {
	le := binary.LittleEndian
	e.Reset()
	e.Backend = "ebpf"
	e.Time = d.clock.wall(le.Uint64(raw[offKtime:]))
	e.PID = le.Uint32(raw[offPID:])
	e.UID = le.Uint32(raw[offUID:])
	e.AUID = le.Uint32(raw[offAUID:])
	e.Type = vocab.Type(raw[offType])
	e.Comm = d.intern(cstring(raw[offComm : offComm+commLen]))
	if e.Type != vocab.TypeThrottle {
		d.decodeCreds(raw, e)
	}
	sc := raw[offSyscall]
	if int(sc) < len(syscallNames) && e.Type != vocab.TypeExec && e.Type != vocab.TypeExit {
		e.Syscall = syscallNames[sc]
	}
	d.decodeIdentity(raw, e)

	switch e.Type {
	case vocab.TypeExec:
		return d.decodeExec(raw, e)
	case vocab.TypeFork, vocab.TypeSignal, vocab.TypeExit:
		if len(raw) < eventSize {
			return fmt.Errorf("%w: %s record of %d bytes", errShortRecord, e.Type, len(raw))
		}
		a := int32(le.Uint32(raw[offA:]))
		switch e.Type {
		case vocab.TypeFork:
			e.ChildPID = uint32(a)
		case vocab.TypeSignal:
			e.TargetPID = a
			e.Signal = int(int32(le.Uint32(raw[offB:])))
			e.Ret = int64(le.Uint64(raw[offRet:]))
			d.decodeSignal(raw, e)
		case vocab.TypeExit:
			e.ExitCode = int(a)
			d.decodeExit(raw, e)
		}
		return nil
	case vocab.TypeThrottle:
		return d.decodeThrottle(raw, e)
	}
	return fmt.Errorf("unknown record type %d", raw[offType])
}

// decodeCreds reads the ids beside uid, the audit session and the
// terminal from a record's header (fill_creds).
func (d *decoder) decodeCreds(raw []byte, e *tracer.Event) {
	le := binary.LittleEndian
	e.HasCreds = true
	e.GID, e.EUID = le.Uint32(raw[offGID:]), le.Uint32(raw[offGID+4:])
	e.SUID, e.FSUID = le.Uint32(raw[offGID+8:]), le.Uint32(raw[offGID+12:])
	e.EGID, e.SGID, e.FSGID = le.Uint32(raw[offGID+16:]), le.Uint32(raw[offGID+20:]), le.Uint32(raw[offGID+24:])
	e.Session = le.Uint32(raw[offSes:])
	if raw[offTTY] != 0 {
		e.TTY = d.intern(cstring(raw[offTTY : offTTY+ttyLen]))
	}
}

// decodeThrottle reads a throttle record (struct throttle_event); its
// header, decoded already, is the first process the window left out.
func (d *decoder) decodeThrottle(raw []byte, e *tracer.Event) error {
	if len(raw) < eventSize {
		return fmt.Errorf("%w: throttle record of %d bytes", errShortRecord, len(raw))
	}
	le := binary.LittleEndian
	t := &e.Throttle
	t.Source, t.CgroupID = tracer.SourceCgroup, le.Uint64(raw[offCgid:])
	if raw[offFlags]&flagThrottleProcess != 0 {
		t.Source, t.CgroupID = tracer.SourceProcess, 0
	}
	t.Start, t.End, t.Limit = d.clock.wall(le.Uint64(raw[offWStart:])), d.clock.wall(le.Uint64(raw[offWEnd:])), d.limit
	for i, typ := range vocab.AllTypes {
		t.Add(typ, le.Uint64(raw[offDropped+8*i:]))
	}
	return nil
}

func (d *decoder) decodeExec(raw []byte, e *tracer.Event) error {
	le := binary.LittleEndian
	if len(raw) < offData {
		return fmt.Errorf("%w: exec record of %d bytes", errShortRecord, len(raw))
	}
	e.PPID = le.Uint32(raw[offPPID:])
	e.Ret = int64(le.Uint64(raw[offExecRet:]))
	fnSize := int(le.Uint16(raw[offFilenameSize:]))
	argvSize := int(le.Uint16(raw[offArgvSize:]))
	argc := int(raw[offArgc])
	data := raw[offData:]
	cwdSize := int(le.Uint16(raw[offCwdSize:]))
	exeSize := int(le.Uint16(raw[offExeSize:]))
	if fnSize+argvSize+cwdSize+exeSize > len(data) {
		return fmt.Errorf("%w: exec record of %d bytes holds %d", errShortRecord, len(raw), offData+fnSize+argvSize+cwdSize+exeSize)
	}
	paths := data[fnSize+argvSize:]
	flags := raw[offPFlags]
	// No names is the root, unless the walk failed at once.
	if cwdSize > 0 || flags&exfCwdTrunc == 0 {
		d.pathBuf = appendPath(d.pathBuf[:0], paths[:cwdSize], flags&exfCwdTrunc != 0)
		e.Cwd = d.intern(d.pathBuf)
	}
	if exeSize > 0 { // a successful exec's
		d.pathBuf = appendPath(d.pathBuf[:0], paths[cwdSize:cwdSize+exeSize], flags&exfExeTrunc != 0)
		d.newExe = d.intern(d.pathBuf)
	}
	e.Filename = d.intern(cstring(data[:fnSize]))
	// The kernel side keeps FilenameMax bytes: one that filled them may
	// have been longer (or exactly that long).
	e.FilenameTruncated = len(e.Filename) >= FilenameMax
	args := data[fnSize : fnSize+argvSize]
	// After a successful exec the kernel side reads the argument area as
	// one block, of at most vocab.ArgvBytesMax bytes: it may hold more
	// than ArgvMax arguments, and argc says how many there were. The cut
	// is the audit backend's (tracer.AppendArgv).
	e.Argv, e.ArgvTruncated = tracer.AppendArgv(e.Argv, args, argc, raw[offFlags]&flagArgvTrunc != 0)
	return nil
}

// appendPath appends to out the path of the kernel's names in b, leaf
// first, each ended by a NUL ("bin\0usr\0" is /usr/bin), cut to
// tracer.FilenameMax bytes as the audit backend cuts its own. No names is
// the root. A walk that stopped before the root (cut) gives the names it
// has without the leading "/": never taken for an absolute path.
func appendPath(out, b []byte, cut bool) []byte {
	start := len(out)
	end := len(b)
	if end > 0 && b[end-1] == 0 {
		end--
	}
	for end > 0 {
		i := bytes.LastIndexByte(b[:end], 0)
		if !cut || len(out) > start {
			out = append(out, '/')
		}
		out = append(out, b[i+1:end]...)
		if i < 0 {
			break
		}
		end = i
	}
	if len(out) == start && !cut {
		out = append(out, '/')
	}
	if len(out)-start > tracer.FilenameMax {
		s, _ := tracer.CapString(string(out[start:]), tracer.FilenameMax)
		out = out[:start+len(s)]
	}
	return out
}

// clock converts the kernel's CLOCK_MONOTONIC (bpf_ktime_get_ns) to wall
// time. The offset is taken again every second so that the wall clock's
// steps and slews show up in event times.
type clock struct {
	offset   int64  // realtime - monotonic, ns
	nextSync uint64 // monotonic ns after which to sync again
}

func (c *clock) wall(ktime uint64) time.Time {
	if ktime >= c.nextSync {
		c.sync()
	}
	return time.Unix(0, int64(ktime)+c.offset)
}

func (c *clock) sync() {
	var real, m1, m2 unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &m1)
	_ = unix.ClockGettime(unix.CLOCK_REALTIME, &real)
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &m2)
	mono := (m1.Nano() + m2.Nano()) / 2
	c.offset = real.Nano() - mono
	c.nextSync = uint64(mono) + uint64(time.Second)
}
