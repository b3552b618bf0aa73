// SPDX-License-Identifier: Apache-2.0

//go:build linux

package audit

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

func excludeRules(rules []string) []string {
	var out []string
	for _, r := range rules {
		if strings.Contains(r, "never,exclude") {
			out = append(out, r)
		}
	}
	return out
}

// runLean runs the known workload with lean records in mode and returns
// the exclude rules loaded while it ran and the tree's counts.
func runLean(t *testing.T, mode tracer.LeanMode) (*Backend, []string, map[string]int) {
	t.Helper()
	cfg := tracer.DefaultConfig()
	cfg.Types, _ = vocab.ParseTypes("all")
	cfg.Signals, _ = vocab.ParseSignals("USR1")
	cfg.ExecFailures = true // the workload's execfail is counted
	cfg.LeanRecords = mode
	b := New()
	var during []string
	probe := &startProbe{Backend: b, after: func() { during = excludeRules(loadedRules(t)) }}
	events, _ := runWorkload(t, probe, cfg, knownWorkload...)
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return b, during, countEvents(events, cfg)
}

// Lean records: the kernel builds no PROCTITLE or EOE records (nor
// OBJ_PID where signals are not watched) while tracer holds the PID, every event is still exact (ended
// without its EOE), and the exclude rules are gone afterwards.
func TestLeanRecords(t *testing.T) {
	tracertest.LockAudit(t)
	// Lean records need the records to be tracer's alone: the node's
	// auditd, if one runs, is paused (TestLeanRecordsBesideAuditd and
	// TestAuditdRestartBesideTracer cover it).
	tracertest.PauseNodeAuditd(t)
	if other := otherReader(auditStatus(t)); other != "" {
		t.Skipf("%s reads the audit records: lean records stay off beside it", other)
	}
	before := loadedRules(t)
	if len(excludeRules(before)) > 0 {
		t.Skipf("the node has exclude rules of its own: %v", before)
	}
	b, during, got := runLean(t, tracer.LeanAuto)
	// The workload watches signals: OBJ_PID stays.
	want := auditrules.LeanTypes(true, false)
	if !b.lean || len(during) != len(want) || !strings.Contains(strings.Join(during, "\n"), "msgtype=EOE") || strings.Contains(strings.Join(during, "\n"), "msgtype=OBJ_PID") {
		t.Errorf("lean=%v, exclude rules while running: %v, want %v", b.lean, during, want)
	}
	if !mapsEqual(got, knownCounts) {
		t.Errorf("counts with lean records:\n got  %v\n want %v", got, knownCounts)
	}
	if after := loadedRules(t); !slices.Equal(before, after) {
		t.Errorf("rules left:\n before %v\n after  %v", before, after)
	}
	// And off when asked.
	b, during, got = runLean(t, tracer.LeanOff)
	if b.lean || len(during) != 0 {
		t.Errorf("--lean-records=false: lean=%v, exclude rules %v", b.lean, during)
	}
	if !mapsEqual(got, knownCounts) {
		t.Errorf("counts without lean records:\n got  %v\n want %v", got, knownCounts)
	}
}

// Beside a real auditd, lean records stay off unless asked: exclude rules
// are global and auditd's log would miss those records.
func TestLeanRecordsBesideAuditd(t *testing.T) {
	tracertest.LockAudit(t)
	before := loadedRules(t)
	startAuditd(t, t.TempDir())
	b, during, got := runLean(t, tracer.LeanAuto)
	if b.lean || len(during) != 0 {
		t.Errorf("beside auditd: lean=%v, exclude rules %v; want none", b.lean, during)
	}
	if !mapsEqual(got, knownCounts) {
		t.Errorf("counts beside auditd:\n got  %v\n want %v", got, knownCounts)
	}
	b, during, got = runLean(t, tracer.LeanOn)
	// auditd ends events at their EOE: that one stays.
	want := auditrules.LeanTypes(true, true)
	if !b.lean || len(during) != len(want) || strings.Contains(strings.Join(during, "\n"), "msgtype=EOE") {
		t.Errorf("beside auditd with --lean-records: lean=%v, exclude rules %v; want %v", b.lean, during, want)
	}
	if !mapsEqual(got, knownCounts) {
		t.Errorf("counts beside auditd, lean:\n got  %v\n want %v", got, knownCounts)
	}
	if after := loadedRules(t); !slices.Equal(before, after) {
		t.Errorf("rules left:\n before %v\n after  %v", before, after)
	}
}

// startProbe looks at the node right after Start.
type startProbe struct {
	*Backend
	after func()
}

func (p *startProbe) Start(cfg tracer.Config) error {
	err := p.Backend.Start(cfg)
	if err == nil {
		p.after()
	}
	return err
}

// The node's own rules exclude PATH records (or PATH and EOE): every exec
// still ends, lean records keep EOE where the node dropped PATH, and the
// node's exclude rules stay after tracer.
func TestNodeExcludeRules(t *testing.T) {
	for _, types := range [][]string{{"PATH"}, {"PATH", "EOE"}} {
		t.Run(strings.Join(types, "+"), func(t *testing.T) {
			tracertest.LockAudit(t)
			tracertest.PauseNodeAuditd(t)
			for _, typ := range types {
				r := auditrules.ExcludeRule(typ).Text()
				if out, err := exec.Command("sh", "-c", "auditctl "+r).CombinedOutput(); err != nil {
					t.Fatalf("auditctl %s: %v %s", r, err, out)
				}
				t.Cleanup(func() { _ = exec.Command("sh", "-c", "auditctl "+strings.Replace(r, "-a ", "-d ", 1)).Run() })
			}
			before := loadedRules(t)
			b, during, got := runLean(t, tracer.LeanAuto)
			if !mapsEqual(got, knownCounts) {
				t.Errorf("counts with the node excluding %v:\n got  %v\n want %v", types, got, knownCounts)
			}
			if lost := b.Stats().TotalLost(); lost != 0 {
				t.Errorf("lost %d (%v)", lost, b.Stats().Lost)
			}
			if len(types) == 1 && strings.Contains(strings.Join(during, "\n"), "msgtype=EOE") {
				t.Errorf("lean records excluded EOE although the node drops PATH: %v", during)
			}
			if after := loadedRules(t); !slices.Equal(before, after) {
				t.Errorf("rules after tracer:\n %v\n want the node's\n %v", after, before)
			}
		})
	}
}
