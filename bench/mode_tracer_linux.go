// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tracer-dev/tracer/tracer"
)

// tracerMode is this tool watching: `tracer watch` as a child process,
// node-wide, writing JSON lines to the run's storage, as an operator would
// run it. Events of the workload are picked out of the log afterwards.
type tracerMode struct {
	name    string
	backend string
	probes  string // "" or "syscalls"
	// events is watch's --events: exec alone for ebpf-exec, the match of
	// execsnoop; exec, fork and signal otherwise.
	events string
	self   string
	// ringBytes is --ring-size for the eBPF backend (0: its default).
	ringBytes int

	label string
	own   *Cgroup // the workload's own cgroup, which an exec-only mode watches (Run.Own)
	tracerChild
}

func init() {
	for _, m := range []struct {
		modeSpec
		backend, probes, events string
	}{
		{modeSpec{name: "audit", rank: 10, inDefault: true, inQuick: true, floor: "audit-floor", audit: true, color: "#e08a2c",
			watches: "`tracer watch --backend audit --format json --output LOG --events exec,fork,signal`, node-wide, as a child process"},
			"audit", "", "exec,fork,signal"},
		{modeSpec{name: "ebpf", rank: 30, inDefault: true, inQuick: true, floor: "ebpf-floor", color: "#2f6fb0",
			watches: "the same with `--backend ebpf`"},
			"ebpf", "", "exec,fork,signal"},
		// Not with --quick: its syscall tracepoints take a second or more
		// to attach and detach on every run.
		{modeSpec{name: "ebpf-syscalls", rank: 50, inDefault: true, counterpart: "ebpf", color: "#5aa0d8",
			watches: "the same with `--backend ebpf --probes syscalls` (syscall tracepoints that mirror the audit rules)"},
			"ebpf", "syscalls", "exec,fork,signal"},
		{modeSpec{name: "ebpf-exec", rank: 55, inDefault: true, inQuick: true, execOnly: true, color: "#1d4f80",
			watches: "`tracer watch --backend ebpf --events exec --cgroup CG`: exec events alone, of the workload's cgroup (every exec there is counted: without fork events its tree cannot be followed), the match of `execsnoop -c`"},
			"ebpf", "", "exec"},
	} {
		m.countedFrom = "the JSON log"
		m.needs = needs{root: true}
		m.make = func(env modeEnv) (Mode, error) {
			return &tracerMode{name: m.name, backend: m.backend, probes: m.probes, events: m.events, self: env.self, ringBytes: env.ringBytes}, nil
		}
		registerMode(m.modeSpec)
	}
}

func (m *tracerMode) Name() string    { return m.name }
func (m *tracerMode) WritesLog() bool { return true }

func (m *tracerMode) Setup(context.Context) error { return nil }

func (m *tracerMode) logPath(run *Run) string { return filepath.Join(run.Dir, "events.jsonl") }

func (m *tracerMode) Start(ctx context.Context, run *Run) error {
	// block: bench measures what watching costs with nothing lost, as
	// auditd and the floors do (the default, drop, can only cost less:
	// it drops where block waits); --stats-file gives the figures as JSON.
	args := []string{"watch", "--backend", m.backend, "--format", "json",
		"--output", m.logPath(run), "--events", m.events,
		"--backpressure", "block", "--stats-file", m.statsPath(run)}
	if m.probes != "" {
		args = append(args, "--probes", m.probes)
	}
	if m.backend == "ebpf" && m.ringBytes != 0 {
		args = append(args, "--ring-size", strconv.Itoa(m.ringBytes))
	}
	m.own = run.ownFor(m.name)
	switch {
	case m.own != nil:
		// As execsnoop -c: the workload's cgroup (see Run.Own).
		args = append(args, "--cgroup", m.own.rel())
	case run.Own != nil && run.Own.Scope != "":
		// Scoped as a pod's or a service's watcher would be: on eBPF the
		// kernel drops other cgroups' events, on audit tracer does.
		args = append(args, "--cgroup", run.Own.Scope)
	}
	m.label = ""
	if m.backend == "audit" {
		// The audit backend reads the multicast copy of the records when
		// another process holds the audit PID: it then runs beside that
		// process (auditd), whose cost the workload pays too.
		if pid, comm := auditHolder(); pid != 0 {
			m.label = "audit (beside " + comm + ")"
		}
	}
	cmd := exec.Command(m.self, args...)
	inCgroup(cmd, run.LogCgroup)
	w, err := startWatcher(ctx, "tracer watch --backend "+m.backend, cmd, false, "watching", 2*time.Minute)
	if err != nil {
		return err
	}
	m.started(w, m.backend == "audit")
	return nil
}

func (m *tracerMode) statsPath(run *Run) string { return filepath.Join(run.Dir, "watch-stats.json") }

func (m *tracerMode) Stop(ctx context.Context, run *Run) (Observation, error) {
	obs := Observation{Seen: -1, Label: m.label}
	if m.w == nil {
		return obs, fmt.Errorf("not started")
	}
	if m.backend == "audit" {
		obs.Queued, obs.QueueLimit = auditQueued()
	}
	w, err := m.stopChild(&obs)
	if err != nil {
		return obs, err
	}
	var sf tracer.StatsFile
	if b, err := os.ReadFile(m.statsPath(run)); err != nil || json.Unmarshal(b, &sf) != nil {
		return obs, fmt.Errorf("tracer watch wrote no --stats-file (%v): %s", err, w.output())
	}
	obs.Lost = int64(sf.LostTotal)
	if sf.DelayP99Ms != nil {
		obs.DelayP99Ms = *sf.DelayP99Ms
	}
	if obs.Lost > 0 || len(sf.LostLowerBound) > 0 {
		// Loss is node-wide: say where, so that it can be told apart from the workload's events.
		bound := ""
		if len(sf.LostLowerBound) > 0 {
			bound = ">="
		}
		var stages []string
		for _, st := range []string{"kernel", "ringbuf", "reassembly", "queue", "output"} {
			stages = append(stages, fmt.Sprintf("%s %d", st, sf.Lost[st]))
		}
		obs.Note = joinNote(obs.Note, fmt.Sprintf("the watcher lost %s%d of %d events node-wide (%s)",
			bound, obs.Lost, sf.EventsSeen, strings.Join(stages, ", ")))
	}
	evs, err := readJSONLogFile(m.logPath(run))
	if err != nil {
		return obs, err
	}
	var c treeCount
	if m.own != nil {
		c = countAll(evs, nil)
	} else {
		c = countTree(evs, uint32(run.RootPID), run.Threads)
	}
	obs.Seen = c.Total()
	obs.Note = joinNote(obs.Note, countNote(run.Workload, expectedOf(m.name, run.Workload), c))
	return obs, nil
}

// countNote says which classes differ from what the workload must make,
// and what was set apart.
func countNote(w *Workload, want Tally, c treeCount) string {
	note := ""
	if w.Known && c.Tally != want {
		note = fmt.Sprintf("saw %s, expected %s", c.Tally, want)
	}
	if c.FailedForks > 0 {
		note = joinNote(note, fmt.Sprintf("%d fork calls that made no process (restarted clones) not counted", c.FailedForks))
	}
	return note
}
