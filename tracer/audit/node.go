// SPDX-License-Identifier: Apache-2.0

//go:build linux

package audit

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	libaudit "github.com/elastic/go-libaudit/v2"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/auditstate"
	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// This file: the node's audit state as the backend meets it: enabling audit, running alone or beside the daemon that holds the audit PID, joining the multicast group, sizing the socket, noticing other readers, leaving.

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
