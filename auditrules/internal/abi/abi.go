// SPDX-License-Identifier: Apache-2.0

// Package abi holds the syscall ABI facts that audit rules depend on: the
// one table of each machine's audit ABIs (the AUDIT_ARCH value the kernel
// writes in a SYSCALL record's arch field for the machine's 64-bit
// syscalls and for the 32-bit ones its kernel also runs, and the
// go-libaudit syscall table that names their numbers), and the argument
// registers of the signal syscalls. Package auditrules exports them
// (ArchValue, SyscallName, SignalArg, TargetArg); they are a package of
// their own so that the rule-cost analyser in auditrules/cost reads the
// same tables without importing auditrules.
package abi

import (
	"sort"

	"github.com/elastic/go-libaudit/v2/auparse"
)

// machines maps a machine (uname -m) to the Go architecture that runs on
// it, the audit arch of its 64-bit ABI and that of its 32-bit one.
var machines = map[string]struct {
	goarch   string
	b64, b32 auparse.AuditArch
}{
	"x86_64":  {"amd64", auparse.AUDIT_ARCH_X86_64, auparse.AUDIT_ARCH_I386},
	"aarch64": {"arm64", auparse.AUDIT_ARCH_AARCH64, auparse.AUDIT_ARCH_ARM},
	"ppc64le": {"ppc64le", auparse.AUDIT_ARCH_PPC64LE, auparse.AUDIT_ARCH_PPC},
	"ppc64":   {"ppc64", auparse.AUDIT_ARCH_PPC64, auparse.AUDIT_ARCH_PPC},
	"s390x":   {"s390x", auparse.AUDIT_ARCH_S390X, auparse.AUDIT_ARCH_S390},
}

// MachineOf is the machine (uname -m) a Go architecture (GOARCH) runs on;
// goarch itself for one the table does not have.
func MachineOf(goarch string) string {
	for name, m := range machines {
		if m.goarch == goarch {
			return name
		}
	}
	return goarch
}

// other32 are further names of 32-bit ABIs that -F arch= may hold.
var other32 = []string{"i686", "armeb"}

// Machines lists the machines the table has, sorted.
func Machines() []string {
	names := make([]string, 0, len(machines))
	for m := range machines {
		names = append(names, m)
	}
	sort.Strings(names)
	return names
}

// Known reports whether the table has machine.
func Known(machine string) bool {
	_, ok := machines[machine]
	return ok
}

// Arch returns the AUDIT_ARCH value of machine's 64-bit ABI, or of its
// 32-bit one when b32; 0 for a machine the table does not have.
func Arch(machine string, b32 bool) uint32 {
	a, ok := machines[machine]
	if !ok {
		return 0
	}
	if b32 {
		return uint32(a.b32)
	}
	return uint32(a.b64)
}

// Table names the go-libaudit syscall table (a key of
// auparse.AuditSyscalls) of machine's 64-bit or 32-bit ABI; "" for a
// machine the table does not have.
func Table(machine string, b32 bool) string {
	return auparse.AuditArchNames[auparse.AuditArch(Arch(machine, b32))]
}

// SyscallName names syscall nr of the ABI whose AUDIT_ARCH value is arch
// (a SYSCALL record's arch field), "" when either is unknown.
func SyscallName(arch uint32, nr int) string {
	return auparse.AuditSyscalls[auparse.AuditArchNames[auparse.AuditArch(arch)]][nr]
}

// ABI reads an arch as `-F arch=` gives it (b64, b32, or the name of an
// ABI such as x86_64 or i386) and returns "b64" or "b32"; a name the table
// does not have comes back unchanged.
func ABI(name string) string {
	switch name {
	case "b64", "b32":
		return name
	}
	for _, a := range machines {
		switch name {
		case auparse.AuditArchNames[a.b64]:
			return "b64"
		case auparse.AuditArchNames[a.b32]:
			return "b32"
		}
	}
	for _, n := range other32 {
		if name == n {
			return "b32"
		}
	}
	return name
}

// SignalArg is the argument register that holds the signal number of each
// signal syscall (auditrules.SignalArg says why it matters).
var SignalArg = map[string]int{
	"kill": 1, "tkill": 1, "rt_sigqueueinfo": 1, "pidfd_send_signal": 1,
	"tgkill": 2, "rt_tgsigqueueinfo": 2,
}

// TargetArg is the argument that names the signalled process or thread;
// -1 for pidfd_send_signal, which names it by a pidfd.
var TargetArg = map[string]int{
	"kill": 0, "tkill": 0, "rt_sigqueueinfo": 0, "pidfd_send_signal": -1,
	"tgkill": 1, "rt_tgsigqueueinfo": 1,
}
