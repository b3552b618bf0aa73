// SPDX-License-Identifier: Apache-2.0

package tracertest

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// GuestEnv is set to 1 by the init of make test-kernels' qemu guests.
const GuestEnv = "TRACER_TEST_GUEST"

// GuestCmdline is the word the harness puts on the guest kernel's command
// line. Both it and GuestEnv must be there: an environment variable leaks
// into a shell on a real node easily, a boot parameter does not.
const GuestCmdline = "tracer_test_guest=1"

// InThrowawayKernel tells whether the test runs in a kernel booted for
// the tests alone (make test-kernels), which a test may leave changed
// beyond repair, e.g. audit rules locked with auditctl -e 2.
func InThrowawayKernel() bool {
	if os.Getenv(GuestEnv) != "1" {
		return false
	}
	b, err := os.ReadFile("/proc/cmdline")
	return err == nil && slices.Contains(strings.Fields(string(b)), GuestCmdline)
}

// RequireThrowawayKernel skips t outside make test-kernels' guests.
func RequireThrowawayKernel(t testing.TB) {
	t.Helper()
	if !InThrowawayKernel() {
		t.Skip("changes the kernel until it reboots: runs only in make test-kernels' qemu guests (" + GuestEnv + "=1)")
	}
}
