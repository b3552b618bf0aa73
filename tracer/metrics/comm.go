// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// MaxComms is how many distinct comms CommSink labels; events of any
// further comm are counted under OtherComm, so the series count stays bounded.
const MaxComms = 100

// OtherComm is the comm label of events whose comm came after the first MaxComms.
const OtherComm = "other"

// CommSink counts emitted events by comm and type. Appended to a
// Pipeline's Sinks it sees exactly the events the other sinks write; it is
// also a prometheus.Collector exporting tracer_events_by_comm_total.
type CommSink struct {
	desc    *prometheus.Desc
	backend string

	mu     sync.Mutex
	byComm map[string]*typeCounts // at most MaxComms entries, keyed by label
	other  typeCounts
}

// typeCounts is one comm's counters, indexed by EventType.
type typeCounts [vocab.TypeExit + 1]uint64

// NewCommSink returns an empty CommSink for the named backend.
func NewCommSink(backend string) *CommSink {
	return &CommSink{
		desc: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "events_by_comm", "total"),
			"Events the tracer emitted, by comm and type (only with --metrics-comm; comms after the first 100 count as comm=\"other\").",
			[]string{"backend", "comm", "type"}, nil),
		backend: backend,
		byComm:  make(map[string]*typeCounts, MaxComms),
	}
}

// Write counts e. It never fails, so it never adds to output loss.
func (s *CommSink) Write(e *tracer.Event) error {
	if int(e.Type) >= len(typeCounts{}) {
		return nil
	}
	s.mu.Lock()
	c, ok := s.byComm[e.Comm]
	if !ok {
		c = s.slot(e.Comm)
	}
	c[e.Type]++
	s.mu.Unlock()
	return nil
}

// slot finds or makes the counters of a comm not found by its raw value.
// Called with mu held. Memory stays bounded: comms past the cap are not
// remembered, they only pay this slower lookup on each event.
func (s *CommSink) slot(comm string) *typeCounts {
	// A label value must be valid UTF-8; a comm need not be.
	label := strings.ToValidUTF8(comm, "\uFFFD")
	if c, ok := s.byComm[label]; ok {
		return c
	}
	if len(s.byComm) >= MaxComms || label == OtherComm {
		return &s.other
	}
	c := new(typeCounts)
	s.byComm[label] = c
	return c
}

// Flush does nothing: the counts live in memory.
func (s *CommSink) Flush() error { return nil }

// Close does nothing: the counts stay readable after the pipeline closes.
func (s *CommSink) Close() error { return nil }

// Describe sends the one descriptor.
func (s *CommSink) Describe(ch chan<- *prometheus.Desc) { ch <- s.desc }

// Collect sends one counter per comm and type that was seen.
func (s *CommSink) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	defer s.mu.Unlock()
	send := func(comm string, c *typeCounts) {
		for _, t := range vocab.AllTypes {
			if c[t] > 0 {
				ch <- prometheus.MustNewConstMetric(s.desc, prometheus.CounterValue, float64(c[t]), s.backend, comm, t.String())
			}
		}
	}
	for comm, c := range s.byComm {
		send(comm, c)
	}
	send(OtherComm, &s.other)
}
