// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"testing"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

func TestFilterSelectors(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Comms, cfg.UIDs = []string{"bash", "sleep"}, []uint32{0, 1000}
	f := NewFilter(cfg)
	for _, c := range []struct {
		e    Event
		want bool
	}{
		{Event{Type: vocab.TypeFork, Comm: "bash", UID: 1000}, true},
		{Event{Type: vocab.TypeFork, Comm: "sleep"}, true},
		{Event{Type: vocab.TypeFork, Comm: "bash,sleep"}, false},
		{Event{Type: vocab.TypeFork, Comm: "bash", UID: 1001}, false},
	} {
		if got := f.Match(&c.e); got != c.want {
			t.Errorf("--comm bash,sleep --uid 0,1000: Match(%+v) = %v", c.e, got)
		}
	}
	cfg = DefaultConfig()
	cfg.Exe = "true"
	f = NewFilter(cfg)
	for _, c := range []struct {
		e    Event
		want bool
	}{
		{Event{Type: vocab.TypeExec, Comm: "bash", Filename: "/usr/bin/true"}, true},
		{Event{Type: vocab.TypeExec, Comm: "true", Filename: "/usr/bin/false"}, false},
		{Event{Type: vocab.TypeFork, Comm: "true"}, false},
	} {
		if got := f.Match(&c.e); got != c.want {
			t.Errorf("--exe true: Match(%+v) = %v", c.e, got)
		}
	}
	if !MatchExe("/usr/bin/../bin/true", "/usr/bin/true") || MatchExe("/bin/true", "/usr/bin/true") {
		t.Error("MatchExe with a path compares cleaned paths")
	}
	cfg = DefaultConfig()
	cfg.PID, cfg.PIDs = 100, []uint32{200}
	f = NewFilter(cfg)
	for _, pid := range []uint32{100, 200} {
		if !f.Match(&Event{Type: vocab.TypeExec, PID: pid}) {
			t.Errorf("--pid 100,200: an exec of %d does not pass", pid)
		}
	}
}

type memSink struct{ got []Event }

func (s *memSink) Write(e *Event) error { s.got = append(s.got, *e); return nil }
func (s *memSink) Flush() error         { return nil }
func (s *memSink) Close() error         { return nil }

func TestPipelineMaxArgs(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxArgs = 2
	var s memSink
	p := NewPipeline(cfg, &s)
	e := &Event{Type: vocab.TypeExec, Argv: []string{"a", "b", "c"}}
	p.Emit(e)
	p.Emit(&Event{Type: vocab.TypeExec, Argv: []string{"a", "b"}})
	if len(s.got) != 2 || len(s.got[0].Argv) != 2 || !s.got[0].ArgvTruncated || s.got[1].ArgvTruncated {
		t.Errorf("--max-args 2: got %+v", s.got)
	}
	if len(e.Argv) != 3 || e.ArgvTruncated {
		t.Errorf("the backend's event was changed: %+v", e)
	}
}
