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

SEC("tp_btf/sched_process_exec")
int floor_exec(__u64 *ctx)
{
	return 0;
}

/* Linux 6.10+; older kernels get floor_task_rename, as the backend does. */
SEC("tp_btf/sched_prepare_exec")
int floor_prepare_exec(__u64 *ctx)
{
	return 0;
}

SEC("tp_btf/task_rename")
int floor_task_rename(__u64 *ctx)
{
	return 0;
}

SEC("tp_btf/sched_process_fork")
int floor_fork(__u64 *ctx)
{
	return 0;
}

SEC("tp_btf/signal_generate")
int floor_signal(__u64 *ctx)
{
	return 0;
}

/* The backend flushes its per-CPU signal batch when a task leaves a CPU. */
SEC("tp_btf/sched_switch")
int floor_switch(__u64 *ctx)
{
	return 0;
}
