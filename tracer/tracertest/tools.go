// SPDX-License-Identifier: Apache-2.0

package tracertest

import (
	"os"
	"os/exec"
	"testing"
)

// DepsEnv is set to 1 by make test, whose first step (make deps) installs
// every tool the tests use: there a missing tool is a failure, not a skip.
const DepsEnv = "TRACER_DEPS_INSTALLED"

// MissingTool ends t for a tool (what) make deps installs but that is not
// installed: a failure under make test, a skip for a developer's go test.
func MissingTool(t testing.TB, what string) {
	t.Helper()
	if os.Getenv(DepsEnv) == "1" {
		t.Fatalf("%s (make deps installs it, and make test ran it)", what)
	}
	t.Skipf("%s (make deps installs it)", what)
}

// NeedTool returns the path of a tool make deps installs, looked up in
// PATH; MissingTool when it is not there.
func NeedTool(t testing.TB, name, why string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		MissingTool(t, name+" is not installed: "+why)
	}
	return p
}
