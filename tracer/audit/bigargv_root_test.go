// SPDX-License-Identifier: Apache-2.0

//go:build linux

package audit

import (
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// One user's execs with a 2 MB argv (the kernel formats every byte into
// EXECVE records before tracer keeps 2,560 of them) beside another's plain
// execs: what each loses, and that every event missing is in the loss
// the backend reports. Figures for docs/backends.md ("Large argv").
func TestBigArgvFloodLossCounted(t *testing.T) {
	tracertest.LockAudit(t)
	tracertest.PauseNodeAuditd(t)
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/bigargv.c")
	if err != nil {
		t.Fatal(err)
	}
	bin := tracertest.CompileC(t, dir, "bigargv", src)
	big := 200
	if v := os.Getenv("TRACER_BIGARGV_N"); v != "" {
		big, _ = strconv.Atoi(v)
	}
	rate := 100
	if v := os.Getenv("TRACER_BIGARGV_RATE"); v != "" {
		rate, _ = strconv.Atoi(v)
	}
	const small = 500 // the bystander's execs, at 100 a second

	cfg := tracer.DefaultConfig()
	cfg.Types, _ = vocab.ParseTypes("exec")
	b := New()
	s := tracertest.StartSession(t, b, cfg)
	run := func(args ...string) (*exec.Cmd, time.Duration) {
		cmd := exec.Command(bin, args...)
		start := time.Now()
		if err := cmd.Run(); err != nil {
			t.Errorf("%v: %v", args, err)
		}
		return cmd, time.Since(start)
	}
	var wg sync.WaitGroup
	var bigCmd, smallCmd *exec.Cmd
	var bigTook, smallTook time.Duration
	wg.Add(2)
	// 15 arguments of 128 KiB less one (MAX_ARG_STRLEN with its NUL): under
	// the 2 MiB that an 8 MiB stack limit allows (E2BIG past it).
	go func() { defer wg.Done(); bigCmd, bigTook = run(strconv.Itoa(big), strconv.Itoa(rate), "15", "131071") }()
	go func() { defer wg.Done(); smallCmd, smallTook = run(strconv.Itoa(small), "100", "1", "8") }()
	wg.Wait()
	time.Sleep(3 * time.Second) // the records still queued
	s.Stop()
	st := b.Stats()
	count := func(root uint32) int {
		n := 0
		for _, e := range s.Tree(root) {
			if e.Type == vocab.TypeExec && e.Filename == "/bin/true" {
				n++
			}
		}
		return n
	}
	gotBig, gotSmall := count(uint32(bigCmd.Process.Pid)), count(uint32(smallCmd.Process.Pid))
	var lost uint64
	for _, n := range st.Lost {
		lost += n
	}
	t.Logf("1.9 MiB-argv execs at %d/s: %d of %d seen in %v; bystander's execs at 100/s: %d of %d seen in %v; lost by stage %v (kernel counts records); lean %v",
		rate, gotBig, big, bigTook.Round(time.Millisecond), gotSmall, small, smallTook.Round(time.Millisecond), st.Lost, b.lean)
	if missing := big + small - gotBig - gotSmall; missing > 0 && lost == 0 {
		t.Errorf("%d exec events missing and no loss reported", missing)
	}
}
