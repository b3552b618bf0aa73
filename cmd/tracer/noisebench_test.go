// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// The noise storm: the workload sends its own thread SIGURG by tgkill
// (the Go runtime's preemption) noiseStormURG times, then itself SIGUSR1
// by kill noiseStormUSR1 times: nine signals in ten are runtime noise.
const (
	noiseStormURG  = 90000
	noiseStormUSR1 = 10000
)

// BenchmarkRuntimeNoiseFilter measures what the runtime-noise filter
// saves the watcher: its CPU per signal the workload sent, watched with
// the default filter and with --signal all, on both backends. Each
// iteration is one interleaved round of the four; run it with
// -benchtime 5x (or more) for medians of 5 rounds:
//
//	sudo go test -run '^$' -bench RuntimeNoiseFilter -benchtime 5x ./cmd/tracer
//
// It reports the medians in µs per signal sent (the watcher process;
// kauditd's apart, node-wide) and the ratio of --signal all to the
// default per backend, which only compare within one run.
func BenchmarkRuntimeNoiseFilter(b *testing.B) {
	tracertest.LockAudit(b)
	mount := tracertest.Cgroup2(b)
	rel := fmt.Sprintf("tracer-noisebench-%d", os.Getpid())
	dir := tracertest.MakeCgroup(b, mount, rel)
	wl := tracertest.BuildWorkload(b)
	kauditd := kernelThread(b, "kauditd")
	modes := []*stormMode{
		{name: "audit-default", backend: "audit"},
		{name: "audit-all", backend: "audit", flags: []string{"--signal", "all"}},
		{name: "ebpf-default", backend: "ebpf"},
		{name: "ebpf-all", backend: "ebpf", flags: []string{"--signal", "all"}},
	}
	sent := float64(noiseStormURG + noiseStormUSR1)
	stormRounds(b, modes, rel, dir, kauditd, sent,
		wl, "tgkill", strconv.Itoa(noiseStormURG), "23", "kill", strconv.Itoa(noiseStormUSR1), "10", "exit", "0")
	med := medianOf
	for _, m := range modes {
		b.ReportMetric(med(m.cpu), m.name+"-us/signal")
		b.Logf("%-13s watcher %6.2f us/signal (rounds %s), kauditd %5.2f, %d events shown of %d sent",
			m.name, med(m.cpu), us(m.cpu), med(m.kcpu), m.shown, int(sent))
	}
	for _, be := range []string{"audit", "ebpf"} {
		var def, all *stormMode
		for _, m := range modes {
			switch m.name {
			case be + "-default":
				def = m
			case be + "-all":
				all = m
			}
		}
		ratios := make([]float64, len(def.cpu))
		for i := range ratios {
			ratios[i] = all.cpu[i] / def.cpu[i]
		}
		b.ReportMetric(med(ratios), be+"-all/default")
		b.Logf("%s: --signal all / default = %.2fx (median of per-round ratios)", be, med(ratios))
	}
}

// stormMode is one way to watch a signal storm in the benchmarks: watch's
// backend and flags, and what each round measured.
type stormMode struct {
	name, backend string
	flags         []string
	cpu, kcpu     []float64 // per round, µs per signal sent (kcpu: the kernel thread's)
	shown         int       // events shown in the last round
}

// stormRounds runs b.N rounds of every mode watching the signals (sent of
// them) of wl wlArgs in the cgroup rel (dir), timing the watcher and the
// kernel thread kthread (0: none).
func stormRounds(b *testing.B, modes []*stormMode, rel, dir string, kthread int, sent float64, wl string, wlArgs ...string) {
	b.Helper()
	b.ResetTimer()
	for round := range b.N {
		for i := range modes {
			// Interleaved, and each round in another order, so that a
			// drift of the node spreads over every mode.
			m := modes[(i+round)%len(modes)]
			out := filepath.Join(b.TempDir(), "events.json")
			args := append([]string{"watch", "--backend", m.backend, "--events", "signal", "--cgroup", "/" + rel,
				"--format", "json", "-o", out}, m.flags...)
			cpu, kcpu := watchRound(b, m.name, dir, out, args, kthread, wl, wlArgs...)
			m.cpu = append(m.cpu, 1e6*cpu/sent)
			m.kcpu = append(m.kcpu, 1e6*kcpu/sent)
			m.shown = lines(b, out)
		}
	}
	b.StopTimer()
}

func us(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strings.Join(s, " ")
}

// startBenchWatcher starts tracer with args and waits for its watching line.
func startBenchWatcher(tb testing.TB, args ...string) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command(tracerBin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	ready := watchingLine(stderr, nil, nil)
	select {
	case ok := <-ready:
		if !ok {
			tb.Fatalf("tracer %v exited before watching", args)
		}
	case <-time.After(30 * time.Second):
		tb.Fatalf("tracer %v did not print its watching line", args)
	}
	return cmd
}

// kernelThread returns the pid of the kernel thread named comm, or 0.
func kernelThread(tb testing.TB, comm string) int {
	tb.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if c, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.TrimSpace(string(c)) == comm {
			return pid
		}
	}
	return 0
}

// quiet waits until file stops growing: the watcher has written what it read.
func quiet(tb testing.TB, file string) {
	tb.Helper()
	last := int64(-1)
	for range 100 {
		time.Sleep(200 * time.Millisecond)
		st, err := os.Stat(file)
		if err == nil && st.Size() == last {
			return
		}
		if err == nil {
			last = st.Size()
		}
	}
}

func lines(tb testing.TB, file string) int {
	tb.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}
