// SPDX-License-Identifier: Apache-2.0

package watch

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// fake delivers its events, then waits for ctx.
type fake struct {
	events   []tracer.Event
	startErr error

	mu    sync.Mutex
	calls []string
	cfg   tracer.Config
}

func (f *fake) Name() string { return "fake" }
func (f *fake) Start(cfg tracer.Config) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls, f.cfg = append(f.calls, "start"), cfg
	return f.startErr
}
func (f *fake) Run(ctx context.Context, emit func(*tracer.Event)) error {
	f.mu.Lock()
	f.calls = append(f.calls, "run")
	f.mu.Unlock()
	for i := range f.events {
		e := f.events[i]
		emit(&e)
	}
	<-ctx.Done()
	return nil // as the backends do: the end of ctx is the normal end
}
func (f *fake) Stats() tracer.Stats {
	var st tracer.Stats
	st.Lost[tracer.LostKernel] = 3
	return st
}
func (f *fake) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "close")
	return nil
}

func events() []tracer.Event {
	return []tracer.Event{
		{Backend: "fake", Type: vocab.TypeExec, PID: 10, PPID: 1, Comm: "sh", Filename: "/bin/true", Argv: []string{"true"}},
		{Backend: "fake", Type: vocab.TypeSignal, PID: 10, Comm: "sh", TargetPID: 11, Signal: 10},
		{Backend: "fake", Type: vocab.TypeSignal, PID: 10, Comm: "sh", TargetPID: 11, Signal: 12},
	}
}

// Events pass the filters to the output until the duration ends; the
// result counts them and carries the backend's loss.
func TestRunStreamsUntilDuration(t *testing.T) {
	f := &fake{events: events()}
	cfg := tracer.DefaultConfig()
	cfg.Signals.Add(10)
	var out bytes.Buffer
	started := 0
	res, err := Run(context.Background(), Options{Backend: f, Config: cfg, Format: "json", Output: &out,
		Duration: 50 * time.Millisecond, Started: func() { started++ }})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"type":"exec"`) || !strings.Contains(lines[1], `"signal":10`) {
		t.Errorf("output %q: want the exec and SIGUSR1 only", out.String())
	}
	if res.Emitted != 2 || res.Stats.Lost[tracer.LostKernel] != 3 || res.StatsFile.EventsSeen != 2 || res.StatsFile.Lost["kernel"] != 3 {
		t.Errorf("result %+v", res)
	}
	if started != 1 || !strings.HasPrefix(strings.Join(f.calls, ","), "start,run,close") {
		t.Errorf("Started called %d times; backend calls %v", started, f.calls)
	}
}

// --ancestry adds the ancestors earlier events named.
func TestRunAncestry(t *testing.T) {
	// A fork by sh (exec id 10/100), then its child's exec.
	sh, child := tracer.ExecID{PID: 10, Start: 100}, tracer.ExecID{PID: 11, Start: 200}
	f := &fake{events: []tracer.Event{
		{Backend: "fake", Type: vocab.TypeFork, PID: 10, Comm: "sh", ChildPID: 11, ExecID: sh},
		{Backend: "fake", Type: vocab.TypeExec, PID: 11, Comm: "sh", Filename: "/bin/true", ExecID: child, ParentExecID: sh},
	}}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := Run(ctx, Options{Backend: f, Config: tracer.DefaultConfig(), Format: "json", Output: &out, Ancestry: 2}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"ancestors":[{"pid":10,"comm":"sh"`) {
		t.Errorf("no ancestors in %q", out.String())
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

// A reader that went away ends the watch normally, without waiting for
// ctx. Any other write error (a full disk) does not end it: the events
// are counted lost at stage output, and the watch goes on until ctx ends.
func TestRunOutputFails(t *testing.T) {
	f := &fake{events: events()}
	res, err := Run(context.Background(), Options{Backend: f, Config: tracer.DefaultConfig(), Format: "text", Output: failWriter{syscall.EPIPE}})
	if err != nil || res == nil {
		t.Errorf("write error EPIPE: Run returned %v, %v", res, err)
	}
	f = &fake{events: events()}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err = Run(ctx, Options{Backend: f, Config: tracer.DefaultConfig(), Format: "text", Output: failWriter{syscall.ENOSPC}})
	if err != nil || res == nil || ctx.Err() == nil {
		t.Fatalf("write error ENOSPC: Run returned %v, %v before its context ended (%v)", res, err, ctx.Err())
	}
	if lost := res.Stats.Lost[tracer.LostOutput]; lost != uint64(len(events())) {
		t.Errorf("write error ENOSPC: %d lost at stage output, want the %d events", lost, len(events()))
	}
}

// A backend that cannot start is closed, and its error comes back.
func TestRunStartFails(t *testing.T) {
	f := &fake{startErr: vocab.Usagef("no BTF (%w)", syscall.ENOENT)}
	var out bytes.Buffer
	res, err := Run(context.Background(), Options{Backend: f, Config: tracer.DefaultConfig(), Format: "text", Output: &out})
	if res != nil || !errors.Is(err, vocab.ErrUsage) || !errors.Is(err, syscall.ENOENT) {
		t.Errorf("Run: %v, %v", res, err)
	}
	if strings.Join(f.calls, ",") != "start,close" {
		t.Errorf("backend calls %v", f.calls)
	}
	if _, err := Run(context.Background(), Options{Backend: &fake{}, Config: tracer.DefaultConfig(), Format: "xml", Output: &out}); !errors.Is(err, vocab.ErrUsage) {
		t.Errorf("unknown format: %v", err)
	}
}
