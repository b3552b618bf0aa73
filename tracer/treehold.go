// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"time"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// The --pid tree's hold: a child can make events before its parent's fork
// event arrives (audit sends the fork at the parent's syscall exit, which
// may come after the child's first calls on another CPU; so does the eBPF
// syscalls set). Events of processes not in the tree are kept, at most
// holdMax and for holdAge, and passed on once a fork (or an exec) makes
// their process a member.
const (
	holdMax = 1024
	holdAge = time.Second
)

type treeHold struct {
	ring []Event // holdMax slots, oldest at head
	gone []bool  // a slot's event was let in
	head int
	n    int
	// pids counts the held events by pid, and execs also by their
	// parent's (an exec whose parent joins the tree joins it).
	pids map[uint32]int
	// admit lists the pids with held events that joined the tree, and
	// admitTime when the last did.
	admit     []uint32
	admitTime time.Time
}

func newTreeHold() *treeHold {
	return &treeHold{ring: make([]Event, holdMax), gone: make([]bool, holdMax), pids: make(map[uint32]int)}
}

// keep holds a copy of e, the oldest first out when full or too old.
func (h *treeHold) keep(e *Event) {
	for h.n > 0 && (h.n == holdMax || h.ring[h.head].Time.Before(e.Time.Add(-holdAge))) {
		h.drop()
	}
	i := (h.head + h.n) % holdMax
	s := &h.ring[i]
	argv, anc := s.Argv[:0], s.Ancestors[:0]
	*s = *e
	// The backend reuses e: the slices are copied into the slot's own.
	s.Argv, s.Ancestors = append(argv, e.Argv...), append(anc, e.Ancestors...)
	h.gone[i] = false
	h.n++
	h.count(s, 1)
}

// drop forgets the oldest held event.
func (h *treeHold) drop() {
	if !h.gone[h.head] {
		h.count(&h.ring[h.head], -1)
	}
	h.head = (h.head + 1) % holdMax
	h.n--
}

func (h *treeHold) count(e *Event, d int) {
	h.add(e.PID, d)
	if e.Type == vocab.TypeExec && e.PPID != e.PID {
		h.add(e.PPID, d)
	}
}

func (h *treeHold) add(pid uint32, d int) {
	if n := h.pids[pid] + d; n > 0 {
		h.pids[pid] = n
	} else {
		delete(h.pids, pid)
	}
}

// joined notes that pid joined the tree at t, if it has held events.
func (h *treeHold) joined(pid uint32, t time.Time) {
	if h.pids[pid] > 0 {
		h.admit = append(h.admit, pid)
		h.admitTime = t
	}
}

// release passes each held event of a process that joined the tree
// through f, in the order they came, and what matches to fn. An event
// held longer than holdAge before the joining is not let in: its pid may
// have been another process's.
func (h *treeHold) release(f *Filter, fn func(*Event)) {
	for len(h.admit) > 0 {
		pid := h.admit[len(h.admit)-1]
		h.admit = h.admit[:len(h.admit)-1]
		oldest := h.admitTime.Add(-holdAge)
		for k := range h.n {
			i := (h.head + k) % holdMax
			e := &h.ring[i]
			if h.gone[i] || (e.PID != pid && (e.Type != vocab.TypeExec || e.PPID != pid)) {
				continue
			}
			h.gone[i] = true
			h.count(e, -1)
			if !e.Time.Before(oldest) && f.Match(e) {
				fn(e)
			}
		}
	}
}
