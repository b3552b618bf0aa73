// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"encoding/binary"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// NewSink returns the sink for a --format value: "text", "json", or a
// format registered with RegisterFormat.
func NewSink(format string, w io.Writer, opts OutputOptions) (tracer.Sink, error) {
	if err := CheckFormat(format, opts.Time); err != nil {
		return nil, err
	}
	switch format {
	case "text", "":
		return NewTextSink(w, opts), nil
	case "json":
		return NewJSONSink(w, opts), nil
	}
	return NewLineSink(w, formats[format], opts), nil
}

// CheckFormat refuses what NewSink would refuse: an unknown format, or a
// time mode with a format whose time is fixed. It lets a command refuse
// before it creates its output file.
func CheckFormat(format string, t TimeMode) error {
	switch format {
	case "text", "":
		return nil
	case "json":
		if t != TimeClock {
			return vocab.Usagef("--time is for text output: JSON's time is always RFC 3339 (drop --time or use --format text)")
		}
		return nil
	}
	if _, ok := formats[format]; !ok {
		return vocab.Usagef("unknown format %q: use %s", format, strings.Join(FormatNames(), ", "))
	}
	if t != TimeClock {
		return vocab.Usagef("--time is for text output: %s's time is always RFC 3339 (drop --time or use --format text)", format)
	}
	return nil
}

// Encoder appends one event's line to b, without the newline.
type Encoder func(b []byte, e *tracer.Event) []byte

// formats are the line formats registered besides text and json (the
// schemas pipelines speak: ecs.go, ocsf.go), by --format name.
var formats = map[string]Encoder{}

// RegisterFormat makes enc the --format name. It is called from init
// functions, before any sink is made.
func RegisterFormat(name string, enc Encoder) { formats[name] = enc }

// FormatNames lists every --format value, text and json first.
func FormatNames() []string {
	names := []string{"text", "json"}
	extra := slices.Sorted(maps.Keys(formats))
	return append(names, extra...)
}

// LineSink writes each event as the line an Encoder makes, through an
// output queue (the registered formats).
type LineSink struct {
	bufSink
	enc Encoder
}

// NewLineSink writes enc's lines to w through an output queue (opts as
// for NewJSONSink).
func NewLineSink(w io.Writer, enc Encoder, opts ...OutputOptions) *LineSink {
	s := &LineSink{enc: enc}
	s.init(w, opts)
	return s
}

// Write encodes e.
func (s *LineSink) Write(e *tracer.Event) error {
	s.buf = append(s.enc(s.buf[:0], e), '\n')
	return s.write(s.buf)
}

// JSONSink writes JSON lines: one object per event (docs/events.md).
type JSONSink struct {
	bufSink
	// The last event encoded: in a storm one process sends the same signal
	// to the same target again and again, and the kernel stamps events
	// once per tick, so most lines are the last one again, or the last one
	// with another time; in a storm from many processes, lines differ in
	// pids and exec ids alone. buf holds the last line; body is where its
	// part after the time starts, and ends where each of its segments
	// ends (counted from body).
	last     tracer.Event
	haveLast bool
	body     int
	ends     [maxJSONSegs]int
	tbuf     []byte // a new time, and the segments that changed
	spare    []byte // a line being rebuilt around them
	patch    struct {
		v, old uint64 // the last number patchUint wrote, and the one it replaced
		n      int    // the digits of v; 0: old has another number of digits
		w      uint64 // where n <= 8, v's digits in the last n bytes of a little-endian word
	}
}

// NewJSONSink writes JSON lines to w through an output queue (opts: at
// most one; default: drop and count when the queue is full).
func NewJSONSink(w io.Writer, opts ...OutputOptions) *JSONSink {
	s := &JSONSink{}
	s.init(w, opts)
	return s
}

// Write encodes e. The encoder is hand-written: at 200,000 events a second
// encoding/json's reflection would be the consumer's largest cost.
func (s *JSONSink) Write(e *tracer.Event) error {
	switch {
	case !s.haveLast || e.Type != s.last.Type:
		s.encode(e)
	case !sameButTime(e, &s.last):
		s.update(e)
	case !e.Time.Equal(s.last.Time):
		s.setTime(e.Time)
	}
	return s.write(s.buf)
}

// setTime puts time t in the last line.
func (s *JSONSink) setTime(t time.Time) {
	b := appendJSONTime(s.tbuf[:0], t)
	s.tbuf = b
	if len(b) == s.body {
		copy(s.buf, b)
	} else { // a fraction with another number of digits
		s.spare = append(append(s.spare[:0], b...), s.buf[s.body:]...)
		s.buf, s.spare, s.body = s.spare, s.buf, len(b)
	}
	s.last.Time = t
}

// encode makes e's line the last line.
func (s *JSONSink) encode(e *tracer.Event) {
	b := appendJSONTime(s.buf[:0], e.Time)
	s.body = len(b)
	for i, sg := range jsonSegs(e.Type) {
		b = appendSeg(b, e, sg)
		s.ends[i] = len(b) - s.body
	}
	s.buf = append(b, '}', '\n')
	s.remember(e)
}

// update makes the line of e, an event of the last one's type, the last
// line. Only the segments e changes are encoded, into tbuf; where each
// keeps its length (pids of as many digits), they overwrite the old ones
// in place, else the line is rebuilt from them and the others.
func (s *JSONSink) update(e *tracer.Event) {
	segs := jsonSegs(e.Type)
	diff := changedSegs(e, &s.last)
	if diff&pidSegs != 0 {
		if diff = s.patchPIDs(e, diff); diff == 0 {
			if !e.Time.Equal(s.last.Time) {
				s.setTime(e.Time)
			}
			return
		}
	}
	var changed [maxJSONSegs]bool
	var to [maxJSONSegs]int // where a changed segment ends in tbuf
	t := s.tbuf[:0]
	if !e.Time.Equal(s.last.Time) {
		t = appendJSONTime(t, e.Time)
	}
	timeLen := len(t)
	fits := timeLen == 0 || timeLen == s.body
	start := 0
	for i, sg := range segs {
		if diff&(1<<sg) != 0 {
			from := len(t)
			t = appendSeg(t, e, sg)
			changed[i], to[i] = true, len(t)
			fits = fits && len(t)-from == s.ends[i]-start
		}
		start = s.ends[i]
	}
	s.tbuf = t
	if fits {
		copy(s.buf, t[:timeLen])
		from, start := timeLen, 0
		for i := range segs {
			if changed[i] {
				copy(s.buf[s.body+start:], t[from:to[i]])
				from = to[i]
			}
			start = s.ends[i]
		}
		s.remember(e)
		return
	}
	b := s.spare[:0]
	if timeLen != 0 {
		b = append(b, t[:timeLen]...)
	} else {
		b = append(b, s.buf[:s.body]...)
	}
	body := len(b)
	old := s.buf[s.body:]
	from, start, run := timeLen, 0, -1 // old[run:start] waits to be copied
	for i := range segs {
		end := s.ends[i]
		if !changed[i] {
			if run < 0 {
				run = start
			}
		} else {
			if run >= 0 {
				b = append(b, old[run:start]...)
				run = -1
			}
			b = append(b, t[from:to[i]]...)
			from = to[i]
		}
		s.ends[i] = len(b) - body
		if run >= 0 {
			s.ends[i] += end - run
		}
		start = end
	}
	if run >= 0 {
		b = append(b, old[run:start]...)
	}
	s.buf, s.spare, s.body = append(b, '}', '\n'), s.buf, body
	s.remember(e)
}

// pidSegs are the segments that end in a pid: pid and target_pid, and
// the exec ids ("BOOTID:START:PID").
const pidSegs = 1<<segPID | 1<<segExecID | 1<<segParentExecID | 1<<segTargetPID | 1<<segTargetExecID

// patchPIDs overwrites in place the digits of each segment of diff that
// ends in a pid where that pid, or an exec id's pid and start, alone
// changed, to numbers of as many digits: in a storm from many processes,
// lines differ in those alone, and encoding the segments again cost more
// than the rest of the line. It returns the segments left to encode;
// where none are, the last event takes e's pids (and keeps fields that
// e's line does not print).
func (s *JSONSink) patchPIDs(e *tracer.Event, diff segSet) segSet {
	l := &s.last
	at := jsonSegIndex(e.Type)
	// Straight-line code: a loop over the segments, with a switch, cost
	// more than the patches themselves.
	if diff&(1<<segPID) != 0 && s.patchUint(s.segEnd(at, segPID), uint64(l.PID), uint64(e.PID)) {
		diff &^= 1 << segPID
	}
	if diff&(1<<segExecID) != 0 && s.patchExecID(s.segEnd(at, segExecID), l.ExecID, e.ExecID) {
		diff &^= 1 << segExecID
	}
	if diff&(1<<segParentExecID) != 0 && s.patchExecID(s.segEnd(at, segParentExecID), l.ParentExecID, e.ParentExecID) {
		diff &^= 1 << segParentExecID
	}
	if diff&(1<<segTargetPID|1<<segTargetExecID) != 0 && at[segTargetPID] >= 0 && at[segTargetExecID] >= 0 {
		if diff&(1<<segTargetPID) != 0 && l.TargetPID >= 0 && e.TargetPID >= 0 &&
			s.patchUint(s.segEnd(at, segTargetPID), uint64(l.TargetPID), uint64(e.TargetPID)) {
			diff &^= 1 << segTargetPID
		}
		if diff&(1<<segTargetExecID) != 0 && s.patchExecID(s.segEnd(at, segTargetExecID), l.TargetExecID, e.TargetExecID) {
			diff &^= 1 << segTargetExecID
		}
	}
	if diff == 0 {
		l.PID, l.TargetPID = e.PID, e.TargetPID
		l.ExecID, l.ParentExecID, l.TargetExecID = e.ExecID, e.ParentExecID, e.TargetExecID
	}
	return diff
}

// segEnd is where segment sg, one of every type's or one of at's, ends
// in the last line.
func (s *JSONSink) segEnd(at *[16]int8, sg jsonSeg) int {
	return s.body + s.ends[at[sg]]
}

// patchUint overwrites number old, which ends the last line's bytes at
// end, with v, if v has as many digits. The digits of the last v are
// kept: a line prints a pid twice or more (pid and exec_id, target_pid
// and target_exec_id; all four for a signal a process sends itself), and
// a store costs less than formatting again.
func (s *JSONSink) patchUint(end int, old, v uint64) bool {
	p := &s.patch
	if v != p.v || old != p.old {
		p.v, p.old, p.n = v, old, decLen(v)
		if p.n != decLen(old) {
			p.n = 0
		} else if p.n <= 8 {
			var d [8]byte
			putUint(d[:], v)
			p.w = binary.LittleEndian.Uint64(d[:])
		}
	}
	switch {
	case p.n == 0:
		return false
	case p.n > 8:
		putUint(s.buf[:end], v)
	default:
		// One word: the bytes before the number kept, its digits replaced
		// (the line's time comes first: end >= 8).
		b := s.buf[end-8 : end]
		keep := ^uint64(0) >> (8 * p.n)
		binary.LittleEndian.PutUint64(b, binary.LittleEndian.Uint64(b)&keep|p.w)
	}
	return true
}

// patchExecID overwrites exec id old, whose closing quote ends the last
// line's bytes at end, with id, if both are known and their pids and
// starts have as many digits (an unknown id prints nothing). Where it
// fails, update encodes the segment again, whatever was written here.
func (s *JSONSink) patchExecID(end int, old, id tracer.ExecID) bool {
	if id.IsZero() || old.IsZero() || !s.patchUint(end-1, uint64(old.PID), uint64(id.PID)) {
		return false
	}
	// BOOTID:START:PID"
	return id.Start == old.Start || s.patchUint(end-1-s.patch.n-1, old.Start, id.Start)
}

// remember keeps a copy of e, its slices included (backends reuse theirs).
func (s *JSONSink) remember(e *tracer.Event) {
	argv, anc := s.last.Argv[:0], s.last.Ancestors[:0]
	s.last = *e
	s.last.Argv = append(argv, e.Argv...)
	s.last.Ancestors = append(anc, e.Ancestors...)
	s.haveLast = true
}

// sameButTime reports whether a and b differ at most in their time, that
// is whether their JSON lines differ at most there. It names every field
// of Event but Time (TestSameButTimeSeesEveryField checks that).
func sameButTime(a, b *tracer.Event) bool {
	return a.Type == b.Type && a.PID == b.PID && a.UID == b.UID && a.AUID == b.AUID && sameCreds(a, b) &&
		a.PPID == b.PPID && a.ArgvTruncated == b.ArgvTruncated && a.FilenameTruncated == b.FilenameTruncated &&
		a.CgroupTruncated == b.CgroupTruncated && a.Ret == b.Ret && a.ChildPID == b.ChildPID &&
		a.TargetPID == b.TargetPID && a.Signal == b.Signal && a.ExitCode == b.ExitCode &&
		a.CoreDumped == b.CoreDumped && a.CoreUnknown == b.CoreUnknown && a.OOMKill == b.OOMKill &&
		a.Code == b.Code && a.HasCode == b.HasCode && a.Origin == b.Origin && a.Result == b.Result &&
		a.TargetExecID == b.TargetExecID && a.ExecID == b.ExecID && a.ParentExecID == b.ParentExecID &&
		sameString(a.Backend, b.Backend) && sameString(a.Comm, b.Comm) && sameString(a.Filename, b.Filename) &&
		sameString(a.Syscall, b.Syscall) && sameString(a.TargetComm, b.TargetComm) &&
		sameString(a.Cgroup, b.Cgroup) && sameString(a.ContainerID, b.ContainerID) && sameString(a.Unit, b.Unit) &&
		samePod(a, b) &&
		sameKiller(&a.KilledBy, &b.KilledBy) && sameThrottle(&a.Throttle, &b.Throttle) &&
		slices.Equal(a.Argv, b.Argv) && slices.Equal(a.Ancestors, b.Ancestors)
}

// sameCreds reports whether a and b agree in the credentials and audit
// context appendUserJSON prints beside uid and auid.
func sameCreds(a, b *tracer.Event) bool {
	return a.HasCreds == b.HasCreds && a.GID == b.GID && a.EUID == b.EUID && a.SUID == b.SUID && a.FSUID == b.FSUID &&
		a.EGID == b.EGID && a.SGID == b.SGID && a.FSGID == b.FSGID && a.Session == b.Session &&
		sameString(a.TTY, b.TTY) && sameString(a.Exe, b.Exe) && sameString(a.Cwd, b.Cwd) && sameString(a.Key, b.Key)
}

func sameKiller(a, b *tracer.KilledBy) bool {
	return a.Origin == b.Origin && a.PID == b.PID && a.ExecID == b.ExecID && a.Code == b.Code &&
		sameString(a.Comm, b.Comm) && sameString(a.Syscall, b.Syscall)
}

// sameString is a == b, without a call where both are the same string:
// backends intern the strings of their events.
func sameString(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

// AppendJSON appends e as one JSON object, with the fields docs/events.md gives its type.
func AppendJSON(b []byte, e *tracer.Event) []byte {
	return appendJSONBody(appendJSONTime(b, e.Time), e)
}

// appendJSONTime appends the start of an event's object, up to and with
// the closing quote of its time.
func appendJSONTime(b []byte, t time.Time) []byte {
	b = append(b, `{"time":"`...)
	b = appendRFC3339Nano(b, t)
	return append(b, '"')
}

// appendJSONBody appends the rest of the object after its time.
func appendJSONBody(b []byte, e *tracer.Event) []byte {
	for _, sg := range jsonSegs(e.Type) {
		b = appendSeg(b, e, sg)
	}
	return append(b, '}')
}

// A jsonSeg is a run of the fields of an event's object after its time:
// appendSeg appends it, and changedSegs says whether two events of one
// type give it other bytes, that is whether they differ in a field it
// reads (TestJSONSegsSeeTheirFields checks that).
type jsonSeg uint8

// The segments, in the order of the fields: those of every event, then
// those of each type.
const (
	segKind         jsonSeg = iota // backend, type
	segPID                         // pid
	segUser                        // comm, uid, gid, euid ... fsgid, auid, ses, tty, exe, cwd, key
	segExecID                      // exec_id
	segParentExecID                // parent_exec_id
	segCgroup                      // cgroup, cgroup_truncated, container_id, unit, pod ... image_id
	segAncestors                   // ancestors
	segExec                        // ppid, filename, filename_truncated, argv, argv_truncated, ret
	segFork                        // child_pid, syscall
	segTargetPID                   // target_pid
	segSignal                      // signal ... target_comm
	segTargetExecID                // target_exec_id
	segExit                        // exit_code or signal ... oom_kill
	segThrottle                    // source ... suppressed_by_type (throttle.go)
)

const maxJSONSegs = 10

// jsonSegsOf lists each type's segments.
var jsonSegsOf = func() (t [vocab.NumTypes][]jsonSeg) {
	head := []jsonSeg{segKind, segPID, segUser, segExecID, segParentExecID, segCgroup, segAncestors}
	for i := range t {
		t[i] = head[:len(head):len(head)]
	}
	t[vocab.TypeExec] = append(t[vocab.TypeExec], segExec)
	t[vocab.TypeFork] = append(t[vocab.TypeFork], segFork)
	t[vocab.TypeSignal] = append(t[vocab.TypeSignal], segTargetPID, segSignal, segTargetExecID)
	t[vocab.TypeExit] = append(t[vocab.TypeExit], segExit)
	t[vocab.TypeThrottle] = append(t[vocab.TypeThrottle], segThrottle)
	for _, segs := range t {
		if len(segs) > maxJSONSegs {
			panic("tracer: more JSON segments than maxJSONSegs")
		}
	}
	return t
}()

// jsonSegIndexOf[t][sg] is where segment sg is in jsonSegsOf[t], -1
// where it is not.
var jsonSegIndexOf = func() (x [vocab.NumTypes][16]int8) {
	for t, segs := range jsonSegsOf {
		for sg := range x[t] {
			x[t][sg] = int8(slices.Index(segs, jsonSeg(sg)))
		}
	}
	return x
}()

// jsonSegIndex returns where each segment is in jsonSegs(t).
func jsonSegIndex(t vocab.Type) *[16]int8 {
	if t < vocab.NumTypes {
		return &jsonSegIndexOf[t]
	}
	return &jsonSegIndexOf[vocab.TypeNone]
}

// jsonSegs returns the segments of an event of type t; an unknown type
// has those of every type alone.
func jsonSegs(t vocab.Type) []jsonSeg {
	if t < vocab.NumTypes {
		return jsonSegsOf[t]
	}
	return jsonSegsOf[vocab.TypeNone]
}

// appendSeg appends segment sg of e.
func appendSeg(b []byte, e *tracer.Event, sg jsonSeg) []byte {
	switch sg {
	case segKind:
		return appendKindJSON(b, e)
	case segPID:
		b = append(b, `,"pid":`...)
		return appendUint(b, uint64(e.PID))
	case segUser:
		return appendUserJSON(b, e)
	case segExecID:
		return appendExecIDJSON(b, `,"exec_id":"`, e.ExecID)
	case segParentExecID:
		return appendExecIDJSON(b, `,"parent_exec_id":"`, e.ParentExecID)
	case segCgroup:
		return appendCgroupJSON(b, e)
	case segAncestors:
		return appendAncestorsJSON(b, e)
	case segExec:
		return appendExecJSON(b, e)
	case segFork:
		return appendForkJSON(b, e)
	case segTargetPID:
		b = append(b, `,"target_pid":`...)
		return appendInt(b, int64(e.TargetPID))
	case segSignal:
		return appendSignalJSON(b, e)
	case segTargetExecID:
		return appendExecIDJSON(b, `,"target_exec_id":"`, e.TargetExecID)
	case segExit:
		return appendExitJSON(b, e)
	case segThrottle:
		return appendThrottleJSON(b, e)
	}
	panic("tracer: unknown JSON segment")
}

// segSet is a set of segments, bit 1<<sg for segment sg.
type segSet uint16

// changedSegs returns the segments whose fields differ between a and b,
// events of one type. One pass of plain comparisons: a call per segment
// cost more than the comparisons themselves.
func changedSegs(a, b *tracer.Event) segSet {
	var m segSet
	if a.Type != b.Type || !sameString(a.Backend, b.Backend) {
		m |= 1 << segKind
	}
	if a.PID != b.PID {
		m |= 1 << segPID
	}
	if !sameString(a.Comm, b.Comm) || a.UID != b.UID || a.AUID != b.AUID || !sameCreds(a, b) {
		m |= 1 << segUser
	}
	if a.ExecID != b.ExecID {
		m |= 1 << segExecID
	}
	if a.ParentExecID != b.ParentExecID {
		m |= 1 << segParentExecID
	}
	if !sameString(a.Cgroup, b.Cgroup) || !sameString(a.ContainerID, b.ContainerID) || !sameString(a.Unit, b.Unit) ||
		a.CgroupTruncated != b.CgroupTruncated || !samePod(a, b) {
		m |= 1 << segCgroup
	}
	if !slices.Equal(a.Ancestors, b.Ancestors) {
		m |= 1 << segAncestors
	}
	switch a.Type {
	case vocab.TypeExec:
		if a.PPID != b.PPID || !sameString(a.Filename, b.Filename) || !slices.Equal(a.Argv, b.Argv) ||
			a.ArgvTruncated != b.ArgvTruncated || a.FilenameTruncated != b.FilenameTruncated || a.Ret != b.Ret {
			m |= 1 << segExec
		}
	case vocab.TypeFork:
		if a.ChildPID != b.ChildPID || !sameString(a.Syscall, b.Syscall) {
			m |= 1 << segFork
		}
	case vocab.TypeSignal:
		if a.TargetPID != b.TargetPID {
			m |= 1 << segTargetPID
		}
		if a.Signal != b.Signal || !sameString(a.Syscall, b.Syscall) || a.Ret != b.Ret || a.HasCode != b.HasCode ||
			a.Code != b.Code || a.Origin != b.Origin || a.Result != b.Result || !sameString(a.TargetComm, b.TargetComm) {
			m |= 1 << segSignal
		}
		if a.TargetExecID != b.TargetExecID {
			m |= 1 << segTargetExecID
		}
	case vocab.TypeExit:
		if a.ExitCode != b.ExitCode || a.Signal != b.Signal || a.CoreDumped != b.CoreDumped ||
			a.CoreUnknown != b.CoreUnknown || a.OOMKill != b.OOMKill || !sameKiller(&a.KilledBy, &b.KilledBy) {
			m |= 1 << segExit
		}
	case vocab.TypeThrottle:
		if !sameThrottle(&a.Throttle, &b.Throttle) {
			m |= 1 << segThrottle
		}
	}
	return m
}

func appendKindJSON(b []byte, e *tracer.Event) []byte {
	b = append(b, `,"backend":`...)
	b = appendString(b, e.Backend)
	b = append(b, `,"type":"`...)
	b = append(b, e.Type.String()...)
	return append(b, '"')
}

func appendUserJSON(b []byte, e *tracer.Event) []byte {
	b = append(b, `,"comm":`...)
	b = appendString(b, e.Comm)
	b = append(b, `,"uid":`...)
	b = appendUint(b, uint64(e.UID))
	if e.HasCreds {
		b = appendCredsJSON(b, e)
	}
	b = append(b, `,"auid":`...)
	b = appendUint(b, uint64(e.AUID))
	if e.Session != 0 {
		b = append(b, `,"ses":`...)
		b = appendUint(b, uint64(e.Session))
	}
	if e.TTY != "" {
		b = append(b, `,"tty":`...)
		b = appendString(b, e.TTY)
	}
	if e.Exe != "" {
		b = append(b, `,"exe":`...)
		b = appendString(b, e.Exe)
	}
	if e.Cwd != "" {
		b = append(b, `,"cwd":`...)
		b = appendString(b, e.Cwd)
	}
	if e.Key != "" {
		b = append(b, `,"key":`...)
		b = appendString(b, e.Key)
	}
	return b
}

// appendCredsJSON appends gid, and the other ids only where they differ
// from the real ones: a setuid or setgid program, a process that dropped
// or raised its ids.
func appendCredsJSON(b []byte, e *tracer.Event) []byte {
	b = append(b, `,"gid":`...)
	b = appendUint(b, uint64(e.GID))
	if e.EUID != e.UID {
		b = append(b, `,"euid":`...)
		b = appendUint(b, uint64(e.EUID))
	}
	if e.SUID != e.UID {
		b = append(b, `,"suid":`...)
		b = appendUint(b, uint64(e.SUID))
	}
	if e.FSUID != e.UID {
		b = append(b, `,"fsuid":`...)
		b = appendUint(b, uint64(e.FSUID))
	}
	if e.EGID != e.GID {
		b = append(b, `,"egid":`...)
		b = appendUint(b, uint64(e.EGID))
	}
	if e.SGID != e.GID {
		b = append(b, `,"sgid":`...)
		b = appendUint(b, uint64(e.SGID))
	}
	if e.FSGID != e.GID {
		b = append(b, `,"fsgid":`...)
		b = appendUint(b, uint64(e.FSGID))
	}
	return b
}

func appendExecJSON(b []byte, e *tracer.Event) []byte {
	b = append(b, `,"ppid":`...)
	b = appendUint(b, uint64(e.PPID))
	b = append(b, `,"filename":`...)
	b = appendString(b, e.Filename)
	if e.FilenameTruncated {
		b = append(b, `,"filename_truncated":true`...)
	}
	b = appendArgvJSON(b, e)
	b = append(b, `,"ret":`...)
	return appendInt(b, e.Ret)
}

// appendArgvJSON appends argv, an array of strings, and argv_truncated
// when it is.
func appendArgvJSON(b []byte, e *tracer.Event) []byte {
	b = append(b, `,"argv":[`...)
	for i, a := range e.Argv {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, a)
	}
	b = append(b, ']')
	if e.ArgvTruncated {
		b = append(b, `,"argv_truncated":true`...)
	}
	return b
}

func appendForkJSON(b []byte, e *tracer.Event) []byte {
	b = append(b, `,"child_pid":`...)
	b = appendUint(b, uint64(e.ChildPID))
	b = append(b, `,"syscall":`...)
	return appendString(b, e.Syscall)
}

const hexDigits = "0123456789abcdef"

// jsonPlain marks the bytes appendString copies as they are: printable
// ASCII other than '"' and '\\'. Every other byte starts an escape or a
// multi-byte rune to check.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendString appends s as a JSON string. Control characters (C0, DEL,
// C1), U+2028/U+2029 and the invisible runes that reorder or hide text
// (jsonInvisible) become \u escapes; each byte that is not UTF-8 becomes
// \udcXX, the lone low surrogate Python's surrogateescape gives it: no
// UTF-8 string holds a surrogate, so two strings never encode alike and
// the decoder (jsonString) gives the bytes back.
// Runs of bytes that need nothing are appended at once: comms, paths and
// cgroups are almost always plain ASCII, and a byte-at-a-time append was
// the largest cost of a JSON line.
func appendString(b []byte, s string) []byte {
	i := plainLen(s)
	if i == len(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	return appendEscapedString(b, s, i)
}

// appendEscapedString is appendString for s whose first byte that is not
// plain is at i.
func appendEscapedString(b []byte, s string, i int) []byte {
	b = append(b, '"')
	start := 0 // s[start:i] is plain, not yet appended
	for ; i < len(s); i += plainLen(s[i:]) {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if !(r == utf8.RuneError && size == 1) && r > 0x9f && !jsonInvisible(r) {
				i += size // a valid rune that needs no escape: part of the run
				continue
			}
			b = append(b, s[start:i]...)
			if r == utf8.RuneError && size == 1 {
				b = append(b, '\\', 'u', 'd', 'c', hexDigits[c>>4], hexDigits[c&0xf])
			} else {
				// Valid JSON raw, but C1 controls drive terminals that cat or
				// tail the file, JavaScript ends a line at U+2028/U+2029, and
				// the invisible runes make a line read as another.
				b = append(b, '\\', 'u')
				b = appendHex(b, uint32(r), 4)
			}
			i += size
			start = i
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\t':
			b = append(b, '\\', 't')
		case '\r':
			b = append(b, '\\', 'r')
		default: // C0 and DEL
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// jsonInvisible reports whether r, a rune above the C1 controls, is one
// that JSON output escapes although it is valid: U+2028/U+2029, the bidi
// controls (U+061C, U+200E/U+200F, U+202A-U+202E, U+2066-U+2069), which
// reorder what a terminal or an editor shows (CVE-2021-42574), and the
// zero-width ones (U+200B-U+200D, U+2060, U+FEFF), which hide text.
func jsonInvisible(r rune) bool {
	if r < 0x061c {
		return false
	}
	return r == 0x061c || 0x200b <= r && r <= 0x200f || 0x2028 <= r && r <= 0x202e ||
		r == 0x2060 || 0x2066 <= r && r <= 0x2069 || r == 0xfeff
}

// plainLen is the length of the run of plain bytes s starts with, 8 bytes
// at a time.
func plainLen(s string) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := s[i : i+8]
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		if !plainWord(x) {
			break
		}
	}
	for ; i < len(s); i++ {
		if !jsonPlain[s[i]] {
			return i
		}
	}
	return len(s)
}

// plainWord reports whether the 8 bytes of x are all plain: no byte below
// 0x20 or above 0x7e, none '"' or '\\'. Each test is exact for "some byte
// of x": a borrow or carry can only spread from a byte that was bad.
func plainWord(x uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	below := (x - lo*0x20) & ^x & hi // a byte < 0x20
	above := ((x + lo) | x) & hi     // a byte > 0x7e
	quote := x ^ (lo * '"')
	bslash := x ^ (lo * '\\')
	zero := ((quote - lo) & ^quote) | ((bslash - lo) & ^bslash)
	return (below|above|zero)&hi == 0
}

// TextSink prints one readable line per event, in columns like execsnoop and killsnoop.
type TextSink struct {
	bufSink
	header bool
	time   TimeMode
	start  time.Time // TimeRelative counts from here
}

// NewTextSink writes text lines to w through an output queue (opts as
// for NewJSONSink; their Time says how the time column reads).
func NewTextSink(w io.Writer, opts ...OutputOptions) *TextSink {
	s := &TextSink{start: time.Now()}
	if len(opts) > 0 {
		s.time = opts[0].Time
	}
	s.init(w, opts)
	return s
}

// TextHeader is the column header TextSink prints first (--time clock).
// The UID column holds any uid (10 digits), so the columns never move.
const TextHeader = "TIME         " + textColumns

const textColumns = "BACKEND TYPE   PID     COMM             UID        DETAILS\n"

// Write prints e.
func (s *TextSink) Write(e *tracer.Event) error {
	b := s.buf[:0]
	if !s.header {
		s.header = true
		b = append(b, s.time.header()...)
		b = append(b, textColumns...)
	}
	b = s.time.appendTime(b, e.Time, s.start)
	b = appendTextBody(b, e)
	b = append(b, '\n')
	s.buf = b
	return s.write(b)
}

// AppendText appends the text line for e, without a newline. Every string
// is escaped (see Escape), and quoted where it holds a space or a quote
// (appendField): comm, file names and argv come from whoever runs a
// process, and one event must stay one line of its columns that drives
// no terminal.
func AppendText(b []byte, e *tracer.Event) []byte {
	return appendTextBody(TimeClock.appendTime(b, e.Time, time.Time{}), e)
}

// appendTextBody is a text line after its time column.
func appendTextBody(b []byte, e *tracer.Event) []byte {
	b = appendColumn(b, e.Backend, 7)
	b = append(b, ' ')
	b = appendColumn(b, e.Type.String(), 6)
	b = append(b, ' ')
	b = appendUintColumn(b, uint64(e.PID), 7)
	b = append(b, ' ')
	b = appendColumn(b, e.Comm, 16)
	b = append(b, ' ')
	b = appendUintColumn(b, uint64(e.UID), 10)
	b = append(b, ' ')
	if e.HasCreds && e.Type != vocab.TypeThrottle {
		// A setuid or setgid program: what the UID column alone hides.
		if e.EUID != e.UID {
			b = strconv.AppendUint(append(b, "euid="...), uint64(e.EUID), 10)
			b = append(b, ' ')
		}
		if e.EGID != e.GID {
			b = strconv.AppendUint(append(b, "egid="...), uint64(e.EGID), 10)
			b = append(b, ' ')
		}
	}
	switch e.Type {
	case vocab.TypeExec:
		b = append(b, "ppid="...)
		b = strconv.AppendUint(b, uint64(e.PPID), 10)
		b = appendRet(append(b, " ret="...), e.Ret)
		b = append(b, ' ')
		b = appendField(b, e.Filename)
		for _, a := range e.Argv {
			b = append(b, ' ')
			b = appendQuoted(b, a)
		}
		if e.ArgvTruncated {
			b = append(b, " [argv truncated]"...)
		}
	case vocab.TypeFork:
		b = appendField(b, e.Syscall)
		b = append(b, " -> "...)
		b = strconv.AppendUint(b, uint64(e.ChildPID), 10)
	case vocab.TypeSignal:
		// The helpers quote the comms they print; sanitizeFrom holds the
		// line to its guarantee whatever they let through.
		at := len(b)
		b = sanitizeFrom(appendSignalText(b, e), at)
	case vocab.TypeExit:
		at := len(b)
		b = sanitizeFrom(appendExitText(b, e), at)
	case vocab.TypeThrottle:
		at := len(b)
		b = sanitizeFrom(appendThrottleText(b, e), at)
	}
	return appendPodText(b, e)
}

// AppendJSONString appends s as a JSON string, escaped as every string of
// the JSON lines is (docs/events.md): the schemas in tracer/sink print
// process-controlled names with it, so that they cannot break a line.
func AppendJSONString(b []byte, s string) []byte { return appendString(b, s) }
