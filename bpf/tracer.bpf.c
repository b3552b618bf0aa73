//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR MIT)
/*
 * The tracer's BPF programs: exec, fork, signal and exit events taken at the
 * syscalls that make them, the same syscalls the audit rules name, so that
 * both backends report the same happenings with the same fields.
 *
 * Three probe sets share one body per event class:
 *  - sched (the default): BTF tracepoints on the scheduler and signal
 *    events (sched_process_exec/fork/exit, signal_generate), keeping those
 *    made inside the syscalls the audit rules name (the syscall number is
 *    in the caller's saved registers). No other syscall pays anything. It
 *    cannot see what generates no such event: failed execs and forks,
 *    kill(pid, 0), signals refused (EPERM, ESRCH).
 *  - syscalls: the syscalls:sys_enter_X / sys_exit_X tracepoints of exactly
 *    those syscalls, the hook points audit uses: every event audit reports,
 *    failures included, but every syscall then takes the kernel's slow
 *    syscall path, as with audit.
 *  - fentry: fentry/fexit on the syscall functions (__x64_sys_execve, ...):
 *    the syscalls set's events at the sched set's cost, on kernels that
 *    allow BPF trampolines.
 * A process tree (Config.PID) is followed in the kernel by two scheduler
 * tracepoints that add forked children to, and remove dead processes from,
 * the tracked set.
 *
 * Events go to user space through a ring buffer (or a perf event array on
 * kernels without one); in counting mode they are only counted in hash maps.
 *
 * This file holds the entry points; what they do is in headers/, one topic
 * each, compiled into this one object: types.h (the records, decoded by
 * tracer/bpfbackend/decode.go, and the constants user space sets),
 * maps.h (the ring and the shared counters), batch.h and output.h (how
 * records leave), identity.h (who a record is about), filter.h,
 * ratelimit.h, arch.h, and one header per event class: exec.h, fork.h,
 * signal.h, exit.h.
 */
#include "headers/types.h"
#include "headers/maps.h"
#include "headers/batch.h"
#include "headers/output.h"
#include "headers/identity.h"
#include "headers/filter.h"
#include "headers/ratelimit.h"
#include "headers/arch.h"
#include "headers/exec.h"
#include "headers/fork.h"
#include "headers/exit.h"
#include "headers/signal.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* ---- the fentry probe set: fentry/fexit on the syscall functions ---- */

/* The exec's filename and argv are syscall arguments fi and fi + 1. */
#define FENTRY_EXEC(fn, name, sc, fi, compat)                                                                       \
	SEC("fentry/" fn)                                                                                          \
	int name(__u64 *ctx)                                                                                       \
	{                                                                                                          \
		const struct pt_regs *r = REGS(ctx);                                                               \
		return exec_enter((const char *)syscall_ptr(r, fi, compat), (const void *)syscall_ptr(r, fi + 1, compat), \
				  compat, sc);                                                                     \
	}

#define FEXIT_SIGNAL(fn, name, sc, compat) \
	SEC("fexit/" fn)                   \
	int name(__u64 *ctx)               \
	{                                  \
		return fexit_signal(ctx, sc, compat); \
	}

#define FENTRY_EXIT(fn, name, sc, compat)                                                  \
	SEC("fentry/" fn)                                                                  \
	int name(__u64 *ctx)                                                               \
	{                                                                                  \
		return on_exit(ctx, sc, (__s32)syscall_arg(REGS(ctx), 0, compat), compat, NULL); \
	}

FENTRY_EXEC(SYS(execve), fentry_execve, SC_EXECVE, 0, false)
FENTRY_EXEC(SYS(execveat), fentry_execveat, SC_EXECVEAT, 1, false)

/* Also attached to the ia32 variants: the return value is the second context word. */
SEC("fexit/" SYS(execve))
int fexit_execve(__u64 *ctx)
{
	return exec_exit(ctx, (long)ctx[1]);
}

#define FEXIT_FORK(name, sc)                                   \
	SEC("fexit/" SYS(name))                                \
	int fexit_##name(__u64 *ctx)                           \
	{                                                      \
		return on_fork(ctx, sc, (long)ctx[1], NULL);   \
	}                                                      \
	/* For kernels whose BTF has only __do_sys_X(void). */ \
	SEC("fexit/__do_sys_" #name)                           \
	int fexit_##name##_0(__u64 *ctx)                       \
	{                                                      \
		return on_fork(ctx, sc, (long)ctx[0], NULL);   \
	}

FEXIT_FORK(fork, SC_FORK)
FEXIT_FORK(vfork, SC_VFORK)
FEXIT_FORK(clone, SC_CLONE)
FEXIT_FORK(clone3, SC_CLONE3)

FEXIT_SIGNAL(SYS(kill), fexit_kill, SC_KILL, false)
FEXIT_SIGNAL(SYS(tkill), fexit_tkill, SC_TKILL, false)
FEXIT_SIGNAL(SYS(tgkill), fexit_tgkill, SC_TGKILL, false)
FEXIT_SIGNAL(SYS(rt_sigqueueinfo), fexit_rt_sigqueueinfo, SC_RT_SIGQUEUEINFO, false)
FEXIT_SIGNAL(SYS(rt_tgsigqueueinfo), fexit_rt_tgsigqueueinfo, SC_RT_TGSIGQUEUEINFO, false)
FEXIT_SIGNAL(SYS(pidfd_send_signal), fexit_pidfd_send_signal, SC_PIDFD_SEND_SIGNAL, false)

FENTRY_EXIT(SYS(exit), fentry_exit, SC_EXIT, false)
FENTRY_EXIT(SYS(exit_group), fentry_exit_group, SC_EXIT_GROUP, false)

#ifdef HAVE_IA32
/* 32-bit syscalls of ia32 tasks: other entry points, other argument registers. */
FENTRY_EXEC("__ia32_compat_sys_execve", fentry_execve_32, SC_EXECVE, 0, true)
FENTRY_EXEC("__ia32_compat_sys_execveat", fentry_execveat_32, SC_EXECVEAT, 1, true)
FEXIT_SIGNAL("__ia32_sys_kill", fexit_kill_32, SC_KILL, true)
FEXIT_SIGNAL("__ia32_sys_tkill", fexit_tkill_32, SC_TKILL, true)
FEXIT_SIGNAL("__ia32_sys_tgkill", fexit_tgkill_32, SC_TGKILL, true)
FEXIT_SIGNAL("__ia32_compat_sys_rt_sigqueueinfo", fexit_rt_sigqueueinfo_32, SC_RT_SIGQUEUEINFO, true)
FEXIT_SIGNAL("__ia32_compat_sys_rt_tgsigqueueinfo", fexit_rt_tgsigqueueinfo_32, SC_RT_TGSIGQUEUEINFO, true)
FEXIT_SIGNAL("__ia32_sys_pidfd_send_signal", fexit_pidfd_send_signal_32, SC_PIDFD_SEND_SIGNAL, true)
FENTRY_EXIT("__ia32_sys_exit", fentry_exit_32, SC_EXIT, true)
FENTRY_EXIT("__ia32_sys_exit_group", fentry_exit_group_32, SC_EXIT_GROUP, true)
#endif /* HAVE_IA32 */

/* ---- the syscalls probe set: syscalls:sys_enter_X / sys_exit_X ---- */

struct sys_enter_ctx {
	__u64 _common;
	long id;
	unsigned long args[6];
};

struct sys_exit_ctx {
	__u64 _common;
	long id;
	long ret;
};

SEC("tracepoint/syscalls/sys_enter_execve")
int tp_enter_execve(struct sys_enter_ctx *ctx)
{
	return exec_enter((const char *)ctx->args[0], (const void *)ctx->args[1], false, SC_EXECVE);
}

SEC("tracepoint/syscalls/sys_enter_execveat")
int tp_enter_execveat(struct sys_enter_ctx *ctx)
{
	return exec_enter((const char *)ctx->args[1], (const void *)ctx->args[2], false, SC_EXECVEAT);
}

/* Attached to sys_exit_execve and sys_exit_execveat. */
SEC("tracepoint/syscalls/sys_exit_execve")
int tp_exit_exec(struct sys_exit_ctx *ctx)
{
	return exec_exit(ctx, ctx->ret);
}

#define TP_EXIT_FORK(name, sc)                             \
	SEC("tracepoint/syscalls/sys_exit_" #name)         \
	int tp_exit_##name(struct sys_exit_ctx *ctx)       \
	{                                                  \
		return on_fork(ctx, sc, ctx->ret, NULL);          \
	}

TP_EXIT_FORK(fork, SC_FORK)
TP_EXIT_FORK(vfork, SC_VFORK)
TP_EXIT_FORK(clone, SC_CLONE)
TP_EXIT_FORK(clone3, SC_CLONE3)

/* ti, si: the target's and the signal's arguments; tg: the target's
 * process as the syscall names it (tgkill), gi its argument. */
#define TP_ENTER_SIGNAL(name, sc, ti, si, tg)                                            \
	SEC("tracepoint/syscalls/sys_enter_" #name)                                      \
	int tp_enter_##name(struct sys_enter_ctx *ctx)                                   \
	{                                                                                \
		sig_call_enter(sc);                                                      \
		if (!(cfg_types & (1 << EV_SIGNAL)))                                     \
			return 0; /* attached for sig_calls only */                      \
		return signal_enter(sc, (__s32)ctx->args[ti], tg, (__s32)ctx->args[si]); \
	}

TP_ENTER_SIGNAL(kill, SC_KILL, 0, 1, NO_TGID)
TP_ENTER_SIGNAL(tkill, SC_TKILL, 0, 1, NO_TGID)
TP_ENTER_SIGNAL(tgkill, SC_TGKILL, 1, 2, (__u32)ctx->args[0])
TP_ENTER_SIGNAL(rt_sigqueueinfo, SC_RT_SIGQUEUEINFO, 0, 1, NO_TGID)
TP_ENTER_SIGNAL(rt_tgsigqueueinfo, SC_RT_TGSIGQUEUEINFO, 1, 2, (__u32)ctx->args[0])
/* The pidfd, resolved to a pid at sys_exit once the call succeeded. */
TP_ENTER_SIGNAL(pidfd_send_signal, SC_PIDFD_SEND_SIGNAL, 0, 1, NO_TGID)

/* Attached to the sys_exit of every signal syscall. */
SEC("tracepoint/syscalls/sys_exit_kill")
int tp_exit_signal(struct sys_exit_ctx *ctx)
{
	sig_call_exit();
	__u64 key = bpf_get_current_task();
	struct event *ev = bpf_map_lookup_elem(&pending, &key);
	if (!ev)
		return 0;
	ev->ret = ctx->ret;
	if (ev->h.syscall == SC_PIDFD_SEND_SIGNAL)
		ev->a = ctx->ret == 0 ? pidfd_target(ev->a) : 0;
	if (cfg_count_only) {
		signal_count(ev->h.comm, ev->a, ev->b);
	} else {
		/* In the window of the event's time, its call's. */
		if (!cfg_rate_limit || rate_pass(ctx, NULL, ev->h.pid, ev->h.comm, EV_SIGNAL, ev->h.ktime))
			output(ctx, ev, sizeof(*ev), now_ns());
	}
	bpf_map_delete_elem(&pending, &key);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_exit")
int tp_enter_exit(struct sys_enter_ctx *ctx)
{
	return on_exit(ctx, SC_EXIT, (__s32)ctx->args[0], false, NULL);
}

SEC("tracepoint/syscalls/sys_enter_exit_group")
int tp_enter_exit_group(struct sys_enter_ctx *ctx)
{
	return on_exit(ctx, SC_EXIT_GROUP, (__s32)ctx->args[0], false, NULL);
}

/* ---- the sched probe set: scheduler and signal BTF tracepoints ---- */

/* Linux 6.10+: in the exec, before the point of no return; comm is the old one. */
SEC("tp_btf/sched_prepare_exec")
int sched_prepare_exec(__u64 *ctx)
{
	return stash_comm();
}

/* Older kernels: the exec renames the task; comm is still the old one. */
SEC("tp_btf/task_rename")
int sched_task_rename(__u64 *ctx)
{
	if ((__u64)ctx[0] != bpf_get_current_task())
		return 0; /* a write to another task's /proc/PID/comm */
	return stash_comm();
}

/*
 * A successful exec: filename from the binprm, argv from the new image's
 * argument area (the strings as passed, copied there by the exec).
 */
SEC("tp_btf/sched_process_exec")
int sched_exec(__u64 *ctx)
{
	return exec_sched(ctx);
}

SEC("tp_btf/sched_process_fork")
int sched_fork(__u64 *ctx)
{
	struct task_struct *parent = (struct task_struct *)ctx[0], *child = (struct task_struct *)ctx[1];
	track_fork(parent, child);
	if (!(cfg_types & (1 << EV_FORK)))
		return 0;
	const struct pt_regs *regs;
	bool compat;
	struct task_struct___ident *cur = current_btf();
	__u8 sc = current_syscall(cur, &regs, &compat);
	if (sc < SC_FORK || sc > SC_CLONE3)
		return 0; /* a kernel thread, io worker or usermode helper */
	return on_fork(ctx, sc, child_vpid(child), cur);
}

/* Runs for every exiting thread; keeps those that called exit or
 * exit_group, and the deaths of processes by a signal. */
SEC("tp_btf/sched_process_exit")
int sched_exit(__u64 *ctx)
{
	if (cfg_types & (1 << EV_EXIT)) {
		const struct pt_regs *regs;
		bool compat;
		struct task_struct___ident *task = (struct task_struct___ident *)ctx[0];
		if (!killed_exit(ctx, task, false)) {
			__u8 sc = current_syscall(task, &regs, &compat);
			if (sc == SC_EXIT || sc == SC_EXIT_GROUP)
				on_exit(ctx, sc, (__s32)syscall_arg(regs, 0, compat), compat, task);
		}
	}
	return track_exit((struct task_struct *)ctx[0]);
}

/* The syscalls and fentry sets see exit calls at the syscalls; deaths by a
 * signal make none, so this reports them. It also follows the process
 * tree in their place: a process leaves the tracked set after its exit
 * record is made. */
SEC("tp_btf/sched_process_exit")
int proc_exit(__u64 *ctx)
{
	if (cfg_types & (1 << EV_EXIT))
		killed_exit(ctx, (struct task_struct___ident *)ctx[0], false);
	return track_exit((struct task_struct *)ctx[0]);
}

/* The same without BTF tracepoints: the task is read through CO-RE. */
SEC("raw_tp/sched_process_exit")
int proc_exit_raw(__u64 *ctx)
{
	if (cfg_types & (1 << EV_EXIT))
		killed_exit(ctx, (struct task_struct___ident *)ctx[0], true);
	return track_exit((struct task_struct *)ctx[0]);
}

/* The OOM killer chose a process (6.8+: the victim task; before: its pid). */
static __always_inline int oom_victim_task(struct task_struct___ident *task, bool raw)
{
	__u32 tgid = KR(raw, task, tgid);
	__u64 start = KR(raw, task, group_leader, start_boottime);
	bpf_map_update_elem(&oom_victims, &tgid, &start, BPF_ANY);
	return 0;
}

static __always_inline int oom_victim_tgid(__u32 tgid)
{
	__u64 start = 0;
	bpf_map_update_elem(&oom_victims, &tgid, &start, BPF_ANY);
	return 0;
}

SEC("tp_btf/mark_victim")
int oom_victim(__u64 *ctx)
{
	return oom_victim_task((struct task_struct___ident *)ctx[0], false);
}

SEC("tp_btf/mark_victim")
int oom_victim_pid(__u64 *ctx)
{
	return oom_victim_tgid((__u32)ctx[0]);
}

SEC("raw_tp/mark_victim")
int oom_victim_raw(__u64 *ctx)
{
	return oom_victim_task((struct task_struct___ident *)ctx[0], true);
}

SEC("raw_tp/mark_victim")
int oom_victim_pid_raw(__u64 *ctx)
{
	return oom_victim_tgid((__u32)ctx[0]);
}

/*
 * Every generated signal: those a signal syscall made (the sched set; the
 * other sets report them at the syscall), and those the kernel made on its
 * own when they will kill or --signal names them (signal_generated).
 */
/* signal_generate(int sig, struct kernel_siginfo *info, struct task_struct *task, int group, int result) */
SEC("tp_btf/signal_generate")
int sched_signal(__u64 *ctx)
{
	return signal_generated(ctx, (int)ctx[0], (void *)ctx[1], (struct task_struct___ident *)ctx[2], (int)ctx[3],
				(int)ctx[4], false);
}

/* The same without BTF tracepoints (syscalls set only): the target is
 * read through CO-RE, the sender's syscall from sig_calls. */
SEC("raw_tp/signal_generate")
int sched_signal_raw(__u64 *ctx)
{
	return signal_generated(ctx, (int)ctx[0], (void *)ctx[1], (struct task_struct___ident *)ctx[2], (int)ctx[3],
				(int)ctx[4], true);
}

/* ---- run by user space (BPF_PROG_TEST_RUN) ---- */

/* Every few hundred ms: says the throttled windows that are over. Needs a
 * ring buffer. */
SEC("raw_tp")
int rate_sweep(void *ctx)
{
	struct sweep_ctx sc = {.now = bpf_ktime_get_ns(), .final = 0};
	bpf_for_each_map_elem(&rates, rate_sweep_one, &sc, 0);
	return 0;
}

/* Once the programs are detached: says every window that left events out. */
SEC("raw_tp")
int rate_final(void *ctx)
{
	struct sweep_ctx sc = {.now = bpf_ktime_get_ns(), .final = 1};
	bpf_for_each_map_elem(&rates, rate_sweep_one, &sc, 0);
	return 0;
}

/* On each CPU, every poll interval and at the end: sends what it batched. */
SEC("raw_tp")
int flush_batch(void *ctx)
{
	batch_drain(now_ns());
	return 0;
}

/*
 * A task leaves this CPU: send what the CPU batched. A task runs on
 * another CPU only after it left this one, so its records batched here
 * reach the ring before any it makes there: each task's events keep their
 * order. Records of other tasks on this CPU keep theirs too; the order of
 * two tasks' events on two CPUs is the ring's (when each reserved), as in
 * any per-CPU buffering. A context switch with nothing batched costs a
 * lookup and a load.
 */
SEC("raw_tp/sched_switch")
int switch_flush(void *ctx)
{
	__u32 zero = 0;
	struct batch *b = bpf_map_lookup_elem(&batches, &zero);
	if (b && b->len)
		batch_drain(now_ns());
	return 0;
}

/* ---- the process tree (--pid) ---- */

SEC("tp_btf/sched_process_fork")
int track_fork_btf(__u64 *ctx)
{
	return track_fork((struct task_struct *)ctx[0], (struct task_struct *)ctx[1]);
}

SEC("tp_btf/sched_process_exit")
int track_exit_btf(__u64 *ctx)
{
	return track_exit((struct task_struct *)ctx[0]);
}

/* The same, for kernels without BTF tracepoints. */
SEC("raw_tp/sched_process_fork")
int track_fork_raw(__u64 *ctx)
{
	return track_fork((struct task_struct *)ctx[0], (struct task_struct *)ctx[1]);
}

SEC("raw_tp/sched_process_exit")
int track_exit_raw(__u64 *ctx)
{
	return track_exit((struct task_struct *)ctx[0]);
}
