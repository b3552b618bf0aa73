//go:build ignore

// deaths makes processes die in known ways, one scenario per argument, so
// that tests can check what the tracer says of each death:
//
//   deaths segv        a child dereferences NULL (SIGSEGV, SEGV_MAPERR) and dumps core in the cwd
//   deaths segvnocore  the same with RLIMIT_CORE 0: no core
//   deaths kill9       the parent kills a paused child with kill(2) SIGKILL
//   deaths pipe        a child writes to a pipe nobody reads (SIGPIPE)
//   deaths timer       a POSIX timer sends a paused child SIGALRM (SI_TIMER)
//   deaths oom PROCS   a child joins the memory cgroup whose cgroup.procs is PROCS and allocates until the OOM killer ends it
//   deaths exit3       a child exits 3
//   deaths orphan      a child forks a grandchild and exits; the grandchild, reparented, exits 0
//   deaths reuse       a child exits, then another is made with the same pid (clone3 with set_tid)
//   deaths join PROCS  (first) this process joins the cgroup whose cgroup.procs is PROCS
//
// Each process it makes writes "ROLE PID START PPID" to stdout first (START:
// field 22 of /proc/self/stat, clock ticks since boot), and the parent
// writes "status ROLE PID WAITSTATUS" once it has reaped the child, so that
// a test knows every pid, start time and wait status.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void say(const char *role) {
	char buf[4096], out[256];
	unsigned long long start = 0;
	int fd = open("/proc/self/stat", O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0) close(fd);
	if (n > 0) {
		buf[n] = 0;
		char *p = strrchr(buf, ')');
		/* fields after the comm: state is 3, starttime 22 */
		for (int field = 2; p && field < 22; field++) p = strchr(p + 1, ' ');
		if (p) start = strtoull(p + 1, NULL, 10);
	}
	int len = snprintf(out, sizeof(out), "%s %d %llu %d\n", role, getpid(), start, getppid());
	(void)!write(1, out, len);
}

static void status(const char *role, pid_t pid) {
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
	char out[128];
	int len = snprintf(out, sizeof(out), "status %s %d %d\n", role, pid, st);
	(void)!write(1, out, len);
}

static void join(const char *procs) {
	int fd = open(procs, O_WRONLY);
	if (fd < 0 || write(fd, "0", 1) != 1) { perror(procs); exit(4); }
	close(fd);
}

/* A child that says deaths it is, then runs fn. */
static pid_t child(const char *role, void (*fn)(const char *), const char *arg) {
	pid_t p = fork();
	if (p < 0) { perror("fork"); exit(3); }
	if (p == 0) {
		say(role);
		fn(arg);
		_exit(0);
	}
	return p;
}

static void do_segv(const char *core) {
	struct rlimit rl = {0, 0};
	if (core) rl.rlim_cur = rl.rlim_max = 64 << 20;
	setrlimit(RLIMIT_CORE, &rl);
	*(volatile int *)0 = 1;
}

static void do_pause(const char *unused) {
	(void)unused;
	for (;;) pause();
}

static void do_pipe(const char *unused) {
	(void)unused;
	int fds[2];
	if (pipe(fds) < 0) _exit(3);
	close(fds[0]);
	signal(SIGPIPE, SIG_DFL);
	(void)!write(fds[1], "x", 1);
	_exit(5); /* not reached: SIGPIPE */
}

static void do_timer(const char *unused) {
	(void)unused;
	timer_t t;
	struct sigevent sev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM};
	struct itimerspec its = {.it_value = {.tv_nsec = 20 * 1000 * 1000}};
	if (timer_create(CLOCK_MONOTONIC, &sev, &t) < 0 || timer_settime(t, 0, &its, NULL) < 0) _exit(3);
	for (;;) pause();
}

static void do_oom(const char *procs) {
	join(procs);
	for (;;) {
		char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) _exit(6);
		memset(p, 1, 1 << 20);
	}
}

static void do_exit3(const char *unused) {
	(void)unused;
	exit(3);
}

int main(int argc, char **argv) {
	signal(SIGCHLD, SIG_DFL);
	setvbuf(stdout, NULL, _IONBF, 0);
	say("main");
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		if (!strcmp(s, "join")) {
			join(argv[++i]);
		} else if (!strcmp(s, "segv") || !strcmp(s, "segvnocore")) {
			status(s, child(s, do_segv, !strcmp(s, "segv") ? "core" : NULL));
		} else if (!strcmp(s, "kill9")) {
			int fds[2];
			if (pipe(fds) < 0) return 3;
			pid_t p = fork();
			if (p == 0) {
				say("kill9");
				close(fds[0]);
				close(fds[1]); /* tells the parent it is ready */
				do_pause(NULL);
			}
			close(fds[1]);
			char c;
			(void)!read(fds[0], &c, 1);
			close(fds[0]);
			kill(p, SIGKILL);
			status(s, p);
		} else if (!strcmp(s, "pipe")) {
			status(s, child(s, do_pipe, NULL));
		} else if (!strcmp(s, "timer")) {
			status(s, child(s, do_timer, NULL));
		} else if (!strcmp(s, "oom")) {
			status(s, child(s, do_oom, argv[++i]));
		} else if (!strcmp(s, "exit3")) {
			status(s, child(s, do_exit3, NULL));
		} else if (!strcmp(s, "orphan")) {
			int fds[2];
			if (pipe(fds) < 0) return 3;
			pid_t p = fork();
			if (p == 0) {
				say("orphan");
				close(fds[0]);
				pid_t me = getpid();
				pid_t g = fork();
				if (g == 0) {
					/* Wait until the parent is gone (reparented), then report. */
					while (getppid() == me) usleep(1000);
					say("grandchild");
					close(fds[1]); /* the test's parent learns it is done */
					_exit(0);
				}
				_exit(0);
			}
			close(fds[1]);
			status(s, p);
			char c;
			(void)!read(fds[0], &c, 1); /* EOF once the grandchild exited */
			close(fds[0]);
			usleep(20000);
		} else if (!strcmp(s, "reuse")) {
			pid_t p = child("reuse1", do_exit3, NULL);
			status("reuse1", p);
			/* Start in a later clock tick: exec ids tell processes apart by
			 * start time in ticks, and no pid is reused sooner without set_tid. */
			usleep(30000);
			pid_t tid = p;
			struct clone_args ca = {.exit_signal = SIGCHLD, .set_tid = (unsigned long)&tid, .set_tid_size = 1};
			long q = syscall(SYS_clone3, &ca, sizeof(ca));
			if (q < 0) { perror("clone3 set_tid"); return 3; }
			if (q == 0) {
				say("reuse2");
				_exit(0);
			}
			status("reuse2", (pid_t)q);
		} else {
			fprintf(stderr, "deaths: unknown scenario %s\n", s);
			return 2;
		}
	}
	return 0;
}
