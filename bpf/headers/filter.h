/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/*
 * The kernel's filters, applied before anything is reserved in the ring:
 * tracer itself, the process tree (--pid, followed at fork), --comm,
 * --cgroup, --signal, and the runtime noise (counted by reason).
 */
#ifndef TRACER_FILTER_H
#define TRACER_FILTER_H

#include "maps.h"
#include "identity.h"

/* Entry 0 turns the process-tree filter on; user space sets it (Track)
 * while programs run, so it is a map, not a constant. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} track_on SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);  /* tgid */
	__type(value, __u8);
} tracked SEC(".maps");

static __always_inline bool tracking(void)
{
	__u32 zero = 0;
	__u32 *on = bpf_map_lookup_elem(&track_on, &zero);
	return on && *on;
}

static __always_inline bool pass_pid(__u32 tgid)
{
	if (!tracking())
		return true;
	return bpf_map_lookup_elem(&tracked, &tgid) != NULL;
}

/* --uid and --comm with several comms, filled by user space before the
 * programs are attached. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} uids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct comm_key);
	__type(value, __u8);
} comms SEC(".maps");

/* Counts an event left out for reason idx; returns false, for the pass_* tests. */
static __always_inline bool filter_count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&filtered, &idx);
	if (v)
		*v += 1;
	return false;
}

/* comm is 16 bytes, NUL padded, 8-byte aligned (union comm). */
static __always_inline bool pass_comm(const char *comm)
{
	if (!cfg_comm_on)
		return true;
	if (cfg_comm_on == 1) {
		const __u64 *w = (const __u64 *)comm;
		if (w[0] == cfg_comm_lo && w[1] == cfg_comm_hi)
			return true;
	} else if (bpf_map_lookup_elem(&comms, comm)) {
		return true;
	}
	return filter_count(FILTER_COMM);
}

/* --uid and --auid-set, on the real uid and login uid a record's header
 * holds. Callers test cfg_uid_on || cfg_auid_set first, so that without
 * them the verifier drops the loads of the arguments. */
static __always_inline bool pass_ids(__u32 uid, __u32 auid)
{
	if (cfg_uid_on && !bpf_map_lookup_elem(&uids, &uid))
		return filter_count(FILTER_UID);
	if (cfg_auid_set && auid == 0xffffffff)
		return filter_count(FILTER_AUID);
	return true;
}

/* pass_ids for the current task (task, or NULL: through the helpers), as
 * fill_hdr reads its ids. */
static __always_inline bool pass_current_ids(struct task_struct___ident *task)
{
	if (!cfg_uid_on && !cfg_auid_set)
		return true;
	__u32 uid = 0;
	if (cfg_uid_on)
		uid = task ? task->cred->uid.val : (__u32)bpf_get_current_uid_gid();
	return pass_ids(uid, cfg_auid_set ? current_auid(task) : 0);
}

/*
 * Runtime noise, not an event unless --signal asks for it: signal 0 (an
 * existence check; kill(pid, 0) sends nothing), and SIGURG sent by a
 * thread-directed syscall to a thread of the sender's own process (the Go
 * runtime preempts its goroutines so, thousands a second in a build).
 * ttgid is the target's process, sender the sender's. Counted by reason.
 */
static __always_inline bool noise(__s32 sig, __u8 sc, __u32 ttgid, __u32 sender)
{
	if (sig == 0 && !cfg_keep_existence)
		filter_count(FILTER_EXISTENCE);
	else if (sig == SIGURG && !cfg_keep_preempt && ttgid == sender &&
		 (sc == SC_TGKILL || sc == SC_TKILL || sc == SC_RT_TGSIGQUEUEINFO))
		filter_count(FILTER_PREEMPT);
	else
		return false;
	return true;
}

static __always_inline bool pass_signal(__s32 sig)
{
	if (cfg_sig_all)
		return true;
	if (sig < 0 || sig > 64)
		return false;
	if (sig == 64)
		return cfg_sig_hi & 1;
	return (cfg_sig_lo >> sig) & 1;
}

/* Whether task is in cfg_cgroup_id or below it: its cgroup's ancestor at
 * that level is that cgroup (the test bpftrace's cgroup predicate makes). */
static __always_inline bool pass_cgroup(struct task_struct___ident *task)
{
	if (!cfg_cgroup_id)
		return true;
	struct cgroup___ident *cg = BPF_CORE_READ(task, cgroups, dfl_cgrp);
	if (!cg || BPF_CORE_READ(cg, level) < (int)cfg_cgroup_level || cfg_cgroup_level > 255)
		return false;
	struct cgroup___ident *anc = NULL;
	bpf_probe_read_kernel(&anc, sizeof(anc),
			      (void *)cg + bpf_core_field_offset(struct cgroup___ident, ancestors) +
				      cfg_cgroup_level * sizeof(void *));
	return anc && BPF_CORE_READ(anc, kn, id) == cfg_cgroup_id;
}

/* The process-tree, comm, uid, login uid and cgroup filters, in order of
 * cost; fills tgid and comm. */
static __always_inline bool pass_current(struct task_struct___ident *task, __u32 *tgid, union comm *comm)
{
	if (task) {
		*tgid = task->tgid;
		if (*tgid == cfg_self_tgid || !pass_pid(*tgid))
			return false;
		task_comm(task, comm);
		return pass_comm(comm->c) && pass_current_ids(task) && pass_cgroup(task);
	}
	*tgid = bpf_get_current_pid_tgid() >> 32;
	if (*tgid == cfg_self_tgid || !pass_pid(*tgid))
		return false;
	bpf_get_current_comm(comm->c, COMM_LEN);
	/* The task is fetched only when the cgroup filter is on. */
	return pass_comm(comm->c) && pass_current_ids(NULL) &&
	       (!cfg_cgroup_id || pass_cgroup((void *)bpf_get_current_task()));
}


static __always_inline int track_fork(struct task_struct *parent, struct task_struct *child)
{
	if (!tracking())
		return 0;
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	if (!bpf_map_lookup_elem(&tracked, &ptgid))
		return 0;
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	if (ctgid == ptgid)
		return 0; /* a thread: its process is tracked already */
	__u8 one = 1;
	if (bpf_map_update_elem(&tracked, &ctgid, &one, BPF_ANY))
		lost_inc(LOST_MAP);
	return 0;
}

static __always_inline int track_exit(struct task_struct *task)
{
	if (!tracking())
		return 0;
	/* The last thread of the process is exiting. */
	if (BPF_CORE_READ(task, signal, live.counter) != 0)
		return 0;
	__u32 tgid = BPF_CORE_READ(task, tgid);
	bpf_map_delete_elem(&tracked, &tgid);
	return 0;
}

#endif /* TRACER_FILTER_H */
