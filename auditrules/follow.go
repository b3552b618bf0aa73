// SPDX-License-Identifier: Apache-2.0

package auditrules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Following the node's rules: where tracer may not (or should not) add
// rules of its own (audit locked with -e 2, a site that persists its
// rules), it reads the records of the rules the node loaded, chosen by
// their key. What a loaded rule covers is read from its auditctl text, as
// the kernel lists it.

// LoadedRule is what following needs of one loaded rule.
type LoadedRule struct {
	// Keys are the rule's keys (a rule may carry several: -k a -k b).
	Keys []string
	// Covers are the event classes whose syscalls the rule records.
	Covers vocab.TypeSet
}

// ParseLoaded reads a loaded rule in auditctl syntax (auditctl -l, or
// go-libaudit's rule.ToCommandLine): an always,exit rule's syscalls (-S,
// comma lists or repeated; all covers every class), a watch or a perm
// filter with x (-w PATH -p x, -F path=PATH -F perm=x: execs of that
// file); never rules and the
// exclude, user and task lists cover nothing.
func ParseLoaded(text string) LoadedRule {
	var r LoadedRule
	f := strings.Fields(text)
	action, watch := "", false
	var syscalls []string
	perm := ""
	for i := 0; i < len(f); i++ {
		w := f[i]
		next := ""
		if i+1 < len(f) {
			next = f[i+1]
		}
		switch {
		case w == "-a" || w == "-A":
			action = next
			i++
		case w == "-w":
			watch = true
			i++
		case w == "-p":
			perm = next
			i++
		case w == "-S":
			syscalls = append(syscalls, strings.Split(next, ",")...)
			i++
		case w == "-k":
			r.Keys = append(r.Keys, splitKeys(strings.Trim(next, `"`))...)
			i++
		case w == "-F" && strings.HasPrefix(next, "key="):
			r.Keys = append(r.Keys, splitKeys(strings.Trim(strings.TrimPrefix(next, "key="), `"`))...)
			i++
		case w == "-F" && strings.HasPrefix(next, "perm="):
			perm = strings.TrimPrefix(next, "perm=")
			i++
		}
	}
	switch {
	case watch:
		if strings.Contains(perm, "x") {
			r.Covers = r.Covers.With(vocab.TypeExec)
		}
	case (action == "always,exit" || action == "exit,always") && perm != "":
		// -F perm= matches only the syscalls of its kind (audit_match_perm),
		// whatever -S says (the kernel lists such rules with -S all).
		if strings.Contains(perm, "x") {
			r.Covers = r.Covers.With(vocab.TypeExec)
		}
	case action == "always,exit" || action == "exit,always":
		for _, s := range syscalls {
			if s == "all" {
				for _, t := range []vocab.Type{vocab.TypeExec, vocab.TypeFork, vocab.TypeSignal, vocab.TypeExit} {
					r.Covers = r.Covers.With(t)
				}
				continue
			}
			if c := ClassOf(s); c != vocab.TypeNone {
				r.Covers = r.Covers.With(c)
			}
		}
	}
	return r
}

// splitKeys splits the kernel's form of several keys (joined by 0x01).
func splitKeys(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\x01")
}

// CheckFollowKey says why key cannot name loaded rules to follow: the
// limits of persisted keys (CheckPersistentKey, less the instance-key
// form, which a running tracer's own rules have), and no comma, which
// separates keys.
func CheckFollowKey(key string) error {
	switch {
	case key == "":
		return vocab.Usagef("--keys has an empty key: give the key of the node's rules, e.g. --keys %s", Key)
	case len(key) > 255:
		return vocab.Usagef("--keys: key of %d bytes; the kernel keeps at most 255", len(key))
	case strings.ContainsAny(key, " \t\n\"'\\,"):
		return vocab.Usagef("--keys: key %q holds a space, quote or comma: rule keys are letters, digits, - and _", key)
	}
	return nil
}

// Follow is what a tracer that adds no rules reads.
type Follow struct {
	// Keys are the keys followed; with Any, every record of the node's
	// rules is read whatever its key, and Keys only names them.
	Keys []string
	Any  bool
	// Covers are the event classes the followed rules record.
	Covers vocab.TypeSet
	// Rules is how many loaded rules are followed.
	Rules int
}

// LoadHint is how the user loads rules with key into the kernel.
func LoadHint(key string) string {
	// auditctl -R reads only a regular file of root's: not a pipe.
	return fmt.Sprintf("tracer rules --key %s > /etc/audit/rules.d/%s.rules && auditctl -R /etc/audit/rules.d/%s.rules (persisted: loaded again at boot)", key, key, key)
}

// PlanFollow decides what a tracer following keys reads from the loaded
// rules (auditctl text): each key must be on a loaded rule that records
// some of the classes the watch wants, or it is a usage error saying how
// to load it. existing follows every loaded rule instead, whatever its
// key (keys then must be empty).
func PlanFollow(loaded []string, keys []string, existing bool, want vocab.TypeSet) (Follow, error) {
	var plan Follow
	if existing {
		plan.Any = true
		for _, text := range loaded {
			r := ParseLoaded(text)
			if r.Covers&want == 0 {
				continue
			}
			plan.Rules++
			plan.Covers |= r.Covers & want
			for _, k := range r.Keys {
				if !slices.Contains(plan.Keys, k) {
					plan.Keys = append(plan.Keys, k)
				}
			}
		}
		if plan.Rules == 0 {
			return plan, vocab.Usagef("--rules existing: no loaded audit rule records %s syscalls: load rules first: %s", want, LoadHint(Key))
		}
		return plan, nil
	}
	for _, k := range keys {
		covers, found := vocab.TypeSet(0), false
		for _, text := range loaded {
			r := ParseLoaded(text)
			if !slices.Contains(r.Keys, k) {
				continue
			}
			found = true
			if r.Covers&want != 0 {
				plan.Rules++
				covers |= r.Covers & want
			}
		}
		switch {
		case !found:
			return plan, vocab.Usagef("no loaded audit rule has key %q: load the rules first: %s", k, LoadHint(k))
		case covers == 0:
			return plan, vocab.Usagef("the loaded audit rules with key %q record no %s syscall: load rules that do: %s", k, want, LoadHint(k))
		}
		plan.Covers |= covers
		if !slices.Contains(plan.Keys, k) {
			plan.Keys = append(plan.Keys, k)
		}
	}
	return plan, nil
}

// PlanLocked decides what a tracer reads on a node whose rules are locked
// (enabled=2) when no keys were given: every key of the loaded rules that
// record classes the watch wants, leaving out running tracers' instance
// keys (their rules go with them). With none, it is a usage error: only
// the node's rules files and a reboot, or the eBPF backend, can help.
func PlanLocked(loaded []string, want vocab.TypeSet) (Follow, error) {
	var plan Follow
	for _, text := range loaded {
		r := ParseLoaded(text)
		if r.Covers&want == 0 {
			continue
		}
		keys := slices.DeleteFunc(slices.Clone(r.Keys), IsInstanceKey)
		if len(keys) == 0 {
			continue
		}
		plan.Rules++
		plan.Covers |= r.Covers & want
		for _, k := range keys {
			if !slices.Contains(plan.Keys, k) {
				plan.Keys = append(plan.Keys, k)
			}
		}
	}
	if plan.Rules == 0 {
		return plan, vocab.Usagef("audit rules are locked (enabled=2, e.g. STIG/CIS) and no loaded rule with a key records %s syscalls: tracer cannot add rules; add keyed rules to the node's rules files (tracer rules --key %s > /etc/audit/rules.d/%s.rules) and reboot, or use --backend ebpf", want, Key, Key)
	}
	return plan, nil
}
