// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"testing"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

func TestExitCause(t *testing.T) {
	cases := []struct {
		e    Event
		want string
	}{
		{Event{Type: vocab.TypeExit, ExitCode: 3}, "exit"},
		{Event{Type: vocab.TypeExit, Signal: 15}, "signal"},
		{Event{Type: vocab.TypeExit, Signal: 11, CoreDumped: true}, "core"},
		{Event{Type: vocab.TypeExit, Signal: 9, OOMKill: true}, "oom"},
	}
	for _, c := range cases {
		if got := c.e.Cause().String(); got != c.want {
			t.Errorf("%+v: cause %q, want %q", c.e, got, c.want)
		}
	}
	var e Event
	e.Type = vocab.TypeExit
	e.SetExitStatus(vocab.DecodeWaitStatus(0x8b))
	if !e.Killed() || e.Signal != 11 || !e.CoreDumped || e.ExitCode != 0 {
		t.Errorf("SetExitStatus(SIGSEGV core): %+v", e)
	}
	e.SetExitStatus(vocab.DecodeWaitStatus(0x300))
	if e.Killed() || e.ExitCode != 3 || e.CoreDumped {
		t.Errorf("SetExitStatus(exit 3): %+v", e)
	}
}
