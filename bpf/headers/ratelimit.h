/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/*
 * --rate-limit: events a second per source (a cgroup, or a process of the
 * root cgroup), counted when over and said in throttle records.
 */
#ifndef TRACER_RATELIMIT_H
#define TRACER_RATELIMIT_H

#include "output.h"
#include "identity.h"


/*
 * A source of events is a cgroup v2, or a process of the root cgroup (on a
 * node that uses cgroup v1 alone, every process). Its window is one second
 * of ktime; state packs the window and the events it passed so far, so
 * that one compare-and-swap moves either. Events over the limit are
 * counted here (dropped, and the throttled map) and never reach the ring;
 * the window's throttle record goes out at the source's next event in a
 * later window, or from rate_sweep, run by user space.
 */
struct rate_key {
	__u64 cgid; /* 0: the source is the process tgid */
	__u32 tgid;
	__u32 _pad;
};

struct rate {
	__u64 state;	  /* window (seconds of ktime) << 32 | events passed in it */
	__u64 dropped[4]; /* left out in the window: exec, fork, signal, exit */
	/* The first process the window left out (who_pid 0: none yet). */
	__u64 who_start;
	__u64 who_cgid;
	__u32 who_pid;
	__u32 who_uid;
	__u32 who_auid;
	__u32 _pad;
	char who_comm[COMM_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct rate_key);
	__type(value, struct rate);
} rates SEC(".maps");

/* Events left out by the limit, by type: Stats.Throttled. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EV_MAX);
	__type(key, __u32);
	__type(value, __u64);
} throttled SEC(".maps");

#define NS_PER_SEC 1000000000ULL

/* Sends the throttle record of window win of source k, ending at end,
 * taking r's counts (each count goes to exactly one record, whatever runs
 * at once). Nothing when the window left nothing out. */
static __always_inline void rate_report(void *ctx, const struct rate_key *k, struct rate *r, __u64 win, __u64 end,
					__u64 now)
{
	__u32 pid = __sync_lock_test_and_set(&r->who_pid, 0);
	__u64 d[4], sum = 0;
#pragma unroll
	for (int i = 0; i < 4; i++) {
		d[i] = __sync_lock_test_and_set(&r->dropped[i], 0);
		sum += d[i];
	}
	if (!sum)
		return;
	struct throttle_event *t = (struct throttle_event *)ev_reserve(now);
	if (!t) {
		lost_inc(LOST_OUTPUT);
		return;
	}
	struct event_hdr *h = &t->h;
	h->ktime = end;
	h->pid = pid;
	h->uid = r->who_uid;
	h->auid = r->who_auid;
	h->type = EV_THROTTLE;
	h->syscall = SC_NONE;
	h->flags = k->cgid ? 0 : EVF_THR_PROCESS;
	h->_pad = 0;
	__builtin_memcpy(h->comm, r->who_comm, COMM_LEN);
	h->start = r->who_start;
	h->pstart = 0;
	h->cgid = r->who_cgid;
	h->ppid = 0;
	h->repeat = 0;
	/* Not kept for the source: user space reads none of it (HasCreds). */
	__builtin_memset(&h->gid, 0, sizeof(*h) - __builtin_offsetof(struct event_hdr, gid));
	t->wstart = win * NS_PER_SEC;
	t->wend = end;
#pragma unroll
	for (int i = 0; i < 4; i++)
		t->dropped[i] = d[i];
	t->_pad = 0;
	ev_submit(ctx, (struct event *)t, now);
}

/* The first event a window leaves out names the source's process. */
static __always_inline void rate_who(struct rate *r, struct task_struct___ident *task, bool raw, __u32 tgid,
				     const char *comm, __u64 cgid)
{
	if (r->who_pid || __sync_val_compare_and_swap(&r->who_pid, 0, tgid) != 0)
		return;
	__builtin_memcpy(r->who_comm, comm, COMM_LEN);
	r->who_cgid = cgid;
	if (task && raw) {
		r->who_auid = bpf_core_field_exists(task->loginuid) ? BPF_CORE_READ(task, loginuid.val) : 0xffffffff;
		r->who_uid = BPF_CORE_READ(task, cred, uid.val);
		r->who_start = BPF_CORE_READ(task, group_leader, start_boottime);
		return;
	}
	r->who_auid = current_auid(task);
	if (task) {
		r->who_uid = task->cred->uid.val;
		r->who_start = task->group_leader->start_boottime;
	} else {
		struct task_struct___ident *t = (void *)bpf_get_current_task();
		r->who_uid = (__u32)bpf_get_current_uid_gid();
		r->who_start = BPF_CORE_READ(t, group_leader, start_boottime);
	}
}

/*
 * Whether an event of type (1..4) of process tgid (task, or the current
 * task when NULL) at now may go out under --rate-limit. One that is over
 * the limit is counted and not sent. Checked before anything is reserved
 * or batched, behind cfg_rate_limit at each call, so that without
 * --rate-limit the verifier drops all of it, its arguments' loads too.
 */
static __always_inline bool rate_pass_raw(void *ctx, struct task_struct___ident *task, bool raw, __u32 tgid,
					  const char *comm, __u8 type, __u64 now)
{
	if (!cfg_rate_limit)
		return true;
	struct rate_key k = {};
	__u64 cgid = task ? KR(raw, task, cgroups, dfl_cgrp, kn, id) : bpf_get_current_cgroup_id();
	if (cgid > 1)
		k.cgid = cgid;
	else
		k.tgid = tgid; /* the root cgroup */
	__u64 win = now / NS_PER_SEC;
	struct rate *r = bpf_map_lookup_elem(&rates, &k);
	if (!r) {
		struct rate init = {};
		init.state = win << 32 | 1;
		if (bpf_map_update_elem(&rates, &k, &init, BPF_NOEXIST) == 0)
			return true;
		r = bpf_map_lookup_elem(&rates, &k);
		if (!r)
			return true; /* no room: passed rather than left out unsaid */
	}
	/* A few tries: another CPU may move the state between the read and the swap. */
#pragma unroll
	for (int i = 0; i < 4; i++) {
		__u64 s = *(volatile __u64 *)&r->state;
		__u64 sw = s >> 32;
		if (sw < win) {
			/* The first event of a new window: it passes, and the window
			 * before is said. (A CPU whose clock lags, sw > win, counts in
			 * the window the source is in.) */
			if (__sync_val_compare_and_swap(&r->state, s, win << 32 | 1) == s) {
				rate_report(ctx, &k, r, sw, (sw + 1) * NS_PER_SEC, now);
				return true;
			}
			continue;
		}
		if ((__u32)s >= cfg_rate_limit)
			break;
		if (__sync_val_compare_and_swap(&r->state, s, s + 1) == s)
			return true;
	}
	__u32 idx = type - 1;
	if (idx < 4)
		__sync_fetch_and_add(&r->dropped[idx], 1);
	rate_who(r, task, raw, tgid, comm, cgid);
	idx = type;
	__u64 *v = bpf_map_lookup_elem(&throttled, &idx);
	if (v)
		*v += 1;
	return false;
}

/* rate_pass of the current task (task NULL) or of a task got from a BTF
 * tracepoint; rate_pass_raw with raw true takes any task pointer. */
static __always_inline bool rate_pass(void *ctx, struct task_struct___ident *task, __u32 tgid, const char *comm,
				      __u8 type, __u64 now)
{
	return rate_pass_raw(ctx, task, false, tgid, comm, type, now);
}

/* What rate_sweep_one is told. */
struct sweep_ctx {
	__u64 now;
	__u64 final; /* the end: every window, over or not */
};

static long rate_sweep_one(void *map, const void *key, void *value, void *data)
{
	const struct rate_key *k = key;
	struct rate *r = value;
	struct sweep_ctx *sc = data;
	if (!r->dropped[0] && !r->dropped[1] && !r->dropped[2] && !r->dropped[3])
		return 0;
	__u64 s = *(volatile __u64 *)&r->state;
	__u64 sw = s >> 32, win = sc->now / NS_PER_SEC;
	__u64 end = (sw + 1) * NS_PER_SEC;
	if (sc->final) {
		rate_report(NULL, k, r, sw, end < sc->now ? end : sc->now, sc->now);
		return 0;
	}
	/* Over: a window that ended in silence is said now, and the source
	 * starts the current one. */
	if (sw < win && __sync_val_compare_and_swap(&r->state, s, win << 32) == s)
		rate_report(NULL, k, r, sw, end, sc->now);
	return 0;
}

#endif /* TRACER_RATELIMIT_H */
