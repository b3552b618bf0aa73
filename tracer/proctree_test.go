// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"slices"
	"testing"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Events as a node-wide log has them: root 100 forks 101, which vforks 102
// (whose exec is logged before the fork that made it), 103 is known only
// by an exec whose parent is 100, a failed fork makes nothing, and 555 is
// outside and forks 556.
func TestProcTree(t *testing.T) {
	type ev struct {
		typ              vocab.Type
		pid, ppid, child uint32
	}
	evs := []ev{
		{vocab.TypeExec, 102, 101, 0},
		{vocab.TypeFork, 100, 1, 101},
		{vocab.TypeFork, 101, 100, 102},
		{vocab.TypeExec, 103, 100, 0},
		{vocab.TypeFork, 100, 1, 0},
		{vocab.TypeSignal, 555, 1, 0},
		{vocab.TypeFork, 555, 1, 556},
	}
	// Followed once, in order: 102's exec came too early.
	once := NewProcTree(100)
	var kept []uint32
	for _, e := range evs {
		if once.Follow(e.typ, e.pid, e.ppid, e.child) {
			kept = append(kept, e.pid)
		}
	}
	if want := []uint32{100, 101, 103, 100}; !slices.Equal(kept, want) || once.Has(556) || once.Len() != 4 {
		t.Errorf("in order: kept %v, %d members; want %v and 4 members (100-103)", kept, once.Len(), want)
	}
	// Grown to a fixed point, as a log read afterwards is.
	all := NewProcTree(100)
	all.Grow(len(evs), func(i int) (vocab.Type, uint32, uint32, uint32) {
		e := evs[i]
		return e.typ, e.pid, e.ppid, e.child
	})
	for _, pid := range []uint32{100, 101, 102, 103} {
		if !all.Has(pid) {
			t.Errorf("%d not in the tree", pid)
		}
	}
	if all.Has(555) || all.Has(556) || all.Has(0) || all.Len() != 4 {
		t.Errorf("%d members, want 4", all.Len())
	}
	// The Filter follows the same tree for --pid.
	types, _ := vocab.ParseTypes("all")
	sigs, _ := vocab.ParseSignals("")
	f := NewFilter(Config{Types: types, Signals: sigs, PID: 100})
	n := 0
	for _, e := range evs {
		if f.Match(&Event{Type: e.typ, PID: e.pid, PPID: e.ppid, ChildPID: e.child, Signal: 10}) {
			n++
		}
	}
	if n != len(kept) {
		t.Errorf("filter kept %d events, the tree %d", n, len(kept))
	}
}
