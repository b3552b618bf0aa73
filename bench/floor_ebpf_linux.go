// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"context"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"

	"github.com/tracer-dev/tracer/bpf"
)

// ebpfFloorMode attaches programs that do nothing (bpf/floor.bpf.c) to the
// hooks the ebpf backend uses by default for exec, fork and signal events:
// the BTF tracepoints sched_process_exec, sched_prepare_exec (task_rename
// before Linux 6.10), sched_process_fork and signal_generate. What a
// workload pays then is what running any program there costs; the ebpf
// mode's distance to it is the backend's own work. The programs are loaded
// once and attached around each run, by bench itself: nothing is pinned,
// so nothing outlives bench, however it ends.
type ebpfFloorMode struct {
	coll  *ebpf.Collection
	links []link.Link
}

func init() {
	registerMode(modeSpec{name: "ebpf-floor", rank: 40, inDefault: true, inQuick: true, color: "#9fc2e4",
		watches:     "empty BPF programs (`bpf/floor.bpf.c`) on the hooks the eBPF backend uses: the cost of attaching there at all",
		countedFrom: "--", needs: needs{root: true},
		make: func(modeEnv) (Mode, error) { return &ebpfFloorMode{}, nil }})
}

func (m *ebpfFloorMode) Name() string    { return "ebpf-floor" }
func (m *ebpfFloorMode) WritesLog() bool { return false }

func (m *ebpfFloorMode) Setup(context.Context) error {
	kernel, err := btf.LoadKernelSpec()
	if err != nil {
		return Skipf("this kernel has no BTF (%v): the ebpf mode uses other probes here, which have no floor mode", err)
	}
	has := func(tp string) bool {
		var td *btf.Typedef
		return kernel.TypeByName("btf_trace_"+tp, &td) == nil
	}
	progs := []string{"floor_exec", "floor_fork", "floor_signal", "floor_switch"}
	for _, tp := range []string{"sched_process_exec", "sched_process_fork", "signal_generate", "sched_switch"} {
		if !has(tp) {
			return Skipf("this kernel has no BTF tracepoint %s: the ebpf mode uses other probes here, which have no floor mode", tp)
		}
	}
	// As the backend: the comm stash before the exec, on whichever hook the kernel has.
	if has("sched_prepare_exec") {
		progs = append(progs, "floor_prepare_exec")
	} else {
		progs = append(progs, "floor_task_rename")
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return fmt.Errorf("removing the memlock limit for BPF: %w", err)
	}
	obj, err := bpf.LoadFloor()
	if err != nil {
		return fmt.Errorf("loading the floor's BPF object: %w", err)
	}
	keep := map[string]*ebpf.ProgramSpec{}
	for _, p := range progs {
		keep[p] = obj.Programs[p]
	}
	obj.Programs = keep
	m.coll, err = ebpf.NewCollectionWithOptions(obj, ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{KernelTypes: kernel}})
	if err != nil {
		return fmt.Errorf("loading the floor's BPF programs: %w", err)
	}
	return nil
}

func (m *ebpfFloorMode) Start(context.Context, *Run) error {
	for name, p := range m.coll.Programs {
		l, err := link.AttachTracing(link.TracingOptions{Program: p})
		if err != nil {
			_ = m.detach() // the attach error is the one to report
			return fmt.Errorf("attaching %s: %w", name, err)
		}
		m.links = append(m.links, l)
	}
	return nil
}

func (m *ebpfFloorMode) detach() error {
	var errs []error
	for _, l := range m.links {
		errs = append(errs, l.Close())
	}
	m.links = nil
	return errors.Join(errs...)
}

func (m *ebpfFloorMode) Stop(context.Context, *Run) (Observation, error) {
	obs := Observation{Seen: -1, Note: fmt.Sprintf("%d empty programs", len(m.links))}
	return obs, m.detach()
}

func (m *ebpfFloorMode) Teardown() error {
	err := m.detach()
	if m.coll != nil {
		m.coll.Close()
		m.coll = nil
	}
	return err
}
