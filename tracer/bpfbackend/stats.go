// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfbackend

import (
	"slices"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Stats returns the delivered and lost counts, and per-program run time
// when Config.BPFStats is on.
func (b *Backend) Stats() tracer.Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	var st tracer.Stats
	if b.final != nil {
		st = *b.final
	} else {
		st = b.kernelStats()
	}
	for t := range b.events {
		st.Events[t] = b.events[t].Load()
	}
	return st
}

// kernelStats reads the kernel's counters; b.mu is held.
func (b *Backend) kernelStats() tracer.Stats {
	var st tracer.Stats
	if b.coll == nil {
		return st
	}
	lost := sumPerCPU(b.coll.Maps["lost"], 2)
	st.Lost[tracer.LostRingbuf] = lost[lostOutput]
	if b.tr != nil {
		st.Lost[tracer.LostRingbuf] += b.tr.lost()
	}
	st.Lost[tracer.LostKernel] = lost[lostMap]
	st.Lost[tracer.LostReassembly] = b.badRecs.Load()
	copy(st.Filtered[:], sumPerCPU(b.coll.Maps["filtered"], uint32(vocab.NumFilterReasons)))
	if b.cfg.RateLimit > 0 {
		copy(st.Throttled[:], sumPerCPU(b.coll.Maps["throttled"], uint32(vocab.TypeExit+1)))
	}
	if b.bpfStats != nil {
		for name, prog := range b.coll.Programs {
			ps, err := prog.Stats()
			if err != nil {
				continue
			}
			st.Programs = append(st.Programs, tracer.ProgramStats{Name: name, RunTime: ps.Runtime.Seconds(), RunCount: ps.RunCount})
		}
		slices.SortFunc(st.Programs, func(a, b tracer.ProgramStats) int { return strings.Compare(a.Name, b.Name) })
	}
	return st
}

// sumPerCPU sums the first n entries of a per-CPU array of uint64.
func sumPerCPU(m *ebpf.Map, n uint32) []uint64 {
	out := make([]uint64, n)
	if m == nil {
		return out
	}
	var vals []uint64
	for i := range n {
		if err := m.Lookup(i, &vals); err != nil {
			continue
		}
		for _, v := range vals {
			out[i] += v
		}
	}
	return out
}
