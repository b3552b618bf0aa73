/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/*
 * Signal records: at the syscalls (syscalls and fentry sets) or at
 * signal_generate (sched set, batched per CPU in a storm), and the
 * signals the kernel sends on its own.
 */
#ifndef TRACER_SIGNAL_H
#define TRACER_SIGNAL_H

#include "output.h"
#include "filter.h"
#include "ratelimit.h"
#include "arch.h"
#include "exit.h"

/* Signal records between sys_enter and sys_exit (syscalls probe set). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct event);
} pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct signal_key);
	__type(value, __u64);
} signal_counts SEC(".maps");

static __always_inline void signal_count(const char *comm, __s32 target, __s32 sig)
{
	struct signal_key k;
	__builtin_memcpy(k.comm, comm, COMM_LEN);
	k.target = target;
	k.sig = sig;
	count_key(&signal_counts, &k);
	total_inc(EV_SIGNAL);
}

/* Fills a signal record, in the batch or in the ring. */
static __always_inline void fill_signal(struct event *ev, __u8 sc, __u32 tgid, const char *comm, __u64 now,
					struct task_struct___ident *task, bool compat, __s32 target, __s32 sig, long ret,
					const struct sig_info *si)
{
	fill_hdr(&ev->h, EV_SIGNAL, sc, tgid, comm, now, task);
	ev->h.flags = compat ? EVF_COMPAT : 0;
	ev->a = target;
	ev->b = sig;
	ev->ret = ret;
	fill_tail(ev, si);
}

static __always_inline int on_signal_si(void *ctx, __u8 sc, __s32 target, __u32 ttgid, __s32 sig, long ret, bool compat,
					struct task_struct___ident *task, const struct sig_info *si,
					const struct repeat_key *key)
{
	union comm comm;
	__u32 tgid;
	if (!pass_signal(sig))
		return 0;
	if (!pass_current(task, &tgid, &comm) || noise(sig, sc, ttgid, tgid))
		return 0;
	if (cfg_count_only) {
		signal_count(comm.c, target, sig);
		return 0;
	}
	__u64 now = now_ns();
	if (cfg_rate_limit && !rate_pass(ctx, task, tgid, comm.c, EV_SIGNAL, now))
		return 0;
	if (cfg_batch) {
		__u32 zero = 0;
		struct batch *b = bpf_map_lookup_elem(&batches, &zero);
		if (b && batch_takes(b, now)) {
			b->busy = 1;
			barrier();
			struct event *ev = batch_slot(b, now);
			if (ev) {
				fill_signal(ev, sc, tgid, comm.c, now, task, compat, target, sig, ret, si);
				batch_commit(b, key, now);
			}
			b->tick = now;
			barrier();
			b->busy = 0;
			return 0;
		}
		if (b)
			b->tick = now;
	}
	struct event *ev = ev_reserve(now);
	if (!ev) {
		lost_inc(LOST_OUTPUT);
		return 0;
	}
	fill_signal(ev, sc, tgid, comm.c, now, task, compat, target, sig, ret, si);
	ev_submit(ctx, ev, now);
	return 0;
}

/* ttgid is the target's process where the syscall names it (tgkill), or
 * NO_TGID: then a thread-directed signal is the sender's own when it names
 * the sending thread. */
#define NO_TGID ((__u32)-1)

static __always_inline int on_signal(void *ctx, __u8 sc, __s32 target, __u32 ttgid, __s32 sig, long ret, bool compat)
{
	if (ttgid == NO_TGID) {
		__u64 id = bpf_get_current_pid_tgid();
		ttgid = (__u32)target == (__u32)id ? (__u32)(id >> 32) : (__u32)target;
	}
	return on_signal_si(ctx, sc, target, ttgid, sig, ret, compat, NULL, NULL, NULL);
}

#define PIDFD_SELF_THREAD -10000
#define PIDFD_SELF_THREAD_GROUP -20000

/*
 * The pid (in the initial pid namespace) that pidfd fd refers to. Called
 * only after pidfd_send_signal succeeded, so fd was a pidfd: its struct pid
 * is the pidfs inode's i_private (6.9+) or the file's private_data (older
 * anon-inode pidfds).
 */
static __always_inline __s32 pidfd_target(int fd)
{
	__u64 id = bpf_get_current_pid_tgid();
	if (fd == PIDFD_SELF_THREAD)
		return (__u32)id;
	if (fd == PIDFD_SELF_THREAD_GROUP)
		return id >> 32;
	if (fd < 0)
		return 0;
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	if (!fdt || (unsigned int)fd >= BPF_CORE_READ(fdt, max_fds))
		return 0;
	struct file **fds = BPF_CORE_READ(fdt, fd);
	struct file *f = NULL;
	bpf_probe_read_kernel(&f, sizeof(f), fds + fd);
	if (!f)
		return 0;
	struct pid *pid = BPF_CORE_READ(f, f_inode, i_private);
	if (!pid)
		pid = BPF_CORE_READ(f, private_data);
	if (!pid)
		return 0;
	return BPF_CORE_READ(pid, numbers[0].nr);
}

/*
 * The fentry set's signal programs (fexit on the syscall functions), which
 * differ only in the syscall: tgkill and rt_tgsigqueueinfo name the
 * target's process first; pidfd_send_signal names a pidfd, resolved once
 * the call succeeded.
 */
static __always_inline int fexit_signal(__u64 *ctx, __u8 sc, bool compat)
{
	const struct pt_regs *r = REGS(ctx);
	long ret = (long)ctx[1];
	bool tg = sc == SC_TGKILL || sc == SC_RT_TGSIGQUEUEINFO;
	__s32 target = (__s32)syscall_arg(r, tg ? 1 : 0, compat);
	__s32 sig = (__s32)syscall_arg(r, tg ? 2 : 1, compat);
	__u32 ttgid = tg ? (__u32)syscall_arg(r, 0, compat) : NO_TGID;
	if (sc == SC_PIDFD_SEND_SIGNAL) {
		if (!pass_signal(sig))
			return 0;
		target = ret == 0 ? pidfd_target(target) : 0;
	}
	return on_signal(ctx, sc, target, ttgid, sig, ret, compat);
}

/* At sys_enter: keep the signal record until sys_exit adds the result. */
static __always_inline int signal_enter(__u8 sc, __s32 target, __u32 ttgid, __s32 sig)
{
	union comm comm;
	__u32 tgid;
	if (!pass_signal(sig))
		return 0;
	if (!pass_current(NULL, &tgid, &comm))
		return 0;
	if (ttgid == NO_TGID)
		ttgid = (__u32)target == (__u32)bpf_get_current_pid_tgid() ? tgid : (__u32)target;
	if (noise(sig, sc, ttgid, tgid))
		return 0;
	if (cfg_count_only && sc != SC_PIDFD_SEND_SIGNAL) {
		signal_count(comm.c, target, sig);
		return 0;
	}
	struct event ev;
	__builtin_memset(&ev, 0, sizeof(ev));
	fill_hdr(&ev.h, EV_SIGNAL, sc, tgid, comm.c, now_ns(), NULL);
	ev.a = target;
	ev.b = sig;
	__u64 key = bpf_get_current_task();
	if (bpf_map_update_elem(&pending, &key, &ev, BPF_ANY))
		lost_inc(LOST_MAP);
	return 0;
}
#define TRACE_SIGNAL_DELIVERED 0
#define TRACE_SIGNAL_OVERFLOW_FAIL 3
#define TRACE_SIGNAL_LOSE_INFO 4
#define EAGAIN 11
#define SIGKILL 9
#define SI_USER 0
#define SI_KERNEL 0x80
#define SI_TIMER -2

struct siginfo_head {
	int si_signo;
	int si_errno;
	int si_code;
};

/* bpf_rdonly_cast (kernel 6.2+) makes a read-only kernel pointer of a BTF
 * type out of a scalar: loads through it are fault-safe, and the verifier
 * rewrites the call into a register move, so it costs nothing. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;
#ifndef bpf_ksym_exists
#define bpf_ksym_exists(sym) (!!(sym))
#endif
struct kernel_siginfo {
	int si_signo;
};

/* The signal's si_code; the kernel passes SEND_SIG_NOINFO (0) and
 * SEND_SIG_PRIV (1) for the siginfo it fills itself. */
static __always_inline __s32 sig_code(void *info, bool raw)
{
	if ((unsigned long)info == 0)
		return SI_USER;
	if ((unsigned long)info == 1)
		return SI_KERNEL;
	/* si_signo, si_errno, si_code: the UAPI layout on every arch traced.
	 * Some kernels (a 6.18 build here) type this argument as a scalar, as
	 * it "may encode error", and refuse a direct load: cast it back. */
	if (!raw && bpf_ksym_exists(bpf_rdonly_cast)) {
		const struct siginfo_head *si = bpf_rdonly_cast(info, bpf_core_type_id_kernel(struct kernel_siginfo));
		return si->si_code;
	}
	__s32 code = SI_USER;
	bpf_probe_read_kernel(&code, sizeof(code), &((const struct siginfo_head *)info)->si_code);
	return code;
}

/* Whether a delivered signal will end the target: SIGKILL, or a signal
 * whose default action ends a process and whose handler is the default. */
static __always_inline bool sig_kills(struct task_struct___ident *t, int sig, int result, bool raw)
{
	if (result != TRACE_SIGNAL_DELIVERED && result != TRACE_SIGNAL_LOSE_INFO)
		return false;
	if (sig == SIGKILL)
		return true;
	if (sig < 1 || sig > 64)
		return false;
	switch (sig) {
	case 17: case 18: case 19: case 20: case 21: case 22: case 23: case 28:
		return false; /* CHLD CONT STOP TSTP TTIN TTOU URG WINCH */
	}
	void *handler = (void *)1;
	struct sighand_struct___ident *sh = KR(raw, t, sighand);
	/* Multiplied in 64 bits (sig is 1..64 here): 6.1's verifier leaves a
	 * 32-bit product unbounded, and refuses it added to a pointer. */
	bpf_probe_read_kernel(&handler, sizeof(handler),
			      (void *)sh + bpf_core_field_offset(struct sighand_struct___ident, action) +
				      (__u64)(__u32)(sig - 1) * bpf_core_type_size(struct k_sigaction___ident) +
				      bpf_core_field_offset(struct k_sigaction___ident, sa.sa_handler));
	return handler == NULL; /* SIG_DFL */
}

/* Remembers who sent a signal that will kill t, for its exit record. */
static __always_inline void note_killer(struct task_struct___ident *t, int sig, __s32 code, __u8 sc, bool raw)
{
	struct killer k;
	__builtin_memset(&k, 0, sizeof(k));
	__u32 tgid = KR(raw, t, tgid);
	k.tstart = KR(raw, t, group_leader, start_boottime);
	k.sig = sig;
	k.code = code;
	k.syscall = sc;
	if (sc == SC_NONE) {
		k.kernel = 1;
	} else {
		struct task_struct___ident *cur = raw ? (void *)bpf_get_current_task() : (void *)bpf_get_current_task_btf();
		k.pid = KR(raw, cur, tgid);
		k.start = KR(raw, cur, group_leader, start_boottime);
		bpf_get_current_comm(k.comm, COMM_LEN);
	}
	bpf_map_update_elem(&killers, &tgid, &k, BPF_ANY);
}

/* A signal the kernel sent on its own. No process sent it: the record is
 * the target's, so the filters and the header are about the target. */
static __always_inline int kernel_signal(void *ctx, struct task_struct___ident *t, int group, int sig,
					 struct sig_info *si, bool raw)
{
	union comm comm;
	__u32 tgid = KR(raw, t, tgid);
	if (!pass_pid(tgid))
		return 0;
	bpf_probe_read_kernel(comm.c, COMM_LEN, t->comm);
	if (!pass_comm(comm.c))
		return 0;
	if ((cfg_uid_on || cfg_auid_set) &&
	    !pass_ids(KR(raw, t, real_cred, uid.val), bpf_core_field_exists(t->loginuid) ? KR(raw, t, loginuid.val) : 0xffffffff))
		return 0;
	if (!pass_cgroup(t))
		return 0;
	__u64 now = now_ns();
	if (cfg_rate_limit && !rate_pass_raw(ctx, t, raw, tgid, comm.c, EV_SIGNAL, now))
		return 0;
	struct event *ev = ev_reserve(now);
	if (!ev) {
		lost_inc(LOST_OUTPUT);
		return 0;
	}
	struct event_hdr *h = &ev->h;
	h->ktime = now;
	h->pid = tgid;
	h->uid = KR(raw, t, real_cred, uid.val);
	h->auid = bpf_core_field_exists(t->loginuid) ? KR(raw, t, loginuid.val) : 0xffffffff;
	h->type = EV_SIGNAL;
	h->syscall = SC_NONE;
	h->flags = 0;
	h->_pad = 0;
	__builtin_memcpy(h->comm, comm.c, COMM_LEN);
	struct task_struct___ident *p = KR(raw, t, real_parent);
	h->start = KR(raw, t, group_leader, start_boottime);
	h->ppid = KR(raw, p, tgid);
	h->pstart = KR(raw, p, group_leader, start_boottime);
	h->cgid = KR(raw, t, cgroups, dfl_cgrp, kn, id);
	h->repeat = 0;
	if (raw)
		fill_creds_read(h, t, BPF_CORE_READ(t, real_cred));
	else
		fill_creds(h, t, t->real_cred);
	ev->a = group ? tgid : KR(raw, t, pid);
	ev->b = sig;
	ev->ret = 0;
	fill_tail(ev, si);
	ev_submit(ctx, ev, now);
	return 0;
}

/*
 * current_syscall for the signal program, with the address of the task's
 * saved registers kept per CPU: a kill loop finds it there rather than
 * through bpf_task_pt_regs, a helper call. A
 * task's registers stay at one address for its life; the pid and start
 * time tell a later task from it. The same program never nests on a CPU.
 */
static __always_inline __u8 signal_syscall(struct task_struct___ident *task, struct batch *b,
					   const struct pt_regs **regs, bool *compat)
{
	if (b && bpf_ksym_exists(bpf_rdonly_cast) && b->regs && b->regs_pid == task->pid &&
	    b->regs_start == task->start_boottime) {
		*regs = bpf_rdonly_cast((void *)b->regs, bpf_core_type_id_kernel(struct pt_regs));
		*compat = task_compat((struct task_struct *)task);
		return syscall_of(SYSCALL_NR(*regs), *compat);
	}
	__u8 sc = current_syscall(task, regs, compat);
	if (b) {
		b->regs_pid = task->pid;
		b->regs_start = task->start_boottime;
		b->regs = (__u64)*regs;
	}
	return sc;
}

/*
 * Without BTF tracepoints, the signal program cannot read the caller's
 * saved registers (bpf_task_pt_regs takes a BTF task): the syscalls set's
 * signal syscalls say here, keyed by thread, which of them the thread is
 * in, from sys_enter to sys_exit. The thread's start time tells a later
 * thread of the same id from one that died inside the call.
 */
struct sig_call {
	__u64 start;
	__u8 sc;
	__u8 _pad[7];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct sig_call);
} sig_calls SEC(".maps");

const volatile __u8 cfg_sig_calls = 0; /* the signal syscalls fill sig_calls (raw signal_generate attached) */

static __always_inline __u64 current_start(void)
{
	struct task_struct___ident *t = (void *)bpf_get_current_task();
	return BPF_CORE_READ(t, start_boottime);
}

static __always_inline void sig_call_enter(__u8 sc)
{
	if (!cfg_sig_calls)
		return;
	__u64 id = bpf_get_current_pid_tgid();
	struct sig_call c = {.start = current_start(), .sc = sc};
	bpf_map_update_elem(&sig_calls, &id, &c, BPF_ANY);
}

static __always_inline void sig_call_exit(void)
{
	if (!cfg_sig_calls)
		return;
	__u64 id = bpf_get_current_pid_tgid();
	bpf_map_delete_elem(&sig_calls, &id);
}

static __always_inline __u8 sig_call_of_current(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sig_call *c = bpf_map_lookup_elem(&sig_calls, &id);
	if (!c || c->start != current_start())
		return SC_NONE;
	return c->sc;
}

/*
 * Every generated signal. Those a signal syscall made are the caller's
 * (sched set; the other sets report them at the syscall): the target as
 * given is the syscall's argument (pidfd_send_signal: the target's pid),
 * and the syscall's return value is not known yet: 0, or -EAGAIN when the
 * kernel could not queue a real-time signal. Those the kernel made on its
 * own (faults, SIGPIPE, timers, the OOM killer, SIGCHLD) are kept when
 * they will kill the target, or when --signal names them. A signal that
 * will kill is remembered for the target's exit record.
 */
static __always_inline int signal_generated(void *ctx, int sig, void *info, struct task_struct___ident *target,
					    int group, int result, bool raw)
{
	const struct pt_regs *regs = NULL;
	bool compat = false;
	struct task_struct___ident *cur = NULL;
	struct batch *b = NULL;
	__u8 sc;
	if (raw) {
		sc = sig_call_of_current();
	} else {
		__u32 zero = 0;
		cur = current_btf();
		b = cfg_batch ? bpf_map_lookup_elem(&batches, &zero) : NULL;
		sc = signal_syscall(cur, b, &regs, &compat);
	}
	__s32 code = sig_code(info, raw);
	/* A timer or the terminal may signal from an interrupt that came
	 * while the task it interrupted was in a signal syscall. */
	if (sc < SC_KILL || sc > SC_PIDFD_SEND_SIGNAL || code == SI_KERNEL ||
	    (code == SI_TIMER && sc != SC_RT_SIGQUEUEINFO && sc != SC_RT_TGSIGQUEUEINFO))
		sc = SC_NONE;
	bool note = !cfg_count_only && (cfg_types & (1 << EV_EXIT));
	bool kills = (note || (sc == SC_NONE && cfg_sig_all)) && sig_kills(target, sig, result, raw);
	if (kills && note)
		note_killer(target, sig, code, sc, raw);
	if (!(cfg_types & (1 << EV_SIGNAL)) || !pass_signal(sig))
		return 0;

	struct sig_info si;
	si.code = code;
	si.result = result;
	si.flags = XF_CODE | XF_RESULT | XF_TARGET;

	__s32 tpid;
	switch (sc) {
	case SC_KILL:
	case SC_TKILL:
	case SC_RT_SIGQUEUEINFO:
		tpid = (__s32)syscall_arg(regs, 0, compat);
		break;
	case SC_TGKILL:
	case SC_RT_TGSIGQUEUEINFO:
		tpid = (__s32)syscall_arg(regs, 1, compat);
		break;
	case SC_PIDFD_SEND_SIGNAL:
		tpid = group ? KR(raw, target, tgid) : KR(raw, target, pid);
		break;
	default:
		/* Sent by the kernel: kept when fatal, or named by --signal. */
		if (cfg_count_only || (cfg_sig_all && !kills))
			return 0;
		si.flags |= XF_KERNEL;
		sig_target(&si, target, raw);
		return kernel_signal(ctx, target, group, sig, &si, raw);
	}
	/* The raw program runs with the syscalls set only. */
	if (raw || !cfg_sig_sched)
		return 0; /* the syscall probes report it */
	long ret = result == TRACE_SIGNAL_OVERFLOW_FAIL ? -EAGAIN : 0;
	struct repeat_key k;
	if (cfg_batch) {
		struct task_struct___ident *p = cur->real_parent;
		k.start = cur->start_boottime;
		k.pstart = p->start_boottime;
		k.cgid = cur->cgroups->dfl_cgrp->kn->id;
		k.tstart = target->start_boottime;
		__builtin_memcpy(k.comm, cur->comm, COMM_LEN);
		__builtin_memcpy(k.tcomm, target->comm, COMM_LEN);
		k.pid = cur->pid;
		k.ppid = p->pid;
		k.tid = target->pid;
		k.tpid = tpid;
		k.sig = sig;
		k.code = code;
		k.uid = cur->cred->uid.val;
		k.auid = current_auid(cur);
		k.euid = cur->cred->euid.val;
		k.egid = cur->cred->egid.val;
		k.sc = sc;
		k.compat = compat;
		k.result = result;
		k._pad = 0;
		k.valid = 1;
		/* The last record batched again, in the same tick: one more
		 * repeat. signal_generate runs with interrupts off: nothing of
		 * ours runs between the test and the increment but a program it
		 * interrupted (busy). The filters passed for the same sender
		 * this tick. */
		struct event *last = b ? batch_last_same(b, &k, now_ns()) : NULL;
		if (last && pass_pid(cur->tgid)) {
			/* Over the limit, left out. busy: a throttle record it
			 * sends must not send the batch under last. */
			if (cfg_rate_limit) {
				b->busy = 1;
				barrier();
				bool pass = rate_pass(ctx, cur, cur->tgid, (const char *)k.comm, EV_SIGNAL, b->tick);
				barrier();
				b->busy = 0;
				if (!pass)
					return 0;
			}
			batch_repeat(b, last);
			return 0;
		}
	}
	sig_target(&si, target, false);
	return on_signal_si(ctx, sc, tpid, target->tgid, sig, ret, compat, cur, cfg_count_only ? NULL : &si, cfg_batch ? &k : NULL);
}

#endif /* TRACER_SIGNAL_H */
