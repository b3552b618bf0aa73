// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/tracer/auditstate"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// tracer cleanup never runs a command line read from a state file, and
// uses no state another user could have written: a directory of theirs,
// a file group members can write, or a file of root's that names argv.
func TestCleanupRunsNothingFromTheStateFile(t *testing.T) {
	tracertest.NeedRoot(t)
	// Nothing here may start an auditd beside another test's.
	tracertest.LockAudit(t)
	t.Cleanup(func() { auditstate.StateDir = auditstate.DefaultStateDir })
	base := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(base, "ran")
	// What a bench killed with its auditd stopped wrote, as an attacker
	// would write it: the "auditd" to start is touch.
	state, _ := json.Marshal(map[string]any{"pid": gone.Process.Pid, "stopped_auditd": map[string]any{
		"pid": 1, "argv": []string{"/usr/bin/touch", marker}, "conf": "/etc/audit/auditd.conf",
	}})
	write := func(dir string, mode os.FileMode) {
		t.Helper()
		f := filepath.Join(dir, "bench-"+strconv.Itoa(gone.Process.Pid)+".json")
		if err := os.WriteFile(f, state, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(f, mode); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name   string
		make   func(dir string)
		refuse bool
	}{
		{"a directory of nobody's", func(dir string) {
			mkdir(t, dir)
			write(dir, 0o600)
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"a group-writable file", func(dir string) { mkdir(t, dir); write(dir, 0o620) }, true},
		{"a file of root's with argv", func(dir string) { mkdir(t, dir); write(dir, 0o600) }, false},
	}
	for _, c := range cases {
		auditstate.StateDir = filepath.Join(base, strings.ReplaceAll(c.name, " ", "-"))
		c.make(auditstate.StateDir)
		done, err := Cleanup()
		if _, serr := os.Stat(marker); serr == nil {
			t.Fatalf("%s: cleanup ran the command line in the state file (said %q, %v)", c.name, done, err)
		}
		if c.refuse && (!errors.Is(err, vocab.ErrUsage) || strings.Contains(err.Error(), "\n")) {
			t.Errorf("%s: Cleanup = %q, %v; want one usage line", c.name, done, err)
		}
		if !c.refuse && err == nil {
			t.Errorf("%s: Cleanup = %q, nil; want an error that names no way to start auditd", c.name, done)
		}
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
}

// Only audit rules are reloaded: auditctl -R also takes -e 2, -f 2, -D.
func TestIsAuditRule(t *testing.T) {
	for line, want := range map[string]bool{
		"-a always,exit -F arch=b64 -S chmod -F key=node": true,
		"-w /etc/passwd -p wa -k identity":                true,
		"-e 2":                                            false,
		"-f 2":                                            false,
		"-D":                                              false,
		"-b 1":                                            false,
		"-a always,exit -S chmod\n-e 2":                   false,
	} {
		if got := isAuditRule(line); got != want {
			t.Errorf("isAuditRule(%q) = %v, want %v", line, got, want)
		}
	}
}
