/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libdaqiri-client (daqiri_client.h), the control connection: connect and
 * hello, one request and its reply (reassembled when it comes in parts),
 * the fd series after a subscribe or tx_open reply, the events the daemon
 * sends unasked, the raw request of daqirictl, and what a failed connect
 * means for the person who asked.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "client_internal.h"
#include "relay_wire.h"


/* Why the last daqiri_connect() of this thread failed, when the daemon
 * said (daqiri_last_error(NULL)). */
static _Thread_local char connect_err[DAQIRI_ERR_MSG_MAX + 64];

void
client_set_err(struct daqiri *d, const char *msg)
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
		client_set_err(d, "the daemon closed the connection");
}

/* An exchange ran out of time: the rest of its answer, if it ever
 * comes, could not be told from the next one's, so the connection is
 * given up (a reconnecting subscription comes back on a new one). */
static int
exchange_timed_out(struct daqiri *d, const char *what)
{
	if (!d->dead) {
		snprintf(d->err, sizeof(d->err), "no %s from the daemon within "
		    "%d ms; the connection is closed", what,
		    CLIENT_REPLY_TIMEOUT_MS);
		d->have_reason = false;
		shutdown(d->fd, SHUT_RDWR);
		d->dead = true;
	}
	return -ETIMEDOUT;
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
void
client_handle_unsolicited(struct daqiri *d, const struct daqiri_msg *m)
{
	struct daqiri_sub *s;
	struct daqiri_tx *t;

	if (m->type != DAQIRI_MSG_EVENT)
		return;
	if (m->u.event.kind == DAQIRI_EV_SUB_CLOSED) {
		s = sub_find(d, m->u.event.sub_id);
		if (s != NULL)
			s->closed = true;
		snprintf(d->err, sizeof(d->err), "subscription %u ended: %s",
		    m->u.event.sub_id, m->u.event.message);
		d->have_reason = true;
	} else if (m->u.event.kind == DAQIRI_EV_TX_CLOSED) {
		/* ids restart with a new daemon: only a channel of this
		 * connection is the one the event names */
		for (t = d->txs; t != NULL; t = t->next)
			if (t->info.tx_id == m->u.event.sub_id &&
			    client_tx_current(t))
				t->closed = true;
		snprintf(d->err, sizeof(d->err), "TX channel %u ended: %s",
		    m->u.event.sub_id, m->u.event.message);
		d->have_reason = true;
	}
}

/*
 * Receive one message, waiting at most timeout_ms (-1 forever). Returns
 * 1 with *m decoded (and *fd when fd != NULL), 0 on timeout, or a
 * negative errno (-ENOTCONN: the daemon is gone).
 */
int
client_recv_one(struct daqiri *d, struct daqiri_msg *m, int *fd,
		int timeout_ms)
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
		client_set_err(d, err.msg);
		return -EPROTO;
	}
	return 1;
}

int
client_recv_fds(struct daqiri *d, uint32_t id, uint32_t n,
		const enum daqiri_fd_kind *kinds, int *fds)
{
	struct daqiri_msg m;
	uint32_t i = 0, j;
	int fd, r;

	while (i < n) {
		int left = client_left_ms(d);

		fd = -1;
		r = left > 0 ? client_recv_one(d, &m, &fd, left) : 0;
		if (r == 0)
			r = exchange_timed_out(d, "descriptors");
		if (r < 0)
			goto fail;
		if (m.type == DAQIRI_MSG_EVENT) {
			client_handle_unsolicited(d, &m);
			daqiri_msg_free(&m);
			if (fd >= 0)
				close(fd);
			continue;
		}
		if (m.type != DAQIRI_MSG_SUB_FD || fd < 0 ||
		    m.u.sub_fd.sub_id != id || m.u.sub_fd.index != i ||
		    m.u.sub_fd.count != n || m.u.sub_fd.kind != kinds[i]) {
			daqiri_msg_free(&m);
			if (fd >= 0)
				close(fd);
			client_set_err(d,
			    "unexpected message in the fd series");
			r = -EPROTO;
			goto fail;
		}
		daqiri_msg_free(&m);
		fds[i++] = fd;
	}
	return 0;
fail:
	for (j = 0; j < i; j++) {
		close(fds[j]);
		fds[j] = -1;
	}
	return r;
}

/* Read whatever the daemon sent unasked (events, hang-up); never waits. */
int
client_pump(struct daqiri *d)
{
	struct daqiri_msg m;
	int r;

	while ((r = client_recv_one(d, &m, NULL, 0)) == 1) {
		client_handle_unsolicited(d, &m);
		daqiri_msg_free(&m);
	}
	return r == -ENOTCONN ? r : 0;
}

int
client_send(struct daqiri *d, cJSON *obj)
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

int
client_left_ms(const struct daqiri *d)
{
	uint64_t t = daqiri_mono_ns();

	return t >= d->xdeadline_ns ? 0 :
	    (int)((d->xdeadline_ns - t + 999999) / 1000000ull);
}

void
client_exchange_start(struct daqiri *d)
{
	d->xdeadline_ns = daqiri_mono_ns() +
	    CLIENT_REPLY_TIMEOUT_MS * 1000000ull;
}

/* The next daemon message that is a reply (skipping events), before the
 * exchange's deadline: 0 with *m, or a negative errno. */
static int
next_reply(struct daqiri *d, struct daqiri_msg *m)
{
	int r, left;

	for (;;) {
		if ((left = client_left_ms(d)) == 0)
			return exchange_timed_out(d, "reply");
		r = client_recv_one(d, m, NULL, left);
		if (r < 0)
			return r;
		if (r == 0)
			continue;
		if (m->type == DAQIRI_MSG_REPLY)
			return 0;
		client_handle_unsolicited(d, m);
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
	size_t total, items;
	int r;

	r = next_reply(d, m);
	if (r < 0 || !m->u.reply.has_part)
		return r;
	total = (size_t)d->rlen;
	items = daqiri_json_items(m->json);
	if (daqiri_reply_merge(&acc, m, total, &err) < 0)
		goto bad;
	while (m->u.reply.more) {
		/* every part within the exchange's one wait */
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
		items += daqiri_json_items(p.json);
		if (items > DAQIRI_REPLY_ITEMS_MAX) {
			daqiri_msg_free(&p);
			snprintf(err.msg, sizeof(err.msg), "reply of more than "
			    "%u values", DAQIRI_REPLY_ITEMS_MAX);
			goto bad;
		}
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
int
client_reply_status(struct daqiri *d, const struct daqiri_msg *m)
{
	if (m->u.reply.status == DAQIRI_ST_OK) {
		d->err[0] = '\0';
		return 0;
	}
	client_set_err(d, m->u.reply.message);
	return daqiri_status_to_errno(m->u.reply.status);
}

bool
client_is_dgram(int fd)
{
	int ty = 0;
	socklen_t l = sizeof(ty);

	return getsockopt(fd, SOL_SOCKET, SO_TYPE, &ty, &l) == 0 &&
	    ty == SOCK_DGRAM;
}

/* A request of type t with one id field: its reply's status. */
int
client_request_id(struct daqiri *d, enum daqiri_msg_type t, const char *key,
		  uint32_t id)
{
	cJSON *req = daqiri_msg_new(t);
	struct daqiri_msg m;
	int r;

	if (req != NULL && cJSON_AddNumberToObject(req, key, id) == NULL) {
		cJSON_Delete(req);
		req = NULL;
	}
	r = client_transact(d, req, &m);
	if (r < 0)
		return r;
	r = client_reply_status(d, &m);
	daqiri_msg_free(&m);
	return r;
}

/* Send obj (consumed) and wait for its reply: 0 with *m, or errno. */
int
client_wait_reply(struct daqiri *d, struct daqiri_msg *m)
{
	return wait_reply(d, m);
}

int
client_transact(struct daqiri *d, cJSON *obj, struct daqiri_msg *m)
{
	int r;

	/* a resubscribe's reply under way would be read as this one's */
	if (d->dead || (d->state == CLIENT_RESUB && !d->in_resub)) {
		cJSON_Delete(obj);
		return -ENOTCONN;
	}
	client_exchange_start(d);
	r = client_send(d, obj);
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
client_socket(const char *path, bool nonblock, int *out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, fl, r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC |
	    (nonblock ? SOCK_NONBLOCK : 0), 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    (fl = fcntl(fd, F_GETFL)) < 0 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	*out = fd;
	return 0;
}

cJSON *
client_hello_new(void)
{
	char name[DAQIRI_NAME_MAX];
	cJSON *hello = daqiri_msg_new(DAQIRI_MSG_HELLO);

	client_name(name, sizeof(name));
	if (hello != NULL && name[0] != '\0' &&
	    cJSON_AddStringToObject(hello, "client", name) == NULL) {
		cJSON_Delete(hello);
		hello = NULL;
	}
	return hello;
}

void
client_hello_done(struct daqiri *d, const struct daqiri_msg *m)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(m->json, "conn");
	const cJSON *i = cJSON_GetObjectItemCaseSensitive(m->json, "instance");
	char *end;

	/* below 2^64 (its upper bound is exclusive: a double of 2^64
	 * does not fit) */
	if (daqiri_json_int_in(c, 0, DAQIRI_JSON_U64_END) &&
	    c->valuedouble < DAQIRI_JSON_U64_END)
		d->conn_id = (uint64_t)c->valuedouble;
	/* A daemon from before "instance" says nothing: 0. */
	d->instance = 0;
	if (cJSON_IsString(i) && i->valuestring != NULL &&
	    strlen(i->valuestring) == DAQIRI_INSTANCE_HEX) {
		errno = 0;
		d->instance = strtoull(i->valuestring, &end, 16);
		if (errno != 0 || *end != '\0')
			d->instance = 0;
	}
}

/* daqiri_connect() of a ucx:// URL: a relay's consumer. */
static int
connect_remote(const char *url, struct daqiri **out)
{
#ifdef DAQIRI_HAVE_UCX
	struct daqiri *d = calloc(1, sizeof(*d));
	int r;

	if (d == NULL)
		return -ENOMEM;
	d->next_id = 1;
	snprintf(d->path, sizeof(d->path), "%s", url);
	r = client_remote_connect(d, url);
	if (r < 0) {
		snprintf(connect_err, sizeof(connect_err), "%s", d->err);
		client_remote_free(d);
		free(d);
		return r;
	}
	*out = d;
	return 0;
#else
	(void)out;
	(void)url;
	snprintf(connect_err, sizeof(connect_err), "this libdaqiri-client "
	    "was built without UCX (HAVE_UCX=0), so it reaches no relay");
	return -EPROTONOSUPPORT;
#endif
}

int
daqiri_connect(const char *path, struct daqiri **out)
{
	struct daqiri_msg m;
	struct daqiri *d;
	int r;

	connect_err[0] = '\0';
	if (out == NULL)
		return -EINVAL;
	*out = NULL;
	if (path == NULL)
		path = getenv(DAQIRI_SOCKET_ENV);
	if (path == NULL || path[0] == '\0')
		path = DAQIRI_DEFAULT_SOCKET;
	if (strncmp(path, RELAY_URL_PREFIX, strlen(RELAY_URL_PREFIX)) == 0)
		return connect_remote(path, out);
	if (strlen(path) >= sizeof(d->path))
		return -ENAMETOOLONG;
	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return -ENOMEM;
	d->next_id = 1;
	snprintf(d->path, sizeof(d->path), "%s", path);
	r = client_socket(path, false, &d->fd);
	if (r < 0) {
		free(d);
		return r;
	}
	r = client_transact(d, client_hello_new(), &m);
	if (r == -ENOTCONN) {
		/* A daemon that turns us away (too many connections) answers
		 * and hangs up before our hello: read that answer. */
		d->dead = false;
		if (client_recv_one(d, &m, NULL, 0) == 1) {
			r = m.type == DAQIRI_MSG_REPLY ?
			    client_reply_status(d, &m) : -ENOTCONN;
			daqiri_msg_free(&m);
			if (r == 0)
				r = -ENOTCONN;
		}
		goto fail;
	}
	if (r < 0)
		goto fail;
	r = client_reply_status(d, &m);
	if (r == 0)
		client_hello_done(d, &m);
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

/* The name of group gid, else its number, into buf. */
static const char *
group_name(gid_t gid, char *buf, size_t len)
{
	struct group g, *res = NULL;
	char tmp[1024];

	if (getgrgid_r(gid, &g, tmp, sizeof(tmp), &res) == 0 && res != NULL)
		snprintf(buf, len, "%s", g.gr_name);
	else
		snprintf(buf, len, "%u", (unsigned)gid);
	return buf;
}

/* daqiri_connect_hint() of a ucx:// URL. */
static const char *
remote_hint(int neg_errno, const char *url, const char *said, char *buf,
	    size_t len)
{
	switch (-neg_errno) {
	case ECONNREFUSED:
	case ETIMEDOUT:
	case EHOSTUNREACH:
		snprintf(buf, len, "%s (is daqiri-relay running there? start "
		    "it on that host: 'systemctl start daqiri-relay', and give "
		    "it an address this host reaches: --listen ucx://ADDR:PORT)",
		    said[0] != '\0' ? said : url);
		break;
	default:
		snprintf(buf, len, "cannot connect to %s: %s", url,
		    said[0] != '\0' ? said : strerror(-neg_errno));
		break;
	}
	return buf;
}

const char *
daqiri_connect_hint(int neg_errno, const char *path, char *buf, size_t len)
{
	static const char start[] = "is it running? start it with "
	    "'systemctl start daqirid', or give its socket with -s / $"
	    DAQIRI_SOCKET_ENV;
	const char *said = connect_err;
	char grp[64];
	struct stat st;

	if (buf == NULL || len == 0)
		return "";
	if (path == NULL)
		path = getenv(DAQIRI_SOCKET_ENV);
	if (path == NULL || path[0] == '\0')
		path = DAQIRI_DEFAULT_SOCKET;
	if (strncmp(path, RELAY_URL_PREFIX, strlen(RELAY_URL_PREFIX)) == 0)
		return remote_hint(neg_errno, path, said, buf, len);
	switch (-neg_errno) {
	case ENOENT:
	case ENOTDIR:
		snprintf(buf, len, "no daqirid is listening at %s (%s)", path,
		    start);
		break;
	case ECONNREFUSED:
		if (stat(path, &st) == 0 && !S_ISSOCK(st.st_mode))
			snprintf(buf, len, "%s is not a socket, so no daqirid "
			    "is listening there (give the daemon's control "
			    "socket with -s / $%s)", path, DAQIRI_SOCKET_ENV);
		else
			snprintf(buf, len, "no daqirid is listening at %s (the "
			    "socket is there but nobody accepts: %s)", path,
			    start);
		break;
	case EACCES:
	case EPERM:
		if (stat(path, &st) == 0 && st.st_gid == 0)
			/* joining root's group is no advice to give */
			snprintf(buf, len, "permission denied on %s: the socket "
			    "is for root only, socket_group in daqirid.yaml is "
			    "unset or root (set it, e.g. socket_group: daqiri, "
			    "restart daqirid, then add yourself: usermod -aG "
			    "daqiri $USER, and log in again)", path);
		else if (stat(path, &st) == 0)
			snprintf(buf, len, "permission denied on %s: the socket "
			    "is for root and the group set by socket_group in "
			    "daqirid.yaml, here '%s' (add yourself to that "
			    "group: usermod -aG %s $USER, then log in again)",
			    path, group_name(st.st_gid, grp, sizeof(grp)),
			    grp);
		else
			snprintf(buf, len, "permission denied on %s: a "
			    "directory on the way is closed to you (the "
			    "socket is for root and the group set by "
			    "socket_group in daqirid.yaml)", path);
		break;
	case ENAMETOOLONG:
		snprintf(buf, len, "cannot connect to %s: the path is longer "
		    "than a socket address allows (%zu bytes at most)", path,
		    sizeof(((struct sockaddr_un *)NULL)->sun_path) - 1);
		break;
	case EPROTONOSUPPORT:
		snprintf(buf, len, "cannot connect to %s: %s", path,
		    said[0] != '\0' ? said : "the daemon speaks another "
		    "protocol version (use the daqirictl and library that "
		    "came with it)");
		break;
	case EUSERS:
		snprintf(buf, len, "cannot connect to %s: %s", path,
		    said[0] != '\0' ? said : "the daemon has too many "
		    "connections");
		break;
	default:
		snprintf(buf, len, "cannot connect to %s: %s", path,
		    said[0] != '\0' ? said : strerror(-neg_errno));
		break;
	}
	return buf;
}

int
daqiri_fd(const struct daqiri *d)
{
	if (d != NULL && CLIENT_IS_REMOTE(d))
		return client_remote_fd(d);
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
		    strcmp(t->valuestring, "subscribe") == 0 ||
		    strcmp(t->valuestring, "tx_open") == 0)) {
			cJSON_Delete(req);
			return -EINVAL;
		}
		cJSON_Delete(req);
	}
	if (CLIENT_IS_REMOTE(d))
		return client_remote_request(d, json, reply);
	if (d->dead)
		return -ENOTCONN;
	client_exchange_start(d);
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
	r = *reply == NULL ? -ENOMEM : client_reply_status(d, &m);
	daqiri_msg_free(&m);
	return r;
}

int
daqiri_streams(struct daqiri *d, char **json_out)
{
	return daqiri_request(d, "{\"type\":\"streams\"}", json_out);
}


void
daqiri_disconnect(struct daqiri *d)
{
	if (d == NULL)
		return;
	while (d->subs != NULL)
		client_sub_free(d->subs);
	/* Closing the socket ends the daemon's side of every channel. */
	while (d->txs != NULL)
		client_tx_free(d->txs);
	client_remote_free(d);
	if (d->fd >= 0)
		close(d->fd);
	free(d);
}
