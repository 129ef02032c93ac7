/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Framing and fd passing (proto.h): one message per SOCK_SEQPACKET record,
 * with at most one fd by SCM_RIGHTS; every fd that comes with a rejected
 * record is closed. libc only.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto.h"

#define PROTO_RECV_MAX_FDS	8	/* fds received at once, to close them */

int
daqiri_send_msg(int sock, const char *json, size_t len, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)json, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	ssize_t n;

	if (len > DAQIRI_MSG_SIZE_MAX)
		return -EMSGSIZE;
	if (fd >= 0) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	do {
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	/* SOCK_SEQPACKET sends a record whole or not at all. */
	return (size_t)n == len ? 0 : -EIO;
}

ssize_t
daqiri_recv_msg(int sock, char *buf, size_t cap, int *fd_out)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * PROTO_RECV_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	int fds[PROTO_RECV_MAX_FDS];
	struct cmsghdr *c;
	int nfds = 0, bad = 0, i;
	ssize_t n;

	if (fd_out != NULL)
		*fd_out = -1;
	do {
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
		size_t k, cnt;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
			bad = EBADMSG;
			continue;
		}
		cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (k = 0; k < cnt && nfds < PROTO_RECV_MAX_FDS; k++)
			memcpy(&fds[nfds++], CMSG_DATA(c) + k * sizeof(int),
			    sizeof(int));
	}
	if (mh.msg_flags & MSG_CTRUNC)
		bad = EBADMSG;
	if (nfds > 1 || (nfds == 1 && fd_out == NULL))
		bad = EBADMSG;
	if (n == 0 && nfds > 0)
		bad = EBADMSG;
	if (mh.msg_flags & MSG_TRUNC)
		bad = EMSGSIZE;
	if (bad != 0) {
		for (i = 0; i < nfds; i++)
			close(fds[i]);
		return -bad;
	}
	if (nfds == 1)
		*fd_out = fds[0];
	if ((size_t)n < cap)
		buf[n] = '\0';
	return n;
}
