// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfbackend

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

// ringWait is how the reader sleeps between reads of the ring buffer:
// in Go's network poller, on a duplicate of the ring's descriptor, so that
// a sleeping reader holds no thread in a system call (which the runtime's
// monitor then wakes to take back, many times a second), and sleeps and
// timers share one wait.
//
// It sleeps until a deadline (records come without a wakeup, see
// wake_flags in bpf/headers/maps.h), or, parked, until the kernel wakes it
// for the first record (wake_parked): an idle node costs the reader
// nothing.
type ringWait struct {
	f      *os.File
	rc     syscall.RawConn
	rd     *ringbuf.Reader
	parked *atomic.Uint32 // reader_parked in the programs' memory
	mem    []byte         // the mapping parked points into

	mu      sync.Mutex
	stopped bool
}

// mapVariable maps the section of the loaded collection that holds the
// global variable spec describes, and returns a pointer to it there: the
// programs and the reader share it. (cilium/ebpf's own pointers into that
// memory need an experimental build tag; its Set is a plain copy, and
// reader_parked needs an atomic store: see ringWait.wait.)
func mapVariable(coll *ebpf.Collection, spec *ebpf.VariableSpec) (*atomic.Uint32, []byte, error) {
	if spec == nil {
		return nil, nil, errors.New("BPF object has no variable reader_parked")
	}
	m := coll.Maps[spec.SectionName]
	if m == nil || spec.Offset%4 != 0 {
		return nil, nil, fmt.Errorf("BPF object has no section %s for %s", spec.SectionName, spec.Name)
	}
	size := int(m.ValueSize())
	if int(spec.Offset)+4 > size {
		return nil, nil, fmt.Errorf("%s lies outside its section", spec.Name)
	}
	mem, err := unix.Mmap(m.FD(), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("mapping %s: %w", spec.SectionName, err)
	}
	return (*atomic.Uint32)(unsafe.Pointer(&mem[spec.Offset])), mem, nil
}

// newRingWait makes the waiter of rd, which reads coll's ring buffer
// (map events); parked is the programs' reader_parked, nil where data
// sections cannot be mapped (the reader then never parks).
func newRingWait(rd *ringbuf.Reader, coll *ebpf.Collection, parked *ebpf.VariableSpec) (_ *ringWait, err error) {
	w := &ringWait{rd: rd}
	defer func() {
		if err != nil {
			w.close()
		}
	}()
	if parked != nil {
		if w.parked, w.mem, err = mapVariable(coll, parked); err != nil {
			return nil, err
		}
	}
	fd, err := unix.FcntlInt(uintptr(coll.Maps["events"].FD()), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("duplicating the ring buffer's descriptor: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("duplicating the ring buffer's descriptor: %w", err)
	}
	w.f = os.NewFile(uintptr(fd), "ring buffer")
	// A file the poller does not hold refuses deadlines.
	if err := w.f.SetReadDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("polling the ring buffer: %w", err)
	}
	if w.rc, err = w.f.SyscallConn(); err != nil {
		return nil, fmt.Errorf("polling the ring buffer: %w", err)
	}
	return w, nil
}

// wait sleeps until d has passed (timedOut) or the kernel wakes the
// reader; with park, until a record is in the ring, however long. It
// returns at once after stop.
func (w *ringWait) wait(d time.Duration, park bool) (timedOut bool, err error) {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return false, nil
	}
	// Without the shared flag no program would wake a parked reader.
	park = park && w.parked != nil
	var deadline time.Time
	if !park {
		deadline = time.Now().Add(d)
	}
	err = w.f.SetReadDeadline(deadline)
	w.mu.Unlock()
	if err != nil {
		return false, fmt.Errorf("waiting on the ring buffer: %w", err)
	}
	// ready's first call is before any wait: a timed wait sleeps past
	// what the ring holds already, a parked one only while it is empty.
	first := !park
	ready := func(uintptr) bool {
		if first {
			first = false
			return false
		}
		return w.rd.AvailableBytes() > 0
	}
	if park {
		// Stored before the last look at the ring (ready's first call),
		// ordered before it (an atomic store: XCHG on amd64; on arm64 a
		// store-release, which the load-acquire of the ring's position
		// does not pass), as the programs load it after their record's
		// commit.
		w.parked.Store(1)
		defer w.parked.Store(0)
	}
	switch err := w.rc.Read(ready); {
	case err == nil:
		return false, nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.mu.Lock()
		defer w.mu.Unlock()
		return !w.stopped, nil
	default:
		return false, fmt.Errorf("waiting on the ring buffer: %w", err)
	}
}

// stop ends a wait under way and makes later ones return at once.
func (w *ringWait) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	_ = w.f.SetReadDeadline(time.Unix(1, 0))
}

// start readies the waiter for a run (stop ended the last one).
func (w *ringWait) start() {
	w.mu.Lock()
	w.stopped = false
	w.mu.Unlock()
}

func (w *ringWait) close() error {
	if w == nil {
		return nil
	}
	var errs []error
	if w.f != nil {
		errs = append(errs, w.f.Close())
	}
	if w.mem != nil {
		errs = append(errs, unix.Munmap(w.mem))
	}
	return errors.Join(errs...)
}
