// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"sync/atomic"
)

// Peers is the set of other tracers running on the node, by pid: a tracer
// leaves out what they do (their runtimes' threads and signals, the audit
// backend's liveness checks), so that two tracers never report each other.
// Its own process each backend leaves out in the kernel; the others come
// from the registrations in the state directory (tracer/watch reads them
// through tracer/auditstate) and are left out by the Pipeline. The zero value holds none.
type Peers struct {
	set atomic.Pointer[map[uint32]struct{}]
}

// Has reports whether pid is another tracer's.
func (p *Peers) Has(pid uint32) bool {
	m := p.set.Load()
	if m == nil {
		return false
	}
	_, ok := (*m)[pid]
	return ok
}

// Set replaces the set.
func (p *Peers) Set(pids []uint32) {
	m := make(map[uint32]struct{}, len(pids))
	for _, pid := range pids {
		m[pid] = struct{}{}
	}
	p.set.Store(&m)
}
