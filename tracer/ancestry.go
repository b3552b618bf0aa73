// SPDX-License-Identifier: Apache-2.0

package tracer

import "github.com/tracer-dev/tracer/tracer/vocab"

// Ancestor is one process above an event's process: its parent, its
// parent's parent...
type Ancestor struct {
	PID    uint32
	Comm   string
	ExecID ExecID
}

// MaxAncestry bounds --ancestry: the chain to init is rarely longer, and
// each ancestor costs every event bytes.
const MaxAncestry = 16

// maxLineage bounds the processes Ancestry remembers.
const maxLineage = 1 << 16

type lineageNode struct {
	parent ExecID
	comm   string
}

// Ancestry fills the ancestors of events (--ancestry N) from what the
// events themselves say (each names its process's exec id, comm and
// parent's exec id) and, for a process no event named yet, from /proc
// while it lives. It works the same for both backends, since both give
// exec ids; an ancestor gone before any event named it ends the chain.
type Ancestry struct {
	n     int
	nodes map[ExecID]lineageNode
	// readProc names a live process: its comm and parent (tests replace it).
	readProc func(id ExecID) (comm string, parent ExecID, ok bool)
}

// NewAncestry keeps up to n ancestors per event.
func NewAncestry(n int) *Ancestry {
	return &Ancestry{n: min(n, MaxAncestry), nodes: make(map[ExecID]lineageNode), readProc: readProcLineage}
}

// Wrap returns an emit function that fills e.Ancestors, then calls emit.
func (a *Ancestry) Wrap(emit func(*Event)) func(*Event) {
	return func(e *Event) {
		a.Fill(e)
		emit(e)
	}
}

// Fill records e's process and fills its ancestors.
func (a *Ancestry) Fill(e *Event) {
	// A throttle event names a process without its parent: it would
	// forget the parent earlier events gave it.
	if e.ExecID.IsZero() || e.Type == vocab.TypeThrottle {
		return
	}
	a.put(e.ExecID, lineageNode{parent: e.ParentExecID, comm: e.Comm})
	e.Ancestors = e.Ancestors[:0]
	cur := e.ParentExecID
	for len(e.Ancestors) < a.n && !cur.IsZero() {
		node, ok := a.nodes[cur]
		if !ok {
			comm, parent, live := a.readProc(cur)
			if !live {
				break
			}
			node = lineageNode{parent: parent, comm: comm}
			a.put(cur, node)
		}
		e.Ancestors = append(e.Ancestors, Ancestor{PID: cur.PID, Comm: node.comm, ExecID: cur})
		if node.parent == cur {
			break
		}
		cur = node.parent
	}
}

func (a *Ancestry) put(id ExecID, n lineageNode) {
	if old, ok := a.nodes[id]; ok && old == n {
		return
	}
	if len(a.nodes) >= maxLineage {
		clear(a.nodes)
	}
	a.nodes[id] = n
}
