package tracer

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
		ci := NewCgroupInfo(c.path)
		var e Event
		e.SetCgroup(ci)
		if e.Cgroup != c.path || e.ContainerID != c.container || e.Unit != c.unit {
			t.Errorf("SetCgroup(%q): %+v", c.path, ci)
		}
	}
}

func TestParseStat(t *testing.T) {
	// A comm with spaces and parentheses, as a process may name itself.
	stat := "4242 (my (odd) comm) S 17 4242 4242 0 -1 4194560 123 0 0 0 5 3 0 0 20 0 1 0 987654 12345678 512 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	ppid, start, ok := ParseStat([]byte(stat))
	if !ok || ppid != 17 || start != 987654 {
		t.Errorf("ParseStat = %d %d %v, want 17 987654 true", ppid, start, ok)
	}
	for _, bad := range []string{"", "4242 (x) S 1 2", "4242 no parens", "4242 (x) S x 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5"} {
		if _, _, ok := ParseStat([]byte(bad)); ok {
			t.Errorf("ParseStat(%q) ok", bad)
		}
	}
}

// ParseProcStat is the one reader of /proc/PID/stat: comm (with spaces
// and parentheses), ppid, CPU times and start time.
func TestParseProcStat(t *testing.T) {
	stat := "4242 (my (odd) comm) S 17 4242 4242 0 -1 4194560 123 0 0 0 5 3 0 0 20 0 1 0 987654 12345678 512 18446744073709551615\n"
	got, ok := ParseProcStat([]byte(stat))
	if want := (ProcStat{Comm: "my (odd) comm", State: 'S', PPID: 17, UTime: 5, STime: 3, Start: 987654}); !ok || got != want {
		t.Errorf("ParseProcStat = %+v %v, want %+v", got, ok, want)
	}
	if _, ok := ParseProcStat([]byte("4242 (x) S 1 4242 4242 0 -1 4194560 123 0 0 0 x 3 0 0 20 0 1 0 987654")); ok {
		t.Error("a bad utime accepted")
	}
}

func TestParseProcCgroup(t *testing.T) {
	cases := []struct {
		file string
		want string
		ok   bool
	}{
		{"0::/system.slice/nginx.service\n", "/system.slice/nginx.service", true},
		// Hybrid: v1 controllers, name=systemd and the unified line.
		{"12:memory:/system.slice/x.service\n1:name=systemd:/system.slice/x.service\n0::/system.slice/x.service\n", "/system.slice/x.service", true},
		// v1 only (RHEL 7): the name=systemd hierarchy.
		{"11:cpuset:/\n4:memory:/user.slice\n1:name=systemd:/user.slice/user-0.slice/session-1.scope\n", "/user.slice/user-0.slice/session-1.scope", true},
		{"4:memory:/x\n", "", false},
		{"", "", false},
	}
	for _, c := range cases {
		got, ok := ParseProcCgroup([]byte(c.file))
		if got != c.want || ok != c.ok {
			t.Errorf("ParseProcCgroup(%q) = %q %v, want %q %v", c.file, got, ok, c.want, c.ok)
		}
	}
}

func TestExecID(t *testing.T) {
	if got := shortBootID([]byte("05cd0fec-bb43-4b24-a6d9-4e9cf9acbab8\n")); got != "05cd0fecbb434b24" {
		t.Errorf("shortBootID = %q", got)
	}
	if shortBootID(nil) != "0" || shortBootID([]byte("not hex")) != "0" {
		t.Error("unreadable boot id must give 0")
	}
	id := ExecID{PID: 4242, Start: 987654}
	s := id.String()
	if want := BootID() + ":987654:4242"; s != want {
		t.Errorf("ExecID = %q, want %q", s, want)
	}
	if back, ok := ParseExecID(s); !ok || back != id {
		t.Errorf("ParseExecID(%q) = %+v %v", s, back, ok)
	}
	if _, ok := ParseExecID("x:1"); ok {
		t.Error("ParseExecID accepted a bad id")
	}
	if !(ExecID{}).IsZero() || id.IsZero() {
		t.Error("IsZero")
	}
	// start_boottime in ns to /proc's clock ticks: rounded down, 10 ms each.
	for ns, want := range map[uint64]uint64{0: 0, 9_999_999: 0, 10_000_000: 1, 9876_543_210_987: 987654} {
		if got := TicksFromNS(ns); got != want {
			t.Errorf("TicksFromNS(%d) = %d, want %d", ns, got, want)
		}
	}
}
