// SPDX-License-Identifier: Apache-2.0

package auparse

import "testing"

// RuleKey reads every form of a rule's key that auditctl -l and
// go-libaudit's ToCommandLine write, and the quoted forms a rules file may
// hold.
func TestRuleKey(t *testing.T) {
	for _, c := range []struct {
		rule, key string
		ok        bool
	}{
		{"-a always,exit -F arch=b64 -S execve,execveat -F key=tracer", "tracer", true},
		{"-a always,exit -F arch=b64 -S kill -F a1=10 -k tracer", "tracer", true},
		{"-a always,exit -F arch=b64 -S kill -F a1=10 -F key=tracer-old", "tracer-old", true}, // not ours: cleanup keeps it too
		{"-w /etc/shadow -p wa -k identity", "identity", true},
		{"-a always,exit -F arch=b64 -S openat -F success=0", "", false},
		{"", "", false},
		// Quoted, as a rules file may have it.
		{`-a always,exit -S kill -k "tracer"`, "tracer", true},
		{`-a always,exit -S kill -F key="tracer"`, "tracer", true},
		{`-a always,exit -S kill key="tracer"`, "tracer", true},
		// -k as the last word has no key.
		{"-a always,exit -S kill -k", "", false},
		// -k's value is the key whatever it reads like.
		{"-a always,exit -S kill -k key=x", "key=x", true},
		// Several keys: auditctl -l writes one field each, go-libaudit one
		// field of keys joined by \x01; both read as the kernel holds them.
		{"-a always,exit -F arch=b64 -S kill -F key=a -F key=b", "a\x01b", true},
		{"-w /etc/shadow -p wa -k a -k b", "a\x01b", true},
		{"-a always,exit -F arch=b64 -S kill -F key=a\x01b", "a\x01b", true},
		{`-a always,exit -S kill -k a -F key="b" key=c`, "a\x01b\x01c", true},
	} {
		if key, ok := RuleKey(c.rule); key != c.key || ok != c.ok {
			t.Errorf("RuleKey(%q) = %q, %v; want %q, %v", c.rule, key, ok, c.key, c.ok)
		}
	}
}
