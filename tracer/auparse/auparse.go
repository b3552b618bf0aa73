// SPDX-License-Identifier: Apache-2.0

// Package auparse reads the Linux audit records the project uses: the
// record header, SYSCALL, EXECVE, PATH, OBJ_PID and CWD records, the
// lines of auditd's log, and a rule's key in auditctl text. Both the
// audit backend (from netlink) and bench (from auditd's log) read records
// with it, so the two count the same fields the same way. It imports only
// tracer/vocab: it allocates nothing on its hot paths and holds no state
// but what a caller passes in.
package auparse

import (
	"bytes"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Audit record types the project reads (linux/audit.h).
const (
	TypeSyscall      = 1300
	TypeConfigChange = 1305
	TypePath         = 1302
	TypeCwd          = 1307
	TypeExecve       = 1309
	TypeObjPID       = 1318
	TypeEOE          = 1320
	TypeProctitle    = 1327
	// TypeEventListener: a program joined or left the multicast group.
	TypeEventListener = 1335
)

// ErrHeader is Header's error: msg does not start "audit(sec.msec:serial)".
var ErrHeader = errors.New("malformed audit record header")

// Header splits "audit(1796011828.799:16): body" into time, serial and body.
func Header(msg []byte) (t time.Time, serial uint64, body []byte, err error) {
	if !bytes.HasPrefix(msg, []byte("audit(")) {
		return t, 0, nil, ErrHeader
	}
	end := bytes.IndexByte(msg, ')')
	if end < 0 {
		return t, 0, nil, ErrHeader
	}
	inner := msg[len("audit("):end]
	colon := bytes.IndexByte(inner, ':')
	dot := bytes.IndexByte(inner, '.')
	if colon < 0 || dot < 0 || dot > colon {
		return t, 0, nil, ErrHeader
	}
	sec, ok1 := atou(inner[:dot])
	msec, ok2 := atou(inner[dot+1 : colon])
	serial, ok3 := atou(inner[colon+1:])
	if !ok1 || !ok2 || !ok3 {
		return t, 0, nil, ErrHeader
	}
	body = msg[end+1:]
	body = bytes.TrimPrefix(body, []byte(":"))
	body = bytes.TrimLeft(body, " ")
	body = bytes.TrimRight(body, "\x00\n")
	return time.Unix(int64(sec), int64(msec)*int64(time.Millisecond)), serial, body, nil
}

func atou(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

// Fields iterates over "key=value" pairs of a record body without
// allocating. Quoted values keep their quotes; Untrusted decodes them.
type Fields struct{ rest []byte }

// NewFields iterates over the fields of body.
func NewFields(body []byte) Fields { return Fields{rest: body} }

// Next returns the next key=value pair. Keys and most values are a few
// bytes long: plain loops beat bytes.IndexByte's call and setup there.
func (f *Fields) Next() (key, val []byte, ok bool) {
	r := f.rest
	i := 0
	for i < len(r) && r[i] == ' ' {
		i++
	}
	if i == len(r) {
		f.rest = nil
		return nil, nil, false
	}
	eq := i
	for eq < len(r) && r[eq] != '=' {
		eq++
	}
	if eq == len(r) {
		f.rest = nil
		return nil, nil, false
	}
	key = r[i:eq]
	r = r[eq+1:]
	var end int
	if len(r) > 0 && r[0] == '"' {
		// Quoted values never contain a quote: the kernel hex-encodes those.
		q := bytes.IndexByte(r[1:], '"')
		if q < 0 {
			end = len(r)
		} else {
			end = q + 2
		}
	} else {
		for end < len(r) && r[end] != ' ' {
			end++
		}
	}
	f.rest = r[end:]
	return key, r[:end], true
}

// Untrusted decodes a value the kernel logged with audit_log_untrustedstring:
// quoted when plain, hex when it holds spaces, quotes or control bytes.
func Untrusted(v []byte) string {
	text, isHex := untrustedForm(v)
	if !isHex {
		return string(text)
	}
	out := make([]byte, hex.DecodedLen(len(text)))
	if _, err := hex.Decode(out, text); err != nil {
		return string(v)
	}
	return string(out)
}

// untrustedForm tells how the kernel logged a value: text is what the
// quotes hold, or the hex digits.
func untrustedForm(v []byte) (text []byte, isHex bool) {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		return v[1 : len(v)-1], false
	}
	if string(v) == "(null)" {
		return nil, false
	}
	return v, true
}

// HexArg parses a syscall argument the kernel prints as unsigned hex (a0=23ae).
// HexArg and DecInt read a SYSCALL record's numbers, a dozen a record:
// the common short forms inline, anything else as strconv reads it.
func HexArg(v []byte) uint64 {
	if len(v) == 0 || len(v) > 16 {
		n, _ := strconv.ParseUint(string(v), 16, 64)
		return n
	}
	var n uint64
	for _, c := range v {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0 // as strconv: a syntax error reads 0
		}
		n = n<<4 | uint64(c)
	}
	return n
}

// DecInt parses a decimal field, negative or not (auid=4294967295, oauid=-1).
func DecInt(v []byte) int64 {
	neg := len(v) > 0 && v[0] == '-'
	digits := v
	if neg {
		digits = v[1:]
	}
	if len(digits) > 18 {
		n, _ := strconv.ParseInt(string(v), 10, 64)
		return n
	}
	n, ok := atou(digits)
	if !ok {
		n, _ := strconv.ParseInt(string(v), 10, 64)
		return n
	}
	if neg {
		return -int64(n)
	}
	return int64(n)
}

// Syscall holds the fields of a SYSCALL record that events need.
// It is the one reading of SYSCALL records in the project: the audit
// backend reads them from netlink, bench from auditd's log (LogRecord).
type Syscall struct {
	Arch    uint32 // AUDIT_ARCH_* of the syscall's ABI
	Syscall int    // its number in that ABI
	HasExit bool
	Exit    int64
	Args    [4]uint64
	Items   int // PATH records that follow
	PPID    uint32
	PID     uint32
	AUID    uint32
	UID     uint32
	// The other ids, the session and the terminal, as audit_log_task_info
	// writes them after uid.
	GID, EUID, SUID, FSUID, EGID, SGID, FSGID uint32
	Ses                                       uint32
	Comm                                      string // set by the caller from CommRaw (the backend interns it)
	Exe, Key, TTY                             string // set by the caller from the raw fields
	// The fields as the record holds them, undecoded: they alias the
	// body, valid only as long as it is.
	CommRaw, ExeRaw, KeyRaw, TTYRaw []byte
}

// ParseSyscall reads a SYSCALL record body into r (all but the strings
// a caller decodes from the raw fields: Comm, Exe, Key, TTY).
func ParseSyscall(body []byte, r *Syscall) {
	*r = Syscall{}
	if parseSyscallInOrder(body, r) {
		return
	}
	*r = Syscall{}
	parseSyscallByKey(body, r)
}

// syscallKeys are the SYSCALL record fields events need, in the order
// the kernel writes them (audit_log_exit); comm follows, after fields not
// read. "exit" comes after "success", and neither is there for a syscall
// that does not return (exit_group).
var syscallKeys = [...]string{"arch", "syscall", "exit", "a0", "a1", "a2", "a3", "items", "ppid", "pid", "auid", "uid",
	"gid", "euid", "suid", "fsuid", "egid", "sgid", "fsgid", "tty", "ses"}

const keyExit = 2

// set stores the value of syscallKeys[i].
func (r *Syscall) set(i int, v []byte) {
	switch i {
	case 0:
		r.Arch = uint32(HexArg(v))
	case 1:
		r.Syscall = int(DecInt(v))
	case keyExit:
		r.HasExit, r.Exit = true, DecInt(v)
	case 3, 4, 5, 6:
		r.Args[i-3] = HexArg(v)
	case 7:
		r.Items = int(DecInt(v))
	case 8:
		r.PPID = uint32(DecInt(v))
	case 9:
		r.PID = uint32(DecInt(v))
	case 10:
		r.AUID = uint32(DecInt(v))
	case 11:
		r.UID = uint32(DecInt(v))
	case 12:
		r.GID = uint32(DecInt(v))
	case 13:
		r.EUID = uint32(DecInt(v))
	case 14:
		r.SUID = uint32(DecInt(v))
	case 15:
		r.FSUID = uint32(DecInt(v))
	case 16:
		r.EGID = uint32(DecInt(v))
	case 17:
		r.SGID = uint32(DecInt(v))
	case 18:
		r.FSGID = uint32(DecInt(v))
	case 19:
		r.TTYRaw = v
	case 20:
		r.Ses = uint32(DecInt(v))
	}
}

// afterComm reads what follows comm: exe, the LSM's subj, and key, the
// last field (audit_log_exit).
func (r *Syscall) afterComm(f *Fields) {
	for {
		k, v, ok := f.Next()
		if !ok {
			return
		}
		switch string(k) {
		case "exe":
			r.ExeRaw = v
		case "key":
			r.KeyRaw = v
			return
		}
	}
}

// parseSyscallByKey reads a SYSCALL record key by key, in any order.
func parseSyscallByKey(body []byte, r *Syscall) {
	f := Fields{rest: body}
	for {
		k, v, ok := f.Next()
		if !ok {
			return
		}
		if string(k) == "comm" {
			r.CommRaw = v
			r.afterComm(&f)
			return
		}
		if i := slices.Index(syscallKeys[:], string(k)); i >= 0 {
			r.set(i, v)
		}
	}
}

// parseSyscallInOrder reads a SYSCALL record in the kernel's field order,
// checking each key where it should be; it reports false at the first
// surprise, and ParseSyscall then reads the record key by key. At
// hundreds of thousands of records a second the saving is worth it: a
// third of the reader's CPU went to parsing.
func parseSyscallInOrder(body []byte, r *Syscall) bool {
	rest := body
	for i, key := range syscallKeys {
		if i == keyExit {
			_, after, ok := take(rest, "success")
			if !ok {
				continue // no exit either
			}
			rest = after
		}
		v, after, ok := take(rest, key)
		if !ok {
			return false
		}
		r.set(i, v)
		rest = after
	}
	f := Fields{rest: rest}
	k, v, ok := f.Next()
	if !ok || string(k) != "comm" {
		return false
	}
	r.CommRaw = v
	r.afterComm(&f)
	return true
}

// take reads "key=value" at the start of rest, and what follows it.
func take(rest []byte, key string) (val, after []byte, ok bool) {
	if len(rest) <= len(key) || rest[len(key)] != '=' || string(rest[:len(key)]) != key {
		return nil, rest, false
	}
	rest = rest[len(key)+1:]
	i := 0
	for i < len(rest) && rest[i] != ' ' {
		i++
	}
	if i < len(rest) {
		return rest[:i], rest[i+1:], true
	}
	return rest, nil, true
}

// Field returns the value of field key in a record body, decoded as the
// kernel logs untrusted strings (key="tracer" reads tracer), and whether
// the body has it.
func Field(body []byte, key string) (string, bool) {
	f := Fields{rest: body}
	for {
		k, v, ok := f.Next()
		if !ok {
			return "", false
		}
		if string(k) == key {
			return Untrusted(v), true
		}
	}
}

// LogRecord splits a line of auditd's log or of its plugin output
// (format = string), in its RAW or ENRICHED format
// ("type=SYSCALL msg=audit(1796012089.707:405546): arch=... \x1dARCH=..."),
// into the record type ("SYSCALL") and the record as the kernel sent it
// (for Header): auditd's ENRICHED fields after 0x1d are left out.
func LogRecord(line []byte) (typ string, msg []byte, ok bool) {
	if node, ok := bytes.CutPrefix(line, []byte("node=")); ok {
		// auditd's name_format puts the node's name first.
		if _, after, ok := bytes.Cut(node, []byte(" ")); ok {
			line = after
		}
	}
	rest, ok := bytes.CutPrefix(line, []byte("type="))
	if !ok {
		return "", nil, false
	}
	t, rest, ok := bytes.Cut(rest, []byte(" msg="))
	if !ok {
		return "", nil, false
	}
	if i := bytes.IndexByte(rest, 0x1d); i >= 0 {
		rest = rest[:i]
	}
	return string(t), bytes.TrimRight(rest, "\n"), true
}

// Execve gathers an exec's arguments from its EXECVE records, into the
// NUL-joined block that tracer.AppendArgv cuts as it cuts the eBPF side's
// (Args gives it).
// The kernel continues an argument too long for what is left of a record
// in the next record (aN_len=... aN[0]=..., then aN[1]=... and on), each
// piece quoted or hex on its own, so the argument being read is state kept
// across records. Bytes past vocab.ArgvBytesMax are parsed but not kept:
// an argument may be 128 KiB. The zero value is ready for an event.
type Execve struct {
	block []byte // arguments read, each with its NUL but an open one; at most vocab.ArgvBytesMax bytes
	cut   bool   // bytes left out: past the cap, or after a lost record
	open  bool   // the last argument in block has more pieces to come
	argc  int    // from argc=; 0 when not seen
	// argcSeen: argc= was read (an exec may have no arguments at all).
	argcSeen bool
	// begun counts the arguments begun, and piece is the last piece read of
	// the last one. A piece at or before it is a repeat (a handover reads
	// an event from two sockets) and is skipped.
	begun, piece int
	// want is the length the kernel gave (aN_len) of the argument it
	// splits into pieces, got what its pieces held so far; nextLen is an
	// aN_len read before its first piece.
	want, got, nextLen int
}

// Reset readies a for the next exec, keeping the block's storage when it
// holds at most keep bytes: most argv are short, and a reader keeping
// thousands of Execve must not have each hold a block of the cap's size.
func (a *Execve) Reset(keep int) {
	block := a.block[:0]
	if cap(block) > keep {
		block = nil
	}
	*a = Execve{block: block}
}

// Cap is how many bytes the block has room for.
func (a *Execve) Cap() int { return cap(a.block) }

// Parse reads one EXECVE record body.
func (a *Execve) Parse(body []byte) {
	f := Fields{rest: body}
	for {
		k, v, ok := f.Next()
		if !ok {
			return
		}
		if string(k) == "argc" {
			a.argc, a.argcSeen = int(DecInt(v)), true
			continue
		}
		if bytes.HasSuffix(k, []byte("_len")) {
			a.nextLen = int(DecInt(v))
			continue
		}
		n, piece, whole, ok := argKey(k)
		if !ok || n+1 < a.begun || n+1 == a.begun && piece <= a.piece {
			continue // aN_len, other fields, repeats
		}
		if n+1 != a.begun {
			a.closeArg()
			if n != a.begun || piece != 0 {
				a.cut = true // a record was lost: keep only what came before
			}
		} else if piece != a.piece+1 {
			a.cut = true
		}
		if n+1 != a.begun {
			a.want, a.got, a.nextLen = a.nextLen, 0, 0
		}
		a.begun, a.piece = n+1, piece
		a.got += pieceLen(v)
		a.add(v)
		a.open = true
		if whole {
			a.closeArg()
		}
	}
}

// argKey reads "aN" (whole, piece 0) and "aN[K]"; ok is false for any other key.
func argKey(k []byte) (n, piece int, whole, ok bool) {
	if len(k) < 2 || k[0] != 'a' {
		return 0, 0, false, false
	}
	num, idx, bracket := bytes.Cut(k[1:], []byte("["))
	if bracket {
		idx, ok = bytes.CutSuffix(idx, []byte("]"))
		p, okP := atou(idx)
		if !ok || !okP || p > 1<<30 {
			return 0, 0, false, false
		}
		piece = int(p)
	}
	v, ok := atou(num)
	if !ok || v > 1<<30 {
		return 0, 0, false, false
	}
	return int(v), piece, !bracket, true
}

// pieceLen is how many bytes of its argument a piece holds, decoded.
func pieceLen(v []byte) int {
	text, isHex := untrustedForm(v)
	if isHex && len(text)%2 == 0 {
		return len(text) / 2
	}
	return len(text)
}

// Complete reports whether the EXECVE records read so far held every
// argument whole: where the kernel builds neither PATH nor EOE records,
// an exec ends there.
func (a *Execve) Complete() bool {
	return a.argcSeen && a.begun == a.argc && (!a.open || a.want > 0 && a.got >= a.want)
}

// add appends a piece of an argument, decoded as Untrusted does, while
// there is room.
func (a *Execve) add(v []byte) {
	if a.cut {
		return
	}
	text, isHex := untrustedForm(v)
	room := vocab.ArgvBytesMax - len(a.block)
	if isHex {
		n, at := min(len(text)/2, room), len(a.block)
		a.block = slices.Grow(a.block, n)[:at+n]
		if _, err := hex.Decode(a.block[at:], text[:2*n]); err == nil && len(text)%2 == 0 {
			a.cut = n < len(text)/2
			return
		}
		a.block, text = a.block[:at], v // as Untrusted: not hex after all, kept as it came
	}
	n := min(len(text), room)
	a.block, a.cut = append(a.block, text[:n]...), n < len(text)
}

// closeArg ends the open argument with its NUL, which counts towards the
// cap as it does in the eBPF side's read.
func (a *Execve) closeArg() {
	if !a.open {
		return
	}
	a.open = false
	if a.cut || len(a.block) == vocab.ArgvBytesMax {
		a.cut = true
		return
	}
	a.block = append(a.block, 0)
}

// Args ends the arguments read: the NUL-joined block, how many arguments
// the exec had, and whether any bytes were left out, for
// tracer.AppendArgv. Parse reads no more of this exec after it.
func (a *Execve) Args() (block []byte, argc int, cut bool) {
	a.closeArg()
	if a.begun < a.argc {
		a.cut = true // the last records were lost
	}
	return a.block, max(a.argc, a.begun), a.cut
}

// Path returns item number and name of a PATH record.
func Path(body []byte) (item int, name string) {
	f := Fields{rest: body}
	item = -1
	for {
		k, v, ok := f.Next()
		if !ok {
			return item, name
		}
		switch string(k) {
		case "item":
			item = int(DecInt(v))
		case "name":
			return item, Untrusted(v)
		}
	}
}

// ObjPID returns the target pid of an OBJ_PID record.
func ObjPID(body []byte) int32 {
	f := Fields{rest: body}
	for {
		k, v, ok := f.Next()
		if !ok {
			return 0
		}
		if string(k) == "opid" {
			return int32(DecInt(v))
		}
	}
}

// ObjComm returns the target's comm of an OBJ_PID record (ocomm=),
// undecoded.
func ObjComm(body []byte) []byte {
	f := Fields{rest: body}
	for {
		k, v, ok := f.Next()
		if !ok {
			return nil
		}
		if bytes.Equal(k, []byte("ocomm")) {
			return v
		}
	}
}
