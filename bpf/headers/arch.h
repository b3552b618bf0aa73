/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/*
 * What differs by architecture: the syscall functions' names, where a
 * syscall's arguments are in the caller's saved registers (pt_regs), the
 * syscall numbers of the syscalls the audit rules name, and 32-bit tasks.
 */
#ifndef TRACER_ARCH_H
#define TRACER_ARCH_H

#include "types.h"
#include "identity.h"

#if defined(__TARGET_ARCH_x86)
#define SYS(name) "__x64_sys_" #name
#define ARG0(r) ((r)->di)
#define ARG1(r) ((r)->si)
#define ARG2(r) ((r)->dx)
#define ARG3(r) ((r)->r10)
/* The ia32 syscall ABI passes arguments in bx, cx, dx, si, di, bp. */
#define ARG0_32(r) ((__u32)(r)->bx)
#define ARG1_32(r) ((__u32)(r)->cx)
#define ARG2_32(r) ((__u32)(r)->dx)
#define HAVE_IA32 1
#elif defined(__TARGET_ARCH_arm64)
#define SYS(name) "__arm64_sys_" #name
#define ARG0(r) ((r)->regs[0])
#define ARG1(r) ((r)->regs[1])
#define ARG2(r) ((r)->regs[2])
#define ARG3(r) ((r)->regs[3])
#endif

/* fentry/fexit programs: the syscall function's one argument is the regs. */
#define REGS(ctx) ((const struct pt_regs *)(ctx)[0])

/* Syscall numbers, to keep the events the audit rules' syscalls make. */
#if defined(__TARGET_ARCH_x86)
#define SYSCALL_NR(r) ((long)(r)->orig_ax)
static __always_inline __u8 syscall_of(long nr, bool compat)
{
	if (compat) {
		switch (nr) {
		case 11: return SC_EXECVE;
		case 358: return SC_EXECVEAT;
		case 2: return SC_FORK;
		case 190: return SC_VFORK;
		case 120: return SC_CLONE;
		case 435: return SC_CLONE3;
		case 37: return SC_KILL;
		case 238: return SC_TKILL;
		case 270: return SC_TGKILL;
		case 178: return SC_RT_SIGQUEUEINFO;
		case 335: return SC_RT_TGSIGQUEUEINFO;
		case 424: return SC_PIDFD_SEND_SIGNAL;
		case 1: return SC_EXIT;
		case 252: return SC_EXIT_GROUP;
		}
		return SC_NONE;
	}
	switch (nr) {
	case 59: return SC_EXECVE;
	case 322: return SC_EXECVEAT;
	case 57: return SC_FORK;
	case 58: return SC_VFORK;
	case 56: return SC_CLONE;
	case 435: return SC_CLONE3;
	case 62: return SC_KILL;
	case 200: return SC_TKILL;
	case 234: return SC_TGKILL;
	case 129: return SC_RT_SIGQUEUEINFO;
	case 297: return SC_RT_TGSIGQUEUEINFO;
	case 424: return SC_PIDFD_SEND_SIGNAL;
	case 60: return SC_EXIT;
	case 231: return SC_EXIT_GROUP;
	}
	return SC_NONE;
}

/* task comes from bpf_get_current_task_btf: a direct load. */
static __always_inline bool task_compat(struct task_struct *task)
{
	if (bpf_core_field_exists(task->thread_info.status))
		return task->thread_info.status & TS_COMPAT;
	return false;
}

/* The caller's syscall argument i (0..2). */
static __always_inline long syscall_arg(const struct pt_regs *r, int i, bool compat)
{
	if (compat)
		return (__s32)(i == 0 ? ARG0_32(r) : i == 1 ? ARG1_32(r) : ARG2_32(r));
	return i == 0 ? ARG0(r) : i == 1 ? ARG1(r) : ARG2(r);
}

/* The caller's pointer argument i (0..2): a 32-bit task's, zero-extended. */
static __always_inline unsigned long syscall_ptr(const struct pt_regs *r, int i, bool compat)
{
	if (compat)
		return i == 0 ? ARG0_32(r) : i == 1 ? ARG1_32(r) : ARG2_32(r);
	return i == 0 ? ARG0(r) : i == 1 ? ARG1(r) : ARG2(r);
}
#elif defined(__TARGET_ARCH_arm64)
#define SYSCALL_NR(r) ((long)(r)->syscallno)
static __always_inline __u8 syscall_of(long nr, bool compat)
{
	if (compat)
		return SC_NONE;
	switch (nr) {
	case 221: return SC_EXECVE;
	case 281: return SC_EXECVEAT;
	case 220: return SC_CLONE;
	case 435: return SC_CLONE3;
	case 129: return SC_KILL;
	case 130: return SC_TKILL;
	case 131: return SC_TGKILL;
	case 138: return SC_RT_SIGQUEUEINFO;
	case 240: return SC_RT_TGSIGQUEUEINFO;
	case 424: return SC_PIDFD_SEND_SIGNAL;
	case 93: return SC_EXIT;
	case 94: return SC_EXIT_GROUP;
	}
	return SC_NONE;
}

static __always_inline bool task_compat(struct task_struct *task)
{
	return false; /* aarch32 tasks are not traced */
}

static __always_inline long syscall_arg(const struct pt_regs *r, int i, bool compat)
{
	/* regs[0] is overwritten by the return value; orig_x0 keeps arg 0. */
	return i == 0 ? r->orig_x0 : i == 1 ? ARG1(r) : ARG2(r);
}

static __always_inline unsigned long syscall_ptr(const struct pt_regs *r, int i, bool compat)
{
	return syscall_arg(r, i, compat);
}
#endif

/* The syscall task (the current task) is in, and its saved user registers. */
static __always_inline __u8 current_syscall(struct task_struct___ident *task, const struct pt_regs **regs, bool *compat)
{
	*regs = (const struct pt_regs *)bpf_task_pt_regs((struct task_struct *)task);
	*compat = task_compat((struct task_struct *)task);
	return syscall_of(SYSCALL_NR(*regs), *compat);
}

/* The current task, for programs on BTF tracepoints. */
static __always_inline struct task_struct___ident *current_btf(void)
{
	return (struct task_struct___ident *)bpf_get_current_task_btf();
}

#endif /* TRACER_ARCH_H */
