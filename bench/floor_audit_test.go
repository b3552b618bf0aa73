// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The audit-floor mode reads the floor's figures from its --stats-file
// (JSON), not from its summary line: beside auditd, with the node's
// exclude rules and some loss, every figure reaches the observation.
func TestAuditFloorStatsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit-floor-stats.json")
	want := AuditFloorStats{Records: 123456, KernelLost: 7, SocketLost: 2, Beside: "auditd", Excludes: 3}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := readAuditFloorStats(path)
	if err != nil || !reflect.DeepEqual(st, want) {
		t.Fatalf("read %+v, %v; want %+v", st, err, want)
	}
	var obs Observation
	floorObservation(&obs, "audit-floor", st)
	if obs.Label != "audit-floor (beside auditd)" || obs.Lost != 9 ||
		obs.Note != "discarded 123456 records; the node's 3 exclude rules applied: fewer records than the classic set; lost 9 node-wide (kernel 7, socket 2)" {
		t.Errorf("observation %+v", obs)
	}
	// Holding the audit PID, nothing lost.
	obs = Observation{}
	floorObservation(&obs, "audit-floor", AuditFloorStats{Records: 10})
	if obs.Label != "" || obs.Lost != 0 || obs.Note != "discarded 10 records" {
		t.Errorf("observation %+v", obs)
	}
	if _, err := readAuditFloorStats(filepath.Join(t.TempDir(), "none.json")); err == nil {
		t.Error("no error for a missing stats file")
	}
}
