// SPDX-License-Identifier: Apache-2.0

package audit

import (
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/auparse"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Audit rules cannot limit a rate per cgroup (auditctl -r is one limit for
// the whole node, and what it drops is lost, unsaid), so --rate-limit is
// enforced here, at an event's SYSCALL record, before the event is built:
// the kernel still writes every record and tracer still reads it, but an
// event over the limit costs no /proc read of its target, no encoding and
// no output (tracer.Limiter).

// limited applies --rate-limit to an event of class starting at t with
// SYSCALL record sc: pass says whether it goes on. An event that ends a
// window where events were left out first emits that window's throttle
// event. reread says that the exec's process was read again from /proc,
// for its cgroup now (identify need not).
func (r *reassembler) limited(t time.Time, class vocab.Type, sc *auparse.Syscall, emit func(*tracer.Event)) (pass, reread bool) {
	w := r.ids
	if class == vocab.TypeExec {
		w.reread(sc.PID, sc.PPID, sc.Comm)
		reread = true
	}
	me, ok := w.lookup(sc.PID, sc.PPID)
	if !me.hasCg {
		me = w.inheritCgroup(sc.PID, sc.PPID)
	}
	pass, source := r.limit.Allow(tracer.LimitKeyOf(me.cgroup.Path, sc.PID), t, class, emit)
	if pass {
		return true, reread
	}
	if source != nil {
		source.PID, source.Comm, source.UID, source.AUID = sc.PID, sc.Comm, sc.UID, sc.AUID
		if ok {
			source.ExecID = me.id
		}
		if me.hasCg {
			source.SetCgroup(me.cgroup)
		}
	}
	// What finish would have remembered of the event for the next ones.
	switch {
	case class == vocab.TypeFork && sc.Exit > 0:
		delete(w.procs, uint32(sc.Exit)) // a new process has that pid now
	case class == vocab.TypeExec && sc.Exit == 0:
		r.setComm(sc.PID, sc.PPID, sc.Comm, sc.Exe)
	case class == vocab.TypeExit && r.byArch[sc.Arch][sc.Syscall].name == "exit_group":
		delete(w.procs, sc.PID)
		delete(r.comms, sc.PID)
	}
	return false, reread
}

// limitedAbend applies --rate-limit to the exit of process pid at t, from
// an ANOM_ABEND record.
func (r *reassembler) limitedAbend(t time.Time, pid, uid, auid uint32, comm string, emit func(*tracer.Event)) bool {
	me, ok := r.ids.lookup(pid, 0)
	pass, source := r.limit.Allow(tracer.LimitKeyOf(me.cgroup.Path, pid), t, vocab.TypeExit, emit)
	if source != nil {
		source.PID, source.Comm, source.UID, source.AUID = pid, comm, uid, auid
		if ok {
			source.ExecID = me.id
		}
		if me.hasCg {
			source.SetCgroup(me.cgroup)
		}
	}
	if !pass {
		delete(r.ids.senders, pid)
		delete(r.ids.procs, pid)
		delete(r.comms, pid)
	}
	return pass
}

// limitSweepEvery is how often the rate limit's windows are swept: a
// window that ended in silence is reported within about a second.
const limitSweepEvery = 100 * time.Millisecond

// sweepLimit reports the rate limit's windows that are over.
func (r *reassembler) sweepLimit(now time.Time, emit func(*tracer.Event)) {
	if r.limit != nil {
		r.limit.Sweep(now, emit)
	}
}

// flushLimit reports every window of the rate limit that left events out
// (the watch ends).
func (r *reassembler) flushLimit(now time.Time, emit func(*tracer.Event)) {
	if r.limit != nil {
		r.limit.Flush(now, emit)
	}
}
