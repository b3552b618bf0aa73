// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// maxSignal is the highest signal number (SIGRTMAX).
const maxSignal = 64

// CauseSink counts emitted signals by origin and signal, and emitted exits
// by cause. Appended to a Pipeline's Sinks it sees exactly the events the
// output gets; it exports tracer_signals_total{origin,signal} and
// tracer_exits_total{cause}. Both label sets are bounded: two origins by
// 65 signal names, four causes.
type CauseSink struct {
	signalsDesc, exitsDesc *prometheus.Desc
	signals                [2][maxSignal + 1]atomic.Uint64 // [user, kernel][signal]
	exits                  [vocab.NumExitCauses]atomic.Uint64
}

// NewCauseSink returns an empty CauseSink.
func NewCauseSink() *CauseSink {
	return &CauseSink{
		signalsDesc: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "signals_total"),
			"Signals the tracer emitted, by origin (user: sent with a syscall; kernel: faults, SIGPIPE, timers, the OOM killer) and signal.",
			[]string{"origin", "signal"}, nil),
		exitsDesc: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "exits_total"),
			"Process exits the tracer emitted, by cause: exit (an exit call), signal, oom (the OOM killer), core (a signal that dumped core).",
			[]string{"cause"}, nil),
	}
}

// Write counts e.
func (s *CauseSink) Write(e *tracer.Event) error {
	switch e.Type {
	case vocab.TypeSignal:
		if e.Signal < 0 || e.Signal > maxSignal {
			return nil
		}
		o := 0
		if e.Origin == vocab.OriginKernel {
			o = 1
		}
		s.signals[o][e.Signal].Add(1)
	case vocab.TypeExit:
		s.exits[e.Cause()].Add(1)
	}
	return nil
}

// Flush does nothing: the counters are read at scrape time.
func (s *CauseSink) Flush() error { return nil }

// Close does nothing.
func (s *CauseSink) Close() error { return nil }

// Describe sends both descriptors.
func (s *CauseSink) Describe(ch chan<- *prometheus.Desc) {
	ch <- s.signalsDesc
	ch <- s.exitsDesc
}

// Collect sends every cause, and the signals seen at least once.
func (s *CauseSink) Collect(ch chan<- prometheus.Metric) {
	for o, origin := range []string{"user", "kernel"} {
		for sig := range s.signals[o] {
			if n := s.signals[o][sig].Load(); n > 0 {
				ch <- prometheus.MustNewConstMetric(s.signalsDesc, prometheus.CounterValue, float64(n), origin, vocab.SignalName(sig))
			}
		}
	}
	for c := range s.exits {
		ch <- prometheus.MustNewConstMetric(s.exitsDesc, prometheus.CounterValue, float64(s.exits[c].Load()), vocab.ExitCause(c).String())
	}
}
