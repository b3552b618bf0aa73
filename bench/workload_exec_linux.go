// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/tracer"
)

// Cgroup is the cgroup (v2) the workloads run in: a fresh one, so that
// bpftrace can filter on it the way one filters on a pod's cgroup.
type Cgroup struct {
	Path string
	ID   uint64
	// Scope, when set, is the cgroup (as in /proc/PID/cgroup) the workload's
	// cgroup was made in, bench's --cgroup: the tracer modes watch it and
	// everything below it, as they would watch a pod or a service.
	Scope string
	fd    int
}

// NewCgroup makes a cgroup for the workloads under the v2 hierarchy, or
// returns nil when the node has none. With scope (a cgroup path as in
// /proc/PID/cgroup) it is made below that cgroup, and failing to is an
// error: the user asked for it.
func NewCgroup(scope string) (*Cgroup, error) {
	root := cgroupV2Mount()
	if root == "" {
		if scope != "" {
			return nil, errors.New("--cgroup needs a cgroup v2 hierarchy, and this node has none mounted")
		}
		return nil, nil
	}
	scope = tracer.CleanCgroup(scope)
	parent := filepath.Join(root, scope)
	removeStaleCgroups(parent)
	c, err := newCgroupAt(filepath.Join(parent, fmt.Sprintf("tracer-bench-%d", os.Getpid())))
	switch {
	case err != nil && scope != "":
		return nil, fmt.Errorf("running the workload below --cgroup %s: %w", scope, err)
	case errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EACCES):
		// A pod's cgroup file system is read-only: run the workloads
		// without a cgroup of their own, as on a node without cgroup v2.
		return nil, nil
	case err != nil:
		return nil, err
	}
	c.Scope = scope
	return c, nil
}

func newCgroupAt(path string) (*Cgroup, error) {
	if err := os.Mkdir(path, 0o755); err != nil && !os.IsExist(err) {
		return nil, fmt.Errorf("making cgroup %s: %w", path, err)
	}
	fd, err := unix.Open(path, unix.O_DIRECTORY|unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("opening cgroup %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		_ = os.Remove(path)
		return nil, fmt.Errorf("reading cgroup id of %s: %w", path, err)
	}
	// A cgroup v2 id is the inode number of its directory.
	return &Cgroup{Path: path, ID: st.Ino, fd: fd}, nil
}

// removeStaleCgroups removes the workload cgroups of bench runs that were
// killed (their pid is gone).
func removeStaleCgroups(root string) {
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		n, ok := strings.CutPrefix(e.Name(), "tracer-bench-")
		if !ok || !e.IsDir() {
			continue
		}
		n = strings.TrimPrefix(n, "io-") // the simulated HDD's log writers
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			_ = removeCgroup(filepath.Join(root, e.Name()))
		}
	}
}

// rel is the cgroup's path as in /proc/PID/cgroup, for tracer --cgroup.
func (c *Cgroup) rel() string {
	return "/" + strings.TrimPrefix(strings.TrimPrefix(c.Path, cgroupV2Mount()), "/")
}

// Close kills what is left in the cgroup and removes it.
func (c *Cgroup) Close() error {
	if c == nil {
		return nil
	}
	unix.Close(c.fd)
	return removeCgroup(c.Path)
}

func removeCgroup(path string) error {
	var err error
	for i := 0; i < 50; i++ {
		if b, rerr := os.ReadFile(filepath.Join(path, "cgroup.procs")); rerr == nil {
			for _, f := range strings.Fields(string(b)) {
				if pid, _ := strconv.Atoi(f); pid > 0 {
					_ = unix.Kill(pid, unix.SIGKILL)
				}
			}
		}
		if err = os.Remove(path); err == nil || os.IsNotExist(err) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("removing workload cgroup: %w", err)
}

// runWorkload runs one workload and times it the way /usr/bin/time does:
// wall time from fork to reap, and the rusage wait4 returns (the workload
// and all descendants it waited for).
func runWorkload(ctx context.Context, w *Workload, run *Run, tidsFile string, cg *Cgroup) (Sample, error) {
	argv := w.Args(tidsFile)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), w.Env...)
	if c := w.Credential; c != nil {
		// Another user's workload gets none of root's environment.
		name, home := strconv.FormatUint(uint64(c.Uid), 10), w.Dir
		if u, err := user.LookupId(name); err == nil {
			name, home = u.Username, u.HomeDir
		}
		cmd.Env = append(tracer.ResetEnv(os.Environ(), name, home, "/bin/sh"), w.Env...)
	}
	cmd.Stdin = nil
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return Sample{}, err
	}
	defer devnull.Close()
	cmd.Stdout = devnull
	var stderr tailBuffer
	cmd.Stderr = &stderr
	var out *outputBuffer
	if w.Metric != nil {
		// The figure may be on either stream (stress-ng logs to stderr).
		out = &outputBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
	}
	cmd.Dir = w.Dir
	// A session of its own (so no terminal of root's) and a process group
	// the kill below ends; no descriptor but 0-2 of what bench inherited.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL, Credential: w.Credential}
	if err := tracer.CloseOnExecFrom(3); err != nil {
		return Sample{}, err
	}
	inCgroup(cmd, cg)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return Sample{}, fmt.Errorf("starting workload %s: %w", w.Name, err)
	}
	run.RootPID = cmd.Process.Pid
	stop := context.AfterFunc(ctx, func() { _ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL) })
	werr := cmd.Wait()
	elapsed := time.Since(t0).Seconds()
	stop()
	// Whatever it left running in the background goes too.
	_ = unix.Kill(-run.RootPID, unix.SIGKILL)
	if ctx.Err() != nil {
		return Sample{}, ctx.Err()
	}
	var s Sample
	s.Elapsed = elapsed
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.User = tv(ru.Utime)
		s.Sys = tv(ru.Stime)
	}
	if out != nil {
		stderr.b = out.tail()
	}
	if werr != nil {
		var ee *exec.ExitError
		if errors.As(werr, &ee) {
			return s, fmt.Errorf("workload %s: %v: %s", w.Name, werr, stderr.String())
		}
		return s, fmt.Errorf("workload %s: %w", w.Name, werr)
	}
	if out != nil {
		r, err := w.Metric.Parse(out.b)
		if err != nil {
			return s, fmt.Errorf("workload %s: reading its %s: %w; its output ends: %s", w.Name, w.Metric.Name, err, stderr.String())
		}
		s.Metric, s.Ops = r.Value, r.Ops
	}
	return s, nil
}

// inCgroup makes cmd start in cg, when set.
func inCgroup(cmd *exec.Cmd, cg *Cgroup) {
	if cg == nil {
		return
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = cg.fd
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// outputBuffer keeps the first MiB a workload prints (its figure is in its
// summary, but some print progress lines for the whole run: those are
// dropped from the middle, keeping the last MiB too).
type outputBuffer struct{ b []byte }

const outputKeep = 1 << 20

func (o *outputBuffer) Write(p []byte) (int, error) {
	o.b = append(o.b, p...)
	if len(o.b) > 2*outputKeep {
		o.b = append(o.b[:outputKeep:outputKeep], o.b[len(o.b)-outputKeep:]...)
	}
	return len(p), nil
}

// tail is the last 4 KiB, for error messages.
func (o *outputBuffer) tail() []byte {
	if len(o.b) > 4096 {
		return o.b[len(o.b)-4096:]
	}
	return o.b
}

// tailBuffer keeps the last 4 KiB written to it, for error messages.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return strings.TrimSpace(string(t.b)) }
