/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control server (control.h): the listening socket, one record per
 * connection, request validation and dispatch to the daemon's callbacks.
 * Connections live in a private epoll set whose fd the daemon's loop
 * watches, with a timer for hello deadlines; nothing here blocks.
 * Replies wait in a queue per connection for room in its socket (long
 * ones as a series of parts); a client that reads slowly is throttled,
 * one that stops reading is dropped. Admission (control_opts) keeps the
 * last places for root and the admin group.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include "config.h"
#include "control.h"
#include "desc.h"
#include "log.h"

#ifndef DAQIRI_VERSION
#define DAQIRI_VERSION "unknown"
#endif

#define CONTROL_EVENTS		64	/* epoll events per round */
#define CONTROL_ACCEPTS		64	/* accepts per round */
#define CONTROL_GROUPS_MAX	65536	/* supplementary groups read */
#define CONTROL_GRBUF		16384	/* getgrnam_r buffer */
#define CONTROL_TICK_MS		100	/* hello deadlines, stalled senders */
/*
 * Output queue of one connection (STYLE.md 10): a connection whose
 * queued replies pass CONTROL_OUTQ_HIGH bytes is not read again until
 * they fall to CONTROL_OUTQ_LOW, so a client that pipelines requests
 * without reading waits for itself; one that takes nothing off its
 * socket for CONTROL_SEND_STALL_MS, or whose queue would pass
 * CONTROL_OUTQ_MAX (one whole reply and the high mark, with room for
 * events), is dropped as slow.
 */
#define CONTROL_OUTQ_HIGH	(256u * 1024)
#define CONTROL_OUTQ_LOW	(64u * 1024)
/* Fds waiting in one queue: each holds daemon memory (a ring, a region)
 * however few bytes its message has, so they throttle too: more than two
 * subscriptions' worth, until one subscription's worth is left. */
#define CONTROL_OUTQ_FDS_HIGH	(2u * DAQIRI_SUB_MAX_FDS)
#define CONTROL_OUTQ_FDS_LOW	DAQIRI_SUB_MAX_FDS
#define CONTROL_OUTQ_MAX	(DAQIRI_REPLY_BYTES_MAX + 2 * CONTROL_OUTQ_HIGH)
#define CONTROL_SEND_STALL_MS	10000
#define CONTROL_DRAIN_MAX	256	/* unread requests discarded at close */

/* One message waiting to be sent, with the fd it carries (owned). */
struct outmsg {
	struct outmsg *next;
	int fd;
	size_t len;
	char text[];
};

struct conn {
	struct control_peer peer;
	int fd;				/* -1 once closed */
	bool hello;
	bool throttled;			/* not read until the queue drains */
	uint32_t events;		/* registered with epoll */
	uint64_t accepted_ns;
	uint64_t progress_ns;		/* last send, or when queueing began */
	struct outmsg *oq, **oq_tail;
	size_t oq_bytes;
	uint32_t oq_fds;		/* fds among the queued messages */
	struct conn *next;
};

struct control {
	int epfd;
	int lfd;
	int spare_fd;			/* given up to accept-and-close at EMFILE */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	bool own_path;			/* unlink at fini */
	dev_t path_dev;
	ino_t path_ino;
	int tfd;			/* CONTROL_TICK_MS timer */
	bool have_admin_gid;
	gid_t admin_gid;
	char admin_hint[256];		/* control_admin_hint() */
	uint32_t max_clients;		/* connections of anyone */
	uint32_t reserved_admin;	/* more for root and the admin group */
	uint32_t max_per_uid;		/* 0 = no per-uid cap */
	uint32_t hello_timeout_ms;	/* 0 = no deadline */
	uint32_t send_stall_ms;
	const struct control_ops *ops;
	void *ctx;
	uint64_t next_conn_id;
	uint64_t instance;		/* this daemon's generation (hello) */
	struct conn *conns;		/* open and, until swept, closed */
	bool need_sweep;
	struct control_counters cnt;
	char rbuf[DAQIRI_MSG_SIZE_MAX + 1];
	char wbuf[DAQIRI_MSG_SIZE_MAX + 1];
};

/* ---- sending */

static void conn_close(struct control *c, struct conn *k);

static void
oq_free(struct conn *k)
{
	struct outmsg *o;

	while ((o = k->oq) != NULL) {
		k->oq = o->next;
		if (o->fd >= 0)
			close(o->fd);
		free(o);
	}
	k->oq_tail = &k->oq;
	k->oq_bytes = 0;
	k->oq_fds = 0;
}

/* Register what the connection waits for: requests unless throttled,
 * room in its socket while anything is queued. */
static int
conn_watch(struct control *c, struct conn *k)
{
	struct epoll_event ev = { .data.ptr = k };
	uint32_t want = (k->throttled ? 0 : EPOLLIN) |
	    (k->oq != NULL ? EPOLLOUT : 0);

	if (want == k->events)
		return 0;
	ev.events = want;
	if (epoll_ctl(c->epfd, EPOLL_CTL_MOD, k->fd, &ev) < 0) {
		log_warn("control: connection %llu: epoll",
		    (unsigned long long)k->peer.conn_id);
		return -1;
	}
	k->events = want;
	return 0;
}

/* Send what is queued while the socket takes it. Returns 0, or -1 when
 * the connection was closed. */
static int
conn_flush(struct control *c, struct conn *k)
{
	struct outmsg *o;
	int r;

	while (k->fd >= 0 && (o = k->oq) != NULL) {
		r = daqiri_send_msg(k->fd, o->text, o->len, o->fd);
		if (r == -EAGAIN)
			break;
		if (r < 0) {
			log_debug("control: connection %llu: send: %s",
			    (unsigned long long)k->peer.conn_id, strerror(-r));
			conn_close(c, k);
			return -1;
		}
		k->oq = o->next;
		if (k->oq == NULL)
			k->oq_tail = &k->oq;
		k->oq_bytes -= o->len;
		if (o->fd >= 0) {
			close(o->fd);
			k->oq_fds--;
		}
		free(o);
		k->progress_ns = daqiri_mono_ns();
	}
	if (k->fd < 0)
		return -1;
	if (k->throttled && k->oq_bytes <= CONTROL_OUTQ_LOW &&
	    k->oq_fds <= CONTROL_OUTQ_FDS_LOW)
		k->throttled = false;
	else if (!k->throttled && (k->oq_bytes > CONTROL_OUTQ_HIGH ||
	    k->oq_fds > CONTROL_OUTQ_FDS_HIGH))
		k->throttled = true;
	if (conn_watch(c, k) < 0) {
		conn_close(c, k);
		return -1;
	}
	return 0;
}

static void
drop_slow(struct control *c, struct conn *k, const char *why)
{
	c->cnt.dropped_slow++;
	log_info("control: connection %llu (pid %ld) dropped: %s",
	    (unsigned long long)k->peer.conn_id, (long)k->peer.pid, why);
	conn_close(c, k);
}

/* Queue one printed message (and fd, owned from here on) without
 * sending it. Returns 0 or -1 (the connection is closed; fd too). */
static int
conn_queue(struct control *c, struct conn *k, const char *text, size_t len,
	   int fd)
{
	struct outmsg *o;

	if (k->fd < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (k->oq_bytes + len > CONTROL_OUTQ_MAX) {
		if (fd >= 0)
			close(fd);
		drop_slow(c, k, "not reading its replies");
		return -1;
	}
	o = malloc(sizeof(*o) + len);
	if (o == NULL) {
		if (fd >= 0)
			close(fd);
		log_warnx("control: connection %llu: out of memory for a reply",
		    (unsigned long long)k->peer.conn_id);
		conn_close(c, k);
		return -1;
	}
	o->next = NULL;
	o->fd = fd;
	o->len = len;
	memcpy(o->text, text, len);
	if (k->oq == NULL)
		k->progress_ns = daqiri_mono_ns();
	*k->oq_tail = o;
	k->oq_tail = &o->next;
	k->oq_bytes += len;
	if (fd >= 0)
		k->oq_fds++;
	return 0;
}

static int send_error(struct control *c, struct conn *k,
		      enum daqiri_msg_type re, const struct daqiri_msg *m,
		      enum daqiri_status st, const char *msg);

/*
 * Send obj (consumed) with an optional fd (owned from here on): queued
 * behind what waits, then as much sent as the socket takes; the daemon
 * never waits on a client. A successful reply too big for one message
 * goes as a series of parts (daqiri_reply_split). Returns 0 or -1 (the
 * connection is closed).
 */
static int
conn_send(struct control *c, struct conn *k, cJSON *obj, int fd)
{
	struct daqiri_part *parts = NULL;
	const cJSON *st;
	int n, i, r = 0;
	bool ok;

	if (k->fd < 0 || obj == NULL) {
		if (k->fd >= 0) {
			log_warnx("control: connection %llu: out of memory "
			    "for a reply", (unsigned long long)k->peer.conn_id);
			conn_close(c, k);
		}
		cJSON_Delete(obj);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	st = cJSON_GetObjectItemCaseSensitive(obj, "status");
	ok = cJSON_IsString(st) && strcmp(st->valuestring, "ok") == 0;
	n = daqiri_reply_split(obj, DAQIRI_MSG_SIZE_MAX, &parts);
	if (n > 1 && (fd >= 0 || !ok)) {
		/* only plain successful replies come in parts */
		daqiri_parts_free(parts, n);
		n = -EMSGSIZE;
	}
	if (n < 0) {
		const cJSON *re = cJSON_GetObjectItemCaseSensitive(obj, "re");
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(obj, "id");
		struct daqiri_msg m = { .has_id = cJSON_IsNumber(id) };
		int t = cJSON_IsString(re) ?
		    daqiri_msg_type_parse(re->valuestring) : -1;

		cJSON_Delete(obj);
		if (fd >= 0)
			close(fd);
		if (n == -ENOMEM) {
			log_warnx("control: connection %llu: out of memory "
			    "for a reply", (unsigned long long)k->peer.conn_id);
			conn_close(c, k);
			return -1;
		}
		/* Told, not cut off: the request just asked too much. */
		log_warnx("control: connection %llu: a reply does not fit in "
		    "%u parts of %d bytes", (unsigned long long)k->peer.conn_id,
		    DAQIRI_REPLY_PARTS_MAX, DAQIRI_MSG_SIZE_MAX);
		m.id = m.has_id ? (uint32_t)id->valuedouble : 0;
		return send_error(c, k, t < 0 ? DAQIRI_MSG_MAX :
		    (enum daqiri_msg_type)t, &m, DAQIRI_ST_TOO_BIG,
		    "reply too big even in parts");
	}
	cJSON_Delete(obj);
	for (i = 0; i < n && r == 0; i++)
		r = conn_queue(c, k, parts[i].text, parts[i].len,
		    i == 0 ? fd : -1);
	daqiri_parts_free(parts, n);
	if (r < 0)
		return -1;
	return conn_flush(c, k);
}

static int
send_error(struct control *c, struct conn *k, enum daqiri_msg_type re,
	   const struct daqiri_msg *m, enum daqiri_status st, const char *msg)
{
	c->cnt.errors++;
	if (re >= DAQIRI_MSG_REPLY)
		re = DAQIRI_MSG_MAX;
	return conn_send(c, k, daqiri_reply_new(re,
	    m != NULL && m->has_id ? (int64_t)m->id : -1, st, msg), -1);
}

/* ---- connections */

/*
 * Close a client's socket so that what we sent last (the reason) stays
 * readable: closing a unix socket with unread input makes the peer's
 * next read fail with ECONNRESET before it sees our message. Shutting
 * our reading side first makes the peer's further sends fail, then what
 * it had sent is read away.
 */
static void
close_told(struct control *c, int fd)
{
	int i;

	shutdown(fd, SHUT_RD);
	for (i = 0; i < CONTROL_DRAIN_MAX; i++)
		if (recv(fd, c->rbuf, sizeof(c->rbuf), MSG_DONTWAIT) <= 0)
			break;
	close(fd);
}

static void
conn_close(struct control *c, struct conn *k)
{
	if (k->fd < 0)
		return;
	epoll_ctl(c->epfd, EPOLL_CTL_DEL, k->fd, NULL);
	close_told(c, k->fd);
	k->fd = -1;
	oq_free(k);
	c->cnt.closed++;
	c->cnt.current--;
	if (k->peer.admin)
		c->cnt.current_admin--;
	c->need_sweep = true;
	if (c->ops->conn_closed != NULL)
		c->ops->conn_closed(c->ctx, &k->peer);
}

/* Free closed records; only between rounds, so no event or callback
 * still holds a pointer to one. */
static void
conn_sweep(struct control *c)
{
	struct conn **pp = &c->conns, *k;

	if (!c->need_sweep)
		return;
	while ((k = *pp) != NULL) {
		if (k->fd < 0) {
			*pp = k->next;
			free(k);
		} else {
			pp = &k->next;
		}
	}
	c->need_sweep = false;
}

static struct conn *
conn_find(const struct control *c, uint64_t id)
{
	struct conn *k;

	for (k = c->conns; k != NULL; k = k->next)
		if (k->fd >= 0 && k->peer.conn_id == id)
			return k;
	return NULL;
}

static bool
peer_is_admin(const struct control *c, int fd, const struct ucred *uc)
{
	gid_t small[64], *g = small;
	socklen_t len = sizeof(small);
	bool admin = false;
	size_t i;

	if (uc->uid == 0)
		return true;
	if (!c->have_admin_gid)
		return false;
	if (uc->gid == c->admin_gid)
		return true;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len) < 0) {
		if (errno != ERANGE || len == 0 ||
		    len > CONTROL_GROUPS_MAX * sizeof(gid_t))
			return false;
		g = malloc(len);
		if (g == NULL || getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g,
		    &len) < 0) {
			free(g);
			return false;
		}
	}
	for (i = 0; i < len / sizeof(gid_t); i++)
		if (g[i] == c->admin_gid)
			admin = true;
	if (g != small)
		free(g);
	return admin;
}

/* Tell a connection we will not serve why, and close it. It is new and
 * empty, so the one message always fits. */
static void
refuse(struct control *c, int fd, const char *why)
{
	cJSON *r = daqiri_reply_new(DAQIRI_MSG_MAX, -1,
	    DAQIRI_ST_TOO_MANY_CONSUMERS, why);
	int n = r != NULL ? daqiri_msg_print(r, c->wbuf, sizeof(c->wbuf)) : -1;

	if (n > 0)
		daqiri_send_msg(fd, c->wbuf, (size_t)n, -1);
	cJSON_Delete(r);
	close_told(c, fd);
}

/* Open connections of uid that count against the per-uid cap. */
static uint32_t
uid_conns(const struct control *c, uid_t uid)
{
	const struct conn *k;
	uint32_t n = 0;

	for (k = c->conns; k != NULL; k = k->next)
		if (k->fd >= 0 && !k->peer.admin && k->peer.uid == uid)
			n++;
	return n;
}

/*
 * Admission, in this order: anyone is refused once max_clients plus the
 * reserve are open; a peer that is neither root nor in the admin group
 * also once max_clients are open, and once its uid has max_per_uid open.
 * So the reserve is only ever taken by root and the admin group.
 */
static void
accept_one(struct control *c, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct ucred uc;
	socklen_t len = sizeof(uc);
	struct conn *k;
	char why[DAQIRI_ERR_MSG_MAX];
	bool admin;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0) {
		log_warn("control: accepting a connection: SO_PEERCRED");
		close(fd);
		return;
	}
	admin = peer_is_admin(c, fd, &uc);
	if (c->cnt.current >= (uint64_t)c->max_clients + c->reserved_admin) {
		snprintf(why, sizeof(why), "too many connections: all %u "
		    "(daemon.max_consumers %u + reserved_admin_connections %u) "
		    "are taken", c->max_clients + c->reserved_admin,
		    c->max_clients, c->reserved_admin);
		refuse(c, fd, why);
		c->cnt.rejected_full++;
		return;
	}
	if (!admin && c->cnt.current >= c->max_clients) {
		snprintf(why, sizeof(why), "too many connections: "
		    "daemon.max_consumers (%u) are open; the %u reserved are "
		    "for root and the admin group", c->max_clients,
		    c->reserved_admin);
		refuse(c, fd, why);
		c->cnt.rejected_full++;
		return;
	}
	if (!admin && c->max_per_uid != 0 &&
	    uid_conns(c, uc.uid) >= c->max_per_uid) {
		snprintf(why, sizeof(why), "too many connections from uid %ld: "
		    "daemon.max_connections_per_uid is %u", (long)uc.uid,
		    c->max_per_uid);
		refuse(c, fd, why);
		c->cnt.rejected_uid++;
		return;
	}
	k = calloc(1, sizeof(*k));
	if (k == NULL) {
		log_warn("control: accepting a connection");
		close(fd);
		return;
	}
	k->fd = fd;
	k->oq_tail = &k->oq;
	k->events = EPOLLIN;
	k->accepted_ns = daqiri_mono_ns();
	k->peer.conn_id = c->next_conn_id++;
	k->peer.pid = uc.pid;
	k->peer.uid = uc.uid;
	k->peer.gid = uc.gid;
	k->peer.admin = admin;
	ev.data.ptr = k;
	if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		log_warn("control: epoll add");
		free(k);
		close(fd);
		return;
	}
	k->next = c->conns;
	c->conns = k;
	c->cnt.accepted++;
	c->cnt.current++;
	if (admin)
		c->cnt.current_admin++;
	log_debug("control: connection %llu from pid %ld uid %ld%s",
	    (unsigned long long)k->peer.conn_id, (long)uc.pid, (long)uc.uid,
	    k->peer.admin ? " (admin)" : "");
}

static void
accept_all(struct control *c)
{
	int i, fd;

	for (i = 0; i < CONTROL_ACCEPTS; i++) {
		fd = accept4(c->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			accept_one(c, fd);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if ((errno == EMFILE || errno == ENFILE) && c->spare_fd >= 0) {
			/* Out of fds: turn the caller away instead of
			 * leaving the listener readable forever. */
			log_warnx("control: out of file descriptors, refusing "
			    "a connection");
			close(c->spare_fd);
			fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0)
				close(fd);
			c->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
			c->cnt.rejected_full++;
			continue;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			log_warn("control: accept");
		return;
	}
}

/* ---- requests */

static int
run_status(int r, struct daqiri_err *err)
{
	enum daqiri_status st;

	/* "return daqiri_err_set(err, st, ...)" returns -1: the status the
	 * callback put into err wins over the errno reading of -1. */
	if (r < 0 && err->status != DAQIRI_ST_OK)
		st = err->status;
	else if (r < 0)
		st = daqiri_status_from_errno(r);
	else if (r < DAQIRI_ST_MAX)
		st = (enum daqiri_status)r;
	else
		st = DAQIRI_ST_INTERNAL;
	err->status = st;
	return st == DAQIRI_ST_OK ? 0 : -1;
}

/* A request whose reply is a plain object filled by one callback. */
static void
do_simple(struct control *c, struct conn *k, const struct daqiri_msg *m)
{
	struct daqiri_err err = { .status = DAQIRI_ST_OK };
	cJSON *reply = daqiri_reply_new(m->type,
	    m->has_id ? (int64_t)m->id : -1, DAQIRI_ST_OK, NULL);
	const struct control_ops *o = c->ops;
	int r = DAQIRI_ST_NOT_SUPPORTED;

	if (reply == NULL) {
		conn_send(c, k, NULL, -1);
		return;
	}
	switch (m->type) {
	case DAQIRI_MSG_STREAMS:
		if (o->streams != NULL)
			r = o->streams(c->ctx, reply, &err);
		break;
	case DAQIRI_MSG_STATUS:
		if (o->status != NULL)
			r = o->status(c->ctx, reply, &err);
		break;
	case DAQIRI_MSG_STATS:
		if (o->stats != NULL)
			r = o->stats(c->ctx, reply, &err);
		break;
	case DAQIRI_MSG_CONSUMERS:
		if (o->consumers != NULL)
			r = o->consumers(c->ctx, reply, &err);
		break;
	case DAQIRI_MSG_FLOW_LIST:
		if (o->flow_list != NULL)
			r = o->flow_list(c->ctx, m->u.flow.iface, reply, &err);
		break;
	case DAQIRI_MSG_FLOW_ADD:
		if (o->flow_add != NULL)
			r = o->flow_add(c->ctx, &m->u.flow, &k->peer, reply,
			    &err);
		break;
	case DAQIRI_MSG_FLOW_DEL:
		if (o->flow_del != NULL)
			r = o->flow_del(c->ctx, &m->u.flow, &k->peer, reply,
			    &err);
		break;
	case DAQIRI_MSG_RELOAD:
		if (o->reload != NULL)
			r = o->reload(c->ctx, &k->peer, reply, &err);
		break;
	case DAQIRI_MSG_CONFIG:
		if (o->config != NULL)
			r = o->config(c->ctx, reply, &err);
		break;
	case DAQIRI_MSG_UNSUBSCRIBE:
		if (o->unsubscribe != NULL)
			r = o->unsubscribe(c->ctx, &k->peer,
			    m->u.unsub.sub_id, &err);
		break;
	case DAQIRI_MSG_TX_CLOSE:
		if (o->tx_close != NULL)
			r = o->tx_close(c->ctx, &k->peer,
			    m->u.tx_close.tx_id, &err);
		break;
	case DAQIRI_MSG_TRIGGER:
		if (o->trigger != NULL)
			r = o->trigger(c->ctx, m->u.trigger.stream, &k->peer,
			    reply, &err);
		break;
	case DAQIRI_MSG_REPLAY:
		if (o->replay != NULL)
			r = o->replay(c->ctx, &m->u.replay, &k->peer, reply,
			    &err);
		break;
	default:
		r = DAQIRI_ST_INTERNAL;
		break;
	}
	if (run_status(r, &err) < 0) {
		cJSON_Delete(reply);
		send_error(c, k, m->type, m, err.status, err.msg);
		return;
	}
	conn_send(c, k, reply, -1);
}

static void
do_hello(struct control *c, struct conn *k, const struct daqiri_msg *m)
{
	char inst[DAQIRI_INSTANCE_HEX + 1];
	cJSON *reply;

	if (k->hello) {
		send_error(c, k, m->type, m, DAQIRI_ST_BAD_REQUEST,
		    "hello was already said on this connection");
		return;
	}
	k->hello = true;
	snprintf(inst, sizeof(inst), "%016llx",
	    (unsigned long long)c->instance);
	snprintf(k->peer.client, sizeof(k->peer.client), "%s",
	    m->u.hello.client);
	reply = daqiri_reply_new(m->type, m->has_id ? (int64_t)m->id : -1,
	    DAQIRI_ST_OK, NULL);
	if (reply != NULL &&
	    (cJSON_AddNumberToObject(reply, "version",
	    DAQIRI_PROTO_VERSION) == NULL ||
	    cJSON_AddStringToObject(reply, "daemon",
	    "daqirid " DAQIRI_VERSION) == NULL ||
	    cJSON_AddNumberToObject(reply, "conn",
	    (double)k->peer.conn_id) == NULL ||
	    cJSON_AddBoolToObject(reply, "admin", k->peer.admin) == NULL ||
	    cJSON_AddStringToObject(reply, "instance", inst) == NULL)) {
		cJSON_Delete(reply);
		reply = NULL;
	}
	conn_send(c, k, reply, -1);
}

static void
close_fds(struct control_sub_fds *f)
{
	int i;

	for (i = 0; i < f->n && i < DAQIRI_SUB_MAX_FDS; i++)
		if (f->fd[i] >= 0)
			close(f->fd[i]);
	f->n = 0;
}

/*
 * Send reply, then each of the n fds in its own numbered sub_fd message
 * (id: the subscription or channel). conn_send owns each fd once handed
 * over; it closes the connection on failure, and the daemon's
 * conn_closed() ends what the fds belonged to. What is not sent is
 * closed.
 */
static void
send_reply_fds(struct control *c, struct conn *k, cJSON *reply,
	       uint64_t conn_id, uint32_t id, uint32_t n,
	       const enum daqiri_fd_kind *kinds, struct control_sub_fds *fds)
{
	uint32_t i;

	if (conn_send(c, k, reply, -1) < 0) {
		close_fds(fds);
		return;
	}
	for (i = 0; i < n; i++) {
		int f = fds->fd[i];

		fds->fd[i] = -1;
		if (conn_find(c, conn_id) == NULL) {
			close(f);
			break;
		}
		if (conn_send(c, k, daqiri_sub_fd_new(id, i, n, kinds[i]),
		    f) < 0)
			break;
	}
	close_fds(fds);
}

/* Fds a callback may hand over, none yet. */
static void
fds_init(struct control_sub_fds *f)
{
	f->n = 0;
	for (int i = 0; i < DAQIRI_SUB_MAX_FDS; i++)
		f->fd[i] = -1;
}

/*
 * After a callback that hands over fds: clamp their count and, when it
 * failed, close them and answer its error. 0 to go on, -1 answered.
 */
static int
fds_taken(struct control *c, struct conn *k, const struct daqiri_msg *m,
	  int r, struct control_sub_fds *f, struct daqiri_err *err)
{
	if (f->n < 0 || f->n > DAQIRI_SUB_MAX_FDS)
		f->n = DAQIRI_SUB_MAX_FDS;
	if (run_status(r, err) < 0) {
		close_fds(f);
		send_error(c, k, m->type, m, err->status, err->msg);
		return -1;
	}
	return 0;
}

/* Whether f holds exactly n open fds. */
static bool
fds_complete(const struct control_sub_fds *f, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < (uint32_t)f->n; i++)
		if (f->fd[i] < 0)
			break;
	return (uint32_t)f->n == n && i == n;
}

static void
do_subscribe(struct control *c, struct conn *k, const struct daqiri_msg *m)
{
	struct daqiri_err err = { .status = DAQIRI_ST_OK };
	struct control_sub_fds fds;
	struct daqiri_sub_info info;
	struct daqiri_err ierr = { .status = DAQIRI_ST_OK };
	uint64_t conn_id = k->peer.conn_id;
	cJSON *reply;
	int r;

	memset(&info, 0, sizeof(info));
	fds_init(&fds);
	if (c->ops->subscribe == NULL) {
		send_error(c, k, m->type, m, DAQIRI_ST_NOT_SUPPORTED, NULL);
		return;
	}
	r = c->ops->subscribe(c->ctx, &m->u.sub, &k->peer, &info, &fds, &err);
	if (fds_taken(c, k, m, r, &fds, &err) < 0)
		return;
	if (daqiri_sub_info_check(&info, &ierr) < 0 ||
	    !fds_complete(&fds, info.nfds)) {
		log_warnx("control: subscription to \"%s\" has inconsistent "
		    "metadata: %s", m->u.sub.stream,
		    ierr.status != DAQIRI_ST_OK ? ierr.msg : "fd count");
		close_fds(&fds);
		if (c->ops->unsubscribe != NULL)
			c->ops->unsubscribe(c->ctx, &k->peer, info.sub_id,
			    &ierr);
		send_error(c, k, m->type, m, DAQIRI_ST_INTERNAL,
		    "inconsistent subscription metadata");
		return;
	}
	reply = daqiri_reply_new(m->type, m->has_id ? (int64_t)m->id : -1,
	    DAQIRI_ST_OK, NULL);
	if (reply != NULL && daqiri_sub_info_encode(&info, reply) < 0) {
		cJSON_Delete(reply);
		reply = NULL;
	}
	send_reply_fds(c, k, reply, conn_id, info.sub_id, info.nfds, info.fds,
	    &fds);
}

static void
do_tx_open(struct control *c, struct conn *k, const struct daqiri_msg *m)
{
	struct daqiri_err err = { .status = DAQIRI_ST_OK };
	struct control_sub_fds fds;
	struct daqiri_tx_info info;
	struct daqiri_err ierr = { .status = DAQIRI_ST_OK };
	uint64_t conn_id = k->peer.conn_id;
	cJSON *reply;
	int r;

	memset(&info, 0, sizeof(info));
	fds_init(&fds);
	if (c->ops->tx_open == NULL) {
		send_error(c, k, m->type, m, DAQIRI_ST_NOT_SUPPORTED, NULL);
		return;
	}
	r = c->ops->tx_open(c->ctx, &m->u.tx, &k->peer, &info, &fds, &err);
	if (fds_taken(c, k, m, r, &fds, &err) < 0)
		return;
	if (daqiri_tx_info_check(&info, &ierr) < 0 ||
	    !fds_complete(&fds, info.nfds)) {
		log_warnx("control: TX channel on \"%s\" has inconsistent "
		    "metadata: %s", m->u.tx.queue,
		    ierr.status != DAQIRI_ST_OK ? ierr.msg : "fd count");
		close_fds(&fds);
		if (c->ops->tx_close != NULL && info.tx_id != 0)
			c->ops->tx_close(c->ctx, &k->peer, info.tx_id, &ierr);
		send_error(c, k, m->type, m, DAQIRI_ST_INTERNAL,
		    "inconsistent TX channel metadata");
		return;
	}
	reply = daqiri_reply_new(m->type, m->has_id ? (int64_t)m->id : -1,
	    DAQIRI_ST_OK, NULL);
	if (reply != NULL && daqiri_tx_info_encode(&info, reply) < 0) {
		cJSON_Delete(reply);
		reply = NULL;
	}
	send_reply_fds(c, k, reply, conn_id, info.tx_id, info.nfds, info.fds,
	    &fds);
}

/* A tap request: a simple one, except that a start with map is followed
 * by the ring's fd, as a subscription's are. */
static void
do_tap(struct control *c, struct conn *k, const struct daqiri_msg *m)
{
	static const enum daqiri_fd_kind kinds[] = { DAQIRI_FD_TAP_RING };
	struct daqiri_err err = { .status = DAQIRI_ST_OK };
	struct control_sub_fds fds;
	uint64_t conn_id = k->peer.conn_id;
	uint32_t gen = 0;
	cJSON *reply;
	int r;

	fds_init(&fds);
	if (c->ops->tap == NULL) {
		send_error(c, k, m->type, m, DAQIRI_ST_NOT_SUPPORTED, NULL);
		return;
	}
	reply = daqiri_reply_new(m->type, m->has_id ? (int64_t)m->id : -1,
	    DAQIRI_ST_OK, NULL);
	if (reply == NULL) {
		conn_send(c, k, NULL, -1);
		return;
	}
	r = c->ops->tap(c->ctx, &m->u.tap, &k->peer, reply, &fds, &gen, &err);
	if (fds_taken(c, k, m, r, &fds, &err) < 0) {
		cJSON_Delete(reply);
		return;
	}
	if (!fds_complete(&fds, m->u.tap.map &&
	    m->u.tap.action == DAQIRI_TAP_START ? 1 : 0)) {
		log_warnx("control: tap on \"%s\": no ring fd", m->u.tap.queue);
		close_fds(&fds);
		cJSON_Delete(reply);
		send_error(c, k, m->type, m, DAQIRI_ST_INTERNAL,
		    "inconsistent tap reply");
		return;
	}
	send_reply_fds(c, k, reply, conn_id, gen, (uint32_t)fds.n, kinds,
	    &fds);
}

static void
handle_msg(struct control *c, struct conn *k, ssize_t n)
{
	struct daqiri_err err;
	struct daqiri_msg m;

	c->cnt.requests++;
	if (daqiri_msg_decode(c->rbuf, (size_t)n, &m, &err) < 0) {
		send_error(c, k, m.type, &m, err.status, err.msg);
		/* A client speaking another version gets its answer, then
		 * the connection ends. */
		if (err.status == DAQIRI_ST_VERSION_MISMATCH)
			conn_close(c, k);
		return;
	}
	if (m.type >= DAQIRI_MSG_REPLY) {
		send_error(c, k, DAQIRI_MSG_MAX, &m, DAQIRI_ST_BAD_REQUEST,
		    "not a request");
		goto out;
	}
	if (!k->hello && m.type != DAQIRI_MSG_HELLO) {
		send_error(c, k, m.type, &m, DAQIRI_ST_NO_HELLO,
		    "say hello first");
		goto out;
	}
	if (daqiri_msg_is_mutating(m.type) && !k->peer.admin) {
		char why[sizeof(c->admin_hint) + 16];

		snprintf(why, sizeof(why), "needs %s", c->admin_hint);
		send_error(c, k, m.type, &m, DAQIRI_ST_PERMISSION_DENIED, why);
		goto out;
	}
	switch (m.type) {
	case DAQIRI_MSG_HELLO:
		do_hello(c, k, &m);
		break;
	case DAQIRI_MSG_SUBSCRIBE:
		do_subscribe(c, k, &m);
		break;
	case DAQIRI_MSG_TX_OPEN:
		do_tx_open(c, k, &m);
		break;
	case DAQIRI_MSG_TAP:
		do_tap(c, k, &m);
		break;
	default:
		do_simple(c, k, &m);
		break;
	}
out:
	daqiri_msg_free(&m);
}

static void
conn_readable(struct control *c, struct conn *k)
{
	ssize_t n;
	int i;

	for (i = 0; i < CONTROL_MSGS_PER_WAKE && k->fd >= 0 && !k->throttled;
	    i++) {
		n = daqiri_recv_msg(k->fd, c->rbuf, DAQIRI_MSG_SIZE_MAX, NULL);
		if (n == -EAGAIN)
			return;
		if (n == 0) {
			conn_close(c, k);
			return;
		}
		if (n == -EMSGSIZE) {
			c->cnt.requests++;
			send_error(c, k, DAQIRI_MSG_MAX, NULL, DAQIRI_ST_TOO_BIG,
			    "message larger than 65536 bytes");
			continue;
		}
		if (n == -EBADMSG) {
			c->cnt.requests++;
			send_error(c, k, DAQIRI_MSG_MAX, NULL,
			    DAQIRI_ST_BAD_REQUEST,
			    "requests carry no file descriptors");
			continue;
		}
		if (n < 0) {
			conn_close(c, k);
			return;
		}
		handle_msg(c, k, n);
	}
}

static void tick(struct control *c, uint64_t now_ns);

void
control_handle(struct control *c, int fd, uint32_t events)
{
	struct epoll_event ev[CONTROL_EVENTS];
	int i, n;

	(void)events;
	if (c == NULL || fd != c->epfd)
		return;
	n = epoll_wait(c->epfd, ev, CONTROL_EVENTS, 0);
	for (i = 0; i < n; i++) {
		if (ev[i].data.ptr == c) {
			accept_all(c);
			continue;
		}
		if (ev[i].data.ptr == &c->tfd) {
			uint64_t x;

			(void)!read(c->tfd, &x, sizeof(x));
			/* no sweep here: later events of this batch may
			 * point at connections the tick closes */
			tick(c, daqiri_mono_ns());
			continue;
		}
		struct conn *k = ev[i].data.ptr;

		if (k->fd < 0)
			continue;
		if ((ev[i].events & EPOLLOUT) && conn_flush(c, k) < 0)
			continue;
		/* A throttled client that hung up has nothing left to
		 * ask: its requests are not read, the hang-up is. */
		if (k->throttled && (ev[i].events & (EPOLLHUP | EPOLLERR))) {
			conn_close(c, k);
			continue;
		}
		if (ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
			conn_readable(c, k);
	}
	conn_sweep(c);
}

/* Hello deadlines and stalled senders. Closes, never frees: records go
 * at conn_sweep(), between rounds of events. */
static void
tick(struct control *c, uint64_t now_ns)
{
	struct conn *k;

	for (k = c->conns; k != NULL; k = k->next) {
		if (k->fd < 0)
			continue;
		if (!k->hello && c->hello_timeout_ms != 0 &&
		    now_ns - k->accepted_ns >=
		    (uint64_t)c->hello_timeout_ms * 1000000u) {
			char why[DAQIRI_ERR_MSG_MAX];

			c->cnt.hello_timeouts++;
			log_debug("control: connection %llu (pid %ld): no hello "
			    "within %u ms, closed",
			    (unsigned long long)k->peer.conn_id,
			    (long)k->peer.pid, c->hello_timeout_ms);
			snprintf(why, sizeof(why), "no hello within "
			    "daemon.hello_timeout_ms (%u ms)",
			    c->hello_timeout_ms);
			if (send_error(c, k, DAQIRI_MSG_MAX, NULL,
			    DAQIRI_ST_NO_HELLO, why) == 0)
				conn_close(c, k);
			continue;
		}
		if (k->oq != NULL && now_ns - k->progress_ns >=
		    (uint64_t)c->send_stall_ms * 1000000u)
			drop_slow(c, k, "took none of its replies");
	}
}

void
control_tick(struct control *c, uint64_t now_ns)
{
	if (c == NULL)
		return;
	tick(c, now_ns);
	conn_sweep(c);
}

/* ---- set-up */

static int
lookup_group(const char *name, gid_t *gid)
{
	struct group gr, *res = NULL;
	char *buf = malloc(CONTROL_GRBUF);
	int r;

	if (buf == NULL)
		return -ENOMEM;
	r = getgrnam_r(name, &gr, buf, CONTROL_GRBUF, &res);
	if (r == 0 && res != NULL)
		*gid = gr.gr_gid;
	free(buf);
	if (r != 0)
		return -r;
	return res != NULL ? 0 : -ENOENT;
}

/* A random generation for this daemon instance: a reconnecting consumer
 * tells daemons apart by it. getrandom never fails for 8 bytes once the
 * pool is ready; without it, time and pid still differ per start. */
static uint64_t
make_instance(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
		v = daqiri_mono_ns() ^ ((uint64_t)getpid() << 32);
	return v != 0 ? v : 1;
}

static struct control *
control_alloc(const struct control_opts *o, const struct control_ops *ops,
	      void *ctx, int *err)
{
	struct control *c = calloc(1, sizeof(*c));
	const char *admin_group = o->admin_group;

	if (c == NULL) {
		*err = -ENOMEM;
		return NULL;
	}
	c->epfd = c->lfd = c->tfd = -1;
	c->ops = ops;
	c->ctx = ctx;
	c->next_conn_id = 1;
	c->instance = make_instance();
	log_info("control: daemon instance %016llx",
	    (unsigned long long)c->instance);
	c->max_clients = o->max_clients != 0 ? o->max_clients :
	    CONTROL_MAX_CLIENTS_DEFAULT;
	c->reserved_admin = o->reserved_admin;
	c->max_per_uid = o->max_per_uid;
	c->hello_timeout_ms = o->hello_timeout_ms;
	c->send_stall_ms = o->send_stall_ms != 0 ? o->send_stall_ms :
	    CONTROL_SEND_STALL_MS;
	/* what a refusal says to do (admin_group changes at a restart) */
	if (admin_group != NULL && admin_group[0] != '\0')
		snprintf(c->admin_hint, sizeof(c->admin_hint), "root or a "
		    "member of group '%s' (daemon.admin_group)", admin_group);
	else
		snprintf(c->admin_hint, sizeof(c->admin_hint), "root (set "
		    "daemon.admin_group to a group, and add the user to it, "
		    "to let others)");
	if (admin_group != NULL && admin_group[0] != '\0') {
		*err = lookup_group(admin_group, &c->admin_gid);
		if (*err < 0) {
			log_warnx("control: admin group \"%s\": %s", admin_group,
			    *err == -ENOENT ? "no such group" : strerror(-*err));
			free(c);
			return NULL;
		}
		c->have_admin_gid = true;
	}
	c->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	c->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (c->epfd < 0 || c->tfd < 0) {
		*err = -errno;
		log_warn("control: epoll_create1, timerfd_create");
		if (c->spare_fd >= 0)
			close(c->spare_fd);
		if (c->epfd >= 0)
			close(c->epfd);
		if (c->tfd >= 0)
			close(c->tfd);
		free(c);
		return NULL;
	}
	return c;
}

/* The tick that enforces hello deadlines and drops stalled senders. */
static int
control_timer_add(struct control *c)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &c->tfd };
	struct itimerspec its = {
		.it_interval = { 0, CONTROL_TICK_MS * 1000000L },
		.it_value = { 0, CONTROL_TICK_MS * 1000000L },
	};

	if (timerfd_settime(c->tfd, 0, &its, NULL) < 0 ||
	    epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->tfd, &ev) < 0) {
		log_warn("control: timer");
		return -errno;
	}
	return 0;
}

static int
control_listen_add(struct control *c)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
	int fl = fcntl(c->lfd, F_GETFL);

	if (fl < 0 || fcntl(c->lfd, F_SETFL, fl | O_NONBLOCK) < 0 ||
	    epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->lfd, &ev) < 0) {
		log_warn("control: listening socket");
		return -errno;
	}
	return control_timer_add(c);
}

/* Is someone accepting on path? 1 yes, 0 no (stale or absent), <0 error. */
static int
probe_path(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, r;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memcpy(sa.sun_path, path, strlen(path));
	r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	if (r < 0)
		r = (errno == ECONNREFUSED || errno == ENOENT) ? 0 : -errno;
	else
		r = 1;
	close(fd);
	return r;
}

int
control_init(struct control **out, const char *path,
	     const struct control_opts *o, const struct control_ops *ops,
	     void *ctx)
{
	unsigned mode = o != NULL ? o->mode : 0;
	const char *group = o != NULL ? o->group : NULL;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char tmp[sizeof(sa.sun_path)];
	struct control *c;
	struct stat st;
	gid_t gid = (gid_t)-1;
	int err = 0, r;

	*out = NULL;
	if (path == NULL || ops == NULL || o == NULL || strlen(path) == 0 ||
	    snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid()) >=
	    (int)sizeof(tmp)) {
		log_warnx("control: socket path \"%s\" is empty or too long",
		    path != NULL ? path : "");
		return -ENAMETOOLONG;
	}
	if (group != NULL && group[0] != '\0') {
		err = lookup_group(group, &gid);
		if (err < 0) {
			log_warnx("control: socket group \"%s\": %s", group,
			    err == -ENOENT ? "no such group" : strerror(-err));
			return err;
		}
	}
	r = probe_path(path);
	if (r == 1) {
		log_warnx("control: another daqirid is listening on %s", path);
		return -EADDRINUSE;
	}
	if (r == -EEXIST) {
		log_warnx("control: %s exists and is not a socket", path);
		return r;
	}
	if (r < 0) {
		log_warnx("control: %s: %s", path, strerror(-r));
		return r;
	}
	c = control_alloc(o, ops, ctx, &err);
	if (c == NULL)
		return err;
	snprintf(c->path, sizeof(c->path), "%s", path);
	c->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (c->lfd < 0) {
		err = -errno;
		log_warn("control: socket");
		goto fail;
	}
	/* Bound under a private name, given its mode and group, then
	 * renamed into place: the path never shows other permissions, and a
	 * stale socket there is replaced atomically. */
	memcpy(sa.sun_path, tmp, strlen(tmp));
	unlink(tmp);
	if (bind(c->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		log_warn("control: bind %s", tmp);
		goto fail;
	}
	if (chmod(tmp, mode & 07777) < 0 ||
	    (gid != (gid_t)-1 && chown(tmp, (uid_t)-1, gid) < 0) ||
	    listen(c->lfd, CONTROL_BACKLOG) < 0 || rename(tmp, path) < 0) {
		err = -errno;
		log_warn("control: setting up %s", path);
		unlink(tmp);
		goto fail;
	}
	if (lstat(path, &st) == 0) {
		c->path_dev = st.st_dev;
		c->path_ino = st.st_ino;
	}
	c->own_path = true;
	err = control_listen_add(c);
	if (err < 0)
		goto fail;
	*out = c;
	return 0;
fail:
	control_fini(c);
	return err;
}

int
control_init_fd(struct control **out, int listen_fd,
		const struct control_opts *o, const struct control_ops *ops,
		void *ctx)
{
	struct control *c;
	int err = 0;

	*out = NULL;
	if (listen_fd < 0 || ops == NULL || o == NULL)
		return -EINVAL;
	c = control_alloc(o, ops, ctx, &err);
	if (c == NULL) {
		close(listen_fd);
		return err;
	}
	c->lfd = listen_fd;
	fcntl(listen_fd, F_SETFD, FD_CLOEXEC);
	err = control_listen_add(c);
	if (err < 0) {
		control_fini(c);
		return err;
	}
	*out = c;
	return 0;
}

const char *
control_admin_hint(const struct control *c)
{
	return c != NULL && c->admin_hint[0] != '\0' ? c->admin_hint :
	    "root or the admin group";
}

int
control_fd(const struct control *c)
{
	return c != NULL ? c->epfd : -1;
}

int
control_sub_closed(struct control *c, uint64_t conn_id, uint32_t sub_id,
		   enum daqiri_status why, const char *message)
{
	struct conn *k = c != NULL ? conn_find(c, conn_id) : NULL;

	if (k == NULL)
		return -ENOENT;
	conn_send(c, k, daqiri_event_new(DAQIRI_EV_SUB_CLOSED, sub_id, why,
	    message), -1);
	return 0;
}

int
control_tx_closed(struct control *c, uint64_t conn_id, uint32_t tx_id,
		  enum daqiri_status why, const char *message)
{
	struct conn *k = c != NULL ? conn_find(c, conn_id) : NULL;

	if (k == NULL)
		return -ENOENT;
	conn_send(c, k, daqiri_event_new(DAQIRI_EV_TX_CLOSED, tx_id, why,
	    message), -1);
	return 0;
}

int
control_close_conn(struct control *c, uint64_t conn_id)
{
	struct conn *k = c != NULL ? conn_find(c, conn_id) : NULL;

	if (k == NULL)
		return -ENOENT;
	conn_close(c, k);
	return 0;
}

const struct control_peer *
control_peer_find(const struct control *c, uint64_t conn_id)
{
	struct conn *k = c != NULL ? conn_find(c, conn_id) : NULL;

	return k != NULL ? &k->peer : NULL;
}

void
control_get_counters(const struct control *c, struct control_counters *out)
{
	const struct conn *k;

	if (c == NULL) {
		memset(out, 0, sizeof(*out));
		return;
	}
	*out = c->cnt;
	out->queued_bytes = out->throttled = 0;
	for (k = c->conns; k != NULL; k = k->next) {
		if (k->fd < 0)
			continue;
		out->queued_bytes += k->oq_bytes;
		out->throttled += k->throttled;
	}
}

int
control_counters_json(const struct control *c, cJSON *obj)
{
	struct control_counters n;

	control_get_counters(c, &n);
#define ADD(f) (cJSON_AddNumberToObject(obj, #f, (double)n.f) == NULL)
	if (ADD(accepted) || ADD(rejected_full) || ADD(rejected_uid) ||
	    ADD(hello_timeouts) || ADD(closed) || ADD(dropped_slow) ||
	    ADD(requests) || ADD(errors) || ADD(current) ||
	    ADD(current_admin) || ADD(queued_bytes) || ADD(throttled))
		return -ENOMEM;
#undef ADD
	return 0;
}

int
control_reopen_ro(int fd)
{
	char p[64];
	int r;

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	r = open(p, O_RDONLY | O_CLOEXEC);
	return r < 0 ? -errno : r;
}

void
control_fini(struct control *c)
{
	struct conn *k;
	struct stat st;

	if (c == NULL)
		return;
	for (k = c->conns; k != NULL; k = k->next)
		conn_close(c, k);
	c->need_sweep = true;
	conn_sweep(c);
	if (c->lfd >= 0)
		close(c->lfd);
	/* Remove the socket only if it is still ours (a successor may
	 * have replaced it). */
	if (c->own_path && lstat(c->path, &st) == 0 &&
	    st.st_dev == c->path_dev && st.st_ino == c->path_ino)
		unlink(c->path);
	if (c->epfd >= 0)
		close(c->epfd);
	if (c->tfd >= 0)
		close(c->tfd);
	if (c->spare_fd >= 0)
		close(c->spare_fd);
	free(c);
}
