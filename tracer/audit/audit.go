//go:build linux

// Package audit is tracer's Linux audit backend. It installs the minimal
// rule set from package auditrules through go-libaudit, reads the kernel's
// records, and reassembles them into tracer.Events.
//
// It is audit-aware: when nobody holds the audit PID it takes it, sizes the
// backlog for bursts, keeps audited processes from waiting on it and gives
// everything back at Close; when auditd (or another tracer) holds it, it
// reads the multicast copy of the records and manages its rules through a
// second socket that never claims the PID, so auditd keeps its PID, its
// rules and its log. Tracers share the node: each one's rules carry a key
// of its own, the audit PID passes to a tracer still running when its
// holder exits, and the node's settings are restored by the last to leave
// (state.go).
package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	libaudit "github.com/elastic/go-libaudit/v2"
	"github.com/elastic/go-libaudit/v2/rule"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/tracer"
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

	// recv is the socket records come from: the PID socket, or the
	// multicast one. Run owns recv, pidc and mcast after Start.
	recv *conn
	pidc *libaudit.AuditClient // wraps recv when we hold the PID
	// mcast is the multicast socket still being read while a handover to
	// the PID socket completes (handover.go).
	mcast      *conn
	multicast  bool
	registered bool
	lean       bool     // lean-records exclude rules are in force
	notes      []string // what Start changed or found, for the user

	mu        sync.Mutex
	added     []rule.WireFormat
	addedText []string

	startLost uint32
	status    atomic.Pointer[libaudit.AuditStatus]
	// pidFree is set by the poller when nobody holds the audit PID any
	// more (the tracer that held it exited): Run claims it.
	pidFree atomic.Bool
	// eoeGone is set while the kernel excludes EOE records (eoeExcluded):
	// Run's reassembler then ends events without them.
	eoeGone atomic.Bool
	// recheck asks the poller to read the exclude list now: Run saw it
	// change (a CONFIG_CHANGE record of the exclude list).
	recheck  chan struct{}
	pollStop chan struct{}
	pollDone chan struct{}

	r          *reassembler
	delivered  [5]atomic.Uint64
	lostReasm  atomic.Uint64
	lostSocket atomic.Uint64
	// socketLowerBound: an overflow was seen but the kernel's drop count
	// could not be read, so lostSocket counts overflows, not records.
	socketLowerBound atomic.Bool
	socketDrops0     uint64        // the multicast socket's drop counter at Start
	finalDrops       atomic.Uint64 // drops of multicast sockets already closed
	mcastPort        atomic.Uint32 // the multicast socket's port id, 0 when none
	claimAcked       bool          // the kernel confirmed the handover's PID claim
	handoverEnd      time.Time     // when to stop deduplicating after a handover
	bufGot, bufAsked int
	closed           bool
}

// The optional capabilities the audit backend has (tracer/backend.go).
var (
	_ tracer.Noter          = (*Backend)(nil)
	_ tracer.LoginUIDScoper = (*Backend)(nil)
)

// New returns an audit backend.
func New() *Backend { return &Backend{} }

// Notes says what Start found or changed on the node (audit enabled for
// the session, auditd holding the PID, b32 rules left out), for the user.
func (b *Backend) Notes() []string { return b.notes }

// Name is "audit".
func (b *Backend) Name() string { return backendName }

// Key is the key this backend's rules carry.
func (b *Backend) Key() string { return b.key }

// Start checks the node, claims the audit PID or joins the multicast group,
// then installs the rules. On error everything is undone.
func (b *Backend) Start(cfg tracer.Config) (err error) {
	b.cfg = cfg
	defer func() {
		if err != nil {
			_ = b.Close()
		}
	}()
	if os.Geteuid() != 0 {
		return tracer.Usagef("the audit backend needs root (CAP_AUDIT_CONTROL and CAP_AUDIT_READ): run with sudo")
	}
	ctlConn, err := newConn(0)
	if err != nil {
		return tracer.Usagef("cannot open the audit netlink socket (%w): is audit compiled into this kernel (CONFIG_AUDIT)? use --backend ebpf", err)
	}
	b.ctl = &libaudit.AuditClient{Netlink: ctlConn}
	st, err := b.ctl.GetStatus()
	if err != nil {
		if errors.Is(err, syscall.EPERM) {
			return tracer.Usagef("reading audit status was refused (%w): run as root with CAP_AUDIT_CONTROL", err)
		}
		return fmt.Errorf("reading audit status: %w", err)
	}
	if st.Enabled == 2 {
		return tracer.Usagef("audit is locked (enabled=2, auditctl -e 2): no rule can be added until reboot; use --backend ebpf")
	}
	if err := b.setup(st); err != nil {
		return err
	}
	b.r = newReassembler(cfg.Types, cfg.ScopeAUID)

	set, err := auditrules.Build(auditrules.Options{
		Arch: cfg.Arch, Types: cfg.Types, Signals: cfg.Signals,
		AuidSet: cfg.AuidSet, ScopeAUID: cfg.ScopeAUID, Key: b.key,
	})
	if err != nil {
		return err
	}
	b.notes = append(b.notes, set.Notes...)
	for _, r := range set.Rules {
		wf, err := r.Wire()
		if err != nil {
			return fmt.Errorf("building audit rule: %w", err)
		}
		if err := b.ctl.AddRule(wf); err != nil {
			return tracer.Usagef("the kernel refused audit rule %q: %w", r.Text(), err)
		}
		b.mu.Lock()
		b.added = append(b.added, wf)
		b.addedText = append(b.addedText, r.Text())
		b.mu.Unlock()
	}
	gone, err := eoeExcluded(b.ctl)
	if err != nil {
		return err
	}
	b.eoeGone.Store(gone)
	b.startPoller()
	return nil
}

// setup registers this tracer in the state directory, enables audit if
// needed, and claims the PID or joins the multicast group, all under the
// state lock so that tracers starting and stopping at once agree.
func (b *Backend) setup(st *libaudit.AuditStatus) error {
	unlock, err := lockState()
	if err != nil {
		return err
	}
	defer unlock()
	me := owner{PID: os.Getpid(), Start: processStart(os.Getpid())}
	me.Key = auditrules.InstanceKey(me.PID, me.Start)
	if err := writeJSON(ownerPath(me.PID), me); err != nil {
		return err
	}
	b.key, b.registered = me.Key, true
	holder := int(st.PID)
	beside := holder != 0 && holder != os.Getpid() && tracer.ProcessAlive(holder)
	if !beside {
		// Refuse before anything changes on the node.
		if err := b.canHoldPID(st); err != nil {
			return err
		}
	}
	if st.Enabled == 0 {
		if err := b.enable(); err != nil {
			return err
		}
	}
	b.startLost = st.Lost
	b.status.Store(st)
	if beside {
		err = b.joinMulticast(holder)
	} else {
		err = b.takePID(st)
	}
	if err != nil {
		return err
	}
	return b.leanRecords(beside, holder)
}

// leanRecords asks the kernel not to build the record types tracer does
// not read. Exclude rules are global, so by default only where no other
// consumer (auditd) reads the records: tracer holds the PID, or another
// tracer does. The state lock is held.
func (b *Backend) leanRecords(beside bool, holder int) error {
	switch b.cfg.LeanRecords {
	case tracer.LeanOff:
		return nil
	case tracer.LeanAuto:
		if beside && !isTracerOwner(holder) {
			b.notes = append(b.notes, "lean records off: another consumer reads the audit records (--lean-records to use them anyway)")
			return nil
		}
	}
	types := auditrules.LeanExcludes
	if beside && !isTracerOwner(holder) {
		types = auditrules.LeanExcludesBeside
		b.notes = append(b.notes, fmt.Sprintf("lean records: the node's audit log misses %s records while tracer runs", strings.Join(types, ", ")))
	}
	for _, typ := range types {
		r := auditrules.ExcludeRule(typ)
		wf, err := r.Wire()
		if err != nil {
			return fmt.Errorf("building %q: %w", r.Text(), err)
		}
		if err := b.ctl.AddRule(wf); err != nil {
			if strings.Contains(err.Error(), "rule exists") {
				continue // another tracer's, or the node's own: not ours to remove
			}
			return tracer.Usagef("the kernel refused %q: %w (use --lean-records=false)", r.Text(), err)
		}
		if err := recordExclude(typ); err != nil {
			return err
		}
	}
	b.lean = true
	return nil
}

// eoeExcluded reports whether the kernel's exclude list drops EOE records
// (lean records, ours or another tracer's), which decides how events end.
func eoeExcluded(c *libaudit.AuditClient) (bool, error) {
	rules, err := c.GetRules()
	if err != nil {
		return false, fmt.Errorf("listing audit rules: %w", err)
	}
	for _, r := range rules {
		if bytes.Equal(r, eoeExcludeWire) {
			return true, nil
		}
	}
	return false, nil
}

// eoeExcludeWire is the kernel's form of the EOE exclude rule.
var eoeExcludeWire = func() []byte {
	wf, err := auditrules.ExcludeRule("EOE").Wire()
	if err != nil {
		panic("tracer: building the EOE exclude rule: " + err.Error())
	}
	return wf
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

// enable turns audit on; the last tracer to leave turns it off again.
func (b *Backend) enable() error {
	if !b.cfg.EnableAudit && auditOffAtBoot() {
		return tracer.Usagef("audit is disabled (audit=0 on the kernel command line): processes started before now would not be audited; reboot without audit=0, or pass --enable-audit to accept that, or use --backend ebpf")
	}
	if err := recordSetting(func(s *nodeSettings) **uint32 { return &s.Enabled }, 0); err != nil {
		return err
	}
	if err := b.ctl.SetEnabled(true, libaudit.WaitForReply); err != nil {
		return tracer.Usagef("audit is disabled and could not be enabled (%w): run auditctl -e 1, or use --backend ebpf", err)
	}
	b.notes = append(b.notes, "audit was disabled: enabled it for this session (disabled again when the last tracer exits); processes started before audit was first enabled since boot are not audited")
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

// canHoldPID says why this tracer may not be the audit daemon, or nil.
func (b *Backend) canHoldPID(st *libaudit.AuditStatus) error {
	if st.Failure == failureModePanic && !b.cfg.AllowPanicFailureMode {
		return tracer.Usagef("audit failure mode is 2 (panic, auditctl -f 2): tracer will not become the audit daemon, since a full backlog after it died would panic the node; start auditd (tracer then reads beside it), pass --allow-panic-failure-mode to accept the risk, or use --backend ebpf")
	}
	return nil
}

// prepareHold sizes the backlog and, unless output may block, keeps
// audited processes from ever waiting on it; the values before are
// recorded for the last tracer to restore. The state lock is held.
func (b *Backend) prepareHold(st *libaudit.AuditStatus) error {
	if st.BacklogLimit < BacklogLimit {
		if err := recordSetting(func(s *nodeSettings) **uint32 { return &s.BacklogLimit }, st.BacklogLimit); err != nil {
			return err
		}
		if err := b.ctl.SetBacklogLimit(BacklogLimit, libaudit.WaitForReply); err != nil {
			return fmt.Errorf("setting audit backlog limit: %w", err)
		}
	}
	if b.cfg.Backpressure == tracer.BackpressureDrop && st.BacklogWaitTime != 0 {
		// With a wait time, a full backlog makes every audited process
		// sleep in the kernel; with 0 the kernel drops and counts instead.
		if err := recordSetting(func(s *nodeSettings) **uint32 { return &s.BacklogWaitTime }, st.BacklogWaitTime); err != nil {
			return err
		}
		if err := b.ctl.SetBacklogWaitTime(0, libaudit.WaitForReply); err != nil {
			return fmt.Errorf("setting audit backlog_wait_time: %w", err)
		}
	}
	return nil
}

// takePID makes this process the audit daemon for the session.
func (b *Backend) takePID(st *libaudit.AuditStatus) error {
	if err := b.canHoldPID(st); err != nil {
		return err
	}
	if err := b.prepareHold(st); err != nil {
		return err
	}
	c, err := newConn(0)
	if err != nil {
		return fmt.Errorf("opening audit record socket: %w", err)
	}
	b.sizeBuffer(c)
	pidc := &libaudit.AuditClient{Netlink: c}
	if err := pidc.SetPID(libaudit.WaitForReply); err != nil {
		c.Close()
		if st.PID != 0 {
			// The last holder is gone but the kernel has not noticed yet:
			// read beside it; the poller claims the PID once it is free.
			return b.joinMulticast(int(st.PID))
		}
		return tracer.Usagef("cannot become the audit daemon (%w): another process may have just claimed it; retry, or stop it", err)
	}
	b.recv, b.pidc = c, pidc
	return c.setRecvTimeout(recvTimeout)
}

// joinMulticast reads records from the READLOG group while another process
// (auditd, or another tracer) keeps the audit PID. It needs CAP_AUDIT_READ.
func (b *Backend) joinMulticast(holder int) error {
	c, err := newConn(netlinkGroupReadLog)
	if err != nil {
		return tracer.Usagef("pid %d holds the audit PID and joining the audit multicast group failed (%w): run as root with CAP_AUDIT_READ", holder, err)
	}
	b.sizeBuffer(c)
	b.recv = c
	b.multicast = true
	b.socketDrops0, _ = socketDrops(c.port)
	b.mcastPort.Store(c.port)
	comm, _ := tracer.ProcComm(uint32(holder))
	b.notes = append(b.notes, fmt.Sprintf("%s (pid %d) holds the audit PID: reading the multicast copy of its records; it keeps its PID, rules and log",
		comm, holder))
	return c.setRecvTimeout(recvTimeout)
}

// sizeBuffer asks for a large receive buffer and says so when the kernel
// gave less (SO_RCVBUFFORCE refused without CAP_NET_ADMIN).
func (b *Backend) sizeBuffer(c *conn) {
	b.bufAsked = recvBuffer
	b.bufGot = c.setRecvBuffer(recvBuffer)
	if b.bufGot < recvBuffer {
		b.notes = append(b.notes, fmt.Sprintf("the audit socket's receive buffer is %d bytes, not the %d asked for (SO_RCVBUFFORCE refused: grant CAP_NET_ADMIN or raise net.core.rmem_max): bursts overflow sooner; overflows are counted",
			b.bufGot, recvBuffer))
	}
}

// startPoller reads the kernel's backlog and lost counter on a client of its
// own, so status requests never interleave with the record stream, and
// notices when the audit PID becomes free and when EOE records come and go.
func (b *Backend) startPoller() {
	c, err := newConn(0)
	if err != nil {
		return
	}
	cl := &libaudit.AuditClient{Netlink: c}
	b.pollStop, b.pollDone = make(chan struct{}), make(chan struct{})
	b.recheck = make(chan struct{}, 1)
	go func() {
		defer close(b.pollDone)
		defer c.Close()
		t := time.NewTicker(pollInterval)
		defer t.Stop()
		// The exclude list is read when Run sees it change, and every
		// rulesPollTicks in case that record was lost: listing rules
		// costs the kernel a thread each time.
		checkRules := func() {
			if gone, err := eoeExcluded(cl); err == nil {
				b.eoeGone.Store(gone)
			}
		}
		for tick := 1; ; tick++ {
			if st, err := cl.GetStatus(); err == nil {
				b.status.Store(st)
				free := st.PID == 0 || (int(st.PID) != os.Getpid() && !tracer.ProcessAlive(int(st.PID)))
				b.pidFree.Store(free)
			}
			if tick%rulesPollTicks == 0 {
				checkRules()
			}
			select {
			case <-b.pollStop:
				return
			case <-b.recheck:
				checkRules()
			case <-t.C:
			}
		}
	}()
}

// pollInterval bounds how long records go unclaimed by a PID holder after
// the tracer that held it exits.
const pollInterval = 100 * time.Millisecond

// rulesPollTicks: the exclude list is read every 2 s besides.
const rulesPollTicks = 20

// Run reads and reassembles records until ctx is done. Then it removes the
// rules, so no new events come, and drains what the kernel had queued: the
// kernel logs each rule removal as a CONFIG_CHANGE record behind every
// record queued before it, so once all removals are read, nothing is left.
func (b *Backend) Run(ctx context.Context, emit func(*tracer.Event)) error {
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
	var drainStart time.Time
	// AUDIT_MESSAGE_TEXT_MAX is 8560 bytes; 9000 fits any record with its header.
	bt := newBatch(64, 9000)
	feed := func(n int) {
		b.r.setEOEless(b.eoeGone.Load(), count)
		for i := 0; i < n; i++ {
			typ, data, ok := bt.message(i)
			if !ok {
				continue
			}
			switch {
			case typ == syscall.NLMSG_ERROR:
				b.ack(data)
			case draining && typ == typeConfigChange && b.isOurRemoval(data):
				fences--
			case typ == typeConfigChange && excludeListChanged(data):
				// Another tracer added or removed lean records.
				select {
				case b.recheck <- struct{}{}:
				default:
				}
			default:
				b.r.feed(typ, data, count)
			}
		}
		b.lostReasm.Store(b.r.lost + b.r.bad)
	}
	for {
		if draining && time.Since(drainStart) > drainTimeout {
			return b.endDrain() // a busy node never goes quiet: bound the drain by the clock too
		}
		if !draining && ctx.Err() != nil {
			draining, drainStart = true, time.Now()
			fences = b.ruleCount()
			if err := b.removeRules(); err != nil {
				return err
			}
		}
		if !draining && b.multicast && b.mcast == nil && b.pidFree.Load() {
			b.claim()
		}
		if b.mcast != nil {
			feed(b.readHandover(bt))
		}
		b.endHandover()
		n, err := b.recv.readBatch(bt)
		if err != nil {
			switch {
			case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EWOULDBLOCK):
				if draining {
					// The fences normally end the drain; this bounds it if a
					// removal record was lost, or an event never completes.
					if quiet += recvTimeout; fences <= 0 || quiet >= drainTimeout {
						return b.endDrain()
					}
				}
				continue
			case errors.Is(err, syscall.ENOBUFS):
				if b.pidc == nil {
					b.overflowed()
				}
				// The PID socket's overrun loses nothing: kauditd keeps its
				// reference and queues the record again.
				continue
			default:
				return fmt.Errorf("reading audit records: %w", err)
			}
		}
		quiet = 0
		feed(n)
		if !draining && n < len(bt.hdrs)/4 {
			// A reader waiting in recvmmsg is woken for every record, and
			// kauditd pays for each wakeup on the audited processes' behalf
			// (on two CPUs, out of their time): let a few records gather.
			time.Sleep(gatherRecords)
		}
		// Past the last fence, events another CPU was logging while the
		// rules went away may still lack their EOE: read until they have it.
		if draining && fences <= 0 && len(b.r.pending) == 0 {
			return b.endDrain()
		}
	}
}

const (
	// gatherRecords is the most a record waits for the reader to wake, on
	// top of what reading it costs; 1 ms is 1,000 records at a million a
	// second, far below the backlog limit.
	gatherRecords = time.Millisecond
	recvTimeout   = 100 * time.Millisecond
	drainTimeout  = 5 * time.Second
)

func (b *Backend) endDrain() error {
	b.r.flush()
	b.lostReasm.Store(b.r.lost + b.r.bad)
	return nil
}

// overflowed books a multicast socket overflow: the records it dropped
// are gone. The kernel counts them per socket (/proc/net/netlink, Drops);
// only where that cannot be read is the figure a count of overflows, a
// lower bound.
func (b *Backend) overflowed() {
	if _, ok := socketDrops(b.mcastPort.Load()); ok {
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
		}
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
	n, ok := socketDrops(port)
	if !ok || n < b.socketDrops0 {
		return b.finalDrops.Load()
	}
	return n - b.socketDrops0
}

// Close removes the rules, gives back the audit PID, and, as the last
// tracer on the node, restores every setting tracers changed.
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
	if b.mcast != nil {
		errs = append(errs, b.mcast.Close())
		b.mcast = nil
	}
	if b.pidc != nil {
		// Closing the client that set the PID unsets it (go-libaudit).
		errs = append(errs, b.pidc.Close())
	} else if b.recv != nil {
		errs = append(errs, b.recv.Close())
	}
	b.multicast, b.recv, b.pidc = false, nil, nil
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
	_ = os.Remove(ownerPath(os.Getpid()))
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

// HasKey reports whether a rule in auditctl syntax carries one of tracer's
// keys (Key or a running tracer's InstanceKey).
func HasKey(text string) bool {
	key, ok := keyOfText(text)
	return ok && auditrules.IsTracerKey(key)
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
