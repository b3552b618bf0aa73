/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/*
 * Exit records: exit and exit_group calls, and deaths by a signal with
 * who sent the killing signal (killers, filled by signal.h's note_killer)
 * and the OOM killer's choice.
 */
#ifndef TRACER_EXIT_H
#define TRACER_EXIT_H

#include "output.h"
#include "filter.h"
#include "ratelimit.h"

/* The last fatal signal sent to a process that will die of it, keyed by
 * its tgid, until its exit record takes it (see note_killer). */
struct killer {
	__u64 tstart; /* the target's start_boottime: the entry is for this process only */
	__u64 start;  /* the sender's */
	__u32 pid;    /* the sender's tgid (0: the kernel) */
	__s32 code;
	__u8 sig;
	__u8 syscall;
	__u8 kernel;
	__u8 _pad[5];
	char comm[COMM_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, struct killer);
} killers SEC(".maps");

/* Processes the OOM killer chose: tgid -> start_boottime. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} oom_victims SEC(".maps");

static __always_inline int on_exit(void *ctx, __u8 sc, __s32 code, bool compat, struct task_struct___ident *task)
{
	union comm comm;
	__u32 tgid;
	if (!pass_current(task, &tgid, &comm))
		return 0;
	if (cfg_count_only) {
		total_inc(EV_EXIT);
		return 0;
	}
	__u64 now = now_ns();
	if (cfg_rate_limit && !rate_pass(ctx, task, tgid, comm.c, EV_EXIT, now))
		return 0;
	struct event *ev = ev_reserve(now);
	if (!ev) {
		lost_inc(LOST_OUTPUT);
		return 0;
	}
	fill_hdr(&ev->h, EV_EXIT, sc, tgid, comm.c, now, task);
	ev->h.flags = compat ? EVF_COMPAT : 0;
	ev->a = code;
	ev->b = 0;
	ev->ret = 0;
	fill_tail(ev, NULL);
	ev_submit(ctx, ev, now);
	return 0;
}

/*
 * The death of a process by a signal: its last thread exits and the
 * group's wait status holds a signal. No syscall makes it, so it is
 * reported here, with the sender of the killing signal (note_killer) and
 * the OOM killer's mark (oom_victim). Returns whether it was one.
 */
static __always_inline bool killed_exit(void *ctx, struct task_struct___ident *task, bool raw)
{
	struct signal_struct___ident *sig = KR(raw, task, signal);
	if (KR(raw, sig, live.counter) != 0)
		return false; /* not the last thread */
	__u32 status = (KR(raw, sig, flags) & SIGNAL_GROUP_EXIT) ? KR(raw, sig, group_exit_code) : KR(raw, task, exit_code);
	__u32 signo = status & 0x7f;
	if (signo == 0 || signo == 0x7f)
		return false; /* an exit call, reported at its syscall */
	__u32 tgid = KR(raw, task, tgid);
	__u64 start = KR(raw, task, group_leader, start_boottime);
	struct killer *k = bpf_map_lookup_elem(&killers, &tgid);
	__u64 *oom = bpf_map_lookup_elem(&oom_victims, &tgid);
	union comm comm;
	/* The exiting task is the current one: without a BTF task, the
	 * filters and the header read it through the helpers. */
	struct task_struct___ident *cur = raw ? NULL : task;
	if (cfg_count_only || !pass_current(cur, &tgid, &comm))
		goto out;
	__u64 now = now_ns();
	if (cfg_rate_limit && !rate_pass(ctx, cur, tgid, comm.c, EV_EXIT, now))
		goto out;
	struct event *ev = ev_reserve(now);
	if (!ev) {
		lost_inc(LOST_OUTPUT);
		goto out;
	}
	fill_hdr(&ev->h, EV_EXIT, SC_NONE, tgid, comm.c, now, cur);
	ev->a = 0;
	ev->b = signo;
	ev->ret = 0;
	fill_tail(ev, NULL);
	ev->status = status;
	ev->xflags = XF_KILLED;
	if (k && k->tstart == start && k->sig == signo) {
		ev->xflags |= XF_KILLER | XF_CODE | (k->kernel ? XF_KERNEL : 0);
		ev->code = k->code;
		ev->xpid = k->pid;
		ev->xstart = k->start;
		__builtin_memcpy(ev->xcomm, k->comm, COMM_LEN);
		ev->xsyscall = k->syscall;
	}
	if (oom && *oom == start)
		ev->xflags |= XF_OOM;
	ev_submit(ctx, ev, now);
out:
	if (k)
		bpf_map_delete_elem(&killers, &tgid);
	if (oom)
		bpf_map_delete_elem(&oom_victims, &tgid);
	return true;
}

#endif /* TRACER_EXIT_H */
