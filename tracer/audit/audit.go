//go:build linux

// Package audit is tracer's Linux audit backend. It installs the minimal
// rule set from package auditrules through go-libaudit, reads the kernel's
// records, and reassembles them into tracer.Events.
//
// It is audit-aware: when nobody holds the audit PID it takes it, sizes the
// backlog for bursts and gives everything back at Close; when auditd holds
// it, it reads the multicast copy of the records and manages its rules
// through a second socket that never claims the PID, so auditd keeps its
// PID, its rules and its log.
package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
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
	cfg  tracer.Config
	ctl  *libaudit.AuditClient // rules and settings; never claims the PID
	recv *conn                 // records: the PID socket, or the multicast one
	pidc *libaudit.AuditClient // wraps recv when we hold the PID

	mu        sync.Mutex
	added     []rule.WireFormat
	addedText []string
	restore   []func() error
	tookPID   bool
	multicast bool
	notes     []string // what Start changed or found, for the user

	state savedState // what Close must restore, also on disk for cleanup

	startLost uint32
	status    atomic.Pointer[libaudit.AuditStatus]
	pollStop  chan struct{}
	pollDone  chan struct{}

	r          *reassembler
	delivered  [5]atomic.Uint64
	lostReasm  atomic.Uint64
	lostSocket atomic.Uint64
	closed     bool
}

// New returns an audit backend.
func New() *Backend { return &Backend{} }

// Notes says what Start found or changed on the node (audit enabled for
// the session, auditd holding the PID, b32 rules left out), for the user.
func (b *Backend) Notes() []string { return b.notes }

// Name is "audit".
func (b *Backend) Name() string { return "audit" }

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
		return tracer.Usagef("cannot open the audit netlink socket (%v): is audit compiled into this kernel (CONFIG_AUDIT)? use --backend ebpf", err)
	}
	b.ctl = &libaudit.AuditClient{Netlink: ctlConn}
	st, err := b.ctl.GetStatus()
	if err != nil {
		if errors.Is(err, syscall.EPERM) {
			return tracer.Usagef("reading audit status was refused (%v): run as root with CAP_AUDIT_CONTROL", err)
		}
		return fmt.Errorf("reading audit status: %w", err)
	}
	switch st.Enabled {
	case 2:
		return tracer.Usagef("audit is locked (enabled=2, auditctl -e 2): no rule can be added until reboot; use --backend ebpf")
	case 0:
		if err := b.enable(); err != nil {
			return err
		}
	}
	b.startLost = st.Lost
	b.status.Store(st)

	holder := int(st.PID)
	if holder != 0 && processAlive(holder) && holder != os.Getpid() {
		if err := b.joinMulticast(holder); err != nil {
			return err
		}
	} else if err := b.takePID(st); err != nil {
		return err
	}
	b.r = newReassembler(cfg.Types, cfg.ScopeAUID)

	set, err := auditrules.Build(auditrules.Options{
		Arch: cfg.Arch, Types: cfg.Types, Signals: cfg.Signals,
		AuidSet: cfg.AuidSet, ScopeAUID: cfg.ScopeAUID,
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
			if strings.Contains(err.Error(), "rule exists") {
				// Left by a killed tracer: it works for us, but it is not ours to delete.
				b.notes = append(b.notes, "rule already loaded (run tracer cleanup to remove leftovers): "+r.Text())
				continue
			}
			return tracer.Usagef("the kernel refused audit rule %q: %v", r.Text(), err)
		}
		b.mu.Lock()
		b.added = append(b.added, wf)
		b.addedText = append(b.addedText, r.Text())
		b.mu.Unlock()
	}
	b.startPoller()
	return nil
}

// enable turns audit on for the session and arranges to turn it off again.
func (b *Backend) enable() error {
	if !b.cfg.EnableAudit && auditOffAtBoot() {
		return tracer.Usagef("audit is disabled (audit=0 on the kernel command line): processes started before now would not be audited; reboot without audit=0, or pass --enable-audit to accept that, or use --backend ebpf")
	}
	b.state.PID = os.Getpid()
	if err := b.state.write(); err != nil {
		return err
	}
	if err := b.ctl.SetEnabled(true, libaudit.WaitForReply); err != nil {
		return tracer.Usagef("audit is disabled and could not be enabled (%v): run auditctl -e 1, or use --backend ebpf", err)
	}
	zero := uint32(0)
	b.state.Enabled = &zero
	b.notes = append(b.notes, "audit was disabled: enabled it for this session (disabled again on exit); processes started before audit was first enabled since boot are not audited")
	b.restore = append(b.restore, func() error {
		return b.ctl.SetEnabled(false, libaudit.WaitForReply)
	})
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

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// takePID makes this process the audit daemon for the session and sizes the
// backlog; Close gives the PID back and restores the limits.
func (b *Backend) takePID(st *libaudit.AuditStatus) error {
	c, err := newConn(0)
	if err != nil {
		return fmt.Errorf("opening audit record socket: %w", err)
	}
	c.setRecvBuffer(recvBuffer)
	b.recv = c
	b.pidc = &libaudit.AuditClient{Netlink: c}
	if err := b.pidc.SetPID(libaudit.WaitForReply); err != nil {
		return tracer.Usagef("cannot become the audit daemon (%v): another process may have just claimed it; retry, or stop it", err)
	}
	b.tookPID = true
	if st.BacklogLimit < BacklogLimit {
		old := st.BacklogLimit
		b.state.PID, b.state.BacklogLimit = os.Getpid(), &old
		if err := b.state.write(); err != nil {
			return err
		}
		if err := b.ctl.SetBacklogLimit(BacklogLimit, libaudit.WaitForReply); err != nil {
			return fmt.Errorf("setting audit backlog limit: %w", err)
		}
		b.restore = append(b.restore, func() error { return b.ctl.SetBacklogLimit(old, libaudit.WaitForReply) })
	}
	return c.setRecvTimeout(recvTimeout)
}

// joinMulticast reads records from the READLOG group while another process
// (auditd) keeps the audit PID. It needs CAP_AUDIT_READ.
func (b *Backend) joinMulticast(holder int) error {
	c, err := newConn(netlinkGroupReadLog)
	if err != nil {
		return tracer.Usagef("auditd (pid %d) holds the audit PID and joining the audit multicast group failed (%v): run as root with CAP_AUDIT_READ", holder, err)
	}
	c.setRecvBuffer(recvBuffer)
	b.recv = c
	b.multicast = true
	comm, _ := os.ReadFile("/proc/" + strconv.Itoa(holder) + "/comm")
	b.notes = append(b.notes, fmt.Sprintf("%s (pid %d) holds the audit PID: reading the multicast copy of its records; it keeps its PID, rules and log",
		strings.TrimSpace(string(comm)), holder))
	return c.setRecvTimeout(recvTimeout)
}

// startPoller reads the kernel's backlog and lost counter on a client of its
// own, so status requests never interleave with the record stream.
func (b *Backend) startPoller() {
	c, err := newConn(0)
	if err != nil {
		return
	}
	cl := &libaudit.AuditClient{Netlink: c}
	b.pollStop, b.pollDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(b.pollDone)
		defer c.Close()
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			if st, err := cl.GetStatus(); err == nil {
				b.status.Store(st)
			}
			select {
			case <-b.pollStop:
				return
			case <-t.C:
			}
		}
	}()
}

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
				if b.multicast {
					// The multicast socket overflowed: the records in it are gone.
					b.lostSocket.Add(1)
				}
				// The PID socket's overrun loses nothing: kauditd keeps its
				// reference and queues the record again.
				continue
			default:
				return fmt.Errorf("reading audit records: %w", err)
			}
		}
		quiet = 0
		for i := 0; i < n; i++ {
			typ, data, ok := bt.message(i)
			if !ok {
				continue
			}
			if draining && typ == typeConfigChange && isOurRemoval(data) {
				fences--
				continue
			}
			b.r.feed(typ, data, count)
		}
		b.lostReasm.Store(b.r.lost)
		// Past the last fence, events another CPU was logging while the
		// rules went away may still lack their EOE: read until they have it.
		if draining && fences <= 0 && len(b.r.pending) == 0 {
			return b.endDrain()
		}
	}
}

const (
	recvTimeout  = 100 * time.Millisecond
	drainTimeout = 5 * time.Second
)

func (b *Backend) endDrain() error {
	b.r.flush()
	b.lostReasm.Store(b.r.lost)
	return nil
}

func (b *Backend) ruleCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.added)
}

// isOurRemoval matches the CONFIG_CHANGE record of removing one of our rules.
func isOurRemoval(data []byte) bool {
	return bytes.Contains(data, []byte("op=remove_rule")) && bytes.Contains(data, []byte(`key="`+auditrules.Key+`"`))
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
	s.Lost[tracer.LostRingbuf] = b.lostSocket.Load()
	s.Lost[tracer.LostReassembly] = b.lostReasm.Load()
	return s
}

// Close removes the rules, gives back the audit PID and restores every
// setting Start changed, in reverse order.
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
	if b.pidc != nil {
		// Closing the client that set the PID unsets it (go-libaudit).
		errs = append(errs, b.pidc.Close())
		b.recv = nil
	} else if b.recv != nil {
		errs = append(errs, b.recv.Close())
	}
	for i := len(b.restore) - 1; i >= 0; i-- {
		errs = append(errs, b.restore[i]())
	}
	if b.state.PID != 0 {
		removeState(b.state.PID)
	}
	if b.ctl != nil {
		errs = append(errs, b.ctl.Close())
	}
	return errors.Join(errs...)
}

func (b *Backend) ctlStatus() (*libaudit.AuditStatus, error) {
	if b.ctl == nil {
		return nil, errors.New("no audit client")
	}
	return b.ctl.GetStatus()
}

// Cleanup removes the audit rules that carry tracer's key, e.g. after a
// tracer was killed with SIGKILL, restores the audit settings such a tracer
// changed, and returns what it did. It never touches rules without the key.
func Cleanup() ([]string, error) {
	c, err := libaudit.NewAuditClient(nil)
	if err != nil {
		return nil, tracer.Usagef("cannot open the audit netlink socket (%v): run as root", err)
	}
	defer c.Close()
	rules, err := c.GetRules()
	if err != nil {
		return nil, fmt.Errorf("listing audit rules: %w", err)
	}
	var removed []string
	for _, wf := range rules {
		text, err := rule.ToCommandLine(rule.WireFormat(wf), false)
		if err != nil || !HasKey(text) {
			continue
		}
		if err := c.DeleteRule(wf); err != nil {
			return removed, fmt.Errorf("removing audit rule %q: %w", text, err)
		}
		removed = append(removed, text)
	}
	restored, err := restoreLeftSettings(c)
	return append(removed, restored...), err
}

// HasKey reports whether a rule in auditctl syntax carries tracer's key.
func HasKey(text string) bool {
	for _, f := range strings.Fields(text) {
		if f == "key="+auditrules.Key || f == "key=\""+auditrules.Key+"\"" {
			return true
		}
	}
	return strings.Contains(text, "-k "+auditrules.Key+" ") || strings.HasSuffix(text, "-k "+auditrules.Key)
}
