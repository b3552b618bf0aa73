// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
)

// cpioWriter writes the kernel's initramfs format (cpio "newc"). Every
// entry is root's and device nodes are plain header fields, so building
// the guest's root file system needs no privilege on the host.
type cpioWriter struct {
	w   *bufio.Writer
	ino uint32
	off int64
	err error
}

func newCpio(w io.Writer) *cpioWriter { return &cpioWriter{w: bufio.NewWriterSize(w, 1<<20)} }

const (
	modeDir     = 0o040000
	modeFile    = 0o100000
	modeSymlink = 0o120000
	modeChar    = 0o020000
)

func (c *cpioWriter) entry(name string, mode uint32, rdevMajor, rdevMinor uint32, data []byte) {
	if c.err != nil {
		return
	}
	c.ino++
	nlink := uint32(1)
	if mode&0o170000 == modeDir {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rdevMajor, rdevMinor, len(name)+1, 0)
	c.write([]byte(hdr))
	c.write([]byte(name + "\x00"))
	c.pad()
	c.write(data)
	c.pad()
}

func (c *cpioWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	n, err := c.w.Write(b)
	c.off += int64(n)
	c.err = err
}

func (c *cpioWriter) pad() {
	if r := c.off % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

// Dir, File, Symlink and CharDev add an entry; a path's directories must
// come before it.
func (c *cpioWriter) Dir(name string) { c.entry(name, modeDir|0o755, 0, 0, nil) }
func (c *cpioWriter) File(name string, perm uint32, data []byte) {
	c.entry(name, modeFile|perm, 0, 0, data)
}
func (c *cpioWriter) Symlink(name, target string) {
	c.entry(name, modeSymlink|0o777, 0, 0, []byte(target))
}
func (c *cpioWriter) CharDev(name string, major, minor uint32) {
	c.entry(name, modeChar|0o600, major, minor, nil)
}

// Close writes the trailer and flushes.
func (c *cpioWriter) Close() error {
	c.entry("TRAILER!!!", 0, 0, 0, nil)
	if c.err != nil {
		return c.err
	}
	return c.w.Flush()
}

// tree is the guest's root file system before it is written: files by
// path, from the host's files or given contents.
type tree struct {
	files    map[string]treeFile
	symlinks map[string]string
}

type treeFile struct {
	perm uint32
	src  string // a host file, or
	data []byte
}

func newTree() *tree {
	return &tree{files: map[string]treeFile{}, symlinks: map[string]string{}}
}

func (t *tree) add(name string, perm uint32, src string) {
	t.files[name] = treeFile{perm: perm, src: src}
}
func (t *tree) addData(name string, perm uint32, data []byte) {
	t.files[name] = treeFile{perm: perm, data: data}
}

// write writes the tree, each directory before what it holds, with
// /dev/console: the kernel opens it for init before devtmpfs is mounted.
func (t *tree) write(w io.Writer, dirs []string) error {
	c := newCpio(w)
	all := map[string]bool{}
	for _, d := range dirs {
		for p := d; p != "." && p != "/"; p = path.Dir(p) {
			all[p] = true
		}
	}
	for _, m := range []map[string]bool{keys(t.files), keys(t.symlinks)} {
		for p := range m {
			for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
				all[d] = true
			}
		}
	}
	all["dev"] = true
	for _, d := range sorted(all) {
		c.Dir(d)
	}
	c.CharDev("dev/console", 5, 1)
	for _, name := range sorted(keys(t.files)) {
		f := t.files[name]
		data := f.data
		if f.src != "" {
			var err error
			if data, err = os.ReadFile(f.src); err != nil {
				return err
			}
		}
		c.File(name, f.perm, data)
	}
	for _, name := range sorted(keys(t.symlinks)) {
		c.Symlink(name, t.symlinks[name])
	}
	return c.Close()
}

func keys[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

func sorted(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out) // a parent sorts before its children
	return out
}
