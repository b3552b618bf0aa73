// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// CommMax is the longest comm the kernel keeps (TASK_COMM_LEN 16, less its NUL).
const CommMax = 15

// TreeRoots are the processes whose trees --pid keeps: PID and PIDs.
func (c Config) TreeRoots() []uint32 {
	var roots []uint32
	if c.PID != 0 {
		roots = append(roots, c.PID)
	}
	return append(roots, c.PIDs...)
}

// ParseComms reads a --comm list: comms separated by commas, each at most
// CommMax bytes, since a longer one could never match.
func ParseComms(s string) ([]string, error) {
	var out []string
	for _, f := range SplitList(s) {
		if err := CheckComm("--comm", f); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// CheckComm refuses a comm the kernel's could never equal.
func CheckComm(flag, comm string) error {
	if len(comm) > CommMax {
		return vocab.Usagef("%s %q is longer than the kernel's %d-byte comm: give its first %d characters %q (or match an exec's program with --exe)",
			flag, comm, CommMax, CommMax, comm[:CommMax])
	}
	return nil
}

// ParseIDs reads a comma list of pids or uids for flag (--pid, --uid).
// With live set, each must name a running process.
func ParseIDs(flag, s string, live bool) ([]uint32, error) {
	var out []uint32
	for _, f := range SplitList(s) {
		n, err := strconv.ParseUint(f, 10, 32)
		if err != nil || (live && n == 0) {
			return nil, vocab.Usagef("bad %s %q: give numbers separated by commas", flag, f)
		}
		if live && !ProcessAlive(int(n)) {
			return nil, vocab.Usagef("%s %d: no such process: give the pid of a running process (ps -e lists them)", flag, n)
		}
		if !slices.Contains(out, uint32(n)) {
			out = append(out, uint32(n))
		}
	}
	return out, nil
}

// SplitList splits a comma list (a flag that takes several values),
// dropping empty items and spaces.
func SplitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// MatchExe reports whether an exec of filename runs the program exe: the
// same path, or, for an exe without a slash, the same last element.
func MatchExe(filename, exe string) bool {
	if strings.Contains(exe, "/") {
		return filepath.Clean(filename) == filepath.Clean(exe)
	}
	return filepath.Base(filename) == exe
}
