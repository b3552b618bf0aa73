// SPDX-License-Identifier: Apache-2.0

package tracer

import "github.com/tracer-dev/tracer/tracer/vocab"

// Killed reports whether exit event e is the death of a process by a signal.
func (e *Event) Killed() bool { return e.Type == vocab.TypeExit && e.Signal != 0 }

// Cause classifies exit event e.
func (e *Event) Cause() vocab.ExitCause {
	switch {
	case e.OOMKill:
		return vocab.CauseOOM
	case !e.Killed():
		return vocab.CauseExit
	case e.CoreDumped:
		return vocab.CauseCore
	}
	return vocab.CauseSignal
}

// SetExitStatus fills exit event e from a decoded status: the exit code,
// or the signal and core flag.
func (e *Event) SetExitStatus(s vocab.ExitStatus) {
	if s.Exited {
		e.ExitCode, e.Signal, e.CoreDumped = s.Code, 0, false
		return
	}
	e.ExitCode, e.Signal, e.CoreDumped = 0, s.Signal, s.CoreDumped
}
