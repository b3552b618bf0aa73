// SPDX-License-Identifier: Apache-2.0

//go:build linux

package tracertest

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// BuildReach compiles reach.c, which reports what a process can reach of
// whoever started it (session, terminal, TIOCSTI, descriptors,
// environment), into a directory every user can run it from.
func BuildReach(t testing.TB) string {
	t.Helper()
	return compileOwn(t, sharedDir(t, 0o755), "reach")
}

// Reach is what reach reported.
type Reach struct {
	SID, TTY int
	TIOCSTI  string // "OK" or the error
	FDs      []int
	Env      []string
}

// ReachDir is a directory reach, run as any user, can write its report in.
func ReachDir(t testing.TB) string {
	t.Helper()
	return sharedDir(t, 0o777)
}

// sharedDir is a temporary directory other users can reach (t.TempDir's
// parent is root's alone), removed after the test.
func sharedDir(t testing.TB, mode os.FileMode) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tracer-reach")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	return dir
}

// ReadReach reads reach's report from path.
func ReadReach(t testing.TB, path string) Reach {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reach's report: %v", err)
	}
	var r Reach
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		k, v, _ := strings.Cut(l, " ")
		switch k {
		case "sid":
			r.SID, _ = strconv.Atoi(v)
		case "tty":
			r.TTY, _ = strconv.Atoi(v)
		case "tiocsti":
			r.TIOCSTI = v
		case "fd":
			n, _ := strconv.Atoi(v)
			r.FDs = append(r.FDs, n)
		case "env":
			r.Env = append(r.Env, v)
		}
	}
	return r
}
