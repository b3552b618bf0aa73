// SPDX-License-Identifier: Apache-2.0

//go:build linux

package audit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	libaudit "github.com/elastic/go-libaudit/v2"
	"github.com/elastic/go-libaudit/v2/rule"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/auditstate"
	"github.com/tracer-dev/tracer/tracer/auparse"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// This file: rules and lean records: installing this tracer's rules, the lean records' exclude list, putting back rules another program deleted, removing them at Close, and reading a rule's key.

// setup registers this tracer in the state directory, enables audit if
// needed, sizes the backlog when no audit daemon runs, and joins the
// multicast group, all under the state lock so that tracers starting and
// stopping at once agree. The status is read again under the lock: the
// one read before may be stale by a tracer that just started or left.
func (b *Backend) setup() error {
	unlock, err := lockState()
	if err != nil {
		return err
	}
	defer unlock()
	st, err := b.ctl.GetStatus()
	if err != nil {
		return fmt.Errorf("reading audit status: %w", err)
	}
	me := owner{PID: os.Getpid(), Start: processStart(os.Getpid()), Signals: b.cfg.Types.Has(vocab.TypeSignal)}
	me.Key = auditrules.InstanceKey(me.PID, me.Start)
	if err := writeOwner(me); err != nil {
		return err
	}
	changed("write " + ownerPath(me.PID))
	b.key, b.registered = me.Key, true
	holder := int(st.PID)
	if holder != 0 && !tracer.ProcessAlive(holder) {
		holder = 0
	}
	// Following the node's rules adds none: while audit is on, their
	// records are made with or without this tracer, so the failure mode
	// is not its risk; turning audit on would be.
	if holder == 0 && (!b.fo.on || st.Enabled == 0) {
		// Refuse before anything changes on the node.
		if err := b.canRunAlone(st); err != nil {
			return err
		}
	}
	if st.Enabled == 0 {
		if err := b.enable(st); err != nil {
			return err
		}
	}
	b.startLost = st.Lost
	b.status.Store(st)
	// A locked audit takes no setting either.
	if holder == 0 && !auditstate.Locked(st) {
		if err := b.prepareAlone(st); err != nil {
			return err
		}
	}
	if err := b.joinMulticast(holder); err != nil {
		return err
	}
	me.Port = b.recv.Port()
	if err := writeOwner(me); err != nil {
		return err
	}
	if b.early, err = probeMulticast(b.recv); err != nil {
		return err
	}
	if b.fo.on {
		return nil // exclude rules are rules: none while following
	}
	return b.leanRecords()
}

// leanRecords asks the kernel not to build the record types tracer does
// not read. Exclude rules are global, so by default only where nothing but
// tracers reads the records: no audit daemon holds the PID and no other
// program is in the multicast group. The state lock is held.
func (b *Backend) leanRecords() error {
	other := otherReader(b.status.Load())
	switch b.cfg.LeanRecords {
	case tracer.LeanOff:
		return nil
	case tracer.LeanAuto:
		if other != "" {
			b.note(fmt.Sprintf("lean records off: %s reads the audit records too (--lean-records to use them anyway)", other))
			return nil
		}
	}
	// Exclude rules are global: OBJ_PID stays while any tracer watches
	// signals, and one an earlier tracer excluded goes.
	signals := b.cfg.Types.Has(vocab.TypeSignal) || signalsWatched()
	types := auditrules.LeanTypes(signals, other != "")
	if other != "" {
		b.note(fmt.Sprintf("lean records: the node's audit log misses %s records while tracer runs", strings.Join(types, ", ")))
	}
	if signals {
		if err := removeExclude(b.ctl, "OBJ_PID"); err != nil {
			return err
		}
	}
	present, err := b.ctl.GetRules()
	if err != nil {
		return fmt.Errorf("listing audit rules: %w", err)
	}
	if node := excludedTypes(present); node.has(recPath) || node.has(recExecve) {
		// Without PATH (or EXECVE) records an exec has no last record of
		// its own: it must end at its EOE.
		types = slices.DeleteFunc(slices.Clone(types), func(t string) bool { return t == "EOE" })
		b.note("the node's exclude rules drop PATH or EXECVE records: lean records keep EOE, which then ends each exec")
	}
	for _, typ := range types {
		r := auditrules.ExcludeRule(typ)
		wf, err := r.Wire()
		if err != nil {
			return fmt.Errorf("building %q: %w", r.Text(), err)
		}
		if slices.ContainsFunc(present, func(p []byte) bool { return bytes.Equal(p, wf) }) {
			continue // another tracer's, or the node's own: not ours to remove
		}
		// Recorded before it is added: a tracer killed in between leaves
		// a note that cleanup follows, never a rule nobody knows of.
		if err := recordExclude(typ); err != nil {
			return err
		}
		changed("record exclude " + typ)
		if err := b.ctl.AddRule(wf); err != nil {
			_ = forgetExclude(typ)
			if strings.Contains(err.Error(), "rule exists") {
				continue
			}
			return vocab.Usagef("the kernel refused %q: %w (use --lean-records=false)", r.Text(), err)
		}
		changed("add exclude " + typ)
	}
	b.lean = true
	b.leanForced = b.cfg.LeanRecords == tracer.LeanOn
	return nil
}

// excludedTypes reads which of the record types tracer reads the kernel's
// exclude list drops (exact -F msgtype= rules: lean records', or the
// node's own).
func excludedTypes(rules [][]byte) recordSet {
	var set recordSet
	for _, r := range rules {
		for i, wf := range excludeWires {
			if bytes.Equal(r, wf) {
				set |= 1 << i
			}
		}
	}
	return set
}

// excludeListChanged matches the CONFIG_CHANGE record of a rule added to
// or removed from the exclude list (AUDIT_FILTER_EXCLUDE, list 5).
func excludeListChanged(data []byte) bool {
	return bytes.Contains(data, []byte(" list=5 "))
}

// isTracerOwner reports whether pid is a running tracer (it has an owner
// file in the state directory).
func isTracerOwner(pid int) bool {
	live, _ := owners()
	for _, o := range live {
		if o.PID == pid {
			return true
		}
	}
	return false
}

// Lean reports whether the kernel builds lean records for this session.
func (b *Backend) Lean() bool { return b.lean }

// checkRules follows the kernel's exclude list (whether events end at
// EOE) and adds back those of this tracer's rules another program deleted.
func (b *Backend) checkRules(cl *libaudit.AuditClient) {
	rules, err := cl.GetRules()
	if err != nil {
		return
	}
	b.excluded.Store(uint32(excludedTypes(rules)))
	b.mu.Lock()
	defer b.mu.Unlock()
	missing := 0
	for i, wf := range b.added {
		if slices.ContainsFunc(rules, func(r []byte) bool { return bytes.Equal(r, wf) }) {
			continue
		}
		missing++
		if err := b.ctl.AddRule(wf); err != nil && !strings.Contains(err.Error(), "rule exists") {
			b.note(fmt.Sprintf("audit rule %q was deleted by another program and could not be added back: %v", b.addedText[i], err))
		}
	}
	if missing > 0 {
		b.rulesGone.Add(1)
		b.note(fmt.Sprintf("%d of tracer's audit rules were deleted by another program (auditctl -D, or augenrules --load as auditd starts): added them back; events between the two were not recorded by the kernel", missing))
	}
}

// dropLean removes the lean-records exclude rules tracers added, because
// a reader other than tracers appeared: its records must be whole.
func (b *Backend) dropLean(other string) {
	unlock, err := lockState()
	if err != nil {
		return
	}
	defer unlock()
	if _, err := removeExcludes(b.ctl); err != nil {
		b.note(fmt.Sprintf("%s reads the audit records now, and removing the lean-records exclude rules failed: %v", other, err))
		return
	}
	b.lean = false
	b.note(fmt.Sprintf("lean records off: %s reads the audit records now; removed the exclude rules", other))
	select {
	case b.recheck <- struct{}{}:
	default:
	}
}

func (b *Backend) ruleCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.added)
}

// isOurRemoval matches the CONFIG_CHANGE record of removing one of our rules.
func (b *Backend) isOurRemoval(data []byte) bool {
	return bytes.Contains(data, []byte("op=remove_rule")) && bytes.Contains(data, []byte(`key="`+b.key+`"`))
}

// removeRules deletes exactly the rules this backend added.
func (b *Backend) removeRules() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	for i, wf := range b.added {
		if err := b.ctl.DeleteRule(wf); err != nil {
			errs = append(errs, fmt.Errorf("removing audit rule %q: %w", b.addedText[i], err))
			continue
		}
		changed("remove rule " + b.addedText[i])
	}
	b.added, b.addedText = nil, nil
	return errors.Join(errs...)
}

// HasKey reports whether a rule in auditctl syntax carries a tracer's
// instance key (auditrules.InstanceKey): a rule a tracer added and
// removes. Rules persisted with `tracer rules`' key are the node's.
func HasKey(text string) bool {
	key, ok := auparse.RuleKey(text)
	return ok && auditrules.IsInstanceKey(key)
}

// ruleKey decodes a rule from the kernel into its key and auditctl text.
func ruleKey(wf []byte) (key, text string, ok bool) {
	text, err := rule.ToCommandLine(rule.WireFormat(wf), false)
	if err != nil {
		return "", "", false
	}
	key, ok = auparse.RuleKey(text)
	return key, text, ok
}
