// SPDX-License-Identifier: Apache-2.0

// Package auditstate owns the kernel's audit state as tracer changes it:
// the netlink audit socket (Conn) and the go-libaudit client opened on it
// (Open), the "audit is locked" check (Locked), the settings a program may
// change and how they are put back (Settings, Setting, Record with its
// compare and restore), and the state directory (StateDir, /run/tracer)
// where running tracers and benches record what they changed, so that
// `tracer cleanup` can undo it after a kill -9, with the one registry of
// running tracers (Registration: pid and start time, one file per process).
//
// It is the bottom of the project's audit stack: it imports only
// tracer/host (start times) and tracer/vocab (usage errors). The audit backend, bench's auditd and floor modes, `tracer
// cleanup` and doctor's node checks use it; what a rule means (instance
// keys, exclude rules) stays with them.
package auditstate
