// SPDX-License-Identifier: Apache-2.0

//go:build linux

package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	libaudit "github.com/elastic/go-libaudit/v2"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/auditstate"
	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// The state directory (auditstate.StateDir) is where running tracers tell
// each other, and `tracer cleanup`, what they own and what they changed.
// Each process has one registration there (auditstate.Registration: its
// pid and start time, the audit backend's rule key while it runs); the
// node's settings as they were before the first tracer changed them are in
// the auditstate.Record, restored by the last tracer to leave. Every change
// to the directory and to the node's audit settings is made under its lock
// (auditstate.Lock), so tracers that start and stop at once agree on who is
// last.

// owner is one running tracer's claim: rules with Key belong to it while
// a process with PID and Start runs.
type owner = auditstate.Registration

// nodeSettings is what tracers recorded of the node's settings.
type nodeSettings = auditstate.Record

func ownerPath(pid int) string {
	return filepath.Join(auditstate.StateDir, auditstate.RegistrationFile(pid))
}
func nodePath() string { return auditstate.RecordPath() }

// writeOwner records this process's audit backend (key, port, signals) in
// its registration.
func writeOwner(me owner) error {
	return auditstate.Register(auditstate.StateDir, func(r *auditstate.Registration) {
		r.Key, r.Port, r.Signals = me.Key, me.Port, me.Signals
	})
}

// removeOwner takes this process's audit backend out of its registration.
func removeOwner() error {
	return auditstate.Unregister(auditstate.StateDir, func(r *auditstate.Registration) {
		r.Key, r.Port, r.Signals = "", 0, false
	})
}

// lockState takes the state directory's lock (auditstate.Lock); the
// returned func releases it. A state another user could have written is
// refused, in one line, before anything in it is used.
func lockState() (func(), error) {
	unlock, err := auditstate.Lock()
	return unlock, err
}

// writeJSON replaces a state file atomically (auditstate.WriteStateFile).
func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return auditstate.WriteStateFile(filepath.Dir(path), filepath.Base(path), b)
}

// readJSON reads a state file, checked as the directory's lock checks it.
func readJSON(path string, v any) error {
	b, err := auditstate.ReadStateFile(filepath.Dir(path), filepath.Base(path))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// processStart is the process's start time in clock ticks since boot
// (host.ReadStartTicks); 0 when the process is gone.
func processStart(pid int) uint64 {
	start, _ := host.ReadStartTicks(uint32(pid))
	return start
}

// owners reads the registrations: the live ones with an audit backend, and
// every dead one (for Cleanup to remove).
func owners() (live, dead []owner) {
	all, dead := auditstate.Registrations(auditstate.StateDir)
	for _, o := range all {
		if o.Key != "" {
			live = append(live, o)
		}
	}
	return live, dead
}

// othersAlive reports whether a tracer other than this process runs.
func othersAlive() bool {
	live, _ := owners()
	for _, o := range live {
		if o.PID != os.Getpid() {
			return true
		}
	}
	return false
}

// readSettings reads what tracers recorded; none is an empty record.
func readSettings() (nodeSettings, error) {
	r, err := auditstate.ReadRecord()
	return r, err
}

// SetChangeHook installs f to be called after each change tracer makes to
// the node's audit state (auditstate.SetChangeHook).
func SetChangeHook(f func(step string)) { auditstate.SetChangeHook(f) }

func changed(step string) { auditstate.Changed(step) }

// recordExclude notes a lean-records exclude rule a tracer is about to
// add; forgetExclude takes the note back when adding it failed.
func recordExclude(typ string) error {
	s, err := readSettings()
	if err != nil {
		return err
	}
	s.Excludes = append(s.Excludes, typ)
	return writeJSON(nodePath(), &s)
}

func forgetExclude(typ string) error {
	s, err := readSettings()
	if err != nil {
		return err
	}
	if i := slices.Index(s.Excludes, typ); i >= 0 {
		s.Excludes = slices.Delete(s.Excludes, i, i+1)
	}
	return writeJSON(nodePath(), &s)
}

// signalsWatched reports whether a live tracer other than this process
// watches signal events.
func signalsWatched() bool {
	live, _ := owners()
	for _, o := range live {
		if o.PID != os.Getpid() && o.Signals {
			return true
		}
	}
	return false
}

// removeExclude deletes one lean-records exclude rule tracers recorded
// (another tracer's, now in this one's way) and forgets it. The state
// lock is held.
func removeExclude(c *libaudit.AuditClient, typ string) error {
	s, err := readSettings()
	if err != nil || !slices.Contains(s.Excludes, typ) {
		return err
	}
	wf, err := auditrules.ExcludeRule(typ).Wire()
	if err != nil {
		return err
	}
	if err := c.DeleteRule(wf); err != nil && !strings.Contains(err.Error(), "no such file") {
		return fmt.Errorf("removing the %s exclude rule: %w", typ, err)
	}
	changed("remove exclude " + typ)
	return forgetExclude(typ)
}

// removeExcludes deletes every lean-records exclude rule tracers recorded
// and forgets them: another reader of the records appeared, or the last
// tracer leaves. The state lock is held.
func removeExcludes(c *libaudit.AuditClient) ([]string, error) {
	s, err := readSettings()
	if err != nil || len(s.Excludes) == 0 {
		return nil, err
	}
	var done []string
	var errs []error
	var kept []string
	for _, typ := range s.Excludes {
		r := auditrules.ExcludeRule(typ)
		wf, err := r.Wire()
		if err == nil {
			err = c.DeleteRule(wf)
		}
		switch {
		case err == nil:
			changed("remove exclude " + typ)
			done = append(done, "removed "+r.Text())
		case strings.Contains(err.Error(), "no such file"):
			// Recorded before a tracer added it, and it never did.
		default:
			errs = append(errs, fmt.Errorf("removing %q: %w", r.Text(), err))
			kept = append(kept, typ)
		}
	}
	s.Excludes = kept
	if err := writeJSON(nodePath(), &s); err != nil {
		errs = append(errs, err)
	}
	return done, errors.Join(errs...)
}

// restoreSettings puts back what audit-node.json recorded and removes it;
// call it only as the last tracer, under the state lock. A setting goes
// back only where it still holds the value a tracer set. It
// returns what it did, and what it left and why. Audit is never turned
// off under a running audit daemon; the backlog settings go back to the
// node's values under one too when it left them as tracers set them.
func restoreSettings(c *libaudit.AuditClient) ([]string, error) {
	s, err := readSettings()
	if err != nil {
		return nil, err
	}
	done, err := removeExcludes(c)
	errs := []error{err}
	st, err := c.GetStatus()
	if err != nil {
		return done, errors.Join(append(errs, fmt.Errorf("reading audit status: %w", err))...)
	}
	daemon := 0
	if pid := int(st.PID); pid != 0 && tracer.ProcessAlive(pid) && !isTracerOwner(pid) {
		daemon = pid
	}
	restored, err := s.RestoreRecorded(c, st, daemon)
	done, errs = append(done, restored...), append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return done, err
	}
	_ = os.Remove(nodePath())
	changed("remove " + nodePath())
	return done, nil
}

// Cleanup removes what tracers that are gone (killed with SIGKILL, say)
// left behind: their audit rules, the exclude rules tracers recorded, their
// state files, and, when no tracer runs any more, the audit settings they
// changed (compare and restore). Rules of live tracers and rules without a
// tracer's instance key (the node's own, those persisted from `tracer
// rules` included) are never touched. It returns what it did.
func Cleanup() ([]string, error) {
	c, err := auditstate.Open()
	if err != nil {
		return nil, vocab.Usagef("cannot open the audit netlink socket (%w): run as root", err)
	}
	defer c.Close()
	unlock, err := lockState()
	if err != nil {
		return nil, err
	}
	defer unlock()
	live, dead := owners()
	liveKeys := map[string]bool{}
	for _, o := range live {
		liveKeys[o.Key] = true
	}
	var done []string
	rules, err := c.GetRules()
	if err != nil {
		return nil, fmt.Errorf("listing audit rules: %w", err)
	}
	for _, wf := range rules {
		key, text, ok := ruleKey(wf)
		// Only a tracer's own key: rules persisted from `tracer rules`
		// (key tracer, or --key) are the node's.
		if !ok || !auditrules.IsInstanceKey(key) || liveKeys[key] || keyOwnerAlive(key) {
			continue
		}
		if err := c.DeleteRule(wf); err != nil {
			return done, fmt.Errorf("removing audit rule %q: %w", text, err)
		}
		done = append(done, "removed "+text)
	}
	for _, o := range dead {
		_ = auditstate.Remove(auditstate.StateDir, o)
		done = append(done, fmt.Sprintf("removed the state of tracer pid %d, which is gone", o.PID))
	}
	if len(live) > 0 {
		if _, err := os.Stat(nodePath()); err == nil {
			done = append(done, fmt.Sprintf("left the audit settings to the %d tracers still running; the last to exit restores them", len(live)))
		}
		return done, nil
	}
	restored, err := restoreSettings(c)
	return append(done, restored...), err
}

// keyOwnerAlive reports whether the tracer named by an instance key runs.
func keyOwnerAlive(key string) bool {
	pid, start, ok := auditrules.ParseInstanceKey(key)
	return ok && (owner{PID: pid, Start: start}).Alive()
}

// Originals are the audit settings running tracers changed, as they were
// before the first of them did (nil: not changed by a tracer). Other
// programs that save and restore audit settings (bench) take these as the
// node's own values, and leave settings alone while TracersRunning: the
// last tracer to exit restores them.
type Originals struct {
	Enabled, BacklogLimit, BacklogWaitTime *uint32
	// Excludes are the lean-records exclude rules tracers added, in
	// auditctl syntax: not the node's own rules.
	Excludes []string
}

// TracerOriginals reads what tracers recorded in the state directory.
func TracerOriginals() Originals {
	var s nodeSettings
	if readJSON(nodePath(), &s) != nil {
		return Originals{}
	}
	o := Originals{Enabled: s.Enabled, BacklogLimit: s.BacklogLimit, BacklogWaitTime: s.BacklogWaitTime}
	for _, typ := range s.Excludes {
		o.Excludes = append(o.Excludes, auditrules.ExcludeRule(typ).Text())
	}
	return o
}

// TracersRunning reports whether a tracer other than this process runs
// on the node (an owner file whose process is alive).
func TracersRunning() bool { return othersAlive() }

// ReturnSettings is for a program that changed the node's enabled,
// backlog_limit or backlog_wait_time (bench, running an auditd) and now
// puts back want, the node's values. A tracer that started meanwhile
// recorded the changed values as the node's and needs audit enabled: so
// while one runs, want is written in place of what tracers recorded, with
// the values the kernel holds now as the ones set, for the last of them to
// compare and restore (auditstate.Record.HandOver), and apply is not
// called. Otherwise apply sets the settings. Both under the state lock, so
// that no tracer starts half-way through.
func ReturnSettings(want Originals, apply func() error) (handedOver bool, err error) {
	unlock, err := lockState()
	if err != nil {
		return false, err
	}
	defer unlock()
	if !othersAlive() {
		return false, apply()
	}
	s, err := readSettings()
	if err != nil {
		return false, err
	}
	now, _ := auditstate.Status() // unread: the values set stay as recorded
	for _, f := range []struct {
		setting auditstate.Setting
		v       *uint32
	}{{auditstate.Enabled, want.Enabled}, {auditstate.BacklogLimit, want.BacklogLimit}, {auditstate.BacklogWaitTime, want.BacklogWaitTime}} {
		if f.v != nil {
			s.HandOver(f.setting, *f.v, now)
		}
	}
	return true, writeJSON(nodePath(), &s)
}

// AddLeanExcludes adds the lean-records exclude rules the audit backend
// adds where nothing but tracers reads the records, for another program
// that must make the kernel build the same records (bench's audit floor).
// Each is recorded in the state directory before it is added, so that
// `tracer cleanup` removes it if the caller is killed; types already
// excluded are left alone, and not removed by remove either. signals:
// the caller's rules watch signals, so OBJ_PID stays (auditrules.LeanTypes).
func AddLeanExcludes(c *libaudit.AuditClient, signals bool) (added []string, remove func() error, err error) {
	unlock, err := lockState()
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	present, err := c.GetRules()
	if err != nil {
		return nil, nil, fmt.Errorf("listing audit rules: %w", err)
	}
	var wires [][]byte
	// undo runs under the state lock (a second flock of it would wait on
	// this one's).
	undo := func() error {
		var errs []error
		for i, wf := range wires {
			if err := c.DeleteRule(wf); err != nil && !strings.Contains(err.Error(), "no such file") {
				errs = append(errs, fmt.Errorf("removing the %s exclude rule: %w", added[i], err))
				continue
			}
			errs = append(errs, forgetExclude(added[i]))
		}
		return errors.Join(errs...)
	}
	for _, typ := range auditrules.LeanTypes(signals, false) {
		wf, err := auditrules.ExcludeRule(typ).Wire()
		if err != nil {
			return nil, nil, errors.Join(fmt.Errorf("building the %s exclude rule: %w", typ, err), undo())
		}
		if slices.ContainsFunc(present, func(r []byte) bool { return bytes.Equal(r, wf) }) {
			continue
		}
		if err := recordExclude(typ); err != nil {
			return nil, nil, errors.Join(err, undo())
		}
		if err := c.AddRule(wf); err != nil {
			return nil, nil, errors.Join(fmt.Errorf("adding the %s exclude rule: %w", typ, err), forgetExclude(typ), undo())
		}
		added, wires = append(added, typ), append(wires, wf)
	}
	remove = func() error {
		unlock, err := lockState()
		if err != nil {
			return err
		}
		defer unlock()
		err = undo()
		// A record that holds nothing more is not left behind.
		if s, rerr := readSettings(); rerr == nil && s.Empty() {
			_ = os.Remove(nodePath())
		}
		return err
	}
	return added, remove, nil
}
