// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/sink"
	"github.com/tracer-dev/tracer/tracer/vocab"

	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// fakeBackend is a tracer.Backend whose Stats the test sets.
type fakeBackend struct {
	name string
	mu   sync.Mutex
	st   tracer.Stats
}

func (f *fakeBackend) Name() string { return f.name }

// Capabilities: a fake named audit is audit-like, as the real one says.
func (f *fakeBackend) Capabilities() tracer.Capabilities {
	audit := f.name == "audit"
	return tracer.Capabilities{AuditQueue: audit, NoiseOnlyCounted: audit}
}
func (f *fakeBackend) Start(tracer.Config) error { return nil }
func (f *fakeBackend) Run(ctx context.Context, emit func(*tracer.Event)) error {
	<-ctx.Done()
	return nil
}
func (f *fakeBackend) Close() error { return nil }
func (f *fakeBackend) Stats() tracer.Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.st
	st.Programs = slices.Clone(f.st.Programs)
	return st
}

// failSink fails every write, so that the pipeline counts output loss.
type failSink struct{}

func (failSink) Write(*tracer.Event) error { return errors.New("disk full") }
func (failSink) Flush() error              { return nil }
func (failSink) Close() error              { return nil }

// values gathers reg into "name{label="value",...}" -> value, labels sorted
// by name as the registry sorts them.
func values(t *testing.T, reg prometheus.Gatherer, prefix string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), prefix) {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, lp := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			key := mf.GetName() + "{" + strings.Join(ls, ",") + "}"
			if _, dup := out[key]; dup {
				t.Errorf("series %s appears twice", key)
			}
			switch {
			case m.Counter != nil:
				out[key] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[key] = m.Gauge.GetValue()
			case m.Histogram != nil:
				// The observations; TestEventDelayHistogram reads buckets.
				out[key] = float64(m.Histogram.GetSampleCount())
			default:
				t.Errorf("%s: unexpected metric kind", key)
			}
		}
	}
	return out
}

func diffValues(t *testing.T, got, want map[string]float64) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[k]; !ok {
			t.Errorf("missing %s (want %v)", k, want[k])
		} else if g != want[k] {
			t.Errorf("%s = %v, want %v", k, g, want[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected %s = %v", k, got[k])
		}
	}
}

// emitN sends n events of type typ and comm through p.
func emitN(p *tracer.Pipeline, n int, typ vocab.Type, comm string, sig int) {
	for range n {
		e := tracer.Event{Backend: "audit", Type: typ, Comm: comm, Signal: sig, PID: 42}
		p.Emit(&e)
	}
}

func TestCollectorAudit(t *testing.T) {
	var out bytes.Buffer
	cfg := tracer.DefaultConfig()
	cfg.Signals, _ = vocab.ParseSignals("USR1")
	p := tracer.NewPipeline(cfg, sink.NewJSONSink(&out))
	b := &fakeBackend{name: "audit"}
	b.st.Events[vocab.TypeExec] = 7
	b.st.Events[vocab.TypeFork] = 3
	b.st.Events[vocab.TypeSignal] = 9
	b.st.Lost[tracer.LostKernel] = 11
	b.st.Lost[tracer.LostRingbuf] = 12
	b.st.Lost[tracer.LostReassembly] = 13
	b.st.LowerBound[tracer.LostRingbuf] = true
	b.st.AuditBacklog, b.st.AuditBacklogLimit, b.st.AuditKernelLost = 5, 8192, 1234
	b.st.Throttled[vocab.TypeSignal] = 14
	s, err := New(p, b, Options{Version: "1.2.3"})
	if err != nil {
		t.Fatal(err)
	}

	emitN(p, 7, vocab.TypeExec, "sh", 0)
	emitN(p, 3, vocab.TypeFork, "sh", 0)
	emitN(p, 4, vocab.TypeSignal, "kill", 10) // SIGUSR1: kept
	emitN(p, 5, vocab.TypeSignal, "kill", 12) // SIGUSR2: filtered out
	emitN(p, 2, vocab.TypeExit, "sh", 0)      // exit is not in the default --events
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}

	// The exported counters must agree with the lines the sink wrote.
	lines := map[string]float64{}
	for l := range strings.Lines(out.String()) {
		for _, typ := range vocab.AllTypes {
			if strings.Contains(l, `"type":"`+typ.String()+`"`) {
				lines[typ.String()]++
			}
		}
	}
	if lines["exec"] != 7 || lines["fork"] != 3 || lines["signal"] != 4 || lines["exit"] != 0 {
		t.Fatalf("sink wrote %v, want exec 7 fork 3 signal 4", lines)
	}

	want := map[string]float64{
		`tracer_events_total{backend="audit",type="exec"}`:                          lines["exec"],
		`tracer_events_total{backend="audit",type="fork"}`:                          lines["fork"],
		`tracer_events_total{backend="audit",type="signal"}`:                        lines["signal"],
		`tracer_events_total{backend="audit",type="exit"}`:                          lines["exit"],
		`tracer_backend_events_total{backend="audit",type="exec"}`:                  7,
		`tracer_backend_events_total{backend="audit",type="fork"}`:                  3,
		`tracer_backend_events_total{backend="audit",type="signal"}`:                9,
		`tracer_backend_events_total{backend="audit",type="exit"}`:                  0,
		`tracer_events_lost_total{backend="audit",stage="kernel"}`:                  11,
		`tracer_events_lost_total{backend="audit",stage="ringbuf"}`:                 12,
		`tracer_events_lost_total{backend="audit",stage="reassembly"}`:              13,
		`tracer_events_lost_total{backend="audit",stage="queue"}`:                   0,
		`tracer_events_lost_total{backend="audit",stage="output"}`:                  0,
		`tracer_events_lost_lower_bound{backend="audit",stage="kernel"}`:            0,
		`tracer_events_lost_lower_bound{backend="audit",stage="ringbuf"}`:           1,
		`tracer_events_lost_lower_bound{backend="audit",stage="reassembly"}`:        0,
		`tracer_events_lost_lower_bound{backend="audit",stage="queue"}`:             0,
		`tracer_events_lost_lower_bound{backend="audit",stage="output"}`:            0,
		`tracer_events_filtered_total{backend="audit",reason="runtime-preemption"}`: 0,
		`tracer_events_filtered_total{backend="audit",reason="existence-check"}`:    0,
		`tracer_events_throttled_total{backend="audit",type="exec"}`:                0,
		`tracer_events_throttled_total{backend="audit",type="fork"}`:                0,
		`tracer_events_throttled_total{backend="audit",type="signal"}`:              14,
		`tracer_events_throttled_total{backend="audit",type="exit"}`:                0,
		`tracer_output_rotations_failed_total{backend="audit"}`:                     0,
		`tracer_audit_backlog{}`:                                                    5,
		`tracer_audit_backlog_limit{}`:                                              8192,
		`tracer_audit_kernel_lost{}`:                                                1234,
		// Events without a time are not timed.
		`tracer_event_delay_seconds{backend="audit"}`:                                              0,
		`tracer_build_info{backend="audit",goversion="` + runtime.Version() + `",version="1.2.3"}`: 1,
		// CauseSink: the emitted signals (no origin said: counted as user) and exits.
		`tracer_signals_total{origin="user",signal="SIGUSR1"}`: lines["signal"],
		`tracer_exits_total{cause="exit"}`:                     0,
		`tracer_exits_total{cause="signal"}`:                   0,
		`tracer_exits_total{cause="oom"}`:                      0,
		`tracer_exits_total{cause="core"}`:                     0,
		// The metrics address was free.
		`tracer_metrics_listen_failures_total{}`: 0,
	}
	diffValues(t, values(t, s.Registry(), "tracer_"), want)

	// Scrape time reads: later changes show on the next scrape.
	b.mu.Lock()
	b.st.AuditBacklog = 77
	b.st.Lost[tracer.LostKernel] = 20
	b.mu.Unlock()
	emitN(p, 1, vocab.TypeExec, "sh", 0)
	want[`tracer_audit_backlog{}`] = 77
	want[`tracer_events_lost_total{backend="audit",stage="kernel"}`] = 20
	want[`tracer_events_total{backend="audit",type="exec"}`] = 8
	diffValues(t, values(t, s.Registry(), "tracer_"), want)
}

func TestCollectorEBPFAndOutputLoss(t *testing.T) {
	cfg := tracer.DefaultConfig()
	p := tracer.NewPipeline(cfg, failSink{}, sink.NewJSONSink(io.Discard))
	b := &fakeBackend{name: "ebpf"}
	b.st.Lost[tracer.LostRingbuf] = 3
	s, err := New(p, b, Options{Version: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	emitN(p, 6, vocab.TypeFork, "make", 0)

	got := values(t, s.Registry(), "tracer_")
	// failSink fails each of the 6 writes: output loss is the pipeline's count.
	if v := got[`tracer_events_lost_total{backend="ebpf",stage="output"}`]; v != float64(p.LostOutput()) || v != 6 {
		t.Errorf("output loss %v, want pipeline's %d (6)", v, p.LostOutput())
	}
	if v := got[`tracer_events_lost_total{backend="ebpf",stage="ringbuf"}`]; v != 3 {
		t.Errorf("ringbuf loss %v, want 3", v)
	}
	if v := got[`tracer_events_total{backend="ebpf",type="fork"}`]; v != 6 {
		t.Errorf("fork events %v, want 6", v)
	}
	for k := range got {
		if strings.HasPrefix(k, "tracer_audit_") {
			t.Errorf("ebpf backend exports audit gauge %s", k)
		}
		if strings.HasPrefix(k, "tracer_bpf_program_") {
			t.Errorf("program stats exported without --bpf-stats: %s", k)
		}
	}

	// With --bpf-stats the backend reports programs; two of one name are summed.
	b.mu.Lock()
	b.st.Programs = []tracer.ProgramStats{
		{Name: "sched_process_exec", RunTime: 0.25, RunCount: 1000},
		{Name: "sys_enter_kill", RunTime: 0.5, RunCount: 10},
		{Name: "sys_enter_kill", RunTime: 0.125, RunCount: 5},
	}
	b.mu.Unlock()
	got = values(t, s.Registry(), "tracer_bpf_")
	diffValues(t, got, map[string]float64{
		`tracer_bpf_program_run_seconds_total{program="sched_process_exec"}`: 0.25,
		`tracer_bpf_program_runs_total{program="sched_process_exec"}`:        1000,
		`tracer_bpf_program_run_seconds_total{program="sys_enter_kill"}`:     0.625,
		`tracer_bpf_program_runs_total{program="sys_enter_kill"}`:            15,
	})
}

func TestCommSinkCap(t *testing.T) {
	cfg := tracer.DefaultConfig()
	p := tracer.NewPipeline(cfg)
	b := &fakeBackend{name: "ebpf"}
	s, err := New(p, b, Options{ByComm: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sinks) != 2 {
		t.Fatalf("New added %d sinks, want the CauseSink and the CommSink", len(p.Sinks))
	}
	want := map[string]float64{}
	key := func(comm, typ string) string {
		return fmt.Sprintf(`tracer_events_by_comm_total{backend="ebpf",comm=%q,type=%q}`, comm, typ)
	}
	// 150 comms, comm i execs i+1 times; the first 100 get their own label.
	for i := range 150 {
		comm := fmt.Sprintf("c%03d", i)
		emitN(p, i+1, vocab.TypeExec, comm, 0)
		label := comm
		if i >= MaxComms {
			label = OtherComm
		}
		want[key(label, "exec")] += float64(i + 1)
	}
	// A known comm keeps its label after the cap is reached.
	emitN(p, 4, vocab.TypeFork, "c000", 0)
	want[key("c000", "fork")] = 4
	// A late comm goes to other for every type.
	emitN(p, 2, vocab.TypeSignal, "late", 9)
	want[key(OtherComm, "signal")] = 2
	diffValues(t, values(t, s.Registry(), "tracer_events_by_comm_total"), want)

	// 100 exec series, c000 fork, other exec, other signal.
	if n := len(values(t, s.Registry(), "tracer_events_by_comm_total")); n != MaxComms+3 {
		t.Errorf("%d by-comm series, want %d", n, MaxComms+3)
	}
}

func TestCommSinkInvalidUTF8(t *testing.T) {
	c := NewCommSink("audit")
	for _, comm := range []string{"a\xffb", "a\xfeb", "ok"} {
		if err := c.Write(&tracer.Event{Type: vocab.TypeExec, Comm: comm}); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	diffValues(t, values(t, reg, "tracer_"), map[string]float64{
		`tracer_events_by_comm_total{backend="audit",comm="a` + "\uFFFD" + `b",type="exec"}`: 2,
		`tracer_events_by_comm_total{backend="audit",comm="ok",type="exec"}`:                 1,
	})
}

func TestCollectorPedantic(t *testing.T) {
	// The pedantic registry checks that Collect sends only described
	// metrics, with consistent labels and help.
	p := tracer.NewPipeline(tracer.DefaultConfig())
	for _, name := range []string{"audit", "ebpf"} {
		b := &fakeBackend{name: name}
		b.st.Programs = []tracer.ProgramStats{{Name: "p", RunTime: 1, RunCount: 1}}
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(NewCollector(p, b, "dev"), NewCommSink(name))
		if _, err := reg.Gather(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestHealthz(t *testing.T) {
	p := tracer.NewPipeline(tracer.DefaultConfig())
	s, err := New(p, &fakeBackend{name: "ebpf"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := get("/healthz"); code != http.StatusServiceUnavailable {
		t.Errorf("/healthz before ready: %d, want 503", code)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "tracer_events_total") {
		t.Errorf("/metrics before ready: %d, want 200 with tracer_events_total", code)
	}
	s.SetReady()
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz after ready: %d %q, want 200 \"ok\"", code, body)
	}
	if code, _ := get("/nothing"); code != http.StatusNotFound {
		t.Errorf("/nothing: %d, want 404", code)
	}
}

// TestPromtoolCheckMetrics scrapes /metrics over HTTP, as Prometheus does,
// for each backend with every optional metric present, and runs promtool's
// linter on it.
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool := tracertest.NeedTool(t, "promtool", "Debian package prometheus; cannot lint the exposition")
	for _, name := range []string{"audit", "ebpf"} {
		t.Run(name, func(t *testing.T) {
			p := tracer.NewPipeline(tracer.DefaultConfig())
			b := &fakeBackend{name: name}
			b.st.Programs = []tracer.ProgramStats{{Name: "handle_exec", RunTime: 0.5, RunCount: 3}}
			s, err := New(p, b, Options{Version: "dev", ByComm: true})
			if err != nil {
				t.Fatal(err)
			}
			emitN(p, 3, vocab.TypeExec, "sh", 0)
			ts := httptest.NewServer(s.Handler())
			defer ts.Close()
			resp, err := http.Get(ts.URL + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, want := range []string{"tracer_events_by_comm_total", "tracer_bpf_program_runs_total", "go_goroutines", "process_cpu_seconds_total"} {
				if !bytes.Contains(body, []byte(want)) {
					t.Errorf("scrape lacks %s", want)
				}
			}
			cmd := exec.Command(promtool, "check", "metrics")
			cmd.Stdin = bytes.NewReader(body)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("promtool check metrics: %v\n%s", err, out)
			}
		})
	}
}

// gatheredNames is every metric name a scrape can show, with every optional
// metric on (audit gauges, BPF program stats, by-comm counts).
func gatheredNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, name := range []string{"audit", "ebpf"} {
		p := tracer.NewPipeline(tracer.DefaultConfig())
		b := &fakeBackend{name: name}
		b.st.Programs = []tracer.ProgramStats{{Name: "p", RunTime: 1, RunCount: 1}}
		s, err := New(p, b, Options{ByComm: true})
		if err != nil {
			t.Fatal(err)
		}
		emitN(p, 1, vocab.TypeExec, "sh", 0)
		mfs, err := s.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			names[mf.GetName()] = true
		}
	}
	return names
}

// TestDocumentedMetrics checks that the metrics docs/fleet.md promises are
// all exported.
func TestDocumentedMetrics(t *testing.T) {
	names := gatheredNames(t)
	for _, want := range []string{
		"tracer_events_total", "tracer_events_lost_total", "tracer_audit_backlog",
		"tracer_audit_backlog_limit", "tracer_audit_kernel_lost", "tracer_bpf_program_run_seconds_total",
		"tracer_bpf_program_runs_total", "tracer_build_info", "tracer_events_by_comm_total",
		"tracer_exits_total", "go_goroutines", "process_cpu_seconds_total",
	} {
		if !names[want] {
			t.Errorf("%s is not exported", want)
		}
	}
}

// TestDashboardMetricsExist checks that the Grafana dashboard in deploy/
// queries only metrics the collectors really export (deploy/'s own test
// checks it against the documented list).
func TestDashboardMetricsExist(t *testing.T) {
	data, err := os.ReadFile("../../deploy/grafana/tracer-dashboard.json")
	if err != nil {
		t.Fatalf("reading the dashboard: %v", err)
	}
	names := gatheredNames(t)
	used := regexp.MustCompile(`(?:^|[^$\w])((?:tracer|process|go)_\w+)`).FindAllSubmatch(data, -1)
	if len(used) < 8 {
		t.Fatalf("found only %d metric references in the dashboard", len(used))
	}
	for _, m := range used {
		if !names[string(m[1])] {
			t.Errorf("dashboard queries %s, which is not exported", m[1])
		}
	}
}

// TestScrapeWhileEmitting scrapes while the pipeline emits (run it with
// -race): the final scrape has the exact totals.
func TestScrapeWhileEmitting(t *testing.T) {
	p := tracer.NewPipeline(tracer.DefaultConfig(), sink.NewJSONSink(io.Discard))
	b := &fakeBackend{name: "ebpf"}
	s, err := New(p, b, Options{ByComm: true})
	if err != nil {
		t.Fatal(err)
	}
	const n = 20000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			e := tracer.Event{Type: vocab.TypeFork, Comm: fmt.Sprintf("c%d", i%150)}
			p.Emit(&e)
		}
	}()
	scrapes := 0
	for running := true; running; scrapes++ {
		select {
		case <-done:
			running = false
		default:
		}
		if _, err := s.Registry().Gather(); err != nil {
			t.Fatal(err)
		}
	}
	got := values(t, s.Registry(), "tracer_")
	if v := got[`tracer_events_total{backend="ebpf",type="fork"}`]; v != n {
		t.Errorf("tracer_events_total fork = %v after %d scrapes, want %d", v, scrapes, n)
	}
	var byComm float64
	for k, v := range got {
		if strings.HasPrefix(k, "tracer_events_by_comm_total") {
			byComm += v
		}
	}
	if byComm != n {
		t.Errorf("by-comm counts sum to %v, want %d", byComm, n)
	}
}

// tracer_event_delay_seconds counts the events handed to the output by
// their delay from the kernel's time: events 30 ms old are over 25 ms,
// under 50 ms; signals are timed one in 16.
func TestEventDelayHistogram(t *testing.T) {
	p := tracer.NewPipeline(tracer.DefaultConfig(), sink.NewJSONSink(io.Discard))
	s, err := New(p, &fakeBackend{name: "ebpf"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-30 * time.Millisecond)
	for range 10 {
		p.Emit(&tracer.Event{Type: vocab.TypeExec, Time: at})
	}
	for range 32 {
		p.Emit(&tracer.Event{Type: vocab.TypeSignal, Time: at})
	}
	mfs, err := s.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "tracer_event_delay_seconds" {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		if h.GetSampleCount() != 12 {
			t.Errorf("%d observations, want 12 (10 execs, 2 of 32 signals)", h.GetSampleCount())
		}
		if sum := h.GetSampleSum(); sum < 12*0.030 || sum > 12*0.5 {
			t.Errorf("sum %v s, want about 12 * 0.030", sum)
		}
		for _, b := range h.GetBucket() {
			want := uint64(0)
			if b.GetUpperBound() >= 0.05 {
				want = 12
			}
			if b.GetCumulativeCount() != want {
				t.Errorf("bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
			}
		}
		return
	}
	t.Fatal("no tracer_event_delay_seconds")
}

// chooserBackend is an eBPF-like backend that says what it chose at Start.
type chooserBackend struct {
	fakeBackend
	choices []tracer.Choice
}

func (c *chooserBackend) Choices() []tracer.Choice { return c.choices }

// The eBPF backend's choices are gauges of value 1 labelled by each: one
// transport, and the attach kinds of the event probes, the process tree's
// and who-killed-it's (once each); nothing before Start.
func TestCollectorEBPFChoices(t *testing.T) {
	p := tracer.NewPipeline(tracer.DefaultConfig(), sink.NewJSONSink(io.Discard))
	b := &chooserBackend{fakeBackend: fakeBackend{name: "ebpf"}}
	s, err := New(p, b, Options{Version: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	diffValues(t, values(t, s.Registry(), "tracer_ebpf_"), map[string]float64{})
	b.choices = []tracer.Choice{{Name: "transport", Value: "perfbuf"}, {Name: "attach", Value: "tracepoint"},
		{Name: "track", Value: "raw_tp"}, {Name: "global_data", Value: "constants"}, {Name: "attribution", Value: "none"}, {Name: "btf", Value: "kernel"}}
	diffValues(t, values(t, s.Registry(), "tracer_ebpf_"), map[string]float64{
		`tracer_ebpf_transport{transport="perfbuf"}`: 1,
		`tracer_ebpf_attach{attach="tracepoint"}`:    1,
		`tracer_ebpf_attach{attach="raw_tp"}`:        1,
	})
	b.choices = []tracer.Choice{{Name: "transport", Value: "ringbuf"}, {Name: "attach", Value: "tp_btf"}, {Name: "track", Value: "tp_btf"}, {Name: "attribution", Value: "tp_btf"}}
	diffValues(t, values(t, s.Registry(), "tracer_ebpf_"), map[string]float64{
		`tracer_ebpf_transport{transport="ringbuf"}`: 1,
		`tracer_ebpf_attach{attach="tp_btf"}`:        1,
	})
}
