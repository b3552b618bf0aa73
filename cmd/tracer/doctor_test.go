// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tracer-dev/tracer/tracer/node"
	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// TestDoctorJSON runs doctor as root: the JSON holds the facts of this
// node, both verdicts and the rule cost; --bench adds the measured tax.
func TestDoctorJSON(t *testing.T) {
	tracertest.NeedRoot(t)
	code, stdout, stderr := runTracer(t, nil, "doctor", "--format", "json", "--bench", reportFixtures[0])
	if code != 0 {
		t.Fatalf("doctor: exit %d, stderr %q", code, stderr)
	}
	var r node.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("doctor JSON: %v\n%s", err, stdout)
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	if r.Facts.Kernel != strings.TrimSpace(string(kernel)) || !r.Facts.Root {
		t.Errorf("facts: kernel %q root %v", r.Facts.Kernel, r.Facts.Root)
	}
	if len(r.Verdicts) != 2 || r.Verdicts[0].Backend != "audit" || r.Verdicts[1].Backend != "ebpf" {
		t.Errorf("verdicts %+v", r.Verdicts)
	}
	if r.RuleCost == nil || r.Facts.Audit.Status == nil {
		t.Error("no audit status or rule cost as root")
	}
	if len(r.Tax) != 2 || r.Tax[0].Mode != "auditd" || r.Tax[0].Ratio != 1.56 || r.Tax[0].Storage != "ssd" ||
		r.Tax[1].Mode != "audit" || r.Tax[1].Ratio != 1.48 || r.Tax[0].Hostname != "web-86-12" {
		t.Errorf("tax %+v", r.Tax)
	}
}

// copyForNobody puts the binary where an unprivileged user can run it.
func copyForNobody(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tracer-nobody")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(tracerBin)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	bin := filepath.Join(dir, "tracer")
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestDoctorNotRoot: without root doctor still answers, and says which
// facts it could not read.
func TestDoctorNotRoot(t *testing.T) {
	tracertest.NeedRoot(t) // to drop to nobody we must be root
	saved := tracerBin
	tracerBin = copyForNobody(t)
	defer func() { tracerBin = saved }()
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}

	code, stdout, stderr := runTracer(t, nobody, "doctor", "--format", "json")
	if code != 0 {
		t.Fatalf("doctor as nobody: exit %d, stderr %q", code, stderr)
	}
	var r node.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	if r.Facts.Root || r.Facts.Audit.Status != nil || r.RuleCost != nil {
		t.Errorf("as nobody: root %v, status %v, rule cost %v", r.Facts.Root, r.Facts.Audit.Status, r.RuleCost != nil)
	}
	if !strings.Contains(strings.Join(r.Facts.NeedRoot, "\n"), "audit status and rules (CAP_AUDIT_CONTROL)") {
		t.Errorf("need root: %q", r.Facts.NeedRoot)
	}
	if !node.Yes(r.Facts.Audit.Supported) || r.Facts.Kernel == "" || r.Facts.OS.ID == "" {
		t.Errorf("facts readable without root are missing: %+v", r.Facts)
	}
	code, stdout, _ = runTracer(t, nobody, "doctor")
	if code != 0 || !strings.Contains(stdout, "(collected not as root: some facts are unknown)") || !strings.Contains(stdout, "Not read without root") {
		t.Errorf("doctor text as nobody: exit %d\n%s", code, stdout)
	}
}
