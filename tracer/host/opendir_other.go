// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package host

import "golang.org/x/sys/unix"

const oPath = unix.O_RDONLY

func openat2NoSymlinks(string) (int, error) { return -1, unix.ENOSYS }
