// SPDX-License-Identifier: Apache-2.0

//go:build linux

package audit

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// startAuditd runs a private auditd logging to dir, with the node's own
// auditd, if one runs, paused meanwhile; the node's audit settings are put
// back when the test ends.
func startAuditd(t *testing.T, dir string) (pid int, logFile string) {
	t.Helper()
	tracertest.PauseNodeAuditd(t)
	tracertest.KeepAuditSettings(t)
	a := tracertest.StartAuditd(t, dir)
	return a.PID, a.LogFile
}

// With auditd running, the backend reads the multicast copy: auditd keeps
// its PID and its log keeps receiving records, ours included.
func TestAlongsideAuditd(t *testing.T) {
	tracertest.LockAudit(t)
	before := loadedRules(t)
	auditdPID, logFile := startAuditd(t, t.TempDir())

	cfg := tracer.DefaultConfig()
	cfg.Types, _ = vocab.ParseTypes("all")
	cfg.Signals, _ = vocab.ParseSignals("USR1")
	cfg.ExecFailures = true // the workload's execfail is counted
	b := New()
	events, _ := runWorkload(t, b, cfg, knownWorkload...)
	if pid := int(auditStatus(t).PID); pid != auditdPID {
		t.Errorf("audit PID is %d while tracer runs, want auditd's %d", pid, auditdPID)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := countEvents(events, cfg); !mapsEqual(got, knownCounts) {
		t.Errorf("counts alongside auditd:\n got  %v\n want %v", got, knownCounts)
	}
	if pid := int(auditStatus(t).PID); pid != auditdPID {
		t.Errorf("audit PID is %d after tracer stopped, want auditd's %d", pid, auditdPID)
	}
	if after := loadedRules(t); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("rules changed: before %v after %v", before, after)
	}
	// auditd's log got the workload's records and our rule removal; and it
	// keeps receiving: a new event after we left lands there too.
	key := b.Key()
	marker := exec.Command("/bin/sh", "-c", "exit 0")
	_ = marker.Run()
	deadline := time.Now().Add(5 * time.Second)
	var log []byte
	for time.Now().Before(deadline) {
		log, _ = os.ReadFile(logFile)
		if strings.Contains(string(log), `op=remove_rule key="`+key+`"`) && strings.Contains(string(log), `comm="workload"`) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, want := range []string{`comm="workload"`, `key="` + key + `"`, `op=remove_rule key="` + key + `"`} {
		if !strings.Contains(string(log), want) {
			t.Errorf("auditd's log %s lacks %s", logFile, want)
		}
	}
}
