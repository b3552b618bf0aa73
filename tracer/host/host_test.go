// SPDX-License-Identifier: Apache-2.0

package host

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
)

// TestELF32 tells 32-bit executables from others: by the header, and on
// the running test binary (moved here from auditrules' TestIsELF32).
func TestELF32(t *testing.T) {
	if ELFClass([]byte("\x7fELF\x01")) != 32 || ELFClass([]byte("\x7fELF\x02")) == 32 || ELFClass([]byte("#!/bi")) == 32 {
		t.Error("ELFClass misreads the ELF class")
	}
	self, _ := os.Executable()
	hdr := make([]byte, 5)
	f, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Read(hdr)
	if ELFClass(hdr) == 32 {
		t.Error("this 64-bit test binary reads as 32-bit")
	}
}

func TestExeClass(t *testing.T) {
	proc := t.TempDir()
	write := func(pid int, content string) {
		t.Helper()
		dir := filepath.Join(proc, strconv.Itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "exe"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(1, "\x7fELF\x02\x01\x01\x00")
	write(2, "\x7fELF\x01\x01\x01\x00")
	write(3, "#!/bin/sh\n")
	write(4, "\x7fE")
	for pid, want := range map[int]int{1: 64, 2: 32, 3: 0} {
		if got, err := ExeClass(proc, pid); err != nil || got != want {
			t.Errorf("ExeClass(%d) = %d, %v; want %d", pid, got, err, want)
		}
	}
	if _, err := ExeClass(proc, 4); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short executable: %v", err)
	}
	if _, err := ExeClass(proc, 5); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no process: %v", err)
	}
}

func TestMountsUnescape(t *testing.T) {
	proc := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proc, "self"), 0o755); err != nil {
		t.Fatal(err)
	}
	info := "36 35 98:0 /sub\\134dir /mnt/a\\040b\\011c rw,noatime master:1 - ext3 /dev/my\\040disk rw,errors=continue\n" +
		"37 35 0:12 / /sys/kernel/tracing rw,relatime - tracefs tracefs rw\n"
	if err := os.WriteFile(filepath.Join(proc, "self", "mountinfo"), []byte(info), 0o644); err != nil {
		t.Fatal(err)
	}
	ms, err := Mounts(proc)
	if err != nil {
		t.Fatal(err)
	}
	want := []Mount{
		{Device: "98:0", Root: `/sub\dir`, MountPoint: "/mnt/a b\tc", FSType: "ext3", Source: "/dev/my disk",
			Options: map[string]string{"rw": "", "noatime": ""}, SuperOptions: map[string]string{"rw": "", "errors": "continue"}},
		{Device: "0:12", Root: "/", MountPoint: "/sys/kernel/tracing", FSType: "tracefs", Source: "tracefs",
			Options: map[string]string{"rw": "", "relatime": ""}, SuperOptions: map[string]string{"rw": ""}},
	}
	if !reflect.DeepEqual(ms, want) {
		t.Errorf("mounts\n got %+v\nwant %+v", ms, want)
	}
	if m, ok := MountFor(ms, "/mnt/a b\tc/x"); !ok || m.Device != "98:0" {
		t.Errorf("MountFor: %+v %v", m, ok)
	}
	if _, err := Mounts(filepath.Join(proc, "missing")); err == nil {
		t.Error("no error for a missing proc root")
	}
}

// The lines bench's own mountinfo parser was tested on (moved here with
// it): a mount point with an escaped space, and a cgroup v1 hierarchy
// whose controller is a filesystem option.
func TestMountLines(t *testing.T) {
	proc := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proc, "self"), 0o755); err != nil {
		t.Fatal(err)
	}
	info := `36 35 98:0 /mnt1 /mnt\0402 rw,noatime master:1 - ext3 /dev/root rw,errors=continue` + "\n" +
		`30 25 0:26 / /sys/fs/cgroup/blkio rw,relatime shared:12 - cgroup cgroup rw,blkio` + "\n" +
		`31 25 0:27 /sub /sys/fs/cgroup/unified/sub rw,relatime - cgroup2 cgroup2 rw` + "\n" +
		`32 25 0:27 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw` + "\n"
	if err := os.WriteFile(filepath.Join(proc, "self", "mountinfo"), []byte(info), 0o644); err != nil {
		t.Fatal(err)
	}
	ms, err := Mounts(proc)
	if err != nil {
		t.Fatal(err)
	}
	if m := ms[0]; m.Device != "98:0" || m.MountPoint != "/mnt 2" || m.FSType != "ext3" {
		t.Errorf("ext3 line = %+v", m)
	}
	if _, ok := ms[0].Options["noatime"]; !ok {
		t.Errorf("noatime missing from %v", ms[0].Options)
	}
	if p, ok := CgroupV1Mount(ms, "blkio"); !ok || p != "/sys/fs/cgroup/blkio" {
		t.Errorf("blkio hierarchy %q %v", p, ok)
	}
	if p, ok := CgroupV1Mount(ms, "blk"); ok {
		t.Errorf("blk taken for a controller at %q", p)
	}
	// A bind mount of a subdirectory is not the hierarchy's root.
	if p, ok := CgroupV2Mount(ms); !ok || p != "/sys/fs/cgroup/unified" {
		t.Errorf("cgroup v2 at %q %v", p, ok)
	}
	if _, ok := CgroupV2Mount(ms[:2]); ok {
		t.Error("a cgroup v2 hierarchy found where none is mounted")
	}
}

func TestCgroupControllers(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte("cpuset cpu io memory pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := CgroupControllers(dir); !reflect.DeepEqual(got, []string{"cpuset", "cpu", "io", "memory", "pids"}) {
		t.Errorf("controllers %q", got)
	}
	if got := CgroupSubtree(dir); len(got) != 0 {
		t.Errorf("subtree %q, want none enabled", got)
	}
	if got := CgroupControllers(filepath.Join(dir, "gone")); got != nil {
		t.Errorf("controllers of a missing cgroup %q", got)
	}
}
