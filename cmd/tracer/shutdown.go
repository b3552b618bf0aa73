// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// errStopped is the cause of a shutdown asked for by a signal.
var errStopped = errors.New("stopped by a signal")

// shutdown turns the signals that end a streaming command into one
// cancel: the first SIGINT, SIGTERM or SIGHUP (unless onHangup gave
// SIGHUP another use). SIGPIPE itself is caught, so a write to a closed
// pipe fails with EPIPE (which ends the watch) instead of killing tracer
// with its rules still loaded. A second signal closes abort: stop waiting
// for a stalled output reader (the rules are gone by then).
type shutdown struct {
	stop  context.CancelCauseFunc
	sigs  chan os.Signal
	abort chan struct{}
	hup   atomic.Pointer[func()]
}

func newShutdown(stop context.CancelCauseFunc) *shutdown {
	s := &shutdown{stop: stop, sigs: make(chan os.Signal, 4), abort: make(chan struct{})}
	signal.Notify(s.sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	go s.loop()
	return s
}

func (s *shutdown) loop() {
	n := 0
	for sig := range s.sigs {
		if sig == syscall.SIGPIPE {
			continue // the write that raised it returns EPIPE, which ends the watch
		}
		if f := s.hup.Load(); f != nil && sig == syscall.SIGHUP {
			// In a goroutine of its own: a slow filesystem must not hold
			// up a SIGTERM that comes after.
			go (*f)()
			continue
		}
		if n++; n == 1 {
			s.stop(errStopped)
		} else if n == 2 {
			close(s.abort)
		}
	}
}

// onHangup makes SIGHUP call f instead of ending the command: watch
// --output FILE reopens FILE, as logrotate asks daemons to.
func (s *shutdown) onHangup(f func()) { s.hup.Store(&f) }

// release stops catching signals.
func (s *shutdown) release() {
	signal.Stop(s.sigs)
	close(s.sigs)
}
