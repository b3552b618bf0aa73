// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/elastic/go-libaudit/v2/rule"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/audit"
	"github.com/tracer-dev/tracer/tracer/auditstate"
	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// The audit floor: the audit mode's rules, read by a consumer that does
// nothing with the records. What a workload pays then is the kernel's own
// cost -- building the records at syscall exit and queueing them -- plus
// the least any reader adds. The audit mode's distance to it is what
// tracer's backend costs. Two floors, so that each mode is compared with
// the records it makes the kernel build: audit-floor asks for the records
// the audit mode asks for (its lean-records exclude rules, where no other
// reader runs), audit-floor-classic for every record (SYSCALL, EXECVE,
// PATH, OBJ_PID, PROCTITLE, CWD, EOE), as auditd and laurel read them.

// floorBacklog and the zero wait time are what the audit backend sets
// while no audit daemon runs, so that both run against the same queue.
const floorBacklog = 1 << 17

// AuditFloorStats is what the floor consumer read: `tracer __audit-floor
// --stats-file` writes it as JSON for the audit-floor mode.
type AuditFloorStats struct {
	Records uint64 `json:"records"`
	// KernelLost is the growth of the kernel's lost counter; SocketLost
	// counts receive-buffer overflows (multicast only).
	KernelLost uint64 `json:"kernel_lost"`
	SocketLost uint64 `json:"socket_lost"`
	Beside     string `json:"beside,omitempty"` // the holder of the audit PID it read beside, or ""
	// Excludes are exclude rules loaded on the node (not the floor's):
	// they apply to every consumer, and the floor's records are not the
	// classic set then.
	Excludes int `json:"excludes,omitempty"`
	// Lean are the record types the floor's own exclude rules dropped
	// (the audit mode's lean records); none for the classic floor, or
	// beside another reader of the records.
	Lean []string `json:"lean,omitempty"`
}

// RunAuditFloor is `tracer __audit-floor`: it loads the rules `tracer
// watch --backend audit` loads (exec, fork, signal), with lean, where no
// other program reads the records, the exclude rules that watch adds
// there too (audit.AddLeanExcludes), reads the multicast group as the
// audit backend does, and discards every record until ctx ends. ready is
// called once the rules are in place. Everything it changed is put back
// before it returns.
func RunAuditFloor(ctx context.Context, lean bool, ready func(beside string)) (st AuditFloorStats, err error) {
	if os.Geteuid() != 0 {
		return st, vocab.Usagef("the audit floor needs root: run tracer bench with sudo")
	}
	ctl, status, err := auditstate.OpenStatus()
	if err != nil {
		return st, err
	}
	defer ctl.Close()
	if auditstate.Locked(status) {
		return st, vocab.Usagef("%w", auditstate.ErrLocked)
	}
	var undo []func() error
	defer func() {
		for i := len(undo) - 1; i >= 0; i-- {
			if uerr := undo[i](); uerr != nil && err == nil {
				err = uerr
			}
		}
	}()
	// What the floor changes (enabled, the backlog) goes back as found.
	found := auditstate.SettingsOf(status)
	undo = append(undo, func() error {
		now, err := ctl.GetStatus()
		if err != nil {
			return fmt.Errorf("reading audit status: %w", err)
		}
		_, err = found.Restore(ctl, now, auditstate.Recorded...)
		return err
	})
	if status.Enabled == 0 {
		if err := auditstate.Enabled.Apply(ctl, 1); err != nil {
			return st, fmt.Errorf("enabling audit: %w", err)
		}
	}
	lost0 := status.Lost
	if rules, err := ctl.GetRules(); err == nil {
		for _, r := range rules {
			if text, err := rule.ToCommandLine(rule.WireFormat(r), false); err == nil && strings.Contains(text, "exclude") {
				st.Excludes++
			}
		}
	}

	// Like the audit backend, the floor never takes the audit PID (it is
	// the node's audit daemon's): it reads the multicast group, and sizes
	// the backlog as the backend does while no daemon holds the PID.
	holder := int(status.PID)
	if holder != 0 && tracer.ProcessAlive(holder) {
		st.Beside, _ = host.ProcComm(uint32(holder))
	} else {
		if status.Failure == 2 {
			return st, vocab.Usagef("audit failure mode is 2 (panic) and no audit daemon runs: the floor's records would fill the kernel's hold queue and panic the node")
		}
		if status.BacklogLimit < floorBacklog {
			if err := auditstate.BacklogLimit.Apply(ctl, floorBacklog); err != nil {
				return st, fmt.Errorf("setting audit backlog limit: %w", err)
			}
		}
		if status.BacklogWaitTime != 0 {
			if err := auditstate.BacklogWaitTime.Apply(ctl, 0); err != nil {
				return st, fmt.Errorf("setting audit backlog_wait_time: %w", err)
			}
		}
	}
	c, err := auditstate.NewConn(auditstate.GroupReadLog)
	if err != nil {
		return st, fmt.Errorf("joining the audit multicast group: %w", err)
	}
	undo = append(undo, c.Close)
	c.SetRecvBuffer(64 << 20)
	if err := c.SetRecvTimeout(100 * time.Millisecond); err != nil {
		return st, err
	}

	if lean && st.Beside == "" {
		added, remove, err := audit.AddLeanExcludes(ctl, true) // its rules watch signals
		if err != nil {
			return st, err
		}
		undo = append(undo, remove)
		st.Lean = added
	}

	types, _ := vocab.ParseTypes("exec,fork,signal")
	sigs, _ := vocab.ParseSignals("")
	set, err := auditrules.Build(auditrules.Options{Arch: "auto", Types: types, Signals: sigs,
		ScopeAUID: vocab.UnsetID, Key: auditrules.InstanceKey(os.Getpid(), selfStart()), Has32Bit: host.Running32Bit})
	if err != nil {
		return st, err
	}
	var added []rule.WireFormat
	undo = append(undo, func() error {
		var errs []error
		for _, wf := range added {
			errs = append(errs, ctl.DeleteRule(wf))
		}
		added = nil
		return errors.Join(errs...)
	})
	for _, r := range set.Rules {
		wf, err := r.Wire()
		if err != nil {
			return st, fmt.Errorf("building audit rule: %w", err)
		}
		if err := ctl.AddRule(wf); err != nil {
			return st, fmt.Errorf("adding audit rule %q: %w", r.Text(), err)
		}
		added = append(added, wf)
	}
	ready(st.Beside)

	bt := auditstate.NewBatch(64, 9000)
	drainUntil := time.Time{}
	for {
		if drainUntil.IsZero() && ctx.Err() != nil {
			// No new records once the rules are gone; what is queued is read
			// (and dropped) so that the next run starts from an empty backlog.
			var errs []error
			for _, wf := range added {
				errs = append(errs, ctl.DeleteRule(wf))
			}
			added = nil
			if err := errors.Join(errs...); err != nil {
				return st, fmt.Errorf("removing audit rules: %w", err)
			}
			drainUntil = time.Now().Add(5 * time.Second)
		}
		n, err := c.ReadBatch(bt)
		switch {
		case err == nil:
			st.Records += uint64(n)
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EWOULDBLOCK):
			if !drainUntil.IsZero() {
				// Quiet for a receive timeout after the rules went: drained.
				if s, err := ctl.GetStatus(); err == nil {
					st.KernelLost = uint64(s.Lost - lost0)
				}
				return st, nil
			}
		case errors.Is(err, syscall.ENOBUFS):
			st.SocketLost++
		default:
			return st, fmt.Errorf("reading audit records: %w", err)
		}
		if !drainUntil.IsZero() && time.Now().After(drainUntil) {
			if s, err := ctl.GetStatus(); err == nil {
				st.KernelLost = uint64(s.Lost - lost0)
			}
			return st, nil
		}
	}
}

// selfStart is this process's start time, which makes its rule key
// unique: cleanup tells its rules from a live tracer's.
func selfStart() uint64 {
	start, _ := host.ReadStartTicks(uint32(os.Getpid()))
	return start
}

// auditFloorMode runs `tracer __audit-floor` around each run, as the audit
// mode runs `tracer watch`.
type auditFloorMode struct {
	self    string
	classic bool // audit-floor-classic: every record, no exclude rules

	tracerChild
}

func init() {
	registerMode(modeSpec{name: "audit-floor", rank: 20, inDefault: true, inQuick: true, audit: true, color: "#f2c189",
		watches: "`tracer __audit-floor`: the same audit rules, the same lean-records exclude rules (where no other program reads the records, as the audit mode does), " +
			"and a reader of the multicast group, as the audit backend (neither takes the audit PID), that discards every record: " +
			"what the kernel spends on the records the audit mode asks for, which no audit consumer can go below; the audit mode's floor",
		countedFrom: "the records it discarded, and the record types left out (a note)", needs: needs{root: true},
		make: func(env modeEnv) (Mode, error) { return &auditFloorMode{self: env.self}, nil }})
	registerMode(modeSpec{name: "audit-floor-classic", rank: 21, inDefault: true, inQuick: true, audit: true, color: "#f7d9b0",
		watches: "`tracer __audit-floor --classic`: the same, with every record (no exclude rules), as auditd and laurel read them: " +
			"their floor, so that each mode is compared with the records it makes the kernel build",
		countedFrom: "the records it discarded (a note)", needs: needs{root: true},
		make: func(env modeEnv) (Mode, error) { return &auditFloorMode{self: env.self, classic: true}, nil }})
}

func (m *auditFloorMode) Name() string {
	if m.classic {
		return "audit-floor-classic"
	}
	return "audit-floor"
}
func (m *auditFloorMode) WritesLog() bool { return false }

func (m *auditFloorMode) Setup(context.Context) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the audit floor needs root")
	}
	if _, err := auditstate.Status(); err != nil {
		return Skipf("audit is not available here (%v)", err)
	}
	return nil
}

func (m *auditFloorMode) Start(ctx context.Context, run *Run) error {
	_ = os.Remove(m.statsPath(run))
	args := []string{"__audit-floor", "--stats-file", m.statsPath(run)}
	if m.classic {
		args = append(args, "--classic")
	}
	cmd := exec.Command(m.self, args...)
	w, err := startWatcher(ctx, "tracer __audit-floor", cmd, false, "audit floor watching", 2*time.Minute)
	if err != nil {
		return err
	}
	m.started(w, true)
	return nil
}

func (m *auditFloorMode) statsPath(run *Run) string {
	return filepath.Join(run.Dir, m.Name()+"-stats.json")
}

func (m *auditFloorMode) Stop(ctx context.Context, run *Run) (Observation, error) {
	obs := Observation{Seen: -1}
	obs.Queued, obs.QueueLimit = auditQueued()
	if m.w == nil {
		return obs, fmt.Errorf("not started")
	}
	w, err := m.stopChild(&obs)
	if err != nil {
		return obs, err
	}
	st, err := readAuditFloorStats(m.statsPath(run))
	if err != nil {
		return obs, fmt.Errorf("%w: %s", err, w.output())
	}
	floorObservation(&obs, m.Name(), st)
	return obs, nil
}

// readAuditFloorStats reads what `tracer __audit-floor --stats-file` wrote.
func readAuditFloorStats(path string) (AuditFloorStats, error) {
	var st AuditFloorStats
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil {
		return st, fmt.Errorf("tracer __audit-floor wrote no --stats-file (%v)", err)
	}
	return st, nil
}

// floorObservation says in obs what the floor read: its label beside
// another holder of the audit PID, what it lost, and its records.
func floorObservation(obs *Observation, name string, st AuditFloorStats) {
	if st.Beside != "" {
		obs.Label = name + " (beside " + st.Beside + ")"
	}
	obs.Lost = int64(st.KernelLost + st.SocketLost)
	obs.Note = fmt.Sprintf("discarded %d records", st.Records)
	if len(st.Lean) > 0 {
		obs.Note = joinNote(obs.Note, "lean records as the audit mode's: no "+strings.Join(st.Lean, ", "))
	}
	if st.Excludes > 0 {
		obs.Note = joinNote(obs.Note, fmt.Sprintf("the node's %d exclude rules applied: fewer records than the classic set", st.Excludes))
	}
	if obs.Lost > 0 {
		obs.Note = joinNote(obs.Note, fmt.Sprintf("lost %d node-wide (kernel %d, socket %d)", obs.Lost, st.KernelLost, st.SocketLost))
	}
}

// FormatAuditFloorSummary is the floor's last line, for people (bench reads
// --stats-file).
func FormatAuditFloorSummary(st AuditFloorStats) string {
	s := fmt.Sprintf("tracer: audit floor: %d records discarded, %d lost (kernel %d, socket %d)",
		st.Records, st.KernelLost+st.SocketLost, st.KernelLost, st.SocketLost)
	if len(st.Lean) > 0 {
		s += "; lean records (no " + strings.Join(st.Lean, ", ") + ")"
	}
	if st.Excludes > 0 {
		s += fmt.Sprintf("; %d exclude rules of the node applied", st.Excludes)
	}
	return s
}

// FormatAuditFloorReady is the floor's ready line.
func FormatAuditFloorReady(beside string) string {
	if beside != "" {
		return "tracer: audit floor watching beside " + beside + " (reading the multicast copy of its records)"
	}
	return "tracer: audit floor watching (holding the audit PID)"
}
