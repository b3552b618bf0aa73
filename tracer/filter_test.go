package tracer

import "testing"

func TestFilterPIDTree(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Types, _ = ParseTypes("all")
	cfg.PID = 100
	f := NewFilter(cfg)
	events := []struct {
		e    Event
		want bool
	}{
		{Event{Type: TypeExec, PID: 101, PPID: 100}, true},     // a vfork child's exec, before its parent's fork event
		{Event{Type: TypeFork, PID: 100, ChildPID: 101}, true}, // the fork event arrives after
		{Event{Type: TypeFork, PID: 101, ChildPID: 102}, true},
		{Event{Type: TypeSignal, PID: 102, Signal: 10}, true}, // a grandchild
		{Event{Type: TypeExec, PID: 200, PPID: 1}, false},     // not in the tree
		{Event{Type: TypeFork, PID: 200, ChildPID: 201}, false},
		{Event{Type: TypeExit, PID: 201}, false},
		{Event{Type: TypeExit, PID: 102}, true},
	}
	for i, c := range events {
		if got := f.Match(&c.e); got != c.want {
			t.Errorf("event %d %+v: Match = %v, want %v", i, c.e, got, c.want)
		}
	}
}

func TestFilterClassesSignalsComm(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Signals, _ = ParseSignals("USR1,TERM")
	cfg.Comm = "sh"
	f := NewFilter(cfg)
	cases := []struct {
		e    Event
		want bool
	}{
		{Event{Type: TypeSignal, Comm: "sh", Signal: 10}, true},
		{Event{Type: TypeSignal, Comm: "sh", Signal: 12}, false},
		{Event{Type: TypeSignal, Comm: "bash", Signal: 15}, false},
		{Event{Type: TypeExit, Comm: "sh"}, false}, // exit is not in the default classes
		{Event{Type: TypeExec, Comm: "sh"}, true},
	}
	for i, c := range cases {
		if got := f.Match(&c.e); got != c.want {
			t.Errorf("case %d %+v: Match = %v, want %v", i, c.e, got, c.want)
		}
	}
}

func TestParseSignalsAndTypes(t *testing.T) {
	for in, want := range map[string]int{"10": 10, "USR1": 10, "sigusr1": 10, "SIGRTMIN+2": 36, "0": 0} {
		if n, err := ParseSignal(in); err != nil || n != want {
			t.Errorf("ParseSignal(%q) = %d, %v; want %d", in, n, err, want)
		}
	}
	for _, bad := range []string{"SIGFOO", "65", "-1", "RTMIN+40"} {
		if _, err := ParseSignal(bad); err == nil {
			t.Errorf("ParseSignal(%q): no error", bad)
		}
	}
	if _, err := ParseTypes("exec,open"); err == nil {
		t.Error("ParseTypes accepted open")
	}
	if ts, _ := ParseTypes("all"); ts.String() != "exec,fork,signal,exit" {
		t.Errorf("all = %s", ts)
	}
	if SignalName(36) != "SIGRTMIN+2" || SignalName(0) != "SIG0" || SignalName(9) != "SIGKILL" {
		t.Error("SignalName")
	}
}
