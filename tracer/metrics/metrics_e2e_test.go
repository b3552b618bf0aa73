// SPDX-License-Identifier: Apache-2.0

//go:build linux

package metrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// The end-to-end tests run the real binary under a real Prometheus server,
// both on loopback, and check through Prometheus' HTTP API that
// tracer_events_total{type="exec"} rose by exactly the workload's exec count.

// workloadComm is the comm of the workload's shell. watch keeps only its
// events (--comm), so that the rest of the node does not count: an exec
// event carries the caller's comm from before the exec.
const workloadComm = "tracerwl"

// e2eExecs is how many times the workload runs /bin/true.
const e2eExecs = 50

func TestE2EPrometheusEBPF(t *testing.T) {
	tracertest.NeedRoot(t)
	runE2E(t, "ebpf")
}

func TestE2EPrometheusAudit(t *testing.T) {
	tracertest.LockAudit(t)
	runE2E(t, "audit")
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// tracerBinary builds ./cmd/tracer once per test process.
func tracerBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		dir, err := os.MkdirTemp("", "tracer-e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "tracer")
		cmd := exec.Command("go", "build", "-o", builtBin, "./cmd/tracer")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/tracer: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

func runE2E(t *testing.T, backend string) {
	promBin := tracertest.NeedTool(t, "prometheus", "Debian package prometheus; cannot run the end-to-end scrape")
	bin := tracerBinary(t)
	dir := t.TempDir()

	// The tracer, watching only the workload's comm.
	tracerAddr := freeAddr(t)
	eventsFile := filepath.Join(dir, "events.jsonl")
	args := []string{"watch", "--backend", backend, "--events", "exec",
		"--comm", workloadComm, "--format", "json", "-o", eventsFile, "--metrics-addr", tracerAddr}
	if backend == "ebpf" {
		// Per-program run time and count are exported only with the kernel's BPF stats on.
		args = append(args, "--bpf-stats")
	}
	tr := startProc(t, "tracer", bin, args...)
	waitFor(t, 60*time.Second, "tracer to report watching", func() bool {
		return strings.Contains(tr.stderr(), "watching")
	}, tr)
	if code, body := httpGet(t, "http://"+tracerAddr+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz once watching: %d %q, want 200 ok", code, body)
	}

	// Prometheus, scraping it every second.
	promAddr := freeAddr(t)
	cfg := filepath.Join(dir, "prometheus.yml")
	writeFile(t, cfg, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: tracer
    static_configs:
      - targets: ['%s']
`, tracerAddr))
	prom := startProc(t, "prometheus", promBin, "--config.file="+cfg,
		"--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address="+promAddr,
		"--log.level=warn")

	query := fmt.Sprintf(`tracer_events_total{job="tracer",backend=%q,type="exec"}`, backend)
	var before float64
	waitFor(t, 60*time.Second, "Prometheus to scrape the tracer", func() bool {
		v, ok := promQuery(t, promAddr, query)
		before = v
		return ok
	}, tr, prom)
	if up, _ := promQuery(t, promAddr, `up{job="tracer"}`); up != 1 {
		t.Fatalf("up{job=\"tracer\"} = %v, want 1", up)
	}

	// The workload: a shell named tracerwl that runs /bin/true e2eExecs times.
	sh := filepath.Join(dir, workloadComm)
	copyFile(t, "/bin/sh", sh)
	wl := exec.Command(sh, "-c", fmt.Sprintf(`i=0; while [ $i -lt %d ]; do /bin/true; i=$((i+1)); done`, e2eExecs))
	if out, err := wl.CombinedOutput(); err != nil {
		t.Fatalf("workload: %v\n%s", err, out)
	}

	want := before + e2eExecs
	var got float64
	waitFor(t, 60*time.Second, fmt.Sprintf("Prometheus to see %s = %v", query, want), func() bool {
		got, _ = promQuery(t, promAddr, query)
		return got >= want
	}, tr, prom)
	// A few more scrapes: the count must stay exact, not overshoot.
	time.Sleep(3 * time.Second)
	got, _ = promQuery(t, promAddr, query)
	if got != want {
		t.Errorf("%s rose from %v to %v, want exactly +%d", query, before, got, e2eExecs)
	}
	lost, _ := promQuery(t, promAddr, fmt.Sprintf(`sum(tracer_events_lost_total{job="tracer",backend=%q})`, backend))
	t.Logf("%s: Prometheus saw tracer_events_total{type=\"exec\"} go %v -> %v (+%d execs run), lost %v",
		backend, before, got, e2eExecs, lost)

	switch backend {
	case "ebpf":
		runs, ok := promQuery(t, promAddr, `sum(tracer_bpf_program_runs_total{job="tracer"})`)
		secs, _ := promQuery(t, promAddr, `sum(tracer_bpf_program_run_seconds_total{job="tracer"})`)
		if !ok || runs < e2eExecs || secs <= 0 {
			t.Errorf("with --bpf-stats: BPF programs ran %v times in %v s, want at least %d runs and some time", runs, secs, e2eExecs)
		}
		t.Logf("ebpf: BPF programs ran %v times, %.6f s in all (node-wide, --bpf-stats)", runs, secs)
	case "audit":
		if limit, ok := promQuery(t, promAddr, `tracer_audit_backlog_limit{job="tracer"}`); !ok || limit <= 0 {
			t.Errorf("tracer_audit_backlog_limit = %v (present %v), want the kernel's limit", limit, ok)
		}
	}

	// promtool passes on a real scrape of the binary.
	if promtool, err := exec.LookPath("promtool"); err == nil {
		_, body := httpGet(t, "http://"+tracerAddr+"/metrics")
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(body)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics on the tracer's scrape: %v\n%s", err, out)
		}
	}

	// Stop the tracer: its output and summary agree with what Prometheus saw.
	if err := tr.stop(); err != nil {
		t.Fatalf("tracer exited with %v\n%s", err, tr.stderr())
	}
	data, err := os.ReadFile(eventsFile)
	if err != nil {
		t.Fatal(err)
	}
	var lines int
	for l := range bytes.Lines(data) {
		var e struct {
			Type, Comm, Filename string
		}
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatalf("bad event line %q: %v", l, err)
		}
		if e.Type != "exec" || e.Comm != workloadComm {
			t.Errorf("event outside the filter: %s", l)
		}
		lines++
	}
	if float64(lines) != got {
		t.Errorf("tracer wrote %d exec events, Prometheus counted %v", lines, got)
	}
	if !strings.Contains(tr.stderr(), fmt.Sprintf("%d events seen", lines)) {
		t.Errorf("summary does not say %d events seen:\n%s", lines, tr.stderr())
	}
}

// proc is a child process whose stderr the test reads.
type proc struct {
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	errb bytes.Buffer
	done chan struct{}
	err  error
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.errb.Write(b)
}

func (p *proc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.errb.String()
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits; it kills after 15 s.
func (p *proc) stop() error {
	if p.exited() {
		return p.err
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within 15s of SIGTERM", p.name)
	}
	return p.err
}

func startProc(t *testing.T, name, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = io.Discard, p
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if err := p.stop(); err != nil && !p.exited() {
			t.Errorf("stopping %s: %v", name, err)
		}
	})
	return p
}

// waitFor polls cond every 200 ms; it fails the test if a watched process
// exits first or the time runs out.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool, procs ...*proc) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		for _, p := range procs {
			if p.exited() {
				t.Fatalf("waiting for %s: %s exited (%v):\n%s", what, p.name, p.err, p.stderr())
			}
		}
		if time.Now().After(deadline) {
			var logs string
			for _, p := range procs {
				logs += fmt.Sprintf("--- %s stderr:\n%s\n", p.name, p.stderr())
			}
			t.Fatalf("timed out after %v waiting for %s\n%s", d, what, logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// promQuery runs an instant query; ok is false when it has no result yet.
// It expects at most one series.
func promQuery(t *testing.T, addr, q string) (v float64, ok bool) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0, false // not listening yet
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusServiceUnavailable {
		// Prometheus answers 503 in plain text until its TSDB is open.
		return 0, false
	}
	var r struct {
		Status string
		Error  string
		Data   struct {
			Result []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("query %s: decoding: %v", q, err)
	}
	if r.Status != "success" {
		t.Fatalf("query %s: %s %s", q, r.Status, r.Error)
	}
	switch len(r.Data.Result) {
	case 0:
		return 0, false
	case 1:
	default:
		t.Fatalf("query %s: %d series, want one", q, len(r.Data.Result))
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	v, err = strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("query %s: value %q: %v", q, s, err)
	}
	return v, true
}

func httpGet(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return resp.StatusCode, string(body)
}

// freeAddr returns a loopback address with a port nobody listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}
