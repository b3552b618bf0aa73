// SPDX-License-Identifier: Apache-2.0

//go:build linux

// Package otlptest runs `tracer watch --output otlp://` end to end against
// the OpenTelemetry Collector's own OTLP receiver. It is a module of its
// own: the collector's packages are heavy, and only this test needs them.
package otlptest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: tracer watch loads BPF programs")
	}
}

// tracerBin is the tracer built from this repository, once per run.
var tracerBin string

// buildTracer builds ./cmd/tracer, or returns $TRACER_BIN where it is set
// (a tracer built elsewhere, e.g. bin/tracer of make build).
func buildTracer(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("TRACER_BIN"); bin != "" {
		return bin
	}
	if tracerBin != "" {
		return tracerBin
	}
	dir, err := os.MkdirTemp("", "otlptest-bin-")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "tracer")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/tracer")
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/tracer: %v\n%s", err, out)
	}
	tracerBin = bin
	return bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if tracerBin != "" {
		os.RemoveAll(filepath.Dir(tracerBin))
	}
	os.Exit(code)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startReceiver runs the collector's OTLP receiver (HTTP only) at a free
// loopback address, passing the logs it takes to next.
func startReceiver(t *testing.T, next consumer.Logs) string {
	t.Helper()
	addr := freeAddr(t)
	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlpreceiver.Config)
	cfg.Protocols.GRPC = configoptional.None[configgrpc.ServerConfig]()
	cfg.Protocols.HTTP.GetOrInsertDefault().ServerConfig.NetAddr.Endpoint = addr
	r, err := f.CreateLogs(context.Background(), receivertest.NewNopSettings(f.Type()), cfg, next)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Shutdown(context.Background()) })
	return addr
}

// watch is a running `tracer watch`.
type watch struct {
	cmd    *exec.Cmd
	lines  chan string
	said   []string
	exited chan error
	start  time.Time
}

func startWatch(t *testing.T, args ...string) *watch {
	t.Helper()
	cmd := exec.Command(buildTracer(t), append([]string{"watch", "--backend", "ebpf"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &watch{cmd: cmd, lines: make(chan string, 100), exited: make(chan error, 1), start: time.Now()}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		close(w.lines)
		w.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})
	w.waitFor(t, "watching", 60*time.Second)
	return w
}

func (w *watch) waitFor(t *testing.T, what string, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case l, ok := <-w.lines:
			if !ok {
				t.Fatalf("watch exited before it said %q: %q", what, w.said)
			}
			w.said = append(w.said, l)
			if strings.Contains(l, what) {
				return
			}
		case <-deadline:
			t.Fatalf("watch did not say %q within %v: %q", what, d, w.said)
		}
	}
}

// wait reads stderr to its end and returns the summary line's figures.
func (w *watch) wait(t *testing.T, within time.Duration) (seen, lost, lostOutput int) {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case l, ok := <-w.lines:
			if ok {
				w.said = append(w.said, l)
				continue
			}
			w.lines = nil
		case err := <-w.exited:
			if err != nil {
				t.Errorf("watch: %v: %q", err, w.said)
			}
			return summary(t, w.said)
		case <-timeout:
			t.Fatalf("watch still running %v after it was asked to stop: %q", within, w.said)
		}
	}
}

var summaryRE = regexp.MustCompile(`tracer: (\d+) events seen, (\d+) lost \(([^)]*)\)`)

func summary(t *testing.T, said []string) (seen, lost, lostOutput int) {
	t.Helper()
	for _, l := range said {
		m := summaryRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		seen, _ = strconv.Atoi(m[1])
		lost, _ = strconv.Atoi(m[2])
		o := regexp.MustCompile(`output (\d+)`).FindStringSubmatch(m[3])
		if o == nil {
			t.Fatalf("summary without output loss: %q", l)
		}
		lostOutput, _ = strconv.Atoi(o[1])
		return seen, lost, lostOutput
	}
	t.Fatalf("no summary line: %q", said)
	return
}

// marker is a copy of /bin/true under a name of its own, so that
// --exe picks the workload's execs alone.
func marker(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "otlp-marker")
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

const execs = 5

// runMarker execs the marker execs times, with arguments that show argv
// stays an array, and returns the pids.
func runMarker(t *testing.T, path string) []int {
	t.Helper()
	var pids []int
	for i := range execs {
		cmd := exec.Command(path, "run-"+strconv.Itoa(i), "a b")
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, cmd.Process.Pid)
	}
	return pids
}

// TestWatchExportsToCollector: every exec of the workload reaches the
// collector's OTLP receiver as one log record with the ECS attributes,
// the event's time, and a resource naming tracer and the node; nothing
// is lost.
func TestWatchExportsToCollector(t *testing.T) {
	needRoot(t)
	sink := new(consumertest.LogsSink)
	addr := startReceiver(t, sink)
	m := marker(t)
	before := time.Now()
	w := startWatch(t, "--exe", m, "--allow-cleartext", "--output", "otlp://"+addr)
	pids := runMarker(t, m)
	deadline := time.Now().Add(15 * time.Second)
	for sink.LogRecordCount() < execs && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	_ = w.cmd.Process.Signal(os.Interrupt)
	seen, lost, _ := w.wait(t, 15*time.Second)
	if seen != execs || lost != 0 {
		t.Errorf("summary: %d seen, %d lost; want %d seen, none lost: %q", seen, lost, execs, w.said)
	}

	host, _ := os.Hostname()
	var records []plog.LogRecord
	for _, ld := range sink.AllLogs() {
		for i := 0; i < ld.ResourceLogs().Len(); i++ {
			rl := ld.ResourceLogs().At(i)
			res := rl.Resource().Attributes()
			if v, _ := res.Get("service.name"); v.Str() != "tracer" {
				t.Errorf("resource service.name %q", v.Str())
			}
			if v, _ := res.Get("host.name"); v.Str() != host {
				t.Errorf("resource host.name %q, want %q", v.Str(), host)
			}
			if v, ok := res.Get("service.version"); !ok || v.Str() == "" {
				t.Errorf("resource without service.version: %v", res.AsRaw())
			}
			for j := 0; j < rl.ScopeLogs().Len(); j++ {
				lrs := rl.ScopeLogs().At(j).LogRecords()
				for k := 0; k < lrs.Len(); k++ {
					records = append(records, lrs.At(k))
				}
			}
		}
	}
	if len(records) != execs {
		t.Fatalf("collector got %d records, want %d", len(records), execs)
	}
	for i, r := range records {
		a := r.Attributes()
		str := func(k string) string { v, _ := a.Get(k); return v.AsString() }
		num := func(k string) int64 { v, _ := a.Get(k); return v.Int() }
		if got := num("process.pid"); got != int64(pids[i]) {
			t.Errorf("record %d: process.pid %d, want %d", i, got, pids[i])
		}
		if str("process.executable") != m || str("process.name") != "otlp-marker" || str("event.action") != "exec" {
			t.Errorf("record %d: %v", i, a.AsRaw())
		}
		args, ok := a.Get("process.args")
		want := []any{m, "run-" + strconv.Itoa(i), "a b"} // exec.Command passes the path as argv[0]
		if !ok || args.Type() != pcommon.ValueTypeSlice || fmt.Sprint(args.Slice().AsRaw()) != fmt.Sprint(want) {
			t.Errorf("record %d: process.args %v (%v), want the slice %q", i, args.AsRaw(), args.Type(), want)
		}
		if id := str("process.entity_id"); !strings.HasSuffix(id, ":"+strconv.Itoa(pids[i])) {
			t.Errorf("record %d: process.entity_id %q does not end in its pid %d", i, id, pids[i])
		}
		if v, ok := a.Get("process.parent.pid"); !ok || v.Int() != int64(os.Getpid()) {
			t.Errorf("record %d: process.parent.pid %v, want the test's %d", i, v.AsRaw(), os.Getpid())
		}
		if body := r.Body().Str(); !strings.HasPrefix(body, "exec "+m+" pid "+strconv.Itoa(pids[i])) {
			t.Errorf("record %d: body %q", i, body)
		}
		if r.SeverityNumber() != plog.SeverityNumberInfo {
			t.Errorf("record %d: severity %v", i, r.SeverityNumber())
		}
		if ts := r.Timestamp().AsTime(); ts.Before(before) || ts.After(time.Now()) {
			t.Errorf("record %d: timestamp %v, not during the run", i, ts)
		}
	}
}

// TestWatchCollectorDown: with no collector listening, the events count
// as lost at stage output, the watch says exporting fails, and it ends
// on time.
func TestWatchCollectorDown(t *testing.T) {
	needRoot(t)
	m := marker(t)
	// --format= empty, as tracer.service passes TRACER_FORMAT left empty.
	w := startWatch(t, "--exe", m, "--format=", "--allow-cleartext", "--output", "otlp://"+freeAddr(t))
	runMarker(t, m)
	w.waitFor(t, "connection refused", 15*time.Second)
	stop := time.Now()
	_ = w.cmd.Process.Signal(os.Interrupt)
	seen, lost, lostOutput := w.wait(t, 10*time.Second)
	if d := time.Since(stop); d > 3*time.Second {
		t.Errorf("watch took %v to end after Ctrl-C", d)
	}
	if seen != execs || lost != execs || lostOutput != execs {
		t.Errorf("summary: %d seen, %d lost (output %d); want %d, all lost at stage output: %q", seen, lost, lostOutput, execs, w.said)
	}
}

// TestWatchCollectorSlow: a collector whose pipeline never answers holds
// the watch no longer than tracer's bound on closing (5 s): the events
// it did not take count as lost at stage output.
func TestWatchCollectorSlow(t *testing.T) {
	needRoot(t)
	release := make(chan struct{})
	stuck, err := consumer.NewLogs(func(ctx context.Context, _ plog.Logs) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return fmt.Errorf("released")
	})
	if err != nil {
		t.Fatal(err)
	}
	addr := startReceiver(t, stuck)
	defer close(release)
	m := marker(t)
	w := startWatch(t, "--exe", m, "--allow-cleartext", "--output", "otlp://"+addr, "--duration", "3s")
	runMarker(t, m)
	seen, lost, lostOutput := w.wait(t, 20*time.Second)
	if d := time.Since(w.start); d > 12*time.Second {
		t.Errorf("a 3 s watch took %v with the collector stalled", d)
	}
	if seen != execs || lost != execs || lostOutput != execs {
		t.Errorf("summary: %d seen, %d lost (output %d); want %d, all lost at stage output: %q", seen, lost, lostOutput, execs, w.said)
	}
}

// TestWatchRefusesOtherSchemes: a mistyped scheme is a one-line usage
// error, exit status 2, before anything is loaded.
func TestWatchRefusesOtherSchemes(t *testing.T) {
	for _, out := range []string{"otlpx://127.0.0.1:4318", "otlp://", "otlp://host:notaport"} {
		cmd := exec.Command(buildTracer(t), "watch", "--backend", "ebpf", "--output", out)
		b, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 || strings.Count(strings.TrimSpace(string(b)), "\n") != 0 {
			t.Errorf("--output %s: %v, output %q; want exit status 2 and one line", out, err, b)
		}
	}
	cmd := exec.Command(buildTracer(t), "watch", "--backend", "ebpf", "--output", "otlp://127.0.0.1:4318", "--format", "json")
	if b, _ := cmd.CombinedOutput(); cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(b), "drop --format") {
		t.Errorf("--format json with otlp: exit %d, %q", cmd.ProcessState.ExitCode(), b)
	}
}

// TestWatchStormAddsUp: a burst of execs, more than one batch, through a
// collector that takes everything: every event arrives once, and the
// summary's figures are the collector's.
func TestWatchStormAddsUp(t *testing.T) {
	needRoot(t)
	sink := new(consumertest.LogsSink)
	addr := startReceiver(t, sink)
	m := marker(t)
	w := startWatch(t, "--exe", m, "--allow-cleartext", "--output", "otlp://"+addr)
	const n = 1200 // more than one batch (1,024)
	// One shell execs the marker n times: no Go fork per exec.
	sh := exec.Command("/bin/sh", "-c", `i=0; while [ $i -lt `+strconv.Itoa(n)+` ]; do "$0" storm; i=$((i+1)); done`, m)
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("workload: %v\n%s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for sink.LogRecordCount() < n && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	_ = w.cmd.Process.Signal(os.Interrupt)
	seen, lost, _ := w.wait(t, 15*time.Second)
	got := sink.LogRecordCount()
	if seen != n || lost != 0 || got != n {
		t.Errorf("%d execs: %d seen, %d lost, %d records at the collector; want all, none lost: %q", n, seen, lost, got, w.said)
	}
	pids := map[int64]bool{}
	for _, ld := range sink.AllLogs() {
		for i := 0; i < ld.ResourceLogs().Len(); i++ {
			sl := ld.ResourceLogs().At(i).ScopeLogs()
			for j := 0; j < sl.Len(); j++ {
				lrs := sl.At(j).LogRecords()
				for k := 0; k < lrs.Len(); k++ {
					v, _ := lrs.At(k).Attributes().Get("process.pid")
					pids[v.Int()] = true
				}
			}
		}
	}
	if len(pids) != n {
		t.Errorf("%d distinct process.pid among %d records, want %d", len(pids), got, n)
	}
}
