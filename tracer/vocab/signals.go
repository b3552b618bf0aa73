// SPDX-License-Identifier: Apache-2.0

package vocab

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Linux signal numbers (x86_64, arm64 and the generic ABI agree on these).
var signalNames = map[int]string{
	1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT",
	7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2",
	13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM", 16: "SIGSTKFLT", 17: "SIGCHLD",
	18: "SIGCONT", 19: "SIGSTOP", 20: "SIGTSTP", 21: "SIGTTIN", 22: "SIGTTOU",
	23: "SIGURG", 24: "SIGXCPU", 25: "SIGXFSZ", 26: "SIGVTALRM", 27: "SIGPROF",
	28: "SIGWINCH", 29: "SIGIO", 30: "SIGPWR", 31: "SIGSYS",
}

const (
	sigRTMin = 34
	sigRTMax = 64
)

// SignalName names signal n: SIGUSR1, SIGRTMIN+3, or SIG0 for the null
// signal that kill(pid, 0) uses to probe a process.
func SignalName(n int) string {
	if name, ok := signalNames[n]; ok {
		return name
	}
	switch {
	case n == 0:
		return "SIG0"
	case n == sigRTMin:
		return "SIGRTMIN"
	case n == sigRTMax:
		return "SIGRTMAX"
	case n > sigRTMin && n < sigRTMax:
		return "SIGRTMIN+" + strconv.Itoa(n-sigRTMin)
	}
	return "SIG" + strconv.Itoa(n)
}

// ParseSignal accepts a number (10), a name (USR1, SIGUSR1, usr1) or SIGRTMIN+N.
func ParseSignal(s string) (int, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 || n > sigRTMax {
			return 0, fmt.Errorf("signal %d out of range: use 0 to %d", n, sigRTMax)
		}
		return n, nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	for n, v := range signalNames {
		if v == name {
			return n, nil
		}
	}
	switch {
	case name == "SIGRTMIN":
		return sigRTMin, nil
	case name == "SIGRTMAX":
		return sigRTMax, nil
	case strings.HasPrefix(name, "SIGRTMIN+"):
		if k, err := strconv.Atoi(name[len("SIGRTMIN+"):]); err == nil && k >= 0 && sigRTMin+k <= sigRTMax {
			return sigRTMin + k, nil
		}
	}
	return 0, fmt.Errorf("unknown signal %q: use a number (10) or a name (USR1, SIGUSR1)", s)
}

// SignalSet is a set of signal numbers 0..64; the zero value means "all signals".
type SignalSet struct {
	bits uint128
	// keepPreemption and keepExistence: the set asks for the runtime noise
	// IsNoise leaves out (--signal URG, --signal 0, --signal all).
	keepPreemption, keepExistence bool
}

type uint128 struct{ lo, hi uint64 }

// sigURG is SIGURG, which the Go runtime sends its own threads to preempt.
const sigURG = 23

// ParseSignals parses a comma-separated list; an empty string means all
// signals but runtime noise (IsNoise), "all" every signal and signal 0.
// Naming URG or 0 asks for that noise too.
func ParseSignals(s string) (SignalSet, error) {
	var set SignalSet
	all := false
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "":
			continue
		case strings.EqualFold(f, "all"):
			all = true
			continue
		case f == "0":
			set.Add(0)
			set.keepExistence = true
			continue
		}
		n, err := ParseSignal(f)
		if err != nil {
			return SignalSet{}, err
		}
		set.Add(n)
		if n == sigURG {
			set.keepPreemption = true
		}
	}
	if all {
		return SignalSet{keepPreemption: true, keepExistence: true}, nil
	}
	return set, nil
}

// KeepsNoise reports whether the set asks for the runtime noise of reason r.
func (s SignalSet) KeepsNoise(r FilterReason) bool {
	if r == FilteredPreemption {
		return s.keepPreemption
	}
	return s.keepExistence
}

// Add puts signal n in the set.
func (s *SignalSet) Add(n int) {
	if n < 64 {
		s.bits.lo |= 1 << uint(n)
	} else {
		s.bits.hi |= 1 << uint(n-64)
	}
}

// All reports whether the set places no restriction.
func (s SignalSet) All() bool { return s.bits == uint128{} }

// Has reports whether signal n passes the set.
func (s SignalSet) Has(n int) bool {
	switch {
	case s.All():
		return true
	case n < 0 || n > sigRTMax:
		return false
	case n < 64:
		return s.bits.lo&(1<<uint(n)) != 0
	default:
		return s.bits.hi&(1<<uint(n-64)) != 0
	}
}

// List returns the signals in the set in ascending order (nil for all).
func (s SignalSet) List() []int {
	var out []int
	for n := 0; n <= sigRTMax; n++ {
		if !s.All() && s.Has(n) {
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out
}

// FilterReason is why an event was left out in the kernel rather than
// reported: runtime noise, or a selection filter (--uid, --comm, --exe,
// --auid-set) the eBPF backend applies there. Not a loss, and counted
// apart from it.
type FilterReason int

const (
	// FilteredPreemption: SIGURG a process's runtime sent to one of its
	// own threads (Go's asynchronous preemption), thousands a second in a
	// busy Go program.
	FilteredPreemption FilterReason = iota
	// FilteredExistence: signal 0, an existence check (kill(pid, 0)): no
	// signal is sent.
	FilteredExistence
	// FilteredUID: a real uid --uid does not name.
	FilteredUID
	// FilteredComm: a comm --comm does not name.
	FilteredComm
	// FilteredExe: an exec of a program --exe does not name.
	FilteredExe
	// FilteredAuidUnset: a process without a login uid, with --auid-set.
	FilteredAuidUnset
	NumFilterReasons
)

// NumNoiseReasons: the reasons below it are runtime noise.
const NumNoiseReasons = FilteredExistence + 1

var filterNames = [NumFilterReasons]string{"runtime-preemption", "existence-check", "uid", "comm", "exe", "auid-unset"}

func (r FilterReason) String() string { return filterNames[r] }

// IsNoise says whether a signal event is runtime noise the signal set
// does not ask for, and why: signal 0, or SIGURG sent by a
// thread-directed syscall (tgkill, tkill, rt_tgsigqueueinfo) to a thread
// of the sender's own process, tgid being the target's process. Both
// backends decide with it (the eBPF programs in the kernel, the same
// rule).
func IsNoise(set SignalSet, sig int, syscall string, tgid, senderTGID uint32) (FilterReason, bool) {
	switch {
	case sig == 0 && !set.keepExistence:
		return FilteredExistence, true
	case sig == sigURG && !set.keepPreemption && tgid == senderTGID &&
		(syscall == "tgkill" || syscall == "tkill" || syscall == "rt_tgsigqueueinfo"):
		return FilteredPreemption, true
	}
	return 0, false
}
