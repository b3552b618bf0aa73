// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// errReaderGone ends a watch whose stdout pipe lost its reader.
var errReaderGone = errors.New("the reader of stdout went away")

// stopOnHangup calls stop(errReaderGone) when out is a pipe and its reader
// goes away (`| head` exits): the kernel reports POLLERR on the write end
// at once, where a write would find EPIPE only at the next event, which
// on a quiet node may be minutes away.
func stopOnHangup(out *os.File, stop func(error)) {
	// Not out.Fd(), which would make the file blocking.
	rc, err := out.SyscallConn()
	if err != nil {
		return
	}
	fd := -1
	_ = rc.Control(func(f uintptr) { fd = int(f) })
	var st unix.Stat_t
	if fd < 0 || unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return
	}
	go func() {
		// Events 0: only POLLERR, POLLHUP and POLLNVAL wake it.
		fds := []unix.PollFd{{Fd: int32(fd)}}
		for {
			n, err := unix.Poll(fds, -1)
			if errors.Is(err, unix.EINTR) || (err == nil && n == 0) {
				continue
			}
			if err == nil && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
				stop(errReaderGone)
			}
			return
		}
	}()
}
