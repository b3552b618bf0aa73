// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfbackend

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf/btf"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// combinations are the transports and attach kinds forced in turn: the
// fallbacks of older kernels, run on this one. Subtest names are
// TRANSPORT_ATTACH (e.g. -test.run 'TestFallbacks/perf_tracepoint').
var combinations = []struct{ transport, attach string }{
	{TransportRingbuf, AttachTpBTF},
	{TransportRingbuf, AttachTracepoint},
	{TransportPerf, AttachTpBTF},
	{TransportPerf, AttachTracepoint},
}

// Each forced combination gives the default path's events: the workload's
// exact events per syscall, the deaths' exact causes and senders, and a
// storm of 200,000 kills with every signal delivered and none lost.
func TestFallbacks(t *testing.T) {
	tracertest.LockAudit(t) // the storm floods audit tests that watch SIGUSR1
	work, deathsBin := tracertest.BuildWorkload(t), tracertest.BuildDeaths(t)
	procs := tracertest.MemoryCgroup(t, "tracer-test-oom-"+strconv.Itoa(os.Getpid()), 32<<20)
	for _, c := range combinations {
		t.Run(c.transport+"_"+c.attach, func(t *testing.T) {
			force := func(cfg *tracer.Config) { cfg.Transport, cfg.Attach = c.transport, c.attach }
			wantTransport := map[string]string{TransportRingbuf: "ringbuf", TransportPerf: "perfbuf"}[c.transport]
			// Forced classic tracepoints follow the tree and see who
			// killed it from raw tracepoints, as on a kernel without BTF.
			wantTrack, wantAttribution := AttachTpBTF, AttachTpBTF
			if c.attach == AttachTracepoint {
				wantTrack, wantAttribution = AttachRawTP, AttachRawTP
			}
			checkFeatures := func(t *testing.T, b *Backend) {
				t.Helper()
				if f := b.Features(); f.Transport != wantTransport || f.Attach != c.attach || f.Track != wantTrack || f.BTF != "kernel" || f.Attribution != wantAttribution {
					t.Errorf("features %+v, want transport %s attach %s track %s attribution %s btf kernel", f, wantTransport, c.attach, wantTrack, wantAttribution)
				}
			}

			t.Run("workload", func(t *testing.T) {
				b := New()
				cfg := tracer.DefaultConfig()
				cfg.Types, cfg.Signals = allTypes(), usr1()
				force(&cfg)
				start := time.Now()
				all, root := runScoped(t, b, cfg, work, workloadArgs()...)
				checkFeatures(t, b)
				diffKeys(t, keys(all), wantKeys(work, false))
				checkFields(t, all, root, start)
				if st := b.Stats(); st.TotalLost() != 0 || st.TotalEvents() != uint64(len(all)) {
					t.Errorf("stats: %d events, lost %v; delivered %d", st.TotalEvents(), st.Lost, len(all))
				}
			})

			t.Run("deaths", func(t *testing.T) {
				b := New()
				cfg := tracer.DefaultConfig()
				cfg.Types = allTypes()
				force(&cfg)
				events, deaths := runDeaths(t, b, cfg, deathsBin,
					"segv", "segvnocore", "kill9", "pipe", "timer", "oom", procs, "exit3", "orphan", "reuse")
				checkFeatures(t, b)
				main, ok := deaths.Proc("main", 0)
				if !ok {
					t.Fatalf("deaths printed no main line")
				}
				checkDeaths(t, events, deaths, main)
			})

			t.Run("storm", func(t *testing.T) {
				const kills = 200000
				cfg := tracer.DefaultConfig()
				cfg.Types = vocab.TypeSet(0).With(vocab.TypeSignal).With(vocab.TypeExit)
				// The perf buffer's records are not batched: 200,000 of them
				// take 37 MB, all on the sender's CPU. Room for the whole
				// storm there (64 MiB a CPU), so that what this counts is the
				// tracer's loss, not a reader the shared machine or a TCG
				// guest starved (seen: 6,900 and 11,752 lost with the default
				// 8 MiB); TestRingFullIsCounted covers a full buffer.
				cfg.RingBytes = 128 << 20
				force(&cfg)
				var usr1, usr2, exits int
				start := time.Now()
				b := traceHeld(t, cfg, func(e *tracer.Event) {
					switch {
					case e.Type == vocab.TypeExit:
						exits++
					case e.Signal == 10:
						usr1++
					case e.Signal == 12:
						usr2++
					}
				}, work, "kill", strconv.Itoa(kills), "10", "tkill", "1", "12", "exit", "7")
				checkFeatures(t, b)
				st := b.Stats()
				t.Logf("%d kills in %v: %d SIGUSR1, %d SIGUSR2, %d exits, lost %v", kills, time.Since(start).Round(time.Millisecond), usr1, usr2, exits, st.Lost)
				if usr1 != kills || usr2 != 1 || exits != 1 {
					t.Errorf("%d SIGUSR1, %d SIGUSR2, %d exits; want %d, 1, 1", usr1, usr2, exits, kills)
				}
				if st.TotalLost() != 0 {
					t.Errorf("lost %v", st.Lost)
				}
			})
		})
	}
}

// A forced choice is checked before anything loads: a bad value, or one
// that contradicts --probes, is a usage error.
func TestForcedChoiceErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  func(*tracer.Config)
	}{
		{"bad transport", func(cfg *tracer.Config) { cfg.Transport = "pipe" }},
		{"bad attach", func(cfg *tracer.Config) { cfg.Attach = "kprobe" }},
		{"tp_btf with syscalls probes", func(cfg *tracer.Config) { cfg.Attach, cfg.Probes = AttachTpBTF, ProbesSyscalls }},
		{"tracepoint with sched probes", func(cfg *tracer.Config) { cfg.Attach, cfg.Probes = AttachTracepoint, ProbesSched }},
		{"tp_btf with exec failures", func(cfg *tracer.Config) { cfg.Attach, cfg.ExecFailures = AttachTpBTF, true }},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := tracer.DefaultConfig()
			c.cfg(&cfg)
			err := normalize(&cfg)
			if !errors.Is(err, vocab.ErrUsage) {
				t.Fatalf("normalize: %v, want a usage error", err)
			}
			t.Log(err)
		})
	}
}

// Without the kernel's BTF and without --btf, Start says in one line to
// pass --btf FILE; a --btf file that is not BTF is a usage error too.
func TestBTFFile(t *testing.T) {
	tracertest.NeedRoot(t)
	bad := t.TempDir() + "/not-btf"
	if err := os.WriteFile(bad, []byte("not BTF"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := tracer.DefaultConfig()
	cfg.BTFFile = bad
	err := New().Start(cfg)
	if !errors.Is(err, vocab.ErrUsage) {
		t.Fatalf("Start with --btf %s: %v, want a usage error", bad, err)
	}
	t.Log(err)

	// The kernel's own BTF, given as a file: relocations from it, attach
	// targets from the kernel.
	cfg.BTFFile = "/sys/kernel/btf/vmlinux"
	cfg.Types = vocab.TypeSet(0).With(vocab.TypeExec)
	b := New()
	if err := b.Start(cfg); err != nil {
		t.Fatalf("Start with --btf %s: %v", cfg.BTFFile, err)
	}
	defer b.Close()
	if f := b.Features(); f.BTF != cfg.BTFFile {
		t.Errorf("features %+v, want BTF from %s", f, cfg.BTFFile)
	}
}

// A kernel without BTF of its own (RHEL 8.0, 8.1), as this one pretends:
// without --btf, one usage error saying to pass it; with --btf, the
// programs are relocated against the file and attach to the classic
// tracepoints (who killed it: raw tracepoints), and the workload's events
// and the deaths' causes and senders are exact.
func TestNoKernelBTF(t *testing.T) {
	tracertest.NeedRoot(t)
	own := loadKernelBTF
	t.Cleanup(func() { loadKernelBTF = own })
	loadKernelBTF = func() (*btf.Spec, error) { return nil, btf.ErrNotFound }

	cfg := tracer.DefaultConfig()
	err := New().Start(cfg)
	if !errors.Is(err, vocab.ErrUsage) || !strings.Contains(err.Error(), "pass --btf FILE") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Start without BTF: %v, want one usage line saying to pass --btf FILE", err)
	}
	t.Log(err)
	cfg.Attach = AttachTpBTF
	cfg.BTFFile = "/sys/kernel/btf/vmlinux"
	if err := New().Start(cfg); !errors.Is(err, vocab.ErrUsage) || !strings.Contains(err.Error(), "no BTF of its own") {
		t.Fatalf("Start --ebpf-attach tp_btf without the kernel's BTF: %v, want a usage error", err)
	}

	bin := tracertest.BuildWorkload(t)
	cfg = tracer.DefaultConfig()
	cfg.Types, cfg.Signals, cfg.BTFFile = allTypes(), usr1(), "/sys/kernel/btf/vmlinux"
	b := New()
	start := time.Now()
	all, root := runScoped(t, b, cfg, bin, workloadArgs()...)
	checkNoBTF := func(b *Backend) {
		t.Helper()
		if f := b.Features(); f.Attach != AttachTracepoint || f.Track != AttachRawTP || f.BTF != cfg.BTFFile || f.Attribution != AttachRawTP {
			t.Errorf("features %+v, want tracepoint, raw_tp, attribution raw_tp, BTF from %s", f, cfg.BTFFile)
		}
	}
	checkNoBTF(b)
	diffKeys(t, keys(all), wantKeys(bin, false))
	checkFields(t, all, root, start)
	if st := b.Stats(); st.TotalLost() != 0 {
		t.Errorf("lost %v", st.Lost)
	}

	// Who killed it, as the BTF tracepoints say it.
	deathsBin := tracertest.BuildDeaths(t)
	procs := tracertest.MemoryCgroup(t, "tracer-test-oom-"+strconv.Itoa(os.Getpid()), 32<<20)
	b = New()
	cfg.Signals = tracer.DefaultConfig().Signals
	events, deaths := runDeaths(t, b, cfg, deathsBin,
		"segv", "segvnocore", "kill9", "pipe", "timer", "oom", procs, "exit3", "orphan", "reuse")
	checkNoBTF(b)
	main, ok := deaths.Proc("main", 0)
	if !ok {
		t.Fatalf("deaths printed no main line")
	}
	checkDeaths(t, events, deaths, main)
	if st := b.Stats(); st.TotalLost() != 0 {
		t.Errorf("deaths: lost %v", st.Lost)
	}
}

// Without mmapable global data (before 5.5) the ring's reader shares no
// flag with the programs: it never parks, so an idle spell and then the
// workload still deliver every event, and Run ends when asked.
func TestNoMmapableGlobalData(t *testing.T) {
	tracertest.NeedRoot(t)
	own := haveMmapable
	t.Cleanup(func() { haveMmapable = own })
	haveMmapable = func() bool { return false }
	bin := tracertest.BuildWorkload(t)
	cfg := tracer.DefaultConfig()
	cfg.Types, cfg.Signals, cfg.Transport = allTypes(), usr1(), TransportRingbuf
	cfg.MaxDelay = 20 * time.Millisecond
	b := New()
	h := startHeld(t, bin, workloadArgs()...)
	cfg.PID = h.pid()
	var all []tracer.Event
	stop := startRun(t, b, cfg, func(e *tracer.Event) { all = append(all, *e) })
	if f := b.Features(); f.Transport != "ringbuf" || f.GlobalData != GlobalConstants {
		t.Errorf("features %+v, want ringbuf with constants", f)
	}
	time.Sleep(200 * time.Millisecond) // idle: a parked reader would wait for a wakeup
	start := time.Now()
	if code := h.run(t); code != 7 {
		t.Errorf("workload exit status %d, want 7", code)
	}
	stop()
	diffKeys(t, keys(all), wantKeys(bin, false))
	checkFields(t, all, cfg.PID, start.Add(-time.Second))
	if st := b.Stats(); st.TotalLost() != 0 {
		t.Errorf("lost %v", st.Lost)
	}
}
