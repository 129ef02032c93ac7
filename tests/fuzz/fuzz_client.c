/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for libdaqiri-client against a hostile daemon (issue
 * 24: the library runs in users' processes, so an impostor on the socket
 * path must not crash, hang or bloat them). The input is what the
 * "daemon" says: its lines, each sent as one message on a SOCK_SEQPACKET
 * connection, after the client's hello, then the connection is closed.
 * The client meanwhile connects, asks for stats, subscribes and takes a
 * tensor, as an application would; whatever the messages, every call
 * must return (the closed connection ends any wait at once). Descriptors
 * (SCM_RIGHTS) are not fuzzed: a sub_fd message here has none. Built
 * from the client library's and the protocol's sources.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "daqiri_client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MSGS_MAX	64	/* lines of an input sent, at most */

static int listen_fd = -1;
static char sock_path[108];

struct script {
	const uint8_t *data;
	size_t size;
};

static void
setup(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[] = "/tmp/fuzz_client.XXXXXX";

	signal(SIGPIPE, SIG_IGN);
	if (mkdtemp(dir) == NULL)
		abort();
	snprintf(sock_path, sizeof(sock_path), "%s/d.sock", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (listen_fd < 0 ||
	    bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(listen_fd, 4) != 0)
		abort();
}

/* The daemon's side: take the hello, say the input's lines, hang up. */
static void *
daemon_side(void *arg)
{
	const struct script *s = arg;
	char buf[4096];
	size_t at = 0;
	int c, n = 0;

	if ((c = accept(listen_fd, NULL, NULL)) < 0)
		return NULL;
	(void)recv(c, buf, sizeof(buf), 0);
	while (at < s->size && n < FUZZ_MSGS_MAX) {
		const uint8_t *nl = memchr(s->data + at, '\n', s->size - at);
		size_t len = nl != NULL ? (size_t)(nl - (s->data + at)) :
		    s->size - at;

		if (len > 0 && send(c, s->data + at, len, MSG_NOSIGNAL) < 0)
			break;
		at += len + 1;
		n++;
	}
	shutdown(c, SHUT_WR);
	/* until the client is done: what it sends is read and dropped */
	while (recv(c, buf, sizeof(buf), 0) > 0)
		;
	close(c);
	return NULL;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct script s = { data, size };
	struct daqiri_sub_opts o = { .size = sizeof(o) };
	struct daqiri_tensor t = { .size = sizeof(t) };
	struct daqiri_sub *sub = NULL;
	struct daqiri *d = NULL;
	pthread_t th;
	char *out = NULL;

	if (listen_fd < 0)
		setup();
	if (pthread_create(&th, NULL, daemon_side, &s) != 0)
		abort();
	if (daqiri_connect(sock_path, &d) == 0) {
		if (daqiri_request(d, "{\"type\":\"stats\"}", &out) == 0 ||
		    out != NULL)
			free(out);
		if (daqiri_subscribe(d, "sim/r0", &o, &sub) == 0) {
			if (daqiri_next(sub, &t, 0) == 1)
				(void)daqiri_release(sub, &t);
			(void)daqiri_unsubscribe(sub);
		}
		daqiri_disconnect(d);
	} else {
		/* a failed connect left the daemon side's recv to end */
		(void)daqiri_last_error(NULL);
	}
	pthread_join(th, NULL);
	return 0;
}
