/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/*
 * What every program shares: the ring buffer and its pace (when the reader
 * is woken), the event clock, and the counters of events, loss and
 * filtered noise.
 */
#ifndef TRACER_MAPS_H
#define TRACER_MAPS_H

#include "types.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EV_MAX);
	__type(key, __u32);
	__type(value, __u64);
} totals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LOST_MAX);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FILTER_MAX);
	__type(key, __u32);
	__type(value, __u64);
} filtered SEC(".maps");

/* When the reader was last woken (ktime): see wake_flags. */
__u64 last_wake = 0;
__u64 last_fill_check = 0;
/* Set by the reader before it sleeps without a deadline on an empty ring,
 * so that an idle node wakes it for nothing: see wake_parked. */
__u32 reader_parked = 0;

static __always_inline void lost_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&lost, &idx);
	if (v)
		*v += 1;
}

static __always_inline void lost_add(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&lost, &idx);
	if (v)
		*v += n;
}

static __always_inline void total_inc(__u32 type)
{
	__u64 *v = bpf_map_lookup_elem(&totals, &type);
	if (v)
		*v += 1;
}

static __always_inline void count_key(void *map, const void *key)
{
	__u64 *v = bpf_map_lookup_elem(map, key);
	if (v) {
		__sync_fetch_and_add(v, 1);
		return;
	}
	__u64 one = 1;
	if (bpf_map_update_elem(map, key, &one, BPF_NOEXIST) == 0)
		return;
	/* Another CPU inserted the key first, or the map is full. */
	v = bpf_map_lookup_elem(map, key);
	if (v)
		__sync_fetch_and_add(v, 1);
	else
		lost_inc(LOST_MAP);
}

/*
 * Every ring buffer submit and output takes its flags from here. Wake the
 * reader at most every cfg_wake_interval_ns, or once per tick while more
 * than cfg_wake_bytes wait. Waking it for every record (the ring buffer's
 * default when the reader keeps up) costs the producing task an irq_work
 * and a remote wakeup per event, more than the rest of the program; the
 * reader also polls on a timer (--max-delay), so records committed without
 * a wakeup are read soon anyway. With cfg_wake_interval_ns 0 (--max-delay
 * set) the timer alone bounds the delay, and only the fill level wakes the
 * reader: a storm wakes it at a quarter of the ring, long before the ring
 * fills because it slept.
 */
static __always_inline __u64 wake_flags(__u64 now)
{
	if (cfg_wake_interval_ns && now - last_wake > cfg_wake_interval_ns) {
		last_wake = now;
		return BPF_RB_FORCE_WAKEUP;
	}
	/* The fill level reads the reader's position, a cache line the
	 * reader writes: at most once per tick. */
	if (now != last_fill_check) {
		last_fill_check = now;
		if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > cfg_wake_bytes) {
			last_wake = now;
			return BPF_RB_FORCE_WAKEUP;
		}
	}
	return BPF_RB_NO_WAKEUP;
}

/*
 * After a record's commit: the first record after the reader parked wakes
 * it, with an empty record it skips. The commit is a full barrier, and the
 * reader sets reader_parked before it looks at the ring one last time:
 * either it sees this record there, or this sees its flag.
 */
static __always_inline void wake_parked(void)
{
	if (!*(volatile __u32 *)&reader_parked)
		return;
	reader_parked = 0;
	void *r = bpf_ringbuf_reserve(&events, 8, 0);
	if (r)
		bpf_ringbuf_discard(r, BPF_RB_FORCE_WAKEUP);
}

/* The time read at the first event of the current jiffy on this CPU. */
struct tick_time {
	__u64 jiffies;
	__u64 ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tick_time);
} tick SEC(".maps");

/*
 * Event time, CLOCK_MONOTONIC to the scheduler tick (1 to 10 ms; audit's
 * timestamps are no finer). Reading the clock source costs more than the
 * rest of a record in a VM (kvm-clock), and the coarse clock is not
 * available to tracing programs: read it once per tick and CPU.
 */
static __always_inline __u64 now_ns(void)
{
	__u32 zero = 0;
	__u64 j = bpf_jiffies64();
	struct tick_time *t = bpf_map_lookup_elem(&tick, &zero);
	if (!t)
		return bpf_ktime_get_ns();
	if (t->jiffies != j) {
		t->ns = bpf_ktime_get_ns();
		t->jiffies = j;
	}
	return t->ns;
}

/* Per-CPU room for a record when events go through a perf event array. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct event);
} ev_scratch SEC(".maps");

#endif /* TRACER_MAPS_H */
