// SPDX-License-Identifier: Apache-2.0

//go:build linux

package audit

import "github.com/tracer-dev/tracer/tracer"

// Capabilities: records come through the kernel's audit queue, and the
// rules drop what they leave out before a record exists, so only the
// noise filter reasons are counted.
func (b *Backend) Capabilities() tracer.Capabilities {
	return tracer.Capabilities{AuditQueue: true, NoiseOnlyCounted: true}
}
