// SPDX-License-Identifier: Apache-2.0

//go:build linux

package tracertest

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/host"
)

// BuildDeaths compiles deaths.c, the processes that die in known ways.
func BuildDeaths(t testing.TB) string {
	t.Helper()
	return compileOwn(t, t.TempDir(), "deaths")
}

// DeathProc is one process deaths made, as it reported itself.
type DeathProc struct {
	Role   string
	ExecID tracer.ExecID
	PPID   uint32
	Status int // the wait status its parent reaped (-1: not reaped by deaths)
}

// DeathsOutput is what deaths printed, by role (a role may repeat: reuse).
type DeathsOutput struct {
	Procs []DeathProc
}

// Proc returns the n-th process of role (0-based).
func (o DeathsOutput) Proc(role string, n int) (DeathProc, bool) {
	for _, p := range o.Procs {
		if p.Role == role {
			if n == 0 {
				return p, true
			}
			n--
		}
	}
	return DeathProc{}, false
}

// ParseDeaths reads deaths's stdout.
func ParseDeaths(out []byte) DeathsOutput {
	var o DeathsOutput
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 4 && f[0] == "status":
			pid, _ := strconv.ParseUint(f[2], 10, 32)
			st, _ := strconv.Atoi(f[3])
			for i := len(o.Procs) - 1; i >= 0; i-- {
				if o.Procs[i].Role == f[1] && o.Procs[i].ExecID.PID == uint32(pid) {
					o.Procs[i].Status = st
					break
				}
			}
		case len(f) == 4:
			pid, _ := strconv.ParseUint(f[1], 10, 32)
			start, _ := strconv.ParseUint(f[2], 10, 64)
			ppid, _ := strconv.ParseUint(f[3], 10, 32)
			o.Procs = append(o.Procs, DeathProc{Role: f[0], ExecID: tracer.ExecID{PID: uint32(pid), Start: start}, PPID: uint32(ppid), Status: -1})
		}
	}
	return o
}

// Cgroup2 returns where the cgroup v2 hierarchy is mounted, or skips t.
func Cgroup2(t testing.TB) string {
	t.Helper()
	m, err := host.CgroupMount()
	if err != nil {
		t.Skipf("no cgroup v2 hierarchy: %v", err)
	}
	return m
}

// MakeCgroup creates the cgroup rel (and its parents) under mount and
// removes them when the test ends, once their processes are gone. It
// returns the directory.
func MakeCgroup(t testing.TB, mount, rel string) string {
	t.Helper()
	rel = strings.Trim(rel, "/")
	var made []string
	dir := mount
	for _, part := range strings.Split(rel, "/") {
		dir = filepath.Join(dir, part)
		if _, err := os.Stat(dir); err == nil {
			continue
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatalf("creating cgroup %s: %v", dir, err)
		}
		made = append(made, dir)
	}
	t.Cleanup(func() {
		for i := len(made) - 1; i >= 0; i-- {
			var err error
			for try := 0; try < 100; try++ { // the last member may still be exiting
				if err = os.Remove(made[i]); err == nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err != nil {
				t.Errorf("removing cgroup %s: %v", made[i], err)
			}
		}
	})
	return dir
}

// MemoryCgroup creates a cgroup limited to limit bytes of memory on the
// hierarchy that has the memory controller (v2 memory.max, or v1
// memory.limit_in_bytes on a hybrid node), removed when the test ends. It
// returns the cgroup's cgroup.procs file, or skips t.
func MemoryCgroup(t testing.TB, name string, limit int64) string {
	t.Helper()
	if m, err := host.CgroupMount(); err == nil {
		if slices.Contains(host.CgroupControllers(m), "memory") {
			if !slices.Contains(host.CgroupSubtree(m), "memory") {
				t.Skip("the cgroup v2 root does not delegate the memory controller (cgroup.subtree_control)")
			}
			dir := MakeCgroup(t, m, name)
			writeFile(t, filepath.Join(dir, "memory.max"), strconv.FormatInt(limit, 10))
			writeFile(t, filepath.Join(dir, "memory.swap.max"), "0")
			return filepath.Join(dir, "cgroup.procs")
		}
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory/memory.limit_in_bytes"); err == nil {
		dir := MakeCgroup(t, "/sys/fs/cgroup/memory", name)
		writeFile(t, filepath.Join(dir, "memory.limit_in_bytes"), strconv.FormatInt(limit, 10))
		return filepath.Join(dir, "cgroup.procs")
	}
	t.Skip("no memory controller on this node")
	return ""
}

func writeFile(t testing.TB, path, v string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(v), 0o644); err != nil {
		if strings.HasSuffix(path, "swap.max") {
			return // no swap accounting: nothing to limit
		}
		t.Fatalf("writing %s: %v", path, err)
	}
}

// Events returns a copy of every event c collected.
func (c *Collector) Events() []tracer.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]tracer.Event(nil), c.events...)
}
