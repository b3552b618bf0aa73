// SPDX-License-Identifier: Apache-2.0

//go:build linux

package tracer_test

import (
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/audit"
	"github.com/tracer-dev/tracer/tracer/bpfbackend"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// The same workload under audit and under ebpf: both backends must see the
// same multiset of (type, comm, filename / syscall / signal). On a
// difference the failure lists what each side saw alone.
func TestBackendsSeeTheSame(t *testing.T) {
	tracertest.LockAudit(t)
	bin := tracertest.BuildWorkload(t)
	args := []string{"exec", "4", "/bin/true", "execfail", "2", "fork", "3", "vfork", "3", "clone", "3", "clone3", "3",
		"doublefork", "2", "kill", "5", "10", "tkill", "4", "10", "tgkill", "3", "10", "kill", "2", "12", "exit", "9"}
	cfg := tracer.DefaultConfig()
	cfg.Types, _ = vocab.ParseTypes("all")
	cfg.Signals, _ = vocab.ParseSignals("USR1")

	// By default both backends report the same stream: successful execs
	// only, whichever eBPF probe set. With --exec-failures audit and the
	// eBPF syscall tracepoints (which the flag selects) report the failed
	// attempts too, and agree again.
	seen := map[string]map[string]int{}
	runs := []struct {
		name     string
		b        tracer.Backend
		probes   string
		failures bool
	}{
		{"audit", audit.New(), "", false}, {"ebpf", bpfbackend.New(), "", false},
		{"ebpf-syscalls", bpfbackend.New(), "syscalls", false},
		{"audit-failures", audit.New(), "", true}, {"ebpf-failures", bpfbackend.New(), "", true},
	}
	for _, r := range runs {
		b := r.b
		cfg.Probes, cfg.ExecFailures = r.probes, r.failures
		events, _ := tracertest.RunWorkload(t, b, cfg, bin, args...)
		if err := b.Close(); err != nil {
			t.Fatalf("%s Close: %v", b.Name(), err)
		}
		f := tracer.NewFilter(cfg)
		m := map[string]int{}
		for i := range events {
			if f.Match(&events[i]) {
				m[tracertest.Key(events[i])]++
			}
		}
		if st := b.Stats(); st.TotalLost() != 0 {
			t.Errorf("%s lost %v", b.Name(), st.Lost)
		}
		seen[r.name] = m
	}
	compare(t, seen["audit"], seen["ebpf"], "ebpf (default probes)")
	compare(t, seen["audit"], seen["ebpf-syscalls"], "ebpf --probes syscalls")
	compare(t, seen["audit-failures"], seen["ebpf-failures"], "ebpf --exec-failures")
	if a := seen["audit"]; a["exec workload /bin/true"] != 4+3+2 || a["signal workload kill SIGUSR1"] != 5 || a["exec workload /nonexistent/tracer-enoent failed"] != 0 {
		t.Errorf("audit counts off: %v", a)
	}
	if a := seen["audit-failures"]; a["exec workload /nonexistent/tracer-enoent failed"] != 2 {
		t.Errorf("audit --exec-failures counts off: %v", a)
	}
}

// compare fails t with what each side saw alone.
func compare(t *testing.T, a, e map[string]int, name string) {
	t.Helper()
	var onlyAudit, onlyEBPF []string
	for k, n := range a {
		if d := n - e[k]; d > 0 {
			onlyAudit = append(onlyAudit, k+" x"+itoa(d))
		}
	}
	for k, n := range e {
		if d := n - a[k]; d > 0 {
			onlyEBPF = append(onlyEBPF, k+" x"+itoa(d))
		}
	}
	sort.Strings(onlyAudit)
	sort.Strings(onlyEBPF)
	if len(onlyAudit)+len(onlyEBPF) > 0 {
		t.Errorf("audit and %s differ\n audit alone:\n  %s\n ebpf alone:\n  %s",
			name, strings.Join(onlyAudit, "\n  "), strings.Join(onlyEBPF, "\n  "))
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
