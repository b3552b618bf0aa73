// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"testing"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

func TestAncestry(t *testing.T) {
	initID, sshd, bash, sleep := ExecID{PID: 1, Start: 1}, ExecID{PID: 800, Start: 50}, ExecID{PID: 900, Start: 60}, ExecID{PID: 901, Start: 70}
	live := map[ExecID]struct {
		comm   string
		parent ExecID
	}{initID: {"systemd", ExecID{}}, sshd: {"sshd", initID}}
	a := NewAncestry(3)
	reads := 0
	a.readProc = func(id ExecID) (string, ExecID, bool) {
		reads++
		p, ok := live[id]
		return p.comm, p.parent, ok
	}
	// bash is known from its own event; sshd and init only from /proc.
	a.Fill(&Event{Type: vocab.TypeFork, PID: 900, Comm: "bash", ExecID: bash, ParentExecID: sshd})
	e := Event{Type: vocab.TypeExec, PID: 901, Comm: "bash", ExecID: sleep, ParentExecID: bash}
	a.Fill(&e)
	want := []Ancestor{{900, "bash", bash}, {800, "sshd", sshd}, {1, "systemd", initID}}
	if len(e.Ancestors) != 3 || e.Ancestors[0] != want[0] || e.Ancestors[1] != want[1] || e.Ancestors[2] != want[2] {
		t.Errorf("ancestors %+v, want %+v", e.Ancestors, want)
	}
	if reads != 2 {
		t.Errorf("%d /proc reads, want 2 (sshd, systemd), each once", reads)
	}
	a.Fill(&e)
	if reads != 2 {
		t.Errorf("%d /proc reads after a second event, want 2", reads)
	}
	// N bounds the list; a parent gone before any event named it ends it.
	a2 := NewAncestry(1)
	a2.readProc = func(ExecID) (string, ExecID, bool) { return "", ExecID{}, false }
	e2 := Event{Type: vocab.TypeExit, ExecID: sleep, ParentExecID: bash}
	a2.Fill(&e2)
	if len(e2.Ancestors) != 0 {
		t.Errorf("a gone parent gave %+v", e2.Ancestors)
	}
	a.n = 1
	a.Fill(&e)
	if len(e.Ancestors) != 1 {
		t.Errorf("--ancestry 1 gave %d", len(e.Ancestors))
	}
	if e.Ancestors[0] != want[0] {
		t.Errorf("--ancestry 1 gave %+v", e.Ancestors)
	}
	// Reset keeps the slice for reuse, empty.
	e.Reset()
	if len(e.Ancestors) != 0 || cap(e.Ancestors) == 0 {
		t.Error("Reset")
	}
	a.n = 3
	if n := testing.AllocsPerRun(100, func() { a.Fill(&e); e.ExecID, e.ParentExecID = sleep, bash }); n != 0 {
		t.Errorf("%v allocations per event", n)
	}
}

// A throttle event names a process without its parent: the lineage
// earlier events gave stays.
func TestAncestryThrottle(t *testing.T) {
	sh, storm := ExecID{PID: 900, Start: 60}, ExecID{PID: 901, Start: 70}
	a := NewAncestry(2)
	a.readProc = func(ExecID) (string, ExecID, bool) { return "", ExecID{}, false }
	a.Fill(&Event{Type: vocab.TypeFork, PID: 900, Comm: "sh", ExecID: sh})
	a.Fill(&Event{Type: vocab.TypeExec, PID: 901, Comm: "sh", ExecID: storm, ParentExecID: sh})
	a.Fill(&Event{Type: vocab.TypeThrottle, PID: 901, Comm: "storm", ExecID: storm})
	child := Event{Type: vocab.TypeFork, PID: 902, Comm: "storm", ExecID: ExecID{PID: 902, Start: 80}, ParentExecID: storm}
	a.Fill(&child)
	if len(child.Ancestors) != 2 || child.Ancestors[1].ExecID != sh {
		t.Errorf("ancestors %+v: the throttle event lost storm's parent", child.Ancestors)
	}
}
