// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"testing"

	"github.com/tracer-dev/tracer/tracer/host"
)

const hexID = "4c2a0e7d9b1f3a5c6e8d0b2f4a6c8e0d1b3f5a7c9e1d3b5f7a9c1e3d5b7f9a1c"

// SetCgroup fills an event's cgroup, container id and unit from the path.
func TestSetCgroup(t *testing.T) {
	cases := []struct{ path, container, unit string }{
		{"/system.slice/docker-" + hexID + ".scope", hexID, "docker-" + hexID + ".scope"},
		{"/user.slice/user-1000.slice/session-3.scope", "", "session-3.scope"},
		{"/", "", ""},
	}
	for _, c := range cases {
		ci := NewCgroupInfo(c.path)
		var e Event
		e.SetCgroup(ci)
		if e.Cgroup != c.path || e.ContainerID != c.container || e.Unit != c.unit {
			t.Errorf("SetCgroup(%q): %+v", c.path, ci)
		}
	}
}

func TestExecID(t *testing.T) {
	id := ExecID{PID: 4242, Start: 987654}
	s := id.String()
	if want := host.BootID() + ":987654:4242"; s != want {
		t.Errorf("ExecID = %q, want %q", s, want)
	}
	if back, ok := ParseExecID(s); !ok || back != id {
		t.Errorf("ParseExecID(%q) = %+v %v", s, back, ok)
	}
	if _, ok := ParseExecID("x:1"); ok {
		t.Error("ParseExecID accepted a bad id")
	}
	if !(ExecID{}).IsZero() || id.IsZero() {
		t.Error("IsZero")
	}
}
