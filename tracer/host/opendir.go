// SPDX-License-Identifier: Apache-2.0

package host

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// maxLinks is how many symbolic links a walk follows, as the kernel's 40.
const maxLinks = 40

// OpenDirNoFollow opens directory dir (an O_PATH descriptor where the
// system has it; close it with unix.Close) without following a symbolic
// link that another user owns, or that sits in a directory another user
// could replace it in (group- or other-writable without the sticky bit, or
// not root's nor tracer's own). A path without symbolic links is opened in
// one openat2(RESOLVE_NO_SYMLINKS) where the kernel has it (5.6 and
// later); otherwise, and for a path with links, it is walked a component
// at a time with O_NOFOLLOW, each link checked before it is followed.
func OpenDirNoFollow(dir string) (int, error) {
	if fd, err := openat2NoSymlinks(dir); err == nil {
		return fd, nil
	}
	start := "."
	if filepath.IsAbs(dir) {
		start = "/"
	}
	fd, err := unix.Open(start, oPath|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: start, Err: err}
	}
	todo := strings.Split(dir, "/")
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		if c == "" || c == "." {
			continue
		}
		next, err := unix.Openat(fd, c, oPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
			fd = next
			continue
		}
		var st unix.Stat_t
		if serr := unix.Fstatat(fd, c, &st, unix.AT_SYMLINK_NOFOLLOW); serr != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
			unix.Close(fd)
			return -1, &os.PathError{Op: "open", Path: dir, Err: err}
		}
		if links++; links > maxLinks {
			unix.Close(fd)
			return -1, &os.PathError{Op: "open", Path: dir, Err: unix.ELOOP}
		}
		if why := untrustedLink(fd, &st); why != "" {
			unix.Close(fd)
			return -1, vocab.Usagef("%s: %s is a symbolic link that %s, so another user could point it elsewhere: tracer does not follow it; name the real directory", filepath.Clean(dir), c, why)
		}
		target, err := readlinkat(fd, c)
		if err != nil {
			unix.Close(fd)
			return -1, &os.PathError{Op: "readlink", Path: dir, Err: err}
		}
		if filepath.IsAbs(target) {
			root, err := unix.Open("/", oPath|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				unix.Close(fd)
				return -1, &os.PathError{Op: "open", Path: "/", Err: err}
			}
			unix.Close(fd)
			fd = root
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return fd, nil
}

// untrustedLink says why a symbolic link (st) in directory dirfd is one
// another user controls, or "".
func untrustedLink(dirfd int, st *unix.Stat_t) string {
	me := uint32(os.Geteuid())
	if st.Uid != 0 && st.Uid != me {
		return fmt.Sprintf("belongs to uid %d", st.Uid)
	}
	var d unix.Stat_t
	if err := unix.Fstat(dirfd, &d); err != nil {
		return "is in a directory tracer cannot look at"
	}
	if d.Uid != 0 && d.Uid != me {
		return fmt.Sprintf("is in a directory of uid %d", d.Uid)
	}
	if d.Mode&0o022 != 0 && d.Mode&unix.S_ISVTX == 0 {
		return "is in a directory others can write"
	}
	return ""
}

func readlinkat(dirfd int, name string) (string, error) {
	for n := 256; ; n *= 2 {
		b := make([]byte, n)
		k, err := unix.Readlinkat(dirfd, name, b)
		if err != nil {
			return "", err
		}
		if k < n {
			return string(b[:k]), nil
		}
	}
}
