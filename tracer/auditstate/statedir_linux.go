// SPDX-License-Identifier: Apache-2.0

package auditstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/vocab"
	"golang.org/x/sys/unix"
)

// OpenStateDir opens dir, the directory where tracers record what they
// changed on the node (StateDir), making it (0700) where it is missing.
// What is in it decides what `tracer cleanup` undoes as root, so dir must
// be a directory, not a symbolic link, of tracer's own user (root) that
// neither group nor others can write, and so must every file in it;
// otherwise another user could have made it or put something there, and
// it is refused in one line (a usage error: exit status 2) and nothing in it is used.
func OpenStateDir(dir string) (*os.File, error) {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("creating state dir %s (tracer needs it writable, e.g. a hostPath volume in a pod): %w", dir, err)
	}
	f, err := openStateDir(dir)
	if err != nil {
		return nil, err
	}
	names, err := f.Readdirnames(-1)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	for _, n := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(int(f.Fd()), n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // removed meanwhile by a tracer that left
			}
			f.Close()
			return nil, fmt.Errorf("looking at %s: %w", filepath.Join(dir, n), err)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFSOCK && st.Uid == uint32(os.Geteuid()) {
			// Our own metrics socket (--metrics-addr unix:/run/tracer/...):
			// no state is read from it, and only root can create one here.
			continue
		}
		if err := trustedState(filepath.Join(dir, n), &st, unix.S_IFREG); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// openStateDir opens dir, checked as OpenStateDir says, without making
// it or looking at its files. The path to it follows no symbolic link
// another user controls (host.OpenDirNoFollow).
func openStateDir(dir string) (*os.File, error) {
	parent, err := host.OpenDirNoFollow(filepath.Dir(dir))
	if err != nil {
		return nil, err
	}
	defer unix.Close(parent)
	fd, err := unix.Openat(parent, filepath.Base(dir), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return nil, vocab.Usagef("state dir %s is not a directory (a symbolic link?): another user may have made it; tracer uses nothing in it until it is removed (rm %s)", dir, dir)
		}
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	f := os.NewFile(uintptr(fd), dir)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	if err := trustedState(dir, &st, unix.S_IFDIR); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// trustedState says why a state directory or file (st, of type typ) is
// one another user could have made or changed, or nil.
func trustedState(path string, st *unix.Stat_t, typ uint32) error {
	me := uint32(os.Geteuid())
	var why string
	switch {
	case st.Mode&unix.S_IFMT != typ:
		why = "is not a " + map[uint32]string{unix.S_IFREG: "regular file", unix.S_IFDIR: "directory"}[typ] + " (a symbolic link?)"
	case st.Uid != me:
		why = "belongs to uid " + strconv.Itoa(int(st.Uid))
	case st.Mode&0o022 != 0:
		why = fmt.Sprintf("is writable by group or others (mode %04o)", st.Mode&0o7777)
	case typ == unix.S_IFREG && st.Nlink != 1:
		why = "has more than one hard link"
	default:
		return nil
	}
	return vocab.Usagef("tracer state %s %s: another user may have made or changed it, so tracer uses none of it; check it, remove it (rm -r %s) and run again", path, why, path)
}

// ReadStateFile reads name in state directory dir, both checked as
// OpenStateDir says.
func ReadStateFile(dir, name string) ([]byte, error) {
	d, err := openStateDir(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	path := filepath.Join(dir, name)
	fd, err := unix.Openat(int(d.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, vocab.Usagef("tracer state %s is a symbolic link: another user may have made it, so tracer uses none of it; remove it (rm %s) and run again", path, path)
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if err := trustedState(path, &st, unix.S_IFREG); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

// WriteStateFile replaces name in state directory dir with b, atomically:
// a reader (a tracer starting, `tracer cleanup` after a crash or power
// loss) finds the old content or the new, never a part. It writes a file
// of its own, syncs it, renames it over name and syncs the directory.
func WriteStateFile(dir, name string, b []byte) error {
	d, err := openStateDir(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	dfd := int(d.Fd())
	path := filepath.Join(dir, name)
	tmp := "." + name + "." + strconv.Itoa(os.Getpid()) + ".tmp"
	_ = unix.Unlinkat(dfd, tmp, 0)
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dfd, tmp, dfd, name)
	}
	if err == nil {
		err = unix.Fsync(dfd)
	}
	if err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// Lock opens StateDir (checked as OpenStateDir says) and takes its flock,
// under which tracers and benches change the node's audit state and the
// records of it, so that those starting and stopping at once agree on who
// is last. The returned func releases it.
func Lock() (unlock func(), err error) {
	// The directory itself is the lock: nothing is left behind for it.
	f, err := OpenStateDir(StateDir)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking state dir: %w", err)
	}
	return func() { _ = f.Close() }, nil
}

// WriteJSON replaces state file name in StateDir with v as JSON,
// atomically (WriteStateFile).
func WriteJSON(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return WriteStateFile(StateDir, name, b)
}

// ReadJSON reads state file name in StateDir into v, both checked as
// OpenStateDir says.
func ReadJSON(name string, v any) error {
	b, err := ReadStateFile(StateDir, name)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
