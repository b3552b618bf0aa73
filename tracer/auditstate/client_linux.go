// SPDX-License-Identifier: Apache-2.0

package auditstate

import (
	"fmt"

	libaudit "github.com/elastic/go-libaudit/v2"
)

// Open returns a go-libaudit client for control messages (status,
// settings, rules) on a Conn of its own, bound to no multicast group. It
// never claims the audit PID. Close it when done.
func Open() (*libaudit.AuditClient, error) {
	c, err := NewConn(0)
	if err != nil {
		return nil, err
	}
	return &libaudit.AuditClient{Netlink: c}, nil
}

// OpenStatus is Open, and the kernel's audit status read on that client.
// Close the client when done.
func OpenStatus() (*libaudit.AuditClient, *libaudit.AuditStatus, error) {
	c, err := Open()
	if err != nil {
		return nil, nil, fmt.Errorf("opening the audit netlink socket: %w", err)
	}
	st, err := c.GetStatus()
	if err != nil {
		_ = c.Close()
		return nil, nil, fmt.Errorf("reading audit status: %w", err)
	}
	return c, st, nil
}

// Status reads the kernel's audit status (auditctl -s) on a client of its
// own.
func Status() (*libaudit.AuditStatus, error) {
	c, err := Open()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	st, err := c.GetStatus()
	if err != nil {
		return nil, fmt.Errorf("reading audit status: %w", err)
	}
	return st, nil
}

// Locked reports whether st is the status of a locked audit.
func Locked(st *libaudit.AuditStatus) bool { return st != nil && st.Enabled == EnabledLocked }
