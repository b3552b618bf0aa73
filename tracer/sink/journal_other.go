// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package sink

import (
	"errors"
	"net"
)

// sendMemfd: memfds are Linux's, as journald is.
func sendMemfd(*net.UnixConn, []byte) error {
	return errors.New("an entry too large for a datagram needs a memfd, which only Linux has")
}
