// SPDX-License-Identifier: Apache-2.0

package audit

import (
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/auparse"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// typeAnomAbend is the record the kernel writes when a process dies of a
// signal whose default action dumps core (audit_core_dumps): not a
// syscall, so no rule selects it and no EOE follows it.
const typeAnomAbend = 1701

// maxProcs bounds the per-pid identity cache and the remembered senders.
const maxProcs = 1 << 16

// procEntry is what /proc said of a process when the backend first saw it.
type procEntry struct {
	ok     bool // false: /proc had no such process (kept, so a gone process is read once)
	id     tracer.ExecID
	ppid   uint32
	cgroup tracer.CgroupInfo
	hasCg  bool
	comm   string
}

// sender is a fatal signal a process sent with a syscall, kept until the
// target dies of it (ANOM_ABEND) or the map is full.
type sender struct {
	sig     int
	pid     uint32
	comm    string
	id      tracer.ExecID
	code    int32
	syscall string
}

// identities gives audit events what the records lack: exec ids and cgroups
// (from /proc, at the time the event is read), target names, and the
// deaths audit does record.
//
// Audit records carry no start time and no cgroup, so the backend reads
// /proc/PID/stat and /proc/PID/cgroup the first time it sees a pid, and
// keeps the answer until it sees that pid made anew (a fork that returns
// it), end (exit_group), or under another parent. A process gone before
// its first event is read (a short-lived child) has no exec_id in its
// events (never guessed); its cgroup is its parent's, where it started.
type identities struct {
	procs   map[uint32]procEntry
	cgroups map[string]tracer.CgroupInfo
	senders map[uint32]sender // by target tgid
	// readProc reads the parts asked for of a live process (replaced in
	// tests on recordings, which may give more).
	readProc func(pid uint32, parts procParts) (tracer.ProcIdentity, bool)
}

// procParts says what of a process readProc reads: its stat file (exec
// id, parent, comm), its cgroup, or both. Each is a file to open and read,
// and at a steady exec rate those reads were the backend's largest cost.
type procParts uint8

const (
	partStat procParts = 1 << iota
	partCgroup
	partAll = partStat | partCgroup
)

func newIdentities() *identities {
	return &identities{
		procs: map[uint32]procEntry{}, cgroups: map[string]tracer.CgroupInfo{}, senders: map[uint32]sender{},
		readProc: func(pid uint32, parts procParts) (tracer.ProcIdentity, bool) {
			id, err := tracer.ReadProcParts(pid, parts&partStat != 0, parts&partCgroup != 0)
			return id, err == nil
		},
	}
}

// lookup returns pid's identity; ppid, when not 0, is the parent the
// record names: a cached entry with another parent is read again.
func (w *identities) lookup(pid, ppid uint32) (procEntry, bool) {
	if pid == 0 {
		return procEntry{}, false
	}
	if e, ok := w.procs[pid]; ok && (ppid == 0 || !e.ok || e.ppid == ppid) {
		return e, e.ok
	}
	if len(w.procs) >= maxProcs {
		clear(w.procs)
	}
	return w.read(pid, partAll)
}

// read reads pid from /proc (the parts asked for) into its cache entry.
func (w *identities) read(pid uint32, parts procParts) (procEntry, bool) {
	pi, ok := w.readProc(pid, parts)
	if !ok {
		w.procs[pid] = procEntry{}
		return procEntry{}, false
	}
	e := procEntry{ok: true, id: pi.ExecID, ppid: pi.PPID, comm: pi.Comm}
	if parts&partCgroup != 0 {
		e.cgroup, e.hasCg = w.cgroupInfo(pi.Cgroup)
	}
	w.procs[pid] = e
	return e, true
}

// cgroupInfo names a cgroup path once (unit, container id).
func (w *identities) cgroupInfo(path string) (tracer.CgroupInfo, bool) {
	if path == "" {
		return tracer.CgroupInfo{}, false
	}
	ci, ok := w.cgroups[path]
	if !ok {
		if len(w.cgroups) >= maxProcs {
			clear(w.cgroups)
		}
		ci = tracer.NewCgroupInfo(path)
		w.cgroups[path] = ci
	}
	return ci, true
}

// forked reads a new process, child of parent, made by syscall: its stat
// file while it may still run (its start time, for its exec id). Its
// cgroup is its parent's, where the kernel starts a child, except after
// clone3, which can start it in another (CLONE_INTO_CGROUP): read then.
// An exec reads the cgroup again (reread).
func (w *identities) forked(child, parent uint32, syscall string) {
	delete(w.procs, child)
	if len(w.procs) >= maxProcs {
		clear(w.procs)
	}
	parts := partStat
	if syscall == "clone3" {
		parts = partAll
	}
	w.read(child, parts)
	w.inheritCgroup(child, parent)
}

// inheritCgroup gives pid, whose cgroup /proc did not give (it was gone,
// or a zombie), the cgroup of its parent, where a process starts. One that
// moved itself and ended before it was read counts where it started. Its
// exec id stays unknown without its start time.
func (w *identities) inheritCgroup(pid, ppid uint32) procEntry {
	e := w.procs[pid]
	if e.hasCg || ppid == 0 {
		return e
	}
	if parent, _ := w.lookup(ppid, 0); parent.hasCg {
		e.cgroup, e.hasCg, e.ppid = parent.cgroup, true, ppid
		w.procs[pid] = e
	}
	return e
}

// reread reads an exec's process (pid, of parent ppid) again: a process is
// often moved to another cgroup between fork and exec (systemd puts a
// service's process in its unit's cgroup, a container runtime in the
// container's). If it is gone already, what was known of it stands.
func (w *identities) reread(pid, ppid uint32, comm string) {
	old, had := w.procs[pid]
	if had && old.ok && old.ppid == ppid {
		// The process read before: its start time does not change at an
		// exec, its comm is the exec's record's, and only its cgroup is
		// read. The root's is also a zombie's: then its stat says which.
		if pi, ok := w.readProc(pid, partCgroup); ok && pi.Cgroup != "" &&
			(pi.Cgroup != "/" || old.hasCg && old.cgroup.Path == "/") {
			old.cgroup, old.hasCg = w.cgroupInfo(pi.Cgroup)
			old.comm = comm
			w.procs[pid] = old
			return
		}
	}
	if had {
		delete(w.procs, pid)
		// Only if it is this process: pids are reused, and an entry
		// with another parent is a process that ended.
		if _, ok := w.lookup(pid, ppid); !ok && old.ppid == ppid {
			w.procs[pid] = old
		}
	}
}

// identify fills e's exec ids and cgroup, and for a signal its code,
// origin, target name and target exec id; p is the event's records.
func (r *reassembler) identify(e *tracer.Event, p *pending) {
	w := r.ids
	sc := &p.sc
	switch e.Type {
	case vocab.TypeFork:
		// A new process has this pid now: read it while it may still run.
		w.forked(e.ChildPID, e.PID, e.Syscall)
	case vocab.TypeExec:
		if !p.reread {
			w.reread(e.PID, sc.PPID, sc.Comm)
		}
	}
	me, ok := w.lookup(e.PID, sc.PPID)
	if ok {
		e.ExecID = me.id
	}
	if !me.hasCg {
		me = w.inheritCgroup(e.PID, sc.PPID)
	}
	if me.hasCg {
		e.SetCgroup(me.cgroup)
	}
	if parent, ok := w.lookup(sc.PPID, 0); ok {
		e.ParentExecID = parent.id
	}
	switch e.Type {
	case vocab.TypeSignal:
		e.Origin = vocab.OriginUser
		e.Code, e.HasCode = vocab.SyscallCode(e.Syscall, sc.Args[2] != 0)
		target := uint32(p.objPID) // OBJ_PID: the target's tgid
		if target == 0 && e.TargetPID > 0 && e.Syscall != "tkill" {
			target = uint32(e.TargetPID) // kill, tgkill, rt_*sigqueueinfo: the tgid is an argument
			if e.Syscall == "tgkill" || e.Syscall == "rt_tgsigqueueinfo" {
				target = uint32(int32(sc.Args[0]))
			}
		}
		if target != 0 {
			t, tok := w.lookup(target, 0)
			if tok {
				e.TargetExecID = t.id
			}
			e.TargetComm = p.objComm
			if e.TargetComm == "" && tok {
				// Lean records have no OBJ_PID: the comm read with the
				// target's identity (read again when it execs) saves a
				// /proc read per signal in a storm.
				e.TargetComm = t.comm
			}
			if e.TargetComm == "" {
				e.TargetComm, _ = r.procComm(target)
			}
			if e.Ret == 0 && vocab.TerminatesByDefault(e.Signal) {
				if len(w.senders) >= maxProcs {
					clear(w.senders)
				}
				w.senders[target] = sender{sig: e.Signal, pid: e.PID, comm: e.Comm, id: e.ExecID, code: e.Code, syscall: e.Syscall}
			}
		}
	case vocab.TypeExit:
		if p.info.name == "exit_group" {
			delete(w.procs, e.PID) // the process ends
		}
	}
}

// abend makes the exit event of a process that died of a core-dumping
// signal (ANOM_ABEND: "... pid=1234 comm="segv" exe=... sig=11 res=1").
// Whether a core file was written, audit does not say; the sender is
// known when audit saw a process send that signal with a syscall (a
// fault, the kernel's own signal, is not audited).
func (r *reassembler) abend(t time.Time, serial uint64, body []byte, emit func(*tracer.Event)) {
	if !r.types.Has(vocab.TypeExit) {
		return
	}
	var pid, uid, auid, ses uint32
	var sig int
	var comm, exe []byte
	f := auparse.NewFields(body)
	for {
		k, v, ok := f.Next()
		if !ok {
			break
		}
		switch string(k) {
		case "pid":
			pid = uint32(auparse.DecInt(v))
		case "uid":
			uid = uint32(auparse.DecInt(v))
		case "auid":
			auid = uint32(auparse.DecInt(v))
		case "ses":
			ses = uint32(auparse.DecInt(v))
		case "comm":
			comm = v
		case "exe":
			exe = v
		case "sig":
			sig = int(auparse.DecInt(v))
		}
	}
	if pid == 0 || sig == 0 {
		r.bad++
		return
	}
	if r.scopeAUID != vocab.UnsetID && auid != r.scopeAUID {
		return
	}
	if r.dedupe != nil {
		if _, dup := r.dedupe[serial]; dup {
			return
		}
		r.dedupe[serial] = struct{}{}
	}
	if r.limit != nil && !r.limitedAbend(t, pid, uid, auid, r.str(comm), emit) {
		return
	}
	e := &r.ev
	e.Reset()
	e.Time, e.Backend, e.Type = t, backendName, vocab.TypeExit
	e.PID, e.UID, e.AUID, e.Comm = pid, uid, auid, r.str(comm)
	// The record has uid and gid alone of the ids: HasCreds stays false.
	e.Session = ses
	e.Exe, _ = tracer.CapString(r.str(exe), tracer.FilenameMax)
	e.Signal, e.CoreUnknown = sig, true
	w := r.ids
	if me, ok := w.lookup(pid, 0); ok {
		e.ExecID = me.id
		if me.hasCg {
			e.SetCgroup(me.cgroup)
		}
		if parent, ok := w.lookup(me.ppid, 0); ok {
			e.ParentExecID = parent.id
		}
	}
	if s, ok := w.senders[pid]; ok && s.sig == sig {
		e.KilledBy = tracer.KilledBy{Origin: vocab.OriginUser, PID: s.pid, Comm: s.comm, ExecID: s.id, Code: s.code, Syscall: s.syscall}
	}
	delete(w.senders, pid)
	delete(w.procs, pid)
	delete(r.comms, pid)
	r.delivered[e.Type]++
	emit(e)
}
