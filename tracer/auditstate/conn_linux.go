// SPDX-License-Identifier: Apache-2.0

//go:build linux

package auditstate

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	libaudit "github.com/elastic/go-libaudit/v2"
	"golang.org/x/sys/unix"
)

// Conn is a netlink audit socket that go-libaudit drives for control
// messages (it implements libaudit.NetlinkSendReceiver) and that readers of
// records (the audit backend, bench's audit floor) read directly: owning
// the fd lets them size the receive buffer, read in batches and bound
// blocking reads so shutdown is prompt.
type Conn struct {
	fd   int
	port uint32
	seq  uint32
	buf  []byte
}

// GroupReadLog is AUDIT_NLGRP_READLOG, the multicast group that receives
// a copy of every record while auditd keeps the audit PID.
const GroupReadLog = 1

// NewConn opens an audit netlink socket bound to the multicast groups
// (0 for none: a control socket).
func NewConn(groups uint32) (*Conn, error) {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.NETLINK_AUDIT)
	if err != nil {
		return nil, fmt.Errorf("opening audit netlink socket: %w", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK, Groups: groups}); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("binding audit netlink socket: %w", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("reading netlink port id: %w", err)
	}
	c := &Conn{fd: fd, port: sa.(*syscall.SockaddrNetlink).Pid, buf: make([]byte, 1<<16)}
	return c, nil
}

// SetRecvBuffer asks for a large receive buffer and returns what the
// kernel gave; SO_RCVBUFFORCE (CAP_NET_ADMIN) passes net.core.rmem_max,
// which matters in multicast mode where a full buffer drops records.
func (c *Conn) SetRecvBuffer(bytes int) int {
	if err := syscall.SetsockoptInt(c.fd, syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, bytes); err != nil {
		_ = syscall.SetsockoptInt(c.fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF, bytes)
	}
	got, err := syscall.GetsockoptInt(c.fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF)
	if err != nil {
		return 0
	}
	// The kernel reports twice what it was asked for (its bookkeeping share).
	return got / 2
}

// Port is the socket's netlink port id.
func (c *Conn) Port() uint32 { return c.port }

// MulticastPorts lists the netlink ports of the sockets in the audit
// multicast group, from /proc/net/netlink (Eth 9, Groups bit 0).
func MulticastPorts() []uint32 {
	b, err := os.ReadFile("/proc/net/netlink")
	if err != nil {
		return nil
	}
	var ports []uint32
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 4 || f[1] != strconv.Itoa(syscall.NETLINK_AUDIT) {
			continue
		}
		groups, err1 := strconv.ParseUint(f[3], 16, 32)
		port, err2 := strconv.ParseUint(f[2], 10, 32)
		if err1 == nil && err2 == nil && groups&GroupReadLog != 0 {
			ports = append(ports, uint32(port))
		}
	}
	return ports
}

// SocketDrops reads the kernel's drop counter of this process's audit
// netlink socket with the given port id from /proc/net/netlink (columns
// sk Eth Pid Groups Rmem Wmem Dump Locks Drops Inode).
func SocketDrops(port uint32) (uint64, bool) {
	if port == 0 {
		return 0, false
	}
	b, err := os.ReadFile("/proc/net/netlink")
	if err != nil {
		return 0, false
	}
	want := strconv.FormatUint(uint64(port), 10)
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) >= 9 && f[1] == strconv.Itoa(syscall.NETLINK_AUDIT) && f[2] == want {
			n, err := strconv.ParseUint(f[8], 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// SetRecvTimeout bounds blocking reads so that the reader notices shutdown.
func (c *Conn) SetRecvTimeout(d time.Duration) error {
	tv := syscall.NsecToTimeval(d.Nanoseconds())
	if err := syscall.SetsockoptTimeval(c.fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("setting receive timeout: %w", err)
	}
	return nil
}

func (c *Conn) Send(msg syscall.NetlinkMessage) (uint32, error) { return c.send(msg, 0) }

func (c *Conn) SendNoWait(msg syscall.NetlinkMessage) (uint32, error) {
	return c.send(msg, syscall.MSG_DONTWAIT)
}

func (c *Conn) send(msg syscall.NetlinkMessage, flags int) (uint32, error) {
	if msg.Header.Pid == 0 {
		msg.Header.Pid = c.port
	}
	c.seq++
	msg.Header.Seq = c.seq
	msg.Header.Len = uint32(syscall.SizeofNlMsghdr + len(msg.Data))
	b := make([]byte, msg.Header.Len)
	*(*syscall.NlMsghdr)(unsafe.Pointer(&b[0])) = msg.Header
	copy(b[syscall.SizeofNlMsghdr:], msg.Data)
	return msg.Header.Seq, syscall.Sendto(c.fd, b, flags, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK})
}

// Receive serves go-libaudit's control calls (status, acks).
func (c *Conn) Receive(nonBlocking bool, p libaudit.NetlinkParser) ([]syscall.NetlinkMessage, error) {
	n, err := c.read(nonBlocking)
	if err != nil {
		return nil, err
	}
	return p(c.buf[:n])
}

// read reads one datagram into c.buf. The kernel sends each audit record
// as a datagram of its own.
func (c *Conn) read(nonBlocking bool) (int, error) {
	flags := 0
	if nonBlocking {
		flags = syscall.MSG_DONTWAIT
	}
	for {
		n, _, err := syscall.Recvfrom(c.fd, c.buf, flags)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if n < syscall.NLMSG_HDRLEN {
			return 0, fmt.Errorf("short netlink message (%d bytes)", n)
		}
		return n, nil
	}
}

func (c *Conn) Close() error { return syscall.Close(c.fd) }

// Batch receives up to len(bufs) datagrams per recvmmsg(2) call: at 800,000
// records a second, one syscall per record is most of the reader's cost.
type Batch struct {
	bufs [][]byte
	iovs []unix.Iovec
	hdrs []mmsghdr
}

// mmsghdr is struct mmsghdr from <sys/socket.h>.
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   [4]byte
}

const msgWaitForOne = 0x10000 // MSG_WAITFORONE

// NewBatch makes a Batch of n datagrams of up to size bytes each.
func NewBatch(n, size int) *Batch {
	b := &Batch{bufs: make([][]byte, n), iovs: make([]unix.Iovec, n), hdrs: make([]mmsghdr, n)}
	for i := range b.bufs {
		b.bufs[i] = make([]byte, size)
		b.iovs[i].Base = &b.bufs[i][0]
		b.iovs[i].SetLen(size)
		b.hdrs[i].hdr.Iov = &b.iovs[i]
		b.hdrs[i].hdr.SetIovlen(1)
	}
	return b
}

// ReadBatch blocks until at least one datagram arrives (or the receive
// timeout passes) and returns how many it read.
func (c *Conn) ReadBatch(b *Batch) (int, error) { return c.recvmmsg(b, msgWaitForOne) }

// ReadBatchNow reads what is queued without waiting (EAGAIN when nothing is).
func (c *Conn) ReadBatchNow(b *Batch) (int, error) { return c.recvmmsg(b, syscall.MSG_DONTWAIT) }

func (c *Conn) recvmmsg(b *Batch, flags int) (int, error) {
	for {
		n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(c.fd),
			uintptr(unsafe.Pointer(&b.hdrs[0])), uintptr(len(b.hdrs)), uintptr(flags), 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return 0, errno
		}
		return int(n), nil
	}
}

// Len is how many datagrams one read takes at most.
func (b *Batch) Len() int { return len(b.hdrs) }

// Message returns the type and payload of datagram i of the last ReadBatch.
func (b *Batch) Message(i int) (typ uint16, data []byte, ok bool) {
	n := int(b.hdrs[i].len)
	if n < syscall.NLMSG_HDRLEN {
		return 0, nil, false
	}
	buf := b.bufs[i]
	h := (*syscall.NlMsghdr)(unsafe.Pointer(&buf[0]))
	return h.Type, buf[syscall.NLMSG_HDRLEN:n], true
}
