// SPDX-License-Identifier: Apache-2.0

package node

import (
	"reflect"
	"testing"

	"github.com/tracer-dev/tracer/tracer/node/nodetest"
)

// The one reader of disks on a recorded node: an LVM volume on a spinning
// disk is an HDD (through dm-0's slaves), a virtio disk's rotational flag
// says nothing (virtual), an NVMe disk is an SSD; mountinfo's escaped
// mount point is read unescaped. bench's TestStorageReadsNodeFacts reads
// the same tree and must agree.
func TestDisksTree(t *testing.T) {
	root := nodetest.Disks(t)
	r := Reader{Root: root}
	for _, m := range nodetest.DiskMounts {
		d := r.DiskAt(m.Path)
		if d.Mount != m.Path || !reflect.DeepEqual(d.Disks, m.Disks) || d.Kind() != m.Kind {
			t.Errorf("disk at %q: mount %q, disks %v, kind %s; want disks %v, kind %s", m.Path, d.Mount, d.Disks, d.Kind(), m.Disks, m.Kind)
		}
	}
	if d := r.DiskAt("/srv/log dir/audit"); !Yes(d.Rotational) || !d.Virtual || d.Source != "/dev/vda1" || d.Device != "254:1" {
		t.Errorf("virtio disk %+v: want rotational as reported, virtual", d)
	}
	if d := r.DiskAt("/tmp/x"); d.Mount != "/tmp" || d.Disks != nil || d.Kind() != "unknown" {
		t.Errorf("tmpfs %+v", d)
	}
	// Doctor's audit log disk: no /var/log/audit, so the root's.
	f := r.FileFacts()
	if d := f.LogDisk; d.Path != "/" || d.Device != "253:0" || !reflect.DeepEqual(d.Disks, []string{"sda"}) || d.Kind() != "hdd" {
		t.Errorf("log disk %+v", d)
	}
	if got := r.DiskOfDevice("253:0"); !reflect.DeepEqual(got.Disks, []string{"sda"}) || got.Kind() != "hdd" {
		t.Errorf("device 253:0: %+v", got)
	}
	if m := r.CgroupV2Mount(); m != "/sys/fs/cgroup" {
		t.Errorf("cgroup v2 at %q", m)
	}
	if m := r.CgroupV1Mount("blkio"); m != "" {
		t.Errorf("blkio v1 hierarchy at %q on a v2-only node", m)
	}
	if hz, err := r.KernelHZ(); err != nil || hz != 250 {
		t.Errorf("KernelHZ = %d, %v; want 250 from the config", hz, err)
	}
}

// KernelHZ on this node: a rate a kernel can be built with (moved from
// bench's TestKernelHZ), and the nearest choice to a measured rate.
func TestKernelHZ(t *testing.T) {
	hz, err := Reader{}.KernelHZ()
	if err == nil && hz != 100 && hz != 250 && hz != 300 && hz != 1000 {
		t.Errorf("KernelHZ = %d", hz)
	}
	for rate, want := range map[float64]int{99.2: 100, 240: 250, 290: 300, 700: 1000, 1040: 1000} {
		if got := NearestHZ(rate); got != want {
			t.Errorf("NearestHZ(%v) = %d, want %d", rate, got, want)
		}
	}
}
