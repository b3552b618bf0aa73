// SPDX-License-Identifier: Apache-2.0

package host

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/prometheus/procfs"
)

// Proc is a process as ScanProcs finds it.
type Proc struct {
	PID  int
	Comm string
	// Class is the ELF class of its executable (ExeClass): 32, 64, or 0
	// when it is not ELF or could not be read (Err).
	Class int
	// Err says why the executable could not be read (not root, ...).
	Err error
}

// ScanProcs calls fn for every process under procRoot with the ELF class
// of its executable, until fn returns false: the one scan of the processes, for doctor's facts and for auditrules, whose b32
// rules a running 32-bit process needs. Kernel threads (no executable)
// and processes that exit while being read are skipped.
func ScanProcs(procRoot string, fn func(Proc) bool) error {
	pfs, err := procfs.NewFS(procRoot)
	if err != nil {
		return fmt.Errorf("scanning processes: %w", err)
	}
	procs, err := pfs.AllProcs()
	if err != nil {
		return fmt.Errorf("scanning processes: %w", err)
	}
	for _, p := range procs {
		class, err := ExeClass(procRoot, p.PID)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			continue // kernel thread or exited
		}
		comm, _ := p.Comm()
		if !fn(Proc{PID: p.PID, Comm: comm, Class: class, Err: err}) {
			break
		}
	}
	return nil
}

// ExePath is the path of process pid's executable under procRoot, "" when
// it cannot be read.
func ExePath(procRoot string, pid int) string {
	pfs, err := procfs.NewFS(procRoot)
	if err != nil {
		return ""
	}
	p, err := pfs.Proc(pid)
	if err != nil {
		return ""
	}
	exe, _ := p.Executable()
	return exe
}
