// SPDX-License-Identifier: Apache-2.0

//go:build linux

package tracertest

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	libaudit "github.com/elastic/go-libaudit/v2"

	"github.com/tracer-dev/tracer/tracer/auditstate"
)

// AuditLog reads the audit multicast group (AUDIT_NLGRP_READLOG): a copy
// of every record the kernel logs, whoever holds the audit PID (auditd, a
// tracer, nobody). It needs CAP_AUDIT_READ; it changes nothing.
type AuditLog struct {
	c *auditstate.Conn
	b *auditstate.Batch
}

// OpenAuditLog joins the multicast group until the test ends. Records
// logged before it opened are not seen.
func OpenAuditLog(t testing.TB) *AuditLog {
	t.Helper()
	NeedRoot(t)
	c, err := auditstate.NewConn(auditstate.GroupReadLog)
	if err != nil {
		t.Fatalf("joining the audit multicast group: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	// A busy node logs a lot: a large buffer keeps the record looked for.
	c.SetRecvBuffer(8 << 20)
	if err := c.SetRecvTimeout(200 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	return &AuditLog{c: c, b: auditstate.NewBatch(1, 1<<16)}
}

// WaitFor returns the text of the first record of type typ that contains
// every one of want, reading until timeout.
func (l *AuditLog) WaitFor(t testing.TB, typ uint16, timeout time.Duration, want ...string) (string, bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		_, err := l.c.ReadBatch(l.b)
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) || errors.Is(err, syscall.ENOBUFS) {
			continue
		}
		if err != nil {
			t.Fatalf("reading the audit multicast group: %v", err)
		}
		// The datagram's size counts, not nlmsg_len: audit records set it
		// without the header.
		got, data, whole := l.b.Message(0)
		if !whole || got != typ {
			continue
		}
		text := strings.TrimRight(string(data), "\x00")
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(text, w)
		}
		if ok {
			return text, true
		}
	}
	return "", false
}

// EnableAudit turns audit on for the test when it is off (user messages
// and the multicast copy need it) and restores the flag afterwards. Take
// LockAudit first. A locked audit (enabled=2) skips the test.
func EnableAudit(t testing.TB) {
	t.Helper()
	st := AuditStatus(t)
	switch {
	case auditstate.Locked(st):
		t.Skipf("%v: cannot turn it on for the test", auditstate.ErrLocked)
	case st.Enabled == 1:
		return
	}
	set := func(on bool) error {
		c, err := auditstate.Open()
		if err != nil {
			return err
		}
		defer c.Close()
		return c.SetEnabled(on, libaudit.WaitForReply)
	}
	if err := set(true); err != nil {
		t.Fatalf("enabling audit: %v", err)
	}
	t.Cleanup(func() {
		if err := set(false); err != nil {
			t.Errorf("disabling audit again: %v", err)
		}
	})
}
