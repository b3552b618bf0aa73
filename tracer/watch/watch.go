// SPDX-License-Identifier: Apache-2.0

// Package watch streams a backend's events through the pipeline's filters
// to a sink until the context ends, and says what was seen and lost: the
// orchestration behind `tracer watch`. Signals are the caller's: it ends
// the watch by cancelling ctx, and closes Options.Abort to stop waiting
// for a stalled output.
package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/auditstate"
	"github.com/tracer-dev/tracer/tracer/kube"
	"github.com/tracer-dev/tracer/tracer/sink"
)

// Options says what to watch and where the events go.
type Options struct {
	// Backend delivers the events; Run starts it and closes it.
	Backend tracer.Backend
	// Config holds the filters and the backend's settings.
	Config tracer.Config
	// Format is the output format, text or json (sink.NewSink), and
	// Output where the events go.
	Format string
	Output io.Writer
	// NewSink, when set, makes the sink instead of sink.NewSink(Format,
	// Output): destinations that take events rather than bytes (the
	// journal, syslog, OTLP). opts carry the watch's error callbacks.
	NewSink func(opts sink.OutputOptions) (tracer.Sink, error)
	// Time is how text lines show the time (--time).
	Time sink.TimeMode
	// Duration, when positive, ends the watch after that long.
	Duration time.Duration
	// Ancestry, when positive, adds up to that many ancestors to each
	// event (tracer.NewAncestry).
	Ancestry int
	// Abort, when closed, stops waiting for a stalled output once the
	// backend is closed (a second Ctrl-C): what is still queued is
	// counted lost at stage output.
	Abort <-chan struct{}
	// Observe, when set, is called with the pipeline before the backend
	// starts (metrics register there); the function it returns is called
	// once the backend watches. ctx ends when Run returns.
	Observe func(ctx context.Context, p *tracer.Pipeline) (ready func(), err error)
	// Started, when set, is called once the backend watches and its
	// notes are known (watch tells the user there).
	Started func()
	// StateDir, when set, is the state directory where watching tracers
	// register, to leave each other out (auditstate.StateDir).
	StateDir string
	// Note, when set, is told what the watch could not do but went on
	// without (the user is told).
	Note func(string)
	// OutputFailing, when set, is told when writes to the output start
	// failing (a full disk: the watch goes on, the events counted lost at
	// stage output), and with nil when they succeed again.
	OutputFailing func(error)
	// Kubernetes, when set, gives events of a pod's containers their pod
	// (--kubernetes): it asks the runtime in the background for as long
	// as the watch, and Note is told when it cannot.
	Kubernetes *kube.Enricher
}

// Result is what the watch saw and lost.
type Result struct {
	// Emitted is how many events passed the filters to the output.
	Emitted uint64
	// Stats has the backend's figures and the loss at every stage.
	Stats tracer.Stats
	// StatsFile is the same as --stats-file writes it.
	StatsFile tracer.StatsFile
	// CloseErr is the backend's failure to remove its rules or probes.
	CloseErr error
}

// flushEvery is how often buffered events are passed to the output when
// events are few.
const flushEvery = 200 * time.Millisecond

// Run starts the backend, delivers its events until ctx ends (or
// Duration passes, or the output's reader goes away), closes the backend,
// then flushes the output. Once the backend started, the Result is
// returned even with an error, so that the caller can still say what was
// seen and lost. A reader that went away (EPIPE: `| head`) is a normal
// end, not an error.
func Run(ctx context.Context, o Options) (*Result, error) {
	b, cfg := o.Backend, o.Config
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var (
		mu     sync.Mutex
		outErr error
	)
	// The reader going away (EPIPE) ends the watch; any other failed
	// write (a full disk) is counted and the watch goes on.
	onError := func(err error) {
		mu.Lock()
		if outErr == nil {
			outErr = err
		}
		mu.Unlock()
		stop(err)
	}
	newSink := o.NewSink
	if newSink == nil {
		newSink = func(opts sink.OutputOptions) (tracer.Sink, error) { return sink.NewSink(o.Format, o.Output, opts) }
	}
	s, err := newSink(sink.OutputOptions{
		Backpressure: cfg.Backpressure, OnError: onError, OnFailing: o.OutputFailing, Abort: o.Abort, Time: o.Time,
	})
	if err != nil {
		return nil, err
	}
	p := tracer.NewPipeline(cfg, s)
	defer p.Close()
	// Two tracers never report each other: each registers, and leaves out
	// the others it finds registered (its own process its backend leaves
	// out in the kernel).
	if o.StateDir != "" {
		// Best effort: where the directory cannot be used (a read-only
		// root filesystem without the volume), the watch goes on, and
		// says that other tracers will see this one.
		if unregister, err := registerWatch(o.StateDir); err != nil {
			if o.Note != nil {
				o.Note(fmt.Sprintf("not registered as a tracer (%v): other tracers on the node will report this one's own events", err))
			}
		} else {
			defer unregister()
		}
		p.Peers = &tracer.Peers{}
		p.Peers.Set(auditstate.Watchers(o.StateDir))
		peersCtx, stopPeers := context.WithCancel(ctx)
		defer stopPeers()
		go refreshPeers(peersCtx, o.StateDir, p.Peers)
	}
	if o.Kubernetes != nil {
		p.Pods = o.Kubernetes
		kctx, kstop := context.WithCancel(ctx)
		kdone := make(chan struct{})
		go func() {
			defer close(kdone)
			if err := o.Kubernetes.Run(kctx); err != nil && o.Note != nil {
				o.Note(fmt.Sprintf("events carry no pod fields: %v", err))
			}
		}()
		defer func() { kstop(); <-kdone }()
	}
	if o.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Duration)
		defer cancel()
	}
	ready := func() {}
	if o.Observe != nil {
		if ready, err = o.Observe(ctx, p); err != nil {
			return nil, err
		}
	}
	backendCfg := cfg
	backendCfg.Types = tracer.BackendTypes(cfg)
	if err := b.Start(backendCfg); err != nil {
		_ = b.Close()
		return nil, err
	}
	defer b.Close()
	ready()
	if o.Started != nil {
		o.Started()
	}

	emit := p.Emit
	if o.Ancestry > 0 {
		emit = tracer.NewAncestry(o.Ancestry).Wrap(emit)
	}
	if bb, ok := b.(tracer.Batcher); ok && cfg.MaxDelay > 0 {
		// Its reader waits at most half of --max-delay, and each batch
		// it reads goes out as it ends.
		bb.OnBatchEnd(p.Kick)
	} else if cfg.MaxDelay > 0 {
		// The reader waits at most half of --max-delay, the output the
		// other half, from the first event written after a kick: no
		// timer runs while nothing happens.
		p.KickWithin(cfg.MaxDelay / 2)
	} else {
		// The same with the output's own bound (audit, --max-delay 0).
		p.KickWithin(flushEvery)
	}
	runErr := b.Run(ctx, emit)
	closeErr := b.Close()
	// Every rule and probe is gone: what is left is the output, which may
	// wait on a slow reader until Abort.
	flushErr := p.Close()

	res := &Result{Emitted: p.TotalEmitted(), Stats: p.Stats(b), StatsFile: tracer.NewStatsFile(p, b), CloseErr: closeErr}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return res, runErr
	}
	if closeErr != nil {
		return res, closeErr
	}
	mu.Lock()
	werr := outErr
	mu.Unlock()
	if werr != nil {
		// The reader went away (EPIPE: `| head`): a normal end.
		if errors.Is(werr, syscall.EPIPE) {
			return res, nil
		}
		return res, fmt.Errorf("writing events: %w", werr)
	}
	if flushErr != nil && !errors.Is(flushErr, syscall.EPIPE) {
		return res, fmt.Errorf("writing events: %w", flushErr)
	}
	return res, nil
}

// peerRefresh is how often the registered tracers are read again: a tracer
// started beside this one is left out from then on.
const peerRefresh = time.Second

func refreshPeers(ctx context.Context, dir string, p *tracer.Peers) {
	tracer.Every(ctx, peerRefresh, func() { p.Set(auditstate.Watchers(dir)) })
}

// registerWatch records this process in state directory dir as a watching
// tracer (auditstate.Register), for the others to leave out; the returned
// func takes it back.
func registerWatch(dir string) (unregister func(), err error) {
	if err := auditstate.Register(dir, func(r *auditstate.Registration) { r.Watch = true }); err != nil {
		return nil, err
	}
	return func() { _ = auditstate.Unregister(dir, func(r *auditstate.Registration) { r.Watch = false }) }, nil
}
