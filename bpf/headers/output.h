/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/*
 * How a record leaves the kernel: reserved in the ring buffer (or per-CPU
 * scratch for a perf event array) after this CPU's batch went out, so that
 * the CPU's records keep their order.
 */
#ifndef TRACER_OUTPUT_H
#define TRACER_OUTPUT_H

#include "batch.h"
#include "identity.h"

/* Room for one fork, signal or exit record: in the ring buffer itself, or
 * per-CPU scratch for the perf event array. NULL: the ring is full. */
static __always_inline struct event *ev_reserve(__u64 now)
{
	if (cfg_perfbuf) {
		__u32 zero = 0;
		return bpf_map_lookup_elem(&ev_scratch, &zero);
	}
	batch_drain(now);
	return bpf_ringbuf_reserve(&events, sizeof(struct event), 0);
}

static __always_inline void ev_submit(void *ctx, struct event *ev, __u64 now)
{
	if (cfg_perfbuf) {
		if (bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, ev, sizeof(*ev)))
			lost_inc(LOST_OUTPUT);
		return;
	}
	bpf_ringbuf_submit(ev, wake_flags(now));
	wake_parked();
}

static __always_inline void output(void *ctx, void *data, __u64 size, __u64 now)
{
	long err;
	batch_drain(now);
	if (cfg_perfbuf)
		err = bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, data, size);
	else
		err = bpf_ringbuf_output(&events, data, size, wake_flags(now));
	if (err)
		lost_inc(LOST_OUTPUT);
	else if (!cfg_perfbuf)
		wake_parked();
}

/* What signal_generate says of a signal: the tail of its record. */
struct sig_info {
	__s32 code;
	__u32 tgid; /* the target's */
	__u64 start;
	char comm[COMM_LEN];
	__u8 result;
	__u8 flags; /* XF_* */
};

/* The target's part of a signal's tail. */
static __always_inline void sig_target(struct sig_info *si, struct task_struct___ident *target, bool raw)
{
	si->tgid = KR(raw, target, tgid);
	si->start = KR(raw, target, group_leader, start_boottime);
	if (raw)
		bpf_probe_read_kernel(si->comm, COMM_LEN, target->comm);
	else
		__builtin_memcpy(si->comm, target->comm, COMM_LEN);
}

/* Fills the tail of a record after ret: from si, or zeros. */
static __always_inline void fill_tail(struct event *ev, const struct sig_info *si)
{
	__builtin_memset(&ev->code, 0, sizeof(*ev) - __builtin_offsetof(struct event, code));
	if (!si)
		return;
	ev->code = si->code;
	ev->xpid = si->tgid;
	ev->xstart = si->start;
	__builtin_memcpy(ev->xcomm, si->comm, COMM_LEN);
	ev->result = si->result;
	ev->xflags = si->flags;
}

#endif /* TRACER_OUTPUT_H */
