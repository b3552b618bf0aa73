// SPDX-License-Identifier: Apache-2.0

package host

import (
	"strings"
	"testing"
)

const hexID = "4c2a0e7d9b1f3a5c6e8d0b2f4a6c8e0d1b3f5a7c9e1d3b5f7a9c1e3d5b7f9a1c"

func TestContainerIDAndUnit(t *testing.T) {
	cases := []struct{ path, container, unit string }{
		// systemd services, scopes and the user manager.
		{"/system.slice/nginx.service", "", "nginx.service"},
		{"/user.slice/user-1000.slice/session-3.scope", "", "session-3.scope"},
		// A user's manager and everything it runs are the user's: the names
		// below user@UID.service are the user's to choose.
		{"/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-firefox-2231.scope", "", "user@1000.service"},
		{"/user.slice/user-1000.slice/user@1000.service/init.scope", "", "user@1000.service"},
		{"/user.slice/user-1000.slice/user@1000.service/app.slice/sshd.service", "", "user@1000.service"},
		{"/user.slice/user-1000.slice/user@1000.service/app.slice/docker-" + hexID + ".scope", "", "user@1000.service"},
		{"/user.slice/user-1000.slice/user@1000.service/system.slice/docker-" + hexID + ".scope", "", "user@1000.service"},
		{"/user.slice/user-1000.slice/user@1000.service/kubepods.slice/kubepods-pod1.slice/cri-containerd-" + hexID + ".scope", "", "user@1000.service"},
		{"/user.slice/user-1000.slice/session-3.scope/sshd.service", "", "session-3.scope"},
		{"/init.scope", "", "init.scope"},
		{"/system.slice/run-u42.service", "", "run-u42.service"},
		{"/tracer-test.slice/run-u42.scope", "", "run-u42.scope"},
		// A service's own sub-cgroups (Delegate=yes) belong to it.
		{"/system.slice/containerd.service/worker", "", "containerd.service"},
		// ... whatever they are named: a delegated unit's cgroups name no
		// other service and no container.
		{"/system.slice/containerd.service/sshd.service", "", "containerd.service"},
		{"/system.slice/containerd.service/system.slice/docker-" + hexID + ".scope", "", "containerd.service"},
		{"/system.slice/containerd.service/docker/" + hexID, "", "containerd.service"},
		{"/system.slice/system-getty.slice/getty@tty1.service", "", "getty@tty1.service"},
		{"/tracer-test-1.scope/kubepods/burstable/pod1/" + hexID, "", "tracer-test-1.scope"},
		{"/docker", "", ""},
		{"/sshd.service.d/x", "", ""},
		{"/", "", ""},
		{"", "", ""},
		{"/machine.slice", "", ""},
		// docker: systemd driver, cgroupfs driver, rootless.
		{"/system.slice/docker-" + hexID + ".scope", hexID, "docker-" + hexID + ".scope"},
		{"/docker/" + hexID, hexID, ""},
		// Rootless: in the user's own subtree, where the user names cgroups.
		{"/user.slice/user-1000.slice/user@1000.service/docker.service/docker/" + hexID, "", "user@1000.service"},
		// A container's own cgroups (cgroup namespace, systemd inside) name
		// no other container or service.
		{"/system.slice/docker-" + hexID + ".scope/system.slice/sshd.service", hexID, "docker-" + hexID + ".scope"},
		{"/system.slice/docker-" + hexID + ".scope/docker-" + strings.Repeat("b", 64) + ".scope", hexID, "docker-" + hexID + ".scope"},
		{"/docker/" + hexID + "/docker/" + strings.Repeat("b", 64), hexID, ""},
		{"/kubepods/burstable/pod1/" + hexID + "/crio-" + strings.Repeat("b", 64), hexID, ""},
		// containerd's CRI plugin under kubelet, systemd and cgroupfs drivers.
		{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0d9e3c58_7e43_4a4b_9c1e_2b8f6a0c1d2e.slice/cri-containerd-" + hexID + ".scope",
			hexID, "cri-containerd-" + hexID + ".scope"},
		{"/kubepods/burstable/pod0d9e3c58-7e43-4a4b-9c1e-2b8f6a0c1d2e/" + hexID, hexID, ""},
		{"/kubepods/pod0d9e3c58-7e43-4a4b-9c1e-2b8f6a0c1d2e/" + hexID, hexID, ""},
		{"/kubepods/burstable/" + hexID, "", ""},
		{"/kubepods/burstable/pod1/x/" + hexID, "", ""},
		{"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/cri-containerd-" + hexID + ".scope/sub", hexID, "cri-containerd-" + hexID + ".scope"},
		// CRI-O: the container, and its monitor, which is not in it.
		{"/kubepods.slice/kubepods-pod1.slice/crio-" + hexID + ".scope", hexID, "crio-" + hexID + ".scope"},
		{"/kubepods.slice/kubepods-pod1.slice/crio-conmon-" + hexID + ".scope", "", "crio-conmon-" + hexID + ".scope"},
		{"/kubepods/pod1/crio-" + hexID, hexID, ""},
		// podman: root, rootless, with its nested "container" cgroup, cgroupfs.
		{"/machine.slice/libpod-" + hexID + ".scope", hexID, "libpod-" + hexID + ".scope"},
		{"/machine.slice/libpod-" + hexID + ".scope/container", hexID, "libpod-" + hexID + ".scope"},
		{"/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + hexID + ".scope/container", "", "user@1000.service"},
		{"/machine.slice/libpod-conmon-" + hexID + ".scope", "", "libpod-conmon-" + hexID + ".scope"},
		{"/libpod_parent/libpod-" + hexID, hexID, ""},
		// nerdctl.
		{"/system.slice/nerdctl-" + hexID + ".scope", hexID, "nerdctl-" + hexID + ".scope"},
		// Docker in docker: the outer container, whose cgroups the inner
		// one's are.
		{"/docker/" + strings.Repeat("a", 64) + "/docker/" + hexID, strings.Repeat("a", 64), ""},
		// Not ids: too short, upper case, not hex.
		{"/docker/" + hexID[:63], "", ""},
		{"/docker/" + strings.ToUpper(hexID), "", ""},
		{"/system.slice/docker-" + strings.Repeat("g", 64) + ".scope", "", "docker-" + strings.Repeat("g", 64) + ".scope"},
	}
	for _, c := range cases {
		if got := ContainerID(c.path); got != c.container {
			t.Errorf("ContainerID(%q) = %q, want %q", c.path, got, c.container)
		}
		if got := Unit(c.path); got != c.unit {
			t.Errorf("Unit(%q) = %q, want %q", c.path, got, c.unit)
		}
	}
}
