// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfbackend

import (
	"context"
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/bpf"
	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/sink"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// buildLoop compiles testdata/loop.c.
func buildLoop(b testing.TB) string {
	b.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "loop.c"))
	if err != nil {
		b.Fatal(err)
	}
	return tracertest.CompileC(b, b.TempDir(), "loop", src)
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

// stormRecord is one signal record as signal_generate writes it in a storm:
// kill(getpid(), SIGUSR1) ignored, with the sender's identity and cgroup
// and the target's comm and exec id.
func stormRecord(ktime uint64, pid uint32, cgid uint64) []byte {
	b := partiesRecord(vocab.TypeSignal, 7, int32(pid), 10, vocab.SIUser, pid, "storm", 0, 1, xfCode|xfResult|xfTarget, 0)
	le := binary.LittleEndian
	le.PutUint64(b[offKtime:], ktime)
	le.PutUint32(b[offPID:], pid)
	le.PutUint32(b[offUID:], 0)
	le.PutUint32(b[offAUID:], vocab.UnsetID)
	copy(b[offComm:offComm+commLen], "storm\x00")
	le.PutUint32(b[offHdrPPID:], 811)
	le.PutUint64(b[offCgid:], cgid)
	return b
}

// BenchmarkRecordToQueue is the eBPF backend's user-space path for one
// event, from a ring buffer record's bytes to its JSON line in the output
// queue: split a CPU's batch, decode, filter, encode, queue (the writer
// writes to io.Discard on another goroutine). Each op is a ring record of
// 32 events: storm is a kill loop as the kernel sends it, one record with
// a repeat count of 31; equal is 32 equal records (a storm from two CPUs
// interleaves its records); varied gives every record another sender.
func BenchmarkRecordToQueue(b *testing.B) {
	const perBatch = 32
	const cgid = 7777
	for _, name := range []string{"storm", "equal", "varied"} {
		b.Run(name, func(b *testing.B) {
			var batch []byte
			var mono uint64
			for i := range perBatch {
				pid := uint32(4242)
				if name == "varied" {
					pid += uint32(i)
				}
				batch = append(batch, stormRecord(mono, pid, cgid)...)
			}
			if name == "storm" {
				batch = batch[:eventSize]
				binary.LittleEndian.PutUint32(batch[offRepeat:], perBatch-1)
			}
			be := New()
			d := newDecoder()
			d.exes = newExeCache(exeCacheMax, readProcExe) // as Backend.newDecoder
			d.cgroups = &cgroupNames{fd: -1, cache: map[uint64]cgroupEntry{
				cgid: {info: tracer.NewCgroupInfo("/user.slice/user-0.slice/session-3.scope"), ok: true}}}
			cfg := tracer.DefaultConfig()
			cfg.Types = allTypes()
			s := sink.NewJSONSink(io.Discard, sink.OutputOptions{Backpressure: tracer.BackpressureBlock})
			p := tracer.NewPipeline(cfg, s)
			ev := new(tracer.Event)
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				// The kernel stamps records once per tick: time moves on
				// as it does (the decoder syncs with the wall clock once
				// a second), not once per batch.
				if n%(1024*perBatch) == 0 {
					mono = monoNow()
					for i := 0; i < len(batch); i += eventSize {
						binary.LittleEndian.PutUint64(batch[i+offKtime:], mono)
					}
				}
				be.deliverBatch(d, batch, ev, p.Emit)
				n += perBatch
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/event")
			if err := p.Close(); err != nil {
				b.Fatal(err)
			}
			if st := p.Stats(be); st.TotalLost() != 0 || p.TotalEmitted() != uint64(n) {
				b.Fatalf("%d events emitted of %d, %d lost", p.TotalEmitted(), n, st.TotalLost())
			}
		})
	}
}

// floorSignal loads the empty signal_generate program of bpf/floor.bpf.c
// (bench's mode ebpf-floor).
func floorSignal(b *testing.B) *ebpf.Program {
	b.Helper()
	spec, err := bpf.LoadFloor()
	if err != nil {
		b.Fatal(err)
	}
	prog, err := ebpf.NewProgram(spec.Programs["floor_signal"])
	if err != nil {
		b.Fatal(err)
	}
	return prog
}

// BenchmarkSignalFloor measures the signal path of the sched probe set
// against the empty program on the same hook (bench's ebpf-floor): each
// round times the kill loop with the floor program attached, then traced
// (every event delivered to a no-op emit), and reports the median ratio
// traced/floor, and the program's own run time per signal from a last
// round with the kernel's BPF statistics on (which cost a clock read or
// two of their own). x-floor-json is the same with the events written as
// JSON lines to a file: what the output's work on the other CPU adds.
func BenchmarkSignalFloor(b *testing.B) {
	tracertest.NeedRoot(b)
	bin := buildLoop(b)
	args := []string{"kill", "300000"}
	floor := floorSignal(b)
	defer floor.Close()
	timeFloor := func() time.Duration {
		l, err := link.AttachTracing(link.TracingOptions{Program: floor})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		el, _ := timed(b, bin, args...)
		return el
	}
	// traced times the loop traced, every event delivered to a no-op, or
	// with json as JSON lines to a file (as watch -o FILE --format json).
	traced := func(stats, json bool) (time.Duration, tracer.Stats) {
		be := New()
		cfg := tracer.DefaultConfig()
		cfg.Types, cfg.BPFStats = vocab.TypeSet(0).With(vocab.TypeSignal), stats
		if err := be.Start(cfg); err != nil {
			b.Fatal(err)
		}
		emit := func(*tracer.Event) {}
		var p *tracer.Pipeline
		if json {
			f, err := os.Create(filepath.Join(b.TempDir(), "events.jsonl"))
			if err != nil {
				b.Fatal(err)
			}
			p = tracer.NewPipeline(cfg, sink.NewJSONSink(f, sink.OutputOptions{Backpressure: tracer.BackpressureBlock}))
			emit = p.Emit
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- be.Run(ctx, emit) }()
		el, _ := timed(b, bin, args...)
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		if p != nil {
			if err := p.Close(); err != nil {
				b.Fatal(err)
			}
		}
		st := be.Stats()
		_ = be.Close()
		return el, st
	}
	var ratio, ratioJSON []float64
	var lost uint64
	for b.Loop() {
		fl := timeFloor()
		el, st := traced(false, false)
		ratio = append(ratio, float64(el)/float64(fl))
		lost += st.TotalLost()
		el, st = traced(false, true)
		ratioJSON = append(ratioJSON, float64(el)/float64(fl))
		lost += st.TotalLost()
	}
	// The floor's run time with statistics on is what they cost.
	if stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME)); err == nil {
		timeFloor()
		if ps, err := floor.Stats(); err == nil && ps.RunCount > 0 {
			b.ReportMetric(float64(ps.Runtime.Nanoseconds())/float64(ps.RunCount), "ns-floor/signal")
		}
		stats.Close()
	}
	_, st := traced(true, false)
	for _, p := range st.Programs {
		if p.Name == "sched_signal" && p.RunCount > 0 {
			b.ReportMetric(p.RunTime*1e9/float64(p.RunCount), "ns-prog/signal")
		}
	}
	b.ReportMetric(median(ratio), "x-floor")
	b.ReportMetric(median(ratioJSON), "x-floor-json")
	b.ReportMetric(float64(lost), "lost")
}
