/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/*
 * Exec records: at the syscalls (entry and exit, for the syscalls and
 * fentry sets) or at sched_process_exec (the sched set), with the comm
 * before the exec, the filename and argv.
 */
#ifndef TRACER_EXEC_H
#define TRACER_EXEC_H

#include "output.h"
#include "filter.h"
#include "ratelimit.h"
#include "arch.h"
#include "path.h"

/* Exec records between syscall entry and exit, keyed by task pointer (the
 * task keeps its task_struct across exec, but not its pid when a non-leader
 * thread execs). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct exec_start);
} execs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct exec_event);
} exec_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct exec_key);
} key_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct exec_key);
	__type(value, __u64);
} exec_counts SEC(".maps");

static __always_inline void exec_count(const char *comm, const char *filename, bool kernel)
{
	__u32 zero = 0;
	struct exec_key *k = bpf_map_lookup_elem(&key_scratch, &zero);
	if (!k)
		return;
	__builtin_memset(k, 0, sizeof(*k));
	__builtin_memcpy(k->comm, comm, COMM_LEN);
	if (kernel)
		bpf_probe_read_kernel_str(k->filename, sizeof(k->filename), filename);
	else
		bpf_probe_read_user_str(k->filename, sizeof(k->filename), filename);
	count_key(&exec_counts, k);
	total_inc(EV_EXEC);
}

/* Reads argv[i] as a user pointer; compat tasks have 32-bit pointers. */
static __always_inline const char *argv_at(const void *argv, int i, bool compat)
{
	if (compat) {
		__u32 p = 0;
		if (bpf_probe_read_user(&p, sizeof(p), (const __u32 *)argv + i))
			return NULL;
		return (const char *)(unsigned long)p;
	}
	const char *p = NULL;
	if (bpf_probe_read_user(&p, sizeof(p), (const char *const *)argv + i))
		return NULL;
	return p;
}

/* Stores the filename at the start of e->data; returns its size, NUL included. */
static __always_inline __u32 exec_filename(struct exec_event *e, const char *filename, bool kernel)
{
	long n = kernel ? bpf_probe_read_kernel_str(e->data, FILENAME_MAX, filename)
			: bpf_probe_read_user_str(e->data, FILENAME_MAX, filename);
	if (n <= 0) {
		e->data[0] = 0;
		n = 1;
	}
	__u32 pos = n & (FILENAME_MAX * 2 - 1);
	return pos > FILENAME_MAX ? FILENAME_MAX : pos;
}

/*
 * --exe: whether the filename at the start of e->data (size bytes, NUL
 * included) may be the program --exe names: its last element is cfg_exe.
 * User space then matches the whole path (tracer.MatchExe); a name that
 * ends in '/' or '.' is left to it, as its cleaned path may still match.
 */
static __always_inline bool pass_exe(const struct exec_event *e, __u32 size)
{
	__u32 l = cfg_exe_len;
	if (!l)
		return true;
	if (size < 2 || size > FILENAME_MAX)
		return filter_count(FILTER_EXE);
	__u32 n = size - 1; /* the name's length */
	char last = e->data[(n - 1) & (FILENAME_MAX - 1)];
	if (last == '/' || last == '.')
		return true;
	if (n < l || l >= FILENAME_MAX || (n > l && e->data[(n - l - 1) & (FILENAME_MAX - 1)] != '/'))
		return filter_count(FILTER_EXE);
	__u32 off = n - l;
	for (__u32 i = 0; i < FILENAME_MAX - 1; i++) {
		if (i >= l)
			return true;
		if (e->data[(off + i) & (FILENAME_MAX - 1)] != cfg_exe[i])
			return filter_count(FILTER_EXE);
	}
	return true;
}

/*
 * After a successful exec, from the new image's argument area: argv
 * strings from mm->arg_start, the filename as passed (AT_EXECFN) after the
 * environment at mm->env_end, argc at the bottom of the stack. The exec
 * has just written all of it, so it is resident: reading the caller's
 * memory instead may fault (a forked child's untouched pages).
 */
static __always_inline __u32 exec_image_filename(struct exec_event *e, const char *kfilename)
{
	if (kfilename)
		return exec_filename(e, kfilename, true);
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	return exec_filename(e, (const char *)BPF_CORE_READ(task, mm, env_end), false);
}

/* The argv after the filename exec_image_filename stored (pos bytes). */
static __always_inline __u32 exec_image(struct exec_event *e, __u32 pos)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct mm_struct *mm = BPF_CORE_READ(task, mm);
	unsigned long start = BPF_CORE_READ(mm, arg_start), end = BPF_CORE_READ(mm, arg_end);
	__u32 len = 0;
	if (end > start) {
		len = end - start;
		if (len > ARGV_BYTES) {
			len = ARGV_BYTES;
			e->h.flags |= EVF_ARGV_TRUNC;
		}
		/* clang may test a copy of len: 6.1's verifier does not carry a
		 * test to the register a 32-bit move copied before it. Bound
		 * the register the read gets. */
		asm volatile("if %[l] <= %[max] goto +1; %[l] = %[max]" : [l] "+r"(len) : [max] "i"(ARGV_BYTES));
		if (bpf_probe_read_user(&e->data[pos], len, (const void *)start))
			len = 0;
	}
	__u64 argc = 0;
	bpf_probe_read_user(&argc, sizeof(argc), (const void *)BPF_CORE_READ(mm, start_stack));
	e->argc = argc > 255 ? 255 : argc;
	e->filename_size = pos;
	e->argv_size = len;
	return pos + len;
}

/* After a failed exec, from the caller's memory, which is still there:
 * the argv after the filename exec_filename stored (pos bytes). */
static __always_inline __u32 exec_args(struct exec_event *e, __u32 pos, const void *argv, bool compat)
{
	__u32 start = pos;
	__u8 argc = 0;
#pragma unroll
	for (int i = 0; i < ARGC_MAX; i++) {
		const char *arg = argv_at(argv, i, compat);
		if (!arg)
			goto done;
		if (pos > DATA_MAX - ARG_MAX)
			goto trunc;
		long n = bpf_probe_read_user_str(&e->data[pos], ARG_MAX, arg);
		if (n <= 0)
			goto trunc;
		pos += n;
		argc++;
	}
	if (!argv_at(argv, ARGC_MAX, compat))
		goto done;
trunc:
	e->h.flags |= EVF_ARGV_TRUNC;
done:
	e->filename_size = start;
	e->argv_size = pos - start;
	e->argc = argc;
	return pos;
}

/*
 * At syscall entry: the comm before the exec replaces it, and where the
 * filename and argv are; the exit probe reads them once it knows whether
 * the exec succeeded.
 */
static __always_inline int exec_enter(const char *filename, const void *argv, bool compat, __u8 sc)
{
	union comm comm;
	__u32 tgid;
	if (!pass_current(NULL, &tgid, &comm))
		return 0;
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct exec_start st;
	fill_hdr(&st.h, EV_EXEC, sc, tgid, comm.c, now_ns(), NULL);
	st.h.flags = compat ? EVF_COMPAT : 0;
	st.ppid = BPF_CORE_READ(task, real_parent, tgid);
	st._pad = 0;
	st.filename = (__u64)filename;
	st.argv = (__u64)argv;
	__u64 key = (__u64)task;
	if (bpf_map_update_elem(&execs, &key, &st, BPF_ANY))
		lost_inc(LOST_MAP);
	return 0;
}

static __always_inline int exec_exit(void *ctx, long ret)
{
	__u32 zero = 0;
	__u64 key = bpf_get_current_task();
	struct exec_start *st = bpf_map_lookup_elem(&execs, &key);
	if (!st)
		return 0;
	if (ret != 0 && !cfg_exec_failures)
		goto out; /* a failed attempt (a PATH search): only with --exec-failures */
	struct exec_event *e = bpf_map_lookup_elem(&exec_scratch, &zero);
	if (!e)
		goto out;
	if (cfg_count_only) {
		const char *filename = (const char *)st->filename;
		if (ret == 0)
			filename = (const char *)BPF_CORE_READ((struct task_struct *)key, mm, env_end);
		exec_count(st->h.comm, filename, false);
		goto out;
	}
	__u32 pos = ret == 0 ? exec_image_filename(e, NULL) : exec_filename(e, (const char *)st->filename, false);
	if (!pass_exe(e, pos))
		goto out;
	__u64 now = now_ns();
	/* In the window of the event's time, its call's. */
	if (cfg_rate_limit && !rate_pass(ctx, NULL, st->h.pid, st->h.comm, EV_EXEC, st->h.ktime))
		goto out;
	__builtin_memcpy(&e->h, &st->h, sizeof(e->h));
	/* The ids after the exec, as audit logs them at the syscall's exit
	 * and the sched set reads them: a setuid program's are new. */
	fill_creds_current(&e->h);
	e->ppid = st->ppid;
	e->ret = ret;
	__u32 size = ret == 0 ? exec_image(e, pos) : exec_args(e, pos, (const void *)st->argv, st->h.flags & EVF_COMPAT);
	size = exec_paths(e, size, ret == 0);
	if (size > DATA_MAX)
		size = DATA_MAX;
	output(ctx, e, __builtin_offsetof(struct exec_event, data) + size, now);
out:
	bpf_map_delete_elem(&execs, &key);
	return 0;
}

/* The comm of tasks in exec, before the exec replaces it (the exec
 * tracepoint only sees the new one), keyed by task pointer. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct comm_key);
} exec_comm SEC(".maps");

static __always_inline int stash_comm(void)
{
	struct comm_key c;
	bpf_get_current_comm(c.comm, sizeof(c.comm));
	__u64 key = bpf_get_current_task();
	if (bpf_map_update_elem(&exec_comm, &key, &c, BPF_ANY))
		lost_inc(LOST_MAP);
	return 0;
}


/*
 * A successful exec: filename from the binprm, argv from the new image's
 * argument area (the strings as passed, copied there by the exec).
 */
static __always_inline int exec_sched(__u64 *ctx)
{
	struct linux_binprm *bprm = (struct linux_binprm *)ctx[2];
	__u32 zero = 0, tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 key = bpf_get_current_task();
	struct comm_key *old = bpf_map_lookup_elem(&exec_comm, &key);
	struct exec_event *e = bpf_map_lookup_elem(&exec_scratch, &zero);
	union comm comm;
	if (!e)
		goto out;
	if (old)
		__builtin_memcpy(comm.c, old->comm, COMM_LEN);
	else
		bpf_get_current_comm(comm.c, COMM_LEN);
	struct task_struct___ident *cur = current_btf();
	if (!pass_pid(tgid) || !pass_comm(comm.c) || !pass_current_ids(cur) || !pass_cgroup((void *)key))
		goto out;
	const char *filename = BPF_CORE_READ(bprm, filename);
	if (cfg_count_only) {
		exec_count(comm.c, filename, true);
		goto out;
	}

	__u32 pos = exec_image_filename(e, filename);
	if (!pass_exe(e, pos))
		goto out;
	const struct pt_regs *regs;
	bool compat;
	__u8 sc = current_syscall(cur, &regs, &compat);
	__u64 now = now_ns();
	if (cfg_rate_limit && !rate_pass(ctx, cur, tgid, comm.c, EV_EXEC, now))
		goto out;
	fill_hdr(&e->h, EV_EXEC, sc, tgid, comm.c, now, cur);
	e->h.flags = compat ? EVF_COMPAT : 0;
	struct task_struct *task = (struct task_struct *)key;
	e->ppid = BPF_CORE_READ(task, real_parent, tgid);
	e->ret = 0;

	__u32 size = exec_paths(e, exec_image(e, pos), true);
	if (size > DATA_MAX)
		size = DATA_MAX;
	output(ctx, e, __builtin_offsetof(struct exec_event, data) + size, now);
out:
	if (old)
		bpf_map_delete_elem(&exec_comm, &key);
	return 0;
}

#endif /* TRACER_EXEC_H */
