/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/*
 * Signal records batched per CPU, and the tests that make a record a
 * repeat of the last one (same_event, same_key). bpf/tests runs them with
 * crafted input.
 */
#ifndef TRACER_BATCH_H
#define TRACER_BATCH_H

#include "maps.h"

/*
 * Signal records batched per CPU. Reserving and committing a ring buffer
 * record (a lock and an atomic exchange on lines the reader shares) costs
 * more than the rest of a signal record; in a storm, records after the
 * first of a tick wait here and go to the ring together, in one record,
 * when the batch is full, at the next record of a later tick, before any
 * record this CPU sends directly (keeping the CPU's order), when a task
 * leaves the CPU (switch_flush: keeping each task's order), or when user
 * space runs flush_batch on the CPU (every poll interval, and at the end).
 * A record equal to the last one in the batch (the same sender, target,
 * signal and result in the same tick: a kill loop) is not written again:
 * the last one's repeat count grows, so a storm costs the ring a record
 * per tick, not one per signal. busy marks a program between its first
 * and last access: one that interrupts it (an IRQ, a preempting task)
 * sends its record directly.
 */
#define BATCH_BYTES (24 * 176) /* 24 records (sizeof(struct event)): whole records, about a page */
_Static_assert(BATCH_BYTES % sizeof(struct event) == 0, "a batch holds whole records");
#define REPEAT_MAX 0xffff /* decode.go's maxRepeat */

/*
 * What makes a signal from signal_generate the same event as the last one
 * batched, read off the sender and the target with few loads: a thread is
 * its pid and start time (the group leader, and so tgid and exec id,
 * change only with the pid, in an exec), the parent the same, the
 * credentials their uid, euid and egid (the stack has no room
 * for the rest), the cgroup its id. A process that changes only its
 * saved or file system ids, its gid or its terminal in the tick of a
 * storm of its own signals keeps the first one's in their repeats. A match costs a compare
 * instead of a record (sched_signal).
 */
struct repeat_key {
	__u64 start, pstart, cgid, tstart;
	__u64 comm[2], tcomm[2];
	__s32 pid, ppid, tid, tpid, sig, code;
	__u32 uid, auid;
	__u32 euid, egid;
	__u8 sc, compat, result, _pad;
	__u32 valid; /* the key is the batch's last record's */
};

struct batch {
	__u32 len;
	__u32 busy;
	__u64 tick;   /* now_ns() of the last signal record on this CPU */
	__u32 events; /* the events the batch holds: its records and their repeats */
	__u32 _pad;
	struct repeat_key last;
	/* The saved user registers of the last task that sent a signal on
	 * this CPU, by its pid and start time (see signal_syscall). */
	__s32 regs_pid;
	__u32 _pad2;
	__u64 regs_start;
	__u64 regs;
	char buf[BATCH_BYTES];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct batch);
} batches SEC(".maps");

static __always_inline void batch_flush(struct batch *b, __u64 now)
{
	__u32 len = b->len;
	if (len > BATCH_BYTES)
		len = BATCH_BYTES;
	if (len) {
		if (bpf_ringbuf_output(&events, b->buf, len, wake_flags(now)))
			lost_add(LOST_OUTPUT, b->events);
		else
			wake_parked();
	}
	b->len = 0;
	b->events = 0;
	b->last.valid = 0;
}

/* Sends what this CPU batched, unless a program it interrupted is batching. */
static __always_inline void batch_drain(__u64 now)
{
	__u32 zero = 0;
	if (!cfg_batch)
		return;
	struct batch *b = bpf_map_lookup_elem(&batches, &zero);
	if (!b || b->busy || !b->len)
		return;
	b->busy = 1;
	barrier();
	batch_flush(b, now);
	barrier();
	b->busy = 0;
}

/* Whether two records are the same but for their repeat counts. */
static __always_inline bool same_event(const struct event *x, const struct event *y)
{
	const __u64 *a = (const __u64 *)x, *b = (const __u64 *)y;
	_Static_assert(__builtin_offsetof(struct event_hdr, repeat) == 8 * 8 + 4, "repeat is the top half of word 8");
	__u64 diff = (a[8] ^ b[8]) & 0xffffffffULL;
#pragma unroll
	for (int i = 0; i < sizeof(struct event) / 8; i++)
		if (i != 8)
			diff |= a[i] ^ b[i];
	return diff == 0;
}

/* Whether two repeat keys are equal, and the first is valid. */
static __always_inline bool same_key(const struct repeat_key *x, const struct repeat_key *y)
{
	const __u64 *a = (const __u64 *)x, *b = (const __u64 *)y;
	_Static_assert(sizeof(struct repeat_key) % 8 == 0, "whole words");
	__u64 diff = 0;
#pragma unroll
	for (int i = 0; i < sizeof(struct repeat_key) / 8; i++)
		diff |= a[i] ^ b[i];
	return diff == 0;
}

/* Whether the record of an event at now waits in the batch: the first of
 * a tick goes at once (only a storm waits), and none while a program this
 * one interrupted is batching. */
static __always_inline bool batch_takes(const struct batch *b, __u64 now)
{
	return !b->busy && (b->len || b->tick == now);
}

/*
 * Room for one more record at the end of the batch, sending a full batch
 * first; NULL when there is none. The caller fills the record, then
 * batch_commit takes it.
 */
static __always_inline struct event *batch_slot(struct batch *b, __u64 now)
{
	if (b->len > BATCH_BYTES - sizeof(struct event))
		batch_flush(b, now);
	__u32 off = b->len;
	if (off > BATCH_BYTES - sizeof(struct event))
		return NULL;
	return (struct event *)&b->buf[off];
}

/*
 * Takes the record batch_slot gave: a repeat of the last one when equal to
 * it (its count grows, the new one is not kept), else a record of its
 * own. key, when set, is the repeat key of the record (batch_last_same).
 * A record of a later tick than the batch's sends the batch.
 */
static __always_inline void batch_commit(struct batch *b, const struct repeat_key *key, __u64 now)
{
	__u32 off = b->len;
	if (off > BATCH_BYTES - sizeof(struct event))
		return;
	struct event *ev = (struct event *)&b->buf[off];
	bool repeat = false;
	if (off >= sizeof(struct event)) {
		/* Bounded anew: the compiler may otherwise compute last before
		 * the test, where the verifier sees it start before the buffer. */
		__u32 loff = off - sizeof(struct event);
		barrier_var(loff);
		if (loff <= BATCH_BYTES - 2 * sizeof(struct event)) {
			struct event *last = (struct event *)&b->buf[loff];
			if (last->h.repeat < REPEAT_MAX && same_event(last, ev)) {
				last->h.repeat++;
				repeat = true;
			}
		}
	}
	if (!repeat)
		b->len = off + sizeof(struct event);
	b->events++;
	if (key) {
		b->last = *key;
		b->last.valid = 1;
	} else {
		b->last.valid = 0;
	}
	if (b->tick != now)
		batch_flush(b, now); /* a tick has passed: send what waited */
}

/*
 * The batch's last record when k is its repeat key and it was batched in
 * tick now, with room for one more repeat: the event k stands for is that
 * record again (batch_repeat), at the cost of a compare. NULL otherwise,
 * or while a program this one interrupted is batching (busy).
 */
static __always_inline struct event *batch_last_same(struct batch *b, const struct repeat_key *k, __u64 now)
{
	if (b->busy || b->tick != now || !same_key(&b->last, k))
		return NULL;
	__u32 off = b->len - sizeof(struct event);
	barrier_var(off);
	/* A valid key has a record: off is in the batch. */
	if (off > BATCH_BYTES - sizeof(struct event))
		return NULL;
	struct event *last = (struct event *)&b->buf[off];
	return last->h.repeat < REPEAT_MAX ? last : NULL;
}

static __always_inline void batch_repeat(struct batch *b, struct event *last)
{
	last->h.repeat++;
	b->events++;
}

#endif /* TRACER_BATCH_H */
