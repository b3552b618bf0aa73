/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/*
 * Paths at exec: the working directory (current->fs->pwd) and the new
 * program (current->mm->exe_file), as the names of the dentries from the
 * path's last element up to the root of the mount namespace, crossing
 * mounts through struct mount. bpf_d_path is not allowed on tracepoints.
 * The names go leaf first, each with its NUL ("bin\0usr\0"); user space
 * joins them in reverse (decode.go).
 */
#ifndef TRACER_PATH_H
#define TRACER_PATH_H

#include "types.h"

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct qstr {
	__u32 hash;
	__u32 len;
	const unsigned char *name;
};

struct dentry {
	struct dentry *d_parent;
	struct qstr d_name;
};

struct vfsmount {
	struct dentry *mnt_root;
};

struct mount {
	struct mount *mnt_parent;
	struct dentry *mnt_mountpoint;
	struct vfsmount mnt;
};

struct path {
	struct vfsmount *mnt;
	struct dentry *dentry;
};

struct fs_struct {
	struct path pwd;
};

struct file___path {
	struct path f_path;
};

struct mm_struct___path {
	struct file___path *exe_file;
};

struct task_struct___path {
	struct fs_struct *fs;
	struct mm_struct___path *mm;
};

#pragma clang attribute pop

/*
 * Steps of the walk: a name or a crossing to the parent mount each. A
 * path of more than PATH_DEPTH names, or PATH_BYTES bytes, or more
 * mounts than the steps leave, is cut: its names from the leaf are kept
 * and the record is flagged (EXF_CWD_TRUNC, EXF_EXE_TRUNC).
 */
#define PATH_STEPS (PATH_DEPTH + 8)

/*
 * The walk's state, per CPU: kept in a map value, not in registers, the
 * verifier does not know its values, so that the loop's iterations prune
 * to one state each, however their names and crossings mix (in registers
 * the two paths differ, and their states multiply).
 */
struct path_walk {
	__u64 d;     /* struct dentry * */
	__u64 m;     /* struct mount * */
	__u64 mroot; /* m's root dentry */
	__u32 used;  /* bytes stored */
	__u32 depth; /* names stored */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct path_walk);
} path_walks SEC(".maps");

/*
 * Stores the names of d (on vm) up to the root at e->data[start], leaf
 * first, and their size in *size; returns whether the walk reached the
 * root.
 */
static __always_inline bool path_names(struct exec_event *e, __u32 start, __u16 *size, struct dentry *d,
				       struct vfsmount *vm)
{
	__u32 zero = 0;
	*size = 0;
	struct path_walk *w = bpf_map_lookup_elem(&path_walks, &zero);
	if (!w)
		return false;
	if (!d || !vm || start > DATA_MAX)
		return false; /* unknown, not the root */
	w->d = (__u64)d;
	w->m = (__u64)((void *)vm - bpf_core_field_offset(struct mount, mnt));
	w->mroot = (__u64)BPF_CORE_READ(vm, mnt_root);
	w->used = 0;
	w->depth = 0;
	for (int i = 0; i < PATH_STEPS; i++) {
		struct dentry *cur = (void *)w->d;
		struct mount *m = (void *)w->m;
		struct dentry *parent = BPF_CORE_READ(cur, d_parent);
		if (w->d == w->mroot || cur == parent) {
			struct mount *mp = BPF_CORE_READ(m, mnt_parent);
			if (!mp || mp == m)
				return true;
			w->d = (__u64)BPF_CORE_READ(m, mnt_mountpoint);
			w->m = (__u64)mp;
			w->mroot = (__u64)BPF_CORE_READ(mp, mnt.mnt_root);
			continue;
		}
		__u32 len = BPF_CORE_READ(cur, d_name.len);
		__u32 used = w->used;
		__u32 pos = start + used;
		if (w->depth >= PATH_DEPTH || len >= NAME_BYTES || used + len + 1 > PATH_BYTES || pos > DATA_MAX - NAME_BYTES)
			return false;
		/* Bound the register the read gets (clang may test a copy; 6.1's
		 * verifier does not carry the test over, as in exec_image). */
		asm volatile("if %[p] <= %[max] goto +1; %[p] = %[max]" : [p] "+r"(pos) : [max] "i"(DATA_MAX - NAME_BYTES));
		const unsigned char *name = BPF_CORE_READ(cur, d_name.name);
		long n = bpf_probe_read_kernel_str(&e->data[pos], (len + 1) & (NAME_BYTES * 2 - 1), name);
		if (n <= 0)
			return false;
		w->used = used + n;
		*size = used + n;
		w->depth++;
		w->d = (__u64)parent;
	}
	return false;
}

/* The working directory and, after a successful exec, the new program,
 * after the record's argv (size bytes of data); returns the new size. */
static __always_inline __u32 exec_paths(struct exec_event *e, __u32 size, bool ok)
{
	struct task_struct___path *task = (void *)bpf_get_current_task();
	e->cwd_size = 0;
	e->exe_size = 0;
	e->pflags = 0;
	/* With --exe the syscall set's exit program matches the filename in
	 * a loop of its own: both together pass the verifier's million
	 * instructions. cfg_exe_len is a load-time constant, so the verifier
	 * drops one of the two; user space reads /proc/PID/exe instead. */
	if (size > DATA_MAX || cfg_exe_len)
		return size;
	struct fs_struct *fs = BPF_CORE_READ(task, fs);
	if (fs && !path_names(e, size, &e->cwd_size, BPF_CORE_READ(fs, pwd.dentry), BPF_CORE_READ(fs, pwd.mnt)))
		e->pflags |= EXF_CWD_TRUNC;
	__u32 cwd = e->cwd_size;
	if (cwd > PATH_BYTES)
		return size;
	size += cwd;
	if (!ok)
		return size;
	struct file___path *f = BPF_CORE_READ(task, mm, exe_file);
	if (f && !path_names(e, size, &e->exe_size, BPF_CORE_READ(f, f_path.dentry), BPF_CORE_READ(f, f_path.mnt)))
		e->pflags |= EXF_EXE_TRUNC;
	__u32 exe = e->exe_size;
	if (exe > PATH_BYTES)
		return size;
	return size + exe;
}

#endif /* TRACER_PATH_H */
