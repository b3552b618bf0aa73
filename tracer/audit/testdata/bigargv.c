//go:build ignore

// bigargv execs /bin/true N times, paced at RATE a second, each with NARGS
// arguments of ARGBYTES bytes: what a user's exec flood with a 2 MB argv
// asks of audit. Usage: bigargv N RATE NARGS ARGBYTES.
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
	int n = atoi(argv[1]), rate = atoi(argv[2]), nargs = atoi(argv[3]);
	size_t bytes = strtoul(argv[4], NULL, 10);
	char **args = calloc(nargs + 2, sizeof(char *));
	args[0] = "/bin/true";
	for (int k = 1; k <= nargs; k++) {
		args[k] = malloc(bytes + 1);
		memset(args[k], 'a' + k % 26, bytes);
		args[k][bytes] = 0;
	}
	char *envp[] = {NULL};
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (int i = 0; i < n; i++) {
		// Paced: the i-th exec starts no earlier than i/rate seconds in.
		for (;;) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			double el = (now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9;
			if (rate <= 0 || el * rate >= i) break;
			usleep(1000);
		}
		pid_t p = vfork();
		if (p == 0) {
			execve(args[0], args, envp);
			_exit(127);
		}
		waitpid(p, NULL, 0);
	}
	return 0;
}
