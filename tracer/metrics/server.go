// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tracer-dev/tracer/tracer"
)

// Options configures a Server.
type Options struct {
	// Version fills tracer_build_info's version label.
	Version string
	// ByComm adds tracer_events_by_comm_total (--metrics-comm): New appends
	// a CommSink to the pipeline's sinks, so call it before events flow.
	ByComm bool
}

// Server is the tracer's /metrics and /healthz. It does not listen: the
// caller puts Handler on a listener of its choice.
type Server struct {
	reg   *prometheus.Registry
	ready atomic.Bool
	mux   *http.ServeMux
	// listenFailures counts binds of the metrics address that failed
	// (another process holds it): the caller retries rather than give up,
	// and this says how often it tried.
	listenFailures prometheus.Counter
}

// New registers the collectors for p and b on a private registry, so that
// a tracer embedded in another program exports nothing twice.
func New(p *tracer.Pipeline, b tracer.Backend, o Options) (*Server, error) {
	s := &Server{reg: prometheus.NewRegistry(), mux: http.NewServeMux(),
		listenFailures: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "metrics_listen_failures_total",
			Help: "Failed attempts to bind the metrics address (in use by another process, or not yet on the node); each is retried."}),
	}
	cs := []prometheus.Collector{
		s.listenFailures,
		NewCollector(p, b, o.Version),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}
	cause := NewCauseSink() // tracer_signals_total, tracer_exits_total
	p.Sinks = append(p.Sinks, cause)
	cs = append(cs, cause)
	if o.ByComm {
		cm := NewCommSink(b.Name())
		p.Sinks = append(p.Sinks, cm)
		cs = append(cs, cm)
	}
	for _, c := range cs {
		if err := s.reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering metrics: %w", err)
		}
	}
	s.mux.Handle("/metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	s.mux.HandleFunc("/healthz", s.healthz)
	s.mux.HandleFunc("/{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<html><head><title>tracer</title></head><body><h1>tracer</h1>` +
			`<p><a href="/metrics">metrics</a> <a href="/healthz">healthz</a></p></body></html>` + "\n"))
	})
	return s, nil
}

// Registry is the private registry, for tests and for embedding.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// Handler serves /metrics, /healthz and a small index page at /.
func (s *Server) Handler() http.Handler { return s.mux }

// ListenFailed counts a failed attempt to bind the metrics address.
func (s *Server) ListenFailed() { s.listenFailures.Inc() }

// SetReady makes /healthz answer 200: call it once rules or probes are in place.
func (s *Server) SetReady() { s.ready.Store(true) }

// healthz answers 503 until SetReady, so that a readiness probe keeps a
// pod out of service while it installs its rules or probes.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if !s.ready.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("starting: rules or probes not in place yet\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}
