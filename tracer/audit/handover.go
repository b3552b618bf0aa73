//go:build linux

package audit

import (
	"encoding/binary"
	"errors"
	"syscall"
	"time"

	libaudit "github.com/elastic/go-libaudit/v2"

	"github.com/tracer-dev/tracer/tracer"
)

// When the tracer that held the audit PID exits while this one reads the
// multicast copy, nobody would take the records: the kernel would print
// them to the console and, on nodes booted with audit=1, queue them until
// its hold queue overflowed (a panic under failure mode 2). So this tracer
// claims the PID (claim), and for a moment reads both sockets: the
// multicast one until it is empty, since every record sent before the
// claim is there, and the new PID socket, which gets every record after
// the claim and replays the kernel's hold queue. Events are deduplicated
// by serial number while both streams may overlap (handoverKeep).

// handoverKeep is how long serials stay remembered after the multicast
// socket is closed: the kernel replays its hold queue first thing, so
// duplicates come within milliseconds; seconds are ample.
const handoverKeep = 3 * time.Second

// claim tries to become the audit daemon; on any failure this tracer just
// goes on reading the multicast copy, and tries again at the next poll.
func (b *Backend) claim() {
	b.pidFree.Store(false)
	unlock, err := lockState()
	if err != nil {
		return
	}
	defer unlock()
	st, err := b.ctl.GetStatus()
	if err != nil || (st.PID != 0 && tracer.ProcessAlive(int(st.PID))) {
		return
	}
	if b.canHoldPID(st) != nil || b.prepareHold(st) != nil {
		return
	}
	c, err := newConn(0)
	if err != nil {
		return
	}
	c.setRecvBuffer(recvBuffer)
	if err := c.setRecvTimeout(recvTimeout); err != nil {
		c.Close()
		return
	}
	pidc := &libaudit.AuditClient{Netlink: c}
	// The kernel's answer comes on c among the first records: see ack.
	if err := pidc.SetPID(libaudit.NoWait); err != nil {
		c.Close()
		return
	}
	b.mcast, b.recv, b.pidc = b.recv, c, pidc
	b.claimAcked = false
	b.r.dedupe = map[uint64]struct{}{}
	b.handoverEnd = time.Time{}
}

// ack handles the kernel's answer to the PID claim (an NLMSG_ERROR, 0 for
// success); a refused claim (another tracer was quicker) is undone.
func (b *Backend) ack(data []byte) {
	if b.mcast == nil || b.claimAcked || len(data) < 4 {
		return
	}
	if errno := int32(binary.NativeEndian.Uint32(data)); errno == 0 {
		b.claimAcked = true
		return
	}
	_ = b.pidc.Close()
	b.recv, b.pidc, b.mcast = b.mcast, nil, nil
	b.r.dedupe = nil
}

// readHandover reads one batch from the multicast socket without waiting.
// Once it is empty and the claim is confirmed, every record it could still
// get also comes on the PID socket, so it is closed.
func (b *Backend) readHandover(bt *batch) int {
	n, err := b.mcast.readBatchNow(bt)
	if err == nil {
		return n
	}
	if errors.Is(err, syscall.ENOBUFS) {
		b.overflowed()
		return 0
	}
	if !b.claimAcked {
		return 0
	}
	b.finalDrops.Store(b.multicastDrops())
	b.mcastPort.Store(0)
	_ = b.mcast.Close()
	b.mcast, b.multicast = nil, false
	b.handoverEnd = time.Now().Add(handoverKeep)
	return 0
}

// endHandover stops deduplicating once the overlap is surely over.
func (b *Backend) endHandover() {
	if b.mcast == nil && !b.handoverEnd.IsZero() && time.Now().After(b.handoverEnd) {
		b.r.dedupe, b.handoverEnd = nil, time.Time{}
	}
}
