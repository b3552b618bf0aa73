// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// watcher is a watching process (tracer watch, bpftrace, auditd) that says
// on one of its output streams when it is watching.
type watcher struct {
	cmd    *exec.Cmd
	what   string
	ready  chan struct{}
	done   chan struct{} // the watched stream reached EOF
	exit   chan struct{} // the process was reaped
	exitOK error

	mu    sync.Mutex
	lines []string // the watched stream
	other tailBuffer
}

const maxWatcherLines = 100000

// startWatcher starts cmd and waits until a line of its stdout (fromStdout)
// or stderr contains readyWord, for at most timeout; with readyWord "" it
// returns once the process started. The child gets its own process group
// (Ctrl-C reaches only bench, which stops it in order) and SIGTERM should
// bench die.
func startWatcher(ctx context.Context, what string, cmd *exec.Cmd, fromStdout bool, readyWord string, timeout time.Duration) (*watcher, error) {
	w := &watcher{cmd: cmd, what: what, ready: make(chan struct{}), done: make(chan struct{}), exit: make(chan struct{})}
	cmd.SysProcAttr = mergeAttr(cmd.SysProcAttr)
	// A pipe of our own rather than StdoutPipe: the stream is read to its
	// end whatever Wait does, so the last line (watch's summary, bpftrace's
	// maps) is never cut off.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("making pipe: %w", err)
	}
	other := &lockedWriter{mu: &w.mu, w: &w.other}
	if fromStdout {
		cmd.Stdout, cmd.Stderr = pw, other
	} else {
		cmd.Stdout, cmd.Stderr = other, pw
	}
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, fmt.Errorf("starting %s: %w", what, err)
	}
	go func() {
		w.exitOK = cmd.Wait()
		close(w.exit)
	}()
	go func() {
		defer close(w.done)
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		isReady := false
		for sc.Scan() {
			line := sc.Text()
			w.mu.Lock()
			if len(w.lines) < maxWatcherLines {
				w.lines = append(w.lines, line)
			}
			w.mu.Unlock()
			if !isReady && readyWord != "" && strings.Contains(line, readyWord) {
				isReady = true
				close(w.ready)
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	if readyWord == "" {
		return w, nil
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-w.ready:
		return w, nil
	case <-w.exit:
		err = fmt.Errorf("%s exited before it was watching", what)
	case <-t.C:
		err = fmt.Errorf("%s was not watching after %s", what, timeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	_, _ = w.stop(syscall.SIGTERM, 30*time.Second)
	return nil, fmt.Errorf("%w: %s", err, w.output())
}

func mergeAttr(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	if a == nil {
		a = &syscall.SysProcAttr{}
	}
	a.Setpgid = true
	a.Pdeathsig = syscall.SIGTERM
	return a
}

func (w *watcher) pid() int { return w.cmd.Process.Pid }

// stop sends sig, waits for the process to exit (SIGKILL after timeout)
// and for its output, and returns its user+sys CPU time.
func (w *watcher) stop(sig syscall.Signal, timeout time.Duration) (cpu float64, err error) {
	_ = w.cmd.Process.Signal(sig)
	t := time.NewTimer(timeout)
	defer t.Stop()
	killed := false
	select {
	case <-w.exit:
	case <-t.C:
		_ = w.cmd.Process.Kill()
		killed = true
		<-w.exit
	}
	// A child of the watcher may hold the pipe open: do not wait for it long.
	select {
	case <-w.done:
	case <-time.After(5 * time.Second):
	}
	if ps := w.cmd.ProcessState; ps != nil {
		cpu = (ps.UserTime() + ps.SystemTime()).Seconds()
	}
	switch {
	case killed:
		return cpu, fmt.Errorf("%s did not exit within %s of %s: killed: %s", w.what, timeout, sig, w.output())
	case w.exitOK != nil:
		return cpu, fmt.Errorf("%s: %v: %s", w.what, w.exitOK, w.output())
	}
	return cpu, nil
}

// exited reports whether the process ended.
func (w *watcher) exited() bool {
	select {
	case <-w.exit:
		return true
	default:
		return false
	}
}

// Lines returns the watched stream's lines so far.
func (w *watcher) Lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.lines...)
}

// output is the end of what the process printed, for error messages.
func (w *watcher) output() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(w.lines)
	from := n - 10
	if from < 0 {
		from = 0
	}
	s := strings.Join(w.lines[from:], " | ")
	if o := w.other.String(); o != "" {
		s = strings.TrimSpace(s + " | " + strings.ReplaceAll(o, "\n", " | "))
	}
	return s
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// tracerChild is the tracer a mode runs as a child process (watch,
// __audit-floor) and what is measured of it: its CPU and, when it reads
// audit, kauditd's CPU and the kernel's backlog wait.
type tracerChild struct {
	w       *watcher
	audit   bool
	cpu     cpuMeter
	kauditd cpuMeter
	// wait0 is the kernel's backlog wait total when the run began (audit).
	wait0 uint64
}

// started starts measuring w, which is watching.
func (c *tracerChild) started(w *watcher, audit bool) {
	c.w, c.audit = w, audit
	c.cpu = startCPU(w.pid())
	if audit {
		c.kauditd = startCPU(findKthread("kauditd"))
		if st, err := kernelAuditStatus(); err == nil {
			c.wait0 = st.WaitActual
		}
	}
}

// stopChild stops the child (SIGTERM, two minutes) and puts what it cost
// in obs. It returns the stopped watcher, for its output.
func (c *tracerChild) stopChild(obs *Observation) (*watcher, error) {
	w := c.w
	c.w = nil
	total, err := w.stop(syscall.SIGTERM, 2*time.Minute)
	if c.cpu.ok {
		obs.TracerCPU = max(total-c.cpu.start, 0)
	}
	obs.KauditdCPU = c.kauditd.Since()
	if err != nil {
		return w, err
	}
	if c.audit {
		if st, err := kernelAuditStatus(); err == nil {
			obs.BacklogWait = backlogWait(c.wait0, st.WaitActual)
		}
	}
	return w, nil
}

func (c *tracerChild) Teardown() error {
	if c.w != nil {
		_, err := c.w.stop(syscall.SIGTERM, 2*time.Minute)
		c.w = nil
		return err
	}
	return nil
}
