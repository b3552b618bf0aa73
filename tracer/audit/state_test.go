//go:build linux

package audit

import (
	"os"
	"os/exec"
	"testing"
)

// TestReturnSettings: a program that changed audit settings and puts them
// back must not set them while a tracer runs (it would disable audit under
// it), but hand its values to the tracers, whose last one restores them;
// with no tracer running it sets them itself.
func TestReturnSettings(t *testing.T) {
	StateDir = t.TempDir()
	t.Cleanup(func() { StateDir = "/run/tracer" })
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
