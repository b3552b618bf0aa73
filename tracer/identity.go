package tracer

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
)

// ExecID names a process for the life of a boot, where a pid alone is
// reused: its pid (the thread group id, in the initial pid namespace) and
// its start time in clock ticks since boot, printed after the boot id as
// "BOOTID:START:PID". Both backends can produce it exactly: the eBPF
// programs read the group leader's start_boottime (ns) and divide by 10 ms,
// which is what the kernel prints as starttime (field 22) in
// /proc/PID/stat, where the audit backend reads it. A tick is 1/USER_HZ,
// and USER_HZ is 100 on every architecture Linux runs the tracer on. Two
// processes with the same pid would need to start in the same 10 ms.
type ExecID struct {
	PID   uint32
	Start uint64 // clock ticks since boot
}

// ProcIdentity is what /proc says of a live process: its ExecID, its
// parent's pid, and its cgroup path.
type ProcIdentity struct {
	ExecID ExecID
	PPID   uint32
	Cgroup string
	Comm   string // as /proc/PID/stat had it when read
}

// ClockTicks is USER_HZ: the unit of /proc/PID/stat's starttime.
const ClockTicks = 100

// TicksFromNS converts a kernel boot-time timestamp in ns to clock ticks,
// rounding down as the kernel's nsec_to_clock_t does.
func TicksFromNS(ns uint64) uint64 { return ns / (1e9 / ClockTicks) }

// IsZero reports whether the identity is unknown.
func (id ExecID) IsZero() bool { return id.PID == 0 && id.Start == 0 }

// String is the printed form, as in the JSON events: boot id, start time
// and pid (the encoders of tracer/sink append it without allocating).
func (id ExecID) String() string {
	return BootID() + ":" + strconv.FormatUint(id.Start, 10) + ":" + strconv.FormatUint(uint64(id.PID), 10)
}

// ParseExecID reads a printed ExecID back (for tests and tools).
func ParseExecID(s string) (ExecID, bool) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return ExecID{}, false
	}
	start, err1 := strconv.ParseUint(parts[1], 10, 64)
	pid, err2 := strconv.ParseUint(parts[2], 10, 32)
	if err1 != nil || err2 != nil {
		return ExecID{}, false
	}
	return ExecID{PID: uint32(pid), Start: start}, true
}

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

// containerPrefixes are the scope and directory name prefixes container
// engines give a container's cgroup: docker (systemd driver), containerd's
// CRI plugin, CRI-O, podman, nerdctl. Under the cgroupfs driver the
// directory is the bare id (/docker/ID, /kubepods/.../podUID/ID).
var containerPrefixes = []string{"docker-", "cri-containerd-", "crio-", "libpod-", "nerdctl-", "containerd-"}

// The unit and the container id are read only where root made the
// cgroup: the slices at the top of the hierarchy, which systemd alone
// creates, the first unit in them, and the directories a runtime's
// cgroupfs driver makes at fixed depths. Whatever lies below a unit may
// be delegated (Delegate=yes, every user@UID.service): its owner names
// those cgroups as it likes (sshd.service, docker-ID.scope), so they name
// nothing, and the innermost match would let any user pass for another
// service or a container.

// anchorUnit splits path after its leading slices: unit is the first
// component that is not a slice ("" for a path of slices), rest what
// follows it; top reports whether unit is at the root (no slice above).
func anchorUnit(path string) (unit, rest string, top bool) {
	rest, top = strings.TrimPrefix(path, "/"), true
	for rest != "" {
		comp, after, _ := strings.Cut(rest, "/")
		if !strings.HasSuffix(comp, ".slice") || len(comp) == len(".slice") {
			return comp, after, top
		}
		rest, top = after, false
	}
	return "", "", top
}

// isUnitName reports whether comp names a systemd service or scope.
func isUnitName(comp string) bool {
	return len(comp) > len(".scope") && (strings.HasSuffix(comp, ".service") || strings.HasSuffix(comp, ".scope"))
}

// ContainerID finds the container id in a cgroup path where a runtime
// makes it: a runtime's scope as the first unit below the slices
// (/system.slice/docker-ID.scope, /machine.slice/libpod-ID.scope,
// /kubepods.slice/.../cri-containerd-ID.scope), or a cgroupfs driver's
// directory (/docker/ID, /kubepods/[QOS/]podUID/ID, /libpod_parent/libpod-ID).
// Cgroups deeper than those are the container's own (docker in docker
// counts as the outer container), and rootless containers, in their
// user's delegated subtree, have none. A runtime's monitor
// (crio-conmon-ID, libpod-conmon-ID) runs outside the container.
func ContainerID(path string) string {
	unit, rest, top := anchorUnit(path)
	if strings.HasSuffix(unit, ".scope") {
		return containerComp(strings.TrimSuffix(unit, ".scope"))
	}
	if !top {
		return ""
	}
	next := func() string {
		comp, after, _ := strings.Cut(rest, "/")
		rest = after
		return comp
	}
	switch unit {
	case "docker", "libpod_parent":
		return containerComp(next())
	case "kubepods":
		comp := next()
		if comp == "besteffort" || comp == "burstable" {
			comp = next()
		}
		if !strings.HasPrefix(comp, "pod") {
			return ""
		}
		return containerComp(next())
	}
	return ""
}

// containerComp returns the id a container's cgroup directory or scope
// (without ".scope") names: ID or PREFIX-ID.
func containerComp(comp string) string {
	if strings.Contains(comp, "conmon") {
		return ""
	}
	for _, p := range containerPrefixes {
		if strings.HasPrefix(comp, p) {
			comp = comp[len(p):]
			break
		}
	}
	if isHexID(comp) {
		return comp
	}
	return ""
}

func isHexID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Unit finds the systemd unit in a cgroup path: the first service or
// scope below the slices (nginx.service, session-3.scope,
// docker-ID.scope, user@1000.service). Slices only group units; the
// cgroups below a unit are its own (a delegated subtree) and belong to
// it, so everything a user's manager runs is user@UID.service.
func Unit(path string) string {
	if unit, _, _ := anchorUnit(path); isUnitName(unit) {
		return unit
	}
	return ""
}

// CgroupInfo is a cgroup path with the container id and unit it names,
// worked out once per path: backends cache it per cgroup.
type CgroupInfo struct{ Path, ContainerID, Unit string }

// NewCgroupInfo parses path.
func NewCgroupInfo(path string) CgroupInfo {
	return CgroupInfo{Path: path, ContainerID: ContainerID(path), Unit: Unit(path)}
}

// SetCgroup fills e's cgroup, container id and unit.
func (e *Event) SetCgroup(c CgroupInfo) {
	e.Cgroup, e.ContainerID, e.Unit = c.Path, c.ContainerID, c.Unit
}
