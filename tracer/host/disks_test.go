// SPDX-License-Identifier: Apache-2.0

package host

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tracer-dev/tracer/tracer/node/nodetest"
)

// The one reader of disks on a recorded node: an LVM volume on a spinning
// disk lives on that disk (through dm-0's slaves and a partition), a virtio
// disk that reports rotational is virtual, an NVMe disk does not spin, a
// tmpfs has no disk, a device /sys does not know has none.
// tracer/node's TestDisksTree judges the same tree's disks.
func TestDisksRecorded(t *testing.T) {
	root := nodetest.Disks(t)
	mounts, err := Mounts(filepath.Join(root, "proc"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range nodetest.DiskMounts {
		if d := DiskAt(root, mounts, m.Path); d.Mount != m.Path || !reflect.DeepEqual(d.Disks, m.Disks) || d.Rotational == nil {
			t.Errorf("disk at %q: %+v, want mount %q on disks %v", m.Path, d, m.Path, m.Disks)
		}
	}
	spins, still := true, false
	if got, want := WholeDisks(root, "253:0"), []WholeDisk{{Name: "sda", Rotational: &spins}}; !reflect.DeepEqual(got, want) {
		t.Errorf("whole disks of dm-0 (253:0): %+v, want %+v", got, want)
	}
	if got, want := WholeDisks(root, "254:1"), []WholeDisk{{Name: "vda", Rotational: &spins, Virtual: true}}; !reflect.DeepEqual(got, want) {
		t.Errorf("whole disks of vda1 (254:1): %+v, want %+v", got, want)
	}
	if got, want := WholeDisks(root, "259:0"), []WholeDisk{{Name: "nvme0n1", Rotational: &still}}; !reflect.DeepEqual(got, want) {
		t.Errorf("whole disks of nvme0n1 (259:0): %+v, want %+v", got, want)
	}
	if got := WholeDisks(root, "8:99"); got != nil {
		t.Errorf("whole disks of an unknown device: %+v", got)
	}
	if d := DiskAt(root, mounts, "/srv/log dir/audit"); d.Source != "/dev/vda1" || d.Device != "254:1" || !d.Virtual || d.Rotational == nil || !*d.Rotational {
		t.Errorf("virtio disk %+v: want rotational as reported, virtual", d)
	}
	if d := DiskAt(root, mounts, "/tmp/x"); d.Mount != "/tmp" || d.Device != "0:30" || d.Disks != nil || d.Rotational != nil {
		t.Errorf("tmpfs %+v: want no disk", d)
	}
	if d := DiskOfDevice(root, "253:0"); !reflect.DeepEqual(d.Disks, []string{"sda"}) || d.Rotational == nil || !*d.Rotational || d.Virtual {
		t.Errorf("device 253:0: %+v", d)
	}
}
