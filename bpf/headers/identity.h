/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/*
 * Who a record is about: the kernel types for process identity, cgroups,
 * credentials, signal dispositions and exit status, and the header fields
 * read from them (pid, uid, auid, comm, exec ids, cgroup). The ___ident
 * suffix keeps these types apart from kernel.h's types of the same name;
 * CO-RE ignores it, so their fields are relocated against the running
 * kernel's structs all the same.
 */
#ifndef TRACER_IDENTITY_H
#define TRACER_IDENTITY_H

#include "types.h"

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct kernfs_node___ident {
	__u64 id;
};

struct cgroup___ident {
	int level;
	struct kernfs_node___ident *kn;
	struct cgroup___ident *ancestors[];
};

struct css_set___ident {
	struct cgroup___ident *dfl_cgrp;
};

struct sigaction___ident {
	void *sa_handler;
};

struct k_sigaction___ident {
	struct sigaction___ident sa;
};

struct sighand_struct___ident {
	struct k_sigaction___ident action[64];
};

struct tty_struct___ident {
	char name[64];
};

struct signal_struct___ident {
	atomic_t live;
	int group_exit_code;
	unsigned int flags;
	struct tty_struct___ident *tty;
};

struct cred___ident {
	kuid_t uid;
	kgid_t gid;
	kuid_t suid;
	kgid_t sgid;
	kuid_t euid;
	kgid_t egid;
	kuid_t fsuid;
	kgid_t fsgid;
};

struct task_struct___ident {
	int pid;
	int tgid;
	int exit_code;
	__u64 start_boottime;
	struct task_struct___ident *real_parent;
	struct task_struct___ident *group_leader;
	struct signal_struct___ident *signal;
	struct sighand_struct___ident *sighand;
	struct css_set___ident *cgroups;
	const struct cred___ident *real_cred;
	const struct cred___ident *cred;
	kuid_t loginuid;
	unsigned int sessionid;
	char comm[16];
};

#pragma clang attribute pop

/* UAPI linux/bpf.h, beyond kernel.h's. */
#define BPF_MAP_TYPE_LRU_HASH 9

/* signal_struct.flags: the process is exiting as a group (kernel/signal.h). */
#define SIGNAL_GROUP_EXIT 0x00000004

/*
 * Programs on BTF tracepoints pass the current task (task != NULL), got
 * once with bpf_get_current_task_btf, and read it with direct loads: a
 * helper call costs more than the loads it replaces (docs/overhead.md,
 * "Where the BPF programs' time goes"). The other programs (task == NULL)
 * use the helpers and probe reads.
 */

static __always_inline __u32 current_auid(struct task_struct___ident *task)
{
	if (task) {
		if (bpf_core_field_exists(task->loginuid))
			return task->loginuid.val;
		return 0xffffffff;
	}
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	if (bpf_core_field_exists(t->loginuid))
		return BPF_CORE_READ(t, loginuid.val);
	return 0xffffffff;
}

/* The process's identity: its and its real parent's start time (exec ids),
 * its cgroup (what bpf_get_current_cgroup_id reads). */
static __always_inline void fill_ident(struct event_hdr *h, struct task_struct___ident *task)
{
	if (task) {
		struct task_struct___ident *p = task->real_parent;
		h->start = task->group_leader->start_boottime;
		h->ppid = p->tgid;
		h->pstart = p->group_leader->start_boottime;
		h->cgid = task->cgroups->dfl_cgrp->kn->id;
	} else {
		struct task_struct___ident *t = (void *)bpf_get_current_task();
		h->start = BPF_CORE_READ(t, group_leader, start_boottime);
		h->ppid = BPF_CORE_READ(t, real_parent, tgid);
		h->pstart = BPF_CORE_READ(t, real_parent, group_leader, start_boottime);
		h->cgid = bpf_get_current_cgroup_id();
	}
	h->repeat = 0;
}

/*
 * The header's other credentials (c: the task's subjective ones, as audit
 * logs; a kernel signal's target, its objective ones), its audit session
 * and its controlling terminal's name, as audit_log_task_info reads them.
 */
static __always_inline void fill_creds(struct event_hdr *h, struct task_struct___ident *t,
				       const struct cred___ident *c)
{
	h->gid = c->gid.val;
	h->euid = c->euid.val;
	h->suid = c->suid.val;
	h->fsuid = c->fsuid.val;
	h->egid = c->egid.val;
	h->sgid = c->sgid.val;
	h->fsgid = c->fsgid.val;
	h->ses = bpf_core_field_exists(t->sessionid) ? t->sessionid : 0xffffffff;
	__builtin_memset(h->tty, 0, TTY_LEN);
	struct tty_struct___ident *tty = t->signal->tty;
	if (tty)
		bpf_probe_read_kernel_str(h->tty, TTY_LEN, tty->name);
}

/* struct cred's ids, in the kernel's order: one probe read of all eight
 * (they have been adjacent, in this order, since Linux 2.6.29). */
struct cred_ids {
	__u32 uid, gid, suid, sgid, euid, egid, fsuid, fsgid;
};

/* fill_creds by probe reads, for any task t and its credentials c. */
static __always_inline void fill_creds_read(struct event_hdr *h, struct task_struct___ident *t,
					    const struct cred___ident *c)
{
	struct cred_ids ids = {};
	bpf_probe_read_kernel(&ids, sizeof(ids), __builtin_preserve_access_index(&c->uid));
	h->gid = ids.gid;
	h->euid = ids.euid;
	h->suid = ids.suid;
	h->fsuid = ids.fsuid;
	h->egid = ids.egid;
	h->sgid = ids.sgid;
	h->fsgid = ids.fsgid;
	h->ses = bpf_core_field_exists(t->sessionid) ? BPF_CORE_READ(t, sessionid) : 0xffffffff;
	__builtin_memset(h->tty, 0, TTY_LEN);
	struct tty_struct___ident *tty = BPF_CORE_READ(t, signal, tty);
	if (tty)
		bpf_probe_read_kernel_str(h->tty, TTY_LEN, tty->name);
}

/* fill_creds for programs without a BTF task: probe reads, as few as
 * the fields allow (a helper call costs more than the loads it makes). */
static __always_inline void fill_creds_current(struct event_hdr *h)
{
	struct task_struct___ident *t = (void *)bpf_get_current_task();
	fill_creds_read(h, t, BPF_CORE_READ(t, cred));
}

/* Fills a record's header; comm was read by pass_current. The uid is the
 * current (subjective) credentials' real uid, as bpf_get_current_uid_gid
 * gives it. */
static __always_inline void fill_hdr(struct event_hdr *h, __u8 type, __u8 sc, __u32 tgid, const char *comm, __u64 now,
				     struct task_struct___ident *task)
{
	h->ktime = now;
	h->pid = tgid;
	h->uid = task ? task->cred->uid.val : (__u32)bpf_get_current_uid_gid();
	h->auid = current_auid(task);
	h->type = type;
	h->syscall = sc;
	h->flags = 0;
	h->_pad = 0;
	__builtin_memcpy(h->comm, comm, COMM_LEN);
	fill_ident(h, task);
	if (task)
		fill_creds(h, task, task->cred);
	else
		fill_creds_current(h);
}

/* The caller's comm, 8-byte aligned for pass_comm. */
union comm {
	char c[COMM_LEN];
	__u64 w[2];
};

/* w with the bytes from its first NUL on cleared; *nul says there was one.
 * The lowest byte flagged by the zero-byte test is exact: a borrow only
 * flags bytes above a zero one. */
static __always_inline __u64 before_nul(__u64 w, bool *nul)
{
	__u64 z = (w - 0x0101010101010101ULL) & ~w & 0x8080808080808080ULL;
	if (!z)
		return w;
	*nul = true;
	z &= -z;
	return w & ((z >> 7) - 1);
}

/* task's comm as bpf_get_current_comm gives it: up to its NUL, padded with
 * NULs (a rename before Linux 6.2 left an old longer name's tail after
 * the NUL), the 16th byte a NUL. */
static __always_inline void task_comm(struct task_struct___ident *task, union comm *c)
{
	bool nul = false;
	__builtin_memcpy(c->c, task->comm, COMM_LEN);
	c->w[0] = before_nul(c->w[0], &nul);
	c->w[1] = nul ? 0 : before_nul(c->w[1] & 0x00ffffffffffffffULL, &nul);
}

/* ---- raw tracepoints: the same reads without a BTF task ----
 *
 * Programs on raw tracepoints (kernels without BTF tracepoints) get task
 * pointers as plain numbers: the verifier refuses a load through them, so
 * the bodies they share with the BTF programs read through KR, a direct
 * load when raw is false and a CO-RE probe read (relocated against the
 * kernel's BTF or --btf's) when true. raw is a constant at every call:
 * the compiler keeps one branch. */
#define KR(raw, src, a, ...) ((raw) ? BPF_CORE_READ(src, a, ##__VA_ARGS__) : ___arrow(src, a, ##__VA_ARGS__))


#endif /* TRACER_IDENTITY_H */
