// SPDX-License-Identifier: Apache-2.0

package auditrules

import "github.com/tracer-dev/tracer/tracer/host"

// Detect32Bit looks for a running 32-bit process under procRoot: an
// executable whose ELF class says ELFCLASS32. It returns the first one
// found. Kernel threads and processes that vanish while being read are
// skipped.
func Detect32Bit(procRoot string) (pid int, comm string, found bool) {
	// No /proc to scan: no 32-bit process known, and the b32 rules stay out
	// unless --arch asks for them.
	_ = host.ScanProcs(procRoot, func(p host.Proc) bool {
		if p.Class == 32 {
			pid, comm, found = p.PID, p.Comm, true
		}
		return !found
	})
	return pid, comm, found
}
