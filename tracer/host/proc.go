// SPDX-License-Identifier: Apache-2.0

package host

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
)

// ClockTicks is USER_HZ: the unit of /proc/PID/stat's starttime.
const ClockTicks = 100

// TicksFromNS converts a kernel boot-time timestamp in ns to clock ticks,
// rounding down as the kernel's nsec_to_clock_t does.
func TicksFromNS(ns uint64) uint64 { return ns / (1e9 / ClockTicks) }

var (
	bootOnce sync.Once
	bootID   string
)

// BootID is the first 16 hex digits of the kernel's boot id
// (/proc/sys/kernel/random/boot_id), which make exec ids of different
// boots, and so of different nodes, distinct. "0" where it cannot be read.
func BootID() string {
	bootOnce.Do(func() { bootID = shortBootID(readBootID()) })
	return bootID
}

func shortBootID(raw []byte) string {
	var b []byte
	for _, c := range bytes.TrimSpace(raw) {
		if c == '-' {
			continue
		}
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "0"
		}
		b = append(b, c)
		if len(b) == 16 {
			break
		}
	}
	if len(b) == 0 {
		return "0"
	}
	return string(b)
}

// ProcComm reads process pid's comm (/proc/PID/comm), the one reader of
// it; ok is false when the process is gone.
func ProcComm(pid uint32) (comm string, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/comm")
	return strings.TrimSpace(string(b)), err == nil
}

// ProcExe reads the path of a live process's executable (/proc/PID/exe).
func ProcExe(pid uint32) (exe string, ok bool) {
	exe, err := os.Readlink("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/exe")
	return exe, err == nil
}

// ProcStat is what the project reads of a /proc/PID/stat line (proc(5)).
type ProcStat struct {
	Comm         string
	State        byte // R, S, D, Z (zombie: it has exited), ...
	PPID         uint32
	UTime, STime uint64 // CPU time of all its threads, in clock ticks (ClockTicks a second)
	Start        uint64 // starttime: clock ticks after boot
}

// ParseProcStat reads a /proc/PID/stat line: the one parser of it. The
// comm in parentheses may hold spaces and parentheses itself: fields are
// counted after its last ')'. Not procfs's Proc.Stat: that one opens the
// file itself and fills fifty fields, while the backends parse bytes they
// read once per new process, on the event path, and tests parse recorded
// lines.
func ParseProcStat(stat []byte) (ProcStat, bool) {
	open, i := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || i < open {
		return ProcStat{}, false
	}
	f := bytes.Fields(stat[i+1:])
	// f[0] is field 3 (state): ppid is f[1], utime f[11], stime f[12],
	// starttime f[19].
	if len(f) < 20 {
		return ProcStat{}, false
	}
	p, err1 := strconv.ParseUint(string(f[1]), 10, 32)
	ut, err2 := strconv.ParseUint(string(f[11]), 10, 64)
	st, err3 := strconv.ParseUint(string(f[12]), 10, 64)
	s, err4 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return ProcStat{}, false
	}
	return ProcStat{Comm: string(stat[open+1 : i]), State: f[0][0], PPID: uint32(p), UTime: ut, STime: st, Start: s}, true
}

// ParseStat reads the parent pid (field 4) and starttime (field 22) of a
// /proc/PID/stat line (ParseProcStat).
func ParseStat(stat []byte) (ppid uint32, start uint64, ok bool) {
	st, ok := ParseProcStat(stat)
	return st.PPID, st.Start, ok
}

// ParseProcCgroup picks the cgroup path from a /proc/PID/cgroup file (for
// the reasons ParseProcStat gives, not through procfs's Proc.Cgroups): the
// cgroup v2 line ("0::/system.slice/x.service"), else the v1 name=systemd
// line, which systemd keeps parallel to it on hybrid nodes.
func ParseProcCgroup(data []byte) (string, bool) {
	var v1 string
	found := false
	for _, line := range bytes.Split(data, []byte("\n")) {
		id, rest, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		ctrl, path, ok := bytes.Cut(rest, []byte(":"))
		if !ok {
			continue
		}
		if string(id) == "0" && len(ctrl) == 0 {
			return string(path), true
		}
		if string(ctrl) == "name=systemd" {
			v1, found = string(path), true
		}
	}
	return v1, found
}
