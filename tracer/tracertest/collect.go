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
	tree.Grow(len(c.events), func(i int) (tracer.EventType, uint32, uint32, uint32) {
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
	if err := b.Start(cfg); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	var c Collector
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx, c.Emit) }()

	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("workload: %v", err)
		}
	}
	root := uint32(cmd.Process.Pid)
	// Events reach user space asynchronously: wait for the root's exit event.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		got := c.Tree(root)
		if n := len(got); n > 0 && got[n-1].Type == tracer.TypeExit && got[n-1].PID == root {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	return c.Tree(root), root
}

// Key names an event for exact counting across backends: its type with
// syscall, signal or filename, and its comm.
func Key(e tracer.Event) string {
	switch e.Type {
	case tracer.TypeFork:
		return "fork " + e.Comm + " " + e.Syscall
	case tracer.TypeSignal:
		return "signal " + e.Comm + " " + e.Syscall + " " + e.SignalName()
	case tracer.TypeExec:
		if e.Ret != 0 {
			return "exec " + e.Comm + " " + e.Filename + " failed"
		}
		return "exec " + e.Comm + " " + e.Filename
	case tracer.TypeExit:
		return "exit " + e.Comm
	}
	return e.Type.String()
}
