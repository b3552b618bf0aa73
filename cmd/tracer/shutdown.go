//go:build linux

package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// errStopped is the cause of a shutdown asked for by a signal.
var errStopped = errors.New("stopped by a signal")

// shutdown turns the ways a streaming command ends into one cancel: the
// first SIGINT, SIGTERM or SIGHUP; a failed write to the output (EPIPE when
// `| head` has read enough). SIGPIPE itself is caught, so a write to a
// closed pipe fails with EPIPE instead of killing tracer with its rules
// still loaded. A second signal closes abort: stop waiting for a stalled
// output reader (the rules are gone by then).
type shutdown struct {
	stop  context.CancelCauseFunc
	sigs  chan os.Signal
	abort chan struct{}

	mu  sync.Mutex
	err error
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
			continue // the write that raised it returns EPIPE: outputFailed
		}
		if n++; n == 1 {
			s.stop(errStopped)
		} else if n == 2 {
			close(s.abort)
		}
	}
}

// outputFailed is the output queue's OnError.
func (s *shutdown) outputFailed(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	s.stop(err)
}

func (s *shutdown) outputErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// release stops catching signals.
func (s *shutdown) release() {
	signal.Stop(s.sigs)
	close(s.sigs)
}
