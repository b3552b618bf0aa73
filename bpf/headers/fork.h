/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/*
 * Fork records: the caller, and the child's pid as the caller sees it.
 */
#ifndef TRACER_FORK_H
#define TRACER_FORK_H

#include "output.h"
#include "filter.h"
#include "ratelimit.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct comm_key);
	__type(value, __u64);
} fork_counts SEC(".maps");

/*
 * The bodies of fork, signal and exit records. task is the current task in
 * programs on BTF tracepoints, read with direct loads; NULL elsewhere.
 */
static __always_inline int on_fork(void *ctx, __u8 sc, long ret, struct task_struct___ident *task)
{
	union comm comm;
	__u32 tgid;
	if (ret <= 0)
		return 0;
	if (!pass_current(task, &tgid, &comm))
		return 0;
	if (cfg_count_only) {
		count_key(&fork_counts, comm.c);
		total_inc(EV_FORK);
		return 0;
	}
	__u64 now = now_ns();
	if (cfg_rate_limit && !rate_pass(ctx, task, tgid, comm.c, EV_FORK, now))
		return 0;
	struct event *ev = ev_reserve(now);
	if (!ev) {
		lost_inc(LOST_OUTPUT);
		return 0;
	}
	fill_hdr(&ev->h, EV_FORK, sc, tgid, comm.c, now, task);
	ev->a = (__s32)ret;
	ev->b = 0;
	ev->ret = 0;
	fill_tail(ev, NULL);
	ev_submit(ctx, ev, now);
	return 0;
}

/* The pid the caller sees for child: the child's number at the caller's pid namespace level. */
static __always_inline __s32 child_vpid(struct task_struct *child)
{
	struct task_struct *cur = (struct task_struct *)bpf_get_current_task();
	unsigned int level = BPF_CORE_READ(cur, thread_pid, level);
	if (level == 0)
		return BPF_CORE_READ(child, pid);
	if (level > 31)
		return 0;
	struct pid *pid = BPF_CORE_READ(child, thread_pid);
	int nr = 0;
	bpf_probe_read_kernel(&nr, sizeof(nr),
			      (void *)pid + bpf_core_field_offset(struct pid, numbers) +
				      level * bpf_core_type_size(struct upid) + bpf_core_field_offset(struct upid, nr));
	return nr;
}

#endif /* TRACER_FORK_H */
