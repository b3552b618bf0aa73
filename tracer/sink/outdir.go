// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/tracer/vocab"
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

// private reports, as a usage error, a directory that users other than
// tracer's own (and root) can write: they could take the names rotation
// needs (a directory at FILE.1, or at FILE between the rename and the
// create) and stop it for good. The sticky bit does not help: it keeps
// them from removing tracer's files, not from making names of their own.
// The rule is logrotate's, which refuses such directories too, with the
// owner added.
func (d *OutputDir) private(file string) error {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return fmt.Errorf("looking at %s: %w", d.path, err)
	}
	uid := uint32(os.Geteuid())
	var who string
	switch {
	case st.Uid != uid && st.Uid != 0:
		who = fmt.Sprintf("it belongs to uid %d", st.Uid)
	case st.Mode&unix.S_IWOTH != 0:
		who = "every user can write it"
	case st.Mode&unix.S_IWGRP != 0 && st.Gid != 0:
		who = fmt.Sprintf("group %d can write it", st.Gid)
	default:
		return nil
	}
	return vocab.Usagef("cannot rotate %s: other users can write its directory %s (%s) and could stop rotation: write --output to a directory only root writes, e.g. /var/log/tracer", file, d.path, who)
}

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
