// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"strconv"
	"strings"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// scopeFilter is the user-space side of --cgroup and --target.
type scopeFilter struct {
	cgroup     string // a cgroup v2 path: it and the cgroups below it
	targetPID  uint32
	targetComm string
}

func newScopeFilter(cfg Config) *scopeFilter {
	if cfg.Cgroup == "" && cfg.Target == "" {
		return nil
	}
	w := &scopeFilter{cgroup: CleanCgroup(cfg.Cgroup)}
	if cfg.Target != "" {
		w.targetPID, w.targetComm, _ = ParseTarget(cfg.Target)
	}
	return w
}

// CleanCgroup makes a --cgroup value a path as events print it:
// "/system.slice/nginx.service", with one leading slash and none trailing.
func CleanCgroup(p string) string {
	if p == "" {
		return ""
	}
	return "/" + strings.Trim(p, "/")
}

// ParseTarget reads a --target value: a pid, or a comm (the kernel's
// 15-character process name).
func ParseTarget(s string) (pid uint32, comm string, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, "", vocab.Usagef("empty --target: give a pid or a process name (comm)")
	}
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		if n == 0 {
			return 0, "", vocab.Usagef("--target 0 is no process: give a pid or a process name (comm)")
		}
		return uint32(n), "", nil
	}
	return 0, s, CheckComm("--target", s)
}

// TargetTypes are the event classes --target keeps.
var TargetTypes = vocab.TypeSet(0).With(vocab.TypeSignal).With(vocab.TypeExit)

// CgroupUnder reports whether the cgroup path is under (a CleanCgroup
// path: --cgroup) or is it; every path is under "" and "/".
func CgroupUnder(path, under string) bool {
	return under == "" || under == "/" || path == under ||
		len(path) > len(under) && path[len(under)] == '/' && strings.HasPrefix(path, under)
}

// match applies --cgroup and --target. A process whose cgroup the backend
// could not read is not known to be in the cgroup, and is dropped.
func (w *scopeFilter) match(e *Event) bool {
	if !CgroupUnder(e.Cgroup, w.cgroup) {
		return false
	}
	if w.targetPID == 0 && w.targetComm == "" {
		return true
	}
	switch e.Type {
	case vocab.TypeSignal:
		if w.targetPID != 0 {
			return e.TargetExecID.PID == w.targetPID || e.TargetPID == int32(w.targetPID)
		}
		return e.TargetComm == w.targetComm
	case vocab.TypeExit:
		if w.targetPID != 0 {
			return e.PID == w.targetPID
		}
		return e.Comm == w.targetComm
	}
	return false
}
