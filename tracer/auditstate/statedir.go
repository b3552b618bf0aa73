// SPDX-License-Identifier: Apache-2.0

package auditstate

// DefaultStateDir is where running tracers record what they own and what
// they changed on the node, for each other and for `tracer cleanup`: the
// audit backend's rules and settings, bench's auditd and settings, and
// every watching tracer's registration.
const DefaultStateDir = "/run/tracer"

// StateDir is the state directory in use: DefaultStateDir, or a test's own.
var StateDir = DefaultStateDir
