// SPDX-License-Identifier: Apache-2.0

package host

import "strings"

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
