// SPDX-License-Identifier: Apache-2.0

//go:build linux

package trace

import (
	"errors"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/tracer-dev/tracer/tracer"
)

// ptyRelay stands between root's terminal and a command run as another
// user: the command's terminal streams are a new pty whose slave is its
// controlling terminal, and tracer copies between the pty and its own
// terminal. So the command holds no descriptor of root's terminal, and
// TIOCSTI or a read of /dev/tty reaches only its own pty.
type ptyRelay struct {
	master, slave *os.File
	in            *os.File // root's terminal as stdin, when it is one: read into the pty
	out           io.Writer
	restore       func()
	winch         chan os.Signal
	stop          chan struct{}
	wg            sync.WaitGroup
}

// terminal returns f as a terminal, or nil.
func terminal(f any) *os.File {
	if t, ok := f.(*os.File); ok && t != nil && term.IsTerminal(int(t.Fd())) {
		return t
	}
	return nil
}

// newPTYRelay makes the pty when one of stdin, stdout and stderr is a
// terminal (nil otherwise), replacing each of those that is by its slave,
// and returns which of 0-2 becomes the controlling terminal.
func newPTYRelay(std []any) (*ptyRelay, int, error) {
	ttys := make([]*os.File, len(std))
	first := -1
	for i, f := range std {
		if ttys[i] = terminal(f); ttys[i] != nil && first < 0 {
			first = i
		}
	}
	if first < 0 {
		return nil, 0, nil
	}
	master, slave, err := tracer.OpenPTY()
	if err != nil {
		return nil, 0, err
	}
	r := &ptyRelay{master: master, slave: slave, in: ttys[0], restore: func() {}, stop: make(chan struct{})}
	// The command's terminal starts as root's is: modes and size.
	model := int(ttys[first].Fd())
	if t, err := unix.IoctlGetTermios(model, unix.TCGETS); err == nil {
		_ = unix.IoctlSetTermios(int(slave.Fd()), unix.TCSETS, t)
	}
	r.copySize(model)
	r.out = io.Discard
	if ttys[1] != nil {
		r.out = ttys[1]
	} else if ttys[2] != nil {
		r.out = ttys[2]
	}
	for i := range std {
		if ttys[i] != nil {
			std[i] = slave
		}
	}
	return r, first, nil
}

func (r *ptyRelay) copySize(from int) {
	if ws, err := unix.IoctlGetWinsize(from, unix.TIOCGWINSZ); err == nil {
		_ = unix.IoctlSetWinsize(int(r.master.Fd()), unix.TIOCSWINSZ, ws)
	}
}

// start relays once the command runs: root's terminal goes raw (the pty's
// line discipline does the editing and turns Ctrl-C into the command's
// SIGINT), its keys go to the pty, the pty's output to root's terminal.
func (r *ptyRelay) start() error {
	r.slave.Close() // the command holds it; EIO on the master when it is gone
	if r.in != nil {
		st, err := term.MakeRaw(int(r.in.Fd()))
		if err != nil {
			return err
		}
		r.restore = func() { _ = term.Restore(int(r.in.Fd()), st) }
		r.winch = make(chan os.Signal, 1)
		signal.Notify(r.winch, syscall.SIGWINCH)
		r.wg.Add(2)
		go r.keys()
		go func() {
			defer r.wg.Done()
			for {
				select {
				case <-r.winch:
					r.copySize(int(r.in.Fd()))
				case <-r.stop:
					return
				}
			}
		}()
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		_, _ = io.Copy(r.out, r.master)
	}()
	return nil
}

// keys copies root's terminal to the pty, polling so that it stops when
// the relay does and never reads a key meant for root's shell after.
func (r *ptyRelay) keys() {
	defer r.wg.Done()
	buf := make([]byte, 4096)
	fds := []unix.PollFd{{Fd: int32(r.in.Fd()), Events: unix.POLLIN}}
	for {
		select {
		case <-r.stop:
			return
		default:
		}
		n, err := unix.Poll(fds, 100)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		if n <= 0 {
			continue
		}
		if fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 && fds[0].Revents&unix.POLLIN == 0 {
			return
		}
		k, err := unix.Read(int(r.in.Fd()), buf)
		if k <= 0 || err != nil {
			return
		}
		if _, err := r.master.Write(buf[:k]); err != nil {
			return
		}
	}
}

// close ends the relay once the command exited: the rest of its output
// (what it wrote before it exited; a background process that keeps the
// pty open is given a moment, no more), then root's terminal as it was.
func (r *ptyRelay) close() {
	if r == nil {
		return
	}
	_ = r.master.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	close(r.stop)
	if r.winch != nil {
		signal.Stop(r.winch)
	}
	r.wg.Wait()
	r.master.Close()
	r.restore()
}

// abort ends a relay that never started.
func (r *ptyRelay) abort() {
	if r != nil {
		r.slave.Close()
		r.master.Close()
	}
}
