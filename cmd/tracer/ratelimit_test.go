// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// readEvents reads a JSON lines file.
func readEvents(t *testing.T, path string) []tracer.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []tracer.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e tracer.Event
		if err := e.UnmarshalJSON(sc.Bytes()); err != nil {
			t.Fatalf("%s: %v: %s", path, err, sc.Bytes())
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// watch --rate-limit 1000/s, each backend: a kill loop in one cgroup is
// delivered at most at the limit per window, and its throttle events
// account for the rest of its events exactly (delivered + suppressed ==
// the events it made); a workload in another cgroup (5 execs and a loop
// of its own, under the limit) loses nothing; the stats file, the summary
// line and the throttle events agree.
func TestWatchRateLimit(t *testing.T) {
	tracertest.LockAudit(t)
	const limit, kills, calmKills = 1000, 200_000, 300
	mount := tracertest.Cgroup2(t)
	floodDir := tracertest.MakeCgroup(t, mount, "tracer-rate-watch/flood")
	calmDir := tracertest.MakeCgroup(t, mount, "tracer-rate-watch/calm")
	storm := buildStorm(t, true)
	trueBin, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	for _, backend := range []string{"ebpf", "audit"} {
		t.Run(backend, func(t *testing.T) {
			before := nodeSnapshot(t)
			dir := t.TempDir()
			out, statsPath := filepath.Join(dir, "events.jsonl"), filepath.Join(dir, "stats.json")
			w := startWatcher(t, nil, "--backend", backend, "--events", "exec,signal", "--format", "json",
				"--output", out, "--stats-file", statsPath, "--rate-limit", strconv.Itoa(limit)+"/s")
			flood := tracertest.StartInCgroup(t, floodDir, storm, strconv.Itoa(kills))
			calm := []*exec.Cmd{tracertest.StartInCgroup(t, calmDir, storm, strconv.Itoa(calmKills))}
			for range 5 {
				calm = append(calm, tracertest.StartInCgroup(t, calmDir, trueBin))
			}
			start := time.Now()
			for _, c := range append(calm, flood) {
				if err := c.Wait(); err != nil {
					t.Fatal(err)
				}
			}
			took := time.Since(start)
			// The last window ends in silence: it is said within about a second.
			time.Sleep(1500 * time.Millisecond)
			w.stop(t)
			waitNodeBack(t, before)
			_, lost, stages := w.summary(t)

			floodPID := uint32(flood.Process.Pid)
			calmPIDs := map[uint32]int{}
			for _, c := range calm {
				calmPIDs[uint32(c.Process.Pid)] = 0
			}
			var delivered, calmEvents int
			var suppressed, suppressedAll uint64
			var times []time.Time
			var throttles []tracer.Event
			for _, e := range readEvents(t, out) {
				if e.Type == vocab.TypeThrottle {
					suppressedAll += e.Throttle.Suppressed()
					if e.Throttle.Source == tracer.SourceCgroup && e.Cgroup == "/tracer-rate-watch/calm" {
						t.Errorf("the calm cgroup was throttled: %+v", e)
					}
					if e.Throttle.Source != tracer.SourceCgroup || e.Cgroup != "/tracer-rate-watch/flood" {
						continue
					}
					throttles = append(throttles, e)
					suppressed += e.Throttle.Suppressed()
					if e.PID != floodPID || e.Comm != "storm" || e.Throttle.Limit != limit || e.Throttle.Signal != e.Throttle.Suppressed() ||
						e.Throttle.End.Sub(e.Throttle.Start) > time.Second || !e.Time.Equal(e.Throttle.End) {
						t.Errorf("throttle event %+v", e)
					}
					continue
				}
				switch _, isCalm := calmPIDs[e.PID]; {
				case e.PID == floodPID && (e.Type == vocab.TypeExec || e.Type == vocab.TypeSignal && e.Signal == 10):
					delivered++
					times = append(times, e.Time)
				case isCalm && (e.Type == vocab.TypeExec || e.Type == vocab.TypeSignal && e.Signal == 10):
					calmEvents++
					calmPIDs[e.PID]++
				}
			}
			t.Logf("%s: %d kills in %v; the flood's %d events: %d delivered, %d suppressed in %d throttle events; calm %d events; lost %d (%s)",
				backend, kills, took.Round(time.Millisecond), kills+1, delivered, suppressed, len(throttles), calmEvents, lost, stages)
			if uint64(delivered)+suppressed != kills+1 {
				t.Errorf("delivered %d + suppressed %d = %d, want the flood's %d events (its exec and %d kills)",
					delivered, suppressed, uint64(delivered)+suppressed, kills+1, kills)
			}
			if len(throttles) == 0 {
				t.Error("no throttle event for the flood")
			}
			tracertest.CheckThrottleWindows(t, throttles, times, limit)
			if want := 1 + calmKills + 5; calmEvents != want {
				t.Errorf("the calm cgroup's events: %d delivered (by pid %v), want %d", calmEvents, calmPIDs, want)
			}
			if lost != 0 {
				t.Errorf("lost %d events (%s)", lost, stages)
			}
			// The stats file and the summary line say what the throttle events do.
			var sf tracer.StatsFile
			b, err := os.ReadFile(statsPath)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &sf); err != nil {
				t.Fatal(err)
			}
			if sf.ThrottledTotal != suppressedAll || sf.Throttled["signal"] < suppressed || sf.LostTotal != 0 {
				t.Errorf("stats file: throttled %d %v, lost %d; the throttle events say %d (%d the flood's)",
					sf.ThrottledTotal, sf.Throttled, sf.LostTotal, suppressedAll, suppressed)
			}
			if want := " " + strconv.FormatUint(sf.ThrottledTotal, 10) + " throttled by --rate-limit"; !strings.Contains(w.stderr(), want) {
				t.Errorf("summary line lacks %q:\n%s", want, w.stderr())
			}
		})
	}
}

// What watching costs under a flood: the watcher's CPU (its rusage) for
// the same kill loop with --rate-limit 1000/s and without, less what a
// watcher that saw nothing spent as long (loading rules or programs,
// polling). With the limit it is bounded by the limit, not by the loop:
// eBPF leaves the rest out in the kernel; audit still reads every SYSCALL
// record, but builds and writes only what passes.
func TestWatchRateLimitCPU(t *testing.T) {
	tracertest.LockAudit(t)
	const kills = 300_000
	storm := buildStorm(t, true)
	// run watches for d, or while the kill loop runs when d is 0, and
	// returns the watcher's CPU time and how long it watched.
	run := func(backend string, d time.Duration, args ...string) (time.Duration, time.Duration) {
		out := filepath.Join(t.TempDir(), "events.jsonl")
		w := startWatcher(t, nil, append([]string{"--backend", backend, "--events", "signal", "--format", "json", "--output", out}, args...)...)
		start := time.Now()
		if d > 0 {
			time.Sleep(d)
		} else if b, err := exec.Command(storm, strconv.Itoa(kills)).CombinedOutput(); err != nil {
			w.stop(t)
			t.Fatalf("storm: %v %s", err, b)
		}
		took := time.Since(start)
		w.stop(t)
		ps := w.cmd.ProcessState
		return ps.UserTime() + ps.SystemTime(), took
	}
	for _, backend := range []string{"ebpf", "audit"} {
		var idle, free, limited, took []float64
		for range 3 { // interleaved
			c, d := run(backend, 0)
			free, took = append(free, c.Seconds()), append(took, d.Seconds())
			c, _ = run(backend, 0, "--rate-limit", "1000/s")
			limited = append(limited, c.Seconds())
			c, _ = run(backend, d)
			idle = append(idle, c.Seconds())
		}
		i, f, l := medianOf(idle), medianOf(free), medianOf(limited)
		t.Logf("%s, %d kills (loop %.2f s): watcher CPU %.3f s without --rate-limit, %.3f s with 1000/s, %.3f s seeing nothing: the flood cost %.3f s, %.3f s with the limit (%.0f%%)",
			backend, kills, medianOf(took), f, l, i, f-i, l-i, 100*(l-i)/(f-i))
		// Only eBPF's limit runs in the kernel, before a record exists.
		// Audit's watcher still reads and parses every record the kernel
		// makes (rules cannot count per cgroup), so its CPU stays bounded
		// by the loop: the limit saves it the event and its output alone,
		// a part of the flood's cost within this test's noise on a shared
		// machine. So audit is held only to what docs/events.md says of
		// it: the limit costs the watcher nothing more (10% slack).
		switch {
		case backend == "ebpf" && l-i > 0.5*(f-i):
			t.Errorf("%s: the flood cost the watcher %.3f s with --rate-limit, %.3f s without: want at most 50%%", backend, l-i, f-i)
		case backend == "audit" && l-i > 1.1*(f-i):
			t.Errorf("%s: the flood cost the watcher %.3f s with --rate-limit, %.3f s without: the limit must not cost more (10%% slack)", backend, l-i, f-i)
		}
	}
}

func medianOf(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// Bad --rate-limit values end in one line and exit status 2, before
// anything is installed.
func TestWatchRateLimitUsage(t *testing.T) {
	for _, v := range []string{"0", "0/s", "abc", "10/m", "-3/s", "1.5/s"} {
		cmd := exec.Command(tracerBin, "watch", "--backend", "ebpf", "--rate-limit", v)
		out, err := cmd.CombinedOutput()
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if cmd.ProcessState.ExitCode() != 2 || len(lines) != 1 || !strings.Contains(lines[0], "--rate-limit") {
			t.Errorf("--rate-limit %s: exit %d (%v), output %q; want one line about --rate-limit and exit 2", v, cmd.ProcessState.ExitCode(), err, out)
		}
	}
}
