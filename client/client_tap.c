/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tapping an rx queue (daqiri_tap_*): a tap session started with "map",
 * its ring's memfd mapped, and the frames read straight from it
 * (proto/tapring.h), so a capture costs the daemon one memcpy per frame
 * and no message.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client_internal.h"
#include "tapring.h"

struct daqiri_tap {
	struct daqiri *d;
	uint64_t conn_id;		/* the connection it was started on */
	char queue[DAQIRI_STREAM_NAME_MAX];
	void *map;
	size_t map_len;
	struct daqiri_tapring_reader rd;
	bool broken;			/* -EPROTO seen */
};

/* One tap request on queue; the reply in *m (status ok) or an errno. */
static int
tap_request(struct daqiri *d, const char *queue, const char *action,
	    uint32_t count, uint32_t snap, struct daqiri_msg *m)
{
	cJSON *req = daqiri_msg_new(DAQIRI_MSG_TAP);
	bool start = strcmp(action, "start") == 0;
	int r;

	if (req != NULL && (cJSON_AddStringToObject(req, "queue",
	    queue) == NULL ||
	    cJSON_AddStringToObject(req, "action", action) == NULL ||
	    (start && (cJSON_AddNumberToObject(req, "count", count) == NULL ||
	    cJSON_AddNumberToObject(req, "snap", snap) == NULL ||
	    cJSON_AddBoolToObject(req, "map", true) == NULL)))) {
		cJSON_Delete(req);
		req = NULL;
	}
	r = client_transact(d, req, m);
	if (r < 0)
		return r;
	r = client_reply_status(d, m);
	if (r < 0)
		daqiri_msg_free(m);
	return r;
}

static int
tap_stop(struct daqiri *d, const char *queue)
{
	struct daqiri_msg m;
	int r = tap_request(d, queue, "stop", 0, 0, &m);

	if (r == 0)
		daqiri_msg_free(&m);
	return r;
}

/* The fd that follows the reply, mapped and checked. 0 or an errno with
 * nothing left open or mapped. */
static int
tap_map(struct daqiri_tap *t, const struct daqiri_tap_info *in)
{
	static const enum daqiri_fd_kind kinds[] = { DAQIRI_FD_TAP_RING };
	struct daqiri_tapring ring;
	int fd, r;

	r = client_recv_fds(t->d, in->gen, 1, kinds, &fd);
	if (r < 0)
		return r;
	/* read-write: the tail is ours to write */
	r = client_map_fd(fd, (size_t)in->ring_bytes, PROT_READ | PROT_WRITE,
	    &t->map);
	close(fd);
	if (r < 0) {
		client_set_err(t->d, "the tap's ring is not a sealed file of "
		    "the size the daemon's reply gives");
		return r;
	}
	t->map_len = (size_t)in->ring_bytes;
	if (daqiri_tapring_attach(&ring, t->map, t->map_len) < 0) {
		client_set_err(t->d, "the tap's ring has another layout than "
		    "this library's");
		munmap(t->map, t->map_len);
		t->map = NULL;
		return -EPROTO;
	}
	daqiri_tapring_reader_init(&t->rd, &ring, in->gen);
	return 0;
}

int
daqiri_tap_open(struct daqiri *d, const char *queue, uint32_t count,
		uint32_t snap, struct daqiri_tap **out)
{
	struct daqiri_tap_info info;
	struct daqiri_err err;
	struct daqiri_msg m;
	struct daqiri_tap *t;
	int r;

	if (out == NULL)
		return -EINVAL;
	*out = NULL;
	if (d == NULL || queue == NULL)
		return -EINVAL;
	if (CLIENT_IS_REMOTE(d)) {
		client_set_err(d, "taps are local-only: run daqirictl capture on the daemon's host");
		return -EOPNOTSUPP;
	}
	if (queue[0] == '\0' || strlen(queue) >= DAQIRI_STREAM_NAME_MAX) {
		snprintf(d->err, sizeof(d->err), "rx queue name '%s': empty or "
		    "longer than %d bytes", queue, DAQIRI_STREAM_NAME_MAX - 1);
		return -EINVAL;
	}
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return -ENOMEM;
	t->d = d;
	snprintf(t->queue, sizeof(t->queue), "%s", queue);
	r = tap_request(d, queue, "start", count, snap, &m);
	if (r < 0) {
		free(t);
		return r;
	}
	if (daqiri_tap_info_decode(m.json, &info, &err) < 0) {
		/* the fd that follows cannot be told apart: the connection
		 * is out of step */
		daqiri_msg_free(&m);
		snprintf(d->err, sizeof(d->err), "bad tap reply: %s", err.msg);
		shutdown(d->fd, SHUT_RDWR);
		d->dead = true;
		free(t);
		return -EPROTO;
	}
	daqiri_msg_free(&m);
	t->conn_id = d->conn_id;
	r = tap_map(t, &info);
	if (r < 0) {
		char why[sizeof(d->err)];

		memcpy(why, d->err, sizeof(why));
		if (!d->dead)
			(void)tap_stop(d, queue);
		memcpy(d->err, why, sizeof(why));
		free(t);
		return r;
	}
	*out = t;
	return 0;
}

int
daqiri_tap_next(struct daqiri_tap *t, struct daqiri_tap_frame *f)
{
	const struct daqiri_tapring_rec *rec;
	uint32_t caplen;
	int r;

	/* a caller built against a later, longer struct gets these fields */
	if (t == NULL || f == NULL || f->size < sizeof(*f))
		return -EINVAL;
	if (t->broken)
		return -EPROTO;
	r = daqiri_tapring_next(&t->rd, &rec, &caplen);
	if (r < 0) {
		t->broken = true;
		return r;
	}
	/* Empty: is the daemon still there? Its frames stop coming without
	 * a word when it dies; the hang-up shows on the connection (one
	 * non-blocking read, only when there is nothing to read here). */
	if (r == 0)
		return client_pump(t->d) == -ENOTCONN || t->d->dead ?
		    -ENOTCONN : 0;
	f->data = rec->data;
	f->caplen = caplen;
	f->len = rec->len < caplen ? caplen : rec->len;
	f->rx_ns = rec->ns;
	return 1;
}

void
daqiri_tap_release(struct daqiri_tap *t)
{
	if (t != NULL && !t->broken)
		daqiri_tapring_release(&t->rd);
}

int
daqiri_tap_counts(const struct daqiri_tap *t, uint64_t *taken,
		  uint64_t *full)
{
	const struct daqiri_tapring_hdr *h;

	if (t == NULL)
		return -EINVAL;
	h = t->rd.ring.hdr;
	if (taken != NULL)
		*taken = daqiri_tapring_acct(atomic_load_explicit(&h->taken,
		    memory_order_acquire), t->rd.gen);
	if (full != NULL)
		*full = daqiri_tapring_acct(atomic_load_explicit(&h->full,
		    memory_order_acquire), t->rd.gen);
	return 0;
}

int
daqiri_tap_close(struct daqiri_tap *t)
{
	int r = 0;

	if (t == NULL)
		return 0;
	/* a session on a connection that is gone ended with it */
	if (!t->d->dead && t->d->conn_id == t->conn_id) {
		r = tap_stop(t->d, t->queue);
		if (r == -ENOTCONN)
			r = 0;
	}
	munmap(t->map, t->map_len);
	free(t);
	return r;
}
