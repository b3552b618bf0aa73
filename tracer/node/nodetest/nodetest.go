// SPDX-License-Identifier: Apache-2.0

// Package nodetest lays out recorded node trees (/proc, /sys, /boot) for
// the tests of the packages that read host facts (tracer/host) or read
// them through package node: doctor's tests and bench's read the same
// tree and must say the same of it. The trees are built in a temporary directory rather than kept in
// testdata because sysfs names hold colons, which Go module zips refuse.
package nodetest

import (
	"os"
	"path/filepath"
	"testing"
)

// Release is the kernel release of the Disks tree.
const Release = "5.14.0-427.13.1.el9_4.x86_64"

// DiskMounts are the mount points of the Disks tree, as doctor and bench
// must judge their disks.
var DiskMounts = []struct {
	Path  string // a mount point (unescaped)
	Disks []string
	Kind  string // node.Disk.Kind
}{
	{"/", []string{"sda"}, "hdd"},                // LVM volume dm-0 on sda2, a spinning disk
	{"/srv/log dir", []string{"vda"}, "virtual"}, // virtio disk that reports rotational
	{"/data", []string{"nvme0n1"}, "ssd"},
	{"/mnt/ro", []string{"sdb"}, "hdd"}, // read-only
}

// Disks builds a node whose root is an LVM volume (device-mapper dm-0)
// on a partition of a rotational SATA disk, with a virtio disk mounted on
// a path with a space (mountinfo escapes it as \040), an NVMe disk, a
// read-only mount of a second spinning disk, a tmpfs and the cgroup v2
// hierarchy; its kernel config says CONFIG_HZ=250. It returns the root.
func Disks(t testing.TB) string {
	t.Helper()
	tr := New(t)
	root, file, dir, link := tr.Root, tr.File, tr.Dir, tr.Link
	file("proc/self/mountinfo", ""+
		"22 1 253:0 / / rw,relatime shared:1 - xfs /dev/mapper/rhel-root rw,attr2,inode64\n"+
		"23 22 254:1 / /srv/log\\040dir rw,relatime shared:2 - ext4 /dev/vda1 rw\n"+
		"24 22 259:0 / /data rw,noatime shared:3 - ext4 /dev/nvme0n1 rw\n"+
		"25 22 8:16 / /mnt/ro ro,relatime shared:4 - ext4 /dev/sdb ro\n"+
		"26 22 0:30 / /tmp rw,nosuid,nodev shared:5 - tmpfs tmpfs rw\n"+
		"27 22 0:31 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:6 - cgroup2 cgroup2 rw,nsdelegate\n")
	file("proc/sys/kernel/osrelease", Release+"\n")
	file("boot/config-"+Release, "CONFIG_AUDIT=y\n# CONFIG_HZ_100 is not set\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n")
	dir("srv/log dir")
	dir("data")
	dir("mnt/ro")

	sda := "sys/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda"
	file(sda+"/queue/rotational", "1\n")
	file(sda+"/sda2/partition", "2\n")
	file("sys/devices/virtual/block/dm-0/queue/rotational", "1\n")
	link("sys/devices/virtual/block/dm-0/slaves/sda2", "../../../../pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda/sda2")
	link("sys/dev/block/253:0", "../../devices/virtual/block/dm-0")
	link("sys/dev/block/8:2", "../../devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda/sda2")
	link("sys/block/sda", "../devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda")
	link("sys/block/dm-0", "../devices/virtual/block/dm-0")

	sdb := "sys/devices/pci0000:00/0000:00:1f.2/ata2/host1/target1:0:0/1:0:0:0/block/sdb"
	file(sdb+"/queue/rotational", "1\n")
	link("sys/dev/block/8:16", "../../devices/pci0000:00/0000:00:1f.2/ata2/host1/target1:0:0/1:0:0:0/block/sdb")
	link("sys/block/sdb", "../devices/pci0000:00/0000:00:1f.2/ata2/host1/target1:0:0/1:0:0:0/block/sdb")

	// virtio-blk: the hypervisor's default rotational flag is 1.
	vda := "sys/devices/pci0000:00/0000:00:04.0/virtio1/block/vda"
	file(vda+"/queue/rotational", "1\n")
	file(vda+"/vda1/partition", "1\n")
	dir("sys/bus/virtio/drivers/virtio_blk")
	link(vda+"/device", "../../../virtio1")
	link("sys/devices/pci0000:00/0000:00:04.0/virtio1/driver", "../../../../bus/virtio/drivers/virtio_blk")
	link("sys/dev/block/254:1", "../../devices/pci0000:00/0000:00:04.0/virtio1/block/vda/vda1")
	link("sys/block/vda", "../devices/pci0000:00/0000:00:04.0/virtio1/block/vda")

	nvme := "sys/devices/pci0000:00/0000:00:05.0/nvme/nvme0/nvme0n1"
	file(nvme+"/queue/rotational", "0\n")
	link("sys/dev/block/259:0", "../../devices/pci0000:00/0000:00:05.0/nvme/nvme0/nvme0n1")
	link("sys/block/nvme0n1", "../devices/pci0000:00/0000:00:05.0/nvme/nvme0/nvme0n1")
	return root
}

// Tree lays out files under a temporary root for a test.
type Tree struct {
	Root string
	t    testing.TB
}

// New makes an empty tree.
func New(t testing.TB) *Tree { return &Tree{Root: t.TempDir(), t: t} }

// File writes p (relative to the root) with content, making its directories.
func (tr *Tree) File(p, content string) {
	tr.t.Helper()
	full := filepath.Join(tr.Root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		tr.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		tr.t.Fatal(err)
	}
}

// Dir makes directory p.
func (tr *Tree) Dir(p string) {
	tr.t.Helper()
	if err := os.MkdirAll(filepath.Join(tr.Root, p), 0o755); err != nil {
		tr.t.Fatal(err)
	}
}

// Link makes p a symbolic link to target, as sysfs links its devices.
func (tr *Tree) Link(p, target string) {
	tr.t.Helper()
	full := filepath.Join(tr.Root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		tr.t.Fatal(err)
	}
	if err := os.Symlink(target, full); err != nil {
		tr.t.Fatal(err)
	}
}
