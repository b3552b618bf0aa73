// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// OutputDir is the directory of an output file that tracer rotates,
// opened once the way CreateOutput opens one: the rotated files are
// renamed, removed and created by their names in it, never through a
// path resolved again (another user could have swapped a link in).
type OutputDir struct {
	fd   int
	path string // the directory, for messages
}

// OpenOutputDir opens the directory of path, the way CreateOutput does,
// and returns it with the file's name in it.
func OpenOutputDir(path string) (*OutputDir, string, error) {
	fd, name, err := openParent(path)
	if err != nil {
		return nil, "", err
	}
	return &OutputDir{fd: fd, path: filepath.Dir(path)}, name, nil
}

func (d *OutputDir) join(name string) string { return filepath.Join(d.path, name) }

// Append opens name for appending (O_APPEND): created 0600 when missing;
// an existing name must pass CreateOutput's checks, and what it holds is
// kept (a log that a restarted tracer, or one told to reopen it,
// continues).
func (d *OutputDir) Append(name string) (*os.File, error) {
	return createAt(d.fd, name, d.join(name), true, false)
}

// Create opens name as CreateOutput does, emptied, but for appending
// (O_APPEND): when another program empties the file (logrotate's
// copytruncate), writing goes on at its new end, not at the old offset
// behind a hole.
func (d *OutputDir) Create(name string) (*os.File, error) {
	return createAt(d.fd, name, d.join(name), true, true)
}

// Rename renames from to to. Whatever to is, a symbolic link another user
// made included, the name is replaced, never followed: rename(2) works on
// names. A from that is not there is reported as fs.ErrNotExist.
func (d *OutputDir) Rename(from, to string) error {
	if err := unix.Renameat(d.fd, from, d.fd, to); err != nil {
		return &os.LinkError{Op: "rename", Old: d.join(from), New: d.join(to), Err: err}
	}
	return nil
}

// Remove removes name, whatever it is but a directory; a name that is
// not there is not an error.
func (d *OutputDir) Remove(name string) error {
	if err := unix.Unlinkat(d.fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "remove", Path: d.join(name), Err: err}
	}
	return nil
}

// Own reports whether name is a regular file of tracer's own user, as the
// files tracer rotated are: a name another user left (a symbolic link, a
// file of theirs) is not carried along the rotated files.
func (d *OutputDir) Own(name string) bool {
	var st unix.Stat_t
	if unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFREG && st.Uid == uint32(os.Geteuid())
}

// Holds reports whether name is the file f has open: false once the file
// was renamed away (logrotate) or another took its name.
func (d *OutputDir) Holds(name string, f *os.File) bool {
	var a, b unix.Stat_t
	if unix.Fstatat(d.fd, name, &a, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fstat(int(fd), &b) }); err != nil || serr != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}

// Close closes the directory.
func (d *OutputDir) Close() error {
	if d.fd < 0 {
		return nil
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}
