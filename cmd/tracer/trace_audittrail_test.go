// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"encoding/hex"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer/audit"
	"github.com/tracer-dev/tracer/tracer/trace"
	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// trace --backend audit gives CMD a synthetic login uid; a record in the
// audit trail ties it to the login uid of whoever ran tracer, with the
// command and its pid.
func TestTraceAuditTrailLink(t *testing.T) {
	tracertest.LockAudit(t)
	// Opened under the lock: while another test floods the audit trail the
	// socket's buffer would fill and drop the record.
	log := tracertest.OpenAuditLog(t)
	cmd := []string{"/bin/sh", "-c", "exit 0"}
	// tracer as run from a login session: a shell gives itself a login
	// uid (root may, while login uids are not immutable), then execs it.
	const loginUID = "4242"
	wrap := append([]string{"-c", `echo ` + loginUID + ` > /proc/self/loginuid && exec "$@"`, "sh",
		tracerBin, "trace", "--backend", "audit", "--format", "json", "-o", os.DevNull, "--"}, cmd...)
	if out, err := exec.Command("/bin/sh", wrap...).CombinedOutput(); err != nil {
		t.Fatalf("trace: %v: %s", err, out)
	}
	rec, ok := log.WaitFor(t, audit.UserMessageType, 10*time.Second, "op=tracer-trace")
	if !ok {
		t.Fatal("no op=tracer-trace record in the audit trail")
	}
	t.Logf("record: %s", rec)
	f := map[string]string{}
	for _, m := range regexp.MustCompile(`(\w+)=("[^"]*"|'[^']*'|\S+)`).FindAllStringSubmatch(rec, -1) {
		if _, dup := f[m[1]]; !dup {
			f[m[1]] = m[2]
		}
	}
	inner := map[string]string{}
	msg := strings.Trim(f["msg"], "'")
	for _, kv := range strings.Fields(msg) {
		k, v, _ := strings.Cut(kv, "=")
		inner[k] = v
	}
	sender, _ := strconv.Atoi(f["pid"]) // the kernel's field: tracer's pid
	if want := strconv.FormatUint(uint64(trace.LoginUIDBase)+uint64(sender), 10); inner["auid_synthetic"] != want {
		t.Errorf("auid_synthetic %q, want %s (from tracer's pid %d)", inner["auid_synthetic"], want, sender)
	}
	if inner["auid_real"] != loginUID || f["auid"] != loginUID {
		t.Errorf("auid_real %q, kernel's auid %q; want both %s, the login uid tracer ran with", inner["auid_real"], f["auid"], loginUID)
	}
	if b, err := hex.DecodeString(inner["cmd"]); err != nil || string(b) != strings.Join(cmd, " ") {
		t.Errorf("cmd %q decodes to %q (%v), want %q", inner["cmd"], b, err, strings.Join(cmd, " "))
	}
	if pid, err := strconv.Atoi(inner["pid"]); err != nil || pid <= 0 || pid == sender {
		t.Errorf("pid %q: want the command's pid, not tracer's %d", inner["pid"], sender)
	}
	if inner["op"] != "tracer-trace" || inner["res"] != "success" {
		t.Errorf("op %q res %q", inner["op"], inner["res"])
	}
}
