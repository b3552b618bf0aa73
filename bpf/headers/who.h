/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/*
 * Kernel types for process identity, cgroups, signal dispositions and exit
 * status. The ___who suffix keeps them apart from kernel.h's types of the
 * same name; CO-RE ignores it, so their fields are relocated against the
 * running kernel's structs all the same.
 */
#ifndef TRACER_WHO_H
#define TRACER_WHO_H

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct kernfs_node___who {
	__u64 id;
};

struct cgroup___who {
	int level;
	struct kernfs_node___who *kn;
	struct cgroup___who *ancestors[];
};

struct css_set___who {
	struct cgroup___who *dfl_cgrp;
};

struct sigaction___who {
	void *sa_handler;
};

struct k_sigaction___who {
	struct sigaction___who sa;
};

struct sighand_struct___who {
	struct k_sigaction___who action[64];
};

struct signal_struct___who {
	atomic_t live;
	int group_exit_code;
	unsigned int flags;
};

struct cred___who {
	kuid_t uid;
};

struct task_struct___who {
	int pid;
	int tgid;
	int exit_code;
	__u64 start_boottime;
	struct task_struct___who *real_parent;
	struct task_struct___who *group_leader;
	struct signal_struct___who *signal;
	struct sighand_struct___who *sighand;
	struct css_set___who *cgroups;
	const struct cred___who *real_cred;
	const struct cred___who *cred;
	kuid_t loginuid;
	char comm[16];
};

#pragma clang attribute pop

/* UAPI linux/bpf.h, beyond kernel.h's. */
#define BPF_MAP_TYPE_LRU_HASH 9

/* signal_struct.flags: the process is exiting as a group (kernel/signal.h). */
#define SIGNAL_GROUP_EXIT 0x00000004

#endif /* TRACER_WHO_H */
