// SPDX-License-Identifier: Apache-2.0

//go:build linux

package tracer

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// ReadProcIdentity reads pid's identity from /proc. It fails once the
// process is reaped (a zombie still answers).
func ReadProcIdentity(pid uint32) (ProcIdentity, error) {
	return ReadProcParts(pid, true, true)
}

// ReadProcParts reads what of pid's identity is asked for: from its stat
// file the exec id, parent and comm; its cgroup. Read alone, the cgroup of
// a zombie is the root's ("/"), which then may not be where it ran.
func ReadProcParts(pid uint32, stat, cgroup bool) (ProcIdentity, error) {
	var id ProcIdentity
	if !stat {
		cg, ok := host.ReadProcCgroup(pid)
		if !ok {
			return id, fmt.Errorf("reading the cgroup of process %d: gone", pid)
		}
		id.Cgroup = cg
		return id, nil
	}
	ps, err := host.ReadProcStat(pid)
	if err != nil {
		return id, err
	}
	id.ExecID, id.PPID, id.Comm = ExecID{PID: pid, Start: ps.Start}, ps.PPID, ps.Comm
	// A zombie has left its cgroup: /proc shows it in the root ("0::/").
	// Its cgroup is unknown, not the root.
	if !cgroup || ps.State == 'Z' {
		return id, nil
	}
	id.Cgroup, _ = host.ReadProcCgroup(pid)
	return id, nil
}

// CheckCgroup fails with a usage error unless path names a cgroup v2.
func CheckCgroup(path string) error {
	mount, err := host.CgroupMount()
	if err != nil {
		return vocab.Usagef("--cgroup needs cgroup v2: %w", err)
	}
	if _, _, err := host.CgroupID(mount, CleanCgroup(path)); err != nil {
		return vocab.Usagef("--cgroup %s: no such cgroup under %s (%w): give a path as in /proc/PID/cgroup, e.g. /system.slice/nginx.service", path, mount, err)
	}
	return nil
}

// readProcLineage names the live process id: its comm and its parent's
// exec id. A process with id's pid but another start time is not id.
func readProcLineage(id ExecID) (string, ExecID, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(id.PID), 10) + "/stat")
	if err != nil {
		return "", ExecID{}, false
	}
	ppid, start, ok := host.ParseStat(stat)
	if !ok || start != id.Start {
		return "", ExecID{}, false
	}
	comm := ""
	if i, j := strings.IndexByte(string(stat), '('), strings.LastIndexByte(string(stat), ')'); i >= 0 && j > i {
		comm = string(stat[i+1 : j])
	}
	var parent ExecID
	if ppid != 0 {
		if pstart, ok := host.ReadStartTicks(ppid); ok {
			parent = ExecID{PID: ppid, Start: pstart}
		}
	}
	return comm, parent, true
}
