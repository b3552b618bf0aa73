//go:build ignore

// pidfdrace signals a victim through a pidfd and at once puts a decoy's
// pidfd on the same descriptor number: a reader of the sender's fdinfo
// after the fact names the decoy. Usage: pidfdrace OUT N; writes each
// round's "victim decoy" pids to OUT.
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t child(void) {
	pid_t p = fork();
	if (p == 0) {
		for (;;) pause();
	}
	if (p < 0) { perror("fork"); exit(3); }
	return p;
}

int main(int argc, char **argv) {
	FILE *out = fopen(argv[1], "w");
	if (!out) { perror("fopen"); return 3; }
	int n = atoi(argv[2]);
	for (int i = 0; i < n; i++) {
		pid_t victim = child(), decoy = child();
		int fd = syscall(SYS_pidfd_open, victim, 0);
		int dfd = syscall(SYS_pidfd_open, decoy, 0);
		if (fd < 0 || dfd < 0) { perror("pidfd_open"); return 3; }
		if (syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0)) { perror("pidfd_send_signal"); return 3; }
		if (dup2(dfd, fd) < 0) { perror("dup2"); return 3; }
		fprintf(out, "%d %d\n", victim, decoy);
		// The decoy lives, and the descriptor names it, until the
		// event has surely been read.
		usleep(50000);
		kill(decoy, SIGKILL);
		waitpid(victim, NULL, 0);
		waitpid(decoy, NULL, 0);
		close(fd);
		close(dfd);
	}
	fclose(out);
	syscall(SYS_exit_group, 0);
}
