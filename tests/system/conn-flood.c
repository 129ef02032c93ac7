/* SPDX-License-Identifier: Apache-2.0 */
/*
 * conn-flood: the "lock out the operator" attack. Becomes uid/gid 65534,
 * opens N connections to the control socket and never says hello, then
 * watches what the daemon does with each: a too_many_consumers reply
 * (refused), a no_hello reply (the hello deadline), or a bare hang-up.
 * Prints "opened=N" once all are connected, then a line
 * "refused=R hello_timeout=H closed=C open=O" whenever that changes;
 * exits 0 when none is left open, or on SIGTERM.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define CF_MAX		8192
#define CF_FD_SLACK	64		/* stdio and what libc opens */
#define CF_TICK_MS	50

static volatile sig_atomic_t stop;

static void
on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int
main(int argc, char **argv)
{
	static struct pollfd p[CF_MAX];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct rlimit rl;
	char buf[4096];
	int n, i, open_n, refused = 0, timeouts = 0, closed = 0;
	int last_r = -1, last_t = -1, last_c = -1;

	if (argc != 3 || (n = atoi(argv[2])) < 1 || n > CF_MAX) {
		fprintf(stderr, "usage: conn-flood SOCKET N (N <= %d)\n", CF_MAX);
		return 2;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[1]);
	/* as root: room for N sockets, then nobody */
	rl.rlim_cur = rl.rlim_max = (rlim_t)n + CF_FD_SLACK;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
		fprintf(stderr, "conn-flood: setrlimit: %s\n", strerror(errno));
		return 2;
	}
	if (setresgid(65534, 65534, 65534) < 0 ||
	    setresuid(65534, 65534, 65534) < 0) {
		fprintf(stderr, "conn-flood: becoming uid 65534: %s\n",
		    strerror(errno));
		return 2;
	}
	signal(SIGTERM, on_term);
	signal(SIGPIPE, SIG_IGN);
	for (i = 0; i < n; i++) {
		p[i].fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (p[i].fd < 0 || connect(p[i].fd, (struct sockaddr *)&sa,
		    sizeof(sa)) < 0) {
			fprintf(stderr, "conn-flood: connection %d: %s\n", i,
			    strerror(errno));
			return 2;
		}
		p[i].events = POLLIN;
	}
	printf("opened=%d\n", n);
	fflush(stdout);
	open_n = n;
	while (!stop && open_n > 0) {
		if (poll(p, (nfds_t)n, CF_TICK_MS) < 0 && errno != EINTR)
			return 2;
		for (i = 0; i < n; i++) {
			ssize_t r;

			if (p[i].fd < 0 || p[i].revents == 0)
				continue;
			r = recv(p[i].fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
			if (r > 0) {
				buf[r] = '\0';
				if (strstr(buf, "\"too_many_consumers\"") != NULL)
					refused++;
				else if (strstr(buf, "\"no_hello\"") != NULL)
					timeouts++;
				continue;
			}
			if (r < 0 && errno == EAGAIN)
				continue;
			close(p[i].fd);
			p[i].fd = -1;
			closed++;
			open_n--;
		}
		if (refused != last_r || timeouts != last_t ||
		    closed != last_c) {
			last_r = refused;
			last_t = timeouts;
			last_c = closed;
			printf("refused=%d hello_timeout=%d closed=%d open=%d\n",
			    refused, timeouts, closed, open_n);
			fflush(stdout);
		}
	}
	return 0;
}
