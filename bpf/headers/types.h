/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/*
 * The record layouts user space decodes (tracer/bpfbackend/decode.go), the
 * counting-mode keys, the indexes of the shared counters, and the
 * constants user space sets before loading.
 */
#ifndef TRACER_TYPES_H
#define TRACER_TYPES_H

#include "kernel.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

/* Event classes: the values of tracer.EventType. */
enum event_type {
	EV_EXEC = 1,
	EV_FORK = 2,
	EV_SIGNAL = 3,
	EV_EXIT = 4,
	EV_MAX = 5,
	EV_THROTTLE = 5, /* a source over --rate-limit (struct throttle_event) */
};

/* Syscalls; decode.go names them. */
enum syscall_id {
	SC_NONE,
	SC_EXECVE,
	SC_EXECVEAT,
	SC_FORK,
	SC_VFORK,
	SC_CLONE,
	SC_CLONE3,
	SC_KILL,
	SC_TKILL,
	SC_TGKILL,
	SC_RT_SIGQUEUEINFO,
	SC_RT_TGSIGQUEUEINFO,
	SC_PIDFD_SEND_SIGNAL,
	SC_EXIT,
	SC_EXIT_GROUP,
};

/* event_hdr.flags */
#define EVF_COMPAT 1	   /* made by a 32-bit (ia32) syscall */
#define EVF_ARGV_TRUNC 2 /* argv had more than ARGC_MAX arguments, or one could not be read */
#define EVF_THR_PROCESS 4 /* throttle: the source is the process h.pid (root cgroup), not its cgroup */

/* Where records are lost, indexes of the lost map (tracer.LossStage differs). */
enum lost_index {
	LOST_OUTPUT = 0, /* ring buffer full: bpf_ringbuf_output / perf output failed */
	LOST_MAP = 1,	 /* a kernel map was full (in-flight execs, tracked set, counts) */
	LOST_MAX = 2,
};

/* Why an event was filtered in the kernel, indexes of the filtered map
 * (tracer.FilterReason, in the same order): runtime noise, then what a
 * selection (--uid, --comm, --exe, --auid-set) left out. */
enum filter_index {
	FILTER_PREEMPT = 0,   /* SIGURG a runtime sends to a thread of its own process (Go's preemption) */
	FILTER_EXISTENCE = 1, /* signal 0: an existence check, no signal is sent */
	FILTER_UID = 2,	      /* a real uid --uid does not name */
	FILTER_COMM = 3,      /* a comm --comm does not name */
	FILTER_EXE = 4,	      /* an exec of a program --exe does not name */
	FILTER_AUID = 5,      /* no login uid, with --auid-set */
	FILTER_MAX = 6,
};

#define SIGURG 23

#define COMM_LEN 16
#define TTY_LEN 16 /* bytes of the terminal's name kept, NUL included ("pts0"; the kernel's holds 64) */
#define FILENAME_MAX 256 /* bytes of the exec filename kept, NUL included */
#define ARGC_MAX 20	 /* arguments kept per exec */
#define ARG_MAX 128	 /* bytes kept per argument, NUL included */
#define ARGV_BYTES (ARGC_MAX * ARG_MAX)
#define PATH_DEPTH 32	 /* names kept of the cwd or program path (path.h) */
#define PATH_BYTES 4096	 /* bytes kept of each, the NULs included */
#define NAME_BYTES 256	 /* a name's most, NUL included (NAME_MAX + 1) */
#define DATA_MAX (FILENAME_MAX + ARGV_BYTES + 2 * PATH_BYTES)

struct event_hdr {
	__u64 ktime; /* CLOCK_MONOTONIC, see now_ns */
	__u32 pid;   /* tgid of the caller */
	__u32 uid;   /* real uid */
	__u32 auid;  /* loginuid */
	__u8 type;   /* enum event_type */
	__u8 syscall;
	__u8 flags;
	__u8 _pad;
	char comm[COMM_LEN];
	/* Who the process is and where it runs (fill_ident). */
	__u64 start;  /* the process's start_boottime, ns */
	__u64 pstart; /* its real parent's */
	__u64 cgid;   /* its cgroup v2 id */
	__u32 ppid;   /* its real parent's tgid */
	__u32 repeat; /* batched signal records: the record stands for 1 + repeat events (see struct batch) */
	/* The other credentials, the audit session and the controlling
	 * terminal, as audit's SYSCALL record has them (fill_creds). */
	__u32 gid, euid, suid, fsuid, egid, sgid, fsgid;
	__u32 ses;
	char tty[TTY_LEN]; /* NUL padded; "" without a terminal */
};

/* fork, signal and exit records. */
struct event {
	struct event_hdr h;
	__s32 a; /* fork: child pid; signal: target pid; exit: exit code */
	__s32 b; /* signal: signal number; exit: the killing signal */
	__s64 ret;
	/* signal: what the kernel said of it, and its target; exit: who killed the process */
	__s32 code;	      /* si_code (XF_CODE) */
	__u32 xpid;	      /* signal: the target's tgid; exit: the killer's */
	__u64 xstart;	      /* the start_boottime of xpid */
	char xcomm[COMM_LEN]; /* the comm of xpid */
	__u32 status;	      /* exit: the wait status */
	__u8 result;	      /* signal: TRACE_SIGNAL_* (XF_RESULT) */
	__u8 xflags;	      /* XF_* */
	__u8 xsyscall;	      /* exit: the syscall the killer used */
	__u8 _pad;
};

/* event.xflags */
#define XF_CODE 1    /* code is set */
#define XF_RESULT 2  /* result is set */
#define XF_KERNEL 4  /* signal: sent by the kernel; exit: the killer was the kernel */
#define XF_KILLED 8  /* exit: killed by signal b, status set */
#define XF_KILLER 16 /* exit: the killing signal was seen: code, xpid, xcomm, xsyscall */
#define XF_OOM 32    /* exit: the OOM killer chose the process */
#define XF_TARGET 64 /* signal: xpid, xstart and xcomm are the target's */

/* exec_event.pflags */
#define EXF_CWD_TRUNC 1 /* the walk of the cwd stopped before the root */
#define EXF_EXE_TRUNC 2 /* the walk of the new program's path did */

/* exec records: a fixed part, then filename\0, argv[0]\0argv[1]\0...,
 * the cwd's names and the new program's (path.h), leaf first. */
struct exec_event {
	struct event_hdr h;
	__u32 ppid;
	__u16 filename_size; /* bytes of data holding the filename, NUL included */
	__u16 argv_size;     /* bytes of data after it holding argc strings */
	__s64 ret;
	__u8 argc;
	__u8 pflags;	 /* EXF_* */
	__u16 cwd_size; /* bytes of data after argv holding the cwd's names */
	__u16 exe_size; /* bytes after those holding the new program's (successful exec) */
	__u8 _pad[2];
	char data[DATA_MAX];
};

/* An exec between syscall entry and exit (syscalls and fentry sets). */
struct exec_start {
	struct event_hdr h; /* comm before the exec, time of the call */
	__u32 ppid;
	__u32 _pad;
	__u64 filename; /* the caller's pointers */
	__u64 argv;
};

/*
 * A source of events went over --rate-limit (see rate_pass): the header is
 * the first process whose event the window left out, its time the window's
 * end. As long as a struct event, so that it travels as one.
 */
struct throttle_event {
	struct event_hdr h;
	__u64 wstart;	  /* the window: ktime ns */
	__u64 wend;
	__u64 dropped[4]; /* events left out in it: exec, fork, signal, exit */
	__u64 _pad;
};

_Static_assert(sizeof(struct throttle_event) == sizeof(struct event), "throttle_event travels as an event");
/* Only cast to: this puts its type in the object's BTF, for bpf2go. */
const struct throttle_event *unused_throttle_event __attribute__((unused));
_Static_assert(sizeof(struct event_hdr) == 120, "event_hdr layout");
_Static_assert(sizeof(struct event) == 176, "event layout");
_Static_assert(__builtin_offsetof(struct exec_event, data) == 144, "exec_event layout");

/* Counting-mode keys. */
struct exec_key {
	char comm[COMM_LEN];
	char filename[FILENAME_MAX];
};

struct comm_key {
	char comm[COMM_LEN];
};

struct signal_key {
	char comm[COMM_LEN];
	__s32 target;
	__s32 sig;
};

/* Set by user space before loading (frozen .rodata). */
const volatile __u8 cfg_count_only = 0;
const volatile __u8 cfg_types = 0xff;	    /* event classes, 1 << enum event_type */
const volatile __u8 cfg_perfbuf = 0;	    /* events is a perf event array, not a ring buffer */
const volatile __u8 cfg_batch = 0;	    /* batch signal records per CPU (batch.h) */
const volatile __u8 cfg_sig_all = 1;	    /* no signal filter */
const volatile __u64 cfg_sig_lo = 0;	    /* signals 0..63 */
const volatile __u64 cfg_sig_hi = 0;	    /* signal 64 */
const volatile __u8 cfg_comm_on = 0;	    /* --comm: 1 one comm (cfg_comm_lo/hi), 2 several (the comms map) */
const volatile __u64 cfg_comm_lo = 0;	    /* the one comm, as two words, NUL padded */
const volatile __u64 cfg_comm_hi = 0;
const volatile __u8 cfg_uid_on = 0;	    /* --uid: the uids map */
const volatile __u8 cfg_auid_set = 0;	    /* --auid-set: only processes with a login uid */
const volatile __u32 cfg_exe_len = 0;	    /* --exe: the length of cfg_exe (0: no filter) */
const volatile char cfg_exe[FILENAME_MAX] = {}; /* --exe's last path element */
const volatile __u64 cfg_wake_bytes = 1 << 20; /* wake the reader once this much is queued */
const volatile __u64 cfg_wake_interval_ns = 5000000; /* wake it at most this often (0: only past cfg_wake_bytes) */
const volatile __u8 cfg_sig_sched = 1;	    /* signal_generate reports the signal syscalls' signals too (sched set) */
const volatile __u64 cfg_cgroup_id = 0;	    /* keep only this cgroup v2 and its descendants (0: all) */
const volatile __u32 cfg_cgroup_level = 0;  /* its depth below the root */
const volatile __u32 cfg_self_tgid = 0;	    /* tracer itself: never an event */
const volatile __u8 cfg_keep_preempt = 0;   /* report runtime preemption SIGURGs (--signal URG or all) */
const volatile __u8 cfg_keep_existence = 0; /* report signal 0 (--signal 0 or all) */
const volatile __u8 cfg_exec_failures = 0;  /* report failed exec attempts (--exec-failures) */
const volatile __u32 cfg_rate_limit = 0;    /* --rate-limit: events a second per source (0: none) */

#define barrier() asm volatile("" ::: "memory")

#endif /* TRACER_TYPES_H */
