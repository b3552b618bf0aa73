// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// listenFailures reads tracer_metrics_listen_failures_total from
// http://addr/metrics; ok is false until the address serves.
func listenFailures(addr string) (n int, ok bool) {
	c := &http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^tracer_metrics_listen_failures_total (\d+)`).FindSubmatch(body)
	if resp.StatusCode != 200 || m == nil {
		return 0, false
	}
	n, _ = strconv.Atoi(string(m[1]))
	return n, true
}

// A metrics port another process holds is no usage error: the server
// binds again with backoff, counts each failure, and serves once the
// port is free. An address that cannot be one still is.
func TestMetricsBusyAddrRetried(t *testing.T) {
	squat, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := squat.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := tracer.NewPipeline(tracer.DefaultConfig())
	ready, err := startMetrics(ctx, addr, p, idleBackend{})
	if err != nil {
		squat.Close()
		t.Fatalf("startMetrics on a busy port: %v, want it to retry", err)
	}
	ready()
	time.Sleep(700 * time.Millisecond) // a retry fails while the port is held
	squat.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, ok := listenFailures(addr)
		if ok {
			if n < 2 {
				t.Errorf("tracer_metrics_listen_failures_total %d, want 2 or more (the first bind and a retry)", n)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no metrics served 5s after the port was freed")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, bad := range []string{"127.0.0.1", "127.0.0.1:notaport", "127.0.0.1:99999", "unix:", "unix:/run/"} {
		if _, err := startMetrics(ctx, bad, p, idleBackend{}); !errors.Is(err, vocab.ErrUsage) {
			t.Errorf("startMetrics(%q) = %v, want a usage error", bad, err)
		}
	}
}

// Any local user can bind tracer's metrics port before it starts: tracer
// watch goes on (no exit 2, which systemd would not restart), says and
// counts the failure, and serves once the squatter is gone.
func TestWatchMetricsPortSquatted(t *testing.T) {
	tracertest.NeedRoot(t)
	// The lock first: the squatter holds the port for a minute, and a
	// wait for the lock longer than that (another package's bench runs)
	// let the port go before the watch started.
	tracertest.LockAudit(t)
	// The system's python3, which nobody may run (root's PATH may lead
	// to a per-user install).
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("needs /usr/bin/python3 for the squatter")
	}
	addr := freeLoopback(t)
	_, port, _ := net.SplitHostPort(addr)
	squatter := exec.Command(py, "-c", `import socket,sys,time
s=socket.socket(); s.bind(("127.0.0.1",int(sys.argv[1]))); s.listen(1); print("bound",flush=True); time.sleep(60)`, port)
	squatter.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := squatter.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := squatter.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = squatter.Process.Kill(); _ = squatter.Wait() })
	if line := make([]byte, 6); func() bool { _, err := io.ReadFull(out, line); return err != nil || string(line) != "bound\n" }() {
		t.Fatal("the squatter did not bind")
	}

	cmd := exec.Command(tracerBin, "watch", "--backend", "ebpf", "--events", "exec", "--exe", "/nonexistent/squat-test",
		"--metrics-addr", addr, "--duration", "30s", "-o", "/dev/null")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	// Watching despite the squatter, and saying why there are no metrics.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), "watching") || !strings.Contains(stderr.String(), "cannot serve metrics yet") {
		select {
		case err := <-exited:
			t.Fatalf("tracer watch exited (%v) while the port was held: %s", err, stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("tracer watch did not start and say the port is held: %s", stderr.String())
		}
	}
	time.Sleep(time.Second)
	if err := squatter.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = squatter.Wait()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if n, ok := listenFailures(addr); ok {
			if n < 1 {
				t.Errorf("tracer_metrics_listen_failures_total %d once serving, want at least 1", n)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no metrics 20s after the squatter left: %s", stderr.String())
		}
	}
	if !strings.Contains(stderr.String(), "serving metrics now") {
		t.Errorf("no line saying the metrics are served now: %s", stderr.String())
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("tracer watch ended with %v: %s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Error("tracer watch did not end on SIGTERM")
	}
}

// lockedBuffer is a strings.Builder a running command writes while the
// test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// tracer cleanup's part for metrics sockets: a socket nothing listens on
// (a killed tracer's) goes, a live one and a file stay.
func TestRemoveStaleSockets(t *testing.T) {
	dir := t.TempDir()
	stale, err := net.Listen("unix", dir+"/stale.sock")
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()
	live, err := net.Listen("unix", dir+"/live.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := os.WriteFile(dir+"/audit-1.json", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	done := removeStaleSockets(dir)
	if len(done) != 1 || !strings.Contains(done[0], "stale.sock") {
		t.Errorf("removed %q, want stale.sock alone", done)
	}
	for name, want := range map[string]bool{"stale.sock": false, "live.sock": true, "audit-1.json": true} {
		if _, err := os.Lstat(dir + "/" + name); (err == nil) != want {
			t.Errorf("%s: %v, want there %v", name, err, want)
		}
	}
}
