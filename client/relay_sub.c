/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daqiri-relay's remote subscriptions (relay.h): each is a local
 * subscription on its peer's own daemon connection, forwarded against the
 * peer's credits. A tensor is taken (daqiri_next) only while the remote
 * has a free receive buffer, so a slow remote consumer meets the
 * daemon's own policy for it alone: `latest` overruns in the daemon (a
 * seq gap the remote sees), `lossless` holds the stream back exactly as
 * a slow local lossless consumer would. Data goes zero-copy from the
 * daemon's mapping; device tensors through a host staging copy when UCX
 * has no CUDA transport. Runs on the loop's thread; the send completion
 * (a UCX callback) only releases and counts.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>

#ifdef DAQIRI_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "ring.h"
#include "relay.h"

uint64_t
relay_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool
relay_allowed(const struct relay_opts *o, const char *stream)
{
	int i;

	if (o->nallow == 0)
		return true;
	for (i = 0; i < o->nallow; i++)
		if (fnmatch(o->allow[i], stream, 0) == 0)
			return true;
	return false;
}

void
relay_watch_set(struct relay *r, struct relay_watch *w, int fd,
		uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };

	if (fd >= 0 && fd == w->fd) {
		/* The library may have closed the fd and opened another
		 * of the same number (a reconnection): the close dropped
		 * the registration, so add it again. */
		if (epoll_ctl(r->epfd, EPOLL_CTL_MOD, fd, &ev) < 0 &&
		    errno == ENOENT)
			(void)epoll_ctl(r->epfd, EPOLL_CTL_ADD, fd, &ev);
		return;
	}
	if (w->fd >= 0)
		(void)epoll_ctl(r->epfd, EPOLL_CTL_DEL, w->fd, NULL);
	w->fd = -1;
	if (fd < 0)
		return;
	if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 &&
	    !(errno == EEXIST &&
	      epoll_ctl(r->epfd, EPOLL_CTL_MOD, fd, &ev) == 0)) {
		relay_log(RLOG_WARN, "epoll: fd %d: %s", fd, strerror(errno));
		return;
	}
	w->fd = fd;
}

int
relay_peer_local(struct relay_peer *p, struct daqiri_err *err)
{
	char hint[384];
	int r;

	if (p->local != NULL)
		return 0;
	r = daqiri_connect(p->r->o->sock, &p->local);
	if (r < 0) {
		p->local = NULL;
		daqiri_connect_hint(r, p->r->o->sock, hint, sizeof(hint));
		relay_log(RLOG_WARN, "peer %s: the local daemon: %s", p->addr,
		    hint);
		daqiri_err_set(err, daqiri_status_from_errno(r),
		    "the relay cannot reach its daemon: %s", hint);
		return r;
	}
	return 0;
}

static struct relay_sub *
sub_find(const struct relay_peer *p, uint32_t id)
{
	struct relay_sub *s;

	for (s = p->subs; s != NULL; s = s->next)
		if (s->id == id)
			return s;
	return NULL;
}

static void
sub_free(struct relay *r, struct relay_sub *s)
{
	uint32_t i;

	relay_watch_set(r, &s->watch, -1, 0);
	(void)daqiri_unsubscribe(s->local);
	for (i = 0; i < s->nslots; i++) {
		free(s->slots[i].hbuf);
		free(s->slots[i].stage);
	}
	free(s->slots);
	free(s);
}

/* The remote's geometry of the subscription: the local one's, as if the
 * buffers were packed in a memfd of their own (that is what the remote
 * consumer allocates; it decodes this with daqiri_sub_info_decode()). */
static void
remote_info(const struct relay_sub *s, const char *group,
	    struct daqiri_sub_info *si)
{
	const struct daqiri_stream_info *in = &s->info;

	memset(si, 0, sizeof(*si));
	si->sub_id = s->id;
	snprintf(si->stream, sizeof(si->stream), "%s", in->name);
	si->kind = in->kind;
	si->mode = in->mode;
	if (in->mode == DAQIRI_SUB_SHARED)
		snprintf(si->group, sizeof(si->group), "%s", group);
	si->mem_kind = in->mem_kind;
	si->device = in->mem_kind == DAQIRI_MEM_DEVICE ? in->device : -1;
	si->dtype = in->dtype;
	si->fill = in->fill;
	si->elem_bytes = in->elem_bytes;
	si->nbufs = in->nbufs;
	si->ppb = in->ppb;
	si->slot_bytes = in->slot_bytes;
	si->elems_per_slot = in->elems_per_slot;
	si->tensor_bytes = in->tensor_bytes;
	si->buf_offset = 0;
	si->buf_stride = in->tensor_bytes;
	si->map_bytes = (uint64_t)in->nbufs * in->tensor_bytes;
	si->bitmap_bytes = (uint32_t)(in->kind == DAQIRI_STREAM_RAW ?
	    DAQIRI_RAW_SIDECAR_BYTES(in->ppb) :
	    DAQIRI_RAW_LENGTHS_OFF(in->ppb));
	si->ring_depth = in->ring_depth;
	si->ring_bytes = daqiri_ring_size(in->ring_depth);
	si->max_held = in->max_held;
	si->policy = in->policy;
	si->nfds = DAQIRI_SUB_MAX_FDS;
	si->fds[0] = in->mem_kind == DAQIRI_MEM_DEVICE ? DAQIRI_FD_IPC :
	    DAQIRI_FD_TENSOR;
	si->fds[1] = DAQIRI_FD_BITMAP;
	si->fds[2] = DAQIRI_FD_RING;
	si->fds[3] = DAQIRI_FD_WAKE;
}

void
relay_sub_request(struct relay_peer *p, const struct daqiri_msg *m)
{
	const struct daqiri_sub_req *req = &m->u.sub;
	int64_t id = m->has_id ? (int64_t)m->id : -1;
	struct daqiri_sub_opts so = { .size = sizeof(so) };
	struct daqiri_sub_info si;
	struct daqiri_sub *ls = NULL;
	struct daqiri_err err;
	struct relay_sub *s;
	char msg[DAQIRI_ERR_MSG_MAX];
	cJSON *o;
	uint32_t i;
	int r;

	if (!relay_allowed(p->r->o, req->stream)) {
		p->r->refused[RR_ALLOW]++;
		snprintf(msg, sizeof(msg), "stream %s is not served by this "
		    "relay (--allow)", req->stream);
		relay_log(RLOG_INFO, "peer %s: refused %s (--allow)", p->addr,
		    req->stream);
		relay_peer_reply(p, DAQIRI_MSG_SUBSCRIBE, id,
		    DAQIRI_ST_PERMISSION_DENIED, msg);
		return;
	}
	if (p->next_sub_id == 0) {	/* 2^32 - 1 handed out */
		relay_peer_reply(p, DAQIRI_MSG_SUBSCRIBE, id, DAQIRI_ST_NO_RESOURCES,
		    "subscription ids exhausted: connect again");
		return;
	}
	if (relay_peer_local(p, &err) < 0) {
		relay_peer_reply(p, DAQIRI_MSG_SUBSCRIBE, id, err.status, err.msg);
		return;
	}
	so.depth = req->depth;
	so.max_held = req->max_held;
	so.mode = req->mode;
	so.group = req->mode == DAQIRI_SUB_SHARED ? req->group : NULL;
	/* A daemon restart is survived: its first tensor after carries
	 * DAQIRI_TENSOR_RESTART, forwarded as it is. */
	so.flags = DAQIRI_SUB_RECONNECT;
	so.policy = req->policy;
	r = daqiri_subscribe(p->local, req->stream, &so, &ls);
	if (r < 0) {
		const char *le = daqiri_last_error(p->local);

		snprintf(msg, sizeof(msg), "%s", le[0] != '\0' ? le :
		    r == -ENOTSUP ? "a device stream, and this relay was "
		    "built without CUDA" : strerror(-r));
		relay_log(RLOG_INFO, "peer %s: subscribe %s: %s", p->addr,
		    req->stream, msg);
		relay_peer_reply(p, DAQIRI_MSG_SUBSCRIBE, id,
		    daqiri_status_from_errno(r), msg);
		return;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		goto nomem;
	s->peer = p;
	s->local = ls;
	s->info.size = sizeof(s->info);
	s->unsub_req_id = RELAY_UNSUB_NONE;
	s->watch.kind = RW_SUB;
	s->watch.fd = -1;
	s->watch.ptr = s;
	if (daqiri_sub_info(ls, &s->info) < 0)
		goto internal;
	snprintf(s->stream, sizeof(s->stream), "%s", s->info.name);
	s->device = s->info.mem_kind == DAQIRI_MEM_DEVICE;
#ifndef DAQIRI_HAVE_CUDA
	if (s->device) {
		free(s);
		(void)daqiri_unsubscribe(ls);
		relay_peer_reply(p, DAQIRI_MSG_SUBSCRIBE, id, DAQIRI_ST_NOT_SUPPORTED,
		    "a device stream, and this relay was built without CUDA");
		return;
	}
#endif
	s->meta_bytes = relay_meta_bytes(s->info.ppb, s->info.kind);
	s->nslots = s->info.max_held;
	if (s->meta_bytes == 0 || s->nslots == 0)
		goto internal;
	s->slots = calloc(s->nslots, sizeof(*s->slots));
	if (s->slots == NULL)
		goto nomem;
	for (i = 0; i < s->nslots; i++) {
		s->slots[i].sub = s;
		s->slots[i].hbuf = malloc(sizeof(struct relay_tensor_hdr) +
		    s->meta_bytes);
		if (s->slots[i].hbuf == NULL)
			goto nomem;
	}
	s->id = p->next_sub_id;
	remote_info(s, req->group, &si);
	o = daqiri_reply_new(DAQIRI_MSG_SUBSCRIBE, id, DAQIRI_ST_OK, NULL);
	if (o == NULL || daqiri_sub_info_encode(&si, o) < 0) {
		struct daqiri_err e2;

		if (o != NULL && daqiri_sub_info_check(&si, &e2) < 0)
			relay_log(RLOG_WARN, "subscribe %s: the remote "
			    "geometry does not pass the check: %s",
			    s->stream, e2.msg);
		cJSON_Delete(o);
		goto internal;
	}
	p->next_sub_id++;
	s->next = p->subs;
	p->subs = s;
	(void)relay_peer_send_json(p, o);
	cJSON_Delete(o);
	relay_log(RLOG_INFO, "peer %s (%s): sub %u: %s, %s, %s memory",
	    p->addr, p->client[0] != '\0' ? p->client : "no name", s->id,
	    s->stream, daqiri_sub_policy_name(s->info.policy),
	    daqiri_mem_kind_name(s->info.mem_kind));
	return;
nomem:
	relay_peer_reply(p, DAQIRI_MSG_SUBSCRIBE, id, DAQIRI_ST_NO_RESOURCES,
	    "out of memory");
	goto out;
internal:
	relay_peer_reply(p, DAQIRI_MSG_SUBSCRIBE, id, DAQIRI_ST_INTERNAL,
	    "the relay could not describe the subscription");
out:
	if (s != NULL) {
		s->nslots = s->slots != NULL ? s->nslots : 0;
		sub_free(p->r, s);
	} else {
		(void)daqiri_unsubscribe(ls);
	}
}

void
relay_unsub_request(struct relay_peer *p, const struct daqiri_msg *m)
{
	int64_t id = m->has_id ? (int64_t)m->id : RELAY_UNSUB_NO_ID;
	struct relay_sub *s = sub_find(p, m->u.unsub.sub_id);
	char msg[DAQIRI_ERR_MSG_MAX];

	if (s == NULL || s->unsub_req_id != RELAY_UNSUB_NONE) {
		snprintf(msg, sizeof(msg), "no subscription %u on this "
		    "connection", m->u.unsub.sub_id);
		relay_peer_reply(p, DAQIRI_MSG_UNSUBSCRIBE, id < 0 ? -1 : id,
		    DAQIRI_ST_NO_SUCH_SUBSCRIPTION, msg);
		return;
	}
	/* Stop taking tensors; the reply goes once the ones in flight
	 * completed and the local subscription ended (relay_subs_pump). */
	s->closing = true;
	s->unsub_req_id = id;
}

void
relay_sub_credit(struct relay_peer *p, const struct relay_credit *c)
{
	struct relay_sub *s = sub_find(p, c->sub);

	if (s == NULL) {
		/* Credits of a subscription that just ended cross its
		 * sub_closed event or unsubscribe reply: no harm. */
		if (c->sub == 0 || c->sub >= p->next_sub_id)
			relay_garbage(p->r, p, RG_CREDIT_NO_SUB);
		return;
	}
	if (s->closing)
		return;
	if (s->credits + c->count > RELAY_SLOTS_MAX) {
		relay_garbage(p->r, p, RG_CREDIT_EXCESS);
		s->credits = RELAY_SLOTS_MAX;
		return;
	}
	s->credits += c->count;
}

/* ---- forwarding */

static void
tensor_done(struct relay_send *x, ucs_status_t st)
{
	struct relay_sub *s = x->sub;
	uint64_t now = relay_now_ns(), lag;

	if (st == UCS_OK) {
		s->c.tensors++;
		s->c.bytes += x->t.bytes;
		lag = now > x->t.publish_ns ? now - x->t.publish_ns : 0;
		s->c.lag_last_ns = lag;
		if (lag > s->c.lag_max_ns)
			s->c.lag_max_ns = lag;
	}
	(void)daqiri_release(s->local, &x->t);
	if (x->req != NULL)
		ucp_request_free(x->req);
	x->req = NULL;
	x->busy = false;
	s->inflight--;
}

static void
tensor_sent(void *req, ucs_status_t st, void *user)
{
	struct relay_send *x = user;

	x->req = req;
	tensor_done(x, st);
}

/* The subscription ended on the daemon's side for good: tell the
 * remote and drop it. */
static void
sub_ended(struct relay_sub *s, int err)
{
	struct relay_peer *p = s->peer;
	const char *le = p->local != NULL ? daqiri_last_error(p->local) : "";
	char msg[DAQIRI_ERR_MSG_MAX];
	cJSON *o;

	snprintf(msg, sizeof(msg), "the relay's subscription ended: %s",
	    le[0] != '\0' ? le : strerror(-err));
	relay_log(RLOG_INFO, "peer %s: sub %u (%s): %s", p->addr, s->id,
	    s->stream, msg);
	o = daqiri_event_new(DAQIRI_EV_SUB_CLOSED, s->id,
	    err == -ESHUTDOWN ? DAQIRI_ST_NO_SUCH_STREAM :
	    daqiri_status_from_errno(err), msg);
	if (o != NULL)
		(void)relay_peer_send_json(p, o);
	cJSON_Delete(o);
	s->closing = true;
}

/* Device data the remote can be sent: the pointer itself with a CUDA
 * UCX, else a host copy (NULL: it failed). */
static const void *
device_data(struct relay_sub *s, struct relay_send *x, uint32_t *rflags)
{
#ifdef DAQIRI_HAVE_CUDA
	struct relay *r = s->peer->r;

	if (x->t.event != NULL &&
	    cudaEventSynchronize((cudaEvent_t)x->t.event) != cudaSuccess) {
		cudaGetLastError();
		return NULL;
	}
	if (r->cuda_mem) {
		/* UCX moves device memory itself (cuda_copy, cuda_ipc, or
		 * GPUDirect RDMA): the pointer goes as it is. Not tested
		 * here: Debian's UCX has no CUDA transport. */
		return x->t.data;
	}
	if (!r->staging_logged) {
		relay_log(RLOG_INFO, "UCX has no CUDA transport: device "
		    "streams are staged through host memory (counted as "
		    "staged_bytes)");
		r->staging_logged = true;
	}
	if (x->stage == NULL) {
		x->stage = malloc(s->info.tensor_bytes);
		if (x->stage == NULL)
			return NULL;
	}
	if (cudaMemcpy(x->stage, x->t.data, x->t.bytes,
	    cudaMemcpyDeviceToHost) != cudaSuccess) {
		cudaGetLastError();
		return NULL;
	}
	*rflags |= RELAY_TENSOR_STAGED;
	s->c.staged_bytes += x->t.bytes;
	return x->stage;
#else
	return NULL;
#endif
}

static void
meta_fill(const struct relay_sub *s, const struct daqiri_tensor *t,
	  uint8_t *meta)
{
	uint32_t ppb = s->info.ppb;

	memset(meta, 0, s->meta_bytes);
	if (t->bitmap != NULL)
		memcpy(meta, t->bitmap, DAQIRI_RAW_LENGTHS_OFF(ppb));
	if (s->info.kind != DAQIRI_STREAM_RAW)
		return;
	if (t->lengths != NULL)
		memcpy(meta + DAQIRI_RAW_LENGTHS_OFF(ppb), t->lengths,
		    (size_t)ppb * sizeof(uint32_t));
	if (t->rx_ns != NULL)
		memcpy(meta + DAQIRI_RAW_RXNS_OFF(ppb), t->rx_ns,
		    (size_t)ppb * sizeof(uint64_t));
}

static void
send_tensor(struct relay_sub *s, const struct daqiri_tensor *t)
{
	struct relay_peer *p = s->peer;
	ucp_request_param_t prm = { 0 };
	struct relay_tensor_hdr *h;
	struct relay_send *x = NULL;
	ucs_status_ptr_t req;
	const void *data = t->data;
	uint32_t i, rflags = 0;

	for (i = 0; i < s->nslots && x == NULL; i++)
		if (!s->slots[i].busy)
			x = &s->slots[i];
	if (x == NULL) {		/* cannot be: inflight < nslots */
		(void)daqiri_release(s->local, t);
		return;
	}
	x->busy = true;
	x->req = NULL;
	x->t = *t;
	s->inflight++;
	s->credits--;
	if (t->flags & DAQIRI_TENSOR_RESTART) {
		s->have_seq = false;
		s->c.restarts++;
	}
	/* Gaps of a broadcast subscription are tensors the daemon skipped
	 * for this consumer (latest); a shared one's went to others. */
	if (s->have_seq && s->info.mode == DAQIRI_SUB_BROADCAST &&
	    t->seq > s->last_seq + 1)
		s->c.overruns += t->seq - s->last_seq - 1;
	s->have_seq = true;
	s->last_seq = t->seq;
	if (s->device) {
		data = device_data(s, x, &rflags);
		if (data == NULL) {
			tensor_done(x, UCS_ERR_IO_ERROR);
			sub_ended(s, -EIO);
			return;
		}
	}
	h = (struct relay_tensor_hdr *)x->hbuf;
	meta_fill(s, t, x->hbuf + sizeof(*h));
	memset(h, 0, sizeof(*h));
	h->magic = RELAY_TENSOR_MAGIC;
	h->sub = s->id;
	h->seq = t->seq;
	h->batch_id = t->batch_id;
	h->flags = t->flags;
	h->packets_expected = t->packets_expected;
	h->packets_received = t->packets_received;
	h->buf_index = t->buf_index;
	h->first_rx_ns = t->first_rx_ns;
	h->last_rx_ns = t->last_rx_ns;
	h->publish_ns = t->publish_ns;
	h->instance = t->instance;
	if (daqiri_sub_trigger(s->local, &h->trig_count, &h->trig_ns) < 0)
		h->trig_count = h->trig_ns = 0;
	h->meta_bytes = s->meta_bytes;
	h->data_bytes = s->info.tensor_bytes;
	prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
	    UCP_OP_ATTR_FIELD_USER_DATA;
	prm.cb.send = tensor_sent;
	prm.user_data = x;
	if (sizeof(*h) + s->meta_bytes <= p->r->max_am_header) {
		/* the meta in the header, the data one contiguous buffer:
		 * UCX 1.13 sends that as a zero-copy rendezvous, an IOV
		 * one about 3 times slower over TCP */
		h->relay_flags = rflags | RELAY_TENSOR_META_IN_HDR;
		req = ucp_am_send_nbx(p->ep, RELAY_AM_TENSOR, h,
		    sizeof(*h) + s->meta_bytes, data, t->bytes, &prm);
	} else {
		h->relay_flags = rflags;
		x->iov[0].buffer = x->hbuf + sizeof(*h);
		x->iov[0].length = s->meta_bytes;
		x->iov[1].buffer = (void *)data;
		x->iov[1].length = t->bytes;
		prm.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
		prm.datatype = ucp_dt_make_iov();
		req = ucp_am_send_nbx(p->ep, RELAY_AM_TENSOR, h, sizeof(*h),
		    x->iov, 2, &prm);
	}
	if (req == NULL) {
		tensor_done(x, UCS_OK);
	} else if (UCS_PTR_IS_ERR(req)) {
		tensor_done(x, UCS_PTR_STATUS(req));
		relay_peer_fail(p, ucs_status_string(UCS_PTR_STATUS(req)));
	}
	/* else: in flight; tensor_sent() completes it */
}

static void
pump_one(struct relay_sub *s)
{
	struct relay_peer *p = s->peer;
	int n;

	while (s->credits > 0 && s->inflight < s->nslots && !s->closing &&
	    !p->failed && p->state == PEER_READY) {
		struct daqiri_tensor t = { .size = sizeof(t) };

		n = daqiri_next(s->local, &t, 0);
		if (n == 0 || n == -EINTR || n == -EAGAIN)
			break;
		if (n < 0) {
			sub_ended(s, n);
			break;
		}
		send_tensor(s, &t);
	}
}

/* A closing subscription with nothing in flight: end it locally and
 * answer the unsubscribe that asked for it. */
static void
sub_drop(struct relay_sub *s)
{
	struct relay_peer *p = s->peer;
	int64_t id = s->unsub_req_id;
	bool asked = id != RELAY_UNSUB_NONE;

	relay_log(RLOG_DEBUG, "peer %s: sub %u (%s): ended after %llu "
	    "tensors, %llu bytes staged", p->addr, s->id, s->stream,
	    (unsigned long long)s->c.tensors,
	    (unsigned long long)s->c.staged_bytes);
	sub_free(p->r, s);
	if (asked && p->state == PEER_READY && !p->failed)
		relay_peer_reply(p, DAQIRI_MSG_UNSUBSCRIBE, id < 0 ? -1 : id,
		    DAQIRI_ST_OK, NULL);
}

int
relay_subs_pump(struct relay *r)
{
	struct relay_peer *p;
	struct relay_sub **sp, *s;
	int wait = -1, fd;

	for (p = r->peers; p != NULL; p = p->next) {
		bool want_local = false;

		for (sp = &p->subs; (s = *sp) != NULL;) {
			pump_one(s);
			if (s->closing && s->inflight == 0 &&
			    p->state != PEER_CLOSING) {
				*sp = s->next;
				sub_drop(s);
				continue;
			}
			sp = &s->next;
			if (s->closing || s->credits == 0 ||
			    s->inflight >= s->nslots ||
			    p->state != PEER_READY || p->failed) {
				/* nothing to take: its wake-ups can wait */
				relay_watch_set(r, &s->watch, -1, 0);
				continue;
			}
			want_local = true;
			fd = daqiri_sub_fd(s->local);
			if (fd < 0)		/* reconnecting */
				wait = RELAY_RECONNECT_POLL_MS;
			relay_watch_set(r, &s->watch, fd, EPOLLIN);
		}
		/* The daemon's connection says when it ended a
		 * subscription or went away. */
		fd = want_local && p->local != NULL ? daqiri_fd(p->local) : -1;
		if (want_local && fd < 0)
			wait = RELAY_RECONNECT_POLL_MS;
		relay_watch_set(r, &p->local_watch, fd, EPOLLIN);
	}
	return wait;
}

void
relay_subs_stop(struct relay_peer *p)
{
	struct relay_sub *s;

	for (s = p->subs; s != NULL; s = s->next) {
		s->closing = true;
		relay_watch_set(p->r, &s->watch, -1, 0);
	}
	relay_watch_set(p->r, &p->local_watch, -1, 0);
}

bool
relay_subs_idle(const struct relay_peer *p)
{
	const struct relay_sub *s;

	for (s = p->subs; s != NULL; s = s->next)
		if (s->inflight > 0)
			return false;
	return true;
}

void
relay_subs_free(struct relay_peer *p)
{
	struct relay_sub *s;

	while ((s = p->subs) != NULL) {
		p->subs = s->next;
		sub_free(p->r, s);
	}
	relay_watch_set(p->r, &p->local_watch, -1, 0);
	daqiri_disconnect(p->local);
	p->local = NULL;
}
