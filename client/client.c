/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libdaqiri-client (daqiri_client.h): the control connection, the
 * subscription handshake (reply, then one fd per message), the read-only
 * mappings and the ring, and the waiting in daqiri_next(), which watches
 * the control socket too so a dead daemon is noticed within the timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifdef DAQIRI_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "daqiri_client.h"
#include "proto.h"
#include "ring.h"

/* The daemon answers at once (it never blocks); this bounds a request
 * against a daemon that is stuck. */
#define CLIENT_REPLY_TIMEOUT_MS	10000
/* Busy-poll: how often the spinning reader looks at the control socket. */
#define CLIENT_SPIN_CHECK_NS	200000ull

_Static_assert((unsigned)DAQIRI_TENSOR_COMPLETE == DAQIRI_TENSOR_COMPLETE &&
    (unsigned)DAQIRI_TENSOR_TIMEOUT == DAQIRI_TENSOR_TIMEOUT &&
    (unsigned)DAQIRI_TENSOR_EVICTED == DAQIRI_TENSOR_EVICTED &&
    (unsigned)DAQIRI_TENSOR_HAS_GAPS == DAQIRI_TENSOR_HAS_GAPS &&
    (unsigned)DAQIRI_TENSOR_RESYNC == DAQIRI_TENSOR_RESYNC &&
    (unsigned)DAQIRI_TENSOR_FLUSH == DAQIRI_TENSOR_FLUSH, "tensor flags");

struct daqiri_sub {
	struct daqiri *d;
	struct daqiri_sub *next;
	struct daqiri_sub_info info;
	struct daqiri_ring ring;
	uint32_t flags;
	bool closed;			/* the daemon ended it (event) */
	int wake_fd;			/* our end of the wake-up socketpair */
	const uint8_t *tensor_map;	/* host kinds */
	size_t tensor_len;
	const uint8_t *bitmap_map;
	size_t bitmap_len;
	void *ring_map;
	size_t ring_len;
	uint8_t *held;			/* nbufs flags */
	bool cuda_registered;
	void *dev_base;			/* device kind: IPC-opened allocation */
	void **events;			/* device kind: cudaEvent_t per buffer */
};

struct daqiri {
	int fd;
	bool dead;
	bool have_reason;		/* err holds a sub_closed reason */
	uint32_t next_id;
	uint64_t conn_id;
	struct daqiri_sub *subs;
	char err[DAQIRI_ERR_MSG_MAX + 64];	/* room for a prefix */
	int rlen;			/* length of the last message in rbuf */
	char rbuf[DAQIRI_MSG_SIZE_MAX + 1];
	char wbuf[DAQIRI_MSG_SIZE_MAX + 1];
};

/* Why the last daqiri_connect() of this thread failed, when the daemon
 * said (daqiri_last_error(NULL)). */
static _Thread_local char connect_err[DAQIRI_ERR_MSG_MAX + 64];

static void
set_err(struct daqiri *d, const char *msg)
{
	snprintf(d->err, sizeof(d->err), "%s", msg);
	d->have_reason = false;
}

/* The connection is gone. A reason the daemon gave first (a sub_closed
 * event) is kept: it says more than the hang-up. */
static void
mark_dead(struct daqiri *d)
{
	d->dead = true;
	if (!d->have_reason)
		set_err(d, "the daemon closed the connection");
}

static struct daqiri_sub *
sub_find(struct daqiri *d, uint32_t id)
{
	struct daqiri_sub *s;

	for (s = d->subs; s != NULL; s = s->next)
		if (s->info.sub_id == id)
			return s;
	return NULL;
}

/* A daemon message that is not the awaited reply. */
static void
handle_unsolicited(struct daqiri *d, const struct daqiri_msg *m)
{
	struct daqiri_sub *s;

	if (m->type == DAQIRI_MSG_EVENT &&
	    m->u.event.kind == DAQIRI_EV_SUB_CLOSED) {
		s = sub_find(d, m->u.event.sub_id);
		if (s != NULL)
			s->closed = true;
		snprintf(d->err, sizeof(d->err), "subscription %u ended: %s",
		    m->u.event.sub_id, m->u.event.message);
		d->have_reason = true;
	}
}

/*
 * Receive one message, waiting at most timeout_ms (-1 forever). Returns
 * 1 with *m decoded (and *fd when fd != NULL), 0 on timeout, or a
 * negative errno (-ENOTCONN: the daemon is gone).
 */
static int
recv_one(struct daqiri *d, struct daqiri_msg *m, int *fd, int timeout_ms)
{
	struct pollfd p = { .fd = d->fd, .events = POLLIN };
	struct daqiri_err err;
	ssize_t n;
	int r;

	if (d->dead)
		return -ENOTCONN;
	for (;;) {
		n = daqiri_recv_msg(d->fd, d->rbuf, DAQIRI_MSG_SIZE_MAX, fd);
		if (n != -EAGAIN)
			break;
		if (timeout_ms == 0)
			return 0;
		r = poll(&p, 1, timeout_ms);
		if (r < 0)
			return -errno;
		if (r == 0)
			return 0;
	}
	if (n == 0 || n == -ECONNRESET || n == -EPIPE) {
		mark_dead(d);
		return -ENOTCONN;
	}
	if (n < 0)
		return (int)n;
	d->rlen = (int)n;
	if (daqiri_msg_decode(d->rbuf, (size_t)n, m, &err) < 0) {
		if (fd != NULL && *fd >= 0) {
			close(*fd);
			*fd = -1;
		}
		set_err(d, err.msg);
		return -EPROTO;
	}
	return 1;
}

/* Read whatever the daemon sent unasked (events, hang-up); never waits. */
static int
pump(struct daqiri *d)
{
	struct daqiri_msg m;
	int r;

	while ((r = recv_one(d, &m, NULL, 0)) == 1) {
		handle_unsolicited(d, &m);
		daqiri_msg_free(&m);
	}
	return r == -ENOTCONN ? r : 0;
}

static int
send_obj(struct daqiri *d, cJSON *obj)
{
	struct pollfd p = { .fd = d->fd, .events = POLLOUT };
	int n, r;

	if (obj == NULL)
		return -ENOMEM;
	n = daqiri_msg_print(obj, d->wbuf, sizeof(d->wbuf));
	cJSON_Delete(obj);
	if (n < 0)
		return n;
	for (;;) {
		r = daqiri_send_msg(d->fd, d->wbuf, (size_t)n, -1);
		if (r != -EAGAIN)
			break;
		if (poll(&p, 1, CLIENT_REPLY_TIMEOUT_MS) <= 0)
			return -ETIMEDOUT;
	}
	if (r == -EPIPE || r == -ECONNRESET || r == -ENOTCONN) {
		mark_dead(d);
		return -ENOTCONN;
	}
	return r;
}

/* The next daemon message that is a reply (skipping events), within
 * CLIENT_REPLY_TIMEOUT_MS: 0 with *m, or a negative errno. */
static int
next_reply(struct daqiri *d, struct daqiri_msg *m)
{
	uint64_t deadline = daqiri_mono_ns() + CLIENT_REPLY_TIMEOUT_MS * 1000000ull;
	uint64_t t;
	int r;

	for (;;) {
		t = daqiri_mono_ns();
		if (t >= deadline)
			return -ETIMEDOUT;
		r = recv_one(d, m, NULL, (int)((deadline - t) / 1000000ull) + 1);
		if (r < 0)
			return r;
		if (r == 0)
			continue;
		if (m->type == DAQIRI_MSG_REPLY)
			return 0;
		handle_unsolicited(d, m);
		daqiri_msg_free(m);
	}
}

/*
 * Wait for the reply to a request. Returns 0 with *m the decoded reply
 * (its status not yet looked at), or a negative errno. A reply that came
 * in parts is reassembled: m->json is then the whole reply and d->rlen
 * is -1 (d->rbuf holds only the last part).
 */
static int
wait_reply(struct daqiri *d, struct daqiri_msg *m)
{
	struct daqiri_err err;
	struct daqiri_msg p;
	cJSON *acc = NULL;
	size_t total;
	int r;

	r = next_reply(d, m);
	if (r < 0 || !m->u.reply.has_part)
		return r;
	total = (size_t)d->rlen;
	if (daqiri_reply_merge(&acc, m, total, &err) < 0)
		goto bad;
	while (m->u.reply.more) {
		/* each part gets the whole wait: the daemon sends as fast as
		 * we read */
		r = next_reply(d, &p);
		if (r < 0) {
			/* The rest of the series would answer the next
			 * request: the connection is out of step for good. */
			if (!d->dead) {
				snprintf(d->err, sizeof(d->err), "reply in "
				    "parts: part %u of a series: %s",
				    m->u.reply.part + 1, strerror(-r));
				d->have_reason = false;
				shutdown(d->fd, SHUT_RDWR);
				d->dead = true;
			}
			cJSON_Delete(acc);
			daqiri_msg_free(m);
			return r;
		}
		total += (size_t)d->rlen;
		if (daqiri_reply_merge(&acc, &p, total, &err) < 0) {
			daqiri_msg_free(&p);
			goto bad;
		}
		m->u.reply.more = p.u.reply.more;
		m->u.reply.part = p.u.reply.part;
		daqiri_msg_free(&p);
	}
	cJSON_Delete(m->json);
	m->json = acc;
	d->rlen = -1;
	return 0;
bad:
	/* The rest of the series cannot be told from the next reply: the
	 * connection is out of step for good. */
	cJSON_Delete(acc);
	daqiri_msg_free(m);
	snprintf(d->err, sizeof(d->err), "reply in parts: %s", err.msg);
	d->have_reason = false;
	shutdown(d->fd, SHUT_RDWR);
	d->dead = true;
	return -EPROTO;
}

/* Status of a decoded reply -> 0 or negative errno; keeps the message. */
static int
reply_status(struct daqiri *d, const struct daqiri_msg *m)
{
	if (m->u.reply.status == DAQIRI_ST_OK) {
		d->err[0] = '\0';
		return 0;
	}
	set_err(d, m->u.reply.message);
	return daqiri_status_to_errno(m->u.reply.status);
}

/* Send obj (consumed) and wait for its reply: 0 with *m, or errno. */
static int
transact(struct daqiri *d, cJSON *obj, struct daqiri_msg *m)
{
	int r;

	if (d->dead) {
		cJSON_Delete(obj);
		return -ENOTCONN;
	}
	r = send_obj(d, obj);
	if (r < 0)
		return r;
	return wait_reply(d, m);
}

static void
client_name(char *out, size_t cap)
{
	extern char *program_invocation_short_name;
	const char *n = program_invocation_short_name;
	size_t i;

	snprintf(out, cap, "%s", n != NULL ? n : "");
	for (i = 0; out[i] != '\0'; i++)
		if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
			out[i] = '?';
}

int
daqiri_connect(const char *path, struct daqiri **out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char name[DAQIRI_NAME_MAX];
	struct daqiri_msg m;
	struct daqiri *d;
	cJSON *hello;
	int r, fl;

	connect_err[0] = '\0';
	if (out == NULL)
		return -EINVAL;
	*out = NULL;
	if (path == NULL)
		path = getenv(DAQIRI_SOCKET_ENV);
	if (path == NULL || path[0] == '\0')
		path = DAQIRI_DEFAULT_SOCKET;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path));
	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return -ENOMEM;
	d->next_id = 1;
	d->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (d->fd < 0) {
		r = -errno;
		free(d);
		return r;
	}
	if (connect(d->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    (fl = fcntl(d->fd, F_GETFL)) < 0 ||
	    fcntl(d->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		r = -errno;
		goto fail;
	}
	hello = daqiri_msg_new(DAQIRI_MSG_HELLO);
	client_name(name, sizeof(name));
	if (hello != NULL && name[0] != '\0' &&
	    cJSON_AddStringToObject(hello, "client", name) == NULL) {
		cJSON_Delete(hello);
		hello = NULL;
	}
	r = transact(d, hello, &m);
	if (r == -ENOTCONN) {
		/* A daemon that turns us away (too many connections) answers
		 * and hangs up before our hello: read that answer. */
		d->dead = false;
		if (recv_one(d, &m, NULL, 0) == 1) {
			r = m.type == DAQIRI_MSG_REPLY ? reply_status(d, &m) :
			    -ENOTCONN;
			daqiri_msg_free(&m);
			if (r == 0)
				r = -ENOTCONN;
		}
		goto fail;
	}
	if (r < 0)
		goto fail;
	r = reply_status(d, &m);
	if (r == 0) {
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(m.json,
		    "conn");

		if (cJSON_IsNumber(c) && c->valuedouble >= 0)
			d->conn_id = (uint64_t)c->valuedouble;
	}
	daqiri_msg_free(&m);
	if (r < 0)
		goto fail;
	*out = d;
	return 0;
fail:
	snprintf(connect_err, sizeof(connect_err), "%s", d->err);
	close(d->fd);
	free(d);
	return r;
}

const char *
daqiri_last_error(const struct daqiri *d)
{
	return d != NULL ? d->err : connect_err;
}

int
daqiri_fd(const struct daqiri *d)
{
	return d != NULL ? d->fd : -1;
}

int
daqiri_request(struct daqiri *d, const char *json, char **reply)
{
	const cJSON *t;
	struct daqiri_msg m;
	cJSON *req;
	int r, len;

	if (reply != NULL)
		*reply = NULL;
	if (d == NULL || json == NULL || reply == NULL)
		return -EINVAL;
	/* Sent as written (the daemon validates it); only the types that
	 * need the library's own handling are refused here. */
	len = (int)strnlen(json, DAQIRI_MSG_SIZE_MAX + 1);
	if (len > DAQIRI_MSG_SIZE_MAX)
		return -EMSGSIZE;
	req = cJSON_ParseWithLength(json, (size_t)len);
	if (req != NULL) {
		t = cJSON_GetObjectItemCaseSensitive(req, "type");
		if (cJSON_IsString(t) && t->valuestring != NULL &&
		    (strcmp(t->valuestring, "hello") == 0 ||
		    strcmp(t->valuestring, "subscribe") == 0)) {
			cJSON_Delete(req);
			return -EINVAL;
		}
		cJSON_Delete(req);
	}
	if (d->dead)
		return -ENOTCONN;
	r = daqiri_send_msg(d->fd, json, (size_t)len, -1);
	if (r == -EAGAIN) {
		struct pollfd p = { .fd = d->fd, .events = POLLOUT };

		if (poll(&p, 1, CLIENT_REPLY_TIMEOUT_MS) <= 0)
			return -ETIMEDOUT;
		r = daqiri_send_msg(d->fd, json, (size_t)len, -1);
	}
	if (r == -EPIPE || r == -ECONNRESET) {
		mark_dead(d);
		return -ENOTCONN;
	}
	if (r < 0)
		return r;
	r = wait_reply(d, &m);
	if (r < 0)
		return r;
	if (d->rlen >= 0) {
		*reply = strndup(d->rbuf, (size_t)d->rlen);
	} else {
		char *txt = cJSON_PrintUnformatted(m.json);

		*reply = txt != NULL ? strdup(txt) : NULL;
		cJSON_free(txt);
	}
	r = *reply == NULL ? -ENOMEM : reply_status(d, &m);
	daqiri_msg_free(&m);
	return r;
}

int
daqiri_streams(struct daqiri *d, char **json_out)
{
	return daqiri_request(d, "{\"type\":\"streams\"}", json_out);
}

/* ---- subscriptions */

static void
sub_free(struct daqiri_sub *s)
{
	struct daqiri_sub **pp;

	if (s == NULL)
		return;
	if (s->d != NULL)
		for (pp = &s->d->subs; *pp != NULL; pp = &(*pp)->next)
			if (*pp == s) {
				*pp = s->next;
				break;
			}
#ifdef DAQIRI_HAVE_CUDA
	if (s->events != NULL) {
		uint32_t i;

		for (i = 0; i < s->info.nbufs; i++)
			if (s->events[i] != NULL)
				cudaEventDestroy((cudaEvent_t)s->events[i]);
	}
	if (s->dev_base != NULL)
		cudaIpcCloseMemHandle(s->dev_base);
	if (s->cuda_registered)
		cudaHostUnregister((void *)s->tensor_map);
#endif
	free(s->events);
	if (s->tensor_map != NULL)
		munmap((void *)s->tensor_map, s->tensor_len);
	if (s->bitmap_map != NULL)
		munmap((void *)s->bitmap_map, s->bitmap_len);
	if (s->ring_map != NULL)
		munmap(s->ring_map, s->ring_len);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	free(s->held);
	free(s);
}

static int
map_fd(int fd, size_t len, int prot, void **out)
{
	struct stat st;
	void *p;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size < len || len == 0)
		return -EPROTO;
	p = mmap(NULL, len, prot, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	*out = p;
	return 0;
}

#ifdef DAQIRI_HAVE_CUDA
static int
open_device(struct daqiri_sub *s, int fd)
{
	uint64_t need = DAQIRI_IPC_FILE_BYTES(s->info.nbufs);
	uint8_t *h;
	uint32_t i;
	int r = 0;

	h = malloc(need);
	s->events = calloc(s->info.nbufs, sizeof(void *));
	if (h == NULL || s->events == NULL) {
		free(h);
		return -ENOMEM;
	}
	if (pread(fd, h, need, 0) != (ssize_t)need) {
		free(h);
		return -EPROTO;
	}
	if (cudaSetDevice(s->info.device) != cudaSuccess) {
		snprintf(s->d->err, sizeof(s->d->err), "CUDA: cannot use GPU "
		    "%d: %s", s->info.device,
		    cudaGetErrorString(cudaGetLastError()));
		r = -ENODEV;
		goto out;
	}
	{
		cudaIpcMemHandle_t mh;

		memcpy(&mh, h, sizeof(mh));
		if (cudaIpcOpenMemHandle(&s->dev_base, mh,
		    cudaIpcMemLazyEnablePeerAccess) != cudaSuccess) {
			snprintf(s->d->err, sizeof(s->d->err), "CUDA: cannot "
			    "open the stream's memory handle: %s",
			    cudaGetErrorString(cudaGetLastError()));
			s->dev_base = NULL;
			r = -ENODEV;
			goto out;
		}
	}
	for (i = 0; i < s->info.nbufs; i++) {
		cudaIpcEventHandle_t eh;
		cudaEvent_t ev;

		memcpy(&eh, h + DAQIRI_IPC_HANDLE_BYTES * (1 + (size_t)i),
		    sizeof(eh));
		if (cudaIpcOpenEventHandle(&ev, eh) != cudaSuccess) {
			snprintf(s->d->err, sizeof(s->d->err), "CUDA: cannot "
			    "open the event handle of buffer %u: %s", i,
			    cudaGetErrorString(cudaGetLastError()));
			r = -ENODEV;
			goto out;
		}
		s->events[i] = ev;
	}
out:
	if (r < 0)
		cudaGetLastError();
	free(h);
	return r;
}
#endif

/* Receive and map the fds that follow a subscribe reply. */
static int
sub_receive_fds(struct daqiri *d, struct daqiri_sub *s)
{
	const struct daqiri_sub_info *in = &s->info;
	struct daqiri_msg m;
	uint32_t i = 0;
	int fd, r = 0;
	void *p;

	while (i < in->nfds) {
		fd = -1;
		r = recv_one(d, &m, &fd, CLIENT_REPLY_TIMEOUT_MS);
		if (r == 0)
			r = -ETIMEDOUT;
		if (r < 0)
			return r;
		if (m.type == DAQIRI_MSG_EVENT) {
			handle_unsolicited(d, &m);
			daqiri_msg_free(&m);
			if (fd >= 0)
				close(fd);
			continue;
		}
		if (m.type != DAQIRI_MSG_SUB_FD || fd < 0 ||
		    m.u.sub_fd.sub_id != in->sub_id ||
		    m.u.sub_fd.index != i || m.u.sub_fd.count != in->nfds ||
		    m.u.sub_fd.kind != in->fds[i]) {
			daqiri_msg_free(&m);
			if (fd >= 0)
				close(fd);
			set_err(d, "unexpected message in the fd series");
			return -EPROTO;
		}
		daqiri_msg_free(&m);
		switch (in->fds[i]) {
		case DAQIRI_FD_TENSOR:
			s->tensor_len = in->map_bytes;
			r = map_fd(fd, s->tensor_len, PROT_READ, &p);
			if (r == 0)
				s->tensor_map = p;
			break;
		case DAQIRI_FD_IPC:
#ifdef DAQIRI_HAVE_CUDA
			r = open_device(s, fd);
#else
			set_err(d, "device stream: this libdaqiri-client was "
			    "built without CUDA");
			r = -ENOTSUP;
#endif
			break;
		case DAQIRI_FD_BITMAP:
			s->bitmap_len = (size_t)in->nbufs * in->bitmap_bytes;
			r = map_fd(fd, s->bitmap_len, PROT_READ, &p);
			if (r == 0)
				s->bitmap_map = p;
			break;
		case DAQIRI_FD_RING:
			s->ring_len = in->ring_bytes;
			r = map_fd(fd, s->ring_len, PROT_READ | PROT_WRITE, &p);
			if (r == 0) {
				s->ring_map = p;
				r = daqiri_ring_attach(&s->ring, p, s->ring_len);
				if (r == 0 && s->ring.nbufs != in->nbufs)
					r = -EPROTO;
				/* A new ring asks for wake-ups; a spinning
				 * reader wants none, and the daemon then
				 * makes no system call for it. */
				if (r == 0 && (s->flags & DAQIRI_SUB_BUSY_POLL))
					daqiri_ring_disarm(&s->ring);
			}
			break;
		case DAQIRI_FD_WAKE:
			/* Our own socket: whatever the caller does to it
			 * cannot reach the daemon's end. Reads use
			 * MSG_DONTWAIT, so its file flags do not matter. */
			s->wake_fd = fd;
			fd = -1;
			break;
		default:
			r = -EPROTO;
			break;
		}
		if (fd >= 0)
			close(fd);
		i++;
		if (r < 0) {
			/* The rest of the series still arrives: take it
			 * off the socket so the connection stays usable. */
			while (i < in->nfds && recv_one(d, &m, &fd,
			    CLIENT_REPLY_TIMEOUT_MS) == 1) {
				if (fd >= 0)
					close(fd);
				fd = -1;
				if (m.type == DAQIRI_MSG_SUB_FD)
					i++;
				else
					handle_unsolicited(d, &m);
				daqiri_msg_free(&m);
			}
			return r;
		}
	}
	return 0;
}

static int
unsubscribe_id(struct daqiri *d, uint32_t id)
{
	cJSON *req = daqiri_msg_new(DAQIRI_MSG_UNSUBSCRIBE);
	struct daqiri_msg m;
	int r;

	if (req != NULL && cJSON_AddNumberToObject(req, "sub", id) == NULL) {
		cJSON_Delete(req);
		req = NULL;
	}
	r = transact(d, req, &m);
	if (r < 0)
		return r;
	r = reply_status(d, &m);
	daqiri_msg_free(&m);
	return r;
}

int
daqiri_subscribe(struct daqiri *d, const char *stream,
		 const struct daqiri_sub_opts *opts, struct daqiri_sub **out)
{
	struct daqiri_sub_opts o = { .size = sizeof(o) };
	struct daqiri_sub_req req;
	struct daqiri_err err;
	struct daqiri_msg m;
	struct daqiri_sub *s;
	cJSON *obj;
	int r;

	if (out == NULL)
		return -EINVAL;
	*out = NULL;
	if (d == NULL || stream == NULL)
		return -EINVAL;
	if (opts != NULL) {
		if (opts->size < offsetof(struct daqiri_sub_opts, flags))
			return -EINVAL;
		memcpy(&o, opts, opts->size < sizeof(o) ? opts->size :
		    sizeof(o));
	}
	memset(&req, 0, sizeof(req));
	if (strlen(stream) >= sizeof(req.stream) ||
	    (unsigned)o.mode >= DAQIRI_SUB_MODE_MAX ||
	    (o.mode == DAQIRI_SUB_SHARED &&
	    (o.group == NULL || strlen(o.group) >= sizeof(req.group))))
		return -EINVAL;
	snprintf(req.stream, sizeof(req.stream), "%s", stream);
	req.mode = o.mode;
	if (o.mode == DAQIRI_SUB_SHARED)
		snprintf(req.group, sizeof(req.group), "%s", o.group);
	req.depth = o.depth;
	req.max_held = o.max_held;
#ifndef DAQIRI_HAVE_CUDA
	if (o.flags & DAQIRI_SUB_CUDA_REGISTER)
		return -ENOTSUP;
#endif
	obj = daqiri_msg_new(DAQIRI_MSG_SUBSCRIBE);
	if (obj != NULL && daqiri_sub_req_encode(&req, obj) < 0) {
		cJSON_Delete(obj);
		obj = NULL;
	}
	r = transact(d, obj, &m);
	if (r < 0)
		return r;
	r = reply_status(d, &m);
	if (r < 0) {
		daqiri_msg_free(&m);
		return r;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		daqiri_msg_free(&m);
		return -ENOMEM;
	}
	s->wake_fd = -1;
	s->flags = o.flags;
	if (daqiri_sub_info_decode(m.json, &s->info, &err) < 0) {
		/* Without readable metadata the fd series that follows
		 * cannot be taken apart: the connection is unusable. */
		daqiri_msg_free(&m);
		snprintf(d->err, sizeof(d->err), "bad subscribe reply: %s",
		    err.msg);
		free(s);
		shutdown(d->fd, SHUT_RDWR);
		d->dead = true;
		return -EPROTO;
	}
	daqiri_msg_free(&m);
	s->held = calloc(s->info.nbufs, 1);
	if (s->held == NULL)
		r = -ENOMEM;
	s->d = d;
	s->next = d->subs;
	d->subs = s;
	if (r == 0)
		r = sub_receive_fds(d, s);
#ifdef DAQIRI_HAVE_CUDA
	if (r == 0 && (o.flags & DAQIRI_SUB_CUDA_REGISTER) &&
	    s->info.mem_kind == DAQIRI_MEM_HOST_PINNED) {
		if (cudaHostRegister((void *)s->tensor_map, s->tensor_len,
		    cudaHostRegisterReadOnly) == cudaSuccess) {
			s->cuda_registered = true;
		} else {
			cudaGetLastError();
			r = -ENODEV;
		}
	}
#endif
	if (r < 0) {
		char why[sizeof(d->err)];

		/* Undo the daemon's side; the message says why we failed. */
		memcpy(why, d->err, sizeof(why));
		if (!d->dead)
			unsubscribe_id(d, s->info.sub_id);
		memcpy(d->err, why, sizeof(why));
		sub_free(s);
		return r;
	}
	*out = s;
	return 0;
}

int
daqiri_sub_info(const struct daqiri_sub *sub, struct daqiri_stream_info *info)
{
	struct daqiri_stream_info x;
	const struct daqiri_sub_info *in;

	if (sub == NULL || info == NULL || info->size < sizeof(size_t))
		return -EINVAL;
	in = &sub->info;
	memset(&x, 0, sizeof(x));
	x.size = info->size;
	snprintf(x.name, sizeof(x.name), "%s", in->stream);
	x.kind = in->kind;
	x.sub_id = in->sub_id;
	x.mode = in->mode;
	x.mem_kind = in->mem_kind;
	x.device = in->device;
	x.dtype = in->dtype;
	x.dtype_name = daqiri_dtype_name(in->dtype);
	x.elem_bytes = in->elem_bytes;
	x.fill = in->fill;
	x.nbufs = in->nbufs;
	x.ppb = in->ppb;
	x.slot_bytes = in->slot_bytes;
	x.elems_per_slot = in->elems_per_slot;
	x.tensor_bytes = in->tensor_bytes;
	x.ring_depth = in->ring_depth;
	x.max_held = in->max_held;
	memcpy(info, &x, info->size < sizeof(x) ? info->size : sizeof(x));
	return 0;
}

static int
fill_tensor(struct daqiri_sub *s, const struct daqiri_desc *dc,
	    struct daqiri_tensor *t)
{
	const struct daqiri_sub_info *in = &s->info;
	struct daqiri_tensor x;
	uint64_t off;

	/* The daemon is trusted, but a descriptor naming a buffer outside
	 * the stream or one this consumer still holds would make us hand
	 * out memory twice. */
	if (dc->buf_index >= in->nbufs || s->held[dc->buf_index])
		return -EPROTO;
	memset(&x, 0, sizeof(x));
	x.size = t->size;
	off = in->buf_offset + (uint64_t)dc->buf_index * in->buf_stride;
	if (in->mem_kind == DAQIRI_MEM_DEVICE) {
		x.data = (const uint8_t *)s->dev_base + off;
		x.event = s->events != NULL ? s->events[dc->buf_index] : NULL;
	} else {
		x.data = s->tensor_map + off;
	}
	x.device = in->device;
	x.dtype = in->dtype;
	x.dtype_name = daqiri_dtype_name(in->dtype);
	x.elem_bytes = in->elem_bytes;
	x.ndim = 2;
	x.shape[0] = in->ppb;
	x.shape[1] = in->elems_per_slot;
	x.bytes = in->tensor_bytes;
	x.slot_bytes = in->slot_bytes;
	x.seq = dc->seq;
	x.batch_id = dc->batch_id;
	x.flags = dc->flags;
	x.packets_expected = dc->packets_expected;
	x.packets_received = dc->packets_received;
	x.bitmap = (const uint64_t *)(s->bitmap_map +
	    (size_t)dc->buf_index * in->bitmap_bytes);
	x.bitmap_bits = in->ppb;
	if (in->kind == DAQIRI_STREAM_RAW)
		x.lengths = (const uint32_t *)((const uint8_t *)x.bitmap +
		    ((size_t)in->ppb + 63) / 64 * 8);
	x.first_rx_ns = dc->first_rx_ns;
	x.last_rx_ns = dc->last_rx_ns;
	x.publish_ns = dc->publish_ns;
	x.buf_index = dc->buf_index;
	s->held[dc->buf_index] = 1;
	memcpy(t, &x, t->size < sizeof(x) ? t->size : sizeof(x));
	return 1;
}

static int
try_pop(struct daqiri_sub *s, struct daqiri_tensor *t)
{
	struct daqiri_desc dc;
	int r = daqiri_comp_pop(&s->ring, &dc);

	if (r <= 0)
		return r;
	return fill_tensor(s, &dc, t);
}

/*
 * Before reporting "empty" or sleeping: take the wake-ups already queued
 * off the socket (so a level-triggered poll does not fire for nothing),
 * then arm need_wakeup and look at the ring again (ring.h explains the
 * order). 0 = armed and still empty, 1 = a descriptor arrived.
 */
static int
sub_arm(struct daqiri_sub *s)
{
	int r = daqiri_wake_drain(s->wake_fd);

	if (r < 0)
		return r;
	return daqiri_ring_arm(&s->ring);
}

int
daqiri_next(struct daqiri_sub *s, struct daqiri_tensor *t, int timeout_ms)
{
	struct pollfd p[2];
	uint64_t deadline = 0, now, last_check = 0;
	int r, wait;

	if (s == NULL || t == NULL ||
	    t->size < offsetof(struct daqiri_tensor, data) + sizeof(void *))
		return -EINVAL;
	if (timeout_ms > 0)
		deadline = daqiri_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		r = try_pop(s, t);
		if (r != 0)
			return r;
		if (s->closed)
			return -ESHUTDOWN;
		now = (s->flags & DAQIRI_SUB_BUSY_POLL) ? daqiri_mono_ns() : 0;
		if (!(s->flags & DAQIRI_SUB_BUSY_POLL) || timeout_ms == 0 ||
		    now - last_check >= CLIENT_SPIN_CHECK_NS) {
			last_check = now;
			if (pump(s->d) < 0) {
				/* Whatever was published stays readable; a
				 * subscription the daemon ended before it
				 * hung up says so. */
				r = try_pop(s, t);
				return r != 0 ? r : s->closed ? -ESHUTDOWN :
				    -ENOTCONN;
			}
			if (s->closed)
				continue;
		}
		if (s->flags & DAQIRI_SUB_BUSY_POLL) {
			if (timeout_ms == 0 ||
			    (timeout_ms > 0 && now >= deadline))
				return 0;
			continue;
		}
		/* Armed also when returning 0 at once: a caller that polls
		 * daqiri_sub_fd() itself is woken by the next publish. */
		r = sub_arm(s);
		if (r < 0)
			return r;
		if (r > 0)
			continue;
		if (timeout_ms == 0)
			return 0;
		wait = -1;
		if (timeout_ms > 0) {
			now = daqiri_mono_ns();
			if (now >= deadline)
				return 0;
			wait = (int)((deadline - now + 999999) / 1000000);
		}
		p[0].fd = s->wake_fd;
		p[0].events = POLLIN;
		p[1].fd = s->d->fd;
		p[1].events = POLLIN;
		p[0].revents = p[1].revents = 0;
		r = poll(p, 2, wait);
		if (r < 0)
			return errno == EINTR ? -EINTR : -errno;
		/* The wake-up is read by the next sub_arm(), off the path
		 * between waking and returning the tensor. */
	}
}

int
daqiri_release(struct daqiri_sub *s, const struct daqiri_tensor *t)
{
	int r;

	if (s == NULL || t == NULL || t->size <
	    offsetof(struct daqiri_tensor, buf_index) + sizeof(uint32_t) ||
	    t->buf_index >= s->info.nbufs || !s->held[t->buf_index])
		return -EINVAL;
	r = daqiri_rel_push(&s->ring, t->buf_index);
	if (r < 0)
		return r;
	s->held[t->buf_index] = 0;
	return 0;
}

int
daqiri_sub_fd(const struct daqiri_sub *s)
{
	return s != NULL ? s->wake_fd : -EINVAL;
}

int
daqiri_sub_arm(struct daqiri_sub *s)
{
	if (s == NULL)
		return -EINVAL;
	return sub_arm(s);
}

int
daqiri_unsubscribe(struct daqiri_sub *s)
{
	int r;

	if (s == NULL)
		return 0;
	r = s->d->dead ? -ENOTCONN : unsubscribe_id(s->d, s->info.sub_id);
	/* A subscription the daemon already ended is gone either way. */
	if (r == -ESRCH && s->closed)
		r = 0;
	sub_free(s);
	return r;
}

void
daqiri_disconnect(struct daqiri *d)
{
	if (d == NULL)
		return;
	while (d->subs != NULL)
		sub_free(d->subs);
	close(d->fd);
	free(d);
}
