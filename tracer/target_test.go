// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"errors"
	"testing"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

func TestFilterTargetAndCgroup(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Types = TargetTypes
	cfg.Target = "4300"
	f := NewFilter(cfg)
	cases := []struct {
		e    Event
		want bool
	}{
		{Event{Type: vocab.TypeSignal, PID: 1, TargetPID: 4300, Signal: 15}, true},                                      // kill(4300)
		{Event{Type: vocab.TypeSignal, PID: 1, TargetPID: 4301, TargetExecID: ExecID{PID: 4300}, Signal: 15}, true},     // tgkill to a thread of 4300
		{Event{Type: vocab.TypeSignal, PID: 4300, TargetPID: 4301, TargetExecID: ExecID{PID: 4301}, Signal: 15}, false}, // sent by it, not to it
		{Event{Type: vocab.TypeExit, PID: 4300, Signal: 9}, true},                                                       // its death
		{Event{Type: vocab.TypeExit, PID: 4301}, false},                                                                 // another's
		{Event{Type: vocab.TypeSignal, PID: 1, TargetPID: -4300, Signal: 15}, false},                                    // a process group
	}
	for i, c := range cases {
		if got := f.Match(&c.e); got != c.want {
			t.Errorf("--target 4300, event %d %+v: %v", i, c.e, got)
		}
	}

	cfg.Target = "nginx"
	f = NewFilter(cfg)
	for i, c := range []struct {
		e    Event
		want bool
	}{
		{Event{Type: vocab.TypeSignal, Comm: "systemd", TargetComm: "nginx", Signal: 15}, true},
		{Event{Type: vocab.TypeSignal, Comm: "nginx", TargetComm: "sh", Signal: 15}, false},
		{Event{Type: vocab.TypeExit, Comm: "nginx"}, true},
		{Event{Type: vocab.TypeExec, Comm: "nginx"}, false},
	} {
		if got := f.Match(&c.e); got != c.want {
			t.Errorf("--target nginx, event %d %+v: %v", i, c.e, got)
		}
	}

	cfg = DefaultConfig()
	cfg.Types, _ = vocab.ParseTypes("all")
	cfg.Cgroup = "kubepods.slice/pod1.slice/"
	f = NewFilter(cfg)
	for _, c := range []struct {
		cgroup string
		want   bool
	}{
		{"/kubepods.slice/pod1.slice", true},
		{"/kubepods.slice/pod1.slice/cri-containerd-" + hexID + ".scope", true},
		{"/kubepods.slice/pod1.slice2", false}, // a sibling that shares the prefix
		{"/kubepods.slice", false},
		{"", false}, // not known: not kept
	} {
		if got := f.Match(&Event{Type: vocab.TypeExec, Cgroup: c.cgroup}); got != c.want {
			t.Errorf("--cgroup %s, event in %q: %v", cfg.Cgroup, c.cgroup, got)
		}
	}
}

func TestParseTarget(t *testing.T) {
	if pid, comm, err := ParseTarget(" 42 "); pid != 42 || comm != "" || err != nil {
		t.Errorf("ParseTarget(42) = %d %q %v", pid, comm, err)
	}
	if pid, comm, err := ParseTarget("nginx"); pid != 0 || comm != "nginx" || err != nil {
		t.Errorf("ParseTarget(nginx) = %d %q %v", pid, comm, err)
	}
	for _, bad := range []string{"", "0", "a-process-name-too-long"} {
		if _, _, err := ParseTarget(bad); !errors.Is(err, vocab.ErrUsage) {
			t.Errorf("ParseTarget(%q): %v, want a usage error", bad, err)
		}
	}
	if CleanCgroup("a/b/") != "/a/b" || CleanCgroup("/") != "/" || CleanCgroup("") != "" {
		t.Error("CleanCgroup")
	}
}
