// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// libbpfTool is one of the libbpf-tools: Debian and Ubuntu install them as
// execsnoop, Fedora and RHEL as bpf-execsnoop.
func libbpfTool(name string) tool {
	return tool{names: []string{name, "bpf-" + name}, deb: "libbpf-tools",
		install: "apt-get install libbpf-tools (Debian 12 and later, Ubuntu) or dnf install libbpf-tools (RHEL, Fedora)"}
}

// toolStdbuf runs each libbpf tool, line-buffered as on a terminal.
var toolStdbuf = tool{names: []string{"stdbuf"}, deb: "coreutils", install: "apt-get install coreutils (Debian, Ubuntu) or dnf install coreutils (RHEL)"}

func init() {
	for _, m := range []struct {
		modeSpec
		tools []string
	}{
		{modeSpec{name: "libbpf-tools", rank: 80, counterpart: "ebpf", color: "#6bbf59",
			watches:     "`execsnoop`, `exitsnoop` and `sigsnoop` of the libbpf-tools at once, each with its defaults, as an operator runs them to watch execs, process ends and signals",
			countedFrom: "their output: execs, exits (each the fork that made the process), signals other than SIGCHLD"},
			[]string{"execsnoop", "exitsnoop", "sigsnoop"}},
		{modeSpec{name: "execsnoop", rank: 85, execOnly: true, counterpart: "ebpf-exec", color: "#2e7d32",
			watches:     "`execsnoop -c CG` alone, on the workload's cgroup, for exec-only comparisons (with `ebpf-exec`)",
			countedFrom: "its output: every exec in the workload's cgroup"},
			[]string{"execsnoop"}},
	} {
		m.inDefault, m.inQuick, m.peer = true, true, true
		m.needs.root = true
		for _, t := range m.tools {
			m.needs.tools = append(m.needs.tools, libbpfTool(t))
		}
		m.needs.tools = append(m.needs.tools, toolStdbuf)
		m.make = func(modeEnv) (Mode, error) { return &libbpfMode{name: m.name, tools: m.tools}, nil }
		registerMode(m.modeSpec)
	}
}

// libbpfMode runs libbpf-tools as an operator would, each with its
// defaults: execsnoop, exitsnoop and sigsnoop at once (libbpf-tools: the
// three together see execs, process ends -- the forks that made them --
// and signals), or execsnoop alone (for comparisons of exec events only).
// They print one line per event; bench writes each tool's output to a file
// in the run's directory, line-buffered as on a terminal, and counts the
// workload's events in it afterwards. Their syscall tracepoints need
// tracefs: the tools run in a mount namespace of their own, which mounts it
// when the node has not, so nothing changes on the node.
type libbpfMode struct {
	name  string
	tools []string // names
	paths []string
	// args are options given to a tool (by name), none by default: the
	// fidelity test asks execsnoop for its UID column and quoted arguments.
	args map[string][]string

	w    *watcher
	dir  string
	cpu0 float64
	pids []int
	own  *Cgroup // the workload's cgroup, which execsnoop alone watches
}

func (m *libbpfMode) Name() string    { return m.name }
func (m *libbpfMode) WritesLog() bool { return false }

func (m *libbpfMode) Setup(context.Context) error {
	paths, err := findTools(m.name)
	if err != nil {
		return err
	}
	m.paths = nil
	for _, t := range m.tools {
		m.paths = append(m.paths, paths[t])
	}
	return nil
}

// libbpfScript starts the tools (its arguments after the directory: each a
// path and its options, split at spaces), each writing to DIR/TOOL.out and
// DIR/TOOL.err, says their pids, and on SIGINT
// or SIGTERM passes SIGINT on to them (they then detach and exit) and waits
// for them all. Background commands of a shell ignore SIGINT, which the
// tools' own handlers undo.
const libbpfScript = `[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs nodev /sys/kernel/tracing || exit 1
cd "$1" || exit 1
shift
pids=
set -f
for t in "$@"; do
	p=${t%% *}
	n=${p##*/}
	stdbuf -oL $t >"${n#bpf-}.out" 2>"${n#bpf-}.err" &
	pids="$pids $!"
done
trap 'kill -INT $pids 2>/dev/null' INT TERM
echo "tracer-bench: started$pids"
until wait; do :; done
`

func (m *libbpfMode) Start(ctx context.Context, run *Run) error {
	m.dir = filepath.Join(run.Dir, "libbpf-tools")
	if err := os.Mkdir(m.dir, 0o700); err != nil {
		return fmt.Errorf("making the tools' output directory: %w", err)
	}
	argv := []string{"-c", libbpfScript, "sh", m.dir}
	m.own = run.ownFor(m.name)
	for i, p := range m.paths {
		args := append([]string{p}, m.args[m.tools[i]]...)
		if m.own != nil {
			args = append(args, "-c", m.own.Path)
		}
		argv = append(argv, strings.Join(args, " "))
	}
	cmd := exec.Command("/bin/sh", argv...)
	// Go makes / private in the new namespace, so the mount stays in it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	w, err := startWatcher(ctx, m.name, cmd, true, "tracer-bench: started", 30*time.Second)
	if err != nil {
		return err
	}
	m.w = w
	m.pids = nil
	for _, l := range w.Lines() {
		if rest, ok := strings.CutPrefix(l, "tracer-bench: started"); ok {
			for _, f := range strings.Fields(rest) {
				if pid, err := strconv.Atoi(f); err == nil {
					m.pids = append(m.pids, pid)
				}
			}
		}
	}
	if len(m.pids) != len(m.tools) {
		m.cleanup()
		return fmt.Errorf("%s: started %d tools, not %d: %s", m.name, len(m.pids), len(m.tools), w.output())
	}
	// Each tool prints its header once its probes are attached: the header
	// alone says it watches (waiting for an event line too waited for
	// some exec on the node, two minutes on a quiet one).
	deadline := time.Now().Add(2 * time.Minute)
	for i, t := range m.tools {
		for !m.hasHeader(t) {
			if w.exited() || !processRunning(m.pids[i]) {
				err := fmt.Errorf("%s exited before it was watching: %s", t, m.stderr(t))
				m.cleanup()
				return err
			}
			if time.Now().After(deadline) {
				m.cleanup()
				return fmt.Errorf("%s was not watching after 2m: %s", t, m.stderr(t))
			}
			select {
			case <-ctx.Done():
				m.cleanup()
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	m.cpu0 = 0
	if c, err := procCPU(w.pid()); err == nil {
		m.cpu0 = c
	}
	for _, pid := range m.pids {
		if c, err := procCPU(pid); err == nil {
			m.cpu0 += c
		}
	}
	return nil
}

func processRunning(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !strings.Contains(string(b), ") Z ")
}

func (m *libbpfMode) out(tool string) string { return filepath.Join(m.dir, tool+".out") }

func (m *libbpfMode) stderr(tool string) string {
	b, _ := os.ReadFile(filepath.Join(m.dir, tool+".err"))
	return strings.TrimSpace(string(b))
}

// hasLine reports whether a line of tool's output (past its header) matches.
// hasHeader reports whether tool printed its whole header line.
func (m *libbpfMode) hasHeader(tool string) bool {
	b, err := os.ReadFile(m.out(tool))
	return err == nil && strings.IndexByte(string(b), '\n') >= 0
}

func (m *libbpfMode) hasLine(tool string, match func(string) bool) bool {
	b, err := os.ReadFile(m.out(tool))
	if err != nil {
		return false
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 2 { // no complete header yet
		return false
	}
	for _, l := range lines[1 : len(lines)-1] {
		if match(l) {
			return true
		}
	}
	return false
}

// Stop spawns a marker process (/bin/true) after the workload and waits
// until every tool printed it (its exec, its exit, the SIGCHLD its exit
// sent bench): the tools read their per-CPU buffers in turn, so once the
// marker is out, one more poll round has the workload's events out too.
func (m *libbpfMode) Stop(ctx context.Context, run *Run) (Observation, error) {
	obs := Observation{Seen: -1}
	if m.w == nil {
		return obs, fmt.Errorf("not started")
	}
	var markers []int
	spawn := func() error {
		c := exec.Command("/bin/true")
		inCgroup(c, m.own) // where the tools look
		if err := c.Run(); err != nil {
			return fmt.Errorf("running the marker process: %w", err)
		}
		markers = append(markers, c.Process.Pid)
		return nil
	}
	err := spawn()
	lastSpawn := time.Now()
	deadline := time.Now().Add(time.Minute)
	for err == nil {
		all := true
		for _, t := range m.tools {
			if !m.hasLine(t, func(l string) bool {
				for _, p := range markers {
					if libbpfMarker(t, l, p) {
						return true
					}
				}
				return false
			}) {
				all = false
				break
			}
		}
		if all {
			break
		}
		if m.w.exited() {
			err = fmt.Errorf("%s ended before it printed the run's events: %s", m.name, m.w.output())
			break
		}
		if time.Now().After(deadline) {
			err = fmt.Errorf("%s did not print the marker process within a minute: events were lost", m.name)
			break
		}
		if time.Since(lastSpawn) > 3*time.Second {
			// The marker itself may have been lost (a full perf buffer).
			err, lastSpawn = spawn(), time.Now()
			continue
		}
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err == nil {
		time.Sleep(150 * time.Millisecond) // the tools poll every 100 ms
	}
	w := m.w
	m.w = nil
	total, serr := w.stop(syscall.SIGINT, time.Minute)
	obs.TracerCPU = max(total-m.cpu0, 0)
	if err == nil {
		err = serr
	}
	if err != nil {
		return obs, err
	}
	var evs []procEvent
	for _, t := range m.tools {
		obs.Lost += libbpfLost(m.stderr(t))
		f, err := os.Open(m.out(t))
		if err != nil {
			return obs, fmt.Errorf("reading %s's output: %w", t, err)
		}
		e, err := readLibbpfOutput(t, f)
		f.Close()
		if err != nil {
			return obs, err
		}
		evs = append(evs, e...)
	}
	var c treeCount
	if m.own != nil {
		c = countAll(evs, markers)
	} else {
		c = countTree(evs, uint32(run.RootPID), run.Threads)
	}
	obs.Seen = c.Total()
	obs.Note = countNote(run.Workload, expectedOf(m.name, run.Workload), c)
	if m.name == "libbpf-tools" {
		obs.Note = joinNote(obs.Note, "forks counted from exitsnoop's process exits; SIGCHLD left out of sigsnoop's signals")
	}
	return obs, nil
}

func (m *libbpfMode) cleanup() {
	if m.w != nil {
		_, _ = m.w.stop(syscall.SIGINT, time.Minute)
		m.w = nil
	}
}

func (m *libbpfMode) Teardown() error {
	m.cleanup()
	return nil
}
