//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR MIT)
/*
 * Runs the batching and repeat-key logic of headers/batch.h, the code
 * tracer.bpf.c's signal programs batch with, on input crafted by
 * batch_test.go: one operation per BPF_PROG_TEST_RUN, read from the op
 * map, its result and the batch's state left in the result map. The
 * records a flush sends go to this object's own ring buffer.
 */
#include "headers/batch.h"
#include "headers/output.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

enum op_kind {
	OP_ADD = 1,	   /* a signal record at now: batched or sent at once, as on_signal_si does */
	OP_REPEAT = 2,	   /* key at now: one more repeat of the batch's last record, as signal_generated does */
	OP_FLUSH = 3,	   /* batch_drain, as flush_batch does */
	OP_SAME_KEY = 4,   /* same_key(key, key2) */
	OP_SAME_EVENT = 5, /* same_event(ev, ev2) */
};

struct batch_op {
	__u64 now;
	__u32 kind;
	__u32 has_key; /* OP_ADD: key is the record's repeat key */
	struct event ev;
	struct event ev2;
	struct repeat_key key;
	struct repeat_key key2;
};

struct batch_result {
	__u64 ret; /* OP_ADD: 1 batched, 0 sent at once; OP_REPEAT: 1 counted; OP_SAME_*: the answer */
	__u64 tick;
	__u32 len;
	__u32 events;
	__u32 valid;
	__u32 _pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct batch_op);
} op SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct batch_result);
} result SEC(".maps");

static __always_inline __u64 add(void *ctx, struct batch *b, const struct batch_op *o)
{
	__u64 now = o->now;
	if (!batch_takes(b, now)) {
		b->tick = now;
		output(ctx, (void *)&o->ev, sizeof(struct event), now);
		return 0;
	}
	b->busy = 1;
	barrier();
	struct event *ev = batch_slot(b, now);
	if (ev) {
		__builtin_memcpy(ev, &o->ev, sizeof(*ev));
		batch_commit(b, o->has_key ? &o->key : NULL, now);
	}
	b->tick = now;
	barrier();
	b->busy = 0;
	return 1;
}

SEC("raw_tp")
int run_op(void *ctx)
{
	__u32 zero = 0;
	struct batch_op *o = bpf_map_lookup_elem(&op, &zero);
	struct batch_result *r = bpf_map_lookup_elem(&result, &zero);
	struct batch *b = bpf_map_lookup_elem(&batches, &zero);
	if (!o || !r || !b)
		return 1;
	__u64 ret = 0;
	switch (o->kind) {
	case OP_ADD:
		ret = add(ctx, b, o);
		break;
	case OP_REPEAT: {
		struct event *last = batch_last_same(b, &o->key, o->now);
		if (last) {
			batch_repeat(b, last);
			ret = 1;
		}
		break;
	}
	case OP_FLUSH:
		batch_drain(o->now);
		break;
	case OP_SAME_KEY:
		ret = same_key(&o->key, &o->key2);
		break;
	case OP_SAME_EVENT:
		ret = same_event(&o->ev, &o->ev2);
		break;
	default:
		return 1;
	}
	r->ret = ret;
	r->tick = b->tick;
	r->len = b->len;
	r->events = b->events;
	r->valid = b->last.valid;
	return 0;
}
