// SPDX-License-Identifier: Apache-2.0

package vocab

import (
	"fmt"
	"strconv"
)

// Signal codes (si_code) as the kernel puts them in a signal's siginfo
// (include/uapi/asm-generic/siginfo.h). Codes of zero or below say how a
// process or the kernel's generic paths sent the signal; codes above zero
// (below SI_KERNEL) say why the kernel raised one particular signal, and
// their meaning depends on the signal: 1 is SEGV_MAPERR for SIGSEGV but
// BUS_ADRALN for SIGBUS.
const (
	SIUser    = 0    // kill(2), raise(3); also the kernel's send_sig(sig, task, 0), e.g. SIGPIPE
	SIKernel  = 0x80 // sent by the kernel without a reason code: OOM killer, tty, itimers
	SIQueue   = -1   // sigqueue(3), rt_sigqueueinfo(2)
	SITimer   = -2   // a POSIX timer expired
	SIMesgq   = -3   // a message arrived on an empty POSIX message queue
	SIAsyncio = -4   // asynchronous I/O completed
	SISigio   = -5   // queued SIGIO
	SITkill   = -6   // tkill(2), tgkill(2), pthread_kill(3)
	SIDethrd  = -7   // a sibling thread exec'd
	SIAsyncnl = -60  // asynchronous name lookup completed
)

var genericCodes = map[int32]string{
	SIUser: "SI_USER", SIKernel: "SI_KERNEL", SIQueue: "SI_QUEUE", SITimer: "SI_TIMER",
	SIMesgq: "SI_MESGQ", SIAsyncio: "SI_ASYNCIO", SISigio: "SI_SIGIO", SITkill: "SI_TKILL",
	SIDethrd: "SI_DETHREAD", SIAsyncnl: "SI_ASYNCNL",
}

// Signal numbers the per-signal codes belong to.
const (
	sigILL  = 4
	sigTRAP = 5
	sigBUS  = 7
	sigFPE  = 8
	sigSEGV = 11
	sigCHLD = 17
	sigPOLL = 29 // SIGIO
	sigSYS  = 31
)

// perSignalCodes names the positive codes, index = code - 1.
var perSignalCodes = map[int][]string{
	sigILL: {"ILL_ILLOPC", "ILL_ILLOPN", "ILL_ILLADR", "ILL_ILLTRP", "ILL_PRVOPC", "ILL_PRVREG",
		"ILL_COPROC", "ILL_BADSTK", "ILL_BADIADDR"},
	sigFPE: {"FPE_INTDIV", "FPE_INTOVF", "FPE_FLTDIV", "FPE_FLTOVF", "FPE_FLTUND", "FPE_FLTRES",
		"FPE_FLTINV", "FPE_FLTSUB", "FPE_DECOVF", "FPE_DECDIV", "FPE_DECERR", "FPE_INVASC",
		"FPE_INVDEC", "FPE_FLTUNK", "FPE_CONDTRAP"},
	sigSEGV: {"SEGV_MAPERR", "SEGV_ACCERR", "SEGV_BNDERR", "SEGV_PKUERR", "SEGV_ACCADI",
		"SEGV_ADIDERR", "SEGV_ADIPERR", "SEGV_MTEAERR", "SEGV_MTESERR", "SEGV_CPERR"},
	sigBUS:  {"BUS_ADRALN", "BUS_ADRERR", "BUS_OBJERR", "BUS_MCEERR_AR", "BUS_MCEERR_AO"},
	sigTRAP: {"TRAP_BRKPT", "TRAP_TRACE", "TRAP_BRANCH", "TRAP_HWBKPT", "TRAP_UNK", "TRAP_PERF"},
	sigCHLD: {"CLD_EXITED", "CLD_KILLED", "CLD_DUMPED", "CLD_TRAPPED", "CLD_STOPPED", "CLD_CONTINUED"},
	sigPOLL: {"POLL_IN", "POLL_OUT", "POLL_MSG", "POLL_ERR", "POLL_PRI", "POLL_HUP"},
	sigSYS:  {"SYS_SECCOMP", "SYS_USER_DISPATCH"},
}

// SigCodeName names si_code code of signal sig: SI_USER, SI_TKILL,
// SEGV_MAPERR, CLD_EXITED... A code the kernel headers do not name for
// that signal is given as its number.
func SigCodeName(sig int, code int32) string {
	if code <= 0 || code == SIKernel {
		if s, ok := genericCodes[code]; ok {
			return s
		}
		return strconv.Itoa(int(code))
	}
	if names := perSignalCodes[sig]; int(code) <= len(names) {
		return names[code-1]
	}
	return strconv.Itoa(int(code))
}

// Origin says who made a signal: a process, with one of the signal
// syscalls (kill, tgkill, rt_sigqueueinfo, pidfd_send_signal...), or the
// kernel on its own (faults, SIGPIPE, timers, the OOM killer, SIGCHLD, the
// terminal). The si_code alone cannot tell: the kernel sends SIGPIPE with
// SI_USER, and a process may queue any negative code.
type Origin uint8

// Origins; OriginUnknown is the zero value and is not printed.
const (
	OriginUnknown Origin = iota
	OriginUser
	OriginKernel
)

func (o Origin) String() string {
	switch o {
	case OriginUser:
		return "user"
	case OriginKernel:
		return "kernel"
	}
	return ""
}

// OriginOf is the origin of a signal generated while the current task was
// in syscall sc ("" when in none): user inside one of the signal syscalls,
// kernel otherwise.
func OriginOf(sc string) Origin {
	switch sc {
	case "kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_send_signal":
		return OriginUser
	}
	return OriginKernel
}

// SyscallCode is the si_code a signal syscall gives the signals it sends,
// for backends that see the syscall but not the siginfo (audit, the
// syscall tracepoints). infoArg says whether the caller passed a siginfo
// (pidfd_send_signal's third argument); rt_sigqueueinfo always does. The
// code in a caller's own siginfo cannot be read from the syscall record:
// SI_QUEUE is what sigqueue(3) and glibc put there. ok is false for a
// syscall that sends no signal.
func SyscallCode(sc string, infoArg bool) (code int32, ok bool) {
	switch sc {
	case "kill":
		return SIUser, true
	case "tkill", "tgkill":
		return SITkill, true
	case "rt_sigqueueinfo", "rt_tgsigqueueinfo":
		return SIQueue, true
	case "pidfd_send_signal":
		if infoArg {
			return SIQueue, true
		}
		return SIUser, true
	}
	return 0, false
}

// SignalResult is what the kernel did with a generated signal (the
// signal_generate tracepoint's result). The zero value means not known
// (audit, the syscall tracepoints).
type SignalResult uint8

// Results, the kernel's TRACE_SIGNAL_* plus one.
const (
	ResultUnknown        SignalResult = iota
	ResultDelivered                   // queued, or made the process die or stop
	ResultIgnored                     // the target ignores it (SIG_IGN, or default action ignore)
	ResultAlreadyPending              // a standard signal already pending: merged
	ResultOverflow                    // a real-time signal the queue had no room for (EAGAIN)
	ResultLoseInfo                    // delivered, without its siginfo (no memory for it)
)

var resultNames = [...]string{"", "delivered", "ignored", "already_pending", "overflow", "lose_info"}

// ResultFromKernel converts the tracepoint's result (0 = TRACE_SIGNAL_DELIVERED ...).
func ResultFromKernel(r int) SignalResult {
	if r < 0 || r >= len(resultNames)-1 {
		return ResultUnknown
	}
	return SignalResult(r + 1)
}

func (r SignalResult) String() string {
	if int(r) < len(resultNames) {
		return resultNames[r]
	}
	return ""
}

// TerminatesByDefault reports whether signal sig ends a process that
// keeps its default action (SIGCHLD, SIGCONT, SIGURG, SIGWINCH and the
// stop signals do not).
func TerminatesByDefault(sig int) bool {
	switch sig {
	case 17, 18, 19, 20, 21, 22, 23, 28: // CHLD CONT STOP TSTP TTIN TTOU URG WINCH
		return false
	}
	return sig > 0 && sig <= sigRTMax
}

// DumpsCore reports whether signal sig's default action dumps core.
func DumpsCore(sig int) bool {
	switch sig {
	case 3, 4, 5, 6, 7, 8, 11, 24, 25, 31: // QUIT ILL TRAP ABRT BUS FPE SEGV XCPU XFSZ SYS
		return true
	}
	return false
}

// OriginNamed is the origin a name names (String's inverse).
func OriginNamed(s string) Origin {
	for _, o := range []Origin{OriginUser, OriginKernel} {
		if o.String() == s {
			return o
		}
	}
	return OriginUnknown
}

// ResultNamed is the result a name names (String's inverse).
func ResultNamed(s string) SignalResult {
	for r := range resultNames {
		if r > 0 && resultNames[r] == s {
			return SignalResult(r)
		}
	}
	return ResultUnknown
}

// SigCodeNamed is SigCodeName's inverse: the si_code of signal sig that
// name names (a number for codes the headers do not name).
func SigCodeNamed(sig int, name string) (int32, error) {
	for code, n := range genericCodes {
		if n == name {
			return code, nil
		}
	}
	for i, n := range perSignalCodes[sig] {
		if n == name {
			return int32(i + 1), nil
		}
	}
	v, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("unknown signal code %q", name)
	}
	return int32(v), nil
}
