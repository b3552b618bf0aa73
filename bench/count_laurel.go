package bench

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/tracer-dev/tracer/tracer/audit"
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
		Key      *string         `json:"key"`
		Argv     []string        `json:"ARGV"` // a0 to a3, hex
		Name     json.RawMessage `json:"SYSCALL"`
		ArchName json.RawMessage `json:"ARCH"`
		PIDCtx   json.RawMessage `json:"PID"`
		PPIDCtx  json.RawMessage `json:"PPID"`
	} `json:"SYSCALL"`
}

// laurelSyscall reads a line of laurel's log: the SYSCALL record of its
// event as the audit log's parser gives it, and the rule's key; ok is
// false for a line with no SYSCALL record (CONFIG_CHANGE, DAEMON_END).
func laurelSyscall(line []byte) (rec audit.SyscallRecord, key string, ok bool) {
	// Most events of a busy node are the workload's; the check is cheap.
	if !bytes.Contains(line, []byte(`"SYSCALL":{`)) {
		return rec, "", false
	}
	var l laurelLine
	if err := json.Unmarshal(line, &l); err != nil || l.Syscall == nil {
		return rec, "", false
	}
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
