// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"testing"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// --pid forgets a process at its exit: its pid, reused by a process that
// is not in the tree, does not let that process in.
func TestFilterPIDReusedAfterExit(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PID = 100
	f := NewFilter(cfg)
	id := func(pid uint32, start uint64) ExecID { return ExecID{PID: pid, Start: start} }
	events := []struct {
		e    Event
		want bool
	}{
		{Event{Type: vocab.TypeFork, PID: 100, ExecID: id(100, 50), ChildPID: 101}, true},
		{Event{Type: vocab.TypeExec, PID: 101, ExecID: id(101, 60), PPID: 100, ParentExecID: id(100, 50)}, true},
		{Event{Type: vocab.TypeExit, PID: 101, ExecID: id(101, 60)}, false}, // in the tree, but exit not asked for
		// pid 101 again, another process: its parent is not in the tree.
		{Event{Type: vocab.TypeFork, PID: 101, ExecID: id(101, 900), ChildPID: 102}, false},
		{Event{Type: vocab.TypeSignal, PID: 102, ExecID: id(102, 901), Signal: 10}, false},
		{Event{Type: vocab.TypeExec, PID: 101, ExecID: id(101, 900), PPID: 1, ParentExecID: id(1, 1)}, false},
		// The root is still there.
		{Event{Type: vocab.TypeSignal, PID: 100, ExecID: id(100, 50), Signal: 10}, true},
	}
	for i, c := range events {
		if got := f.Match(&c.e); got != c.want {
			t.Errorf("event %d %+v: Match = %v, want %v", i, c.e, got, c.want)
		}
	}
	// The backend must deliver exits for the tree to forget.
	if !BackendTypes(cfg).Has(vocab.TypeExit) {
		t.Errorf("BackendTypes %s: no exit events, the tree cannot forget", BackendTypes(cfg))
	}
}

// A pid whose exit was not seen (audit does not see every death) is known
// by its start time: a process with the same pid and another start time
// is not the member.
func TestProcTreeReuseByStartTime(t *testing.T) {
	tr := NewProcTree(100)
	tr.FollowEvent(&Event{Type: vocab.TypeFork, PID: 100, ExecID: ExecID{PID: 100, Start: 5}, ChildPID: 101})
	if !tr.FollowEvent(&Event{Type: vocab.TypeSignal, PID: 101, ExecID: ExecID{PID: 101, Start: 7}}) {
		t.Fatal("the forked child is not in the tree")
	}
	if tr.FollowEvent(&Event{Type: vocab.TypeSignal, PID: 101, ExecID: ExecID{PID: 101, Start: 9000}}) {
		t.Error("a process that reused the child's pid (another start time) is in the tree")
	}
	// A thread of a member calls exit: the exit event names the process,
	// which lives on and is still a member at its next event.
	tr.FollowEvent(&Event{Type: vocab.TypeExit, PID: 100, ExecID: ExecID{PID: 100, Start: 5}})
	if !tr.FollowEvent(&Event{Type: vocab.TypeSignal, PID: 100, ExecID: ExecID{PID: 100, Start: 5}}) {
		t.Error("a member whose thread exited left the tree")
	}
}

// Many short-lived children: the tree stays the size of what lives.
func TestProcTreeBounded(t *testing.T) {
	tr := NewProcTree(100)
	root := ExecID{PID: 100, Start: 1}
	for i := range 100_000 {
		child := uint32(1000 + i%30000) // pids wrap and are reused
		start := uint64(10 + i)
		tr.FollowEvent(&Event{Type: vocab.TypeFork, PID: 100, ExecID: root, ChildPID: child})
		tr.FollowEvent(&Event{Type: vocab.TypeExec, PID: child, ExecID: ExecID{PID: child, Start: start}, PPID: 100, ParentExecID: root})
		tr.FollowEvent(&Event{Type: vocab.TypeExit, PID: child, ExecID: ExecID{PID: child, Start: start}})
	}
	if n := tr.Len(); n != 1 {
		t.Errorf("after 100000 children that exited the tree has %d members, want 1 (the root)", n)
	}
	if n := len(tr.gone); n > goneMax {
		t.Errorf("%d exited pids remembered, want at most %d", n, goneMax)
	}
}
