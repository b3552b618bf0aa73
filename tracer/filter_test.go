// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

func TestFilterPIDTree(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Types, _ = vocab.ParseTypes("all")
	cfg.PID = 100
	f := NewFilter(cfg)
	events := []struct {
		e    Event
		want bool
	}{
		{Event{Type: vocab.TypeExec, PID: 101, PPID: 100}, true},     // a vfork child's exec, before its parent's fork event
		{Event{Type: vocab.TypeFork, PID: 100, ChildPID: 101}, true}, // the fork event arrives after
		{Event{Type: vocab.TypeFork, PID: 101, ChildPID: 102}, true},
		{Event{Type: vocab.TypeSignal, PID: 102, Signal: 10}, true}, // a grandchild
		{Event{Type: vocab.TypeExec, PID: 200, PPID: 1}, false},     // not in the tree
		{Event{Type: vocab.TypeFork, PID: 200, ChildPID: 201}, false},
		{Event{Type: vocab.TypeExit, PID: 201}, false},
		{Event{Type: vocab.TypeExit, PID: 102}, true},
	}
	for i, c := range events {
		if got := f.Match(&c.e); got != c.want {
			t.Errorf("event %d %+v: Match = %v, want %v", i, c.e, got, c.want)
		}
	}
}

func TestFilterClassesSignalsComm(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Signals, _ = vocab.ParseSignals("USR1,TERM")
	cfg.Comms = []string{"sh"}
	f := NewFilter(cfg)
	cases := []struct {
		e    Event
		want bool
	}{
		{Event{Type: vocab.TypeSignal, Comm: "sh", Signal: 10}, true},
		{Event{Type: vocab.TypeSignal, Comm: "sh", Signal: 12}, false},
		{Event{Type: vocab.TypeSignal, Comm: "bash", Signal: 15}, false},
		{Event{Type: vocab.TypeExit, Comm: "sh"}, false}, // exit is not in the default classes
		{Event{Type: vocab.TypeExec, Comm: "sh"}, true},
	}
	for i, c := range cases {
		if got := f.Match(&c.e); got != c.want {
			t.Errorf("case %d %+v: Match = %v, want %v", i, c.e, got, c.want)
		}
	}
}

// collectSink keeps what it is given.
type collectSink struct{ events []Event }

func (s *collectSink) Write(e *Event) error {
	c := *e
	c.Argv = append([]string(nil), e.Argv...)
	s.events = append(s.events, c)
	return nil
}
func (s *collectSink) Flush() error { return nil }
func (s *collectSink) Close() error { return nil }

// With --pid, a child's events can arrive before its parent's fork event
// (audit sends the fork at the parent's syscall exit, which can come after
// the child's first calls on another CPU): they are held, and passed on
// once the fork makes the child a member, its own children's with them.
func TestPipelinePIDTreeChildBeforeFork(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Types = vocab.TypeSet(0).With(vocab.TypeSignal).With(vocab.TypeExec).With(vocab.TypeExit)
	cfg.PID = 100
	var s collectSink
	p := NewPipeline(cfg, &s)
	at := func(ms int) time.Time { return time.Unix(1000, int64(ms)*int64(time.Millisecond)) }
	for _, e := range []Event{
		{Time: at(1), Type: vocab.TypeSignal, PID: 101, Signal: 10},
		{Time: at(2), Type: vocab.TypeFork, PID: 101, ChildPID: 102},
		{Time: at(3), Type: vocab.TypeExec, PID: 103, PPID: 102, Argv: []string{"true"}}, // a vfork child of 102, before 102's fork event
		{Time: at(4), Type: vocab.TypeSignal, PID: 300, Signal: 10},                      // never in the tree
		{Time: at(5), Type: vocab.TypeExit, PID: 102},
		{Time: at(6), Type: vocab.TypeFork, PID: 102, ChildPID: 103},
		{Time: at(7), Type: vocab.TypeFork, PID: 100, ChildPID: 101}, // fork is not asked for: it only grows the tree
		{Time: at(8), Type: vocab.TypeExit, PID: 101},
		{Time: at(9), Type: vocab.TypeSignal, PID: 300, Signal: 10},
	} {
		p.Emit(&e)
	}
	var got []string
	for _, e := range s.events {
		got = append(got, fmt.Sprintf("%s %d %v", e.Type, e.PID, e.Argv))
	}
	want := []string{"signal 101 []", "exec 103 [true]", "exit 102 []", "exit 101 []"}
	if !slices.Equal(got, want) {
		t.Errorf("written %q, want %q", got, want)
	}
	if n := p.TotalEmitted(); n != uint64(len(want)) {
		t.Errorf("emitted %d, want %d", n, len(want))
	}
}

// What is held is bounded, in number and age: an event older than
// holdAge before the fork that would admit it is not let in (its pid may
// be another process's by then).
func TestPipelinePIDTreeHoldBounded(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Types = vocab.TypeSet(0).With(vocab.TypeSignal)
	cfg.PID = 100
	var s collectSink
	p := NewPipeline(cfg, &s)
	t0 := time.Unix(1000, 0)
	p.Emit(&Event{Time: t0, Type: vocab.TypeSignal, PID: 101, Signal: 10})
	for i := range holdMax {
		p.Emit(&Event{Time: t0.Add(time.Duration(i) * time.Microsecond), Type: vocab.TypeSignal, PID: 500 + uint32(i), Signal: 10})
	}
	p.Emit(&Event{Time: t0.Add(time.Millisecond), Type: vocab.TypeFork, PID: 100, ChildPID: 101}) // 101's signal was pushed out
	p.Emit(&Event{Time: t0, Type: vocab.TypeSignal, PID: 102, Signal: 10})
	p.Emit(&Event{Time: t0.Add(holdAge + time.Millisecond), Type: vocab.TypeFork, PID: 100, ChildPID: 102}) // too late
	p.Emit(&Event{Time: t0.Add(holdAge), Type: vocab.TypeSignal, PID: 103, Signal: 10})
	p.Emit(&Event{Time: t0.Add(holdAge + time.Millisecond), Type: vocab.TypeFork, PID: 100, ChildPID: 103})
	if len(s.events) != 1 || s.events[0].PID != 103 {
		t.Errorf("written %+v, want only 103's signal", s.events)
	}
	if n := len(p.Filter.hold.pids); n > holdMax {
		t.Errorf("%d pids held, want at most %d", n, holdMax)
	}
}
