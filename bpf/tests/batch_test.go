// SPDX-License-Identifier: Apache-2.0

//go:build linux

package tests

import (
	"errors"
	"os"
	"testing"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// Operations of run_op (enum op_kind in batch.bpf.c).
const (
	opAdd       = 1
	opRepeat    = 2
	opFlush     = 3
	opSameKey   = 4
	opSameEvent = 5
)

const (
	eventSize  = int(unsafe.Sizeof(BatchEvent{}))
	batchBytes = 24 * 176 // BATCH_BYTES
	repeatMax  = 0xffff   // REPEAT_MAX
)

// harness is the loaded test object, its programs run on CPU 0 (the batch
// is per CPU), and a reader of its ring buffer.
type harness struct {
	t    *testing.T
	coll *ebpf.Collection
	ring *ringbuf.Reader
}

// load loads batch.bpf.c with batching on and a ring of ringBytes (0: the
// object's own size).
func load(t *testing.T, ringBytes uint32) *harness {
	t.Helper()
	tracertest.NeedRoot(t)
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Fatal(err)
	}
	spec, err := LoadBatch()
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.Variables["cfg_batch"].Set(uint8(1)); err != nil {
		t.Fatal(err)
	}
	// Wake the reader for every record: the test reads at once.
	if err := spec.Variables["cfg_wake_interval_ns"].Set(uint64(1)); err != nil {
		t.Fatal(err)
	}
	if ringBytes > 0 {
		spec.Maps["events"].MaxEntries = ringBytes
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		t.Fatalf("loading the test object: %v", err)
	}
	t.Cleanup(func() { coll.Close() })
	ring, err := ringbuf.NewReader(coll.Maps["events"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ring.Close() })
	return &harness{t: t, coll: coll, ring: ring}
}

// run runs one operation and returns its result with the batch's state.
func (h *harness) run(op *BatchBatchOp) BatchBatchResult {
	h.t.Helper()
	if err := h.coll.Maps["op"].Update(uint32(0), op, ebpf.UpdateAny); err != nil {
		h.t.Fatal(err)
	}
	ret, err := h.coll.Programs["run_op"].Run(&ebpf.RunOptions{CPU: 0, Flags: unix.BPF_F_TEST_RUN_ON_CPU})
	if err != nil {
		h.t.Fatalf("running op %d: %v", op.Kind, err)
	}
	if ret != 0 {
		h.t.Fatalf("op %d returned %d", op.Kind, ret)
	}
	var res BatchBatchResult
	if err := h.coll.Maps["result"].Lookup(uint32(0), &res); err != nil {
		h.t.Fatal(err)
	}
	return res
}

func (h *harness) add(now uint64, ev BatchEvent, key *BatchRepeatKey) BatchBatchResult {
	op := BatchBatchOp{Now: now, Kind: opAdd, Ev: ev}
	if key != nil {
		op.HasKey, op.Key = 1, *key
	}
	return h.run(&op)
}

func (h *harness) repeat(now uint64, key BatchRepeatKey) BatchBatchResult {
	return h.run(&BatchBatchOp{Now: now, Kind: opRepeat, Key: key})
}

func (h *harness) flush(now uint64) BatchBatchResult {
	return h.run(&BatchBatchOp{Now: now, Kind: opFlush})
}

// records reads what the ring holds: one []BatchEvent per ring record (a
// record sent at once, or a batch).
func (h *harness) records() [][]BatchEvent {
	h.t.Helper()
	var out [][]BatchEvent
	h.ring.SetDeadline(time.Now())
	for {
		rec, err := h.ring.Read()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return out
		}
		if err != nil {
			h.t.Fatal(err)
		}
		if len(rec.RawSample)%eventSize != 0 {
			h.t.Fatalf("a ring record of %d bytes: not whole events", len(rec.RawSample))
		}
		evs := make([]BatchEvent, len(rec.RawSample)/eventSize)
		copy(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(evs))), len(rec.RawSample)), rec.RawSample)
		out = append(out, evs)
	}
}

// event is a signal record told apart by a (its target) and b (its signal).
func event(target, sig int32) BatchEvent {
	var ev BatchEvent
	ev.H.Ktime, ev.H.Pid, ev.H.Uid, ev.H.Type = 1000, 42, 1000, 3
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&ev.H.Comm[0])), 16), "killer")
	ev.A, ev.B = target, sig
	return ev
}

func key(target, sig int32) BatchRepeatKey {
	return BatchRepeatKey{Start: 7, Pid: 42, Tpid: target, Tid: target, Sig: sig, Uid: 1000, Sc: 9, Valid: 1}
}

// shape is what a ring record holds: each event's target and repeat count.
type shape struct {
	target int32
	repeat uint32
}

func shapes(evs []BatchEvent) []shape {
	s := make([]shape, len(evs))
	for i, e := range evs {
		s[i] = shape{e.A, e.H.Repeat}
	}
	return s
}

func sameShapes(a, b []shape) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func bytesOf[T any](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
}

// same_key is true for equal keys and false when any byte differs,
// valid included (a flushed batch's key is invalid: nothing repeats it).
func TestSameKey(t *testing.T) {
	h := load(t, 0)
	op := BatchBatchOp{Kind: opSameKey}
	k := bytesOf(&op.Key)
	for i := range k {
		k[i] = byte(i*7 + 3)
	}
	op.Key2 = op.Key
	if r := h.run(&op); r.Ret != 1 {
		t.Fatalf("same_key of equal keys: %d, want 1", r.Ret)
	}
	k2 := bytesOf(&op.Key2)
	for i := range k2 {
		k2[i] ^= 0x10
		if r := h.run(&op); r.Ret != 0 {
			t.Errorf("same_key with byte %d of %d different: %d, want 0", i, len(k2), r.Ret)
		}
		k2[i] ^= 0x10
	}
}

// same_event is true for records that differ only in their repeat counts.
func TestSameEvent(t *testing.T) {
	h := load(t, 0)
	op := BatchBatchOp{Kind: opSameEvent, Ev: event(100, 15)}
	op.Ev.Code, op.Ev.Xpid, op.Ev.Status, op.Ev.Result, op.Ev.Xflags = -6, 100, 0x0f, 1, 0x47
	op.Ev2 = op.Ev
	op.Ev2.H.Repeat = 9
	if r := h.run(&op); r.Ret != 1 {
		t.Fatalf("same_event of records differing in repeat: %d, want 1", r.Ret)
	}
	repeatAt := int(unsafe.Offsetof(op.Ev.H.Repeat))
	e2 := bytesOf(&op.Ev2)
	for i := range e2 {
		if i >= repeatAt && i < repeatAt+4 {
			continue
		}
		e2[i] ^= 0x01
		if r := h.run(&op); r.Ret != 0 {
			t.Errorf("same_event with byte %d of %d different: %d, want 0", i, len(e2), r.Ret)
		}
		e2[i] ^= 0x01
	}
}

// A storm in one tick: the first record goes at once, the rest wait in
// the batch, equal ones as repeats of the last, and a record of a later
// tick sends them, in order.
func TestBatchOneTick(t *testing.T) {
	h := load(t, 0)
	const tick = 5000
	e1, k1 := event(100, 15), key(100, 15)
	e2, k2 := event(200, 9), key(200, 9)

	if r := h.add(tick, e1, &k1); r.Ret != 0 || r.Len != 0 {
		t.Fatalf("the first record of a tick: %+v, want it sent at once", r)
	}
	if got := h.records(); len(got) != 1 || !sameShapes(shapes(got[0]), []shape{{100, 0}}) {
		t.Fatalf("ring after the first record: %v", got)
	}
	steps := []struct {
		name        string
		do          func() BatchBatchResult
		ret         uint64
		len, events uint32
	}{
		{"e1 batched", func() BatchBatchResult { return h.add(tick, e1, &k1) }, 1, 1, 1},
		{"e1 again: a repeat", func() BatchBatchResult { return h.add(tick, e1, &k1) }, 1, 1, 2},
		{"k1: a repeat by key", func() BatchBatchResult { return h.repeat(tick, k1) }, 1, 1, 3},
		{"k2: not the last key", func() BatchBatchResult { return h.repeat(tick, k2) }, 0, 1, 3},
		{"k1 in a later tick", func() BatchBatchResult { return h.repeat(tick+1, k1) }, 0, 1, 3},
		{"e2 batched", func() BatchBatchResult { return h.add(tick, e2, &k2) }, 1, 2, 4},
		{"k2: a repeat of e2", func() BatchBatchResult { return h.repeat(tick, k2) }, 1, 2, 5},
		{"k1: no longer the last", func() BatchBatchResult { return h.repeat(tick, k1) }, 0, 2, 5},
		{"e1 without a key", func() BatchBatchResult { return h.add(tick, e1, nil) }, 1, 3, 6},
		{"k1 after a record without a key", func() BatchBatchResult { return h.repeat(tick, k1) }, 0, 3, 6},
	}
	for _, s := range steps {
		r := s.do()
		if r.Ret != s.ret || r.Len != s.len*uint32(eventSize) || r.Events != s.events {
			t.Fatalf("%s: ret %d, len %d, events %d; want %d, %d, %d",
				s.name, r.Ret, r.Len/uint32(eventSize), r.Events, s.ret, s.len, s.events)
		}
		if got := h.records(); len(got) != 0 {
			t.Fatalf("%s: the ring got %v before the tick ended", s.name, got)
		}
	}
	// The next tick's first record joins the batch and sends it.
	if r := h.add(tick+1, e2, &k2); r.Ret != 1 || r.Len != 0 || r.Events != 0 || r.Valid != 0 {
		t.Fatalf("a record of the next tick: %+v, want the batch sent", r)
	}
	got := h.records()
	want := []shape{{100, 2}, {200, 1}, {100, 0}, {200, 0}}
	if len(got) != 1 || !sameShapes(shapes(got[0]), want) {
		t.Fatalf("ring: %v, want one record %v", got, want)
	}
	if r := h.repeat(tick+1, k2); r.Ret != 0 {
		t.Fatalf("a repeat after the batch was sent: %+v", r)
	}
}

// A full batch goes out as one ring record before the next is batched;
// the flush sends the rest.
func TestBatchFull(t *testing.T) {
	h := load(t, 0)
	const tick = 7000
	h.add(tick, event(0, 15), nil) // the first of the tick, at once
	per := batchBytes / eventSize
	for i := 1; i <= per+1; i++ {
		h.add(tick, event(int32(i), 15), nil)
	}
	got := h.records()
	if len(got) != 2 || len(got[0]) != 1 || len(got[1]) != per {
		t.Fatalf("ring: %d records, want the first event and a full batch of %d", len(got), per)
	}
	for i, e := range got[1] {
		if e.A != int32(i+1) {
			t.Fatalf("batch event %d is target %d, want %d", i, e.A, i+1)
		}
	}
	if r := h.flush(tick); r.Len != 0 || r.Events != 0 {
		t.Fatalf("after the flush: %+v", r)
	}
	got = h.records()
	if len(got) != 1 || !sameShapes(shapes(got[0]), []shape{{int32(per + 1), 0}}) {
		t.Fatalf("ring after the flush: %v", got)
	}
}

// A record repeats at most REPEAT_MAX times; the next equal one is a record
// of its own.
func TestBatchRepeatMax(t *testing.T) {
	h := load(t, 0)
	const tick = 9000
	e, k := event(100, 15), key(100, 15)
	h.add(tick, e, &k)
	h.records()
	h.add(tick, e, &k)
	for range repeatMax - 1 {
		h.add(tick, e, &k)
	}
	if r := h.repeat(tick, k); r.Ret != 1 {
		t.Fatalf("repeat %d by key: %+v", repeatMax, r)
	}
	if r := h.repeat(tick, k); r.Ret != 0 {
		t.Fatalf("a repeat past REPEAT_MAX by key: %+v", r)
	}
	r := h.add(tick, e, &k)
	if r.Len != 2*uint32(eventSize) || r.Events != repeatMax+2 {
		t.Fatalf("past REPEAT_MAX: %+v, want a second record", r)
	}
	h.flush(tick)
	got := h.records()
	if len(got) != 1 || !sameShapes(shapes(got[0]), []shape{{100, repeatMax}, {100, 0}}) {
		t.Fatalf("ring: %v", got)
	}
}

// A batch the ring has no room for is lost, and counted: every event it
// stood for, repeats included.
func TestBatchLossCounted(t *testing.T) {
	h := load(t, uint32(os.Getpagesize()))
	const tick = 11000
	h.add(tick, event(0, 15), nil)
	h.records()
	per := batchBytes / eventSize
	for i := 1; i < per; i++ {
		h.add(tick, event(int32(i), 15), nil)
	}
	k := key(int32(per), 15)
	h.add(tick, event(int32(per), 15), &k)
	if r := h.repeat(tick, k); r.Ret != 1 || r.Len != batchBytes {
		t.Fatalf("a full batch and a repeat: %+v", r)
	}
	// per records, the last repeated: per+1 events in a page of records,
	// which with the ring's record header cannot fit a one-page ring.
	h.flush(tick)
	if got := h.records(); len(got) != 0 {
		t.Fatalf("ring: %d records, want none", len(got))
	}
	var perCPU []uint64
	if err := h.coll.Maps["lost"].Lookup(uint32(0), &perCPU); err != nil {
		t.Fatal(err)
	}
	var lost uint64
	for _, v := range perCPU {
		lost += v
	}
	if lost != uint64(per+1) {
		t.Fatalf("lost %d, want %d", lost, per+1)
	}
}
