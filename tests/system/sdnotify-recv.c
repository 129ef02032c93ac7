/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stand-in for systemd's notify socket in system tests: binds an
 * AF_UNIX datagram socket at PATH and prints every sd_notify message it
 * receives, one line per assignment, until TIMEOUT seconds pass or a
 * message contains STOPPING=1. Exit 0 when READY=1 was seen, else 1.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[4096];
	int fd, ready = 0, timeout_s;
	time_t end;

	if (argc != 3) {
		fprintf(stderr, "usage: sdnotify-recv PATH TIMEOUT_S\n");
		return 2;
	}
	timeout_s = atoi(argv[2]);
	if (strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "sdnotify-recv: path too long\n");
		return 2;
	}
	strcpy(sa.sun_path, argv[1]);
	unlink(argv[1]);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		fprintf(stderr, "sdnotify-recv: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	end = time(NULL) + timeout_s;
	while (time(NULL) < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 200) <= 0)
			continue;
		n = recv(fd, buf, sizeof(buf) - 1, 0);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		for (char *line = strtok(buf, "\n"); line != NULL;
		    line = strtok(NULL, "\n")) {
			printf("%s\n", line);
			if (strcmp(line, "READY=1") == 0)
				ready = 1;
			if (strcmp(line, "STOPPING=1") == 0)
				goto out;
		}
	}
out:
	unlink(argv[1]);
	return ready ? 0 : 1;
}
