// SPDX-License-Identifier: Apache-2.0

package host

// Detect32Bit looks for a running 32-bit process under procRoot: an
// executable whose ELF class says ELFCLASS32. It returns the first one
// found. Kernel threads and processes that vanish while being read are
// skipped. Callers pass the answer to auditrules (Options.Has32Bit), which
// builds rules from the vocabulary alone.
func Detect32Bit(procRoot string) (pid int, comm string, found bool) {
	// No /proc to scan: no 32-bit process known, and the b32 rules stay out
	// unless --arch asks for them.
	_ = ScanProcs(procRoot, func(p Proc) bool {
		if p.Class == 32 {
			pid, comm, found = p.PID, p.Comm, true
		}
		return !found
	})
	return pid, comm, found
}

// Running32Bit is Detect32Bit on the running node's /proc, in the shape
// auditrules.Options.Has32Bit takes.
func Running32Bit() (pid int, comm string, found bool) { return Detect32Bit("/proc") }
