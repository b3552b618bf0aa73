// SPDX-License-Identifier: Apache-2.0

//go:build linux

package audit

import (
	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/auditstate"
)

// This file: what the backend counts: Stats, and the multicast drops the socket reports.

// Stats reports delivered events and loss. Kernel loss is the growth of
// the kernel's lost counter since Start: it counts every record the kernel
// dropped, ours or not, which is the honest upper bound.
func (b *Backend) Stats() tracer.Stats {
	var s tracer.Stats
	for t := range b.delivered {
		s.Events[t] = b.delivered[t].Load()
	}
	if st := b.status.Load(); st != nil {
		s.AuditBacklog, s.AuditBacklogLimit, s.AuditKernelLost = st.Backlog, st.BacklogLimit, st.Lost
		s.Lost[tracer.LostKernel] = uint64(st.Lost - b.startLost)
	}
	s.Lost[tracer.LostRingbuf] = b.lostSocket.Load() + b.multicastDrops()
	s.LowerBound[tracer.LostRingbuf] = b.socketLowerBound.Load()
	s.Lost[tracer.LostReassembly] = b.lostReasm.Load()
	for i := range b.filtered {
		s.Filtered[i] = b.filtered[i].Load()
	}
	for t := range b.throttled {
		s.Throttled[t] = b.throttled[t].Load()
	}
	s.AuditSocketBuffer, s.AuditSocketBufferAsked = b.bufGot, b.bufAsked
	return s
}

// multicastDrops is how many records the kernel dropped on the multicast
// socket since Start, from its per-socket counter. Safe from any goroutine.
func (b *Backend) multicastDrops() uint64 {
	port := b.mcastPort.Load()
	if port == 0 {
		return b.finalDrops.Load()
	}
	n, ok := auditstate.SocketDrops(port)
	if !ok || n < b.socketDrops0 {
		return b.finalDrops.Load()
	}
	return n - b.socketDrops0
}
