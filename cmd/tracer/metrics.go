package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/metrics"
)

// metricsOptions are the metrics flags besides --metrics-addr.
type metricsOptions struct {
	byComm bool // --metrics-comm
}

// startMetrics serves /metrics and /healthz on addr for the pipeline and
// backend until ctx ends; addr "" serves nothing. Call it before the backend
// starts (it may add a sink to p) and call ready once the rules or probes
// are in place: /healthz answers 503 until then. The address is bound here,
// so a bad or busy one fails before anything is installed.
func startMetrics(ctx context.Context, addr string, p *tracer.Pipeline, b tracer.Backend, opts ...metricsOptions) (ready func(), err error) {
	var o metricsOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if addr == "" {
		if o.byComm {
			return nil, tracer.Usagef("--metrics-comm needs --metrics-addr HOST:PORT")
		}
		return func() {}, nil
	}
	srv, err := metrics.New(p, b, metrics.Options{Version: version, ByComm: o.byComm})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, tracer.Usagef("cannot serve metrics on --metrics-addr %s: %v (give a free HOST:PORT, e.g. 127.0.0.1:9464)", addr, err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("metrics server stopped", "addr", addr, "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	slog.Debug("serving metrics", "addr", ln.Addr().String())
	return srv.SetReady, nil
}
