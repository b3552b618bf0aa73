//go:build linux

package tracer

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/tracer/node/host"
)

func readBootID() []byte {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return b
}

// ReadProcIdentity reads pid's identity from /proc. It fails once the
// process is reaped (a zombie still answers).
func ReadProcIdentity(pid uint32) (ProcIdentity, error) {
	return ReadProcParts(pid, true, true)
}

// ReadProcParts reads what of pid's identity is asked for: from its stat
// file the exec id, parent and comm; its cgroup. Read alone, the cgroup of
// a zombie is the root's ("/"), which then may not be where it ran.
func ReadProcParts(pid uint32, stat, cgroup bool) (ProcIdentity, error) {
	var id ProcIdentity
	bp := procBufs.Get().(*[]byte)
	defer procBufs.Put(bp)
	dir := "/proc/" + strconv.FormatUint(uint64(pid), 10)
	if !stat {
		cg, err := readProcFile(dir+"/cgroup", bp)
		if err != nil {
			return id, fmt.Errorf("reading process %d: %w", pid, err)
		}
		id.Cgroup, _ = ParseProcCgroup(cg)
		return id, nil
	}
	st, err := readProcFile(dir+"/stat", bp)
	if err != nil {
		return id, fmt.Errorf("reading process %d: %w", pid, err)
	}
	ps, ok := ParseProcStat(st)
	if !ok {
		return id, fmt.Errorf("parsing %s/stat", dir)
	}
	id.ExecID, id.PPID, id.Comm = ExecID{PID: pid, Start: ps.Start}, ps.PPID, ps.Comm
	// A zombie has left its cgroup: /proc shows it in the root ("0::/").
	// Its cgroup is unknown, not the root.
	if !cgroup || ps.State == 'Z' {
		return id, nil
	}
	if cg, err := readProcFile(dir+"/cgroup", bp); err == nil {
		id.Cgroup, _ = ParseProcCgroup(cg)
	}
	return id, nil
}

// ReadStartTicks reads only pid's start time (for a parent's ExecID).
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
// on unified nodes, /sys/fs/cgroup/unified on hybrid ones (host.CgroupV2Mount,
// the one reader of it).
func CgroupMount() (string, error) {
	mounts, err := host.Mounts("/proc")
	if err != nil {
		return "", err
	}
	m, ok := host.CgroupV2Mount(mounts)
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

// CheckCgroup fails with a usage error unless path names a cgroup v2.
func CheckCgroup(path string) error {
	mount, err := CgroupMount()
	if err != nil {
		return Usagef("--cgroup needs cgroup v2: %w", err)
	}
	if _, _, err := CgroupID(mount, CleanCgroup(path)); err != nil {
		return Usagef("--cgroup %s: no such cgroup under %s (%w): give a path as in /proc/PID/cgroup, e.g. /system.slice/nginx.service", path, mount, err)
	}
	return nil
}

// readProcLineage names the live process id: its comm and its parent's
// exec id. A process with id's pid but another start time is not id.
func readProcLineage(id ExecID) (string, ExecID, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(id.PID), 10) + "/stat")
	if err != nil {
		return "", ExecID{}, false
	}
	ppid, start, ok := ParseStat(stat)
	if !ok || start != id.Start {
		return "", ExecID{}, false
	}
	comm := ""
	if i, j := strings.IndexByte(string(stat), '('), strings.LastIndexByte(string(stat), ')'); i >= 0 && j > i {
		comm = string(stat[i+1 : j])
	}
	var parent ExecID
	if ppid != 0 {
		if pstart, ok := ReadStartTicks(ppid); ok {
			parent = ExecID{PID: ppid, Start: pstart}
		}
	}
	return comm, parent, true
}
