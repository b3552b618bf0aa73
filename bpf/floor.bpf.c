//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR MIT)
/*
 * The eBPF floor of `tracer bench` (mode ebpf-floor): programs that do
 * nothing, on the hooks the ebpf backend attaches by default for exec, fork
 * and signal events (tracer.bpf.c, the sched probe set). What a workload
 * pays with these attached is what the kernel charges for running any
 * program there; what the ebpf mode pays above it is the tracer's own
 * work (reading the task, filling and submitting records).
 */
#include "headers/kernel.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* A program that does nothing, on the BTF tracepoint tp. */
#define FLOOR(name, tp)              \
	SEC("tp_btf/" #tp)           \
	int floor_##name(__u64 *ctx) \
	{                            \
		return 0;            \
	}

FLOOR(exec, sched_process_exec)
/* Linux 6.10+; older kernels get floor_task_rename, as the backend does. */
FLOOR(prepare_exec, sched_prepare_exec)
FLOOR(task_rename, task_rename)
FLOOR(fork, sched_process_fork)
FLOOR(signal, signal_generate)
/* The backend flushes its per-CPU signal batch when a task leaves a CPU. */
FLOOR(switch, sched_switch)
