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
 * The record layouts below are decoded by tracer/bpfbackend/decode.go.
 */
#include "headers/kernel.h"
#include "headers/who.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

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

/* Why an event was filtered as runtime noise, indexes of the filtered map
 * (tracer.FilterReason, in the same order). */
enum filter_index {
	FILTER_PREEMPT = 0,   /* SIGURG a runtime sends to a thread of its own process (Go's preemption) */
	FILTER_EXISTENCE = 1, /* signal 0: an existence check, no signal is sent */
	FILTER_MAX = 2,
};

#define SIGURG 23

#define COMM_LEN 16
#define FILENAME_MAX 256 /* bytes of the exec filename kept, NUL included */
#define ARGC_MAX 20	 /* arguments kept per exec */
#define ARG_MAX 128	 /* bytes kept per argument, NUL included */
#define DATA_MAX (FILENAME_MAX + ARGC_MAX * ARG_MAX)

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

/* exec records: a fixed part, then filename\0 and argv[0]\0argv[1]\0... */
struct exec_event {
	struct event_hdr h;
	__u32 ppid;
	__u16 filename_size; /* bytes of data holding the filename, NUL included */
	__u16 argv_size;     /* bytes of data after it holding argc strings */
	__s64 ret;
	__u8 argc;
	__u8 _pad[7];
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
_Static_assert(sizeof(struct event_hdr) == 72, "event_hdr layout");
_Static_assert(sizeof(struct event) == 128, "event layout");
_Static_assert(__builtin_offsetof(struct exec_event, data) == 96, "exec_event layout");

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
const volatile __u8 cfg_perfbuf = 0;
const volatile __u8 cfg_batch = 0;	    /* batch signal records per CPU (see on_signal) */
const volatile __u8 cfg_coarse = 0;	    /* bpf_ktime_get_coarse_ns exists */	    /* events is a perf event array, not a ring buffer */
const volatile __u8 cfg_sig_all = 1;	    /* no signal filter */
const volatile __u64 cfg_sig_lo = 0;	    /* signals 0..63 */
const volatile __u64 cfg_sig_hi = 0;	    /* signal 64 */
const volatile __u8 cfg_comm_on = 0;	    /* comm filter */
const volatile __u64 cfg_comm_lo = 0;	    /* the comm, as two words, NUL padded */
const volatile __u64 cfg_comm_hi = 0;
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

/* When the reader was last woken (ktime): see wake_flags. */
__u64 last_wake = 0;
__u64 last_fill_check = 0;

#define barrier() asm volatile("" ::: "memory")

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps");

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

/* Exec records between syscall entry and exit, keyed by task pointer (the
 * task keeps its task_struct across exec, but not its pid when a non-leader
 * thread execs). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct exec_start);
} execs SEC(".maps");

/* Signal records between sys_enter and sys_exit (syscalls probe set). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct event);
} pending SEC(".maps");

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

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct comm_key);
	__type(value, __u64);
} fork_counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct signal_key);
	__type(value, __u64);
} signal_counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EV_MAX);
	__type(key, __u32);
	__type(value, __u64);
} totals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LOST_MAX);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FILTER_MAX);
	__type(key, __u32);
	__type(value, __u64);
} filtered SEC(".maps");

/* The last fatal signal sent to a process that will die of it, keyed by
 * its tgid, until its exit record takes it (see note_killer). */
struct killer {
	__u64 tstart; /* the target's start_boottime: the entry is for this process only */
	__u64 start;  /* the sender's */
	__u32 pid;    /* the sender's tgid (0: the kernel) */
	__s32 code;
	__u8 sig;
	__u8 syscall;
	__u8 kernel;
	__u8 _pad[5];
	char comm[COMM_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, struct killer);
} killers SEC(".maps");

/* Processes the OOM killer chose: tgid -> start_boottime. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} oom_victims SEC(".maps");

static __always_inline void lost_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&lost, &idx);
	if (v)
		*v += 1;
}

static __always_inline void lost_add(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&lost, &idx);
	if (v)
		*v += n;
}

static __always_inline void total_inc(__u32 type)
{
	__u64 *v = bpf_map_lookup_elem(&totals, &type);
	if (v)
		*v += 1;
}

static __always_inline void count_key(void *map, const void *key)
{
	__u64 *v = bpf_map_lookup_elem(map, key);
	if (v) {
		__sync_fetch_and_add(v, 1);
		return;
	}
	__u64 one = 1;
	if (bpf_map_update_elem(map, key, &one, BPF_NOEXIST) == 0)
		return;
	/* Another CPU inserted the key first, or the map is full. */
	v = bpf_map_lookup_elem(map, key);
	if (v)
		__sync_fetch_and_add(v, 1);
	else
		lost_inc(LOST_MAP);
}

/*
 * Every ring buffer submit and output takes its flags from here. Wake the
 * reader at most every cfg_wake_interval_ns, or once per tick while more
 * than cfg_wake_bytes wait. Waking it for every record (the ring buffer's
 * default when the reader keeps up) costs the producing task an irq_work
 * and a remote wakeup per event, more than the rest of the program; the
 * reader also polls on a timer (--max-delay), so records committed without
 * a wakeup are read soon anyway. With cfg_wake_interval_ns 0 (--max-delay
 * set) the timer alone bounds the delay, and only the fill level wakes the
 * reader: a storm wakes it at a quarter of the ring, long before the ring
 * fills because it slept.
 */
static __always_inline __u64 wake_flags(__u64 now)
{
	if (cfg_wake_interval_ns && now - last_wake > cfg_wake_interval_ns) {
		last_wake = now;
		return BPF_RB_FORCE_WAKEUP;
	}
	/* The fill level reads the reader's position, a cache line the
	 * reader writes: at most once per tick. */
	if (now != last_fill_check) {
		last_fill_check = now;
		if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > cfg_wake_bytes) {
			last_wake = now;
			return BPF_RB_FORCE_WAKEUP;
		}
	}
	return BPF_RB_NO_WAKEUP;
}

/* The time read at the first event of the current jiffy on this CPU. */
struct tick_time {
	__u64 jiffies;
	__u64 ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tick_time);
} tick SEC(".maps");

/*
 * Event time, CLOCK_MONOTONIC to the scheduler tick (1 to 10 ms; audit's
 * timestamps are no finer). Reading the clock source costs more than the
 * rest of a record in a VM (kvm-clock), and the coarse clock is not
 * available to tracing programs: read it once per tick and CPU.
 */
static __always_inline __u64 now_ns(void)
{
	__u32 zero = 0;
	__u64 j = bpf_jiffies64();
	struct tick_time *t = bpf_map_lookup_elem(&tick, &zero);
	if (!t)
		return bpf_ktime_get_ns();
	if (t->jiffies != j) {
		t->ns = bpf_ktime_get_ns();
		t->jiffies = j;
	}
	return t->ns;
}

/* Per-CPU room for a record when events go through a perf event array. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct event);
} ev_scratch SEC(".maps");

/*
 * Signal records batched per CPU. Reserving and committing a ring buffer
 * record (a lock and an atomic exchange on lines the reader shares) costs
 * more than the rest of a signal record; in a storm, records after the
 * first of a tick wait here and go to the ring together, in one record,
 * when the batch is full, at the next record of a later tick, before any
 * record this CPU sends directly (keeping the CPU's order), when a task
 * leaves the CPU (switch_flush: keeping each task's order), or when user
 * space runs flush_batch on the CPU (every poll interval, and at the end).
 * A record equal to the last one in the batch (the same sender, target,
 * signal and result in the same tick: a kill loop) is not written again:
 * the last one's repeat count grows, so a storm costs the ring a record
 * per tick, not one per signal. busy marks a program between its first
 * and last access: one that interrupts it (an IRQ, a preempting task)
 * sends its record directly.
 */
#define BATCH_BYTES 4096
#define REPEAT_MAX 0xffff /* decode.go's maxRepeat */

/*
 * What makes a signal from signal_generate the same event as the last one
 * batched, read off the sender and the target with few loads: a thread is
 * its pid and start time (the group leader, and so tgid and exec id,
 * change only with the pid, in an exec), the parent the same, the
 * credentials their uid, the cgroup its id. A match costs a compare
 * instead of a record (sched_signal).
 */
struct repeat_key {
	__u64 start, pstart, cgid, tstart;
	__u64 comm[2], tcomm[2];
	__s32 pid, ppid, tid, tpid, sig, code;
	__u32 uid, auid;
	__u8 sc, compat, result, _pad;
	__u32 valid; /* the key is the batch's last record's */
};

struct batch {
	__u32 len;
	__u32 busy;
	__u64 tick;   /* now_ns() of the last signal record on this CPU */
	__u32 events; /* the events the batch holds: its records and their repeats */
	__u32 _pad;
	struct repeat_key last;
	/* The saved user registers of the last task that sent a signal on
	 * this CPU, by its pid and start time (see signal_syscall). */
	__s32 regs_pid;
	__u32 _pad2;
	__u64 regs_start;
	__u64 regs;
	char buf[BATCH_BYTES];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct batch);
} batches SEC(".maps");

static __always_inline void batch_flush(struct batch *b, __u64 now)
{
	__u32 len = b->len;
	if (len > BATCH_BYTES)
		len = BATCH_BYTES;
	if (len && bpf_ringbuf_output(&events, b->buf, len, wake_flags(now)))
		lost_add(LOST_OUTPUT, b->events);
	b->len = 0;
	b->events = 0;
	b->last.valid = 0;
}

/* Sends what this CPU batched, unless a program it interrupted is batching. */
static __always_inline void batch_drain(__u64 now)
{
	__u32 zero = 0;
	if (!cfg_batch)
		return;
	struct batch *b = bpf_map_lookup_elem(&batches, &zero);
	if (!b || b->busy || !b->len)
		return;
	b->busy = 1;
	barrier();
	batch_flush(b, now);
	barrier();
	b->busy = 0;
}

/* Room for one fork, signal or exit record: in the ring buffer itself, or
 * per-CPU scratch for the perf event array. NULL: the ring is full. */
static __always_inline struct event *ev_reserve(__u64 now)
{
	if (cfg_perfbuf) {
		__u32 zero = 0;
		return bpf_map_lookup_elem(&ev_scratch, &zero);
	}
	batch_drain(now);
	return bpf_ringbuf_reserve(&events, sizeof(struct event), 0);
}

static __always_inline void ev_submit(void *ctx, struct event *ev, __u64 now)
{
	if (cfg_perfbuf) {
		if (bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, ev, sizeof(*ev)))
			lost_inc(LOST_OUTPUT);
		return;
	}
	bpf_ringbuf_submit(ev, wake_flags(now));
}

static __always_inline void output(void *ctx, void *data, __u64 size, __u64 now)
{
	long err;
	batch_drain(now);
	if (cfg_perfbuf)
		err = bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, data, size);
	else
		err = bpf_ringbuf_output(&events, data, size, wake_flags(now));
	if (err)
		lost_inc(LOST_OUTPUT);
}

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

static __always_inline bool pass_comm(const char *comm)
{
	if (!cfg_comm_on)
		return true;
	const __u64 *w = (const __u64 *)comm;
	return w[0] == cfg_comm_lo && w[1] == cfg_comm_hi;
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
	__u32 idx;
	if (sig == 0 && !cfg_keep_existence)
		idx = FILTER_EXISTENCE;
	else if (sig == SIGURG && !cfg_keep_preempt && ttgid == sender &&
		 (sc == SC_TGKILL || sc == SC_TKILL || sc == SC_RT_TGSIGQUEUEINFO))
		idx = FILTER_PREEMPT;
	else
		return false;
	__u64 *v = bpf_map_lookup_elem(&filtered, &idx);
	if (v)
		*v += 1;
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

/*
 * Programs on BTF tracepoints pass the current task (task != NULL), got
 * once with bpf_get_current_task_btf, and read it with direct loads: a
 * helper call costs about 30 ns in a VM whose kernel returns through
 * return thunks, more than the loads it replaces, and a signal record
 * took seven. The other programs (task == NULL) use the helpers and
 * probe reads.
 */

static __always_inline __u32 current_auid(struct task_struct___who *task)
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
static __always_inline void fill_ident(struct event_hdr *h, struct task_struct___who *task)
{
	if (task) {
		struct task_struct___who *p = task->real_parent;
		h->start = task->group_leader->start_boottime;
		h->ppid = p->tgid;
		h->pstart = p->group_leader->start_boottime;
		h->cgid = task->cgroups->dfl_cgrp->kn->id;
	} else {
		struct task_struct___who *t = (void *)bpf_get_current_task();
		h->start = BPF_CORE_READ(t, group_leader, start_boottime);
		h->ppid = BPF_CORE_READ(t, real_parent, tgid);
		h->pstart = BPF_CORE_READ(t, real_parent, group_leader, start_boottime);
		h->cgid = bpf_get_current_cgroup_id();
	}
	h->repeat = 0;
}

/* Fills a record's header; comm was read by pass_current. The uid is the
 * current (subjective) credentials' real uid, as bpf_get_current_uid_gid
 * gives it. */
static __always_inline void fill_hdr(struct event_hdr *h, __u8 type, __u8 sc, __u32 tgid, const char *comm, __u64 now,
				     struct task_struct___who *task)
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
static __always_inline void task_comm(struct task_struct___who *task, union comm *c)
{
	bool nul = false;
	__builtin_memcpy(c->c, task->comm, COMM_LEN);
	c->w[0] = before_nul(c->w[0], &nul);
	c->w[1] = nul ? 0 : before_nul(c->w[1] & 0x00ffffffffffffffULL, &nul);
}

/* Whether task is in cfg_cgroup_id or below it: its cgroup's ancestor at
 * that level is that cgroup (the test bpftrace's cgroup predicate makes). */
static __always_inline bool pass_cgroup(struct task_struct___who *task)
{
	if (!cfg_cgroup_id)
		return true;
	struct cgroup___who *cg = BPF_CORE_READ(task, cgroups, dfl_cgrp);
	if (!cg || BPF_CORE_READ(cg, level) < (int)cfg_cgroup_level || cfg_cgroup_level > 255)
		return false;
	struct cgroup___who *anc = NULL;
	bpf_probe_read_kernel(&anc, sizeof(anc),
			      (void *)cg + bpf_core_field_offset(struct cgroup___who, ancestors) +
				      cfg_cgroup_level * sizeof(void *));
	return anc && BPF_CORE_READ(anc, kn, id) == cfg_cgroup_id;
}

/* The process-tree, comm and cgroup filters, in order of cost; fills tgid and comm. */
static __always_inline bool pass_current(struct task_struct___who *task, __u32 *tgid, union comm *comm)
{
	if (task) {
		*tgid = task->tgid;
		if (*tgid == cfg_self_tgid || !pass_pid(*tgid))
			return false;
		task_comm(task, comm);
		return pass_comm(comm->c) && pass_cgroup(task);
	}
	*tgid = bpf_get_current_pid_tgid() >> 32;
	if (*tgid == cfg_self_tgid || !pass_pid(*tgid))
		return false;
	bpf_get_current_comm(comm->c, COMM_LEN);
	/* The task is fetched only when the cgroup filter is on. */
	return pass_comm(comm->c) && (!cfg_cgroup_id || pass_cgroup((void *)bpf_get_current_task()));
}

/* ---- --rate-limit ---- */

/*
 * A source of events is a cgroup v2, or a process of the root cgroup (on a
 * node that uses cgroup v1 alone, every process). Its window is one second
 * of ktime; state packs the window and the events it passed so far, so
 * that one compare-and-swap moves either. Events over the limit are
 * counted here (dropped, and the throttled map) and never reach the ring;
 * the window's throttle record goes out at the source's next event in a
 * later window, or from rate_sweep, run by user space.
 */
struct rate_key {
	__u64 cgid; /* 0: the source is the process tgid */
	__u32 tgid;
	__u32 _pad;
};

struct rate {
	__u64 state;	  /* window (seconds of ktime) << 32 | events passed in it */
	__u64 dropped[4]; /* left out in the window: exec, fork, signal, exit */
	/* The first process the window left out (who_pid 0: none yet). */
	__u64 who_start;
	__u64 who_cgid;
	__u32 who_pid;
	__u32 who_uid;
	__u32 who_auid;
	__u32 _pad;
	char who_comm[COMM_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct rate_key);
	__type(value, struct rate);
} rates SEC(".maps");

/* Events left out by the limit, by type: Stats.Throttled. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EV_MAX);
	__type(key, __u32);
	__type(value, __u64);
} throttled SEC(".maps");

#define NS_PER_SEC 1000000000ULL

/* Sends the throttle record of window win of source k, ending at end,
 * taking r's counts (each count goes to exactly one record, whatever runs
 * at once). Nothing when the window left nothing out. */
static __always_inline void rate_report(void *ctx, const struct rate_key *k, struct rate *r, __u64 win, __u64 end,
					__u64 now)
{
	__u32 pid = __sync_lock_test_and_set(&r->who_pid, 0);
	__u64 d[4], sum = 0;
#pragma unroll
	for (int i = 0; i < 4; i++) {
		d[i] = __sync_lock_test_and_set(&r->dropped[i], 0);
		sum += d[i];
	}
	if (!sum)
		return;
	struct throttle_event *t = (struct throttle_event *)ev_reserve(now);
	if (!t) {
		lost_inc(LOST_OUTPUT);
		return;
	}
	struct event_hdr *h = &t->h;
	h->ktime = end;
	h->pid = pid;
	h->uid = r->who_uid;
	h->auid = r->who_auid;
	h->type = EV_THROTTLE;
	h->syscall = SC_NONE;
	h->flags = k->cgid ? 0 : EVF_THR_PROCESS;
	h->_pad = 0;
	__builtin_memcpy(h->comm, r->who_comm, COMM_LEN);
	h->start = r->who_start;
	h->pstart = 0;
	h->cgid = r->who_cgid;
	h->ppid = 0;
	h->repeat = 0;
	t->wstart = win * NS_PER_SEC;
	t->wend = end;
#pragma unroll
	for (int i = 0; i < 4; i++)
		t->dropped[i] = d[i];
	t->_pad = 0;
	ev_submit(ctx, (struct event *)t, now);
}

/* The first event a window leaves out names the source's process. */
static __always_inline void rate_who(struct rate *r, struct task_struct___who *task, __u32 tgid, const char *comm,
				     __u64 cgid)
{
	if (r->who_pid || __sync_val_compare_and_swap(&r->who_pid, 0, tgid) != 0)
		return;
	__builtin_memcpy(r->who_comm, comm, COMM_LEN);
	r->who_cgid = cgid;
	r->who_auid = current_auid(task);
	if (task) {
		r->who_uid = task->cred->uid.val;
		r->who_start = task->group_leader->start_boottime;
	} else {
		struct task_struct___who *t = (void *)bpf_get_current_task();
		r->who_uid = (__u32)bpf_get_current_uid_gid();
		r->who_start = BPF_CORE_READ(t, group_leader, start_boottime);
	}
}

/*
 * Whether an event of type (1..4) of process tgid (task, or the current
 * task when NULL) at now may go out under --rate-limit. One that is over
 * the limit is counted and not sent. Checked before anything is reserved
 * or batched, behind cfg_rate_limit at each call, so that without
 * --rate-limit the verifier drops all of it, its arguments' loads too.
 */
static __always_inline bool rate_pass(void *ctx, struct task_struct___who *task, __u32 tgid, const char *comm,
				      __u8 type, __u64 now)
{
	if (!cfg_rate_limit)
		return true;
	struct rate_key k = {};
	__u64 cgid = task ? task->cgroups->dfl_cgrp->kn->id : bpf_get_current_cgroup_id();
	if (cgid > 1)
		k.cgid = cgid;
	else
		k.tgid = tgid; /* the root cgroup */
	__u64 win = now / NS_PER_SEC;
	struct rate *r = bpf_map_lookup_elem(&rates, &k);
	if (!r) {
		struct rate init = {};
		init.state = win << 32 | 1;
		if (bpf_map_update_elem(&rates, &k, &init, BPF_NOEXIST) == 0)
			return true;
		r = bpf_map_lookup_elem(&rates, &k);
		if (!r)
			return true; /* no room: passed rather than left out unsaid */
	}
	/* A few tries: another CPU may move the state between the read and the swap. */
#pragma unroll
	for (int i = 0; i < 4; i++) {
		__u64 s = *(volatile __u64 *)&r->state;
		__u64 sw = s >> 32;
		if (sw < win) {
			/* The first event of a new window: it passes, and the window
			 * before is said. (A CPU whose clock lags, sw > win, counts in
			 * the window the source is in.) */
			if (__sync_val_compare_and_swap(&r->state, s, win << 32 | 1) == s) {
				rate_report(ctx, &k, r, sw, (sw + 1) * NS_PER_SEC, now);
				return true;
			}
			continue;
		}
		if ((__u32)s >= cfg_rate_limit)
			break;
		if (__sync_val_compare_and_swap(&r->state, s, s + 1) == s)
			return true;
	}
	__u32 idx = type - 1;
	if (idx < 4)
		__sync_fetch_and_add(&r->dropped[idx], 1);
	rate_who(r, task, tgid, comm, cgid);
	idx = type;
	__u64 *v = bpf_map_lookup_elem(&throttled, &idx);
	if (v)
		*v += 1;
	return false;
}

/* What rate_sweep_one is told. */
struct sweep_ctx {
	__u64 now;
	__u64 final; /* the end: every window, over or not */
};

static long rate_sweep_one(void *map, const void *key, void *value, void *data)
{
	const struct rate_key *k = key;
	struct rate *r = value;
	struct sweep_ctx *sc = data;
	if (!r->dropped[0] && !r->dropped[1] && !r->dropped[2] && !r->dropped[3])
		return 0;
	__u64 s = *(volatile __u64 *)&r->state;
	__u64 sw = s >> 32, win = sc->now / NS_PER_SEC;
	__u64 end = (sw + 1) * NS_PER_SEC;
	if (sc->final) {
		rate_report(NULL, k, r, sw, end < sc->now ? end : sc->now, sc->now);
		return 0;
	}
	/* Over: a window that ended in silence is said now, and the source
	 * starts the current one. */
	if (sw < win && __sync_val_compare_and_swap(&r->state, s, win << 32) == s)
		rate_report(NULL, k, r, sw, end, sc->now);
	return 0;
}

/* Run by user space (BPF_PROG_TEST_RUN) every few hundred ms: says the
 * throttled windows that are over. Needs a ring buffer. */
SEC("raw_tp")
int rate_sweep(void *ctx)
{
	struct sweep_ctx sc = {.now = bpf_ktime_get_ns(), .final = 0};
	bpf_for_each_map_elem(&rates, rate_sweep_one, &sc, 0);
	return 0;
}

/* Run by user space once the programs are detached: says every window
 * that left events out. */
SEC("raw_tp")
int rate_final(void *ctx)
{
	struct sweep_ctx sc = {.now = bpf_ktime_get_ns(), .final = 1};
	bpf_for_each_map_elem(&rates, rate_sweep_one, &sc, 0);
	return 0;
}

/* ---- exec ---- */

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

#define ARGV_BYTES (ARGC_MAX * ARG_MAX)

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
 * After a successful exec, from the new image's argument area: argv
 * strings from mm->arg_start, the filename as passed (AT_EXECFN) after the
 * environment at mm->env_end, argc at the bottom of the stack. The exec
 * has just written all of it, so it is resident: reading the caller's
 * memory instead may fault (a forked child's untouched pages).
 */
static __always_inline __u32 exec_image(struct exec_event *e, const char *kfilename)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct mm_struct *mm = BPF_CORE_READ(task, mm);
	__u32 pos = kfilename ? exec_filename(e, kfilename, true)
			      : exec_filename(e, (const char *)BPF_CORE_READ(mm, env_end), false);
	unsigned long start = BPF_CORE_READ(mm, arg_start), end = BPF_CORE_READ(mm, arg_end);
	__u32 len = 0;
	if (end > start) {
		len = end - start;
		if (len > ARGV_BYTES) {
			len = ARGV_BYTES;
			e->h.flags |= EVF_ARGV_TRUNC;
		}
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

/* After a failed exec, from the caller's memory, which is still there. */
static __always_inline __u32 exec_args(struct exec_event *e, const char *filename, const void *argv, bool compat)
{
	__u32 pos = exec_filename(e, filename, false);
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
	__u64 now = now_ns();
	/* In the window of the event's time, its call's. */
	if (cfg_rate_limit && !rate_pass(ctx, NULL, st->h.pid, st->h.comm, EV_EXEC, st->h.ktime))
		goto out;
	__builtin_memcpy(&e->h, &st->h, sizeof(e->h));
	e->ppid = st->ppid;
	e->ret = ret;
	__u32 size = ret == 0 ? exec_image(e, NULL)
			      : exec_args(e, (const char *)st->filename, (const void *)st->argv, st->h.flags & EVF_COMPAT);
	if (size > DATA_MAX)
		size = DATA_MAX;
	output(ctx, e, __builtin_offsetof(struct exec_event, data) + size, now);
out:
	bpf_map_delete_elem(&execs, &key);
	return 0;
}

/* ---- fork, signal, exit ---- */

/* What signal_generate says of a signal: the tail of its record. */
struct sig_info {
	__s32 code;
	__u32 tgid; /* the target's */
	__u64 start;
	char comm[COMM_LEN];
	__u8 result;
	__u8 flags; /* XF_* */
};

/* The target's part of a signal's tail. */
static __always_inline void sig_target(struct sig_info *si, struct task_struct___who *target)
{
	si->tgid = target->tgid;
	si->start = target->group_leader->start_boottime;
	__builtin_memcpy(si->comm, target->comm, COMM_LEN);
}

/* Fills the tail of a record after ret: from si, or zeros. */
static __always_inline void fill_tail(struct event *ev, const struct sig_info *si)
{
	__builtin_memset(&ev->code, 0, sizeof(*ev) - __builtin_offsetof(struct event, code));
	if (!si)
		return;
	ev->code = si->code;
	ev->xpid = si->tgid;
	ev->xstart = si->start;
	__builtin_memcpy(ev->xcomm, si->comm, COMM_LEN);
	ev->result = si->result;
	ev->xflags = si->flags;
}

/* Whether two records are the same but for their repeat counts. */
static __always_inline bool same_event(const struct event *x, const struct event *y)
{
	const __u64 *a = (const __u64 *)x, *b = (const __u64 *)y;
	_Static_assert(__builtin_offsetof(struct event_hdr, repeat) == 8 * 8 + 4, "repeat is the top half of word 8");
	__u64 diff = (a[8] ^ b[8]) & 0xffffffffULL;
#pragma unroll
	for (int i = 0; i < sizeof(struct event) / 8; i++)
		if (i != 8)
			diff |= a[i] ^ b[i];
	return diff == 0;
}

/* Whether two repeat keys are equal, and the first is valid. */
static __always_inline bool same_key(const struct repeat_key *x, const struct repeat_key *y)
{
	const __u64 *a = (const __u64 *)x, *b = (const __u64 *)y;
	_Static_assert(sizeof(struct repeat_key) % 8 == 0, "whole words");
	__u64 diff = 0;
#pragma unroll
	for (int i = 0; i < sizeof(struct repeat_key) / 8; i++)
		diff |= a[i] ^ b[i];
	return diff == 0;
}

/*
 * The bodies of fork, signal and exit records. task is the current task in
 * programs on BTF tracepoints, read with direct loads; NULL elsewhere.
 */
static __always_inline int on_fork(void *ctx, __u8 sc, long ret, struct task_struct___who *task)
{
	union comm comm;
	__u32 tgid;
	if (ret <= 0)
		return 0;
	if (!pass_current(task, &tgid, &comm))
		return 0;
	if (cfg_count_only) {
		count_key(&fork_counts, comm.c);
		total_inc(EV_FORK);
		return 0;
	}
	__u64 now = now_ns();
	if (cfg_rate_limit && !rate_pass(ctx, task, tgid, comm.c, EV_FORK, now))
		return 0;
	struct event *ev = ev_reserve(now);
	if (!ev) {
		lost_inc(LOST_OUTPUT);
		return 0;
	}
	fill_hdr(&ev->h, EV_FORK, sc, tgid, comm.c, now, task);
	ev->a = (__s32)ret;
	ev->b = 0;
	ev->ret = 0;
	fill_tail(ev, NULL);
	ev_submit(ctx, ev, now);
	return 0;
}

static __always_inline void signal_count(const char *comm, __s32 target, __s32 sig)
{
	struct signal_key k;
	__builtin_memcpy(k.comm, comm, COMM_LEN);
	k.target = target;
	k.sig = sig;
	count_key(&signal_counts, &k);
	total_inc(EV_SIGNAL);
}

static __always_inline int on_signal_si(void *ctx, __u8 sc, __s32 target, __u32 ttgid, __s32 sig, long ret, bool compat,
					struct task_struct___who *task, const struct sig_info *si,
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
		/* The first signal of a tick goes at once: only a storm waits. */
		if (b && !b->busy && (b->len || b->tick == now)) {
			b->busy = 1;
			barrier();
			if (b->len > BATCH_BYTES - sizeof(struct event))
				batch_flush(b, now);
			__u32 off = b->len;
			if (off <= BATCH_BYTES - sizeof(struct event)) {
				struct event *ev = (struct event *)&b->buf[off];
				fill_hdr(&ev->h, EV_SIGNAL, sc, tgid, comm.c, now, task);
				ev->h.flags = compat ? EVF_COMPAT : 0;
				ev->a = target;
				ev->b = sig;
				ev->ret = ret;
				fill_tail(ev, si);
				/* The last record again: counted there. */
				struct event *last = (struct event *)&b->buf[off - sizeof(struct event)];
				if (off >= sizeof(struct event) && last->h.repeat < REPEAT_MAX && same_event(last, ev))
					last->h.repeat++;
				else
					b->len = off + sizeof(struct event);
				b->events++;
				if (key) {
					b->last = *key;
					b->last.valid = 1;
				} else {
					b->last.valid = 0;
				}
				if (b->tick != now)
					batch_flush(b, now); /* a tick has passed: send what waited */
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
	fill_hdr(&ev->h, EV_SIGNAL, sc, tgid, comm.c, now, task);
	ev->h.flags = compat ? EVF_COMPAT : 0;
	ev->a = target;
	ev->b = sig;
	ev->ret = ret;
	fill_tail(ev, si);
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

static __always_inline int on_exit(void *ctx, __u8 sc, __s32 code, bool compat, struct task_struct___who *task)
{
	union comm comm;
	__u32 tgid;
	if (!pass_current(task, &tgid, &comm))
		return 0;
	if (cfg_count_only) {
		total_inc(EV_EXIT);
		return 0;
	}
	__u64 now = now_ns();
	if (cfg_rate_limit && !rate_pass(ctx, task, tgid, comm.c, EV_EXIT, now))
		return 0;
	struct event *ev = ev_reserve(now);
	if (!ev) {
		lost_inc(LOST_OUTPUT);
		return 0;
	}
	fill_hdr(&ev->h, EV_EXIT, sc, tgid, comm.c, now, task);
	ev->h.flags = compat ? EVF_COMPAT : 0;
	ev->a = code;
	ev->b = 0;
	ev->ret = 0;
	fill_tail(ev, NULL);
	ev_submit(ctx, ev, now);
	return 0;
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

/* ---- the default probe set: fentry/fexit on the syscall functions ---- */

#define REGS(ctx) ((const struct pt_regs *)(ctx)[0])

SEC("fentry/" SYS(execve))
int fentry_execve(__u64 *ctx)
{
	const struct pt_regs *r = REGS(ctx);
	return exec_enter((const char *)ARG0(r), (const void *)ARG1(r), false, SC_EXECVE);
}

SEC("fentry/" SYS(execveat))
int fentry_execveat(__u64 *ctx)
{
	const struct pt_regs *r = REGS(ctx);
	return exec_enter((const char *)ARG1(r), (const void *)ARG2(r), false, SC_EXECVEAT);
}

/* Also attached to the ia32 variants: the return value is the second context word. */
SEC("fexit/" SYS(execve))
int fexit_execve(__u64 *ctx)
{
	return exec_exit(ctx, (long)ctx[1]);
}

#define FEXIT_FORK(name, sc)                                        \
	SEC("fexit/" SYS(name))                                     \
	int fexit_##name(__u64 *ctx)                                \
	{                                                           \
		return on_fork(ctx, sc, (long)ctx[1], NULL);               \
	}                                                           \
	/* For kernels whose BTF has only __do_sys_X(void). */      \
	SEC("fexit/__do_sys_" #name)                                \
	int fexit_##name##_0(__u64 *ctx)                            \
	{                                                           \
		return on_fork(ctx, sc, (long)ctx[0], NULL);               \
	}

FEXIT_FORK(fork, SC_FORK)
FEXIT_FORK(vfork, SC_VFORK)
FEXIT_FORK(clone, SC_CLONE)
FEXIT_FORK(clone3, SC_CLONE3)

SEC("fexit/" SYS(kill))
int fexit_kill(__u64 *ctx)
{
	const struct pt_regs *r = REGS(ctx);
	return on_signal(ctx, SC_KILL, (__s32)ARG0(r), NO_TGID, (__s32)ARG1(r), (long)ctx[1], false);
}

SEC("fexit/" SYS(tkill))
int fexit_tkill(__u64 *ctx)
{
	const struct pt_regs *r = REGS(ctx);
	return on_signal(ctx, SC_TKILL, (__s32)ARG0(r), NO_TGID, (__s32)ARG1(r), (long)ctx[1], false);
}

SEC("fexit/" SYS(tgkill))
int fexit_tgkill(__u64 *ctx)
{
	const struct pt_regs *r = REGS(ctx);
	return on_signal(ctx, SC_TGKILL, (__s32)ARG1(r), (__u32)ARG0(r), (__s32)ARG2(r), (long)ctx[1], false);
}

SEC("fexit/" SYS(rt_sigqueueinfo))
int fexit_rt_sigqueueinfo(__u64 *ctx)
{
	const struct pt_regs *r = REGS(ctx);
	return on_signal(ctx, SC_RT_SIGQUEUEINFO, (__s32)ARG0(r), NO_TGID, (__s32)ARG1(r), (long)ctx[1], false);
}

SEC("fexit/" SYS(rt_tgsigqueueinfo))
int fexit_rt_tgsigqueueinfo(__u64 *ctx)
{
	const struct pt_regs *r = REGS(ctx);
	return on_signal(ctx, SC_RT_TGSIGQUEUEINFO, (__s32)ARG1(r), (__u32)ARG0(r), (__s32)ARG2(r), (long)ctx[1], false);
}

SEC("fexit/" SYS(pidfd_send_signal))
int fexit_pidfd_send_signal(__u64 *ctx)
{
	const struct pt_regs *r = REGS(ctx);
	long ret = (long)ctx[1];
	__s32 sig = (__s32)ARG1(r);
	if (!pass_signal(sig))
		return 0;
	return on_signal(ctx, SC_PIDFD_SEND_SIGNAL, ret == 0 ? pidfd_target((int)ARG0(r)) : 0, NO_TGID, sig, ret, false);
}

SEC("fentry/" SYS(exit))
int fentry_exit(__u64 *ctx)
{
	return on_exit(ctx, SC_EXIT, (__s32)ARG0(REGS(ctx)), false, NULL);
}

SEC("fentry/" SYS(exit_group))
int fentry_exit_group(__u64 *ctx)
{
	return on_exit(ctx, SC_EXIT_GROUP, (__s32)ARG0(REGS(ctx)), false, NULL);
}

#ifdef HAVE_IA32
/* 32-bit syscalls of ia32 tasks: other entry points, other argument registers. */

SEC("fentry/__ia32_compat_sys_execve")
int fentry_execve_32(__u64 *ctx)
{
	const struct pt_regs *r = REGS(ctx);
	return exec_enter((const char *)(unsigned long)ARG0_32(r), (const void *)(unsigned long)ARG1_32(r), true,
			  SC_EXECVE);
}

SEC("fentry/__ia32_compat_sys_execveat")
int fentry_execveat_32(__u64 *ctx)
{
	const struct pt_regs *r = REGS(ctx);
	return exec_enter((const char *)(unsigned long)ARG1_32(r), (const void *)(unsigned long)ARG2_32(r), true,
			  SC_EXECVEAT);
}

SEC("fexit/__ia32_sys_kill")
int fexit_kill_32(__u64 *ctx)
{
	const struct pt_regs *r = REGS(ctx);
	return on_signal(ctx, SC_KILL, (__s32)ARG0_32(r), NO_TGID, (__s32)ARG1_32(r), (long)ctx[1], true);
}

SEC("fexit/__ia32_sys_tkill")
int fexit_tkill_32(__u64 *ctx)
{
	const struct pt_regs *r = REGS(ctx);
	return on_signal(ctx, SC_TKILL, (__s32)ARG0_32(r), NO_TGID, (__s32)ARG1_32(r), (long)ctx[1], true);
}

SEC("fexit/__ia32_sys_tgkill")
int fexit_tgkill_32(__u64 *ctx)
{
	const struct pt_regs *r = REGS(ctx);
	return on_signal(ctx, SC_TGKILL, (__s32)ARG1_32(r), (__u32)ARG0_32(r), (__s32)ARG2_32(r), (long)ctx[1], true);
}

SEC("fexit/__ia32_compat_sys_rt_sigqueueinfo")
int fexit_rt_sigqueueinfo_32(__u64 *ctx)
{
	const struct pt_regs *r = REGS(ctx);
	return on_signal(ctx, SC_RT_SIGQUEUEINFO, (__s32)ARG0_32(r), NO_TGID, (__s32)ARG1_32(r), (long)ctx[1], true);
}

SEC("fexit/__ia32_compat_sys_rt_tgsigqueueinfo")
int fexit_rt_tgsigqueueinfo_32(__u64 *ctx)
{
	const struct pt_regs *r = REGS(ctx);
	return on_signal(ctx, SC_RT_TGSIGQUEUEINFO, (__s32)ARG1_32(r), (__u32)ARG0_32(r), (__s32)ARG2_32(r), (long)ctx[1], true);
}

SEC("fexit/__ia32_sys_pidfd_send_signal")
int fexit_pidfd_send_signal_32(__u64 *ctx)
{
	const struct pt_regs *r = REGS(ctx);
	long ret = (long)ctx[1];
	__s32 sig = (__s32)ARG1_32(r);
	if (!pass_signal(sig))
		return 0;
	return on_signal(ctx, SC_PIDFD_SEND_SIGNAL, ret == 0 ? pidfd_target((__s32)ARG0_32(r)) : 0, NO_TGID, sig, ret, true);
}

SEC("fentry/__ia32_sys_exit")
int fentry_exit_32(__u64 *ctx)
{
	return on_exit(ctx, SC_EXIT, (__s32)ARG0_32(REGS(ctx)), true, NULL);
}

SEC("fentry/__ia32_sys_exit_group")
int fentry_exit_group_32(__u64 *ctx)
{
	return on_exit(ctx, SC_EXIT_GROUP, (__s32)ARG0_32(REGS(ctx)), true, NULL);
}
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

/* ti, si: the target's and the signal's arguments; tg: the target's
 * process as the syscall names it (tgkill), gi its argument. */
#define TP_ENTER_SIGNAL(name, sc, ti, si, tg)                                            \
	SEC("tracepoint/syscalls/sys_enter_" #name)                                      \
	int tp_enter_##name(struct sys_enter_ctx *ctx)                                   \
	{                                                                                \
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

/* ---- the process tree ---- */

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

/* ---- the sched probe set: scheduler and signal BTF tracepoints ---- */

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
#endif

/* The syscall task (the current task) is in, and its saved user registers. */
static __always_inline __u8 current_syscall(struct task_struct___who *task, const struct pt_regs **regs, bool *compat)
{
	*regs = (const struct pt_regs *)bpf_task_pt_regs((struct task_struct *)task);
	*compat = task_compat((struct task_struct *)task);
	return syscall_of(SYSCALL_NR(*regs), *compat);
}

/* The current task, for programs on BTF tracepoints. */
static __always_inline struct task_struct___who *current_btf(void)
{
	return (struct task_struct___who *)bpf_get_current_task_btf();
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
	if (!pass_pid(tgid) || !pass_comm(comm.c) || !pass_cgroup((void *)key))
		goto out;
	const char *filename = BPF_CORE_READ(bprm, filename);
	if (cfg_count_only) {
		exec_count(comm.c, filename, true);
		goto out;
	}

	const struct pt_regs *regs;
	bool compat;
	struct task_struct___who *cur = current_btf();
	__u8 sc = current_syscall(cur, &regs, &compat);
	__u64 now = now_ns();
	if (cfg_rate_limit && !rate_pass(ctx, cur, tgid, comm.c, EV_EXEC, now))
		goto out;
	fill_hdr(&e->h, EV_EXEC, sc, tgid, comm.c, now, cur);
	e->h.flags = compat ? EVF_COMPAT : 0;
	struct task_struct *task = (struct task_struct *)key;
	e->ppid = BPF_CORE_READ(task, real_parent, tgid);
	e->ret = 0;

	__u32 size = exec_image(e, filename);
	if (size > DATA_MAX)
		size = DATA_MAX;
	output(ctx, e, __builtin_offsetof(struct exec_event, data) + size, now);
out:
	if (old)
		bpf_map_delete_elem(&exec_comm, &key);
	return 0;
}

/* The pid the caller sees for child: the child's number at the caller's pid namespace level. */
static __always_inline __s32 child_vpid(struct task_struct *child)
{
	struct task_struct *cur = (struct task_struct *)bpf_get_current_task();
	unsigned int level = BPF_CORE_READ(cur, thread_pid, level);
	if (level == 0)
		return BPF_CORE_READ(child, pid);
	if (level > 31)
		return 0;
	struct pid *pid = BPF_CORE_READ(child, thread_pid);
	int nr = 0;
	bpf_probe_read_kernel(&nr, sizeof(nr),
			      (void *)pid + bpf_core_field_offset(struct pid, numbers) +
				      level * bpf_core_type_size(struct upid) + bpf_core_field_offset(struct upid, nr));
	return nr;
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
	struct task_struct___who *cur = current_btf();
	__u8 sc = current_syscall(cur, &regs, &compat);
	if (sc < SC_FORK || sc > SC_CLONE3)
		return 0; /* a kernel thread, io worker or usermode helper */
	return on_fork(ctx, sc, child_vpid(child), cur);
}

/*
 * The death of a process by a signal: its last thread exits and the
 * group's wait status holds a signal. No syscall makes it, so it is
 * reported here, with the sender of the killing signal (note_killer) and
 * the OOM killer's mark (oom_victim). Returns whether it was one.
 */
static __always_inline bool killed_exit(void *ctx, struct task_struct___who *task)
{
	struct signal_struct___who *sig = task->signal;
	if (sig->live.counter != 0)
		return false; /* not the last thread */
	__u32 status = (sig->flags & SIGNAL_GROUP_EXIT) ? sig->group_exit_code : task->exit_code;
	__u32 signo = status & 0x7f;
	if (signo == 0 || signo == 0x7f)
		return false; /* an exit call, reported at its syscall */
	__u32 tgid = task->tgid;
	__u64 start = task->group_leader->start_boottime;
	struct killer *k = bpf_map_lookup_elem(&killers, &tgid);
	__u64 *oom = bpf_map_lookup_elem(&oom_victims, &tgid);
	union comm comm;
	if (cfg_count_only || !pass_current(task, &tgid, &comm))
		goto out;
	__u64 now = now_ns();
	if (cfg_rate_limit && !rate_pass(ctx, task, tgid, comm.c, EV_EXIT, now))
		goto out;
	struct event *ev = ev_reserve(now);
	if (!ev) {
		lost_inc(LOST_OUTPUT);
		goto out;
	}
	fill_hdr(&ev->h, EV_EXIT, SC_NONE, tgid, comm.c, now, task);
	ev->a = 0;
	ev->b = signo;
	ev->ret = 0;
	fill_tail(ev, NULL);
	ev->status = status;
	ev->xflags = XF_KILLED;
	if (k && k->tstart == start && k->sig == signo) {
		ev->xflags |= XF_KILLER | XF_CODE | (k->kernel ? XF_KERNEL : 0);
		ev->code = k->code;
		ev->xpid = k->pid;
		ev->xstart = k->start;
		__builtin_memcpy(ev->xcomm, k->comm, COMM_LEN);
		ev->xsyscall = k->syscall;
	}
	if (oom && *oom == start)
		ev->xflags |= XF_OOM;
	ev_submit(ctx, ev, now);
out:
	if (k)
		bpf_map_delete_elem(&killers, &tgid);
	if (oom)
		bpf_map_delete_elem(&oom_victims, &tgid);
	return true;
}

/* Runs for every exiting thread; keeps those that called exit or
 * exit_group, and the deaths of processes by a signal. */
SEC("tp_btf/sched_process_exit")
int sched_exit(__u64 *ctx)
{
	if (cfg_types & (1 << EV_EXIT)) {
		const struct pt_regs *regs;
		bool compat;
		struct task_struct___who *task = (struct task_struct___who *)ctx[0];
		if (!killed_exit(ctx, task)) {
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
		killed_exit(ctx, (struct task_struct___who *)ctx[0]);
	return track_exit((struct task_struct *)ctx[0]);
}

/* The OOM killer chose a process (6.8+: the victim task; before: its pid). */
SEC("tp_btf/mark_victim")
int oom_victim(__u64 *ctx)
{
	struct task_struct___who *task = (struct task_struct___who *)ctx[0];
	__u32 tgid = task->tgid;
	__u64 start = task->group_leader->start_boottime;
	bpf_map_update_elem(&oom_victims, &tgid, &start, BPF_ANY);
	return 0;
}

SEC("tp_btf/mark_victim")
int oom_victim_pid(__u64 *ctx)
{
	__u32 tgid = (__u32)ctx[0];
	__u64 start = 0;
	bpf_map_update_elem(&oom_victims, &tgid, &start, BPF_ANY);
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
static __always_inline __s32 sig_code(void *info)
{
	if ((unsigned long)info == 0)
		return SI_USER;
	if ((unsigned long)info == 1)
		return SI_KERNEL;
	/* si_signo, si_errno, si_code: the UAPI layout on every arch traced.
	 * Some kernels (a 6.18 build here) type this argument as a scalar, as
	 * it "may encode error", and refuse a direct load: cast it back. */
	if (bpf_ksym_exists(bpf_rdonly_cast)) {
		const struct siginfo_head *si = bpf_rdonly_cast(info, bpf_core_type_id_kernel(struct kernel_siginfo));
		return si->si_code;
	}
	__s32 code = SI_USER;
	bpf_probe_read_kernel(&code, sizeof(code), &((const struct siginfo_head *)info)->si_code);
	return code;
}

/* Whether a delivered signal will end the target: SIGKILL, or a signal
 * whose default action ends a process and whose handler is the default. */
static __always_inline bool sig_kills(struct task_struct___who *t, int sig, int result)
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
	struct sighand_struct___who *sh = t->sighand;
	bpf_probe_read_kernel(&handler, sizeof(handler),
			      (void *)sh + bpf_core_field_offset(struct sighand_struct___who, action) +
				      (sig - 1) * bpf_core_type_size(struct k_sigaction___who) +
				      bpf_core_field_offset(struct k_sigaction___who, sa.sa_handler));
	return handler == NULL; /* SIG_DFL */
}

/* Remembers who sent a signal that will kill t, for its exit record. */
static __always_inline void note_killer(struct task_struct___who *t, int sig, __s32 code, __u8 sc)
{
	struct killer k;
	__builtin_memset(&k, 0, sizeof(k));
	__u32 tgid = t->tgid;
	k.tstart = t->group_leader->start_boottime;
	k.sig = sig;
	k.code = code;
	k.syscall = sc;
	if (sc == SC_NONE) {
		k.kernel = 1;
	} else {
		struct task_struct___who *cur = (void *)bpf_get_current_task_btf();
		k.pid = cur->tgid;
		k.start = cur->group_leader->start_boottime;
		bpf_get_current_comm(k.comm, COMM_LEN);
	}
	bpf_map_update_elem(&killers, &tgid, &k, BPF_ANY);
}

/* A signal the kernel sent on its own. No process sent it: the record is
 * the target's, so the filters and the header are about the target. */
static __always_inline int kernel_signal(void *ctx, struct task_struct___who *t, int group, int sig,
					 struct sig_info *si)
{
	union comm comm;
	__u32 tgid = t->tgid;
	if (!pass_pid(tgid))
		return 0;
	bpf_probe_read_kernel(comm.c, COMM_LEN, t->comm);
	if (!pass_comm(comm.c) || !pass_cgroup(t))
		return 0;
	__u64 now = now_ns();
	if (cfg_rate_limit && !rate_pass(ctx, t, tgid, comm.c, EV_SIGNAL, now))
		return 0;
	struct event *ev = ev_reserve(now);
	if (!ev) {
		lost_inc(LOST_OUTPUT);
		return 0;
	}
	struct event_hdr *h = &ev->h;
	h->ktime = now;
	h->pid = tgid;
	h->uid = t->real_cred->uid.val;
	h->auid = bpf_core_field_exists(t->loginuid) ? t->loginuid.val : 0xffffffff;
	h->type = EV_SIGNAL;
	h->syscall = SC_NONE;
	h->flags = 0;
	h->_pad = 0;
	__builtin_memcpy(h->comm, comm.c, COMM_LEN);
	struct task_struct___who *p = t->real_parent;
	h->start = t->group_leader->start_boottime;
	h->ppid = p->tgid;
	h->pstart = p->group_leader->start_boottime;
	h->cgid = t->cgroups->dfl_cgrp->kn->id;
	h->repeat = 0;
	ev->a = group ? tgid : t->pid;
	ev->b = sig;
	ev->ret = 0;
	fill_tail(ev, si);
	ev_submit(ctx, ev, now);
	return 0;
}

/*
 * current_syscall for the signal program, with the address of the task's
 * saved registers kept per CPU: a kill loop finds it there rather than
 * through bpf_task_pt_regs, a helper call (about 7 ns a kill here). A
 * task's registers stay at one address for its life; the pid and start
 * time tell a later task from it. The same program never nests on a CPU.
 */
static __always_inline __u8 signal_syscall(struct task_struct___who *task, struct batch *b,
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
 * Every generated signal. Those a signal syscall made are the caller's
 * (sched set; the other sets report them at the syscall): the target as
 * given is the syscall's argument (pidfd_send_signal: the target's pid),
 * and the syscall's return value is not known yet: 0, or -EAGAIN when the
 * kernel could not queue a real-time signal. Those the kernel made on its
 * own (faults, SIGPIPE, timers, the OOM killer, SIGCHLD) are kept when
 * they will kill the target, or when --signal names them. A signal that
 * will kill is remembered for the target's exit record.
 */
SEC("tp_btf/signal_generate")
int sched_signal(__u64 *ctx)
{
	int sig = (int)ctx[0];
	void *info = (void *)ctx[1];
	struct task_struct___who *target = (struct task_struct___who *)ctx[2];
	int group = (int)ctx[3], result = (int)ctx[4];
	const struct pt_regs *regs;
	bool compat;
	struct task_struct___who *cur = current_btf();
	__u32 zero = 0;
	struct batch *b = cfg_batch ? bpf_map_lookup_elem(&batches, &zero) : NULL;
	__u8 sc = signal_syscall(cur, b, &regs, &compat);
	__s32 code = sig_code(info);
	/* A timer or the terminal may signal from an interrupt that came
	 * while the task it interrupted was in a signal syscall. */
	if (sc < SC_KILL || sc > SC_PIDFD_SEND_SIGNAL || code == SI_KERNEL ||
	    (code == SI_TIMER && sc != SC_RT_SIGQUEUEINFO && sc != SC_RT_TGSIGQUEUEINFO))
		sc = SC_NONE;
	bool note = !cfg_count_only && (cfg_types & (1 << EV_EXIT));
	bool kills = (note || (sc == SC_NONE && cfg_sig_all)) && sig_kills(target, sig, result);
	if (kills && note)
		note_killer(target, sig, code, sc);
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
		tpid = group ? target->tgid : target->pid;
		break;
	default:
		/* Sent by the kernel: kept when fatal, or named by --signal. */
		if (cfg_count_only || (cfg_sig_all && !kills))
			return 0;
		si.flags |= XF_KERNEL;
		sig_target(&si, target);
		return kernel_signal(ctx, target, group, sig, &si);
	}
	if (!cfg_sig_sched)
		return 0; /* the syscall probes report it */
	long ret = result == TRACE_SIGNAL_OVERFLOW_FAIL ? -EAGAIN : 0;
	struct repeat_key k;
	if (cfg_batch) {
		struct task_struct___who *p = cur->real_parent;
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
		if (b && !b->busy && b->tick == now_ns() && same_key(&b->last, &k) && pass_pid(cur->tgid)) {
			__u32 off = b->len - sizeof(struct event);
			barrier_var(off);
			/* A valid key has a record: off is in the batch. */
			if (off <= BATCH_BYTES - sizeof(struct event)) {
				struct event *last = (struct event *)&b->buf[off];
				if (last->h.repeat < REPEAT_MAX) {
					/* Over the limit, left out. busy: a throttle
					 * record it sends must not send the batch
					 * under last. */
					if (cfg_rate_limit) {
						b->busy = 1;
						barrier();
						bool pass = rate_pass(ctx, cur, cur->tgid, (const char *)k.comm, EV_SIGNAL, b->tick);
						barrier();
						b->busy = 0;
						if (!pass)
							return 0;
					}
					last->h.repeat++;
					b->events++;
					return 0;
				}
			}
		}
	}
	sig_target(&si, target);
	return on_signal_si(ctx, sc, tpid, target->tgid, sig, ret, compat, cur, cfg_count_only ? NULL : &si, cfg_batch ? &k : NULL);
}

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

/* Run by user space on each CPU (BPF_PROG_TEST_RUN): sends what it batched. */
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
