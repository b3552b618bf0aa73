// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tracer-dev/tracer/tracer/sink/schematest"
	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// schemaWorkload makes a known process tree: the shell (exec) forks three
// children: /bin/true with an argument holding a space (exit 0), a shell
// that exits 3, and a sleep it kills with SIGTERM once the sleep sleeps
// (read and case are dash builtins: no other process). Then it exits 0.
//
// Its comm is not enough: the exec sets it before it maps the program, a
// SIGTERM then is fatal, the mapping fails, and the exec never completes
// (no exec event, rightly). A sleep in state S has finished its exec.
const schemaWorkload = `/bin/true "a b"; /bin/sh -c "exit 3"; /bin/sleep 30 & ` +
	`until read s < /proc/$!/stat && case "$s" in *"(sleep) S "*) true;; *) false;; esac; do :; done; ` +
	`kill -TERM $!; wait $!; exit 0`

// schemaDoc is what the test reads of one ECS or OCSF document: the
// event's kind, its processes, and the identities that link them.
type schemaDoc struct {
	typ       string // exec, fork, signal, exit
	pid       int    // the process the event is of: the exec'ing, forking, signalling or ending one
	child     int    // fork: the new process
	target    int    // signal: the signalled pid
	ids       []string
	parentIDs []string // the parent identities the document names
	args      []string // exec
	exitCode  *int
	signal    string // signal, or exit by a signal
	killer    int    // exit by a signal: the sender's pid, when seen
}

// `tracer watch --format ecs|ocsf` on a known workload, both backends:
// every document of the node in the stream is valid ECS 9.4.0 or OCSF
// 1.8.0 Process Activity, the workload's events are there in exact
// numbers with their fields, and exec-id lineage survives the mapping:
// each parent identity the workload's events name is the identity of an
// event before it (the workload's root: of an event of the stream).
func TestSchemaFormatsWorkload(t *testing.T) {
	tracertest.NeedRoot(t)
	for _, backend := range []string{"ebpf", "audit"} {
		for _, format := range []string{"ecs", "ocsf"} {
			t.Run(backend+"/"+format, func(t *testing.T) {
				if backend == "audit" {
					tracertest.LockAudit(t)
				}
				testSchemaFormat(t, backend, format)
			})
		}
	}
}

func testSchemaFormat(t *testing.T, backend, format string) {
	out := filepath.Join(t.TempDir(), "events")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := startWatcher(t, f, "--backend", backend, "--format", format, "--events", "exec,fork,signal,exit")
	cmd := exec.Command("/bin/sh", "-c", schemaWorkload)
	if err := cmd.Run(); err != nil {
		t.Fatalf("workload: %v", err)
	}
	root := cmd.Process.Pid
	validate, parse := schematest.ECS, parseECS
	if format == "ocsf" {
		validate, parse = schematest.OCSF, parseOCSF
	}
	// The workload's last event, its root's exit, reaches the output (the
	// audit backend writes it when the exit's records are complete).
	waitFor(1, func() int {
		b, _ := os.ReadFile(out)
		n := 0
		for _, line := range bytes.Split(b, []byte("\n")) {
			if d, err := parse(line); err == nil && d.typ == "exit" && d.pid == root {
				n++
			}
		}
		return n
	})
	w.stop(t)
	if _, lost, stages := w.summary(t); lost != 0 {
		t.Fatalf("%d events lost (%s): the counts below would not hold", lost, stages)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}

	var docs []schemaDoc
	bad := 0
	for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if err := validate(line); err != nil {
			if bad++; bad <= 3 {
				t.Errorf("line %d: %v\n%s", i+1, err, line)
			}
			continue
		}
		d, err := parse(line)
		if err != nil {
			t.Fatalf("line %d: %v\n%s", i+1, err, line)
		}
		docs = append(docs, d)
	}
	if bad > 0 {
		t.Fatalf("%d of %d documents are not valid %s", bad, len(docs)+bad, format)
	}

	// The workload's events: its root's, and those of every process a
	// workload process forked. The tree is made first: a vfork's child
	// execs before the vfork returns, so audit writes the child's exec
	// before its parent's fork.
	tree := map[int]bool{root: true}
	for grown := true; grown; {
		grown = false
		for _, d := range docs {
			if d.typ == "fork" && tree[d.pid] && !tree[d.child] {
				tree[d.child], grown = true, true
			}
		}
	}
	var mine []int // indexes into docs
	for i, d := range docs {
		if tree[d.pid] {
			mine = append(mine, i)
		}
	}
	counts := map[string]int{}
	for _, i := range mine {
		counts[docs[i].typ]++
	}
	want := map[string]int{"exec": 4, "fork": 3, "signal": 1, "exit": 4}
	if backend == "audit" {
		want["exit"] = 3 // audit sees no death by a signal that dumps no core (docs/events.md)
	}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("workload events %v, want %v", counts, want)
		for _, i := range mine {
			t.Logf("%+v", docs[i])
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			for p := range tree {
				if p != root && bytes.Contains(line, []byte(fmt.Sprintf(":%d", p))) {
					t.Logf("%s", line)
					break
				}
			}
		}
	}

	var sleepPID int
	for _, i := range mine {
		d := docs[i]
		switch {
		case d.typ == "exec" && len(d.args) > 0 && d.args[0] == "/bin/true":
			if fmt.Sprint(d.args) != fmt.Sprint([]string{"/bin/true", "a b"}) || len(d.args) != 2 {
				t.Errorf("exec of true: args %q, want [/bin/true, a b]", d.args)
			}
		case d.typ == "exec" && len(d.args) > 0 && d.args[0] == "/bin/sleep":
			sleepPID = d.pid
		}
	}
	var codes []int
	for _, i := range mine {
		d := docs[i]
		switch d.typ {
		case "signal":
			if d.target != sleepPID || d.signal != "SIGTERM" || d.pid != root {
				t.Errorf("signal %+v: want SIGTERM from %d to the sleep, %d", d, root, sleepPID)
			}
		case "exit":
			if d.exitCode != nil {
				codes = append(codes, *d.exitCode)
			} else if d.pid != sleepPID || d.signal != "SIGTERM" || d.killer != root {
				t.Errorf("exit %+v: want the sleep (%d) killed by SIGTERM from %d", d, sleepPID, root)
			}
		}
	}
	if fmt.Sprint(codes) != "[0 3 0]" {
		t.Errorf("exit codes %v, want [0 3 0] (true, sh -c 'exit 3', the workload)", codes)
	}

	// Lineage: every identity a document names, kept in order.
	seen := map[string]int{} // identity -> index of its first document
	for i, d := range docs {
		for _, id := range d.ids {
			if _, ok := seen[id]; !ok {
				seen[id] = i
			}
		}
	}
	resolved := 0
	for _, i := range mine {
		d := docs[i]
		for _, p := range d.parentIDs {
			at, ok := seen[p]
			switch {
			case !ok:
				t.Errorf("%s of %d names parent %s, the identity of no event", d.typ, d.pid, p)
			case d.pid == root && d.typ == "exec":
				resolved++ // the root's parent is the test: its fork may come after (audit: vfork returns after the exec)
			case at >= i:
				t.Errorf("%s of %d names parent %s, whose first event comes after it", d.typ, d.pid, p)
			default:
				resolved++
			}
		}
	}
	// Every exec names its parent: the root's is the test, the others' the
	// root, both alive throughout.
	if resolved < want["exec"] {
		t.Errorf("only %d parent identities resolved, want at least the %d execs'", resolved, want["exec"])
	}
}

// parseECS reads the fields the test checks from an ECS document.
func parseECS(line []byte) (schemaDoc, error) {
	var m struct {
		Event   struct{ Action string }
		Process struct {
			PID      int
			EntityID string `json:"entity_id"`
			Args     []string
			ExitCode *int `json:"exit_code"`
			Parent   struct {
				EntityID string `json:"entity_id"`
			}
		}
		Tracer struct {
			ChildPID int `json:"child_pid"`
			Signal   struct{ Name string }
			Target   struct {
				PID      int
				EntityID string `json:"entity_id"`
			}
			KilledBy struct {
				PID      int
				EntityID string `json:"entity_id"`
			} `json:"killed_by"`
		}
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return schemaDoc{}, err
	}
	p := m.Process
	d := schemaDoc{typ: m.Event.Action, pid: p.PID, child: m.Tracer.ChildPID, target: m.Tracer.Target.PID,
		args: p.Args, exitCode: p.ExitCode, signal: m.Tracer.Signal.Name, killer: m.Tracer.KilledBy.PID}
	d.ids = nonEmpty(p.EntityID, m.Tracer.Target.EntityID, m.Tracer.KilledBy.EntityID)
	d.parentIDs = nonEmpty(p.Parent.EntityID)
	return d, nil
}

// ocsfProc is an OCSF process object as the test reads it.
type ocsfProc struct {
	PID           int
	UID           string
	Name          string
	ParentProcess *ocsfProc `json:"parent_process"`
}

// parseOCSF reads the fields the test checks from an OCSF document: the
// event's process is the actor's for an exec, a fork and a user's signal,
// and the process's for an exit.
func parseOCSF(line []byte) (schemaDoc, error) {
	var m struct {
		Unmapped struct {
			Type     string
			Argv     []string
			Signal   struct{ Name string }
			KilledBy struct{ PID int } `json:"killed_by"`
		}
		ExitCode *int `json:"exit_code"`
		Actor    struct{ Process *ocsfProc }
		Process  ocsfProc
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return schemaDoc{}, err
	}
	d := schemaDoc{typ: m.Unmapped.Type, exitCode: m.ExitCode, signal: m.Unmapped.Signal.Name, killer: m.Unmapped.KilledBy.PID}
	a, p := m.Actor.Process, &m.Process
	switch d.typ {
	case "exec":
		d.pid, d.args = p.PID, m.Unmapped.Argv
	case "fork":
		d.pid, d.child = a.PID, p.PID
	case "signal":
		d.pid, d.target = p.PID, p.PID
		if a != nil {
			d.pid = a.PID
		}
	case "exit":
		d.pid = p.PID
	default:
		return d, fmt.Errorf("unmapped.type %q", d.typ)
	}
	for _, x := range []*ocsfProc{a, p} {
		if x == nil {
			continue
		}
		d.ids = append(d.ids, nonEmpty(x.UID)...)
		if x.ParentProcess != nil && x.ParentProcess.UID != "" && !(d.typ == "fork" && x == p) {
			// A fork's child names the forker as parent: an identity of this
			// very event, not one to find earlier.
			d.parentIDs = append(d.parentIDs, x.ParentProcess.UID)
		}
	}
	if d.typ == "exit" && a != nil && a.PID != p.PID {
		d.killer = a.PID
	}
	return d, nil
}

func nonEmpty(s ...string) []string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}
