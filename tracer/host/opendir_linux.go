// SPDX-License-Identifier: Apache-2.0

package host

import "golang.org/x/sys/unix"

// oPath opens a directory only to resolve names in it: no read permission needed.
const oPath = unix.O_PATH

// openat2NoSymlinks opens dir in one call that fails on any symbolic link
// on the way (ELOOP), or ENOSYS before Linux 5.6: the caller then walks.
func openat2NoSymlinks(dir string) (int, error) {
	return unix.Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}
