// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package tracer

import (
	"fmt"
	"runtime"
)

func readProcLineage(ExecID) (string, ExecID, bool) { return "", ExecID{}, false }

// ReadProcIdentity needs /proc: only Linux has it.
func ReadProcIdentity(pid uint32) (ProcIdentity, error) {
	return ProcIdentity{}, fmt.Errorf("reading process %d: needs Linux (this is %s)", pid, runtime.GOOS)
}

// ReadProcParts needs /proc: only Linux has it.
func ReadProcParts(pid uint32, stat, cgroup bool) (ProcIdentity, error) {
	return ReadProcIdentity(pid)
}
