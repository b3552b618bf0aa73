// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// uidStormKills is the signals BenchmarkSelectionFilter's workload sends
// itself (kill, SIGUSR1), as root.
const uidStormKills = 500000

// BenchmarkSelectionFilter measures what --uid in the kernel saves the
// eBPF watcher: its CPU per signal the workload sent, watched with no
// --uid, with --uid 0 (the workload's: every event passes the filter) and
// with --uid 4242 (no process's: the kernel leaves every event out, and
// counts it). Each iteration is one interleaved round of the three; run
// it with -benchtime 5x (or more) for medians of 5 rounds:
//
//	sudo go test -run '^$' -bench SelectionFilter -benchtime 5x ./cmd/tracer
//
// It reports the medians in µs per signal sent and the ratio of each
// --uid mode to no --uid, which only compare within one run.
func BenchmarkSelectionFilter(b *testing.B) {
	// CPU per signal is measured: no other test's storm may run beside it.
	tracertest.LockAudit(b)
	mount := tracertest.Cgroup2(b)
	rel := fmt.Sprintf("tracer-uidbench-%d", os.Getpid())
	dir := tracertest.MakeCgroup(b, mount, rel)
	wl := tracertest.BuildWorkload(b)
	modes := []*stormMode{
		{name: "no-uid", backend: "ebpf"},
		{name: "uid-match", backend: "ebpf", flags: []string{"--uid", "0"}},
		{name: "uid-other", backend: "ebpf", flags: []string{"--uid", "4242"}},
	}
	sent := float64(uidStormKills)
	stormRounds(b, modes, rel, dir, 0, sent, wl, "kill", strconv.Itoa(uidStormKills), "10", "exit", "0")
	med := medianOf
	for _, m := range modes {
		b.ReportMetric(med(m.cpu), m.name+"-us/signal")
		b.Logf("%-9s watcher %6.3f us/signal (rounds %s), %d events shown of %d sent", m.name, med(m.cpu), us(m.cpu), m.shown, int(sent))
	}
	for _, m := range modes[1:] {
		ratios := make([]float64, len(m.cpu))
		for i := range ratios {
			ratios[i] = m.cpu[i] / modes[0].cpu[i]
		}
		b.ReportMetric(med(ratios), m.name+"/no-uid")
		b.Logf("%s / no-uid = %.2fx (median of per-round ratios)", m.name, med(ratios))
	}
}

// watchRound is one round of a watcher benchmark: tracer with args
// (writing to out) watches while wl runs with wlArgs in the cgroup dir,
// until out stops growing. It returns the CPU seconds the watcher and the
// process kthread (0: none) spent meanwhile.
func watchRound(b *testing.B, name, dir, out string, args []string, kthread int, wl string, wlArgs ...string) (cpu, kcpu float64) {
	b.Helper()
	w := startBenchWatcher(b, args...)
	k0, c0 := processCPU(b, kthread).Seconds(), processCPU(b, w.Process.Pid).Seconds()
	cmd := exec.Command(wl, wlArgs...)
	cg, err := os.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer cg.Close()
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(cg.Fd())}
	if o, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("workload: %v %s", err, o)
	}
	quiet(b, out)
	c1, k1 := processCPU(b, w.Process.Pid).Seconds(), processCPU(b, kthread).Seconds()
	_ = w.Process.Signal(syscall.SIGTERM)
	if err := w.Wait(); err != nil {
		b.Fatalf("%s: tracer watch: %v", name, err)
	}
	return c1 - c0, k1 - k0
}
