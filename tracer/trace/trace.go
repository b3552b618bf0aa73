// SPDX-License-Identifier: Apache-2.0

//go:build linux

package trace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Options says what to run and how to watch it.
type Options struct {
	// Backend watches the command; Run starts it and closes it.
	Backend tracer.Backend
	// Config holds the filters (events, signals, cgroup, backend settings);
	// Run adds the scoping to the command's tree.
	Config tracer.Config
	// Args is the command and its arguments.
	Args []string
	// Cred, when set, runs the command as that user (see LookupUser), in
	// a session of its own, on a pty of its own when it would be on a
	// terminal, with a reset environment (tracer.ResetEnv) unless KeepEnv.
	Cred    *syscall.Credential
	KeepEnv bool
	// StreamEvents has a tracer.KernelCounter deliver every event anyway,
	// for observers that count events as the pipeline sees them (metrics).
	StreamEvents bool
	// Observe, when set, is called with the pipeline before the backend
	// starts (metrics register there); the function it returns is called
	// once the backend watches. ctx ends when Run returns.
	Observe func(ctx context.Context, p *tracer.Pipeline) (ready func(), err error)
	// Self is the program whose HeldCommand runs the held step (RunHeld);
	// "" is this program (os.Executable).
	Self string
	// Stdin, Stdout and Stderr are the command's; nil is this process's own.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Result is what Run found.
type Result struct {
	// Report has the counts, the loss, the tree's rusage and the
	// command's exit status (128+N when a signal N killed it).
	Report *Report
	// PID is the command's process id, AUID the login uid it was given
	// (vocab.UnsetID when the backend follows the tree by pid).
	PID, AUID uint32
	// CloseErr is the backend's failure to remove its rules or probes: the
	// command ran and was counted, but something may be left installed
	// (tracer cleanup removes it).
	CloseErr error
}

// Run starts the command held, starts the backend scoped to the command's
// tree, lets the command exec and waits for it, then collects the counts.
// While the command runs, SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to this
// process go to the command: it decides when the trace ends. Run does not
// check privileges; the backend's Start fails without them.
func Run(ctx context.Context, o Options) (*Result, error) {
	b, cfg := o.Backend, o.Config
	if len(o.Args) == 0 {
		return nil, vocab.Usagef("no command to trace: give one after --")
	}
	scoper, byLoginUID := b.(tracer.LoginUIDScoper)
	counter, canCount := b.(tracer.KernelCounter)

	// Start the command held before exec, so that the backend is scoped
	// to it before it makes its first event.
	held, err := startHeld(o, byLoginUID)
	if err != nil {
		return nil, err
	}
	pid := uint32(held.cmd.Process.Pid)
	if byLoginUID {
		cfg.ScopeAUID = held.auid
	} else {
		cfg.PID = pid
	}
	// Count in the kernel, with no per-event transfer, unless someone
	// needs the events themselves.
	cfg.CountOnly = canCount && !o.StreamEvents

	p := tracer.NewPipeline(cfg)
	counts := tracer.NewCounts()
	p.Sinks = append(p.Sinks, tracer.CountSink{C: counts})
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready := func() {}
	if o.Observe != nil {
		if ready, err = o.Observe(ctx, p); err != nil {
			held.abort()
			return nil, err
		}
	}
	backendCfg := cfg
	backendCfg.Types = tracer.BackendTypes(cfg)
	if err := b.Start(backendCfg); err != nil {
		held.abort()
		_ = b.Close()
		return nil, err
	}
	defer b.Close()
	if byLoginUID {
		if err := scoper.LinkLoginUID(held.auid, held.cmd.Process.Pid, o.Args); err != nil {
			held.abort()
			return nil, err
		}
	}
	ready()
	runDone := make(chan error, 1)
	go func() { runDone <- b.Run(ctx, p.Emit) }()

	// Ctrl-C and friends go to the command; Run waits for it, then reports.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer func() {
		signal.Stop(sigs) // no send after it returns: closing ends the forwarder
		close(sigs)
	}()
	go func() {
		for s := range sigs {
			_ = held.cmd.Process.Signal(s)
		}
	}()

	ru, code, waitErr := held.release()
	cancel()
	runErr := <-runDone
	st := p.Stats(b)
	if cfg.CountOnly {
		if counts, err = counter.Counts(); err != nil {
			return nil, fmt.Errorf("reading counts: %w", err)
		}
		counts.Keep(cfg.Types)
	}
	closeErr := b.Close()
	if waitErr != nil {
		return nil, waitErr
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return nil, runErr
	}
	return &Result{
		Report:   &Report{Backend: b.Name(), Counts: counts, Lost: st.TotalLost(), Rusage: ru, ExitCode: code},
		PID:      pid,
		AUID:     held.auid,
		CloseErr: closeErr,
	}, nil
}
