// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package tracer

// RegisterPeer is Linux's: elsewhere there is no tracer to register.
func RegisterPeer(string) (func(), error) { return func() {}, nil }

// RefreshPeers is Linux's.
func RefreshPeers(string, *Peers) {}

// RemoveStalePeers is Linux's.
func RemoveStalePeers(string) []string { return nil }
