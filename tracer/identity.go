// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"strconv"
	"strings"

	"github.com/tracer-dev/tracer/tracer/host"
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

// IsZero reports whether the identity is unknown.
func (id ExecID) IsZero() bool { return id.PID == 0 && id.Start == 0 }

// String is the printed form, as in the JSON events: boot id, start time
// and pid (the encoders of tracer/sink append it without allocating).
func (id ExecID) String() string {
	return host.BootID() + ":" + strconv.FormatUint(id.Start, 10) + ":" + strconv.FormatUint(uint64(id.PID), 10)
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

// CgroupInfo is a cgroup path with the container id and unit it names,
// worked out once per path: backends cache it per cgroup.
type CgroupInfo struct {
	Path, ContainerID, Unit string
	Truncated               bool // Path is cut to CgroupMax bytes
}

// NewCgroupInfo parses path, and keeps CgroupMax bytes of it: the
// container id and unit come from the whole path.
func NewCgroupInfo(path string) CgroupInfo {
	c := CgroupInfo{ContainerID: host.ContainerID(path), Unit: host.Unit(path)}
	c.Path, c.Truncated = CapString(path, CgroupMax)
	return c
}

// SetCgroup fills e's cgroup, container id and unit.
func (e *Event) SetCgroup(c CgroupInfo) {
	e.Cgroup, e.ContainerID, e.Unit, e.CgroupTruncated = c.Path, c.ContainerID, c.Unit, c.Truncated
}
