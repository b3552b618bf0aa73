// SPDX-License-Identifier: Apache-2.0

//go:build linux

package audit

import (
	"slices"
	"sort"
	"strings"
	"testing"

	libaudit "github.com/elastic/go-libaudit/v2"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// loadedRules returns the kernel's audit rules, sorted.
func loadedRules(t *testing.T) []string {
	t.Helper()
	r := tracertest.AuditRules(t)
	sort.Strings(r)
	return r
}

func auditStatus(t *testing.T) *libaudit.AuditStatus { return tracertest.AuditStatus(t) }

// countKey names an event for exact counting: type and syscall or signal.
func countKey(e tracer.Event) string {
	switch e.Type {
	case vocab.TypeFork:
		return "fork/" + e.Syscall
	case vocab.TypeSignal:
		return "signal/" + e.Syscall + "/" + e.SignalName()
	case vocab.TypeExec:
		if e.Ret != 0 {
			return "exec/failed"
		}
		return "exec"
	case vocab.TypeExit:
		return "exit"
	}
	return e.Type.String()
}

// runWorkload runs the known workload binary under b and returns the events of its tree.
func runWorkload(t *testing.T, b tracer.Backend, cfg tracer.Config, args ...string) ([]tracer.Event, uint32) {
	t.Helper()
	return tracertest.RunWorkload(t, b, cfg, tracertest.BuildWorkload(t), args...)
}

// knownWorkload is the workload of the issue: execs (one failing), forks by
// every syscall, signals by every syscall, signals outside the filter.
var knownWorkload = []string{
	"exec", "5", "/bin/true", "execfail", "1",
	"fork", "5", "vfork", "5", "clone", "5", "clone3", "5",
	"kill", "5", "10", "tkill", "5", "10", "tgkill", "5", "10",
	"kill", "3", "12", "tgkill", "3", "12",
	"exit", "7",
}

// knownCounts is what knownWorkload must produce with --signal USR1 and all classes.
var knownCounts = map[string]int{
	"exec":                  1 + 5 + 5, // the workload itself, exec 5, and the 5 posix_spawn children
	"exec/failed":           1,
	"fork/fork":             5,
	"fork/vfork":            5 + 1 + 5, // vfork 5, plus exec 5 and execfail 1 use vfork
	"fork/clone":            5,
	"fork/clone3":           5,
	"signal/kill/SIGUSR1":   5,
	"signal/tkill/SIGUSR1":  5,
	"signal/tgkill/SIGUSR1": 5,
	"exit":                  1 + 5 + 5 + 5 + 5 + 5 + 1, // root; fork, vfork, clone children; /bin/true via exec and via clone3; the execfail child
}

func countEvents(events []tracer.Event, cfg tracer.Config) map[string]int {
	f := tracer.NewFilter(cfg)
	got := map[string]int{}
	for i := range events {
		if f.Match(&events[i]) {
			got[countKey(events[i])]++
		}
	}
	return got
}

func TestKnownWorkloadExactCounts(t *testing.T) {
	tracertest.LockAudit(t)
	before := loadedRules(t)
	stBefore := auditStatus(t)

	cfg := tracer.DefaultConfig()
	cfg.Types, _ = vocab.ParseTypes("all")
	cfg.Signals, _ = vocab.ParseSignals("USR1")
	cfg.ExecFailures = true // the workload's execfail is counted
	b := New()
	events, root := runWorkload(t, b, cfg, knownWorkload...)
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	got := countEvents(events, cfg)
	if !mapsEqual(got, knownCounts) {
		t.Errorf("counts of the workload's tree (root %d):\n got  %v\n want %v", root, got, knownCounts)
	}
	// Fields: every signal targets the workload itself, and the failed exec carries ENOENT.
	for _, e := range events {
		if e.Type == vocab.TypeSignal && (e.TargetPID != int32(root) || e.Ret != 0 || e.Comm != "workload") {
			t.Errorf("signal event fields: %+v", e)
		}
		if e.Type == vocab.TypeExec && e.Ret != 0 && (e.Ret != -2 || e.Filename != "/nonexistent/tracer-enoent") {
			t.Errorf("failed exec fields: %+v", e)
		}
		if e.Type == vocab.TypeExec && e.Ret == 0 && e.PID != root && (e.Filename != "/bin/true" || e.Comm != "workload") {
			t.Errorf("exec fields (comm must be the caller's before exec): %+v", e)
		}
		if e.Type == vocab.TypeExit && e.PID == root && e.ExitCode != 7 {
			t.Errorf("root exit code %d, want 7", e.ExitCode)
		}
	}
	st := b.Stats()
	if st.TotalLost() != 0 {
		t.Errorf("lost events: %v", st.Lost)
	}
	if after := loadedRules(t); !slices.Equal(before, after) {
		t.Errorf("audit rules changed:\n before %v\n after  %v", before, after)
	}
	stAfter := auditStatus(t)
	if stAfter.Enabled != stBefore.Enabled || stAfter.PID != stBefore.PID || stAfter.BacklogLimit != stBefore.BacklogLimit || stAfter.BacklogWaitTime != stBefore.BacklogWaitTime {
		t.Errorf("audit settings not restored:\n before %+v\n after  %+v", stBefore, stAfter)
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestRuleRefusedLeavesNothing(t *testing.T) {
	tracertest.LockAudit(t)
	before := loadedRules(t)
	stBefore := auditStatus(t)
	cfg := tracer.DefaultConfig()
	cfg.Arch = "b16"
	b := New()
	err := b.Start(cfg)
	if err == nil {
		b.Close()
		t.Fatal("Start with a bad arch succeeded")
	}
	if !strings.Contains(err.Error(), "b16") {
		t.Errorf("error does not name the bad input: %v", err)
	}
	if after := loadedRules(t); !slices.Equal(before, after) {
		t.Errorf("rules left behind: %v", after)
	}
	if st := auditStatus(t); st.Enabled != stBefore.Enabled || st.PID != stBefore.PID || st.BacklogLimit != stBefore.BacklogLimit {
		t.Errorf("settings changed by a failed Start: before %+v after %+v", stBefore, st)
	}
}
