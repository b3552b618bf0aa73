// SPDX-License-Identifier: Apache-2.0

package result

import "github.com/tracer-dev/tracer/tracer/node/facts"

// The node's facts are tracer/node/facts's (a leaf of their own, which
// tracer/node collects); the result file embeds them under these names,
// with the JSON schema unchanged.
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
