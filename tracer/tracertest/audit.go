// SPDX-License-Identifier: Apache-2.0

//go:build linux

package tracertest

import (
	"testing"

	libaudit "github.com/elastic/go-libaudit/v2"
	"github.com/elastic/go-libaudit/v2/rule"

	"github.com/tracer-dev/tracer/tracer/auditstate"
)

// AuditRules returns the kernel's audit rules in auditctl -l syntax, in the kernel's order.
func AuditRules(t testing.TB) []string {
	t.Helper()
	c, err := auditstate.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw, err := c.GetRules()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, wf := range raw {
		s, err := rule.ToCommandLine(rule.WireFormat(wf), false)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// AuditStatus returns the kernel's audit status (auditctl -s).
func AuditStatus(t testing.TB) *libaudit.AuditStatus {
	t.Helper()
	st, err := auditstate.Status()
	if err != nil {
		t.Fatal(err)
	}
	return st
}
