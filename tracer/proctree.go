// SPDX-License-Identifier: Apache-2.0

package tracer

import "github.com/tracer-dev/tracer/tracer/vocab"

// ProcTree is a process and its descendants, followed through the events
// that make the tree grow: a fork of a member adds the child, and an exec
// whose parent is a member adds the execing process (a vfork or
// posix_spawn child execs before its parent's fork call returns, so its
// exec can come before the fork event). It is the one definition of tree
// membership: the --pid filter, bench's counting of a workload's events
// in a node-wide log, and the backend tests use it.
//
// Live (FollowEvent), a member is a pid and, once an event carried it, its
// start time: a process that reused the pid is not the member. Its exit
// event takes it out, so the tree holds what lives.
type ProcTree struct {
	members map[uint32]uint64 // pid -> start time in clock ticks, 0 while unknown
	// gone remembers the start times of the last goneMax exits: the exit
	// of a thread that called exit(2) names its process, which lives on,
	// and comes back at its next event.
	gone     map[uint32]uint64
	goneRing []uint32
	goneNext int
}

// goneMax is how many exits the tree remembers.
const goneMax = 4096

// NewProcTree is the tree of roots (one or more), before any event.
func NewProcTree(roots ...uint32) *ProcTree {
	t := &ProcTree{members: make(map[uint32]uint64, len(roots)), gone: map[uint32]uint64{}}
	for _, r := range roots {
		t.members[r] = 0
	}
	return t
}

// Has reports whether pid is in the tree.
func (t *ProcTree) Has(pid uint32) bool {
	_, ok := t.members[pid]
	return ok
}

// Len is the number of processes in the tree.
func (t *ProcTree) Len() int { return len(t.members) }

// Follow takes one event, in the order events arrive: it reports whether
// the event's process is in the tree, adding it first when the event is
// an exec whose parent is a member, and adds the child of a member's fork.
// child is the fork's new process; 0 leaves the tree as it is (a failed
// fork, or a thread the caller does not count).
func (t *ProcTree) Follow(typ vocab.Type, pid, ppid, child uint32) bool {
	if !t.Has(pid) {
		if typ != vocab.TypeExec || !t.Has(ppid) {
			return false
		}
		t.members[pid] = 0
	}
	if typ == vocab.TypeFork && child != 0 {
		t.members[child] = 0
	}
	return true
}

// FollowEvent is Follow for events as they arrive, with what they say of
// identity: the start times of the process and of an exec's parent (a pid
// with another start time than the member's is another process, and the
// member is gone), and exits, which take the process out of the tree.
func (t *ProcTree) FollowEvent(e *Event) bool {
	if !t.member(e.PID, e.ExecID.Start) {
		if e.Type != vocab.TypeExec || !t.member(e.PPID, e.ParentExecID.Start) {
			return false
		}
		t.members[e.PID] = e.ExecID.Start
	}
	switch {
	case e.Type == vocab.TypeFork && e.ChildPID != 0:
		t.members[e.ChildPID] = 0 // its start time comes with its first event
	case e.Type == vocab.TypeExit:
		t.exit(e.PID)
	}
	return true
}

// member reports whether pid, started at start (0: unknown), is in the
// tree, learning the member's start time from the first event with one.
func (t *ProcTree) member(pid uint32, start uint64) bool {
	if s, ok := t.members[pid]; ok {
		switch {
		case start == 0 || s == start:
			return true
		case s == 0:
			t.members[pid] = start
			return true
		}
		delete(t.members, pid) // its exit was not seen; the pid is another's now
		return false
	}
	if s, ok := t.gone[pid]; ok && start != 0 && s == start {
		t.members[pid] = start // only a thread of it exited
		delete(t.gone, pid)
		return true
	}
	return false
}

func (t *ProcTree) exit(pid uint32) {
	start := t.members[pid]
	delete(t.members, pid)
	if start == 0 {
		return // nothing to know it again by
	}
	if len(t.goneRing) < goneMax {
		t.goneRing = append(t.goneRing, pid)
	} else {
		old := t.goneRing[t.goneNext]
		delete(t.gone, old)
		t.goneRing[t.goneNext] = pid
		t.goneNext = (t.goneNext + 1) % goneMax
	}
	t.gone[pid] = start
}

// Grow follows events 0..n-1 (ev returns event i's Follow arguments)
// until no event adds a member: events of one tree may be logged out of
// order (a child can exec on one CPU before its parent's clone returns on
// another), so a log read after the fact is followed to a fixed point.
func (t *ProcTree) Grow(n int, ev func(i int) (typ vocab.Type, pid, ppid, child uint32)) {
	for grew := true; grew; {
		before := t.Len()
		for i := 0; i < n; i++ {
			t.Follow(ev(i))
		}
		grew = t.Len() > before
	}
}
