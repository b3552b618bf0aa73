// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfbackend

import (
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// --uid, --comm (several), --exe and --auid-set run in the kernel: runScoped
// applies no user-space filter, so what it returns is what the ring
// carried, and what the kernel left out is counted by reason, exactly:
// every event of the workload's tree is either delivered or counted.
func TestSelectionFiltersInKernel(t *testing.T) {
	tracertest.NeedRoot(t)
	bin := tracertest.BuildWorkload(t)
	total := func(want map[string]int) int {
		n := 0
		for _, v := range want {
			n += v
		}
		return n
	}
	// only keeps the keys whose comm (the second word) is comm.
	only := func(want map[string]int, comm string) map[string]int {
		out := map[string]int{}
		for k, v := range want {
			if strings.Fields(k)[1] == comm {
				out[k] = v
			}
		}
		return out
	}
	forks := func(want map[string]int) map[string]int {
		out := map[string]int{}
		for k, v := range want {
			if strings.HasPrefix(k, "fork ") {
				out[k] = v
			}
		}
		return out
	}
	with := func(m map[string]int, k string, v int) map[string]int {
		m[k] = v
		return m
	}
	execFork := vocab.TypeSet(0).With(vocab.TypeExec).With(vocab.TypeFork)
	unsetAUID := loginUID(t) == vocab.UnsetID
	for _, set := range []string{ProbesSched, ProbesSyscalls} {
		// The syscalls set filters an exec at its entry, failed or not:
		// with --exec-failures every exec the kernel saw is an event.
		failed := set == ProbesSyscalls
		all := wantKeys(bin, failed)
		for _, c := range []struct {
			name     string
			set      func(*tracer.Config)
			want     map[string]int
			reason   vocab.FilterReason
			filtered int
		}{
			{"uid of no process", func(c *tracer.Config) { c.UIDs = []uint32{4242} },
				map[string]int{}, vocab.FilteredUID, total(all)},
			{"uids of the workload", func(c *tracer.Config) { c.UIDs = []uint32{4242, 0} },
				all, vocab.FilteredUID, 0},
			{"two comms", func(c *tracer.Config) { c.Comms = []string{"nosuchcomm", "workload"} },
				only(all, "workload"), vocab.FilteredComm, total(all) - total(only(all, "workload"))},
			{"one comm", func(c *tracer.Config) { c.Comms = []string{"workload"} },
				only(all, "workload"), vocab.FilteredComm, total(all) - total(only(all, "workload"))},
			// With the forks, which --exe leaves alone in the kernel, that
			// runScoped follows the tree with.
			{"exe by path", func(c *tracer.Config) { c.Exe, c.Types = "/bin/true", execFork },
				with(forks(all), "exec workload /bin/true", 3*n), vocab.FilteredExe, 1 + map[bool]int{true: 1}[failed]},
			{"exe by name", func(c *tracer.Config) { c.Exe, c.Types = "workload", execFork },
				with(forks(all), "exec sh "+bin, 1), vocab.FilteredExe, 3*n + map[bool]int{true: 1}[failed]},
			{"auid set", func(c *tracer.Config) { c.AuidSet = true },
				map[bool]map[string]int{true: {}, false: all}[unsetAUID], vocab.FilteredAuidUnset,
				map[bool]int{true: total(all), false: 0}[unsetAUID]},
		} {
			t.Run(set+"/"+c.name, func(t *testing.T) {
				cfg := tracer.DefaultConfig()
				cfg.Types, cfg.Signals, cfg.Probes, cfg.ExecFailures = allTypes(), usr1(), set, failed
				c.set(&cfg)
				b := New()
				evs, _ := runScoped(t, b, cfg, bin, workloadArgs()...)
				diffKeys(t, keys(evs), c.want)
				st := b.Stats()
				if got := st.TotalEvents(); got != uint64(total(c.want)) {
					t.Errorf("the ring carried %d records, want %d", got, total(c.want))
				}
				if got := st.Filtered[c.reason]; got != uint64(c.filtered) {
					t.Errorf("filtered %s: %d, want %d (%s)", c.reason, got, c.filtered, st.SelectionSummary())
				}
				if got, want := st.TotalFiltered()-st.TotalNoise(), st.Filtered[c.reason]; got != want {
					t.Errorf("filtered for other reasons: %s", st.SelectionSummary())
				}
			})
		}
	}
}
