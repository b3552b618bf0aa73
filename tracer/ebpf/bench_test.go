//go:build linux

package ebpf

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// buildLoop compiles testdata/loop.c.
func buildLoop(b *testing.B) string {
	b.Helper()
	_, file, _, _ := runtime.Caller(0)
	out := filepath.Join(b.TempDir(), "loop")
	cmd := exec.Command("cc", "-O2", "-o", out, "-x", "c", filepath.Join(filepath.Dir(file), "testdata", "loop.c"))
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("building loop.c: %v", err)
	}
	return out
}

// timed runs the loop and returns its elapsed and CPU time.
func timed(b *testing.B, bin string, args ...string) (elapsed, cpu time.Duration) {
	b.Helper()
	cmd := exec.Command(bin, args...)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s: %v %s", bin, err, out)
	}
	elapsed = time.Since(start)
	return elapsed, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkOverhead runs each loop untraced and traced in turn, once per
// benchmark iteration (-benchtime=7x for 7 interleaved rounds), all events
// delivered to a no-op emit, and reports the medians of the per-round
// ratios traced/untraced (elapsed and the loop's CPU time), events lost,
// and the backend's user-space CPU per event (decode and delivery).
func BenchmarkOverhead(b *testing.B) {
	tracertest.NeedRoot(b)
	bin := buildLoop(b)
	loops := []struct {
		name string
		args []string
	}{
		{"signal-storm", []string{"kill", "200000"}},
		{"syscall-tax", []string{"getppid", "3000000"}},
	}
	for _, l := range loops {
		for _, set := range []string{ProbesSched, ProbesSyscalls} {
			b.Run(l.name+"/"+set, func(b *testing.B) {
				var elapsedRatio, cpuRatio, userPerEvent []float64
				var lost, events uint64
				for b.Loop() {
					base, baseCPU := timed(b, bin, l.args...)

					be := New()
					cfg := tracer.DefaultConfig()
					cfg.Types, cfg.Probes = allTypes(), set
					if err := be.Start(cfg); err != nil {
						b.Fatal(err)
					}
					ctx, cancel := context.WithCancel(context.Background())
					done := make(chan error, 1)
					seen := 0
					cpu0 := selfCPU()
					go func() { done <- be.Run(ctx, func(*tracer.Event) { seen++ }) }()
					el, cpu := timed(b, bin, l.args...)
					cancel()
					if err := <-done; err != nil {
						b.Fatal(err)
					}
					tracerCPU := selfCPU() - cpu0
					st := be.Stats()
					_ = be.Close()

					elapsedRatio = append(elapsedRatio, float64(el)/float64(base))
					cpuRatio = append(cpuRatio, float64(cpu)/float64(baseCPU))
					if seen >= 10000 { // per event only where events dominate the reader's time
						userPerEvent = append(userPerEvent, float64(tracerCPU.Nanoseconds())/float64(seen))
					}
					lost += st.TotalLost()
					events += uint64(seen)
				}
				b.ReportMetric(median(elapsedRatio), "x-elapsed")
				b.ReportMetric(median(cpuRatio), "x-cpu")
				if len(userPerEvent) > 0 {
					b.ReportMetric(median(userPerEvent), "ns-tracer/event")
				}
				b.ReportMetric(float64(events)/float64(b.N), "events/round")
				b.ReportMetric(float64(lost), "lost")
			})
		}
	}
}
