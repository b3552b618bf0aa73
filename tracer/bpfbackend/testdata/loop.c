//go:build ignore

// loop: the tight loops of the overhead benchmarks (bench_test.go).
//
//   loop kill N      N times kill(self, SIGUSR1), SIGUSR1 ignored (signal-storm)
//   loop getppid N   N times getppid(), a syscall no probe names (syscall-tax)
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: loop kill|getppid N\n");
		return 2;
	}
	long n = atol(argv[2]);
	if (!strcmp(argv[1], "kill")) {
		pid_t self = getpid();
		signal(SIGUSR1, SIG_IGN);
		for (long i = 0; i < n; i++)
			syscall(SYS_kill, self, SIGUSR1);
	} else if (!strcmp(argv[1], "getppid")) {
		for (long i = 0; i < n; i++)
			syscall(SYS_getppid);
	} else {
		fprintf(stderr, "loop: unknown loop %s\n", argv[1]);
		return 2;
	}
	return 0;
}
