// SPDX-License-Identifier: Apache-2.0

// Package vocab is the event vocabulary shared by every layer: the event
// types, signal names and numbers, si_codes and what a signal does by
// default, exit statuses, errno names, the ids and limits both backends
// agree on, and the usage-error kind that cmd/ maps to exit status 2. It
// imports nothing of the project, so that every package, from auditrules
// and bench/result up to the backends and cmd/, can name an event's parts
// without pulling in the rest.
package vocab

import (
	"fmt"
	"strings"
)

// Type is the class of a process event.
type Type uint8

// The event classes (docs/events.md). TypeNone is the zero value and never emitted.
const (
	TypeNone Type = iota
	TypeExec
	TypeFork
	TypeSignal
	TypeExit
	// TypeThrottle says that a source of events went over --rate-limit
	// and how many of its events were left out (tracer.Event.Throttle). It is not
	// a process event: --events does not name it, and no filter leaves it
	// out.
	TypeThrottle
	// NumTypes bounds the types: arrays indexed by Type have this length.
	NumTypes
)

var typeNames = [...]string{TypeNone: "none", TypeExec: "exec", TypeFork: "fork", TypeSignal: "signal", TypeExit: "exit", TypeThrottle: "throttle"}

func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// AllTypes lists the process event classes in their canonical order
// (TypeThrottle is not one).
var AllTypes = []Type{TypeExec, TypeFork, TypeSignal, TypeExit}

// ArgvMax is how many arguments of an exec's argv both backends keep
// (ARGC_MAX in bpf/headers/types.h is the same number): an event's size is
// bounded, and the rest is counted as cut (an event's ArgvTruncated).
const ArgvMax = 20

// ArgvBytesMax is how many bytes of an exec's argument area both backends
// keep: its arguments, each followed by its NUL, cut after this many bytes
// (the last argument kept may be cut short). It is ARGV_BYTES in
// bpf/tracer.bpf.c, what the eBPF side reads of the new image;
// tracer.AppendArgv makes the one cut.
const ArgvBytesMax = ArgvMax * 128

// UnsetID is the audit login uid and session id of a process that never logged in.
const UnsetID = 4294967295

// ParseTypes parses a comma-separated list of event classes ("exec,fork").
func ParseTypes(s string) (TypeSet, error) {
	var set TypeSet
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(strings.ToLower(f))
		if f == "" {
			continue
		}
		if f == "all" {
			for _, t := range AllTypes {
				set = set.With(t)
			}
			continue
		}
		found := false
		for _, t := range AllTypes {
			if t.String() == f {
				set, found = set.With(t), true
			}
		}
		if !found {
			return 0, fmt.Errorf("unknown event class %q: use exec, fork, signal or exit", f)
		}
	}
	if set == 0 {
		return 0, fmt.Errorf("no event class given: use exec, fork, signal or exit")
	}
	return set, nil
}

// TypeSet is a set of event classes.
type TypeSet uint8

// DefaultTypes is the default of --events: exec, fork, signal.
const DefaultTypes = TypeSet(1<<TypeExec | 1<<TypeFork | 1<<TypeSignal)

// With returns s with t added.
func (s TypeSet) With(t Type) TypeSet { return s | 1<<t }

// Has reports whether t is in s.
func (s TypeSet) Has(t Type) bool { return s&(1<<t) != 0 }

func (s TypeSet) String() string {
	var parts []string
	for _, t := range AllTypes {
		if s.Has(t) {
			parts = append(parts, t.String())
		}
	}
	return strings.Join(parts, ",")
}

// TypeNamed is the type a name names (String's inverse), TypeNone for
// none.
func TypeNamed(s string) Type {
	for _, t := range AllTypes {
		if t.String() == s {
			return t
		}
	}
	if s == TypeThrottle.String() {
		return TypeThrottle
	}
	return TypeNone
}
