// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// TestECSKeepsArgvWhole: argv is an array, arguments with spaces, quotes
// and control characters stay one argument each, and command_line quotes
// them so that it reads back as the same words.
func TestECSKeepsArgvWhole(t *testing.T) {
	e := &tracer.Event{
		Time: time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC), Backend: "ebpf", Type: vocab.TypeExec,
		PID: 42, Comm: "sh", UID: 1000, AUID: 1000, PPID: 41, Filename: "/usr/bin/ls",
		Argv:   []string{"ls", "a b", `"},"x":{"`, "it's", "\n\x1b[31m", ""},
		ExecID: tracer.ExecID{PID: 42, Start: 7}, ParentExecID: tracer.ExecID{PID: 41, Start: 5},
	}
	line := AppendECS(nil, e)
	var doc struct {
		Timestamp string `json:"@timestamp"`
		Process   struct {
			Name        string   `json:"name"`
			Args        []string `json:"args"`
			ArgsCount   int      `json:"args_count"`
			CommandLine string   `json:"command_line"`
			EntityID    string   `json:"entity_id"`
			Parent      struct {
				PID      int    `json:"pid"`
				EntityID string `json:"entity_id"`
			} `json:"parent"`
		} `json:"process"`
		X any `json:"x"`
	}
	if err := json.Unmarshal(line, &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, line)
	}
	p := doc.Process
	if len(p.Args) != len(e.Argv) || p.ArgsCount != len(e.Argv) {
		t.Fatalf("args %q (count %d), want %q", p.Args, p.ArgsCount, e.Argv)
	}
	for i := range e.Argv {
		if p.Args[i] != e.Argv[i] {
			t.Errorf("args[%d] = %q, want %q", i, p.Args[i], e.Argv[i])
		}
	}
	if doc.X != nil {
		t.Errorf("an argument added a field: %s", line)
	}
	if want := `ls 'a b' '"},"x":{"' 'it'\''s' '` + "\n\x1b[31m" + `' ''`; p.CommandLine != want {
		t.Errorf("command_line %q, want %q", p.CommandLine, want)
	}
	if p.Name != "ls" || p.EntityID != e.ExecID.String() || p.Parent.EntityID != e.ParentExecID.String() || p.Parent.PID != 41 {
		t.Errorf("process %+v", p)
	}
	if doc.Timestamp != "2026-12-01T10:00:00.123456789Z" {
		t.Errorf("@timestamp %q", doc.Timestamp)
	}
}
