// SPDX-License-Identifier: Apache-2.0

package vocab

// ExitStatus is how a process ended, decoded from a wait status (the
// kernel's exit_code: the exit code in bits 8-15, or the killing signal in
// bits 0-6 with the core flag in bit 7).
type ExitStatus struct {
	Exited     bool // ended by exit(2) or exit_group(2), or returning from main
	Code       int  // the exit code, 0-255, when Exited
	Signal     int  // the signal that killed it, when not Exited
	CoreDumped bool // the kernel wrote a core file (or piped it to core_pattern)
}

// DecodeWaitStatus splits a wait status. A stopped or continued status
// (0x7f, 0xffff) is not an exit and decodes as neither.
func DecodeWaitStatus(status uint32) ExitStatus {
	switch sig := int(status & 0x7f); {
	case sig == 0:
		return ExitStatus{Exited: true, Code: int(status>>8) & 0xff}
	case sig == 0x7f || status == 0xffff:
		return ExitStatus{}
	default:
		return ExitStatus{Signal: sig, CoreDumped: status&0x80 != 0}
	}
}

// WaitStatus encodes s back (the inverse of DecodeWaitStatus).
func (s ExitStatus) WaitStatus() uint32 {
	if s.Exited {
		return uint32(s.Code&0xff) << 8
	}
	st := uint32(s.Signal & 0x7f)
	if s.CoreDumped {
		st |= 0x80
	}
	return st
}

// ExitCause is the bounded label of tracer_exits_total.
type ExitCause uint8

// Exit causes: an exit call, a signal, the OOM killer's SIGKILL, a signal
// that dumped core.
const (
	CauseExit ExitCause = iota
	CauseSignal
	CauseOOM
	CauseCore
	NumExitCauses
)

var causeNames = [...]string{"exit", "signal", "oom", "core"}

func (c ExitCause) String() string { return causeNames[c] }
