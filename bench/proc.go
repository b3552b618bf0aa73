//go:build linux

package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/tracer-dev/tracer/tracer/node"
)

// userHZ is the unit of /proc/PID/stat times: USER_HZ, 100 on every
// architecture Linux exports to user space.
const userHZ = 100

// parseStatCPU returns utime+stime in seconds from the text of
// /proc/PID/stat. The comm field may hold spaces and parentheses, so the
// fields are counted from the last ')'.
func parseStatCPU(stat string) (float64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("no comm in stat line %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	// After comm: state(3) ppid ... utime(14) stime(15), so 11 and 12 here.
	if len(f) < 13 {
		return 0, fmt.Errorf("short stat line %q", stat)
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bad utime/stime in stat line %q", stat)
	}
	return float64(ut+st) / userHZ, nil
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
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
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
		s := string(b)
		// Kernel threads are children of kthreadd (pid 2).
		if strings.Contains(s, "("+comm+")") {
			if i := strings.LastIndexByte(s, ')'); i >= 0 {
				if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == "2" {
					return pid
				}
			}
		}
	}
	return 0
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
