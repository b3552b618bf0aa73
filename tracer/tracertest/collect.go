// SPDX-License-Identifier: Apache-2.0

package tracertest

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Collector keeps copies of every event a backend emits.
type Collector struct {
	mu     sync.Mutex
	events []tracer.Event
}

// Emit is a backend's emit callback.
func (c *Collector) Emit(e *tracer.Event) {
	cp := *e
	cp.Argv = slices.Clone(e.Argv)
	c.mu.Lock()
	c.events = append(c.events, cp)
	c.mu.Unlock()
}

// Tree returns the events of root and its descendants (tracer.ProcTree).
// A child's events can arrive before its parent's fork event (vfork), so
// the tree is grown to a fixed point first.
func (c *Collector) Tree(root uint32) []tracer.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	tree := tracer.NewProcTree(root)
	tree.Grow(len(c.events), func(i int) (vocab.Type, uint32, uint32, uint32) {
		e := &c.events[i]
		return e.Type, e.PID, e.PPID, e.ChildPID
	})
	var out []tracer.Event
	for _, e := range c.events {
		if tree.Has(e.PID) {
			out = append(out, e)
		}
	}
	return out
}

// RunWorkload starts b with cfg, runs the workload binary with args (it must
// end with "exit CODE"), waits for the root's exit event and stops b. It
// returns the events of the workload's tree and the root pid.
func RunWorkload(t *testing.T, b tracer.Backend, cfg tracer.Config, bin string, args ...string) ([]tracer.Event, uint32) {
	t.Helper()
	s := StartSession(t, b, cfg)
	events, root := s.Workload(bin, args...)
	s.Stop()
	// The drain may have delivered the tree's last events.
	if got := s.Tree(root); len(got) >= len(events) {
		events = got
	}
	return events, root
}

// Session is a backend started and running, whose events a Collector
// keeps, for tests that run several workloads under one backend (across
// an auditd restart, say).
type Session struct {
	Collector
	t        *testing.T
	cancel   context.CancelFunc
	done     chan error
	stopOnce sync.Once
	err      error
}

// StartSession starts b with cfg and runs it until Stop.
func StartSession(t *testing.T, b tracer.Backend, cfg tracer.Config) *Session {
	t.Helper()
	if err := b.Start(cfg); err != nil {
		t.Fatalf("Start: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Session{t: t, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- b.Run(ctx, s.Emit) }()
	// A test that failed before Stop still ends Run before Close.
	t.Cleanup(func() {
		s.stopOnce.Do(func() { cancel(); s.err = <-s.done })
		_ = b.Close()
	})
	return s
}

// Workload runs the workload binary with args (it must end with "exit
// CODE"), waits for the root's exit event, and returns the events of the
// workload's tree so far and the root pid.
func (s *Session) Workload(bin string, args ...string) ([]tracer.Event, uint32) {
	s.t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			s.t.Fatalf("workload: %v", err)
		}
	}
	root := uint32(cmd.Process.Pid)
	// Events reach user space asynchronously: wait for the root's exit event.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		got := s.Tree(root)
		if n := len(got); n > 0 && got[n-1].Type == vocab.TypeExit && got[n-1].PID == root {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s.Tree(root), root
}

// Stop ends Run (which drains what the kernel queued) and fails the test
// on its error.
func (s *Session) Stop() {
	s.t.Helper()
	s.stopOnce.Do(func() { s.cancel(); s.err = <-s.done })
	if s.err != nil {
		s.t.Fatalf("Run: %v", s.err)
	}
}

// Key names an event for exact counting across backends: its type with
// syscall, signal or filename, and its comm.
func Key(e tracer.Event) string {
	switch e.Type {
	case vocab.TypeFork:
		return "fork " + e.Comm + " " + e.Syscall
	case vocab.TypeSignal:
		return "signal " + e.Comm + " " + e.Syscall + " " + e.SignalName()
	case vocab.TypeExec:
		if e.Ret != 0 {
			return "exec " + e.Comm + " " + e.Filename + " failed"
		}
		return "exec " + e.Comm + " " + e.Filename
	case vocab.TypeExit:
		return "exit " + e.Comm
	}
	return e.Type.String()
}

// CheckThrottleWindows fails t for each throttle event whose window let
// through more than limit of the events delivered at times: a rate limit
// passes the limit per window exactly, none more.
func CheckThrottleWindows(t testing.TB, throttles []tracer.Event, times []time.Time, limit int) {
	t.Helper()
	for _, th := range throttles {
		n := 0
		for _, tm := range times {
			if !tm.Before(th.Throttle.Start) && tm.Before(th.Throttle.End) {
				n++
			}
		}
		if n > limit {
			t.Errorf("window %v-%v delivered %d events, over the limit %d", th.Throttle.Start, th.Throttle.End, n, limit)
		}
	}
}
