//go:build linux

package bench

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
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

// kernelHZ is the kernel's tick rate (CONFIG_HZ), which audit's backlog
// wait figures count in, from /proc/config.gz or, without it, by watching
// jiffies in /proc/timer_list for 200 ms. 0 when neither is readable.
func kernelHZ() int {
	if f, err := os.Open("/proc/config.gz"); err == nil {
		defer f.Close()
		if z, err := gzip.NewReader(f); err == nil {
			sc := bufio.NewScanner(z)
			for sc.Scan() {
				if v, ok := strings.CutPrefix(sc.Text(), "CONFIG_HZ="); ok {
					if hz, err := strconv.Atoi(v); err == nil && hz > 0 {
						return hz
					}
				}
			}
		}
	}
	j0, t0, err := readJiffies()
	if err != nil {
		return 0
	}
	time.Sleep(200 * time.Millisecond)
	j1, t1, err := readJiffies()
	if err != nil {
		return 0
	}
	rate := float64(j1-j0) / t1.Sub(t0).Seconds()
	best := 0
	for _, hz := range []int{100, 250, 300, 1000} {
		if best == 0 || math.Abs(rate-float64(hz)) < math.Abs(rate-float64(best)) {
			best = hz
		}
	}
	return best
}

func readJiffies() (uint64, time.Time, error) {
	f, err := os.Open("/proc/timer_list")
	if err != nil {
		return 0, time.Time{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "jiffies: "); ok {
			j, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return j, time.Now(), err
		}
	}
	return 0, time.Time{}, fmt.Errorf("no jiffies in /proc/timer_list")
}

var (
	hzOnce sync.Once
	hz     int
)

// jiffiesToSeconds converts with the kernel's HZ, or returns -1 when unknown.
func jiffiesToSeconds(j float64) float64 {
	hzOnce.Do(func() { hz = kernelHZ() })
	if hz == 0 {
		return -1
	}
	return j / float64(hz)
}
