// SPDX-License-Identifier: Apache-2.0

//go:build unix

package tracer

import (
	"errors"
	"syscall"
)

// ProcessAlive reports whether a process with this pid exists (signal 0;
// EPERM means it exists and belongs to someone else).
func ProcessAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
