// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/tracer/node"
	"github.com/tracer-dev/tracer/tracer/node/nodetest"
)

// On cgroup v2 the simulated HDD enables the io controller (and memory,
// for writeback) in the root cgroup where they are not, says so before it
// does, and throttles the loop device with io.max in a cgroup of its own.
// A directory stands in for the cgroup root: what is checked is what bench
// writes there, not what the kernel does with it.
func TestThrottleV2Writes(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n")
	write("cgroup.subtree_control", "cpu pids\n")
	var recorded []string
	s := &Storage{}
	how, err := s.throttleV2(root, "7:3", func(c []string) error { recorded = c; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(recorded, []string{"io", "memory"}) {
		t.Errorf("recorded %q, want io and memory", recorded)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "cgroup.subtree_control")); string(b) != "+io +memory" {
		t.Errorf("subtree_control written %q", b)
	}
	if s.cgroup == nil || !strings.HasPrefix(filepath.Base(s.cgroup.Path), "tracer-bench-io-") {
		t.Fatalf("log writers' cgroup %+v", s.cgroup)
	}
	b, _ := os.ReadFile(filepath.Join(s.cgroup.Path, "io.max"))
	if want := "7:3 rbps=104857600 wbps=104857600 riops=150 wiops=150"; string(b) != want {
		t.Errorf("io.max %q, want %q", b, want)
	}
	if !strings.Contains(how, "io.max") {
		t.Errorf("description %q", how)
	}
	// Controllers the node had enabled are not touched, nor recorded.
	write("cgroup.subtree_control", "io memory\n")
	recorded = nil
	s2 := &Storage{}
	if _, err := s2.throttleV2(root, "7:4", func(c []string) error { recorded = c; return nil }); err != nil {
		t.Fatal(err)
	}
	if recorded != nil {
		t.Errorf("recorded %q though io and memory were enabled", recorded)
	}
	for _, st := range []*Storage{s, s2} {
		if st.cgroup != nil {
			unix.Close(st.cgroup.fd)
			_ = os.RemoveAll(st.cgroup.Path)
		}
	}
}

// Bench judges disks with package node's reader, as doctor does: on a
// recorded node (an LVM volume on a spinning disk, a virtio disk that
// reports rotational on a mount point with an escaped space, an NVMe disk,
// a read-only spinning disk), bench's words for each disk and its choice
// of a real HDD follow doctor's verdict on the same tree.
func TestStorageReadsNodeFacts(t *testing.T) {
	root := nodetest.Disks(t)
	saved := hostFacts
	hostFacts = node.Reader{Root: root}
	t.Cleanup(func() { hostFacts = saved })

	doctor := hostFacts.FileFacts().LogDisk // what doctor says of the root's disk
	if d := hostFacts.DiskAt("/"); !reflect.DeepEqual(d, doctor) || diskName(d) != "sda" || diskKind(d) != "rotational" {
		t.Errorf("bench reads / as %s (%s), %+v; doctor %+v", diskName(d), diskKind(d), d, doctor)
	}
	want := map[string]string{"hdd": "rotational", "virtual": "virtual disk, reports rotational", "ssd": "non-rotational"}
	for _, m := range nodetest.DiskMounts {
		d := hostFacts.DiskAt(m.Path)
		if diskKind(d) != want[m.Kind] || diskName(d) != strings.Join(m.Disks, ", ") {
			t.Errorf("%s: bench says %s (%s), doctor's kind %s", m.Path, diskName(d), diskKind(d), m.Kind)
		}
	}
	// A real HDD to log on: the LVM root, not the virtio disk nor the
	// read-only one.
	var points []string
	for _, m := range rotationalMounts(hostFacts) {
		points = append(points, m.MountPoint)
	}
	if !reflect.DeepEqual(points, []string{"/"}) {
		t.Errorf("rotational mounts %q, want only /", points)
	}
	if cgroupV2Mount() != "/sys/fs/cgroup" || cgroupV1Mount("blkio") != "" {
		t.Errorf("cgroup hierarchies: v2 %q, blkio %q", cgroupV2Mount(), cgroupV1Mount("blkio"))
	}
}
