// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"strconv"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Severities (RFC 5424), the journal's PRIORITY and syslog's: what a
// process did is info; a signal, and an exit by one, are notice; an OOM
// kill or a core dump is warning. None is higher: a tracer reports what
// happened on the node, it does not judge it.
const (
	sevWarning = 4
	sevNotice  = 5
	sevInfo    = 6
)

// facilityAuthpriv (10) is the facility of both outputs: security
// events whose argv may hold secrets, which syslog daemons keep apart
// and readable by root (Debian's auth.log, RHEL's /var/log/secure).
const facilityAuthpriv = 10

// identifier is SYSLOG_IDENTIFIER and syslog's APP-NAME.
const identifier = "tracer"

func severity(e *tracer.Event) int {
	switch e.Type {
	case vocab.TypeSignal:
		return sevNotice
	case vocab.TypeExit:
		switch {
		case e.OOMKill || e.CoreDumped:
			return sevWarning
		case e.Killed():
			return sevNotice
		}
	}
	return sevInfo
}

// appendMessage appends the journal's MESSAGE: one short sentence
// ("exec /usr/bin/curl pid 1234 by uid 1000"), every string escaped as
// tracer's text lines escape them.
func appendMessage(b []byte, e *tracer.Event) []byte {
	b = append(b, e.Type.String()...)
	b = append(b, ' ')
	switch e.Type {
	case vocab.TypeExec:
		b = AppendEscaped(b, e.Filename)
		b = appendProc(b, " pid ", e.PID, "")
		b = appendUID(b, e.UID)
		b = appendFailed(b, e.Ret)
	case vocab.TypeFork:
		b = appendProc(b, "pid ", e.PID, e.Comm)
		b = append(b, " made pid "...)
		b = strconv.AppendUint(b, uint64(e.ChildPID), 10)
		b = appendUID(b, e.UID)
	case vocab.TypeSignal:
		b = append(b, e.SignalName()...)
		b = appendProc(b, " from pid ", e.PID, e.Comm)
		b = append(b, " to pid "...)
		b = strconv.AppendInt(b, int64(e.TargetPID), 10)
		if e.TargetComm != "" {
			b = append(b, " ("...)
			b = append(AppendEscaped(b, e.TargetComm), ')')
		}
		b = appendUID(b, e.UID)
		b = appendFailed(b, e.Ret)
	case vocab.TypeExit:
		b = appendProc(b, "pid ", e.PID, e.Comm)
		if !e.Killed() {
			b = append(b, " code "...)
			return strconv.AppendInt(b, int64(e.ExitCode), 10)
		}
		b = append(b, " killed by "...)
		b = append(b, e.SignalName()...)
		if k := &e.KilledBy; k.Seen() {
			b = appendProc(b, " from pid ", k.PID, k.Comm)
		}
		if e.CoreDumped {
			b = append(b, " (core dumped)"...)
		}
		if e.OOMKill {
			b = append(b, " (OOM kill)"...)
		}
	default:
		b = appendProc(b, "pid ", e.PID, e.Comm)
	}
	return b
}

// appendProc appends what, pid and, when known, (comm).
func appendProc(b []byte, what string, pid uint32, comm string) []byte {
	b = append(b, what...)
	b = strconv.AppendUint(b, uint64(pid), 10)
	if comm != "" {
		b = append(b, " ("...)
		b = append(AppendEscaped(b, comm), ')')
	}
	return b
}

func appendUID(b []byte, uid uint32) []byte {
	b = append(b, " by uid "...)
	return strconv.AppendUint(b, uint64(uid), 10)
}

// appendFailed says why a syscall failed (ret -errno).
func appendFailed(b []byte, ret int64) []byte {
	if ret >= 0 {
		return b
	}
	b = append(b, " failed: "...)
	if name := vocab.ErrnoName(-ret); name != "" {
		return append(b, name...)
	}
	return strconv.AppendInt(b, ret, 10)
}
