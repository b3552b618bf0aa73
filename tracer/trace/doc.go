// SPDX-License-Identifier: Apache-2.0

// Package trace runs one command under a backend, scoped to the command's
// process tree, and counts what the tree did: the orchestration behind
// `tracer trace` (docs/trace.md).
//
// The command starts held: a helper process (HeldCommand, run from the
// program's own binary) waits on a gate (a socket pair) before it execs the
// command, so the backend is scoped to the tree before the tree makes its
// first event, and reports through it the CPU time it used itself. A
// backend follows the tree by pid (Config.PID), or, when it is a
// tracer.LoginUIDScoper, by a login uid the helper gives the command; a
// tracer.KernelCounter counts in the kernel instead of delivering events.
package trace
