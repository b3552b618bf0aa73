// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"encoding/json"
	"strings"
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

// A setuid program's exec: the ids that differ from the real ones, the
// session, terminal, program, directory and key, in each format.
func TestCredsInEveryFormat(t *testing.T) {
	e := tracer.Event{Time: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Backend: "audit", Type: vocab.TypeExec, PID: 42,
		Comm: "sh", UID: 1000, AUID: 1000, HasCreds: true, GID: 1000, Session: 3, TTY: "pts0", Exe: "/usr/bin/bash",
		Cwd: "/home/a", Key: "tracer-1-2", PPID: 41, Filename: "/usr/bin/passwd", Argv: []string{"passwd"}}
	e.SameCreds()
	e.EUID, e.SUID, e.FSUID = 0, 0, 0
	for _, c := range []struct {
		name string
		got  string
		want []string
	}{
		{"json", string(AppendJSON(nil, &e)), []string{`"uid":1000,"gid":1000,"euid":0,"suid":0,"fsuid":0,"auid":1000,"ses":3,"tty":"pts0","exe":"/usr/bin/bash","cwd":"/home/a","key":"tracer-1-2",`}},
		{"text", string(AppendText(nil, &e)), []string{" 1000       euid=0 ppid=41 "}},
		{"ecs", string(AppendECS(nil, &e)), []string{`"user":{"id":"0"},"group":{"id":"1000"},"real_user":{"id":"1000"}`, `"saved_user":{"id":"0"}`,
			`"user":{"id":"1000","effective":{"id":"0"}}`, `"working_directory":"/home/a"`, `"fsuid":0,"ses":3,"tty":"pts0","key":"tracer-1-2"`, `"exe":"/usr/bin/bash"`}},
		{"ocsf", string(AppendOCSF(nil, &e)), []string{`"user":{"uid":"1000"},"group":{"uid":"1000"},"euid":0,"auid":1000,"path":"/usr/bin/bash","working_directory":"/home/a","session":{"uid":"3","terminal":"pts0"}`,
			`"suid":0,"fsuid":0,"key":"tracer-1-2"`}},
	} {
		for _, w := range c.want {
			if !strings.Contains(c.got, w) {
				t.Errorf("%s: no %s in\n%s", c.name, w, c.got)
			}
		}
	}
}
