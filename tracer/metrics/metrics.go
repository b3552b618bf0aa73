// SPDX-License-Identifier: Apache-2.0

// Package metrics exports a running tracer to Prometheus.
//
// Collector reads the Pipeline's counters and the Backend's Stats at scrape
// time, so /metrics always agrees with what the tracer printed: there is no
// second set of counters to drift. CommSink is the optional per-comm counter
// (--metrics-comm), a tracer.Sink with a cap on distinct comms. Server puts
// both on a private registry with the Go and process collectors and serves
// /metrics and /healthz.
package metrics

import (
	"runtime"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Namespace prefixes every metric the tracer exports.
const Namespace = "tracer"

// delayBounds are tracer_event_delay_seconds's buckets, around the default
// --max-delay (100ms).
var delayBounds = []time.Duration{
	5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
}

// Collector is a prometheus.Collector over one Pipeline and its Backend.
type Collector struct {
	p       *tracer.Pipeline
	b       tracer.Backend
	backend string
	version string

	events, backendEvents, lost, lostLower     *prometheus.Desc
	filtered, throttled, rotationsFailed       *prometheus.Desc
	auditBacklog, auditBacklogLimit, auditLost *prometheus.Desc
	auditSocketBuffer                          *prometheus.Desc
	progSeconds, progRuns                      *prometheus.Desc
	delay                                      *prometheus.Desc
	buildInfo                                  *prometheus.Desc
	// watch --kubernetes (tracer.PodSource)
	kubeMisses, kubeErrors, kubeContainers *prometheus.Desc
	ebpfTransport, ebpfAttach              *prometheus.Desc
}

// NewCollector returns the collector for p fed by b. version is the
// tracer's version for tracer_build_info.
func NewCollector(p *tracer.Pipeline, b tracer.Backend, version string) *Collector {
	fq := func(sub, name string) string { return prometheus.BuildFQName(Namespace, sub, name) }
	return &Collector{
		p: p, b: b, backend: b.Name(), version: version,
		events: prometheus.NewDesc(fq("", "events_total"),
			"Events the tracer emitted (after filtering), by type.",
			[]string{"backend", "type"}, nil),
		backendEvents: prometheus.NewDesc(fq("backend", "events_total"),
			"Events the backend delivered before user-space filtering, by type.",
			[]string{"backend", "type"}, nil),
		lost: prometheus.NewDesc(fq("events", "lost_total"),
			"Events lost on their way from the kernel to the output, by stage (kernel, ringbuf, reassembly, queue, output).",
			[]string{"backend", "stage"}, nil),
		lostLower: prometheus.NewDesc(fq("events", "lost_lower_bound"),
			"1 when the stage's tracer_events_lost_total is only a lower bound (the kernel said it dropped records but not how many).",
			[]string{"backend", "stage"}, nil),
		filtered: prometheus.NewDesc(fq("events", "filtered_total"),
			"Events left out as runtime noise, by reason (runtime-preemption: SIGURG a runtime sent its own threads; existence-check: signal 0); not loss.",
			[]string{"backend", "reason"}, nil),
		throttled: prometheus.NewDesc(fq("events", "throttled_total"),
			"Events --rate-limit left out, by type (throttle events say whose); not loss.",
			[]string{"backend", "type"}, nil),
		rotationsFailed: prometheus.NewDesc(fq("output", "rotations_failed_total"),
			"Rotations of --output FILE (--output-max-size) that failed, tried at most once a second; meanwhile FILE takes no more and its events count lost at stage output.",
			[]string{"backend"}, nil),
		auditBacklog: prometheus.NewDesc(fq("audit", "backlog"),
			"Audit records queued in the kernel, waiting for the reader (at the backend's last poll).",
			nil, nil),
		auditBacklogLimit: prometheus.NewDesc(fq("audit", "backlog_limit"),
			"The kernel's audit backlog limit (auditctl -b).",
			nil, nil),
		auditLost: prometheus.NewDesc(fq("audit", "kernel_lost"),
			"The kernel's own audit lost counter (auditctl -s lost); it counts for every audit consumer and is not reset by the tracer.",
			nil, nil),
		auditSocketBuffer: prometheus.NewDesc(fq("audit", "socket_buffer_bytes"),
			"The audit record socket's receive buffer (want: the asked size; smaller when the kernel refused SO_RCVBUFFORCE, and bursts overflow sooner).",
			[]string{"want"}, nil),
		progSeconds: prometheus.NewDesc(fq("bpf_program", "run_seconds_total"),
			"Time the kernel spent running the BPF program (only with --bpf-stats).",
			[]string{"program"}, nil),
		progRuns: prometheus.NewDesc(fq("bpf_program", "runs_total"),
			"Times the kernel ran the BPF program (only with --bpf-stats).",
			[]string{"program"}, nil),
		delay: prometheus.NewDesc(fq("event", "delay_seconds"),
			"Time from an event's kernel timestamp (the scheduler tick's on eBPF) to its hand-over to the output; --max-delay bounds it (one signal in 16 is timed).",
			[]string{"backend"}, nil),
		ebpfTransport: prometheus.NewDesc(fq("ebpf", "transport"),
			"1, labelled by the transport the eBPF backend chose from what the kernel has or --ebpf-transport forced: ringbuf or perfbuf.",
			[]string{"transport"}, nil),
		ebpfAttach: prometheus.NewDesc(fq("ebpf", "attach"),
			"1, labelled by each hook kind the eBPF backend's probes use: tp_btf, tracepoint or fentry for the events; raw_tp for the process tree without BTF tracepoints; tp_btf for deaths by a signal and their senders.",
			[]string{"attach"}, nil),
		buildInfo: prometheus.NewDesc(fq("", "build_info"),
			"A metric with a constant value 1, labelled by the tracer's version, Go version and backend.",
			[]string{"version", "goversion", "backend"}, nil),
		kubeMisses: prometheus.NewDesc(fq("kubernetes", "misses_total"),
			"Events of a container whose pod the runtime had not named yet, written without the pod fields (watch --kubernetes).",
			nil, nil),
		kubeErrors: prometheus.NewDesc(fq("kubernetes", "errors_total"),
			"Calls to the container runtime's CRI socket that failed or timed out (watch --kubernetes).",
			nil, nil),
		kubeContainers: prometheus.NewDesc(fq("kubernetes", "containers"),
			"Containers whose pod is known (watch --kubernetes).",
			nil, nil),
	}
}

// Describe sends every descriptor the collector may send.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.events, c.backendEvents, c.lost, c.lostLower, c.filtered, c.throttled, c.rotationsFailed,
		c.auditBacklog, c.auditBacklogLimit, c.auditLost, c.auditSocketBuffer, c.progSeconds, c.progRuns, c.delay, c.buildInfo,
		c.kubeMisses, c.kubeErrors, c.kubeContainers, c.ebpfTransport, c.ebpfAttach} {
		ch <- d
	}
}

// Collect reads the counters now.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	// Pipeline.Stats adds the pipeline's output loss to the backend's: the
	// same figures watch prints in its summary line.
	st := c.p.Stats(c.b)
	buckets := make(map[float64]uint64, len(delayBounds))
	for _, le := range delayBounds {
		buckets[le.Seconds()] = c.p.Delay.Below(le)
	}
	ch <- prometheus.MustNewConstHistogram(c.delay, c.p.Delay.Count(), c.p.Delay.Sum().Seconds(), buckets, c.backend)
	for _, t := range vocab.AllTypes {
		ch <- prometheus.MustNewConstMetric(c.events, prometheus.CounterValue,
			float64(c.p.Emitted(t)), c.backend, t.String())
		ch <- prometheus.MustNewConstMetric(c.backendEvents, prometheus.CounterValue,
			float64(st.EventsOf(t)), c.backend, t.String())
		ch <- prometheus.MustNewConstMetric(c.throttled, prometheus.CounterValue,
			float64(st.Throttled[t]), c.backend, t.String())
	}
	for s := tracer.LossStage(0); s < tracer.NumLossStages; s++ {
		ch <- prometheus.MustNewConstMetric(c.lost, prometheus.CounterValue,
			float64(st.Lost[s]), c.backend, s.String())
		lower := 0.0
		if st.LowerBound[s] {
			lower = 1
		}
		ch <- prometheus.MustNewConstMetric(c.lostLower, prometheus.GaugeValue, lower, c.backend, s.String())
	}
	ch <- prometheus.MustNewConstMetric(c.rotationsFailed, prometheus.CounterValue, float64(st.RotationsFailed), c.backend)
	caps := tracer.CapabilitiesOf(c.b)
	for r := vocab.FilterReason(0); r < vocab.NumFilterReasons; r++ {
		if r >= vocab.NumNoiseReasons && caps.NoiseOnlyCounted {
			continue // the backend's kernel filter leaves these out uncounted
		}
		ch <- prometheus.MustNewConstMetric(c.filtered, prometheus.CounterValue,
			float64(st.Filtered[r]), c.backend, r.String())
	}
	if caps.AuditQueue {
		ch <- prometheus.MustNewConstMetric(c.auditBacklog, prometheus.GaugeValue, float64(st.AuditBacklog))
		ch <- prometheus.MustNewConstMetric(c.auditBacklogLimit, prometheus.GaugeValue, float64(st.AuditBacklogLimit))
		ch <- prometheus.MustNewConstMetric(c.auditLost, prometheus.GaugeValue, float64(st.AuditKernelLost))
		if st.AuditSocketBufferAsked > 0 {
			ch <- prometheus.MustNewConstMetric(c.auditSocketBuffer, prometheus.GaugeValue,
				float64(st.AuditSocketBuffer), strconv.Itoa(st.AuditSocketBufferAsked))
		}
	}
	for _, ps := range mergePrograms(st.Programs) {
		ch <- prometheus.MustNewConstMetric(c.progSeconds, prometheus.CounterValue, ps.RunTime, ps.Name)
		ch <- prometheus.MustNewConstMetric(c.progRuns, prometheus.CounterValue, float64(ps.RunCount), ps.Name)
	}
	ch <- prometheus.MustNewConstMetric(c.buildInfo, prometheus.GaugeValue, 1,
		c.version, runtime.Version(), c.backend)
	if c.p.Pods != nil {
		ps := c.p.Pods.PodStats()
		ch <- prometheus.MustNewConstMetric(c.kubeMisses, prometheus.CounterValue, float64(ps.Misses))
		ch <- prometheus.MustNewConstMetric(c.kubeErrors, prometheus.CounterValue, float64(ps.Errors))
		ch <- prometheus.MustNewConstMetric(c.kubeContainers, prometheus.GaugeValue, float64(ps.Containers))
	}
	c.collectChoices(ch)
}

// collectChoices exports what a tracer.Chooser chose as labels of gauges
// of value 1; nothing before it started.
func (c *Collector) collectChoices(ch chan<- prometheus.Metric) {
	chooser, ok := c.b.(tracer.Chooser)
	if !ok {
		return
	}
	attach := map[string]bool{}
	for _, choice := range chooser.Choices() {
		switch choice.Name {
		case "transport":
			ch <- prometheus.MustNewConstMetric(c.ebpfTransport, prometheus.GaugeValue, 1, choice.Value)
		case "attach", "track", "attribution":
			// Each hook kind in use once: the event probes', the process
			// tree's (raw_tp) and who-killed-it's where they differ.
			if choice.Value != "none" && !attach[choice.Value] {
				attach[choice.Value] = true
				ch <- prometheus.MustNewConstMetric(c.ebpfAttach, prometheus.GaugeValue, 1, choice.Value)
			}
		}
	}
}

// mergePrograms sums programs that share a name (the same hook attached
// twice, e.g. per arch), since a series may appear only once per scrape.
func mergePrograms(in []tracer.ProgramStats) []tracer.ProgramStats {
	out := make([]tracer.ProgramStats, 0, len(in))
	idx := make(map[string]int, len(in))
	for _, ps := range in {
		if ps.Name == "" {
			ps.Name = "unnamed"
		}
		if i, ok := idx[ps.Name]; ok {
			out[i].RunTime += ps.RunTime
			out[i].RunCount += ps.RunCount
			continue
		}
		idx[ps.Name] = len(out)
		out = append(out, ps)
	}
	return out
}
