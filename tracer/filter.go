// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"slices"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Filter keeps the events a user asked for. Backends filter in the kernel
// where they can; the Filter is the single place where the user-space
// meaning of --events, --signal, --comm, --exe, --uid and --pid is defined, so both
// backends print exactly the same set.
type Filter struct {
	Types   vocab.TypeSet
	Signals vocab.SignalSet
	Comms   []string
	Exe     string
	UIDs    []uint32
	// AuidSet keeps only processes with a login uid. The kernel filters
	// on it too, but another tracer's rules may bring records it did not ask for.
	AuidSet bool
	// tree holds the --pid root and every descendant seen forking from it.
	tree  *ProcTree
	hold  *treeHold    // events that may join the tree (treehold.go)
	scope *scopeFilter // --cgroup and --target (target.go)
}

// NewFilter builds the user-space filter for cfg.
func NewFilter(cfg Config) *Filter {
	f := &Filter{Types: cfg.Types, Signals: cfg.Signals, Comms: cfg.Comms, Exe: cfg.Exe, UIDs: cfg.UIDs, AuidSet: cfg.AuidSet}
	if roots := cfg.TreeRoots(); len(roots) > 0 {
		f.tree, f.hold = NewProcTree(roots...), newTreeHold()
	}
	f.scope = newScopeFilter(cfg)
	return f
}

// Match reports whether e passes. It must see every fork event the backend
// delivers, even of classes not asked for, to follow the --pid tree. An
// event of a process not in the tree that may join it (a fork, or one that
// passes the rest) is held: Release passes it on when it joins.
func (f *Filter) Match(e *Event) bool {
	if f.tree != nil {
		n := f.tree.Len()
		if !f.tree.FollowEvent(e) {
			if e.Type == vocab.TypeFork || f.rest(e) {
				f.hold.keep(e)
			}
			return false
		}
		if f.tree.Len() > n && f.hold.n > 0 {
			f.hold.joined(e.PID, e.Time)
			f.hold.joined(e.ChildPID, e.Time)
		}
	}
	return f.rest(e)
}

// Releasing reports whether Release has events to pass on.
func (f *Filter) Releasing() bool { return f.hold != nil && len(f.hold.admit) > 0 }

// Release passes to fn the held events that the last Match let into the
// --pid tree, and that match. fn must not keep the *Event.
func (f *Filter) Release(fn func(*Event)) {
	if f.hold != nil {
		f.hold.release(f, fn)
	}
}

// rest is Match but for the --pid tree.
func (f *Filter) rest(e *Event) bool {
	if !f.Types.Has(e.Type) {
		return false
	}
	if e.Type == vocab.TypeSignal && !f.Signals.Has(e.Signal) {
		return false
	}
	if f.Comms != nil && !slices.Contains(f.Comms, e.Comm) {
		return false
	}
	if f.Exe != "" && (e.Type != vocab.TypeExec || !MatchExe(e.Filename, f.Exe)) {
		return false
	}
	if f.UIDs != nil && !slices.Contains(f.UIDs, e.UID) {
		return false
	}
	if f.AuidSet && e.AUID == vocab.UnsetID {
		return false
	}
	if f.scope != nil && !f.scope.match(e) {
		return false
	}
	return true
}

// BackendTypes is the set of classes a backend must deliver for cfg: the
// asked-for ones, plus fork when a --pid tree has to be followed.
func BackendTypes(cfg Config) vocab.TypeSet {
	t := cfg.Types
	if len(cfg.TreeRoots()) > 0 {
		t = t.With(vocab.TypeFork)
		if !cfg.CountOnly {
			// The tree forgets a process at its exit (a reused pid is
			// another process); counting in the kernel needs no tree here.
			t = t.With(vocab.TypeExit)
		}
	}
	return t
}
