// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfbackend

import (
	"encoding/binary"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// maxCgroups bounds the names kept: a node that makes containers all day
// makes cgroup ids without end (they are never reused).
const maxCgroups = 4096

// fileIDKernfs is the file handle type of cgroupfs (kernfs) inodes: the
// handle is the 8-byte cgroup id, so a cgroup is opened by id.
const fileIDKernfs = 0xfe

type cgroupEntry struct {
	info tracer.CgroupInfo
	ok   bool
}

// cgroupNames maps the cgroup ids the BPF programs report
// (bpf_get_current_cgroup_id) to cgroup v2 paths, container ids and units.
// A cgroup is opened by its id (open_by_handle_at) and its path read back
// from /proc/self/fd; where that fails, the hierarchy is walked once for
// the id. A cgroup removed before its first event is read cannot be named.
type cgroupNames struct {
	mount string // where the cgroup v2 hierarchy is mounted
	fd    int    // the mount's root directory, -1 when there is none
	root  uint64 // the root cgroup's id
	cache map[uint64]cgroupEntry
}

func newCgroupNames() *cgroupNames {
	c := &cgroupNames{fd: -1, cache: make(map[uint64]cgroupEntry)}
	mount, err := host.CgroupMount()
	if err != nil {
		return c // every lookup fails: no cgroup field
	}
	fd, err := unix.Open(mount, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return c
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil {
		c.root = st.Ino
	}
	c.mount, c.fd = mount, fd
	return c
}

func (c *cgroupNames) close() {
	if c != nil && c.fd >= 0 {
		_ = unix.Close(c.fd)
		c.fd = -1
	}
}

// lookup names cgroup id; ok is false when it cannot.
func (c *cgroupNames) lookup(id uint64) (tracer.CgroupInfo, bool) {
	if e, ok := c.cache[id]; ok {
		return e.info, e.ok
	}
	path, ok := c.resolve(id)
	if !ok {
		path, ok = c.walk(id)
	}
	e := cgroupEntry{ok: ok}
	if ok {
		e.info = tracer.NewCgroupInfo(path)
	}
	c.put(id, e)
	return e.info, e.ok
}

func (c *cgroupNames) put(id uint64, e cgroupEntry) {
	if len(c.cache) >= maxCgroups {
		clear(c.cache)
	}
	c.cache[id] = e
}

// resolve opens the cgroup by id and reads its path back.
func (c *cgroupNames) resolve(id uint64) (string, bool) {
	if c.fd < 0 {
		return "", false
	}
	if id == c.root {
		return "/", true
	}
	var h [8]byte
	binary.NativeEndian.PutUint64(h[:], id)
	fd, err := unix.OpenByHandleAt(c.fd, unix.NewFileHandle(fileIDKernfs, h[:]), unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return "", false
	}
	defer unix.Close(fd)
	target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return "", false
	}
	return c.relative(target)
}

func (c *cgroupNames) relative(abs string) (string, bool) {
	rel, ok := strings.CutPrefix(abs, c.mount)
	if !ok || strings.HasSuffix(rel, " (deleted)") {
		return "", false
	}
	if rel == "" {
		rel = "/"
	}
	return rel, true
}

// walk looks for id in the hierarchy, naming what it passes on the way.
func (c *cgroupNames) walk(id uint64) (string, bool) {
	if c.fd < 0 {
		return "", false
	}
	found := ""
	_ = filepath.WalkDir(c.mount, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		if rel, ok := c.relative(p); ok {
			if _, seen := c.cache[st.Ino]; !seen {
				c.put(st.Ino, cgroupEntry{info: tracer.NewCgroupInfo(rel), ok: true})
			}
			if st.Ino == id {
				found = rel
				return fs.SkipAll
			}
		}
		return nil
	})
	return found, found != ""
}

// cgroupScope is --cgroup as the kernel filter takes it: the cgroup's id
// and its depth, to compare with the ancestor at that depth of each
// event's cgroup.
type cgroupScope struct {
	id    uint64
	level uint32
}

func cgroupFilter(path string) (cgroupScope, error) {
	if path == "" {
		return cgroupScope{}, nil
	}
	mount, err := host.CgroupMount()
	if err != nil {
		return cgroupScope{}, vocab.Usagef("--cgroup needs cgroup v2: %w", err)
	}
	clean := tracer.CleanCgroup(path)
	id, level, err := host.CgroupID(mount, clean)
	if err != nil {
		return cgroupScope{}, vocab.Usagef("--cgroup %s: no such cgroup under %s (%v): give a path as in /proc/PID/cgroup, e.g. /system.slice/nginx.service",
			path, mount, unwrapPathError(err))
	}
	if level == 0 {
		return cgroupScope{}, nil // the root holds everything
	}
	return cgroupScope{id: id, level: uint32(level)}, nil
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

// newDecoder is a decoder that names cgroups.
func (b *Backend) newDecoder() *decoder {
	d := newDecoder()
	b.mu.Lock()
	d.cgroups = b.cgroups
	d.limit = b.cfg.RateLimit
	b.mu.Unlock()
	d.exes = newExeCache(exeCacheMax, readProcExe)
	return d
}
