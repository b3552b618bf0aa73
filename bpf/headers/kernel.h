/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/*
 * The few kernel types and UAPI constants the tracer's BPF programs use,
 * written by hand instead of a generated vmlinux.h. Every struct carries
 * preserve_access_index, so field offsets are relocated at load time
 * against the running kernel's BTF (CO-RE): only the names of the fields
 * read here must exist, not their layout.
 */
#ifndef TRACER_KERNEL_H
#define TRACER_KERNEL_H

typedef signed char __s8;
typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
#define true 1
#define false 0

/* UAPI constants from linux/bpf.h. */
enum {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERF_EVENT_ARRAY = 4,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_RINGBUF = 27,
};
enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
};
#define BPF_F_CURRENT_CPU 0xffffffffULL
enum {
	BPF_RB_NO_WAKEUP = 1,
	BPF_RB_FORCE_WAKEUP = 2,
};
enum {
	BPF_RB_AVAIL_DATA = 0,
};

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

typedef struct {
	__u32 val;
} kuid_t;

typedef struct {
	__u32 val;
} kgid_t;

typedef struct {
	int counter;
} atomic_t;

struct signal_struct {
	atomic_t live;
};

struct inode {
	void *i_private;
};

struct file {
	struct inode *f_inode;
	void *private_data;
};

struct fdtable {
	unsigned int max_fds;
	struct file **fd;
};

struct files_struct {
	struct fdtable *fdt;
};

struct upid {
	int nr;
};

struct pid {
	unsigned int level;
	struct upid numbers[1];
};

struct mm_struct {
	unsigned long start_stack;
	unsigned long arg_start;
	unsigned long arg_end;
	unsigned long env_end;
};

struct linux_binprm {
	int argc;
	const char *filename;
};

struct thread_info {
	__u32 status;
};

struct task_struct {
	struct thread_info thread_info;
	int pid;
	int tgid;
	struct task_struct *real_parent;
	struct pid *thread_pid;
	struct mm_struct *mm;
	struct files_struct *files;
	struct signal_struct *signal;
	kuid_t loginuid;
	char comm[16];
};

#if defined(__TARGET_ARCH_x86)
struct pt_regs {
	unsigned long bp;
	unsigned long bx;
	unsigned long r10;
	unsigned long r8;
	unsigned long ax;
	unsigned long cx;
	unsigned long dx;
	unsigned long si;
	unsigned long di;
	unsigned long orig_ax;
};
#define TS_COMPAT 0x0002
#elif defined(__TARGET_ARCH_arm64)
struct pt_regs {
	unsigned long long regs[31];
	unsigned long long orig_x0;
	int syscallno;
};
#else
#error "tracer: unsupported target architecture (amd64 and arm64 are supported)"
#endif

#pragma clang attribute pop

#endif /* TRACER_KERNEL_H */
