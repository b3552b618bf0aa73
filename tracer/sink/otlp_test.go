// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	collogpb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/protobuf/proto"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// collector is an OTLP/HTTP logs endpoint: it decodes each request as a
// collector does and keeps the records; reply, when set, answers instead.
type collector struct {
	srv     *httptest.Server
	mu      sync.Mutex
	res     []map[string]any
	records []*logspb.LogRecord
	reply   func(w http.ResponseWriter, n int) bool
}

func newCollector(t *testing.T) *collector { return startCollector(t, false) }

func startCollector(t *testing.T, tls bool) *collector {
	c := &collector{}
	c.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/logs" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want protobuf at /v1/logs", http.StatusNotFound)
			return
		}
		body, err := io.ReadAll(r.Body)
		var req collogpb.ExportLogsServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n := 0
		for _, rl := range req.ResourceLogs {
			for _, sl := range rl.ScopeLogs {
				n += len(sl.LogRecords)
			}
		}
		if c.reply != nil && c.reply(w, n) {
			return
		}
		c.mu.Lock()
		for _, rl := range req.ResourceLogs {
			c.res = append(c.res, kvMap(rl.Resource.GetAttributes()))
			for _, sl := range rl.ScopeLogs {
				c.records = append(c.records, sl.LogRecords...)
			}
		}
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&collogpb.ExportLogsServiceResponse{})
		_, _ = w.Write(out)
	}))
	if tls {
		c.srv.StartTLS()
	} else {
		c.srv.Start()
	}
	t.Cleanup(c.srv.Close)
	return c
}

func (c *collector) target() string {
	if c.srv.TLS != nil {
		return "otlps://" + c.srv.Listener.Addr().String()
	}
	return "otlp://" + c.srv.Listener.Addr().String()
}

func (c *collector) got() []*logspb.LogRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*logspb.LogRecord(nil), c.records...)
}

// kvMap turns OTLP attributes into what encoding/json makes of JSON.
func kvMap(kvs []*commonpb.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = anyValue(kv.Value)
	}
	return m
}

func anyValue(v *commonpb.AnyValue) any {
	switch x := v.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return float64(x.IntValue)
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_ArrayValue:
		a := []any{}
		for _, e := range x.ArrayValue.Values {
			a = append(a, anyValue(e))
		}
		return a
	case *commonpb.AnyValue_KvlistValue:
		return kvMap(x.KvlistValue.Values)
	}
	return fmt.Sprintf("unexpected %T", v.Value)
}

// flatJSON is what the attributes of an ECS document should be: its
// objects flattened to dotted keys, but for @timestamp and nulls.
func flatJSON(t *testing.T, doc []byte) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatalf("ECS document is not JSON: %v\n%s", err, doc)
	}
	out := map[string]any{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			if sub, ok := v.(map[string]any); ok {
				walk(prefix+k+".", sub)
				continue
			}
			if v == nil {
				continue
			}
			out[prefix+k] = v
		}
	}
	walk("", m)
	delete(out, "@timestamp")
	return out
}

func otlpEvents() []*tracer.Event {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	id := func(pid uint32, start uint64) tracer.ExecID { return tracer.ExecID{PID: pid, Start: start} }
	return []*tracer.Event{
		{Time: t0, Backend: "ebpf", Type: vocab.TypeExec, PID: 42, Comm: "sh", UID: 1000, AUID: 1000, PPID: 41,
			Filename: "/usr/bin/curl", Argv: []string{"curl", "-s", "a b", "\xff\n\x1b[31m\u2028"},
			ExecID: id(42, 7), ParentExecID: id(41, 5), Cgroup: "/system.slice/x.service", Unit: "x.service",
			Ancestors: []tracer.Ancestor{{PID: 41, Comm: "bash", ExecID: id(41, 5)}, {PID: 1, Comm: "systemd", ExecID: id(1, 1)}}},
		{Time: t0.Add(time.Millisecond), Backend: "audit", Type: vocab.TypeExec, PID: 43, Comm: "sh", UID: 0, AUID: vocab.UnsetID,
			PPID: 41, Filename: "/nope", Argv: []string{"nope"}, Ret: -2, ArgvTruncated: true},
		{Time: t0.Add(2 * time.Millisecond), Backend: "ebpf", Type: vocab.TypeFork, PID: 41, Comm: "bash", ChildPID: 44,
			Syscall: "clone", ExecID: id(41, 5)},
		{Time: t0.Add(3 * time.Millisecond), Backend: "ebpf", Type: vocab.TypeSignal, PID: 41, Comm: "bash", TargetPID: 44,
			Signal: 10, Syscall: "kill", HasCode: true, Code: 0, Origin: vocab.OriginUser, TargetComm: "sleep", TargetExecID: id(44, 9)},
		{Time: t0.Add(4 * time.Millisecond), Backend: "ebpf", Type: vocab.TypeExit, PID: 44, Comm: "sleep", Signal: 9,
			KilledBy: tracer.KilledBy{Origin: vocab.OriginUser, PID: 41, Comm: "bash", Syscall: "kill"}},
		{Time: t0.Add(5 * time.Millisecond), Backend: "ebpf", Type: vocab.TypeExit, PID: 45, Comm: "true", ExitCode: 3},
	}
}

// TestOTLPRecordsAreTheECSDocuments: every event reaches the collector as
// one record whose attributes are its ECS document flattened (arrays as
// arrays, the ancestors as a list of maps), with the event's time, the
// journal's message as body, and the resource naming tracer and the node.
func TestOTLPRecordsAreTheECSDocuments(t *testing.T) {
	c := newCollector(t)
	s, err := NewOTLPSink(c.target(), OutputOptions{}, OTLPOptions{Version: "v9.9.9-test"})
	if err != nil {
		t.Fatal(err)
	}
	evs := otlpEvents()
	for _, e := range evs {
		if err := s.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	// The backend reuses its event: the queued copy must not change.
	evs[0].Argv[0] = "overwritten"
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	evs[0].Argv[0] = "curl"
	if l := s.Loss(); l != (tracer.OutputLoss{}) {
		t.Errorf("loss %+v, want none", l)
	}
	got := c.got()
	if len(got) != len(evs) {
		t.Fatalf("collector got %d records, want %d", len(got), len(evs))
	}
	host, _ := hostnameForTest()
	for _, res := range c.res {
		if res["service.name"] != "tracer" || res["service.version"] != "v9.9.9-test" || res["host.name"] != host {
			t.Errorf("resource %v", res)
		}
	}
	for i, r := range got {
		e := evs[i]
		want := flatJSON(t, AppendECS(nil, e))
		attrs := kvMap(r.Attributes)
		wj, _ := json.Marshal(want)
		gj, _ := json.Marshal(attrs)
		if string(wj) != string(gj) {
			t.Errorf("event %d (%s): attributes\n got %s\nwant %s", i, e.Type, gj, wj)
		}
		if r.TimeUnixNano != uint64(e.Time.UnixNano()) {
			t.Errorf("event %d: time %d, want %d", i, r.TimeUnixNano, e.Time.UnixNano())
		}
		if body := r.Body.GetStringValue(); body != string(appendMessage(nil, e)) {
			t.Errorf("event %d: body %q, want %q", i, body, appendMessage(nil, e))
		}
		if r.SeverityNumber == logspb.SeverityNumber_SEVERITY_NUMBER_UNSPECIFIED || r.SeverityText == "" {
			t.Errorf("event %d: no severity", i)
		}
	}
	if a := kvMap(got[0].Attributes); a["process.entity_id"] != evs[0].ExecID.String() || a["process.pid"] != float64(42) {
		t.Errorf("exec attributes %v", a)
	}
	if args, _ := kvMap(got[0].Attributes)["process.args"].([]any); len(args) != 4 || args[2] != "a b" {
		t.Errorf("process.args %v, want 4 arguments as a slice", kvMap(got[0].Attributes)["process.args"])
	}
}

func hostnameForTest() (string, error) {
	var doc struct {
		Host struct{ Name string } `json:"host"`
	}
	err := json.Unmarshal(AppendECS(nil, otlpEvents()[0]), &doc)
	return doc.Host.Name, err
}

// TestOTLPOutputWinsOverTheEnvironment: the SDK's endpoint variables do
// not redirect what --output names; OTEL_RESOURCE_ATTRIBUTES adds to the
// resource.
func TestOTLPOutputWinsOverTheEnvironment(t *testing.T) {
	c := newCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://elsewhere.invalid:1/prefix")
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "false")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "k8s.node.name=node-7")
	s, err := NewOTLPSink(c.target(), OutputOptions{}, OTLPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writeN(t, s, 3)
	s.Close()
	if l := s.Loss(); l != (tracer.OutputLoss{}) || len(c.got()) != 3 {
		t.Fatalf("loss %+v, %d records, want 3 and none lost", l, len(c.got()))
	}
	if r := c.res[0]; r["k8s.node.name"] != "node-7" || r["service.name"] != "tracer" {
		t.Errorf("resource %v", r)
	}
}

// TestOTLPOverTLS: otlps:// speaks TLS and checks the collector's
// certificate, against OTEL_EXPORTER_OTLP_CERTIFICATE's CA where set:
// without it the test collector's certificate is refused.
func TestOTLPOverTLS(t *testing.T) {
	c := startCollector(t, true)
	s, err := NewOTLPSink(c.target(), OutputOptions{}, OTLPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writeN(t, s, 3)
	s.Close()
	if l := s.Loss(); l.Output != 3 || len(c.got()) != 0 {
		t.Errorf("an unknown CA: loss %+v, %d records; want all 3 refused", l, len(c.got()))
	}

	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", ca)
	if s, err = NewOTLPSink(c.target(), OutputOptions{}, OTLPOptions{}); err != nil {
		t.Fatal(err)
	}
	writeN(t, s, 3)
	s.Close()
	if l := s.Loss(); l != (tracer.OutputLoss{}) || len(c.got()) != 3 {
		t.Errorf("the collector's CA: loss %+v, %d records; want 3, none lost", l, len(c.got()))
	}
}

// writeN writes n events and says how long the slowest Write took.
func writeN(t *testing.T, s tracer.Sink, n int) time.Duration {
	t.Helper()
	var slowest time.Duration
	e := otlpEvents()[0]
	for i := 0; i < n; i++ {
		e.PID = uint32(1000 + i)
		start := time.Now()
		if err := s.Write(e); err != nil {
			t.Fatal(err)
		}
		slowest = max(slowest, time.Since(start))
	}
	return slowest
}

// TestOTLPCollectorDown: with nothing listening, every event is counted
// lost at stage output, and Close returns at once.
func TestOTLPCollectorDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var failing []error
	var mu sync.Mutex
	s, err := NewOTLPSink("otlp://"+addr, OutputOptions{OnFailing: func(err error) {
		mu.Lock()
		failing = append(failing, err)
		mu.Unlock()
	}}, OTLPOptions{CloseTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	writeN(t, s, n)
	// The failure is reported while the sink goes on.
	said := func() []error {
		mu.Lock()
		defer mu.Unlock()
		return append([]error(nil), failing...)
	}
	for deadline := time.Now().Add(20 * time.Second); len(said()) == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if f := said(); len(f) == 0 || f[0] == nil || !strings.Contains(f[0].Error(), "connection refused") {
		t.Errorf("OnFailing calls %v, want one saying connection refused", f)
	}
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %v with the collector down, bound 1 s", d)
	}
	if l := s.Loss(); l.Output+l.Queue != n || l.Output == 0 {
		t.Errorf("loss %+v, want all %d events (at stage output)", l, n)
	}
}

// TestOTLPCollectorRefuses: a collector that answers 400 takes nothing:
// all lost at stage output.
func TestOTLPCollectorRefuses(t *testing.T) {
	c := newCollector(t)
	c.reply = func(w http.ResponseWriter, _ int) bool {
		http.Error(w, "no", http.StatusBadRequest)
		return true
	}
	s, err := NewOTLPSink(c.target(), OutputOptions{}, OTLPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writeN(t, s, 2500)
	s.Close()
	if l := s.Loss(); l != (tracer.OutputLoss{Output: 2500}) {
		t.Errorf("loss %+v, want output 2500", l)
	}
}

// TestOTLPPartialSuccess: the records a collector says it rejected are
// counted, the others are not.
func TestOTLPPartialSuccess(t *testing.T) {
	c := newCollector(t)
	c.reply = func(w http.ResponseWriter, n int) bool {
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&collogpb.ExportLogsServiceResponse{
			PartialSuccess: &collogpb.ExportLogsPartialSuccess{RejectedLogRecords: 2, ErrorMessage: "two too many"}})
		_, _ = w.Write(out)
		return true
	}
	s, err := NewOTLPSink(c.target(), OutputOptions{}, OTLPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writeN(t, s, 10)
	s.Close()
	if l := s.Loss(); l != (tracer.OutputLoss{Output: 2}) {
		t.Errorf("loss %+v, want output 2", l)
	}
}

// TestOTLPSlowCollector: a collector that never answers costs no Write
// any waiting; what did not go out is counted lost (a full queue at
// stage queue, the rest at output) and Close returns within its bound.
func TestOTLPSlowCollector(t *testing.T) {
	c := newCollector(t)
	release := make(chan struct{})
	c.reply = func(http.ResponseWriter, int) bool {
		<-release
		return false
	}
	defer close(release)
	s, err := NewOTLPSink(c.target(), OutputOptions{}, OTLPOptions{QueueEvents: 4096, CloseTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	const n = 20000
	slowest := writeN(t, s, n)
	if slowest > 100*time.Millisecond {
		t.Errorf("a Write took %v with the collector stalled", slowest)
	}
	start := time.Now()
	s.Close()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %v, want about its 1 s bound", d)
	}
	l := s.Loss()
	if l.Queue+l.Output != n || l.Queue == 0 || l.Output == 0 {
		t.Errorf("loss %+v, want all %d, some at queue and some at output", l, n)
	}
	if got := len(c.got()); got != 0 {
		t.Errorf("collector kept %d records", got)
	}
}

// TestOTLPQueueBoundedByBytes: large events into a stalled collector
// fill the queue up to its bytes, not its 16,384 events; the rest is lost
// at stage queue.
func TestOTLPQueueBoundedByBytes(t *testing.T) {
	c := newCollector(t)
	release := make(chan struct{})
	c.reply = func(http.ResponseWriter, int) bool {
		<-release
		return false
	}
	defer close(release)
	const queueBytes = 256 << 10
	s, err := NewOTLPSink(c.target(), OutputOptions{QueueBytes: queueBytes}, OTLPOptions{CloseTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e := otlpEvents()[0]
	e.Filename = strings.Repeat("f", 1024)
	e.Cgroup = strings.Repeat("c", 1024)
	e.Argv = []string{strings.Repeat("a", 2500)}
	const n = 20000
	most := 0
	for i := range n {
		e.PID = uint32(1000 + i)
		if err := s.Write(e); err != nil {
			t.Fatal(err)
		}
		most = max(most, int(s.q.heldEvents.Load()))
	}
	// Each event holds 4.5 KB of strings and more.
	if limit := queueBytes / 4500; most > limit {
		t.Errorf("%d events of 4.5 KB queued, bound %d KiB: want at most %d", most, queueBytes>>10, limit)
	}
	s.Close()
	if l := s.Loss(); l.Queue == 0 || l.Queue+l.Output != n {
		t.Errorf("loss %+v, want all %d, some at queue", l, n)
	}
}

// TestOTLPBlockWaitsForRoom: with --backpressure block a full queue
// waits for the exporter: nothing is dropped.
func TestOTLPBlockWaitsForRoom(t *testing.T) {
	c := newCollector(t)
	s, err := NewOTLPSink(c.target(), OutputOptions{Backpressure: tracer.BackpressureBlock}, OTLPOptions{QueueEvents: 64})
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	writeN(t, s, n)
	s.Close()
	if l := s.Loss(); l != (tracer.OutputLoss{}) {
		t.Errorf("loss %+v, want none", l)
	}
	if got := len(c.got()); got != n {
		t.Errorf("collector got %d records, want %d", got, n)
	}
}

func TestOTLPTargets(t *testing.T) {
	for _, tc := range []struct {
		in, endpoint, path, socket string
		secure, bad                bool
	}{
		{in: "otlp://127.0.0.1:4318", endpoint: "127.0.0.1:4318"},
		{in: "otlp://collector", endpoint: "collector:4318"},
		{in: "otlps://collector.example:443", endpoint: "collector.example:443", secure: true},
		{in: "otlp://[::1]:4318/custom/logs", endpoint: "[::1]:4318", path: "/custom/logs"},
		{in: "otlp://", bad: true},
		{in: "otlp://:4318", bad: true},
		{in: "otlp://host:99999", bad: true},
		{in: "otlp://host:http", bad: true},
		{in: "otlp://user:pw@host:4318", bad: true},
		{in: "otlp://host:4318?x=1", bad: true},
		{in: "http://host:4318", bad: true},
		{in: "otlp:/run/otelcol/otlp.sock", socket: "/run/otelcol/otlp.sock"},
		{in: "otlp:run/otlp.sock", bad: true},
		{in: "otlp:/run/", bad: true},
	} {
		tgt, err := parseOTLPTarget(tc.in)
		endpoint, secure, path := tgt.endpoint, tgt.secure, tgt.path
		if tgt.socket != tc.socket {
			t.Errorf("%q: socket %q, want %q", tc.in, tgt.socket, tc.socket)
		}
		if tc.bad {
			if err == nil || !errors.Is(err, vocab.ErrUsage) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%q: error %v, want a one-line usage error", tc.in, err)
			}
			continue
		}
		if err != nil || endpoint != tc.endpoint || secure != tc.secure || path != tc.path {
			t.Errorf("%q: %q %v %q %v, want %q %v %q", tc.in, endpoint, secure, path, err, tc.endpoint, tc.secure, tc.path)
		}
	}
}

// BenchmarkOTLPSink: an exec event through the queue, the ECS document,
// the record and the request to a local endpoint that only reads it
// (block mode: every event is exported, none dropped). cpu-us/event is
// the process's CPU time (both goroutines, GC) per event.
func BenchmarkOTLPSink(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	s, err := NewOTLPSink("otlp://"+srv.Listener.Addr().String(), OutputOptions{Backpressure: tracer.BackpressureBlock}, OTLPOptions{})
	if err != nil {
		b.Fatal(err)
	}
	e := otlpEvents()[0]
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.PID = uint32(i)
		_ = s.Write(e)
	}
	s.Close()
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-us/event")
	if l := s.Loss(); l != (tracer.OutputLoss{}) {
		b.Fatalf("loss %+v", l)
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
