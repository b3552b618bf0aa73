package tracer

// ProcTree is a process and its descendants, followed through the events
// that make the tree grow: a fork of a member adds the child, and an exec
// whose parent is a member adds the execing process (a vfork or
// posix_spawn child execs before its parent's fork call returns, so its
// exec can come before the fork event). It is the one definition of tree
// membership: the --pid filter, bench's counting of a workload's events
// in a node-wide log, and the backend tests use it.
type ProcTree struct {
	members map[uint32]struct{}
}

// NewProcTree is the tree of roots (one or more), before any event.
func NewProcTree(roots ...uint32) *ProcTree {
	t := &ProcTree{members: make(map[uint32]struct{}, len(roots))}
	for _, r := range roots {
		t.members[r] = struct{}{}
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
func (t *ProcTree) Follow(typ EventType, pid, ppid, child uint32) bool {
	if !t.Has(pid) {
		if typ != TypeExec || !t.Has(ppid) {
			return false
		}
		t.members[pid] = struct{}{}
	}
	if typ == TypeFork && child != 0 {
		t.members[child] = struct{}{}
	}
	return true
}

// Grow follows events 0..n-1 (ev returns event i's Follow arguments)
// until no event adds a member: events of one tree may be logged out of
// order (a child can exec on one CPU before its parent's clone returns on
// another), so a log read after the fact is followed to a fixed point.
func (t *ProcTree) Grow(n int, ev func(i int) (typ EventType, pid, ppid, child uint32)) {
	for grew := true; grew; {
		before := t.Len()
		for i := 0; i < n; i++ {
			t.Follow(ev(i))
		}
		grew = t.Len() > before
	}
}
