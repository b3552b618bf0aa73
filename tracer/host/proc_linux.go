// SPDX-License-Identifier: Apache-2.0

//go:build linux

package host

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

func readBootID() []byte {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return b
}

// ReadProcStat reads and parses /proc/PID/stat (ParseProcStat).
func ReadProcStat(pid uint32) (ProcStat, error) {
	bp := procBufs.Get().(*[]byte)
	defer procBufs.Put(bp)
	path := "/proc/" + strconv.FormatUint(uint64(pid), 10) + "/stat"
	stat, err := readProcFile(path, bp)
	if err != nil {
		return ProcStat{}, fmt.Errorf("reading process %d: %w", pid, err)
	}
	st, ok := ParseProcStat(stat)
	if !ok {
		return ProcStat{}, fmt.Errorf("parsing %s", path)
	}
	return st, nil
}

// ReadProcCgroup reads pid's cgroup path (ParseProcCgroup); ok is false
// when the process is gone or /proc names none.
func ReadProcCgroup(pid uint32) (string, bool) {
	bp := procBufs.Get().(*[]byte)
	defer procBufs.Put(bp)
	cg, err := readProcFile("/proc/"+strconv.FormatUint(uint64(pid), 10)+"/cgroup", bp)
	if err != nil {
		return "", false
	}
	return ParseProcCgroup(cg)
}

// ReadStartTicks reads only pid's start time (for a parent's exec id).
func ReadStartTicks(pid uint32) (uint64, bool) {
	bp := procBufs.Get().(*[]byte)
	defer procBufs.Put(bp)
	stat, err := readProcFile("/proc/"+strconv.FormatUint(uint64(pid), 10)+"/stat", bp)
	if err != nil {
		return 0, false
	}
	_, start, ok := ParseStat(stat)
	return start, ok
}

// procBufs are the buffers of the /proc reads on the event path.
var procBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// readProcFile reads a small /proc file into *bp (grown as needed) with
// plain syscalls. os.ReadFile stats the file, registers it with the
// netpoller and allocates a File: the audit backend reads two files per
// fork and per exec, and those steps were half its CPU at a few hundred
// execs a second. The bytes are valid until *bp is used again.
func readProcFile(path string, bp *[]byte) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	b := (*bp)[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			*bp = b
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			*bp = b
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

// CgroupMount finds where the cgroup v2 hierarchy is mounted: /sys/fs/cgroup
// on unified nodes, /sys/fs/cgroup/unified on hybrid ones (CgroupV2Mount,
// the one reader of it).
func CgroupMount() (string, error) {
	mounts, err := Mounts("/proc")
	if err != nil {
		return "", err
	}
	m, ok := CgroupV2Mount(mounts)
	if !ok {
		return "", errors.New("no cgroup v2 hierarchy is mounted (mount -t cgroup2 none /sys/fs/cgroup)")
	}
	return m, nil
}

// CgroupID is the kernel's id of the cgroup v2 at path (relative to the
// hierarchy's root, e.g. /system.slice/nginx.service): the inode number of
// its directory, which bpf_get_current_cgroup_id returns for its members.
// level is its depth (the root is 0, /a/b is 2).
func CgroupID(mount, path string) (id uint64, level int, err error) {
	clean := strings.Trim(path, "/")
	var st unix.Stat_t
	if err := unix.Stat(mount+"/"+clean, &st); err != nil {
		return 0, 0, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return 0, 0, fmt.Errorf("%s is not a cgroup directory", path)
	}
	if clean != "" {
		level = strings.Count(clean, "/") + 1
	}
	return st.Ino, level, nil
}
