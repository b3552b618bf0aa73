// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/tracer-dev/tracer/tracer/auparse"
)

// laurelLine is what counting needs of a line of laurel's JSON log: one
// audit event, its records as members. laurel adds to the SYSCALL record
// upper-case members of its own (ARCH, SYSCALL, PID, PPID: names and
// context) beside the kernel's lower-case fields; encoding/json matches
// names without regard to case, so both are declared, each taking its own.
type laurelLine struct {
	Syscall *struct {
		Arch     string          `json:"arch"`
		Syscall  int             `json:"syscall"`
		Exit     *int64          `json:"exit"`
		PID      uint32          `json:"pid"`
		PPID     uint32          `json:"ppid"`
		AUID     uint32          `json:"auid"`
		UID      uint32          `json:"uid"`
		Key      *string         `json:"key"`
		UIDName  json.RawMessage `json:"UID"`
		AUIDName json.RawMessage `json:"AUID"`
		Argv     []string        `json:"ARGV"` // a0 to a3, hex
		Name     json.RawMessage `json:"SYSCALL"`
		ArchName json.RawMessage `json:"ARCH"`
		PIDCtx   json.RawMessage `json:"PID"`
		PPIDCtx  json.RawMessage `json:"PPID"`
	} `json:"SYSCALL"`
	Execve *struct {
		Argc int            `json:"argc"`
		Argv []laurelString `json:"ARGV"`
	} `json:"EXECVE"`
	// laurel 0.5 writes ANOM_ABEND as an array of one record.
	AnomAbend []struct {
		PID     uint32          `json:"pid"`
		UID     uint32          `json:"uid"`
		Sig     int             `json:"sig"`
		PIDCtx  json.RawMessage `json:"PID"`
		UIDName json.RawMessage `json:"UID"`
	} `json:"ANOM_ABEND"`
}

// laurelEvent is what the fidelity test reads of a line of laurel's log:
// the SYSCALL record and its key, the EXECVE record's arguments, or an
// ANOM_ABEND record (a process ended by a core-dumping signal, which the
// kernel reports without a rule).
type laurelEvent struct {
	Syscall    auparse.Syscall
	HasSyscall bool
	Key        string
	Argv       []string // EXECVE, when present
	Argc       int
	// ANOM_ABEND
	AbendPID uint32
	AbendUID uint32
	AbendSig int
}

// parseLaurel reads a line of laurel's log; ok is false for a line that
// is not JSON or holds neither a SYSCALL nor an ANOM_ABEND record.
func parseLaurel(line []byte) (e laurelEvent, ok bool) {
	var l laurelLine
	if err := json.Unmarshal(line, &l); err != nil {
		return e, false
	}
	if len(l.AnomAbend) == 1 {
		a := l.AnomAbend[0]
		e.AbendPID, e.AbendUID, e.AbendSig = a.PID, a.UID, a.Sig
		ok = true
	}
	if l.Syscall != nil {
		if e.Syscall, e.Key, e.HasSyscall = l.syscall(); e.HasSyscall {
			e.Syscall.UID, e.Syscall.AUID = l.Syscall.UID, l.Syscall.AUID
			ok = true
		}
	}
	if x := l.Execve; x != nil {
		e.Argc = x.Argc
		for _, a := range x.Argv {
			e.Argv = append(e.Argv, string(a))
		}
	}
	return e, ok
}

// laurelSyscall reads a line of laurel's log: the SYSCALL record of its
// event as the audit log's parser gives it, and the rule's key; ok is
// false for a line with no SYSCALL record (CONFIG_CHANGE, DAEMON_END).
func laurelSyscall(line []byte) (rec auparse.Syscall, key string, ok bool) {
	// Most events of a busy node are the workload's; the check is cheap.
	if !bytes.Contains(line, []byte(`"SYSCALL":{`)) {
		return rec, "", false
	}
	var l laurelLine
	if err := json.Unmarshal(line, &l); err != nil || l.Syscall == nil {
		return rec, "", false
	}
	return l.syscall()
}

func (l *laurelLine) syscall() (rec auparse.Syscall, key string, ok bool) {
	s := l.Syscall
	arch, err := strconv.ParseUint(strings.TrimPrefix(s.Arch, "0x"), 16, 32)
	if err != nil {
		return rec, "", false
	}
	rec.Arch, rec.Syscall, rec.PID, rec.PPID = uint32(arch), s.Syscall, s.PID, s.PPID
	if s.Exit != nil {
		rec.HasExit, rec.Exit = true, *s.Exit
	}
	for i := 0; i < len(s.Argv) && i < len(rec.Args); i++ {
		rec.Args[i], _ = strconv.ParseUint(strings.TrimPrefix(s.Argv[i], "0x"), 16, 64)
	}
	if s.Key != nil {
		key = *s.Key
	}
	return rec, key, true
}

// laurelString is a string as laurel writes it: JSON, with control
// characters, bytes that are not UTF-8, and '%' itself written as %XX
// (laurel 0.5's escaping of the values it takes from a record).
type laurelString string

func (s *laurelString) UnmarshalJSON(b []byte) error {
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if !strings.Contains(v, "%") {
		*s = laurelString(v)
		return nil
	}
	out := make([]byte, 0, len(v))
	for i := 0; i < len(v); i++ {
		if v[i] == '%' && i+2 < len(v) {
			if x, err := strconv.ParseUint(v[i+1:i+3], 16, 8); err == nil {
				out = append(out, byte(x))
				i += 2
				continue
			}
		}
		out = append(out, v[i])
	}
	*s = laurelString(out)
	return nil
}
