// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// bpftraceProgram is the bpftrace program an operator would write to count
// a pod's execs and forks, on syscall tracepoints, filtered on the
// workload's cgroup ($1) as one filters on a pod's. Its clone probe is
// sys_enter_clone rather than kprobe:__x64_sys_clone (some kernels have no
// kprobes), and to watch the same
// events as the other modes it also counts execveat, clone3 and the signal
// syscalls. Thread creations (clone or clone3 with CLONE_THREAD) are counted
// apart: they are not process events. The BEGIN line tells bench it is attached.
const bpftraceProgram = `BEGIN { printf("tracer-bench: watching\n"); }

tracepoint:syscalls:sys_enter_execve /cgroup == $1/ {
    @exec_calls[comm, str(args->filename)] = count();
}

tracepoint:syscalls:sys_enter_execve /cgroup == $1/ {
    @total_exec_calls[comm] = count();
}

tracepoint:syscalls:sys_enter_execveat /cgroup == $1/ {
    @total_exec_calls[comm] = count();
}

tracepoint:syscalls:sys_enter_fork /cgroup == $1/ {
    @fork_calls[comm] = count();
}

tracepoint:syscalls:sys_enter_vfork /cgroup == $1/ {
    @vfork_calls[comm] = count();
}

tracepoint:syscalls:sys_enter_clone /cgroup == $1 && !(args->clone_flags & 0x10000)/ {
    @clone_calls[comm] = count();
}

tracepoint:syscalls:sys_enter_clone /cgroup == $1 && (args->clone_flags & 0x10000)/ {
    @thread_clones[comm] = count();
}

tracepoint:syscalls:sys_enter_clone3 /cgroup == $1 && !(*(uint64 *)uptr(args->uargs) & 0x10000)/ {
    @clone3_calls[comm] = count();
}

tracepoint:syscalls:sys_enter_clone3 /cgroup == $1 && (*(uint64 *)uptr(args->uargs) & 0x10000)/ {
    @thread_clones[comm] = count();
}

tracepoint:syscalls:sys_enter_kill,
tracepoint:syscalls:sys_enter_tkill,
tracepoint:syscalls:sys_enter_tgkill,
tracepoint:syscalls:sys_enter_rt_sigqueueinfo,
tracepoint:syscalls:sys_enter_rt_tgsigqueueinfo,
tracepoint:syscalls:sys_enter_pidfd_send_signal /cgroup == $1/ {
    @signal_calls[comm] = count();
}
`

// bpftraceEventMaps are the maps whose counts are events of the workload.
var bpftraceEventMaps = map[string]bool{
	"total_exec_calls": true, "fork_calls": true, "vfork_calls": true,
	"clone_calls": true, "clone3_calls": true, "signal_calls": true,
}

// bpftraceMode runs that bpftrace program. Counting happens in the
// kernel's maps: no event stream, nothing to lose.
type bpftraceMode struct {
	bpftrace  string
	hasCgroup bool

	w   *watcher
	cpu cpuMeter
}

func init() {
	registerMode(modeSpec{name: "bpftrace", rank: 70, inDefault: true, inQuick: true, peer: true,
		counterpart: "ebpf", color: "#3c9d5d",
		watches: "a bpftrace program counting the same events into maps (@exec_calls, @fork_calls, @signals) on syscall tracepoints, " +
			"filtered on the workload's cgroup as such programs filter on a pod's",
		countedFrom: "the program's count maps",
		needs: needs{root: true, tools: []tool{{names: []string{"bpftrace"}, deb: "bpftrace",
			install: "apt-get install bpftrace (Debian, Ubuntu) or dnf install bpftrace (RHEL)"}}},
		make: func(env modeEnv) (Mode, error) { return &bpftraceMode{hasCgroup: env.hasCgroup}, nil }})
}

func (m *bpftraceMode) Name() string    { return "bpftrace" }
func (m *bpftraceMode) WritesLog() bool { return false }

func (m *bpftraceMode) Setup(context.Context) error {
	paths, err := findTools("bpftrace")
	if err != nil {
		return err
	}
	m.bpftrace = paths["bpftrace"]
	if !m.hasCgroup {
		return Skipf("the bpftrace program filters on the workload's cgroup: this node has no cgroup v2 hierarchy")
	}
	return nil
}

func (m *bpftraceMode) Start(ctx context.Context, run *Run) error {
	if run.Own == nil {
		return fmt.Errorf("no workload cgroup to filter on")
	}
	prog := filepath.Join(run.Dir, "count.bt")
	if err := os.WriteFile(prog, []byte(bpftraceProgram), 0o644); err != nil {
		return fmt.Errorf("writing bpftrace program: %w", err)
	}
	args := []string{"-B", "line", prog, strconv.FormatUint(run.Own.ID, 10)}
	// bpftrace needs tracefs. It runs in a mount namespace of its own and
	// mounts tracefs there when the node has not: nothing changes on the
	// node, nothing is left mounted whatever happens to bench, and nobody
	// unmounting tracefs on the node pulls it from under bpftrace.
	cmd := exec.Command("/bin/sh", append([]string{"-c",
		`[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs nodev /sys/kernel/tracing || exit 1; exec "$0" "$@"`,
		m.bpftrace}, args...)...)
	// Go makes / private in the new namespace, so the mount stays in it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	w, err := startWatcher(ctx, "bpftrace", cmd, true, "tracer-bench: watching", 2*time.Minute)
	if err != nil {
		return err
	}
	m.w = w
	m.cpu = startCPU(w.pid())
	return nil
}

func (m *bpftraceMode) Stop(ctx context.Context, run *Run) (Observation, error) {
	obs := Observation{Seen: -1}
	if m.w == nil {
		return obs, fmt.Errorf("not started")
	}
	w := m.w
	m.w = nil
	// SIGINT: bpftrace prints its maps and detaches.
	total, err := w.stop(syscall.SIGINT, time.Minute)
	if m.cpu.ok {
		obs.TracerCPU = max(total-m.cpu.start, 0)
	}
	if err != nil {
		return obs, err
	}
	maps := parseBpftraceMaps(w.Lines())
	obs.Seen = 0
	for name, n := range maps {
		if bpftraceEventMaps[name] {
			obs.Seen += n
		}
	}
	if w := run.Workload; w.Known && obs.Seen != w.Expected.Total() {
		obs.Note = fmt.Sprintf("saw exec %d, fork %d, signal %d, expected %s (bpftrace counts calls at entry, restarted clones too)", maps["total_exec_calls"],
			maps["fork_calls"]+maps["vfork_calls"]+maps["clone_calls"]+maps["clone3_calls"], maps["signal_calls"], w.Expected)
	}
	return obs, nil
}

// parseBpftraceMaps sums each map bpftrace printed at exit: lines like
// "@fork_calls[sh]: 1760" or "@total: 3".
func parseBpftraceMaps(lines []string) map[string]int64 {
	out := map[string]int64{}
	for _, l := range lines {
		if !strings.HasPrefix(l, "@") {
			continue
		}
		i := strings.LastIndex(l, ": ")
		if i < 0 {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(l[i+2:]), 10, 64)
		if err != nil {
			continue
		}
		name := l[1:i]
		if j := strings.IndexByte(name, '['); j >= 0 {
			name = name[:j]
		}
		out[name] += n
	}
	return out
}

func (m *bpftraceMode) Teardown() error {
	if m.w != nil {
		_, err := m.w.stop(syscall.SIGINT, time.Minute)
		m.w = nil
		return err
	}
	return nil
}
