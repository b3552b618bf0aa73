// SPDX-License-Identifier: Apache-2.0

package auditstate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/tracer-dev/tracer/tracer/host"
)

// registerMu orders this process's changes to its own registration: the
// watch and the audit backend each change their part of the one file.
var registerMu sync.Mutex

// Register changes this process's registration in state directory dir
// (made where it is missing) with update, and writes it atomically.
func Register(dir string, update func(*Registration)) error {
	registerMu.Lock()
	defer registerMu.Unlock()
	d, err := OpenStateDir(dir)
	if err != nil {
		return err
	}
	d.Close()
	r := own(dir)
	update(&r)
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("registering in %s: %w", dir, err)
	}
	if err := WriteStateFile(dir, RegistrationFile(r.PID), b); err != nil {
		return fmt.Errorf("registering in %s: %w", dir, err)
	}
	return nil
}

// Unregister takes back this process's part of its registration in dir
// (update clears it); the file goes when no part is left.
func Unregister(dir string, update func(*Registration)) error {
	registerMu.Lock()
	defer registerMu.Unlock()
	r := own(dir)
	update(&r)
	name := RegistrationFile(r.PID)
	if r.empty() {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("unregistering: %w", err)
		}
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("unregistering: %w", err)
	}
	if err := WriteStateFile(dir, name, b); err != nil {
		return fmt.Errorf("unregistering: %w", err)
	}
	return nil
}

// own reads this process's registration in dir, or starts one: a file of
// an earlier process with this pid (killed, its pid reused) is not this
// one's, and none of its parts carry over.
func own(dir string) Registration {
	pid := os.Getpid()
	start, _ := host.ReadStartTicks(uint32(pid))
	var r Registration
	if b, err := ReadStateFile(dir, RegistrationFile(pid)); err == nil {
		_ = json.Unmarshal(b, &r)
	}
	if r.PID != pid || r.Start != start {
		r = Registration{PID: pid, Start: start}
	}
	return r
}

// legacy are an earlier version's registrations, read so that `tracer
// cleanup` after an upgrade still finds a killed tracer's: peer-PID.json
// (a watching tracer's pid and start time) and audit-PID.json (the audit
// backend's, with the fields Registration has).
var legacy = []struct {
	prefix string
	watch  bool
}{{"peer-", true}, {"audit-", false}}

// Alive reports whether the registered process still runs: this process,
// or one with the same pid and start time.
func (r Registration) Alive() bool {
	if r.PID == os.Getpid() {
		return true
	}
	if r.PID <= 0 || r.Start == 0 {
		return false
	}
	start, ok := host.ReadStartTicks(uint32(r.PID))
	return ok && start == r.Start
}

// Registrations reads every registration in dir, split into the live ones
// and those of processes that are gone.
func Registrations(dir string) (live, dead []Registration) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") || name == RecordFile {
			continue
		}
		watch, known := false, strings.HasPrefix(name, "tracer-")
		for _, l := range legacy {
			if strings.HasPrefix(name, l.prefix) {
				watch, known = l.watch, true
			}
		}
		if !known {
			continue
		}
		b, err := ReadStateFile(dir, name)
		if err != nil {
			continue
		}
		var r Registration
		if json.Unmarshal(b, &r) != nil || r.PID <= 0 {
			continue
		}
		r.file, r.Watch = name, r.Watch || watch
		if r.Alive() {
			live = append(live, r)
		} else {
			dead = append(dead, r)
		}
	}
	return live, dead
}

// Watchers lists the pids of the watching tracers registered in dir other
// than this process that still run.
func Watchers(dir string) []uint32 {
	live, _ := Registrations(dir)
	var pids []uint32
	for _, r := range live {
		if r.Watch && r.PID != os.Getpid() {
			pids = append(pids, uint32(r.PID))
		}
	}
	return pids
}

// Remove deletes the file r was read from in dir.
func Remove(dir string, r Registration) error {
	if err := os.Remove(filepath.Join(dir, r.File())); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("removing %s: %w", r.File(), err)
	}
	return nil
}
