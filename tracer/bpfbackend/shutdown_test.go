// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfbackend

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/tracer-dev/tracer/bpf"
	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// heldBatches sums the events the CPUs' signal batches hold.
func heldBatches(t *testing.T, b *Backend) uint64 {
	t.Helper()
	var vals []bpf.TracerBatch
	if err := b.coll.Maps["batches"].Lookup(uint32(0), &vals); err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, v := range vals {
		if v.Len != 0 {
			n += uint64(v.Events)
		}
	}
	return n
}

// A signal storm still running when Run's context ends: when Run returns,
// nothing the probes took is left in the kernel (a CPU's batch, the ring)
// for Close to free uncounted, and Close finds nothing more to count.
func TestShutdownInStormLeavesNothingHeld(t *testing.T) {
	// A storm of signals floods every audit test running beside it
	// (the audit tests watch SIGUSR1 too): storms take the audit lock.
	tracertest.LockAudit(t)
	bin := tracertest.BuildWorkload(t)
	cfg := tracer.DefaultConfig()
	cfg.Types = vocab.TypeSet(0).With(vocab.TypeSignal)
	b := New()
	h := startHeld(t, bin, "kill", "2000000000", "10", "exit", "0")
	cfg.PID = h.pid()
	if err := b.Start(cfg); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !b.batch {
		t.Skip("signal records are not batched on this kernel")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	delivered := uint64(0)
	go func() { done <- b.Run(ctx, func(*tracer.Event) { delivered++ }) }()
	if _, err := h.stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the storm runs
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The storm goes on: what the probes still took would wait here.
	time.Sleep(50 * time.Millisecond)
	held, ring := heldBatches(t, b), b.tr.(*ringTransport).rd.AvailableBytes()
	atRun := b.Stats()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	st := b.Stats()
	if held != 0 || ring != 0 {
		t.Errorf("after Run: %d events held in the CPUs' batches, %d bytes in the ring", held, ring)
	}
	if delivered == 0 || st.TotalEvents() != delivered || st.TotalLost() != atRun.TotalLost() {
		t.Errorf("delivered %d; after Run %d events, lost %v; after Close %d, lost %v",
			delivered, atRun.TotalEvents(), atRun.Lost, st.TotalEvents(), st.Lost)
	}
}

// Events a CPU's batch still holds at Close, with no Run to read them,
// are counted lost, each record for 1 + its repeat count events.
func TestCloseCountsHeldBatches(t *testing.T) {
	tracertest.NeedRoot(t)
	cfg := tracer.DefaultConfig()
	cfg.Types = vocab.TypeSet(0).With(vocab.TypeSignal)
	cfg.PID = 1 << 30 // no process: only the records put below
	b := New()
	if err := b.Start(cfg); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !b.batch {
		t.Skip("signal records are not batched on this kernel")
	}
	const repeat = 41
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]bpf.TracerBatch, cpus)
	rec := stormRecord(monoNow(), 4242, 1)
	binary.LittleEndian.PutUint32(rec[offRepeat:], repeat)
	for i := range vals {
		vals[i].Len, vals[i].Events = eventSize, 1+repeat
		for j, c := range rec {
			vals[i].Buf[j] = int8(c)
		}
	}
	if err := b.coll.Maps["batches"].Put(uint32(0), vals); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	st := b.Stats()
	if want := uint64(cpus * (1 + repeat)); st.TotalEvents()+st.TotalLost() != want {
		t.Errorf("%d events, lost %v; want %d delivered or lost", st.TotalEvents(), st.Lost, want)
	}
}
