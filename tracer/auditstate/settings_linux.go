// SPDX-License-Identifier: Apache-2.0

package auditstate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	libaudit "github.com/elastic/go-libaudit/v2"
)

// Settings are the kernel's audit settings a program may change (tracer
// enabling audit and sizing the backlog, bench starting an auditd with the
// node's audit.rules) and must give back: one snapshot of them.
type Settings struct {
	Enabled         uint32 `json:"enabled"`
	Failure         uint32 `json:"failure"`
	RateLimit       uint32 `json:"rate_limit"`
	BacklogLimit    uint32 `json:"backlog_limit"`
	BacklogWaitTime uint32 `json:"backlog_wait_time"`
}

// SettingsOf is the snapshot of the settings in st.
func SettingsOf(st *libaudit.AuditStatus) Settings {
	return Settings{Enabled: st.Enabled, Failure: st.Failure, RateLimit: st.RateLimit,
		BacklogLimit: st.BacklogLimit, BacklogWaitTime: st.BacklogWaitTime}
}

// Setting is one audit setting: where it is in a snapshot and in a
// Record, and how the kernel is told a value.
type Setting struct {
	Name        string
	of          func(*Settings) *uint32
	before, set func(*Record) **uint32 // nil: tracers never change it
	apply       func(c *libaudit.AuditClient, v uint32) error
}

// The settings.
var (
	Enabled = Setting{"enabled",
		func(s *Settings) *uint32 { return &s.Enabled },
		func(r *Record) **uint32 { return &r.Enabled },
		func(r *Record) **uint32 { return &r.EnabledSet },
		func(c *libaudit.AuditClient, v uint32) error { return c.SetEnabled(v == 1, libaudit.WaitForReply) }}
	Failure = Setting{"failure",
		func(s *Settings) *uint32 { return &s.Failure }, nil, nil,
		func(c *libaudit.AuditClient, v uint32) error {
			return c.SetFailure(libaudit.FailureMode(v), libaudit.WaitForReply)
		}}
	RateLimit = Setting{"rate_limit",
		func(s *Settings) *uint32 { return &s.RateLimit }, nil, nil,
		func(c *libaudit.AuditClient, v uint32) error { return c.SetRateLimit(v, libaudit.WaitForReply) }}
	BacklogLimit = Setting{"backlog_limit",
		func(s *Settings) *uint32 { return &s.BacklogLimit },
		func(r *Record) **uint32 { return &r.BacklogLimit },
		func(r *Record) **uint32 { return &r.BacklogLimitSet },
		func(c *libaudit.AuditClient, v uint32) error { return c.SetBacklogLimit(v, libaudit.WaitForReply) }}
	BacklogWaitTime = Setting{"backlog_wait_time",
		func(s *Settings) *uint32 { return &s.BacklogWaitTime },
		func(r *Record) **uint32 { return &r.BacklogWaitTime },
		func(r *Record) **uint32 { return &r.BacklogWaitTimeSet },
		func(c *libaudit.AuditClient, v uint32) error {
			return c.SetBacklogWaitTime(int32(v), libaudit.WaitForReply)
		}}

	// All are every setting, in the order they are put back: audit is
	// turned off last, once nothing more is asked of it.
	All = []Setting{Failure, RateLimit, BacklogWaitTime, BacklogLimit, Enabled}
	// Recorded are the settings tracers change and record in a Record, in
	// the order they are put back.
	Recorded = []Setting{BacklogWaitTime, BacklogLimit, Enabled}
)

// Get is the setting's value in st.
func (s Setting) Get(st *libaudit.AuditStatus) uint32 {
	v := SettingsOf(st)
	return *s.of(&v)
}

// In is the setting's value in snapshot x.
func (s Setting) In(x Settings) uint32 { return *s.of(&x) }

// Apply tells the kernel v.
func (s Setting) Apply(c *libaudit.AuditClient, v uint32) error { return s.apply(c, v) }

// Restore sets back each setting that differs in the kernel's status st
// from want, in the order of All, and says what it did. A locked audit is
// left alone: nothing can be changed until reboot. which, when given,
// limits it to those settings.
func (want Settings) Restore(c *libaudit.AuditClient, st *libaudit.AuditStatus, which ...Setting) ([]string, error) {
	if Locked(st) {
		return nil, nil
	}
	if which == nil {
		which = All
	}
	var done []string
	var errs []error
	for _, s := range which {
		now, was := s.Get(st), s.In(want)
		if now == was || (s.Name == Enabled.Name && was == EnabledLocked) {
			continue
		}
		if err := s.Apply(c, was); err != nil {
			errs = append(errs, fmt.Errorf("restoring audit %s %d: %w", s.Name, was, err))
			continue
		}
		done = append(done, fmt.Sprintf("restored audit %s %d (was %d)", s.Name, was, now))
	}
	return done, errors.Join(errs...)
}

// RecordFile is the state file, in StateDir, of the Record.
const RecordFile = "audit-node.json"

// Record is what tracers changed on the node, in StateDir: the audit
// settings as they were before the first tracer changed them, and the
// value tracers set. A nil field was not changed. Each is written here
// before the change is made, so that a tracer killed at any point leaves
// a record of everything it may have changed. The last tracer to leave, or
// `tracer cleanup`, puts them back (RestoreRecorded).
type Record struct {
	Enabled         *uint32 `json:"enabled_before,omitempty"`
	BacklogLimit    *uint32 `json:"backlog_limit_before,omitempty"`
	BacklogWaitTime *uint32 `json:"backlog_wait_time_before,omitempty"`
	// The values tracers set: a setting is put back only while it still
	// holds the value a tracer set (compare and restore), never over a
	// value somebody else (auditd starting with -e 1, -b 8192) set since.
	EnabledSet         *uint32 `json:"enabled_set,omitempty"`
	BacklogLimitSet    *uint32 `json:"backlog_limit_set,omitempty"`
	BacklogWaitTimeSet *uint32 `json:"backlog_wait_time_set,omitempty"`
	// Excludes are the lean-records exclude rules tracers added (record
	// types); ones that were there before are not listed, and stay.
	Excludes []string `json:"excludes_added,omitempty"`
}

// RecordPath is the path of the Record's file.
func RecordPath() string { return filepath.Join(StateDir, RecordFile) }

// ReadRecord reads what tracers recorded; none is an empty record.
func ReadRecord() (Record, error) {
	var r Record
	if err := ReadJSON(RecordFile, &r); err != nil && !errors.Is(err, os.ErrNotExist) {
		return r, fmt.Errorf("reading %s: %w", RecordPath(), err)
	}
	return r, nil
}

// Write replaces the Record's file.
func (r *Record) Write() error { return WriteJSON(RecordFile, r) }

// Empty reports whether r records nothing left to put back.
func (r *Record) Empty() bool {
	return r.Enabled == nil && r.BacklogLimit == nil && r.BacklogWaitTime == nil && len(r.Excludes) == 0
}

// Before is the value s had before tracers changed it, or nil.
func (r *Record) Before(s Setting) *uint32 {
	if s.before == nil {
		return nil
	}
	return *s.before(r)
}

// Change sets one audit setting to v, recording first (before the kernel
// is asked) the value it had, now, unless a tracer changed it earlier,
// and the value set. Take Lock first.
func Change(c *libaudit.AuditClient, s Setting, now, v uint32) error {
	r, err := ReadRecord()
	if err != nil {
		return err
	}
	if p := s.before(&r); *p == nil {
		*p = &now
	}
	*s.set(&r) = &v
	if err := r.Write(); err != nil {
		return err
	}
	Changed("record " + s.Name)
	if err := s.Apply(c, v); err != nil {
		return err
	}
	Changed("set " + s.Name)
	return nil
}

// HandOver is for a program that changed the node's settings (bench,
// running an auditd) and finds tracers running when it gives them back:
// setting them now would undo what a running tracer needs (audit enabled),
// so node, the node's own value of s, is recorded in r instead, with the
// value the kernel holds now (status now, when known) as the value set, so
// that the last tracer's compare and restore puts node back. Take Lock
// first, and Write r.
func (r *Record) HandOver(s Setting, node uint32, now *libaudit.AuditStatus) {
	*s.before(r) = &node
	if now != nil {
		set := s.Get(now)
		*s.set(r) = &set
	}
}

// RestoreRecorded puts back the settings r records, each only while it
// still holds the value a tracer set; st is the kernel's status now.
// Audit is never turned off under daemon, a running audit daemon (pid, or
// 0); the backlog settings go back to the node's values under one too when
// it left them as tracers set them. It returns what it did, and what it
// left and why. Take Lock first; the caller removes the Record.
func (r Record) RestoreRecorded(c *libaudit.AuditClient, st *libaudit.AuditStatus, daemon int) ([]string, error) {
	var done []string
	var errs []error
	for _, s := range Recorded {
		before, want := *s.before(&r), *s.set(&r)
		if before == nil {
			continue
		}
		now := s.Get(st)
		switch {
		case now == *before:
			// As the node had it (a tracer killed before it set it, say).
		case daemon != 0 && s.Name == Enabled.Name:
			done = append(done, fmt.Sprintf("left %s %d to the audit daemon (pid %d), which holds the audit PID", s.Name, now, daemon))
		case want != nil && now != *want:
			done = append(done, fmt.Sprintf("left %s %d: set by another program since tracer set %d", s.Name, now, *want))
		default:
			if err := s.Apply(c, *before); err != nil {
				errs = append(errs, fmt.Errorf("restoring %s: %w", s.Name, err))
				continue
			}
			Changed("restore " + s.Name)
			done = append(done, fmt.Sprintf("restored %s %d", s.Name, *before))
		}
	}
	return done, errors.Join(errs...)
}

// changeHook, when set (SetChangeHook), is called after each change to
// the node's audit state and to the state directory's record of it.
var changeHook func(step string)

// SetChangeHook installs f to be called after each change tracer makes to
// the node's audit state (a rule, an exclude rule, a setting, a state
// file), with what it did. It is for fault injection: a test kills the
// tracer at each such step and checks that cleanup restores the node.
func SetChangeHook(f func(step string)) { changeHook = f }

// Changed tells the change hook, if any, of step.
func Changed(step string) {
	if changeHook != nil {
		changeHook(step)
	}
}
