//go:build linux

package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"
)

// tracerMode is this tool watching: `tracer watch` as a child process,
// node-wide, writing JSON lines to the run's storage, as an operator would
// run it. Events of the workload are picked out of the log afterwards.
type tracerMode struct {
	name    string
	backend string
	probes  string // "" or "syscalls"
	self    string

	w       *watcher
	label   string
	cpu     cpuMeter
	kauditd cpuMeter
	// auditctl, when installed, reads the kernel's backlog wait total in audit mode.
	auditctl string
	wait0    uint64
}

// NewTracerMode returns mode audit, ebpf or ebpf-syscalls, running self
// (this program) as the watcher.
func NewTracerMode(name, self string) (Mode, error) {
	m := &tracerMode{name: name, self: self}
	switch name {
	case "audit", "ebpf":
		m.backend = name
	case "ebpf-syscalls":
		m.backend, m.probes = "ebpf", "syscalls"
	default:
		return nil, fmt.Errorf("not a tracer mode: %q", name)
	}
	return m, nil
}

func (m *tracerMode) Name() string    { return m.name }
func (m *tracerMode) WritesLog() bool { return true }

func (m *tracerMode) Setup(context.Context) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("tracer watch needs root")
	}
	if m.backend == "audit" {
		m.auditctl, _ = lookSbin("auditctl")
	}
	return nil
}

func (m *tracerMode) logPath(run *Run) string { return filepath.Join(run.Dir, "events.jsonl") }

func (m *tracerMode) Start(ctx context.Context, run *Run) error {
	args := []string{"watch", "--backend", m.backend, "--format", "json",
		"--output", m.logPath(run), "--events", "exec,fork,signal"}
	if m.probes != "" {
		args = append(args, "--probes", m.probes)
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
	m.w = w
	m.cpu = startCPU(w.pid())
	if m.backend == "audit" {
		m.kauditd = startCPU(findKthread("kauditd"))
		if m.auditctl != "" {
			if st, err := auditctlStatus(m.auditctl); err == nil {
				m.wait0 = st.WaitActual
			}
		}
	}
	return nil
}

// summaryRe matches watch's last line, "tracer: N events seen, M lost
// (kernel a, ringbuf b, ...)", where a figure that is a lower bound has a
// leading ">=" and the stages are whatever watch lists.
var summaryRe = regexp.MustCompile(`tracer: (>=)?(\d+) events seen, (>=)?(\d+) lost(?: \(([^)]*)\))?`)

func (m *tracerMode) Stop(ctx context.Context, run *Run) (Observation, error) {
	obs := Observation{Seen: -1, Label: m.label}
	if m.w == nil {
		return obs, fmt.Errorf("not started")
	}
	w := m.w
	m.w = nil
	total, err := w.stop(syscall.SIGTERM, 2*time.Minute)
	if m.cpu.ok {
		obs.TracerCPU = max(total-m.cpu.start, 0)
	}
	obs.KauditdCPU = m.kauditd.Since()
	if err != nil {
		return obs, err
	}
	if m.backend == "audit" && m.auditctl != "" {
		if st, err := auditctlStatus(m.auditctl); err == nil {
			obs.BacklogWait = backlogWait(m.wait0, st.WaitActual)
		}
	}
	var summary []string
	for _, l := range w.Lines() {
		if s := summaryRe.FindStringSubmatch(l); s != nil {
			summary = s
		}
	}
	if summary == nil {
		return obs, fmt.Errorf("tracer watch printed no summary line: %s", w.output())
	}
	obs.Lost, _ = strconv.ParseInt(summary[4], 10, 64)
	if obs.Lost > 0 || summary[3] != "" {
		// Loss is node-wide: say where, so that it can be told apart from the workload's events.
		obs.Note = joinNote(obs.Note, fmt.Sprintf("the watcher lost %s%d of %s%s events node-wide (%s)",
			summary[3], obs.Lost, summary[1], summary[2], summary[5]))
	}
	evs, err := readJSONLogFile(m.logPath(run))
	if err != nil {
		return obs, err
	}
	c := countTree(evs, uint32(run.RootPID), run.Threads)
	obs.Seen = c.Total()
	obs.Note = joinNote(obs.Note, countNote(run.Workload, c))
	return obs, nil
}

func (m *tracerMode) Teardown() error {
	if m.w != nil {
		_, err := m.w.stop(syscall.SIGTERM, 2*time.Minute)
		m.w = nil
		return err
	}
	return nil
}

// countNote says which classes differ from what the workload must make,
// and what was set apart.
func countNote(w *Workload, c treeCount) string {
	note := ""
	if w.Known && c.Counts != w.Expected {
		note = fmt.Sprintf("saw %s, expected %s", c.Counts, w.Expected)
	}
	if c.FailedForks > 0 {
		note = joinNote(note, fmt.Sprintf("%d fork calls that made no process (restarted clones) not counted", c.FailedForks))
	}
	return note
}
