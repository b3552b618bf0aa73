// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer/auditstate"
	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// The audit floor compares like with like: audit-floor makes the kernel
// build the records the audit mode asks for (its lean-records exclude
// rules, recorded for cleanup before they are added), audit-floor-classic
// every record, as auditd reads them. Either leaves the exclude list and
// the state directory as it found them.
func TestAuditFloorLeanAndClassic(t *testing.T) {
	tracertest.NeedRoot(t)
	tracertest.LockAudit(t)
	// Lean records only where nothing but tracers reads the records.
	tracertest.PauseNodeAuditd(t)
	rules := func() string {
		out, err := exec.Command("auditctl", "-l").CombinedOutput()
		if err != nil {
			t.Fatalf("auditctl -l: %v %s", err, out)
		}
		return string(out)
	}
	nodeFile := filepath.Join(auditstate.StateDir, "audit-node.json")
	_, statErr := os.Stat(nodeFile)
	hadNodeFile := statErr == nil
	before := rules()
	for _, lean := range []bool{true, false} {
		ctx, cancel := context.WithCancel(context.Background())
		type result struct {
			st  AuditFloorStats
			err error
		}
		done := make(chan result, 1)
		during := make(chan string, 1)
		go func() {
			st, err := RunAuditFloor(ctx, lean, func(string) {
				during <- rules()
				cancel()
			})
			done <- result{st, err}
		}()
		var seen string
		select {
		case seen = <-during:
		case <-time.After(time.Minute):
			cancel()
			t.Fatal("the floor never got ready")
		}
		r := <-done
		if r.err != nil {
			t.Fatalf("lean %v: %v", lean, r.err)
		}
		excludes := strings.Contains(seen, "never,exclude") && strings.Contains(seen, "msgtype=EOE")
		if lean && (!excludes || !slices.Contains(r.st.Lean, "EOE")) {
			t.Errorf("audit-floor: the audit mode's exclude rules were not in force (lean %v):\n%s", r.st.Lean, seen)
		}
		if !lean && (strings.Contains(seen, "never,exclude") || len(r.st.Lean) != 0) {
			t.Errorf("audit-floor-classic: exclude rules in force (lean %v):\n%s", r.st.Lean, seen)
		}
		if after := rules(); after != before {
			t.Errorf("lean %v: the rules were\n%s\nbefore and are\n%s\nafter", lean, before, after)
		}
		if _, err := os.Stat(nodeFile); (err == nil) != hadNodeFile {
			t.Errorf("lean %v: %s left behind or removed (%v)", lean, nodeFile, err)
		}
	}
}
