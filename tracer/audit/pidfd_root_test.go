// SPDX-License-Identifier: Apache-2.0

//go:build linux

package audit

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// A sender that signals through a pidfd and at once dup2s a decoy's pidfd
// onto the same descriptor must not make the decoy the target: the target
// comes from the kernel's OBJ_PID record, which lean records keep while
// signal events are watched.
func TestPidfdTargetNotSpoofed(t *testing.T) {
	tracertest.LockAudit(t)
	tracertest.PauseNodeAuditd(t)
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/pidfdrace.c")
	if err != nil {
		t.Fatal(err)
	}
	bin := tracertest.CompileC(t, dir, "pidfdrace", src)
	pids := filepath.Join(dir, "pids")
	const rounds = 5

	cfg := tracer.DefaultConfig()
	cfg.Types, _ = vocab.ParseTypes("signal,exit")
	cfg.Signals, _ = vocab.ParseSignals("KILL")
	// Lean records even beside another reader of the records (where
	// they keep EOE): both kinds must keep OBJ_PID.
	cfg.LeanRecords = tracer.LeanOn
	b := New()
	events, _ := tracertest.RunWorkload(t, b, cfg, bin, pids, strconv.Itoa(rounds))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(pids)
	if err != nil {
		t.Fatal(err)
	}
	var want []int32
	decoys := map[int32]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(text)), "\n") {
		f := strings.Fields(l)
		v, _ := strconv.Atoi(f[0])
		d, _ := strconv.Atoi(f[1])
		want = append(want, int32(v))
		decoys[int32(d)] = true
	}
	var got []int32
	for _, e := range events {
		if e.Type == vocab.TypeSignal && e.Syscall == "pidfd_send_signal" {
			got = append(got, e.TargetPID)
		}
	}
	if len(got) != rounds {
		t.Fatalf("%d pidfd_send_signal events, want %d (lean=%v)", len(got), rounds, b.lean)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("round %d: target %d, want the victim %d (decoy: %v)", i, got[i], want[i], decoys[got[i]])
		}
	}
}
