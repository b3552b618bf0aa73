// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// CreateOutput creates or truncates a file the user named for tracer to
// write: --output, --stats-file, bench result files, reports, profiles.
// tracer runs as root on nodes other users share, and these files often
// sit in directories they can write (/tmp), so it is the one place every
// such file is opened, and it trusts nothing another user could have put
// in the way:
//
//   - a new file is created with mode 0600 (its content shows what runs on
//     the node), whatever the umask;
//   - an existing name must be a regular file of tracer's own user with one
//     link (else another user could read what is written there: a file
//     they made, another name of a hard link), or a character device of
//     its user (/dev/null); a symbolic link, a FIFO (opening one would hang)
//     or anything else is a UsageError, and so is a file swapped in between
//     the look and the open;
//   - the directories on the way are resolved without following a symbolic
//     link another user owns or could replace (one in /tmp, say).
//
// An existing file of its own is truncated and keeps its mode, as the
// shell's > does.
func CreateOutput(path string) (*os.File, error) {
	dir, name, err := openParent(path)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dir)
	return createAt(dir, name, path, false, true)
}

// createAt creates or opens name in directory dir for CreateOutput and
// OutputDir: appending opens it O_APPEND, truncating empties an existing
// file. path names it in errors.
func createAt(dir int, name, path string, appending, truncating bool) (*os.File, error) {
	app := 0
	if appending {
		app = unix.O_APPEND
	}
	// Twice at most: a name created or removed between the look and the
	// open is looked at again, once.
	for range 2 {
		var st unix.Stat_t
		err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) {
			fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC|app, 0o600)
			if errors.Is(err, unix.EEXIST) {
				continue
			}
			if err != nil {
				return nil, &os.PathError{Op: "create", Path: path, Err: err}
			}
			// 0600 whatever the umask: the umask can only remove bits, but
			// say it rather than rely on it.
			_ = unix.Fchmod(fd, 0o600)
			return os.NewFile(uintptr(fd), path), nil
		}
		if err != nil {
			return nil, &os.PathError{Op: "stat", Path: path, Err: err}
		}
		if err := usableOutput(path, &st); err != nil {
			return nil, err
		}
		// O_NONBLOCK: a FIFO swapped in after the look cannot hang the open.
		fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC|app, 0)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENXIO) {
				return nil, vocab.Usagef("%s changed while tracer opened it: another user may be at work there; remove it or name another file", path)
			}
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		// What was opened must be what was looked at.
		var got unix.Stat_t
		if err := unix.Fstat(fd, &got); err != nil {
			unix.Close(fd)
			return nil, &os.PathError{Op: "stat", Path: path, Err: err}
		}
		if got.Dev != st.Dev || got.Ino != st.Ino {
			unix.Close(fd)
			return nil, vocab.Usagef("%s changed while tracer opened it: another user may be at work there; remove it or name another file", path)
		}
		if err := usableOutput(path, &got); err != nil {
			unix.Close(fd)
			return nil, err
		}
		if got.Mode&unix.S_IFMT == unix.S_IFREG && truncating {
			err = unix.Ftruncate(fd, 0)
		}
		if err == nil {
			err = unix.SetNonblock(fd, false)
		}
		if err != nil {
			unix.Close(fd)
			return nil, &os.PathError{Op: "truncate", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
	return nil, vocab.Usagef("%s keeps changing while tracer opens it: another user may be at work there; remove it or name another file", path)
}

// CheckOutput reports early, before long work, whether CreateOutput will
// refuse path, for the same reasons. It creates nothing.
func CheckOutput(path string) error {
	dir, name, err := openParent(path)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	var st unix.Stat_t
	switch err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case errors.Is(err, unix.ENOENT):
		return nil
	case err != nil:
		return &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return usableOutput(path, &st)
}

// usableOutput says why an existing name is not one tracer writes to.
func usableOutput(path string, st *unix.Stat_t) error {
	me := uint32(os.Geteuid())
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if st.Uid != me {
			return vocab.Usagef("%s exists and belongs to uid %d, not to uid %d that tracer runs as: another user may read what is written there; remove it or name another file", path, st.Uid, me)
		}
		if st.Nlink != 1 {
			return vocab.Usagef("%s has %d hard links: another name of it may be readable by another user; remove it or name another file", path, st.Nlink)
		}
		return nil
	case unix.S_IFCHR:
		// /dev/null: only root makes device nodes.
		if st.Uid != me && st.Uid != 0 {
			return vocab.Usagef("%s is a device of uid %d: name a file (or - for stdout)", path, st.Uid)
		}
		return nil
	case unix.S_IFLNK:
		return symlinkError(path)
	case unix.S_IFDIR:
		return vocab.Usagef("%s is a directory: name a file", path)
	case unix.S_IFIFO:
		return vocab.Usagef("%s is a FIFO, which tracer does not write to (its reader could be anyone, and opening it can hang): name a file, or - for stdout and a pipe", path)
	}
	return vocab.Usagef("%s exists and is not a regular file: name a file (or - for stdout)", path)
}

func symlinkError(path string) error {
	return vocab.Usagef("%s is a symbolic link, which tracer does not write through: name the file itself (or - for stdout)", path)
}

// openParent opens the directory path names its file in, without
// following symbolic links another user controls, and returns it with
// the file's name in it.
func openParent(path string) (int, string, error) {
	dir, name := filepath.Split(path)
	if name == "" || name == "." || name == ".." {
		return -1, "", vocab.Usagef("%s is a directory: name a file", path)
	}
	if dir == "" {
		dir = "."
	}
	fd, err := host.OpenDirNoFollow(dir)
	switch {
	case err == nil:
		return fd, name, nil
	case errors.Is(err, vocab.ErrUsage):
		return -1, "", err
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
		return -1, "", vocab.Usagef("cannot create %s: directory %s does not exist", path, filepath.Clean(dir))
	}
	return -1, "", fmt.Errorf("opening the directory of %s: %w", path, err)
}
