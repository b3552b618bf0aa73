// SPDX-License-Identifier: Apache-2.0

//go:build linux

// Package audit is tracer's Linux audit backend. It installs the minimal
// rule set from package auditrules through go-libaudit, reads the kernel's
// records, and reassembles them into tracer.Events.
//
// It is audit-aware: it never takes the audit PID (the node's audit
// daemon's) and reads the multicast copy of the records, managing its
// rules through a socket that never claims the PID, so auditd keeps its
// PID, its rules and its log. When no daemon holds the PID it sizes the
// backlog for bursts, keeps audited processes from waiting on it and
// gives everything back at Close. Tracers share the node: each one's
// rules carry a key of its own, and the node's settings are restored by
// the last to leave (state.go).
package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	libaudit "github.com/elastic/go-libaudit/v2"
	"github.com/elastic/go-libaudit/v2/rule"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/auditstate"
	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// BacklogLimit is the kernel queue size set while tracer holds the audit
// PID: a burst of 200,000 signals makes ~800,000 records, and a queue this
// long absorbs a consumer hiccup without making audited processes wait
// (backlog_wait_time) or dropping records.
const BacklogLimit = 1 << 17

// recvBuffer is the socket receive buffer asked for.
const recvBuffer = 64 << 20

// Backend is the audit backend. The zero value is not usable; call New.
type Backend struct {
	cfg tracer.Config
	key string                // this tracer's rule key (auditrules.InstanceKey)
	ctl *libaudit.AuditClient // rules and settings; never claims the PID

	// recv is the multicast socket records come from; Run owns it after
	// Start.
	recv       *auditstate.Conn
	registered bool
	// lean: lean-records exclude rules are in force; leanForced: asked for
	// with --lean-records, so kept beside other readers.
	lean, leanForced bool
	notesMu          sync.Mutex
	notes            []string // what Start changed or found, for the user
	lateNotes        chan string
	started          atomic.Bool
	// rulesGone counts the times another program deleted this tracer's
	// rules while it ran (auditctl -D, augenrules --load at auditd's start)
	// and they were put back: events in between were never recorded.
	rulesGone atomic.Uint64

	mu        sync.Mutex
	added     []rule.WireFormat
	addedText []string

	startLost uint32
	status    atomic.Pointer[libaudit.AuditStatus]
	// excluded is the set of record types the kernel's exclude list drops
	// (excludedTypes), lean records' or the node's own: Run's reassembler
	// ends events at the last record that still comes.
	excluded atomic.Uint32
	// recheck asks the poller to read the exclude list now: Run saw it
	// change (a CONFIG_CHANGE record of the exclude list).
	recheck chan struct{}
	// readersNow tells the poller that the kernel recorded a change of
	// the records' readers (the audit PID set, a multicast member joined):
	// it looks now, and often for a while (see startPoller).
	readersNow chan struct{}
	pollStop   chan struct{}
	pollDone   chan struct{}

	r          *reassembler
	delivered  [vocab.TypeThrottle + 1]atomic.Uint64
	throttled  [vocab.TypeThrottle + 1]atomic.Uint64 // --rate-limit's counts, by type
	lostReasm  atomic.Uint64
	filtered   [vocab.NumFilterReasons]atomic.Uint64
	lostSocket atomic.Uint64
	// socketLowerBound: an overflow was seen but the kernel's drop count
	// could not be read, so lostSocket counts overflows, not records.
	socketLowerBound atomic.Bool
	socketDrops0     uint64        // the multicast socket's drop counter at Start
	finalDrops       atomic.Uint64 // drops of multicast sockets already closed
	mcastPort        atomic.Uint32 // the multicast socket's port id, 0 when none
	bufGot, bufAsked int
	closed           bool

	fo followState // following the node's rules (follow.go)
	// early are the records the multicast probe read before its own, for
	// Run (probeMulticast).
	early []earlyRecord
	src   *pluginSource // reading auditd's plugin output (plugin.go)
}

// The optional capabilities the audit backend has (tracer/backend.go).
var (
	_ tracer.Noter          = (*Backend)(nil)
	_ tracer.LoginUIDScoper = (*Backend)(nil)
	_ tracer.LateNoter      = (*Backend)(nil)
)

// New returns an audit backend.
func New() *Backend { return &Backend{lateNotes: make(chan string, 16)} }

// Notes says what Start found or changed on the node (audit enabled for
// the session, auditd holding the PID, b32 rules left out), for the user.
func (b *Backend) Notes() []string {
	b.notesMu.Lock()
	defer b.notesMu.Unlock()
	return slices.Clone(b.notes)
}

// LateNotes delivers what the backend changes on the node while it runs
// (lean records given up for a new reader, rules put back after another
// program deleted them); it is never closed.
func (b *Backend) LateNotes() <-chan string { return b.lateNotes }

// note keeps a note for Notes and, once Start has returned, sends it on
// LateNotes too (dropped when nobody reads: Notes still has it).
func (b *Backend) note(s string) {
	b.notesMu.Lock()
	b.notes = append(b.notes, s)
	b.notesMu.Unlock()
	if b.started.Load() {
		select {
		case b.lateNotes <- s:
		default:
		}
	}
}

// Name is "audit".
func (b *Backend) Name() string { return backendName }

// Key is the key this backend's rules carry.
func (b *Backend) Key() string { return b.key }

// Start checks the node, joins the multicast group, then installs the
// rules. On error everything is undone.
func (b *Backend) Start(cfg tracer.Config) (err error) {
	b.cfg = cfg
	defer func() {
		if err != nil {
			_ = b.Close()
		}
	}()
	if b.src != nil {
		return b.startPlugin()
	}
	if os.Geteuid() != 0 {
		return vocab.Usagef("the audit backend needs root (CAP_AUDIT_CONTROL and CAP_AUDIT_READ): run with sudo")
	}
	b.ctl, err = auditstate.Open()
	if err != nil {
		return vocab.Usagef("cannot open the audit netlink socket (%w): is audit compiled into this kernel (CONFIG_AUDIT)? use --backend ebpf", err)
	}
	st, err := b.ctl.GetStatus()
	if err != nil {
		if errors.Is(err, syscall.EPERM) {
			return vocab.Usagef("reading audit status was refused (%w): run as root with CAP_AUDIT_CONTROL", err)
		}
		return fmt.Errorf("reading audit status: %w", err)
	}
	if err := checkMulticastKernel(); err != nil {
		return err
	}
	if locked := auditstate.Locked(st); locked || len(b.fo.keys) > 0 || b.fo.existing {
		if locked && cfg.ScopeAUID != vocab.UnsetID {
			return vocab.Usagef("%w; trace scopes its own rules by login uid: use --backend ebpf", auditstate.ErrLocked)
		}
		// No rules of its own: the node's, by key (follow.go).
		return b.startFollow(locked)
	}
	if err := b.setup(); err != nil {
		return err
	}
	b.newReassembler()

	opts := auditrules.Options{
		Arch: cfg.Arch, Types: cfg.Types, Signals: cfg.Signals,
		AuidSet: cfg.AuidSet, ScopeAUID: cfg.ScopeAUID, Key: b.key,
		ExcludePID: os.Getpid(), ExecFailures: cfg.ExecFailures, UIDs: cfg.UIDs,
		Has32Bit: host.Running32Bit,
	}
	if cfg.Exe != "" {
		if opts.ExePath = auditrules.KernelExePath(cfg.Exe); opts.ExePath == "" {
			b.note(fmt.Sprintf("--exe %s is matched in user space: the kernel records every exec (an absolute path of a file, not a symlink, is matched in the kernel)", cfg.Exe))
		}
	}
	if len(cfg.UIDs) > auditrules.MaxRuleUIDs {
		b.note(fmt.Sprintf("--uid names %d uids: more than %d are matched in user space, and the kernel records every user's events", len(cfg.UIDs), auditrules.MaxRuleUIDs))
	}
	set, err := auditrules.Build(opts)
	if err != nil {
		return err
	}
	for _, n := range set.Notes {
		b.note(n)
	}
	for _, r := range set.Rules {
		wf, err := r.Wire()
		if err != nil {
			return fmt.Errorf("building audit rule: %w", err)
		}
		if err := b.ctl.AddRule(wf); err != nil {
			return vocab.Usagef("the kernel refused audit rule %q: %w", r.Text(), err)
		}
		b.mu.Lock()
		b.added = append(b.added, wf)
		b.addedText = append(b.addedText, r.Text())
		b.mu.Unlock()
		changed("add rule " + r.Text())
	}
	rules, err := b.ctl.GetRules()
	if err != nil {
		return fmt.Errorf("listing audit rules: %w", err)
	}
	b.excluded.Store(uint32(excludedTypes(rules)))
	if excludedTypes(rules).has(recSyscall) {
		return vocab.Usagef("the node's audit rules exclude SYSCALL records (-a never,exclude -F msgtype=SYSCALL): the audit backend would see no event; remove that rule, or use --backend ebpf")
	}
	b.startPoller()
	b.started.Store(true)
	return nil
}

// newReassembler makes the reassembler for b.cfg.
func (b *Backend) newReassembler() {
	cfg := b.cfg
	b.r = newReassembler(cfg.Types, cfg.ScopeAUID)
	b.r.signals, b.r.execFailures, b.r.self = cfg.Signals, cfg.ExecFailures, uint32(os.Getpid())
	b.r.scope = noiseScope(cfg)
	if cfg.RateLimit > 0 {
		b.r.limit = tracer.NewLimiter(cfg.RateLimit, backendName)
		if mount, err := host.CgroupMount(); err == nil {
			b.r.limit.CgroupID = func(path string) uint64 {
				id, _, _ := host.CgroupID(mount, path)
				return id // 0 when it is gone: unknown
			}
		}
	}
}

// setup registers this tracer in the state directory, enables audit if
// needed, sizes the backlog when no audit daemon runs, and joins the
// multicast group, all under the state lock so that tracers starting and
// stopping at once agree. The status is read again under the lock: the
// one read before may be stale by a tracer that just started or left.
func (b *Backend) setup() error {
	unlock, err := lockState()
	if err != nil {
		return err
	}
	defer unlock()
	st, err := b.ctl.GetStatus()
	if err != nil {
		return fmt.Errorf("reading audit status: %w", err)
	}
	me := owner{PID: os.Getpid(), Start: processStart(os.Getpid()), Signals: b.cfg.Types.Has(vocab.TypeSignal)}
	me.Key = auditrules.InstanceKey(me.PID, me.Start)
	if err := writeOwner(me); err != nil {
		return err
	}
	changed("write " + ownerPath(me.PID))
	b.key, b.registered = me.Key, true
	holder := int(st.PID)
	if holder != 0 && !tracer.ProcessAlive(holder) {
		holder = 0
	}
	// Following the node's rules adds none: while audit is on, their
	// records are made with or without this tracer, so the failure mode
	// is not its risk; turning audit on would be.
	if holder == 0 && (!b.fo.on || st.Enabled == 0) {
		// Refuse before anything changes on the node.
		if err := b.canRunAlone(st); err != nil {
			return err
		}
	}
	if st.Enabled == 0 {
		if err := b.enable(st); err != nil {
			return err
		}
	}
	b.startLost = st.Lost
	b.status.Store(st)
	// A locked audit takes no setting either.
	if holder == 0 && !auditstate.Locked(st) {
		if err := b.prepareAlone(st); err != nil {
			return err
		}
	}
	if err := b.joinMulticast(holder); err != nil {
		return err
	}
	me.Port = b.recv.Port()
	if err := writeOwner(me); err != nil {
		return err
	}
	if b.early, err = probeMulticast(b.recv); err != nil {
		return err
	}
	if b.fo.on {
		return nil // exclude rules are rules: none while following
	}
	return b.leanRecords()
}

// leanRecords asks the kernel not to build the record types tracer does
// not read. Exclude rules are global, so by default only where nothing but
// tracers reads the records: no audit daemon holds the PID and no other
// program is in the multicast group. The state lock is held.
func (b *Backend) leanRecords() error {
	other := otherReader(b.status.Load())
	switch b.cfg.LeanRecords {
	case tracer.LeanOff:
		return nil
	case tracer.LeanAuto:
		if other != "" {
			b.note(fmt.Sprintf("lean records off: %s reads the audit records too (--lean-records to use them anyway)", other))
			return nil
		}
	}
	// Exclude rules are global: OBJ_PID stays while any tracer watches
	// signals, and one an earlier tracer excluded goes.
	signals := b.cfg.Types.Has(vocab.TypeSignal) || signalsWatched()
	types := auditrules.LeanTypes(signals, other != "")
	if other != "" {
		b.note(fmt.Sprintf("lean records: the node's audit log misses %s records while tracer runs", strings.Join(types, ", ")))
	}
	if signals {
		if err := removeExclude(b.ctl, "OBJ_PID"); err != nil {
			return err
		}
	}
	present, err := b.ctl.GetRules()
	if err != nil {
		return fmt.Errorf("listing audit rules: %w", err)
	}
	if node := excludedTypes(present); node.has(recPath) || node.has(recExecve) {
		// Without PATH (or EXECVE) records an exec has no last record of
		// its own: it must end at its EOE.
		types = slices.DeleteFunc(slices.Clone(types), func(t string) bool { return t == "EOE" })
		b.note("the node's exclude rules drop PATH or EXECVE records: lean records keep EOE, which then ends each exec")
	}
	for _, typ := range types {
		r := auditrules.ExcludeRule(typ)
		wf, err := r.Wire()
		if err != nil {
			return fmt.Errorf("building %q: %w", r.Text(), err)
		}
		if slices.ContainsFunc(present, func(p []byte) bool { return bytes.Equal(p, wf) }) {
			continue // another tracer's, or the node's own: not ours to remove
		}
		// Recorded before it is added: a tracer killed in between leaves
		// a note that cleanup follows, never a rule nobody knows of.
		if err := recordExclude(typ); err != nil {
			return err
		}
		changed("record exclude " + typ)
		if err := b.ctl.AddRule(wf); err != nil {
			_ = forgetExclude(typ)
			if strings.Contains(err.Error(), "rule exists") {
				continue
			}
			return vocab.Usagef("the kernel refused %q: %w (use --lean-records=false)", r.Text(), err)
		}
		changed("add exclude " + typ)
	}
	b.lean = true
	b.leanForced = b.cfg.LeanRecords == tracer.LeanOn
	return nil
}

// excludedTypes reads which of the record types tracer reads the kernel's
// exclude list drops (exact -F msgtype= rules: lean records', or the
// node's own).
func excludedTypes(rules [][]byte) recordSet {
	var set recordSet
	for _, r := range rules {
		for i, wf := range excludeWires {
			if bytes.Equal(r, wf) {
				set |= 1 << i
			}
		}
	}
	return set
}

// excludeWires are the kernel's forms of the exclude rules of the record
// types in recordSet, in its bit order.
var excludeWires = func() [][]byte {
	var out [][]byte
	for _, typ := range recordSetTypes {
		wf, err := auditrules.ExcludeRule(typ).Wire()
		if err != nil {
			panic("tracer: building the " + typ + " exclude rule: " + err.Error())
		}
		out = append(out, wf)
	}
	return out
}()

// excludeListChanged matches the CONFIG_CHANGE record of a rule added to
// or removed from the exclude list (AUDIT_FILTER_EXCLUDE, list 5).
func excludeListChanged(data []byte) bool {
	return bytes.Contains(data, []byte(" list=5 "))
}

// isTracerOwner reports whether pid is a running tracer (it has an owner
// file in the state directory).
func isTracerOwner(pid int) bool {
	live, _ := owners()
	for _, o := range live {
		if o.PID == pid {
			return true
		}
	}
	return false
}

// Lean reports whether the kernel builds lean records for this session.
func (b *Backend) Lean() bool { return b.lean }

// enable turns audit on; the last tracer to leave turns it off again,
// unless an audit daemon runs then.
func (b *Backend) enable(st *libaudit.AuditStatus) error {
	if !b.cfg.EnableAudit && auditOffAtBoot() {
		return vocab.Usagef("audit is disabled (audit=0 on the kernel command line): processes started before now would not be audited; reboot without audit=0, or pass --enable-audit to accept that, or use --backend ebpf")
	}
	if err := auditstate.Change(b.ctl, auditstate.Enabled, st.Enabled, 1); err != nil {
		return vocab.Usagef("audit is disabled and could not be enabled (%w): run auditctl -e 1, or use --backend ebpf", err)
	}
	b.note("audit was disabled: enabled it for this session (disabled again when the last tracer exits, unless an audit daemon runs then); processes started before audit was first enabled since boot are not audited")
	return nil
}

func auditOffAtBoot() bool {
	c, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		return false
	}
	for _, f := range strings.Fields(string(c)) {
		if f == "audit=0" || f == "audit=off" {
			return true
		}
	}
	return false
}

// failureModePanic is auditctl -f 2.
const failureModePanic = 2

// canRunAlone says why this tracer may not run while no audit daemon holds
// the audit PID, or nil. Records nobody holds the PID for are printed to
// the kernel log and, on nodes booted with audit=1, queued until the hold
// queue overflows: under failure mode 2 that overflow panics the node.
func (b *Backend) canRunAlone(st *libaudit.AuditStatus) error {
	if st.Failure == failureModePanic && !b.cfg.AllowPanicFailureMode {
		return vocab.Usagef("audit failure mode is 2 (panic, auditctl -f 2) and no audit daemon runs: the records of tracer's rules would fill the kernel's hold queue and panic the node; start auditd (tracer then reads beside it), pass --allow-panic-failure-mode to accept the risk, or use --backend ebpf")
	}
	return nil
}

// prepareAlone sizes the backlog and, unless output may block, keeps
// audited processes from ever waiting on it, while no audit daemon runs
// (beside one, those settings are its own). The values before are
// recorded for the last tracer to restore. The state lock is held.
func (b *Backend) prepareAlone(st *libaudit.AuditStatus) error {
	if st.BacklogLimit < BacklogLimit {
		if err := auditstate.Change(b.ctl, auditstate.BacklogLimit, st.BacklogLimit, BacklogLimit); err != nil {
			return fmt.Errorf("setting audit backlog limit: %w", err)
		}
	}
	if b.cfg.Backpressure == tracer.BackpressureDrop && st.BacklogWaitTime != 0 {
		// With a wait time, a full backlog makes every audited process
		// sleep in the kernel; with 0 the kernel drops and counts instead.
		if err := auditstate.Change(b.ctl, auditstate.BacklogWaitTime, st.BacklogWaitTime, 0); err != nil {
			return fmt.Errorf("setting audit backlog_wait_time: %w", err)
		}
	}
	return nil
}

// joinMulticast reads records from the READLOG group. tracer never takes
// the audit PID: it belongs to the node's audit daemon, which the kernel
// would refuse (EEXIST, after an AUDIT_REPLACE to the holder) while a
// tracer held it, and auditd does not retry. It needs CAP_AUDIT_READ.
func (b *Backend) joinMulticast(holder int) error {
	c, err := auditstate.NewConn(auditstate.GroupReadLog)
	if err != nil {
		return vocab.Usagef("joining the audit multicast group failed (%w): run as root with CAP_AUDIT_READ", err)
	}
	b.sizeBuffer(c)
	b.recv = c
	b.socketDrops0, _ = auditstate.SocketDrops(c.Port())
	b.mcastPort.Store(c.Port())
	if holder != 0 {
		comm, _ := host.ProcComm(uint32(holder))
		b.note(fmt.Sprintf("%s (pid %d) holds the audit PID: reading the multicast copy of its records; it keeps its PID, rules and log",
			comm, holder))
	}
	return c.SetRecvTimeout(recvTimeout)
}

// sizeBuffer asks for a large receive buffer and says so when the kernel
// gave less (SO_RCVBUFFORCE refused without CAP_NET_ADMIN).
func (b *Backend) sizeBuffer(c *auditstate.Conn) {
	b.bufAsked = recvBuffer
	b.bufGot = c.SetRecvBuffer(recvBuffer)
	if b.bufGot < recvBuffer {
		b.notes = append(b.notes, fmt.Sprintf("the audit socket's receive buffer is %d bytes, not the %d asked for (SO_RCVBUFFORCE refused: grant CAP_NET_ADMIN or raise net.core.rmem_max): bursts overflow sooner; overflows are counted",
			b.bufGot, recvBuffer))
	}
}

// startPoller reads the kernel's backlog and lost counter on a client of
// its own, so status requests never interleave with the record stream; it
// gives up lean records as soon as another reader of the records appears
// (an audit daemon taking the PID, a program joining the multicast group),
// follows the exclude list, and puts this tracer's rules back when another
// program deleted them.
func (b *Backend) startPoller() {
	cl, err := auditstate.Open()
	if err != nil {
		return
	}
	b.pollStop, b.pollDone = make(chan struct{}), make(chan struct{})
	b.recheck, b.readersNow = make(chan struct{}, 1), make(chan struct{}, 1)
	go func() {
		defer close(b.pollDone)
		defer cl.Close()
		t := time.NewTimer(pollInterval)
		defer t.Stop()
		var readers readerCheck
		// Fast at first: a reader may be starting as tracer does.
		fastUntil, lastRules := time.Now().Add(fastPollFor), time.Now()
		for {
			if st, err := cl.GetStatus(); err == nil {
				b.status.Store(st)
				if b.lean && !b.leanForced {
					if other := readers.other(st); other != "" {
						b.dropLean(other)
					}
				}
			}
			// The rules are read when Run sees them change, and every
			// rulesPollEvery in case that record was lost: listing rules
			// costs the kernel a thread each time.
			if time.Since(lastRules) >= rulesPollEvery {
				b.checkRules(cl)
				lastRules = time.Now()
			}
			// Lean records need a new reader found fast; the kernel
			// records its arrival, so the poll is fast only after such a
			// record, and once a second otherwise (for the backlog and
			// lost counters, and in case that record was lost).
			wait := slowPollInterval
			if b.lean && !b.leanForced && time.Now().Before(fastUntil) {
				wait = pollInterval
			}
			t.Reset(wait)
			select {
			case <-b.pollStop:
				return
			case <-b.recheck:
				b.checkRules(cl)
			case <-b.readersNow:
				fastUntil = time.Now().Add(fastPollFor)
			case <-t.C:
			}
		}
	}()
}

// checkRules follows the kernel's exclude list (whether events end at
// EOE) and adds back those of this tracer's rules another program deleted.
func (b *Backend) checkRules(cl *libaudit.AuditClient) {
	rules, err := cl.GetRules()
	if err != nil {
		return
	}
	b.excluded.Store(uint32(excludedTypes(rules)))
	b.mu.Lock()
	defer b.mu.Unlock()
	missing := 0
	for i, wf := range b.added {
		if slices.ContainsFunc(rules, func(r []byte) bool { return bytes.Equal(r, wf) }) {
			continue
		}
		missing++
		if err := b.ctl.AddRule(wf); err != nil && !strings.Contains(err.Error(), "rule exists") {
			b.note(fmt.Sprintf("audit rule %q was deleted by another program and could not be added back: %v", b.addedText[i], err))
		}
	}
	if missing > 0 {
		b.rulesGone.Add(1)
		b.note(fmt.Sprintf("%d of tracer's audit rules were deleted by another program (auditctl -D, or augenrules --load as auditd starts): added them back; events between the two were not recorded by the kernel", missing))
	}
}

// dropLean removes the lean-records exclude rules tracers added, because
// a reader other than tracers appeared: its records must be whole.
func (b *Backend) dropLean(other string) {
	unlock, err := lockState()
	if err != nil {
		return
	}
	defer unlock()
	if _, err := removeExcludes(b.ctl); err != nil {
		b.note(fmt.Sprintf("%s reads the audit records now, and removing the lean-records exclude rules failed: %v", other, err))
		return
	}
	b.lean = false
	b.note(fmt.Sprintf("lean records off: %s reads the audit records now; removed the exclude rules", other))
	select {
	case b.recheck <- struct{}{}:
	default:
	}
}

// otherReader names a reader of the audit records that is not a tracer:
// the holder of the audit PID (auditd), or a member of the multicast group
// (journald's audit socket, auditbeat or go-audit in multicast mode) whose
// netlink port no tracer recorded; "" when there is none.
func otherReader(st *libaudit.AuditStatus) string {
	return otherReaderOf(st, auditstate.MulticastPorts())
}

// readerCheck is otherReader for the poller, which asks up to ten times
// a second: while the audit PID holder and the multicast group's ports stay
// those last found to be tracers only, the answer stands without reading
// every tracer's state file again (at a steady exec rate that reading was
// a tenth of the backend's CPU).
type readerCheck struct {
	pid   uint32
	ports []uint32
	ok    bool
}

func (c *readerCheck) other(st *libaudit.AuditStatus) string {
	ports := auditstate.MulticastPorts()
	if c.ok && st.PID == c.pid && slices.Equal(ports, c.ports) {
		return ""
	}
	other := otherReaderOf(st, ports)
	c.pid, c.ports, c.ok = st.PID, ports, other == ""
	return other
}

func otherReaderOf(st *libaudit.AuditStatus, ports []uint32) string {
	live, _ := owners()
	if st != nil && st.PID != 0 && tracer.ProcessAlive(int(st.PID)) &&
		!slices.ContainsFunc(live, func(o owner) bool { return o.PID == int(st.PID) }) {
		comm, _ := host.ProcComm(st.PID)
		return fmt.Sprintf("%s (pid %d, the audit PID holder)", comm, st.PID)
	}
	for _, port := range ports {
		if !slices.ContainsFunc(live, func(o owner) bool { return o.Port == port }) {
			return fmt.Sprintf("the program with netlink port %d (a member of the audit multicast group)", port)
		}
	}
	return ""
}

const (
	// pollInterval bounds how long lean records outlive the arrival of
	// another reader of the records, from the kernel's record of it.
	pollInterval = 100 * time.Millisecond
	// fastPollFor is how long the poll stays at pollInterval after such a
	// record (the record may come before the reader's membership shows
	// in /proc/net/netlink).
	fastPollFor = 2 * time.Second
	// slowPollInterval is the poll otherwise.
	slowPollInterval = time.Second
	// rulesPollEvery: the rules are read this often besides.
	rulesPollEvery = 2 * time.Second
)

// Run reads and reassembles records until ctx is done. Then it removes the
// rules, so no new events come, and drains what the kernel had queued: the
// kernel logs each rule removal as a CONFIG_CHANGE record behind every
// record queued before it, so once all removals are read, nothing is left.
func (b *Backend) Run(ctx context.Context, emit func(*tracer.Event)) error {
	if b.src != nil {
		return b.runPlugin(ctx, emit)
	}
	if b.recv == nil {
		return errors.New("audit backend not started")
	}
	count := func(e *tracer.Event) {
		b.delivered[e.Type].Add(1)
		emit(e)
	}
	draining := false
	fences := 0 // rule removals still to be read back
	var quiet time.Duration
	var idle idleReader
	var drainStart time.Time
	// AUDIT_MESSAGE_TEXT_MAX is 8560 bytes; 9000 fits any record with its header.
	bt := auditstate.NewBatch(64, 9000)
	gather := gatherTime(b.bufGot)
	lastSweep, lastLimitSweep := time.Now(), time.Now()
	sweep := func() {
		if b.r.limit != nil {
			if now := time.Now(); now.Sub(lastLimitSweep) >= limitSweepEvery {
				b.r.sweepLimit(now, count)
				lastLimitSweep = now
			}
		}
		if time.Since(lastSweep) >= sweepInterval {
			b.r.sweep(count)
			b.lostReasm.Store(b.r.lost + b.r.bad)
			lastSweep = time.Now()
		}
	}
	one := func(typ uint16, data []byte) {
		switch {
		case typ == syscall.NLMSG_ERROR:
		case draining && typ == typeConfigChange && b.isOurRemoval(data), draining && b.isFence(typ, data):
			fences--
		case typ == typeConfigChange && b.isOurRemoval(data):
			// Another program deleted our rules (auditctl -D): put
			// them back now rather than at the next poll.
			select {
			case b.recheck <- struct{}{}:
			default:
			}
		case typ == typeConfigChange && excludeListChanged(data):
			// Another tracer added or removed lean records.
			select {
			case b.recheck <- struct{}{}:
			default:
			}
		case typ == typeEventListener, typ == typeConfigChange && bytes.Contains(data, []byte("audit_pid=")):
			// A reader joined the multicast group, or took the PID.
			select {
			case b.readersNow <- struct{}{}:
			default:
			}
		default:
			b.r.feed(typ, data, count)
		}
	}
	published := func() {
		b.lostReasm.Store(b.r.lost + b.r.bad)
		for i, n := range b.r.filtered {
			b.filtered[i].Store(n)
		}
		b.storeThrottled()
	}
	feed := func(n int) {
		b.r.setExcluded(recordSet(b.excluded.Load()), count)
		for i := 0; i < n; i++ {
			if typ, data, ok := bt.Message(i); ok {
				one(typ, data)
			}
		}
		published()
	}
	// What the multicast probe read before its own record comes first.
	b.r.setExcluded(recordSet(b.excluded.Load()), count)
	for _, rec := range b.early {
		one(rec.typ, rec.data)
	}
	b.early = nil
	published()
	for {
		if draining && time.Since(drainStart) > drainTimeout {
			// A busy node never goes quiet: bound the drain by the clock
			// too, after what the socket already holds.
			for {
				n, err := b.recv.ReadBatchNow(bt)
				if err != nil && !errors.Is(err, syscall.ENOBUFS) {
					break
				}
				feed(n)
			}
			return b.endDrain(count)
		}
		if !draining && ctx.Err() != nil {
			draining, drainStart = true, time.Now()
			if err := idle.wake(b.recv); err != nil {
				return err
			}
			fences = b.ruleCount()
			if err := b.removeRules(); err != nil {
				return err
			}
			if b.fo.on && b.sendFence() {
				fences = 1
			}
		}
		n, err := b.recv.ReadBatch(bt)
		if err != nil {
			switch {
			case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EWOULDBLOCK):
				sweep()
				if !draining {
					// Nothing pending and no rate limit to sweep: wait
					// longer between looks at ctx.
					if err := idle.quiet(b.recv, len(b.r.pending) == 0 && b.r.limit == nil); err != nil {
						return err
					}
				}
				if draining {
					// The fences normally end the drain; this bounds it if a
					// removal record was lost, or an event never completes.
					if quiet += recvTimeout; fences <= 0 || quiet >= drainTimeout {
						return b.endDrain(count)
					}
				}
				continue
			case errors.Is(err, syscall.ENOBUFS):
				b.overflowed()
				continue
			default:
				return fmt.Errorf("reading audit records: %w", err)
			}
		}
		quiet = 0
		if err := idle.wake(b.recv); err != nil {
			return err
		}
		feed(n)
		sweep()
		if !draining && n < bt.Len() {
			// A reader waiting in recvmmsg is woken for every record, and
			// kauditd pays for each wakeup on the audited processes' behalf
			// (on two CPUs, out of their time): at a steady few hundred
			// events a second those wake-ups were most of the reader's
			// cost. Let records gather unless the batch came back full.
			time.Sleep(gather)
		}
		// Past the last fence, events another CPU was logging while the
		// rules went away may still lack their EOE: read until they have it.
		if draining && fences <= 0 && len(b.r.pending) == 0 {
			return b.endDrain(count)
		}
	}
}

// gatherTime is how long the reader lets records gather in the socket
// after a batch that was not full: gatherRecords with the receive buffer
// asked for, less with a smaller one, so that what a burst of a million
// records a second brings meanwhile still fits (a record takes about 1 KiB
// of buffer).
func gatherTime(bufBytes int) time.Duration {
	d := gatherRecords * time.Duration(bufBytes) / recvBuffer
	return min(max(d, minGatherRecords), gatherRecords)
}

const (
	// gatherRecords is the most a record waits for the reader to wake, on
	// top of what reading it costs: well within the 200 ms the output
	// waits before passing lines on. At a million records a second it is
	// 20,000 records, a third of the receive buffer asked for.
	gatherRecords    = 20 * time.Millisecond
	minGatherRecords = time.Millisecond
	recvTimeout      = 100 * time.Millisecond
	// recvIdleTimeout is recvTimeout while idle (idleReader): how long a
	// stop may wait to be noticed then.
	recvIdleTimeout = 500 * time.Millisecond
	drainTimeout    = 5 * time.Second
	// sweepInterval: an event whole but without its EOE ends after one
	// to two of these (reassembler.sweep).
	sweepInterval = time.Second
)

// idleReader lengthens the record socket's receive timeout once the
// reader has found nothing for a second with nothing pending: an idle
// watcher then wakes twice a second, not ten times. The first record, and
// the drain, set it back.
type idleReader struct {
	empty int  // receive timeouts in a row
	slow  bool // the timeout is recvIdleTimeout
}

func (r *idleReader) quiet(c *auditstate.Conn, calm bool) error {
	if r.empty++; r.slow || !calm || r.empty < int(time.Second/recvTimeout) {
		return nil
	}
	r.slow = true
	return c.SetRecvTimeout(recvIdleTimeout)
}

func (r *idleReader) wake(c *auditstate.Conn) error {
	r.empty = 0
	if !r.slow {
		return nil
	}
	r.slow = false
	return c.SetRecvTimeout(recvTimeout)
}

func (b *Backend) endDrain(emit func(*tracer.Event)) error {
	b.r.flush(emit)
	b.r.flushLimit(time.Now(), emit)
	b.lostReasm.Store(b.r.lost + b.r.bad)
	b.storeThrottled()
	return nil
}

// storeThrottled publishes the reassembler's rate limit counts for Stats.
func (b *Backend) storeThrottled() {
	if b.r.limit == nil {
		return
	}
	for t, n := range b.r.limit.Throttled() {
		b.throttled[t].Store(n)
	}
}

// overflowed books a multicast socket overflow: the records it dropped
// are gone. The kernel counts them per socket (/proc/net/netlink, Drops);
// only where that cannot be read is the figure a count of overflows, a
// lower bound.
func (b *Backend) overflowed() {
	if _, ok := auditstate.SocketDrops(b.mcastPort.Load()); ok {
		return // the poller and Stats read the exact figure
	}
	b.lostSocket.Add(1)
	b.socketLowerBound.Store(true)
}

func (b *Backend) ruleCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.added)
}

// isOurRemoval matches the CONFIG_CHANGE record of removing one of our rules.
func (b *Backend) isOurRemoval(data []byte) bool {
	return bytes.Contains(data, []byte("op=remove_rule")) && bytes.Contains(data, []byte(`key="`+b.key+`"`))
}

// removeRules deletes exactly the rules this backend added.
func (b *Backend) removeRules() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	for i, wf := range b.added {
		if err := b.ctl.DeleteRule(wf); err != nil {
			errs = append(errs, fmt.Errorf("removing audit rule %q: %w", b.addedText[i], err))
			continue
		}
		changed("remove rule " + b.addedText[i])
	}
	b.added, b.addedText = nil, nil
	return errors.Join(errs...)
}

// Stats reports delivered events and loss. Kernel loss is the growth of
// the kernel's lost counter since Start: it counts every record the kernel
// dropped, ours or not, which is the honest upper bound.
func (b *Backend) Stats() tracer.Stats {
	var s tracer.Stats
	for t := range b.delivered {
		s.Events[t] = b.delivered[t].Load()
	}
	if st := b.status.Load(); st != nil {
		s.AuditBacklog, s.AuditBacklogLimit, s.AuditKernelLost = st.Backlog, st.BacklogLimit, st.Lost
		s.Lost[tracer.LostKernel] = uint64(st.Lost - b.startLost)
	}
	s.Lost[tracer.LostRingbuf] = b.lostSocket.Load() + b.multicastDrops()
	s.LowerBound[tracer.LostRingbuf] = b.socketLowerBound.Load()
	s.Lost[tracer.LostReassembly] = b.lostReasm.Load()
	for i := range b.filtered {
		s.Filtered[i] = b.filtered[i].Load()
	}
	for t := range b.throttled {
		s.Throttled[t] = b.throttled[t].Load()
	}
	s.AuditSocketBuffer, s.AuditSocketBufferAsked = b.bufGot, b.bufAsked
	return s
}

// multicastDrops is how many records the kernel dropped on the multicast
// socket since Start, from its per-socket counter. Safe from any goroutine.
func (b *Backend) multicastDrops() uint64 {
	port := b.mcastPort.Load()
	if port == 0 {
		return b.finalDrops.Load()
	}
	n, ok := auditstate.SocketDrops(port)
	if !ok || n < b.socketDrops0 {
		return b.finalDrops.Load()
	}
	return n - b.socketDrops0
}

// Close removes the rules and, as the last tracer on the node, restores
// every setting tracers changed that still holds the value they set.
func (b *Backend) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	var errs []error
	if b.ctl != nil {
		errs = append(errs, b.removeRules())
	}
	if b.pollStop != nil {
		close(b.pollStop)
		<-b.pollDone
	}
	if st, err := b.ctlStatus(); err == nil {
		// One last read so the summary has the final kernel lost counter.
		b.status.Store(st)
	}
	b.finalDrops.Store(b.multicastDrops())
	b.mcastPort.Store(0)
	if b.recv != nil {
		errs = append(errs, b.recv.Close())
	}
	b.recv = nil
	if b.registered {
		errs = append(errs, b.leave())
	}
	if b.ctl != nil {
		errs = append(errs, b.ctl.Close())
	}
	return errors.Join(errs...)
}

// leave removes this tracer's state file and, when no other tracer runs,
// restores the node's audit settings.
func (b *Backend) leave() error {
	unlock, err := lockState()
	if err != nil {
		return err
	}
	defer unlock()
	b.registered = false
	_ = removeOwner()
	changed("remove " + ownerPath(os.Getpid()))
	if othersAlive() {
		return nil
	}
	_, err = restoreSettings(b.ctl)
	return err
}

func (b *Backend) ctlStatus() (*libaudit.AuditStatus, error) {
	if b.ctl == nil {
		return nil, errors.New("no audit client")
	}
	return b.ctl.GetStatus()
}

// HasKey reports whether a rule in auditctl syntax carries a tracer's
// instance key (auditrules.InstanceKey): a rule a tracer added and
// removes. Rules persisted with `tracer rules`' key are the node's.
func HasKey(text string) bool {
	key, ok := keyOfText(text)
	return ok && auditrules.IsInstanceKey(key)
}

// keyOfText finds the key of a rule in auditctl syntax (-k K or -F key=K).
func keyOfText(text string) (string, bool) {
	f := strings.Fields(text)
	for i, w := range f {
		if w == "-k" && i+1 < len(f) {
			return strings.Trim(f[i+1], `"`), true
		}
		if k, ok := strings.CutPrefix(w, "key="); ok {
			return strings.Trim(k, `"`), true
		}
	}
	return "", false
}

// ruleKey decodes a rule from the kernel into its key and auditctl text.
func ruleKey(wf []byte) (key, text string, ok bool) {
	text, err := rule.ToCommandLine(rule.WireFormat(wf), false)
	if err != nil {
		return "", "", false
	}
	key, ok = keyOfText(text)
	return key, text, ok
}
