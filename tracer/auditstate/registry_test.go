// SPDX-License-Identifier: Apache-2.0

//go:build linux

package auditstate

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestRegistry: one file per process that the watch and the audit backend
// share, gone when both have left; dead registrations, an earlier
// version's peer-PID.json and audit-PID.json included, are found.
func TestRegistry(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("state files are root's")
	}
	dir := filepath.Join(t.TempDir(), "state")
	self := os.Getpid()
	if err := Register(dir, func(r *Registration) { r.Watch = true }); err != nil {
		t.Fatal(err)
	}
	if err := Register(dir, func(r *Registration) { r.Key = "tracer-x" }); err != nil {
		t.Fatal(err)
	}
	live, _ := Registrations(dir)
	if len(live) != 1 || live[0].PID != self || !live[0].Watch || live[0].Key != "tracer-x" || live[0].Start == 0 {
		t.Fatalf("live = %+v, want this process with both parts", live)
	}
	if w := Watchers(dir); len(w) != 0 {
		t.Errorf("Watchers = %v: this process is not another tracer", w)
	}
	if err := Unregister(dir, func(r *Registration) { r.Key = "" }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, RegistrationFile(self))); err != nil {
		t.Fatalf("the watch's part went with the audit backend's: %v", err)
	}
	if err := Unregister(dir, func(r *Registration) { r.Watch = false }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, RegistrationFile(self))); !os.IsNotExist(err) {
		t.Fatalf("registration left after both parts left: %v", err)
	}
	// An earlier process's file under this pid (killed, the pid reused):
	// none of its parts carry over to this process's registration.
	if err := WriteStateFile(dir, RegistrationFile(self), []byte(`{"pid":`+strconv.Itoa(self)+`,"start_time":1,"key":"tracer-stale"}`)); err != nil {
		t.Fatal(err)
	}
	if err := Register(dir, func(r *Registration) { r.Watch = true }); err != nil {
		t.Fatal(err)
	}
	if live, _ := Registrations(dir); len(live) != 1 || live[0].Key != "" || !live[0].Watch {
		t.Errorf("live = %+v: a stale file's key carried over", live)
	}
	if err := Unregister(dir, func(r *Registration) { r.Watch = false }); err != nil {
		t.Fatal(err)
	}
	// pid 1 did not start at tick 1: these are a killed tracer's.
	for name, b := range map[string]string{
		"peer-1.json":   `{"pid":1,"start_time":1}`,
		"audit-1.json":  `{"pid":1,"start_time":1,"key":"tracer-1-1"}`,
		"tracer-1.json": `{"pid":1,"start_time":1,"watch":true}`,
		RecordFile:      `{}`,
	} {
		if err := WriteStateFile(dir, name, []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	live, dead := Registrations(dir)
	if len(live) != 0 || len(dead) != 3 {
		t.Fatalf("live %+v dead %+v; want 3 dead", live, dead)
	}
	for _, r := range dead {
		if err := Remove(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != RecordFile {
		t.Errorf("left in the state dir: %v; want only %s", ents, RecordFile)
	}
}
