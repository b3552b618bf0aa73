// SPDX-License-Identifier: Apache-2.0

package host

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/procfs/blockdevice"
)

// Disk is the block device that holds a path: its mount, its whole disks
// and whether one of them spins. tracer/node records it as the node's
// facts (the disk under the audit log, under bench's logs).
type Disk struct {
	Path       string   // the path asked about
	Mount      string   // the mount point that holds it
	FSType     string   // its filesystem
	Source     string   // /dev/mapper/rhel-root
	Device     string   // major:minor
	Disks      []string // the whole disks below it (vda, sda), through partitions, dm and md
	Rotational *bool    // any of Disks reports rotational; nil when none can say
	// Virtual: every one of Disks is made up by the hypervisor or the
	// kernel (virtio, Xen, loop, zram, ...), so what medium lies below is
	// not known.
	Virtual bool
}

// DiskAt describes the block device that holds path (relative to root,
// "/" on the running node) with the mount table mounts (Mounts). It is
// the one reader of disks: doctor judges the audit log's disk with it and
// bench the disk under its logs.
func DiskAt(root string, mounts []Mount, path string) Disk {
	d := Disk{Path: path}
	m, ok := MountFor(mounts, path)
	if !ok {
		return d
	}
	d.Mount, d.FSType, d.Source = m.MountPoint, m.FSType, m.Source
	dev := m.Device
	// btrfs and overlay report an anonymous device (major 0): use the source.
	if strings.HasPrefix(dev, "0:") && strings.HasPrefix(m.Source, "/dev/") {
		if b, err := os.ReadFile(filepath.Join(root, "/sys/class/block", filepath.Base(m.Source), "dev")); err == nil {
			dev = strings.TrimSpace(string(b))
		}
	}
	d.Device = dev
	if strings.HasPrefix(dev, "0:") {
		return d
	}
	fillDisks(root, &d)
	return d
}

// DiskOfDevice describes block device dev ("major:minor") under root:
// Device, Disks, Rotational and Virtual, as DiskAt does.
func DiskOfDevice(root, dev string) Disk {
	d := Disk{Device: dev}
	fillDisks(root, &d)
	return d
}

// fillDisks sets d's whole disks from d.Device, whether one reports
// rotational, and whether all are virtual.
func fillDisks(root string, d *Disk) {
	whole := WholeDisks(root, d.Device)
	virtual := len(whole) > 0
	for _, w := range whole {
		d.Disks = append(d.Disks, w.Name)
		virtual = virtual && w.Virtual
		if w.Rotational == nil {
			continue
		}
		if d.Rotational == nil {
			d.Rotational = new(bool)
		}
		if *w.Rotational {
			*d.Rotational = true
		}
	}
	d.Virtual = virtual
}

// WholeDisk is a disk that a block device lives on.
type WholeDisk struct {
	Name string // sda, vda, nvme0n1
	// Rotational is the kernel's queue/rotational flag: the disk spins.
	// Nil when it cannot be read.
	Rotational *bool
	// Virtual marks a disk the hypervisor or the kernel makes up (virtio,
	// Xen, loop, zram, nbd, an md or device-mapper device without slaves):
	// its rotational flag says nothing about the medium below.
	Virtual bool
}

// WholeDisks resolves the block device dev ("major:minor") under root to
// the whole disks it lives on, sorted by name: a partition's disk, the
// slaves of a device-mapper or md device, recursively. It returns nil for
// a device /sys does not know.
func WholeDisks(root, dev string) []WholeDisk {
	if root == "" {
		root = "/"
	}
	names := wholeDisks(root, "/sys/dev/block/"+dev, 0)
	sort.Strings(names)
	bfs, bfsErr := blockdevice.NewFS(filepath.Join(root, "/proc"), filepath.Join(root, "/sys"))
	var out []WholeDisk
	for _, name := range names {
		w := WholeDisk{Name: name, Virtual: virtualDisk(root, name)}
		if bfsErr == nil {
			if v, err := bfs.SysBlockDeviceRotational(name); err == nil {
				spins := v == 1
				w.Rotational = &spins
			}
		}
		out = append(out, w)
	}
	return out
}

// wholeDisks resolves a block device (a /sys path relative to root) to the
// names of the whole disks it lives on.
func wholeDisks(root, sysPath string, depth int) []string {
	if depth > 8 {
		return nil
	}
	real, err := filepath.EvalSymlinks(filepath.Join(root, sysPath))
	if err != nil {
		return nil
	}
	if _, err := os.Stat(filepath.Join(real, "partition")); err == nil {
		real = filepath.Dir(real)
	}
	slaves, _ := os.ReadDir(filepath.Join(real, "slaves"))
	if len(slaves) == 0 {
		return []string{filepath.Base(real)}
	}
	var out []string
	for _, s := range slaves {
		rel, err := filepath.Rel(root, filepath.Join(real, "slaves", s.Name()))
		if err != nil {
			continue
		}
		for _, d := range wholeDisks(root, "/"+rel, depth+1) {
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	return out
}

// virtualDisk tells made-up disks by their name, or by a virtio driver.
func virtualDisk(root, name string) bool {
	for _, p := range []string{"vd", "xvd", "loop", "zram", "ram", "nbd", "dm-", "md"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	drv, err := filepath.EvalSymlinks(filepath.Join(root, "/sys/block", name, "device/driver"))
	return err == nil && strings.Contains(filepath.Base(drv), "virtio")
}
