// SPDX-License-Identifier: Apache-2.0

//go:build linux

package audit

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/tracer/auditstate"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// TestReturnSettings: a program that changed audit settings and puts them
// back must not set them while a tracer runs (it would disable audit under
// it), but hand its values to the tracers, whose last one restores them;
// with no tracer running it sets them itself.
func TestReturnSettings(t *testing.T) {
	auditstate.StateDir = t.TempDir()
	t.Cleanup(func() { auditstate.StateDir = auditstate.DefaultStateDir })
	u := func(v uint32) *uint32 { return &v }
	want := Originals{Enabled: u(0), BacklogLimit: u(64), BacklogWaitTime: u(15000)}

	applied := false
	handed, err := ReturnSettings(want, func() error { applied = true; return nil })
	if err != nil || handed || !applied {
		t.Fatalf("no tracer running: handed %v, applied %v, err %v; want applied", handed, applied, err)
	}

	// A live tracer (a child standing in for one) that recorded the
	// values it found, which were the other program's changes.
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	pid := child.Process.Pid
	if err := writeJSON(ownerPath(pid), owner{PID: pid, Start: processStart(pid), Key: "tracer-test"}); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(nodePath(), nodeSettings{Enabled: u(1), BacklogLimit: u(8192)}); err != nil {
		t.Fatal(err)
	}
	applied = false
	handed, err = ReturnSettings(want, func() error { applied = true; return nil })
	if err != nil || !handed || applied {
		t.Fatalf("a tracer running: handed %v, applied %v, err %v; want handed over, not applied", handed, applied, err)
	}
	o := TracerOriginals()
	if o.Enabled == nil || *o.Enabled != 0 || o.BacklogLimit == nil || *o.BacklogLimit != 64 ||
		o.BacklogWaitTime == nil || *o.BacklogWaitTime != 15000 {
		t.Errorf("recorded for the last tracer: %+v, want enabled 0, backlog_limit 64, backlog_wait_time 15000", o)
	}
	if _, err := os.Stat(nodePath()); err != nil {
		t.Error(err)
	}
}

// A state directory, or a file in it, that another user could have made
// or written is refused in one line before anything in it is used.
func TestStateDirOthersCouldWriteRefused(t *testing.T) {
	tracertest.NeedRoot(t)
	t.Cleanup(func() { auditstate.StateDir = auditstate.DefaultStateDir })
	base := t.TempDir()
	u := func(v uint32) *uint32 { return &v }
	cases := map[string]func(dir string){
		"owned by nobody": func(dir string) {
			must(t, os.Mkdir(dir, 0o700), os.Chown(dir, 65534, 65534))
		},
		"group-writable file": func(dir string) {
			must(t, os.Mkdir(dir, 0o700))
			f := filepath.Join(dir, "audit-node.json")
			must(t, os.WriteFile(f, []byte(`{"enabled_before":0}`), 0o600), os.Chmod(f, 0o620))
		},
		"symlinked file": func(dir string) {
			must(t, os.Mkdir(dir, 0o700), os.Symlink("/etc/hostname", filepath.Join(dir, "audit-node.json")))
		},
		"symlink": func(dir string) {
			real := dir + ".real"
			must(t, os.Mkdir(real, 0o700), os.Symlink(real, dir))
		},
	}
	for name, make := range cases {
		auditstate.StateDir = filepath.Join(base, strings.ReplaceAll(name, " ", "-"))
		make(auditstate.StateDir)
		applied := false
		_, err := ReturnSettings(Originals{Enabled: u(1)}, func() error { applied = true; return nil })
		if !errors.Is(err, vocab.ErrUsage) || strings.Contains(err.Error(), "\n") || applied {
			t.Errorf("%s: ReturnSettings = %v, settings applied %v; want one usage line and nothing applied", name, err, applied)
		}
		if o := TracerOriginals(); o.Enabled != nil {
			t.Errorf("%s: read %+v from it", name, o)
		}
	}
}

func must(t *testing.T, errs ...error) {
	t.Helper()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
