// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// A local listener on the collector's port (any user of the node can
// bind it while the collector restarts) gets nothing from --output
// otlp:// by default, nor with headers even when cleartext is allowed:
// each is refused in one line, exit status 2, before anything is loaded.
func TestWatchOTLPCleartextRefused(t *testing.T) {
	tracertest.NeedRoot(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			// A fake collector: 200 to whatever comes.
			go func() {
				defer c.Close()
				buf := make([]byte, 64<<10)
				for {
					_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
					if _, err := c.Read(buf); err != nil {
						return
					}
					_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n"))
				}
			}()
		}
	}()
	target := "otlp://" + ln.Addr().String()
	tracertest.LockAudit(t) // before the fix, these watched
	for _, c := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, nil, "--allow-cleartext"},
		{[]string{"OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer s3cret"}, []string{"--allow-cleartext"}, "OTEL_EXPORTER_OTLP_HEADERS over cleartext"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		args := append([]string{"watch", "--backend", "ebpf", "--events", "exec", "--exe", "true", "--duration", "3s", "--output", target}, c.args...)
		cmd := exec.CommandContext(ctx, tracerBin, args...)
		cmd.Env = append(os.Environ(), c.env...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		// Execs to send while it watches, if it does.
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
					_ = exec.Command("true").Run()
				}
			}
		}()
		err := cmd.Run()
		close(stop)
		cancel()
		code := -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.Sys().(syscall.WaitStatus).ExitStatus()
		} else if err == nil {
			code = 0
		}
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("watch %v (env %v): exit %d, stderr %q; want exit 2 and one line about %q", c.args, c.env, code, stderr.String(), c.want)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if n := conns.Load(); n != 0 {
		t.Errorf("the listener on the collector's port got %d connections, want none", n)
	}
}
