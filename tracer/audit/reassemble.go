// SPDX-License-Identifier: Apache-2.0

package audit

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/auparse"
	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// backendName fills Event.Backend.
const backendName = "audit"

type syscallInfo struct {
	name  string
	class vocab.Type
}

type pending struct {
	serial   uint64
	time     time.Time
	info     syscallInfo
	sc       auparse.Syscall
	filename string
	havePath bool
	args     auparse.Execve // from the EXECVE records, which may be several
	objPID   int32
	objComm  string // the target's comm, from OBJ_PID
	cwd      string // exec: the CWD record's
	// reread: the exec's process was read again from /proc when the
	// event started (the rate limit's cgroup): identify need not.
	reread bool
	// aged: open at the last sweep, so whole for at least a sweep's
	// interval without its EOE.
	aged bool
}

// reassembler joins the records of one audit event (SYSCALL, EXECVE, PATH,
// OBJ_PID, ..., EOE share a serial number) into a tracer.Event. Records of
// concurrent events interleave, so partial events wait in a map until
// their EOE arrives; only events of syscalls it was asked for are kept.
//
// Where the kernel builds no EOE (lean records exclude it), an event ends
// at the last record tracer reads: the kernel writes one event's records
// in a fixed order (SYSCALL, EXECVE, OBJ_PID, CWD, PATH..., PROCTITLE,
// EOE), so a fork, exit or signal is whole at its SYSCALL record and an
// exec at its first PATH record (or at SYSCALL when it has none, a failed
// exec). Records after that find no open event and are dropped.
type reassembler struct {
	types vocab.TypeSet
	// scopeAUID drops events of other login uids (trace's scope).
	scopeAUID uint32
	byArch    map[uint32]map[int]syscallInfo
	pending   map[uint64]*pending
	free      []*pending
	maxSerial uint64
	// syscalls counts SYSCALL records, which pace eviction.
	syscalls uint64
	// eoeless: the kernel excludes EOE records; pathless: PATH records;
	// objless: OBJ_PID records (setExcluded).
	eoeless, pathless, objless bool

	comms  map[uint32]commEntry // pid -> comm and exe, to name the caller of an exec as it was before the exec
	intern map[string]string
	// procComm and procExe read a live process's comm and executable
	// (replaced in tests on recordings).
	procComm, procExe func(pid uint32) (string, bool)

	// signals says which runtime noise (vocab.IsNoise) to keep; what is
	// left out is counted in filtered, by reason.
	signals  vocab.SignalSet
	filtered [vocab.NumFilterReasons]uint64
	// execFailures keeps failed exec attempts; self is this process, never
	// reported. The rules say so in the kernel, but another tracer's rules
	// make records every tracer reads.
	execFailures bool
	self         uint32
	// scope, when set, says whether the sender of a noise signal is one
	// the watch's --comm and --cgroup keep: only those are counted, as
	// eBPF counts after its comm and cgroup filters in the kernel.
	scope func(r *reassembler, sc *auparse.Syscall) bool

	// limit, when set, is --rate-limit: events over it are counted and
	// left out at their SYSCALL record, before they are built.
	limit *tracer.Limiter

	sc        auparse.Syscall // the SYSCALL record being read (startEvent)
	ev        tracer.Event
	delivered [vocab.TypeThrottle + 1]uint64
	lost      uint64 // events evicted without their EOE
	bad       uint64 // records that failed to parse
	// dedupe, while a handover reads two sockets that may both carry an
	// event, holds the serials already emitted (handover.go).
	dedupe map[uint64]struct{}
	ids    *identities // exec ids, cgroups, deaths (identity.go)
	// keys, when set, keeps only the events of rules with one of these
	// keys (following the node's rules, follow.go).
	keys [][]byte
}

func newReassembler(types vocab.TypeSet, scopeAUID uint32) *reassembler {
	r := &reassembler{
		types: types, scopeAUID: scopeAUID,
		byArch:   map[uint32]map[int]syscallInfo{},
		pending:  map[uint64]*pending{},
		comms:    map[uint32]commEntry{},
		intern:   map[string]string{},
		ids:      newIdentities(),
		procComm: host.ProcComm,
		procExe:  host.ProcExe,
	}
	for _, b32 := range []bool{false, true} {
		arch := archValue(b32)
		m := map[int]syscallInfo{}
		for nr := 0; nr < 1024; nr++ {
			name := auditrules.SyscallName(nr, b32)
			if name == "" {
				continue
			}
			if c := auditrules.ClassOf(name); c != vocab.TypeNone && types.Has(c) {
				m[nr] = syscallInfo{name: name, class: c}
			}
		}
		r.byArch[arch] = m
	}
	return r
}

// archValue is the AUDIT_ARCH_* of this machine's 64-bit or 32-bit ABI.
func archValue(b32 bool) uint32 {
	return auditrules.ArchValue(auditrules.RuntimeMachine(), b32)
}

// feed takes one record; emit receives each completed event.
func (r *reassembler) feed(typ uint16, msg []byte, emit func(*tracer.Event)) {
	switch typ {
	case auparse.TypeSyscall, auparse.TypeExecve, auparse.TypePath, auparse.TypeObjPID, auparse.TypeCwd, auparse.TypeEOE, typeAnomAbend:
	default:
		return
	}
	t, serial, body, err := auparse.Header(msg)
	if err != nil {
		r.bad++
		return
	}
	if typ == typeAnomAbend {
		r.abend(t, serial, body, emit)
		return
	}
	if typ == auparse.TypeSyscall {
		if r.keys != nil && !keyMatch(body, r.keys) {
			return // another rule's: its other records find no event
		}
		p := r.startEvent(t, serial, body, emit)
		if p != nil && r.eoeless && p.whole(r.pathless) && !r.awaitsObjPID(p) {
			r.complete(p, emit)
		}
		// Paced by SYSCALL records, not all records: when no SYSCALL
		// landed on a multiple of 4096, eviction never ran.
		r.syscalls++
		if r.syscalls&0xfff == 0 {
			r.evict(emit)
		}
		return
	}
	p := r.pending[serial]
	if p == nil {
		return
	}
	switch typ {
	case auparse.TypeExecve:
		p.args.Parse(body)
		if r.eoeless && r.pathless && p.args.Complete() {
			r.complete(p, emit)
		}
	case auparse.TypePath:
		if item, name := auparse.Path(body); item == 0 && !p.havePath {
			p.filename, p.havePath = name, true
			if r.eoeless {
				r.complete(p, emit)
			}
		}
	case auparse.TypeObjPID:
		if p.objPID == 0 {
			p.objPID = auparse.ObjPID(body)
			p.objComm = r.str(auparse.ObjComm(body))
		}
		if r.eoeless && p.whole(r.pathless) {
			r.complete(p, emit)
		}
	case auparse.TypeCwd:
		if p.info.class == vocab.TypeExec && p.cwd == "" {
			if v, ok := auparse.Field(body, "cwd"); ok {
				p.cwd, _ = tracer.CapString(v, tracer.FilenameMax)
			}
		}
	case auparse.TypeEOE:
		r.complete(p, emit)
	}
}

// whole reports whether an event has every record tracer reads, for when
// no EOE will say so: an exec ends at PATH item 0, or, where the kernel
// builds no PATH records either, once its EXECVE records held every
// argument (a failed exec has none: it ends at SYSCALL).
func (p *pending) whole(pathless bool) bool {
	return p.info.class != vocab.TypeExec || p.havePath || p.sc.Items == 0 ||
		pathless && (p.sc.Exit != 0 || p.args.Complete())
}

// awaitsObjPID reports whether an event whole at its SYSCALL record
// should still wait for its OBJ_PID: a pidfd_send_signal names its target
// nowhere else for sure (auditrules.LeanTypes). The kernel writes OBJ_PID
// when the signal reached the permission check, which a success or EPERM
// says; where none comes, the sweep ends the event as whole.
func (r *reassembler) awaitsObjPID(p *pending) bool {
	return !r.objless && p.info.class == vocab.TypeSignal && p.objPID == 0 &&
		auditrules.TargetArg[p.info.name] < 0 && (p.sc.Exit == 0 || p.sc.Exit == -1) // -1: EPERM
}

func (r *reassembler) complete(p *pending, emit func(*tracer.Event)) {
	delete(r.pending, p.serial)
	r.finish(p, emit)
	r.release(p)
}

// recordSet is a set of the record types an event's end depends on.
type recordSet uint32

const (
	recEOE recordSet = 1 << iota
	recPath
	recExecve
	recSyscall
	recObjPID
)

// recordSetTypes names recordSet's bits, in order.
var recordSetTypes = []string{"EOE", "PATH", "EXECVE", "SYSCALL", "OBJ_PID"}

func (s recordSet) has(t recordSet) bool { return s&t != 0 }

// setExcluded follows the kernel's exclude list as it changes under a
// running tracer (another tracer added or removed lean records, the node
// changed its own): without EOE, events end at their last record tracer
// reads. Events already whole that were waiting for an EOE that will not
// come end now, in serial order.
func (r *reassembler) setExcluded(ex recordSet, emit func(*tracer.Event)) {
	on := ex.has(recEOE)
	r.pathless, r.objless = ex.has(recPath), ex.has(recObjPID)
	if on == r.eoeless {
		return
	}
	r.eoeless = on
	if !on {
		return
	}
	var whole []*pending
	for _, p := range r.pending {
		if p.whole(r.pathless) {
			whole = append(whole, p)
		}
	}
	r.completeInOrder(whole, emit)
}

func (r *reassembler) startEvent(t time.Time, serial uint64, body []byte, emit func(*tracer.Event)) *pending {
	// Parsed into the reassembler's own record: a local escaped to the
	// heap, an allocation per record.
	sc := &r.sc
	auparse.ParseSyscall(body, sc)
	info, ok := r.byArch[sc.Arch][sc.Syscall]
	if !ok {
		return nil
	}
	if r.scopeAUID != vocab.UnsetID && sc.AUID != r.scopeAUID {
		return nil
	}
	if sc.PID == r.self && r.self != 0 ||
		info.class == vocab.TypeExec && sc.Exit != 0 && !r.execFailures ||
		info.class == vocab.TypeSignal && r.noise(info.name, sc) {
		return nil
	}
	if _, open := r.pending[serial]; open && r.dedupe != nil {
		return nil // the other socket's copy of a record already read
	}
	// The raw fields point into the read buffer, which the next record overwrites.
	sc.Comm, sc.CommRaw = r.str(sc.CommRaw), nil
	sc.Exe, sc.ExeRaw = r.str(sc.ExeRaw), nil
	sc.Key, sc.KeyRaw = r.str(sc.KeyRaw), nil
	if string(sc.TTYRaw) != "(none)" {
		sc.TTY = r.str(sc.TTYRaw)
	}
	sc.TTYRaw = nil
	reread := false
	if r.limit != nil {
		if info.class == vocab.TypeFork && (!sc.HasExit || sc.Exit <= 0) {
			return nil // a failed fork made no process, and no event
		}
		var pass bool
		if pass, reread = r.limited(t, info.class, sc, emit); !pass {
			return nil
		}
	}
	var p *pending
	if n := len(r.free); n > 0 {
		p, r.free = r.free[n-1], r.free[:n-1]
	} else {
		p = &pending{}
	}
	p.serial, p.time, p.info, p.sc, p.reread = serial, t, info, *sc, reread
	r.pending[serial] = p
	if serialAfter(serial, r.maxSerial) {
		r.maxSerial = serial
	}
	return p
}

// noise reports, and counts, a signal syscall that is runtime noise
// (vocab.IsNoise): audit rule fields cannot compare a target with its
// sender, so this one is decided here, before the event is built.
func (r *reassembler) noise(name string, sc *auparse.Syscall) bool {
	sig := int(int32(sc.Args[auditrules.SignalArg[name]]))
	// a0 is the target's process for tgkill and rt_tgsigqueueinfo, and a
	// thread id for tkill: the sender's own process when it names its main
	// thread. IsNoise looks at it only for those three.
	ttgid := uint32(sc.Args[0])
	why, ok := vocab.IsNoise(r.signals, sig, name, ttgid, sc.PID)
	if ok && (r.scope == nil || r.scope(r, sc)) {
		r.filtered[why]++
	}
	return ok
}

// noiseScope is reassembler.scope for cfg, or nil when the watch has no
// --comm or --cgroup. It costs a lookup per noise signal only with them;
// the cgroup is read from /proc once per process, as events' are.
func noiseScope(cfg tracer.Config) func(r *reassembler, sc *auparse.Syscall) bool {
	cg := tracer.CleanCgroup(cfg.Cgroup)
	comms := cfg.Comms
	if len(comms) == 0 && (cg == "" || cg == "/") {
		return nil
	}
	return func(r *reassembler, sc *auparse.Syscall) bool {
		if len(comms) > 0 && !slices.Contains(comms, r.str(sc.CommRaw)) {
			return false
		}
		if cg == "" || cg == "/" {
			return true
		}
		me, _ := r.ids.lookup(sc.PID, sc.PPID)
		if !me.hasCg {
			me = r.ids.inheritCgroup(sc.PID, sc.PPID)
		}
		return me.hasCg && tracer.CgroupUnder(me.cgroup.Path, cg)
	}
}

func (r *reassembler) release(p *pending) {
	args := p.args
	// Most argv are short: thousands of events in the free list must not
	// each hold a block of the cap's size.
	args.Reset(256)
	*p = pending{args: args}
	r.free = append(r.free, p)
}

// evict ends events that never got their EOE: the kernel writes an
// event's records back to back, so one still open 65,536 serials later
// will get no more records.
func (r *reassembler) evict(emit func(*tracer.Event)) {
	r.endOpen(func(s uint64) bool { return serialAfter(r.maxSerial, s+65536) }, true, emit)
}

// sweep ends the events that have been whole but open since the last
// sweep: their EOE is not coming (see endOpen), and without a sweep they
// would wait for the next eviction, or shutdown, on a quiet node.
func (r *reassembler) sweep(emit func(*tracer.Event)) {
	r.endOpen(func(s uint64) bool { return r.pending[s].aged }, false, emit)
	for _, p := range r.pending {
		p.aged = true
	}
}

// flush ends every still-open event (at shutdown, once the drain has read
// what the kernel queued).
func (r *reassembler) flush(emit func(*tracer.Event)) {
	r.endOpen(func(uint64) bool { return true }, true, emit)
}

// endOpen ends the open events whose serial old accepts. One that is whole
// lacks only its EOE, which holds nothing tracer reads: the kernel dropped
// it, or the exclude list dropped EOE in a window this tracer never saw
// (another tracer's lean records, added and removed between two polls).
// It is emitted, in serial order. One that is not whole lost records: with
// lose it is counted lost, else left open.
func (r *reassembler) endOpen(old func(serial uint64) bool, lose bool, emit func(*tracer.Event)) {
	var whole []*pending
	for s, p := range r.pending {
		if !old(s) {
			continue
		}
		if p.whole(r.pathless) {
			whole = append(whole, p)
			continue
		}
		if !lose {
			continue
		}
		delete(r.pending, s)
		r.lost++
		r.release(p)
	}
	r.completeInOrder(whole, emit)
}

// completeInOrder ends events in serial order.
func (r *reassembler) completeInOrder(ps []*pending, emit func(*tracer.Event)) {
	slices.SortFunc(ps, func(a, b *pending) int {
		if serialAfter(a.serial, b.serial) {
			return 1
		}
		return -1
	})
	for _, p := range ps {
		r.complete(p, emit)
	}
}

func (r *reassembler) str(b []byte) string {
	if s, ok := r.intern[string(b)]; ok {
		return s
	}
	s := auparse.Untrusted(b)
	if len(r.intern) > 4096 {
		clear(r.intern)
	}
	r.intern[string(b)] = s
	return s
}

func (r *reassembler) finish(p *pending, emit func(*tracer.Event)) {
	e := &r.ev
	e.Reset()
	sc := &p.sc
	e.Time, e.Backend, e.Type = p.time, backendName, p.info.class
	e.PID, e.UID, e.AUID = sc.PID, sc.UID, sc.AUID
	e.HasCreds, e.GID, e.EUID, e.SUID, e.FSUID = true, sc.GID, sc.EUID, sc.SUID, sc.FSUID
	e.EGID, e.SGID, e.FSGID, e.Session = sc.EGID, sc.SGID, sc.FSGID, sc.Ses
	e.TTY, e.Key = sc.TTY, sc.Key
	e.Exe, _ = tracer.CapString(sc.Exe, tracer.FilenameMax)
	comm := sc.Comm
	e.Comm = comm
	switch p.info.class {
	case vocab.TypeExec:
		e.PPID, e.Ret, e.Cwd = sc.PPID, sc.Exit, p.cwd
		// The record's comm and exe are the new program's (a failed
		// exec's, the caller's own).
		var exe string
		e.Comm, exe = r.callerBefore(sc.PID, sc.PPID, comm, sc.Exe)
		e.Exe, _ = tracer.CapString(exe, tracer.FilenameMax)
		e.Argv, e.ArgvTruncated = appendArgv(e.Argv, &p.args)
		e.Filename = p.filename
		if !p.havePath && len(e.Argv) > 0 {
			e.Filename = e.Argv[0]
		}
		e.Filename, e.FilenameTruncated = tracer.CapString(e.Filename, tracer.FilenameMax)
		if sc.Exit == 0 {
			r.setComm(sc.PID, sc.PPID, comm, sc.Exe)
		}
	case vocab.TypeFork:
		if !sc.HasExit || sc.Exit <= 0 {
			return // a failed fork made no process
		}
		e.ChildPID, e.Syscall = uint32(sc.Exit), p.info.name
		// A vfork parent's record comes after its child's exec, which
		// already named the child: the parent's comm must not undo that.
		if c, ok := r.comms[e.ChildPID]; !ok || c.ppid != sc.PID {
			r.setComm(e.ChildPID, sc.PID, comm, sc.Exe)
		}
	case vocab.TypeSignal:
		e.Syscall, e.Ret = p.info.name, sc.Exit
		e.Signal = int(int32(sc.Args[auditrules.SignalArg[p.info.name]]))
		if idx := auditrules.TargetArg[p.info.name]; idx >= 0 {
			e.TargetPID = int32(sc.Args[idx])
		} else if e.TargetPID = p.objPID; e.TargetPID == 0 {
			// No OBJ_PID record (lean records): the sender's pidfd names
			// the target while it is still open.
			e.TargetPID = pidfdTarget(sc.PID, sc.Args[0])
		}
	case vocab.TypeExit:
		e.ExitCode = int(int32(sc.Args[0]))
		delete(r.comms, sc.PID)
	}
	if r.dedupe != nil {
		if _, dup := r.dedupe[p.serial]; dup {
			return
		}
		r.dedupe[p.serial] = struct{}{}
	}
	r.identify(e, p)
	r.delivered[e.Type]++
	emit(e)
}

func (r *reassembler) setComm(pid, ppid uint32, comm, exe string) {
	if len(r.comms) > 1<<16 {
		clear(r.comms) // bounded: exits we never saw would grow it forever
	}
	r.comms[pid] = commEntry{comm: comm, exe: exe, ppid: ppid}
}

// commEntry is a process's comm and executable as last seen, with its
// parent: pids are reused, and an entry whose parent is not the exec's is
// another process's.
type commEntry struct {
	comm, exe string
	ppid      uint32
}

// callerBefore names the caller of an exec, its comm and executable, as
// it was before the exec, which is what the eBPF backend and bpftrace's
// sys_enter_execve see; the SYSCALL record only has those after it. A
// process that has not exec'd yet has its parent's, and the parent of a
// vfork or posix_spawn child is still blocked in that call, so /proc has
// it. A failed exec's record has the caller's own.
func (r *reassembler) callerBefore(pid, ppid uint32, comm, exe string) (string, string) {
	if c, ok := r.comms[pid]; ok && (c.ppid == ppid || !tracer.ProcessAlive(int(c.ppid))) {
		// Its own entry, unless that is of an ended process whose pid was
		// reused: its parent then is another, and alive. (A process whose
		// parent died was reparented: its entry stands.)
		return c.comm, c.exe
	}
	if c, ok := r.comms[ppid]; ok {
		return c.comm, c.exe
	}
	if c, ok := r.procComm(ppid); ok {
		x, _ := r.procExe(ppid)
		return c, x
	}
	return comm, exe
}

// pidfdTarget reads the pid a process's pidfd refers to from its fdinfo
// ("Pid:" line), or 0 when the fd or the process is gone.
func pidfdTarget(pid uint32, fd uint64) int32 {
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/fdinfo/" + strconv.FormatUint(fd, 10))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Pid:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			return int32(n)
		}
	}
	return 0
}

// serialAfter reports whether audit serial a comes after b. The kernel's
// serial is 32 bits and wraps: compare in a window of 2^31, as TCP does.
func serialAfter(a, b uint64) bool { return int32(uint32(a)-uint32(b)) > 0 }

// appendArgv appends the arguments a kept to argv and reports whether any
// were cut: the audit side's argv, cut as the eBPF side's is.
func appendArgv(argv []string, a *auparse.Execve) ([]string, bool) {
	block, argc, cut := a.Args()
	return tracer.AppendArgv(argv, block, argc, cut)
}
