//go:build ignore

// reach reports what a process can reach of whoever started it, to the
// file given as its argument (stdout with "-"):
//
//   sid N           its session
//   tty N           its controlling terminal (tty_nr of /proc/self/stat; 0: none)
//   tiocsti OK|ERR  whether ioctl(0, TIOCSTI) pushed "reach-tiocsti\n" into its stdin's input queue
//   fd N            each descriptor open at its start
//   env K=V         each variable of its environment
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv)
{
	/* The descriptors first, before this program opens any. */
	int fds[1024], nfds = 0;
	DIR *d = opendir("/proc/self/fd");
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)) && nfds < 1024) {
			int fd;
			if (sscanf(e->d_name, "%d", &fd) == 1 && fd != dirfd(d))
				fds[nfds++] = fd;
		}
		closedir(d);
	}
	const char *marker = "reach-tiocsti\n";
	const char *res = "OK";
	for (const char *c = marker; *c; c++) {
		if (ioctl(0, TIOCSTI, c) != 0) {
			res = strerror(errno);
			break;
		}
	}
	int tty = 0;
	FILE *st = fopen("/proc/self/stat", "r");
	if (st) {
		/* after "pid (comm) ": state ppid pgrp session tty_nr */
		char buf[4096];
		size_t n = fread(buf, 1, sizeof(buf) - 1, st);
		buf[n] = 0;
		char *p = strrchr(buf, ')');
		int sid = 0;
		if (p && sscanf(p + 2, "%*c %*d %*d %d %d", &sid, &tty) == 2)
			;
		fclose(st);
	}
	FILE *out = argc > 1 && strcmp(argv[1], "-") ? fopen(argv[1], "w") : stdout;
	if (!out)
		return 1;
	fprintf(out, "sid %d\ntty %d\ntiocsti %s\n", getsid(0), tty, res);
	for (int i = 0; i < nfds; i++)
		fprintf(out, "fd %d\n", fds[i]);
	for (char **e = environ; *e; e++)
		fprintf(out, "env %s\n", *e);
	return fclose(out) != 0;
}
