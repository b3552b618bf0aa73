// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// Idle connections to --metrics-addr cannot take tracer's descriptors: a
// local user opening thousands (some never sending a request, some idle
// on keep-alive after one) leaves the server holding at most
// metricsMaxConns, the process still opens /proc files (events' exec_id
// and cgroup come from them), and once the idle ones time out a scrape
// gets its answer.
func TestMetricsIdleConnectionsBounded(t *testing.T) {
	const clients = 1500
	old := metricsTimeouts
	metricsTimeouts.readHeader, metricsTimeouts.idle = time.Second, time.Second
	t.Cleanup(func() { metricsTimeouts = old })

	// Room for the test's own descriptors, its clients' and the server's
	// limit, not for a server that accepts every client.
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir("/proc/self/fd")
	soft := uint64(len(ents) + clients + metricsMaxConns + 100)
	if soft > lim.Cur {
		t.Skipf("RLIMIT_NOFILE %d: the test needs %d", lim.Cur, soft)
	}
	lowered := lim
	lowered.Cur = soft
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lowered); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) })

	addr := freeLoopback(t)
	_, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := tracer.NewPipeline(tracer.DefaultConfig())
	ready, err := startMetrics(ctx, addr, p, idleBackend{})
	if err != nil {
		t.Fatal(err)
	}
	ready()

	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for i := range clients {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		// Every other one a keep-alive connection idle after a request.
		if i%2 == 0 {
			fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: tracer\r\n\r\n")
		}
	}
	time.Sleep(300 * time.Millisecond) // the server accepts what it will
	held := acceptedConns(t, port, os.Getpid())
	t.Logf("%d idle connections: the server holds %d (limit %d)", clients, held, metricsMaxConns)
	if held > metricsMaxConns {
		t.Errorf("the metrics server holds %d connections of %d idle clients, want at most %d", held, clients, metricsMaxConns)
	}
	if b, err := os.ReadFile("/proc/self/stat"); err != nil || len(b) == 0 {
		t.Errorf("reading /proc/self/stat with %d idle metrics clients: %v", clients, err)
	}

	// The idle ones time out, a batch at a time: a scrape gets through.
	start := time.Now()
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	code, body, err := get(hc, "http://"+addr+"/metrics", "")
	if err != nil || code != http.StatusOK || !strings.Contains(body, "tracer_events_total") {
		t.Fatalf("scrape behind %d idle clients: %d %v %.80s", clients, code, err, body)
	}
	t.Logf("scrape answered after %v behind %d idle clients", time.Since(start).Round(time.Millisecond), clients)
}

// acceptedConns counts the established TCP connections on local port
// port that process pid accepted (those still in the listen queue have no
// socket inode yet). Only pid's: another test's connection may have taken
// the same number as its own local port.
func acceptedConns(t *testing.T, port string, pid int) int {
	t.Helper()
	pn, _ := strconv.Atoi(port)
	want := fmt.Sprintf(":%04X", pn)
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		t.Fatal(err)
	}
	mine := map[string]bool{}
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(fdDir, e.Name())); err == nil && strings.HasPrefix(l, "socket:[") {
			mine[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	n := 0
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		s := bufio.NewScanner(f)
		for s.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fs := strings.Fields(s.Text())
			if len(fs) < 10 || !strings.HasSuffix(fs[1], want) || fs[3] != "01" || !mine[fs[9]] {
				continue
			}
			n++
		}
		f.Close()
	}
	return n
}

// The same against a running `tracer watch --backend audit`, whose
// events take exec_id and cgroup from /proc: with its descriptors capped
// (prlimit) below what 1,000 idle metrics clients would take, the server
// holds at most metricsMaxConns and every exec still has both.
func TestWatchMetricsIdleConnectionsKeepExecID(t *testing.T) {
	tracertest.NeedRoot(t)
	tracertest.LockAudit(t)
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("no prlimit (util-linux)")
	}
	const clients, execs = 1000, 20
	addr := freeLoopback(t)
	_, port, _ := net.SplitHostPort(addr)
	out := filepath.Join(t.TempDir(), "events.jsonl")
	w := startWatcherCmd(t, nil, exec.Command("prlimit", "--nofile=400:400", "--", tracerBin, "watch", "--backend", "audit",
		"--events", "exec", "--format", "json", "--output", out, "--metrics-addr", addr))
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range clients {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			w.stop(t)
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	time.Sleep(300 * time.Millisecond)
	held := acceptedConns(t, port, w.cmd.Process.Pid)
	// Alive while the watch reads their /proc files: a process gone by
	// then has no exec_id on audit with or without idle clients.
	var sleeps []*exec.Cmd
	for range execs {
		c := exec.Command("/bin/sleep", "2")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		sleeps = append(sleeps, c)
	}
	for _, c := range sleeps {
		_ = c.Wait()
	}
	w.stop(t)
	t.Logf("%d idle connections: the watch's server held %d (limit %d)", clients, held, metricsMaxConns)
	if held > metricsMaxConns {
		t.Errorf("the watch's metrics server holds %d connections of %d idle clients, want at most %d", held, clients, metricsMaxConns)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	mine, without := 0, 0
	for l := range strings.Lines(string(b)) {
		var e struct {
			PPID   int    `json:"ppid"`
			ExecID string `json:"exec_id"`
			Cgroup string `json:"cgroup"`
		}
		if json.Unmarshal([]byte(l), &e) != nil || e.PPID != os.Getpid() {
			continue
		}
		mine++
		if e.ExecID == "" || e.Cgroup == "" {
			without++
			if without <= 3 {
				t.Logf("exec without exec_id or cgroup: %s", strings.TrimSpace(l))
			}
		}
	}
	t.Logf("%d of the test's %d execs written, %d without exec_id or cgroup", mine, execs, without)
	if mine != execs || without > 0 {
		t.Errorf("%d of %d execs written, %d of them without exec_id or cgroup; want all, with both", mine, execs, without)
	}
}
