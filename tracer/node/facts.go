// SPDX-License-Identifier: Apache-2.0

// Package node reads the facts of the running node that decide which backend
// can run and at what cost: OS release, kernel, audit state and loaded rules,
// eBPF features, 32-bit processes, the disk under the audit log. `tracer
// doctor` prints them with a verdict per backend, and `tracer bench` records
// them in its result file so that `tracer report` can judge nodes it never
// ran on.
//
// Facts is the record; Collect fills it on the running node. Reading is kept
// apart from parsing: a Reader reads files under a root directory (the real
// "/" or a recorded fixture tree) and small parsers turn their text into
// facts, so that the parsers are tested on recorded input from RHEL 7, 8 and 9.
// Verdicts judges Facts without touching the node, so it runs on fixtures too.
package node

import (
	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/tracer/auparse"
	"github.com/tracer-dev/tracer/tracer/node/facts"
)

// The facts are a leaf package of their own (tracer/node/facts), which
// bench/result embeds in the result file without building on this
// package; node collects them and judges them under these names.
type (
	Facts       = facts.Facts
	OSRelease   = facts.OSRelease
	Audit       = facts.Audit
	AuditStatus = facts.AuditStatus
	EBPF        = facts.EBPF
	Procs       = facts.Procs
	Proc        = facts.Proc
	Disk        = facts.Disk
)

// ConfigKeys are the kernel config options doctor reports.
var ConfigKeys = []string{
	"CONFIG_AUDIT", "CONFIG_AUDITSYSCALL",
	"CONFIG_BPF_SYSCALL", "CONFIG_BPF_JIT", "CONFIG_DEBUG_INFO_BTF", "CONFIG_BPF_EVENTS",
	"CONFIG_FTRACE_SYSCALLS", "CONFIG_KPROBES", "CONFIG_KPROBE_EVENTS",
	"CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS", "CONFIG_SECURITY_LOCKDOWN_LSM",
	"CONFIG_IA32_EMULATION", "CONFIG_COMPAT",
}

// TracerKey is the audit rule key the tracer's rules carry.
const TracerKey = auditrules.Key

// IsTracerKey reports whether an audit rule key is the tracer's (the same
// test tracer cleanup applies).
func IsTracerKey(key string) bool { return auditrules.IsTracerKey(key) }

// CountTracerRules counts the rules whose key (-k or -F key=) is the tracer's.
func CountTracerRules(rules []string) int {
	n := 0
	for _, r := range rules {
		if key, ok := auparse.RuleKey(r); ok && IsTracerKey(key) {
			n++
		}
	}
	return n
}

// Bool returns a pointer to b, for the tri-state fields.
func Bool(b bool) *bool { return &b }

// Int returns a pointer to i.
func Int(i int) *int { return &i }

// Yes reports whether a tri-state is known and true.
func Yes(b *bool) bool { return b != nil && *b }

// No reports whether a tri-state is known and false.
func No(b *bool) bool { return b != nil && !*b }
