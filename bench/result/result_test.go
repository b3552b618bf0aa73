// SPDX-License-Identifier: Apache-2.0

package result

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// These tests read and write files only: they run on any system, as the
// report path (tracer report) must.

func TestWriteRead(t *testing.T) {
	ceiling := 410000.0
	want := &File{
		Schema: Schema,
		Node:   Facts{Hostname: "web-1", Kernel: "6.1.0"},
		Run:    &RunInfo{MachineID: "0123abcd", Started: time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC), TargetS: 2, Quick: true},
		Results: []Row{
			{Workload: "signal-storm", Mode: "none", Rounds: 3, ElapsedS: 0.6, RatioElapsed: 1, EventsExpected: 200001, EventsSeen: -1},
			{Workload: "signal-storm", Mode: "audit", Label: "audit (beside auditd)", Rounds: 3, ElapsedS: 0.9, RatioElapsed: 1.5,
				RatioCI95: []float64{1.4, 1.6}, Floor: "audit-floor", RatioFloor: 1.1, RatioFloorCI95: []float64{1.05, 1.15},
				EventsExpected: 200001, EventsSeen: 200001, MaxEventsPerS: &ceiling, MaxEventsLimit: "lost"},
			{Workload: "signal-storm", Mode: "bpftrace", Skipped: "bpftrace is not installed"},
		},
		Sweep: []SweepStep{{Workload: "signal-storm", Mode: "audit", TargetPerS: 20000, Events: 20000, PerS: 19990, Seen: 20000, OK: true}},
	}
	path := filepath.Join(t.TempDir(), "r.json")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Encode(out, want); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back:\n%+v\nwant\n%+v", got, want)
	}
}

func TestReadSchemas(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Schema 1 rows have no interval, noise flag, floor or ceiling.
	f, err := Read(write("v1.json", `{"schema": 1, "node": {"hostname": "old", "kernel": "3.10.0"}, "results": [
		{"workload": "cis-shell", "mode": "audit", "rounds": 5, "elapsed_s": 2.5, "ratio_elapsed": 1.25,
		 "events_expected": 10, "events_seen": 10, "events_lost": 0}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := f.Results[0]; f.Schema != 1 || r.RatioElapsed != 1.25 || r.RatioCI95 != nil || r.Noise || r.MaxEventsPerS != nil {
		t.Errorf("schema 1: %+v", f)
	}
	// A file with nothing to report on is refused, and what is wrong is
	// said in the file's terms, never in Go's.
	row := `[{"workload": "cis-shell", "mode": "none", "rounds": 1, "ratio_elapsed": 1}]`
	for _, c := range []struct{ body, want string }{
		{`{"schema": 0, "node": {"kernel": "6.1"}, "results": ` + row + `}`, `no "schema"`},
		{`{"schema": 3, "node": {}, "results": []}`, "schemas 1 to 2"},
		{`elapsed 3.1s`, "not JSON (at byte 1"},
		{`{"schema": 2}`, `has no "node" facts and no "results": nothing to report`},
		{`{}`, `has no "schema", no "node" facts and no "results"`},
		{" \n", "is empty: nothing to report"},
		{`{"schema": 2, "node": {"hostname": "web-1", "kernel": "6.1"}}`, `has no "results"`},
		{`{"schema": 2, "node": {"hostname": "web-1", "kernel": "6.1"}, "results": []}`, `has no "results"`},
		{`{"schema": 2, "node": {"hostname": "web-1"}, "results": ` + row + `}`, `has no "node" facts`},
		{`[{"schema": 2}]`, "the file holds a JSON array where an object belongs"},
		{`{"schema": "2"}`, `"schema" holds a JSON string where a whole number belongs`},
		{`{"schema": 2, "results": {}}`, `"results" holds a JSON object where a list belongs`},
		{`{"schema": 2, "run": {"started": "yesterday"}}`, `the time "yesterday" is not an RFC 3339 time`},
	} {
		_, err := Read(write("bad.json", c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "bad.json") {
			t.Errorf("%s: %v, want %q and the file's name", c.body, err, c.want)
		} else if goish := regexp.MustCompile(`Go value|result\.|\[\]|float64|int\b|2006`); goish.MatchString(err.Error()) {
			t.Errorf("%s: %v speaks Go", c.body, err)
		}
	}
	if _, err := Read(filepath.Join(dir, "missing.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestRowNames(t *testing.T) {
	r := Row{Mode: "audit"}
	if r.Name() != "audit" || r.ModeLabel() != "audit" {
		t.Errorf("plain: %q, %q", r.Name(), r.ModeLabel())
	}
	r.Label, r.Storage = "audit (beside auditd)", "hdd"
	if r.Name() != "audit (beside auditd)" || r.ModeLabel() != "audit (beside auditd) (hdd)" {
		t.Errorf("labelled: %q, %q", r.Name(), r.ModeLabel())
	}
}

func TestSweepStepBehind(t *testing.T) {
	for _, c := range []struct {
		queued, limit int64
		want          bool
	}{{0, 0, false}, {3000, 131072, false}, {65536, 131072, false}, {65537, 131072, true}, {10, 0, false}} {
		if got := (SweepStep{Queued: c.queued, QueueLimit: c.limit}).Behind(); got != c.want {
			t.Errorf("%d of %d queued: behind %v, want %v", c.queued, c.limit, got, c.want)
		}
	}
}
