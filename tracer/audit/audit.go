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
	"errors"
	"fmt"
	"os"
	"slices"
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

// failureModePanic is auditctl -f 2.
const failureModePanic = 2

func (c *readerCheck) other(st *libaudit.AuditStatus) string {
	ports := auditstate.MulticastPorts()
	if c.ok && st.PID == c.pid && slices.Equal(ports, c.ports) {
		return ""
	}
	other := otherReaderOf(st, ports)
	c.pid, c.ports, c.ok = st.PID, ports, other == ""
	return other
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
