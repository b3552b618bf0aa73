// SPDX-License-Identifier: Apache-2.0

package vocab

import "testing"

func TestSigCodeName(t *testing.T) {
	cases := []struct {
		sig  int
		code int32
		want string
	}{
		// Generic codes, whatever the signal.
		{10, 0, "SI_USER"}, {9, 0x80, "SI_KERNEL"}, {10, -1, "SI_QUEUE"}, {14, -2, "SI_TIMER"},
		{34, -3, "SI_MESGQ"}, {34, -4, "SI_ASYNCIO"}, {29, -5, "SI_SIGIO"}, {15, -6, "SI_TKILL"},
		{9, -7, "SI_DETHREAD"}, {34, -60, "SI_ASYNCNL"}, {10, -42, "-42"},
		// Per-signal codes: the same number means different things.
		{11, 1, "SEGV_MAPERR"}, {11, 2, "SEGV_ACCERR"}, {11, 3, "SEGV_BNDERR"}, {11, 4, "SEGV_PKUERR"},
		{11, 5, "SEGV_ACCADI"}, {11, 6, "SEGV_ADIDERR"}, {11, 7, "SEGV_ADIPERR"}, {11, 8, "SEGV_MTEAERR"},
		{11, 9, "SEGV_MTESERR"}, {11, 10, "SEGV_CPERR"}, {11, 11, "11"},
		{7, 1, "BUS_ADRALN"}, {7, 2, "BUS_ADRERR"}, {7, 3, "BUS_OBJERR"}, {7, 4, "BUS_MCEERR_AR"}, {7, 5, "BUS_MCEERR_AO"},
		{8, 1, "FPE_INTDIV"}, {8, 2, "FPE_INTOVF"}, {8, 3, "FPE_FLTDIV"}, {8, 4, "FPE_FLTOVF"}, {8, 5, "FPE_FLTUND"},
		{8, 6, "FPE_FLTRES"}, {8, 7, "FPE_FLTINV"}, {8, 8, "FPE_FLTSUB"}, {8, 14, "FPE_FLTUNK"}, {8, 15, "FPE_CONDTRAP"},
		{4, 1, "ILL_ILLOPC"}, {4, 2, "ILL_ILLOPN"}, {4, 3, "ILL_ILLADR"}, {4, 4, "ILL_ILLTRP"}, {4, 5, "ILL_PRVOPC"},
		{4, 6, "ILL_PRVREG"}, {4, 7, "ILL_COPROC"}, {4, 8, "ILL_BADSTK"}, {4, 9, "ILL_BADIADDR"},
		{5, 1, "TRAP_BRKPT"}, {5, 2, "TRAP_TRACE"}, {5, 3, "TRAP_BRANCH"}, {5, 4, "TRAP_HWBKPT"}, {5, 5, "TRAP_UNK"}, {5, 6, "TRAP_PERF"},
		{17, 1, "CLD_EXITED"}, {17, 2, "CLD_KILLED"}, {17, 3, "CLD_DUMPED"}, {17, 4, "CLD_TRAPPED"}, {17, 5, "CLD_STOPPED"}, {17, 6, "CLD_CONTINUED"},
		{29, 1, "POLL_IN"}, {29, 2, "POLL_OUT"}, {29, 3, "POLL_MSG"}, {29, 4, "POLL_ERR"}, {29, 5, "POLL_PRI"}, {29, 6, "POLL_HUP"},
		{31, 1, "SYS_SECCOMP"}, {31, 2, "SYS_USER_DISPATCH"},
		// A positive code on a signal without codes of its own.
		{15, 1, "1"},
	}
	for _, c := range cases {
		if got := SigCodeName(c.sig, c.code); got != c.want {
			t.Errorf("SigCodeName(%s, %d) = %q, want %q", SignalName(c.sig), c.code, got, c.want)
		}
	}
}

func TestOriginAndSyscallCode(t *testing.T) {
	for sc, want := range map[string]Origin{
		"kill": OriginUser, "tkill": OriginUser, "tgkill": OriginUser, "rt_sigqueueinfo": OriginUser,
		"rt_tgsigqueueinfo": OriginUser, "pidfd_send_signal": OriginUser,
		"": OriginKernel, "write": OriginKernel, "exit_group": OriginKernel,
	} {
		if got := OriginOf(sc); got != want {
			t.Errorf("OriginOf(%q) = %v, want %v", sc, got, want)
		}
	}
	if OriginUser.String() != "user" || OriginKernel.String() != "kernel" || OriginUnknown.String() != "" {
		t.Error("origin names")
	}
	codes := []struct {
		sc   string
		info bool
		want string
		ok   bool
	}{
		{"kill", false, "SI_USER", true}, {"tkill", false, "SI_TKILL", true}, {"tgkill", false, "SI_TKILL", true},
		{"rt_sigqueueinfo", true, "SI_QUEUE", true}, {"rt_tgsigqueueinfo", true, "SI_QUEUE", true},
		{"pidfd_send_signal", false, "SI_USER", true}, {"pidfd_send_signal", true, "SI_QUEUE", true},
		{"execve", false, "", false},
	}
	for _, c := range codes {
		code, ok := SyscallCode(c.sc, c.info)
		if ok != c.ok || (ok && SigCodeName(10, code) != c.want) {
			t.Errorf("SyscallCode(%q, %v) = %d %v, want %s %v", c.sc, c.info, code, ok, c.want, c.ok)
		}
	}
}

func TestSignalResult(t *testing.T) {
	want := []string{"delivered", "ignored", "already_pending", "overflow", "lose_info"}
	for k, name := range want {
		if got := ResultFromKernel(k).String(); got != name {
			t.Errorf("result %d = %q, want %q", k, got, name)
		}
	}
	if ResultFromKernel(5) != ResultUnknown || ResultFromKernel(-1) != ResultUnknown || ResultUnknown.String() != "" {
		t.Error("out-of-range results must be unknown")
	}
}

func TestTerminatesByDefaultAndCore(t *testing.T) {
	fatal := map[int]bool{1: true, 2: true, 3: true, 6: true, 9: true, 10: true, 11: true, 13: true, 14: true, 15: true,
		17: false, 18: false, 19: false, 20: false, 21: false, 22: false, 23: false, 28: false, 24: true, 34: true, 64: true, 0: false, 65: false}
	for sig, want := range fatal {
		if TerminatesByDefault(sig) != want {
			t.Errorf("TerminatesByDefault(%s) = %v", SignalName(sig), !want)
		}
	}
	for sig := 1; sig <= 64; sig++ {
		core := sig == 3 || sig == 4 || sig == 5 || sig == 6 || sig == 7 || sig == 8 || sig == 11 || sig == 24 || sig == 25 || sig == 31
		if DumpsCore(sig) != core {
			t.Errorf("DumpsCore(%s) = %v", SignalName(sig), !core)
		}
	}
}
