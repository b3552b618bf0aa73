// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package auditstate

// Register is Linux's: elsewhere there is no tracer to register.
func Register(string, func(*Registration)) error { return nil }

// Unregister is Linux's.
func Unregister(string, func(*Registration)) error { return nil }

// Registrations is Linux's.
func Registrations(string) (live, dead []Registration) { return nil, nil }

// Watchers is Linux's.
func Watchers(string) []uint32 { return nil }

// Remove is Linux's.
func Remove(string, Registration) error { return nil }

// Alive is Linux's: elsewhere no tracer runs.
func (Registration) Alive() bool { return false }
