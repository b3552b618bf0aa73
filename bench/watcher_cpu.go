// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/node"
)

// parseStatCPU returns utime+stime in seconds from the text of
// /proc/PID/stat (host.ParseProcStat).
func parseStatCPU(stat string) (float64, error) {
	st, ok := host.ParseProcStat([]byte(stat))
	if !ok {
		return 0, fmt.Errorf("bad stat line %q", stat)
	}
	return float64(st.UTime+st.STime) / host.ClockTicks, nil
}

// procCPU is the user+sys time of process pid (all its threads) so far.
func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading CPU time of %d: %w", pid, err)
	}
	return parseStatCPU(string(b))
}

// findKthread returns the pid of the kernel thread named comm, or 0.
func findKthread(comm string) int {
	found := 0
	eachProcStat(func(pid int, st host.ProcStat) bool {
		// Kernel threads are children of kthreadd (pid 2).
		if st.Comm == comm && st.PPID == 2 {
			found = pid
			return false
		}
		return true
	})
	return found
}

// eachProcStat calls fn with the /proc/PID/stat of each process, until fn
// returns false. It reports whether /proc could be listed.
func eachProcStat(fn func(pid int, st host.ProcStat) bool) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if st, ok := host.ParseProcStat(b); ok && !fn(pid, st) {
			break
		}
	}
	return true
}

// cpuMeter measures a process's CPU from a start point: Start snapshots
// /proc, Since reads the difference.
type cpuMeter struct {
	pid   int
	start float64
	ok    bool
}

func startCPU(pid int) cpuMeter {
	if pid <= 0 {
		return cpuMeter{}
	}
	v, err := procCPU(pid)
	return cpuMeter{pid: pid, start: v, ok: err == nil}
}

// Since returns the CPU used since Start, or 0 when unreadable.
func (m cpuMeter) Since() float64 {
	if !m.ok {
		return 0
	}
	v, err := procCPU(m.pid)
	if err != nil || v < m.start {
		return 0
	}
	return v - m.start
}

// hostFacts reads the node's facts for bench: the mount table, the disks,
// the cgroup hierarchies and the kernel's HZ come from package node's
// readers, which doctor uses too, so that both say the same of a node.
// Tests point it at a recorded tree.
var hostFacts node.Reader

var (
	hzOnce sync.Once
	hz     int
)

// jiffiesToSeconds converts with the kernel's HZ (node.Reader.KernelHZ), or returns -1 when unknown.
func jiffiesToSeconds(j float64) float64 {
	hzOnce.Do(func() { hz, _ = hostFacts.KernelHZ() })
	if hz == 0 {
		return -1
	}
	return j / float64(hz)
}

// descendantsCPU is the CPU time so far of each process below root (its
// children, theirs, ...), by pid: the audit dispatcher's plugins.
func descendantsCPU(root int) map[int]float64 {
	parent := map[int]int{}
	cpu := map[int]float64{}
	if !eachProcStat(func(pid int, st host.ProcStat) bool {
		parent[pid] = int(st.PPID)
		cpu[pid] = float64(st.UTime+st.STime) / host.ClockTicks
		return true
	}) {
		return nil
	}
	out := map[int]float64{}
	for pid := range parent {
		for p, n := parent[pid], 0; p > 1 && n < 64; p, n = parent[p], n+1 {
			if p == root {
				out[pid] = cpu[pid]
				break
			}
		}
	}
	return out
}
