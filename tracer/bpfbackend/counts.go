// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfbackend

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Key layouts of the counting maps (struct exec_key, comm_key, signal_key).
const (
	execKeySize   = commLen + FilenameMax + 1
	signalKeySize = commLen + 8
)

var _ tracer.KernelCounter = (*Backend)(nil)

// Counts reads the counting maps: per-(comm, filename) execs, per-comm
// forks, per-(comm, target, signal) signals, totals per type, and records
// lost in the kernel (a full map). It needs Config.CountOnly; after Close
// it returns the counts as they were at Close.
func (b *Backend) Counts() (*tracer.Counts, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finalCounts != nil {
		return b.finalCounts, nil
	}
	if !b.started || b.coll == nil {
		return nil, errors.New("ebpf backend not started")
	}
	if !b.cfg.CountOnly {
		return nil, errors.New("counts need Config.CountOnly")
	}
	return b.readCounts()
}

// readCounts reads the maps; b.mu is held.
func (b *Backend) readCounts() (*tracer.Counts, error) {
	c := tracer.NewCounts()
	err := iterCounts(b.coll.Maps["exec_counts"], execKeySize, func(k []byte, n uint64) {
		c.Exec[tracer.ExecKey{Comm: string(cstring(k[:commLen])), Filename: string(cstring(k[commLen:]))}] += n
	})
	if err != nil {
		return nil, fmt.Errorf("reading exec counts: %w", err)
	}
	err = iterCounts(b.coll.Maps["fork_counts"], commLen, func(k []byte, n uint64) {
		c.Fork[string(cstring(k))] += n
	})
	if err != nil {
		return nil, fmt.Errorf("reading fork counts: %w", err)
	}
	err = iterCounts(b.coll.Maps["signal_counts"], signalKeySize, func(k []byte, n uint64) {
		key := tracer.SignalKey{
			Comm:   string(cstring(k[:commLen])),
			Target: int32(binary.LittleEndian.Uint32(k[commLen:])),
			Signal: int(int32(binary.LittleEndian.Uint32(k[commLen+4:]))),
		}
		c.Signals[key] += n
	})
	if err != nil {
		return nil, fmt.Errorf("reading signal counts: %w", err)
	}
	totals := sumPerCPU(b.coll.Maps["totals"], uint32(vocab.TypeExit)+1)
	for _, t := range vocab.AllTypes {
		c.SetTotal(t, totals[t])
	}
	lost := sumPerCPU(b.coll.Maps["lost"], 2)
	c.Lost = lost[lostOutput] + lost[lostMap]
	return c, nil
}

func iterCounts(m *ebpf.Map, keySize int, fn func(key []byte, n uint64)) error {
	if m == nil {
		return errors.New("map missing")
	}
	if int(m.KeySize()) != keySize {
		return fmt.Errorf("key of %d bytes, want %d", m.KeySize(), keySize)
	}
	var (
		key []byte
		n   uint64
	)
	it := m.Iterate()
	for it.Next(&key, &n) {
		fn(key, n)
	}
	return it.Err()
}
