/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libdaqiri-client (daqiri_client.h), surviving a daemon restart
 * (DAQIRI_SUB_RECONNECT): the connection's way back up -- bounded
 * backoff, the hello answered by the new daemon, each reconnecting
 * subscription subscribed anew -- driven from daqiri_next() without ever
 * waiting past its timeout, and the mappings of earlier instances kept
 * while the application holds tensors of them.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef DAQIRI_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "client_internal.h"

static void
orphan_free(struct client_orphan *o)
{
#ifdef DAQIRI_HAVE_CUDA
	if (o->events != NULL) {
		uint32_t i;

		for (i = 0; i < o->nbufs; i++)
			if (o->events[i] != NULL)
				cudaEventDestroy((cudaEvent_t)o->events[i]);
	}
	if (o->dev_base != NULL)
		cudaIpcCloseMemHandle(o->dev_base);
	if (o->cuda_registered)
		cudaHostUnregister((void *)o->tensor_map);
#endif
	free(o->events);
	if (o->tensor_map != NULL)
		munmap((void *)o->tensor_map, o->tensor_len);
	if (o->bitmap_map != NULL)
		munmap((void *)o->bitmap_map, o->bitmap_len);
	free(o->held);
	free(o);
}

int
client_orphan_release(struct daqiri_sub *s, const void *data)
{
	struct client_orphan **pp, *o;
	const uint8_t *p = data;
	uint64_t off;
	uint32_t i;

	for (pp = &s->orphans; (o = *pp) != NULL; pp = &o->next) {
		if (o->base == NULL || p < o->base + o->buf_offset)
			continue;
		off = (uint64_t)(p - o->base) - o->buf_offset;
		if (off % o->buf_stride != 0 || off / o->buf_stride >= o->nbufs)
			continue;
		i = (uint32_t)(off / o->buf_stride);
		if (!o->held[i])
			return -ENOENT;
		o->held[i] = 0;
		if (--o->nheld == 0) {
			*pp = o->next;
			orphan_free(o);
		}
		return 0;
	}
	return -ENOENT;
}

void
client_orphans_free(struct daqiri_sub *s)
{
	struct client_orphan *o;

	while ((o = s->orphans) != NULL) {
		s->orphans = o->next;
		orphan_free(o);
	}
}

/* The connection was found dead: close it, stop the subscriptions that
 * do not reconnect, and start retrying for those that do. */
static void
go_down(struct daqiri *d, uint64_t now)
{
	struct daqiri_sub *s;

	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
	d->dead = true;
	d->state = CLIENT_DOWN;
	d->down_ns = now;
	d->next_try_ns = now;
	d->backoff_ms = CLIENT_RECONNECT_MIN_MS;
	for (s = d->subs; s != NULL; s = s->next) {
		client_sub_reopen_drop(s);
		s->resubbed = false;
		/* The old wake-up socket's peer is gone: poll would report
		 * it at once, forever. */
		if (s->wake_fd >= 0)
			close(s->wake_fd);
		s->wake_fd = -1;
		if (!(s->flags & DAQIRI_SUB_RECONNECT) && s->lost == 0) {
			s->lost = -ENOTCONN;
			snprintf(s->lost_msg, sizeof(s->lost_msg), "%s", d->err);
		}
	}
}

/* A try failed: close what it opened, wait longer next time; the
 * subscriptions it subscribed anew are subscribed again at the next. */
static void
try_failed(struct daqiri *d, uint64_t now)
{
	struct daqiri_sub *s;

	for (s = d->subs; s != NULL; s = s->next) {
		client_sub_reopen_drop(s);
		s->resubbed = false;
	}
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
	d->dead = true;
	d->state = CLIENT_DOWN;
	d->next_try_ns = now + (uint64_t)d->backoff_ms * 1000000ull;
	d->backoff_ms = d->backoff_ms * 2 > CLIENT_RECONNECT_MAX_MS ?
	    CLIENT_RECONNECT_MAX_MS : d->backoff_ms * 2;
}

/* The longest outage a reconnecting subscription of d accepts (0: none
 * reconnects). */
static uint64_t
limit_ns(const struct daqiri *d)
{
	const struct daqiri_sub *s;
	uint64_t l = 0;

	for (s = d->subs; s != NULL; s = s->next)
		if ((s->flags & DAQIRI_SUB_RECONNECT) && s->lost == 0 &&
		    (uint64_t)s->reconnect_ms * 1000000ull > l)
			l = (uint64_t)s->reconnect_ms * 1000000ull;
	return l;
}

/* Every reconnecting subscription whose own limit has passed, and all
 * of them when the connection gives up: lost, -ENOTCONN. */
static void
expire(struct daqiri *d, uint64_t now, bool all)
{
	struct daqiri_sub *s;

	for (s = d->subs; s != NULL; s = s->next)
		if ((s->flags & DAQIRI_SUB_RECONNECT) && s->lost == 0 &&
		    (all || now - d->down_ns >=
		    (uint64_t)s->reconnect_ms * 1000000ull)) {
			s->lost = -ENOTCONN;
			snprintf(s->lost_msg, sizeof(s->lost_msg), "the daemon "
			    "stayed away longer than %u ms", s->reconnect_ms);
		}
}

/* Is the reply of the exchange under way there, waiting no longer than
 * deadline nor its own deadline? 1 yes, 0 not yet, -ETIMEDOUT its own
 * deadline passed. */
static int
reply_ready(struct daqiri *d, uint64_t deadline)
{
	uint64_t now = daqiri_mono_ns(), until = d->xdeadline_ns;
	struct pollfd p = { .fd = d->fd, .events = POLLIN };
	int r;

	if (deadline < until)
		until = deadline;
	r = poll(&p, 1, until > now ? (int)((until - now + 999999) /
	    1000000) : 0);
	if (r > 0)
		return 1;
	return daqiri_mono_ns() >= d->xdeadline_ns ? -ETIMEDOUT : 0;
}

/*
 * Up again: subscribe each reconnecting subscription anew, one exchange
 * at a time, each request sent, then its reply taken once it is there:
 * waiting for it no longer than the caller's deadline, so a call of the
 * caller's returns on time, and the next call goes on where this one
 * stopped. 1 all done, 0 not yet (the caller's deadline came), or
 * -ENOTCONN when the new daemon went away or did not answer within
 * CLIENT_REPLY_TIMEOUT_MS (the next try starts over).
 */
static int
resubscribe(struct daqiri *d, uint64_t now, uint64_t deadline)
{
	struct daqiri_sub *s;
	int r;

	for (s = d->subs; s != NULL; s = s->next) {
		if (!(s->flags & DAQIRI_SUB_RECONNECT) || s->lost != 0 ||
		    s->resubbed)
			continue;
		if (d->dead) {
			try_failed(d, now);
			return -ENOTCONN;
		}
		d->in_resub = true;
		r = s->opening != NULL ? 0 : client_sub_reopen_send(s);
		if (r == 0 && (r = reply_ready(d, deadline)) == 1)
			r = client_sub_reopen_finish(s);
		else if (r == 0) {
			d->in_resub = false;
			return 0;
		}
		d->in_resub = false;
		if (r == -ETIMEDOUT || r == -ENOTCONN || (r < 0 && d->dead)) {
			if (r == -ETIMEDOUT)
				snprintf(d->err, sizeof(d->err), "no reply to "
				    "the subscribe of \"%.64s\" within %d ms "
				    "of the daemon's restart", s->req.stream,
				    CLIENT_REPLY_TIMEOUT_MS);
			/* The ones done are done again at the next try. */
			try_failed(d, now);
			return -ENOTCONN;
		}
		s->resubbed = true;
		if (r < 0)
			s->lost = r;
	}
	d->state = CLIENT_UP;
	return 1;
}

/* The hello reply, when it came: 2 up (the subscriptions next), 0 not
 * yet, -ENOTCONN try again. */
static int
hello_step(struct daqiri *d, uint64_t now)
{
	struct daqiri_msg m;
	int r;

	for (;;) {
		d->dead = false;
		r = client_recv_one(d, &m, NULL, 0);
		if (r <= 0) {
			d->dead = true;
			return r == 0 ? 0 : -ENOTCONN;
		}
		if (m.type == DAQIRI_MSG_REPLY)
			break;
		daqiri_msg_free(&m);
	}
	r = client_reply_status(d, &m);
	if (r == 0)
		client_hello_done(d, &m);
	daqiri_msg_free(&m);
	if (r < 0) {
		d->dead = true;
		return -ENOTCONN;
	}
	d->state = CLIENT_RESUB;
	for (struct daqiri_sub *s = d->subs; s != NULL; s = s->next)
		s->resubbed = false;
	return 2;
}

int
client_reconnect(struct daqiri *d, uint64_t deadline)
{
	uint64_t now = daqiri_mono_ns(), until, lim;
	struct pollfd p;
	int r, ms;

	if (d->state == CLIENT_UP)
		go_down(d, now);
	/* a resubscribe under way: go on with it first */
	for (;;) {
		now = daqiri_mono_ns();
		expire(d, now, false);
		lim = limit_ns(d);
		if (lim == 0 || now - d->down_ns >= lim) {
			expire(d, now, true);
			return -ENOTCONN;
		}
		if (d->state == CLIENT_DOWN && now >= d->next_try_ns) {
			r = client_socket(d->path, true, &d->fd);
			if (r == 0)
				r = client_send(d, client_hello_new());
			if (r < 0) {
				try_failed(d, now);
				continue;
			}
			d->state = CLIENT_HELLO;
			/* With daqirid.socket the connect succeeds at once and
			 * the hello waits in the backlog for the new daemon. */
			d->hello_deadline_ns = now + CLIENT_REPLY_TIMEOUT_MS *
			    1000000ull;
		}
		if (d->state == CLIENT_HELLO) {
			r = hello_step(d, now);
			if (r < 0 || (r == 0 && now >= d->hello_deadline_ns)) {
				try_failed(d, now);
				continue;
			}
		}
		if (d->state == CLIENT_RESUB) {
			r = resubscribe(d, now, deadline);
			if (r == 1)
				return 1;
			if (r == 0)
				return 0;
			continue;
		}
		/* Wait for the next try, the hello reply or the caller's
		 * deadline, whichever comes first. */
		until = d->state == CLIENT_HELLO ? d->hello_deadline_ns :
		    d->next_try_ns;
		if (d->down_ns + lim < until)
			until = d->down_ns + lim;
		if (deadline <= now)
			return 0;
		if (deadline < until)
			until = deadline;
		ms = until > now ? (int)((until - now + 999999) / 1000000) : 0;
		p.fd = d->state == CLIENT_HELLO ? d->fd : -1;
		p.events = POLLIN;
		p.revents = 0;
		if (poll(&p, 1, ms) < 0 && errno == EINTR)
			return -EINTR;
		if (daqiri_mono_ns() >= deadline && deadline != UINT64_MAX &&
		    !(p.revents & (POLLIN | POLLHUP)))
			return 0;
	}
}
