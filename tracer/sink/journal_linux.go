// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// sendMemfd passes m to journald in a sealed memfd, as sd_journal_sendv
// does for an entry too large for a datagram: journald takes only a
// memfd sealed against writes and resizes.
func sendMemfd(c *net.UnixConn, m []byte) error {
	fd, err := unix.MemfdCreate("tracer-journal", unix.MFD_ALLOW_SEALING|unix.MFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("memfd_create: %w", err)
	}
	defer unix.Close(fd)
	for off := 0; off < len(m); {
		n, err := unix.Write(fd, m[off:])
		if err != nil {
			return fmt.Errorf("writing the memfd: %w", err)
		}
		off += n
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS,
		unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL); err != nil {
		return fmt.Errorf("sealing the memfd: %w", err)
	}
	_, _, err = c.WriteMsgUnix(nil, unix.UnixRights(fd), nil)
	return err
}
