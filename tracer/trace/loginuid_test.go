// SPDX-License-Identifier: Apache-2.0

//go:build linux

package trace

import "testing"

// The synthetic login uids stay clear of every range a node's id
// allocators hand out by default, and of the ids audit treats as special,
// for every pid the kernel can give tracer (at most 2^22).
func TestScopeAUIDOutsideAllocatedRanges(t *testing.T) {
	taken := []struct {
		what   string
		lo, hi uint32
	}{
		{"regular and system users", 0, 60000},
		{"systemd-homed", 60001, 60513},
		{"systemd dynamic users", 61184, 65519},
		{"SSSD ID mapping (ldap_idmap_range_min..max)", 200000, 2000200000},
		{"FreeIPA id ranges (random 200000-id ranges below 2^31)", 200000, 1<<31 - 1},
		{"systemd containers and nspawn", 524288, 1879048191},
		{"systemd foreign uid range", 2147352576, 2147418111},
		{"nobody as some tools count it (-2)", 4294967294, 4294967294},
		{"unset login uid (-1)", 4294967295, 4294967295},
	}
	for _, pid := range []int{1, 4100, 199_999, 1 << 15, 2_000_000, 1 << 22} {
		auid := scopeAUID(pid)
		for _, r := range taken {
			if auid >= r.lo && auid <= r.hi {
				t.Errorf("pid %d: login uid %d is in %s (%d-%d)", pid, auid, r.what, r.lo, r.hi)
			}
		}
		if scopeAUID(pid+1) == auid {
			t.Errorf("pids %d and %d get the same login uid", pid, pid+1)
		}
	}
}
