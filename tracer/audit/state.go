//go:build linux

package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	libaudit "github.com/elastic/go-libaudit/v2"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/tracer"
)

// StateDir is where running tracers tell each other, and `tracer cleanup`,
// what they own and what they changed. Each holds a file of its own
// (audit-PID.json: its pid, start time and rule key); the node's settings
// as they were before the first tracer changed them are in audit-node.json,
// restored by the last tracer to leave. Every change to the directory and
// to the node's audit settings is made under an flock of the directory, so
// tracers that start and stop at once agree on who is last.
var StateDir = "/run/tracer"

// owner is one running tracer's claim: rules with Key belong to it while
// a process with PID and Start runs.
type owner struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start_time"` // /proc/PID/stat field 22: tells a reused pid apart
	Key   string `json:"key"`
}

// nodeSettings are the audit settings as they were before any tracer
// changed them. A nil field was not changed.
type nodeSettings struct {
	Enabled         *uint32 `json:"enabled_before,omitempty"`
	BacklogLimit    *uint32 `json:"backlog_limit_before,omitempty"`
	BacklogWaitTime *uint32 `json:"backlog_wait_time_before,omitempty"`
	// Excludes are the lean-records exclude rules tracers added (record
	// types); ones that were there before are not listed, and stay.
	Excludes []string `json:"excludes_added,omitempty"`
}

func ownerPath(pid int) string { return filepath.Join(StateDir, "audit-"+strconv.Itoa(pid)+".json") }
func nodePath() string         { return filepath.Join(StateDir, "audit-node.json") }

// lockState takes the state directory's lock; the returned func releases it.
func lockState() (func(), error) {
	if err := os.MkdirAll(StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating state dir %s (tracer needs it writable, e.g. a hostPath volume in a pod): %w", StateDir, err)
	}
	// The directory itself is the lock: nothing is left behind for it.
	f, err := os.OpenFile(StateDir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening state lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking state dir: %w", err)
	}
	return func() { _ = f.Close() }, nil
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// processStart is the process's start time in clock ticks since boot
// (tracer.ReadStartTicks); 0 when the process is gone.
func processStart(pid int) uint64 {
	start, _ := tracer.ReadStartTicks(uint32(pid))
	return start
}

// alive reports whether the owner's process still runs (same pid, same
// start time: not a later process that reuses the pid).
func (o owner) alive() bool {
	if o.PID == os.Getpid() {
		return true
	}
	return o.PID > 0 && o.Start != 0 && processStart(o.PID) == o.Start
}

// owners reads every owner file, split into live and dead ones.
func owners() (live, dead []owner) {
	files, _ := filepath.Glob(filepath.Join(StateDir, "audit-*.json"))
	for _, f := range files {
		if f == nodePath() {
			continue
		}
		var o owner
		if readJSON(f, &o) != nil || o.PID == 0 {
			continue
		}
		if o.alive() {
			live = append(live, o)
		} else {
			dead = append(dead, o)
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

// recordSetting notes a setting's value before the first tracer changes it.
func recordSetting(set func(*nodeSettings) **uint32, before uint32) error {
	var s nodeSettings
	if err := readJSON(nodePath(), &s); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", nodePath(), err)
	}
	if p := set(&s); *p == nil {
		*p = &before
		return writeJSON(nodePath(), &s)
	}
	return nil
}

// recordExclude notes a lean-records exclude rule a tracer added.
func recordExclude(typ string) error {
	var s nodeSettings
	if err := readJSON(nodePath(), &s); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", nodePath(), err)
	}
	s.Excludes = append(s.Excludes, typ)
	return writeJSON(nodePath(), &s)
}

// restoreSettings puts back what audit-node.json recorded and removes it;
// call it only as the last tracer. It returns what it did.
func restoreSettings(c *libaudit.AuditClient) ([]string, error) {
	var s nodeSettings
	if err := readJSON(nodePath(), &s); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading %s: %w", nodePath(), err)
	}
	var done []string
	var errs []error
	for _, typ := range s.Excludes {
		r := auditrules.ExcludeRule(typ)
		wf, err := r.Wire()
		if err == nil {
			err = c.DeleteRule(wf)
		}
		if err != nil && !strings.Contains(err.Error(), "no such file") {
			errs = append(errs, fmt.Errorf("removing %q: %w", r.Text(), err))
		} else {
			done = append(done, "removed "+r.Text())
		}
	}
	if s.BacklogWaitTime != nil {
		if err := c.SetBacklogWaitTime(int32(*s.BacklogWaitTime), libaudit.WaitForReply); err != nil {
			errs = append(errs, fmt.Errorf("restoring backlog_wait_time: %w", err))
		} else {
			done = append(done, fmt.Sprintf("restored backlog_wait_time %d", *s.BacklogWaitTime))
		}
	}
	if s.BacklogLimit != nil {
		if err := c.SetBacklogLimit(*s.BacklogLimit, libaudit.WaitForReply); err != nil {
			errs = append(errs, fmt.Errorf("restoring backlog_limit: %w", err))
		} else {
			done = append(done, fmt.Sprintf("restored backlog_limit %d", *s.BacklogLimit))
		}
	}
	if s.Enabled != nil {
		if err := c.SetEnabled(*s.Enabled == 1, libaudit.WaitForReply); err != nil {
			errs = append(errs, fmt.Errorf("restoring audit enabled flag: %w", err))
		} else {
			done = append(done, fmt.Sprintf("restored enabled=%d", *s.Enabled))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return done, err
	}
	_ = os.Remove(nodePath())
	return done, nil
}

// Cleanup removes what tracers that are gone (killed with SIGKILL, say)
// left behind: their audit rules, their state files, and, when no tracer
// runs any more, the audit settings they changed. Rules of live tracers and
// rules without tracer's key are never touched. It returns what it did.
func Cleanup() ([]string, error) {
	c, err := libaudit.NewAuditClient(nil)
	if err != nil {
		return nil, tracer.Usagef("cannot open the audit netlink socket (%w): run as root", err)
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
		if !ok || !auditrules.IsTracerKey(key) || liveKeys[key] || keyOwnerAlive(key) {
			continue
		}
		if err := c.DeleteRule(wf); err != nil {
			return done, fmt.Errorf("removing audit rule %q: %w", text, err)
		}
		done = append(done, "removed "+text)
	}
	for _, o := range dead {
		_ = os.Remove(ownerPath(o.PID))
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
	return ok && (owner{PID: pid, Start: start}).alive()
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
// puts back want, the values it found. A tracer that started meanwhile
// recorded the changed values as the node's and needs audit enabled: so
// while one runs, want is written in place of what tracers recorded, for
// the last of them to restore, and apply is not called. Otherwise apply
// sets the settings. Both under the state lock, so that no tracer starts
// half-way through.
func ReturnSettings(want Originals, apply func() error) (handedOver bool, err error) {
	unlock, err := lockState()
	if err != nil {
		return false, err
	}
	defer unlock()
	if !othersAlive() {
		return false, apply()
	}
	var s nodeSettings
	if err := readJSON(nodePath(), &s); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("reading %s: %w", nodePath(), err)
	}
	for _, f := range []struct {
		dst **uint32
		v   *uint32
	}{{&s.Enabled, want.Enabled}, {&s.BacklogLimit, want.BacklogLimit}, {&s.BacklogWaitTime, want.BacklogWaitTime}} {
		if f.v != nil {
			v := *f.v
			*f.dst = &v
		}
	}
	return true, writeJSON(nodePath(), &s)
}
