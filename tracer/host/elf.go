// SPDX-License-Identifier: Apache-2.0

package host

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// ELFClass returns 32 or 64 for an ELF header, 0 when b is not ELF.
func ELFClass(b []byte) int {
	if len(b) < 5 || string(b[:4]) != "\x7fELF" {
		return 0
	}
	switch b[4] {
	case 1:
		return 32
	case 2:
		return 64
	}
	return 0
}

// ExeClass reads the ELF class of process pid's executable under procRoot:
// 32, 64, or 0 when it is not ELF. The error wraps fs.ErrNotExist for a
// kernel thread (no executable) or a process that is gone, and io.EOF or
// io.ErrUnexpectedEOF for a file shorter than an ELF header's start.
func ExeClass(procRoot string, pid int) (int, error) {
	f, err := os.Open(filepath.Join(procRoot, strconv.Itoa(pid), "exe"))
	if err != nil {
		return 0, fmt.Errorf("reading the executable of process %d: %w", pid, err)
	}
	defer f.Close()
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return 0, fmt.Errorf("reading the executable of process %d: %w", pid, err)
	}
	return ELFClass(hdr), nil
}
