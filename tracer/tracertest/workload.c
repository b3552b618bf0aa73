//go:build ignore

// workload makes a known number of process events, one syscall kind at a
// time, so that tests can assert exact counts per syscall:
//
//   workload exec N PATH      N times: vfork + execve(PATH) (PATH should exit 0 at once)
//   workload execfail N       N times: vfork + execve("/nonexistent/tracer-enoent") -> ENOENT
//   workload execargs PATH ARG  vfork + execve(PATH) with argv {PATH, ARG}: ARG of any length or bytes
//   workload execv PATH N ARG1..ARGN  vfork + execve(PATH) with argv {PATH, ARG1, ..., ARGN}; waits for it
//   workload victim FINAL N SIG1..SIGN  fork a child that blocks every signal but FINAL and waits;
//                             kill(child, SIGi) for each, then kill(child, FINAL); reap it
//   workload segv             write through a null pointer: the kernel's own SIGSEGV ends it
//   workload fork N           N times: syscall(SYS_fork), child _exit(0)
//   workload vfork N          N times: vfork(), child _exit(0)
//   workload clone N          N times: syscall(SYS_clone, SIGCHLD, 0), child _exit(0)
//   workload clone3 N         N times: posix_spawn(/bin/true) (glibc uses clone3 for it)
//   workload kill N SIG       N times: kill(getpid(), SIG)   (SIG is ignored first)
//   workload tkill N SIG      N times: tkill(gettid(), SIG)
//   workload tgkill N SIG     N times: tgkill(getpid(), gettid(), SIG)
//   workload doublefork N     N times: fork a child that forks a grandchild and exits at once;
//                             the orphaned grandchild execs /bin/true; waits for it through a pipe
//   workload spin MS          compute for MS ms of CPU time
//   workload cpu N            move to CPU N (sched_setaffinity), as the scheduler may at any time
//   workload comm NAME        rename itself (prctl PR_SET_NAME)
//   workload uid N            set its real, effective and saved uid to N (setresuid)
//   workload exit CODE        exit_group(CODE)
//
// Several commands may follow each other on one command line.
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void reap(pid_t pid) {
	int st;
	if (pid < 0) { perror("fork"); exit(3); }
	while (waitpid(pid, &st, __WALL) < 0) {}
}

int main(int argc, char **argv) {
	signal(SIGCHLD, SIG_DFL);
	for (int i = 1; i < argc;) {
		const char *cmd = argv[i++];
		if (!strcmp(cmd, "exit")) {
			syscall(SYS_exit_group, atoi(argv[i]));
		}
		if (!strcmp(cmd, "comm")) {
			if (prctl(PR_SET_NAME, argv[i++])) { perror("prctl"); return 3; }
			continue;
		}
		if (!strcmp(cmd, "segv")) {
			signal(SIGSEGV, SIG_DFL);
			*(volatile int *)0 = 1;
			return 3;
		}
		if (!strcmp(cmd, "execv")) {
			const char *path = argv[i++];
			int n = atoi(argv[i++]);
			char **args = calloc(n + 2, sizeof(char *));
			args[0] = (char *)path;
			for (int k = 0; k < n; k++) args[k + 1] = argv[i++];
			pid_t p = vfork();
			if (p == 0) {
				execve(path, args, environ);
				_exit(127);
			}
			reap(p);
			free(args);
			continue;
		}
		if (!strcmp(cmd, "victim")) {
			int final = atoi(argv[i++]);
			int n = atoi(argv[i++]);
			int fds[2];
			if (pipe(fds) < 0) { perror("pipe"); return 3; }
			pid_t p = syscall(SYS_fork);
			if (p == 0) {
				sigset_t all;
				sigfillset(&all);
				sigdelset(&all, final);
				sigprocmask(SIG_SETMASK, &all, NULL);
				signal(final, SIG_DFL);
				close(fds[0]);
				close(fds[1]); /* the parent's read returns: the mask is set */
				for (;;) pause();
			}
			if (p < 0) { perror("fork"); return 3; }
			close(fds[1]);
			char c;
			while (read(fds[0], &c, 1) > 0) {}
			close(fds[0]);
			for (int k = 0; k < n; k++) kill(p, atoi(argv[i++]));
			kill(p, final);
			reap(p);
			continue;
		}
		if (!strcmp(cmd, "execargs")) {
			char *args[] = {argv[i], argv[i + 1], NULL};
			i += 2;
			pid_t p = vfork();
			if (p == 0) {
				execve(args[0], args, environ);
				_exit(127);
			}
			reap(p);
			continue;
		}
		long n = atol(argv[i++]);
		if (!strcmp(cmd, "uid")) {
			if (setresuid(n, n, n)) { perror("setresuid"); return 3; }
			continue;
		}
		if (!strcmp(cmd, "spin")) {
			// The clock is a syscall: read it once per million iterations,
			// so the time is user time almost all. It counts from the
			// start, not from zero: the process's clock keeps what it used
			// before its exec (a tracer's held step, a shell's fork).
			struct timespec t0, ts;
			volatile unsigned long x = 0;
			clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
			do {
				for (int k = 0; k < 1000000; k++) x += k;
				clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
			} while ((ts.tv_sec - t0.tv_sec) * 1000L + (ts.tv_nsec - t0.tv_nsec) / 1000000 < n);
			continue;
		}
		if (!strcmp(cmd, "cpu")) {
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET(n, &set);
			if (sched_setaffinity(0, sizeof(set), &set)) { perror("sched_setaffinity"); return 3; }
			continue;
		}
		if (!strcmp(cmd, "exec") || !strcmp(cmd, "execfail")) {
			const char *path = !strcmp(cmd, "exec") ? argv[i++] : "/nonexistent/tracer-enoent";
			for (long k = 0; k < n; k++) {
				pid_t p = vfork();
				if (p == 0) {
					char *args[] = {(char *)path, "arg1", NULL};
					execve(path, args, environ);
					_exit(127);
				}
				reap(p);
			}
		} else if (!strcmp(cmd, "fork")) {
			for (long k = 0; k < n; k++) {
				pid_t p = syscall(SYS_fork);
				if (p == 0) syscall(SYS_exit_group, 0);
				reap(p);
			}
		} else if (!strcmp(cmd, "vfork")) {
			for (long k = 0; k < n; k++) {
				pid_t p = vfork();
				if (p == 0) _exit(0);
				reap(p);
			}
		} else if (!strcmp(cmd, "clone")) {
			for (long k = 0; k < n; k++) {
				pid_t p = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
				if (p == 0) syscall(SYS_exit_group, 0);
				reap(p);
			}
		} else if (!strcmp(cmd, "clone3")) {
			for (long k = 0; k < n; k++) {
				pid_t p;
				char *args[] = {"true", NULL};
				if (posix_spawn(&p, "/bin/true", NULL, NULL, args, environ) != 0) { perror("posix_spawn"); return 3; }
				reap(p);
			}
		} else if (!strcmp(cmd, "doublefork")) {
			for (long k = 0; k < n; k++) {
				int fds[2];
				if (pipe(fds) < 0) { perror("pipe"); return 3; }
				pid_t p = syscall(SYS_fork);
				if (p == 0) {
					close(fds[0]);
					pid_t g = syscall(SYS_fork);
					if (g == 0) {
						usleep(20000); /* let the parent exit: we are reparented */
						char *args[] = {"/bin/true", NULL};
						execve("/bin/true", args, environ); /* fds[1] stays open until true exits */
						_exit(127);
					}
					syscall(SYS_exit_group, 0);
				}
				close(fds[1]);
				reap(p);
				char c;
				while (read(fds[0], &c, 1) > 0) {}
				close(fds[0]);
			}
		} else if (!strcmp(cmd, "kill") || !strcmp(cmd, "tkill") || !strcmp(cmd, "tgkill")) {
			int sig = atoi(argv[i++]);
			signal(sig, SIG_IGN);
			for (long k = 0; k < n; k++) {
				if (!strcmp(cmd, "kill")) kill(getpid(), sig);
				else if (!strcmp(cmd, "tkill")) syscall(SYS_tkill, gettid(), sig);
				else syscall(SYS_tgkill, getpid(), gettid(), sig);
			}
		} else {
			fprintf(stderr, "workload: unknown command %s\n", cmd);
			return 2;
		}
	}
	return 0;
}
