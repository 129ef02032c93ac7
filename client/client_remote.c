/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Remote connections: daqiri_connect("ucx://HOST:PORT") reaches a
 * daqiri-relay over UCX (client/relay_wire.h) behind the same handles as
 * a local daemon. A subscription owns a few receive buffers ("slots",
 * meta then data, in this process's memory); the relay sends a tensor
 * only against a credit, one per free slot, and a released slot is a new
 * credit. A tensor lands in its slot by UCX (rendezvous straight into it
 * for large ones), so daqiri_next() hands out a pointer into the slot, as
 * the local path hands out one into the daemon's mapping. A device
 * stream's tensor is then copied to a device buffer of the slot on this
 * process's current GPU, so it is a device tensor here too (a library
 * built without CUDA hands it out in host memory).
 *
 * One UCP context and worker per connection, progressed only from the
 * calls (no thread). Active-message callbacks run inside
 * ucp_worker_progress(): they only copy small messages or note a
 * rendezvous, which remote_progress() starts afterwards.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ucp/api/ucp.h>

#ifdef DAQIRI_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "client_internal.h"
#include "desc.h"
#include "relay_wire.h"

/* Receive buffers of one remote subscription: its max_held plus this
 * many in flight, at least RS_SLOTS_MIN, at most RS_SLOTS_MAX and
 * RS_MEM_MAX bytes (but 2). */
#define RS_SLOTS_EXTRA	2u
#define RS_SLOTS_MIN	4u
#define RS_SLOTS_MAX	64u
#define RS_MEM_MAX	((uint64_t)1 << 30)
/* A reconnection attempt may take this long even from a shorter
 * timeout (a handshake is a few round trips). */
#define RS_ATTEMPT_MIN_MS	200
/* Control messages waiting to be read, at most. */
#define RS_INBOX_MAX	1024u

enum slot_state {
	SLOT_FREE,
	SLOT_RECV,		/* a rendezvous receive is under way */
	SLOT_READY,		/* landed, not handed out yet */
	SLOT_HELD,		/* the application's */
	SLOT_FAILED,		/* its receive failed: free it in order */
};

struct remote_slot {
	uint8_t *base;			/* meta, then the data */
	enum slot_state state;
	struct relay_tensor_hdr hdr;
	void *desc;			/* rendezvous descriptor to receive */
	uint8_t *dst;			/* where the payload goes: base, or
					 * the data after the meta when the
					 * meta came in the header */
	size_t len;
	struct remote_sub *rs;
};

struct remote_sub {
	uint32_t rid;			/* the relay's subscription id */
	uint32_t meta_bytes;
	uint32_t nslots;
	size_t stride;
	uint8_t *mem;
	size_t mem_len;
	struct remote_slot *slots;
	uint32_t *fifo;			/* slots in arrival order */
	uint32_t head, count;
	uint64_t trig_count, trig_ns;
	uint64_t dropped;		/* tensors whose receive failed */
	uint8_t *dev;			/* device stream: nslots x tensor_bytes
					 * on GPU dev_ordinal, else NULL */
	int dev_ordinal;
};

/* A received control message, waiting to be read. */
struct remote_msg {
	struct remote_msg *next;
	size_t len;
	char text[];
};

/* What a send keeps alive until it completes. */
struct remote_send {
	struct relay_credit credit;
	size_t len;
	char text[];
};

struct client_remote {
	char host[256];
	uint16_t port;
	char where[96];			/* "host:port", for messages */
	ucp_context_h ctx;
	ucp_worker_h worker;
	ucp_ep_h ep;
	int efd;
	bool failed;			/* the endpoint's error handler ran */
	bool authed;
	uint64_t relay_instance;
	struct remote_msg *inbox, **inbox_tail;
	uint32_t ninbox;		/* messages in it */
	size_t last_len;		/* bytes of the last one read */
	bool rndv_pending;		/* a slot awaits its receive start */
	uint8_t secret[RELAY_SECRET_MAX + 1];
	size_t secret_len;
	bool have_secret;
	uint64_t garbage;		/* messages the relay should not send */
};

/* ---- sending */

static void
send_done(void *req, ucs_status_t st, void *user)
{
	free(user);
	ucp_request_free(req);
}

/* Send one AM: header hdr (hlen) and payload (len), both copied. 0 or a
 * negative errno (-ENOTCONN: the endpoint is gone). */
static int
remote_send_am(struct client_remote *r, unsigned id, const void *hdr,
	       size_t hlen, const void *payload, size_t len)
{
	struct remote_send *m;
	ucp_request_param_t p = { 0 };
	ucs_status_ptr_t q;

	if (r->ep == NULL || r->failed)
		return -ENOTCONN;
	m = malloc(sizeof(*m) + len);
	if (m == NULL)
		return -ENOMEM;
	if (hdr != NULL)
		memcpy(&m->credit, hdr, hlen);
	memcpy(m->text, payload, len);
	m->len = len;
	p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
	    UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
	p.cb.send = send_done;
	p.user_data = m;
	/* the relay knows its peer by the reply endpoint */
	p.flags = UCP_AM_SEND_FLAG_EAGER | UCP_AM_SEND_FLAG_REPLY;
	q = ucp_am_send_nbx(r->ep, id, hdr != NULL ? &m->credit : NULL, hlen,
	    m->text, len, &p);
	if (q == NULL) {
		free(m);
		return 0;
	}
	if (UCS_PTR_IS_ERR(q)) {
		free(m);
		return -ENOTCONN;
	}
	return 0;
}

static int
remote_send_json(struct client_remote *r, cJSON *o)
{
	char *txt;
	int ret;

	if (o == NULL)
		return -ENOMEM;
	txt = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (txt == NULL)
		return -ENOMEM;
	ret = strlen(txt) > DAQIRI_MSG_SIZE_MAX ? -EMSGSIZE :
	    remote_send_am(r, RELAY_AM_CTRL, NULL, 0, txt, strlen(txt));
	cJSON_free(txt);
	return ret;
}

static void
send_credit(struct daqiri_sub *s, uint32_t n)
{
	struct relay_credit c = {
		.magic = RELAY_CREDIT_MAGIC, .sub = s->rs->rid, .count = n,
	};

	/* A lost credit is found again: the next subscribe counts the free
	 * slots. */
	if (n > 0)
		(void)remote_send_am(s->d->remote, RELAY_AM_CREDIT, &c,
		    sizeof(c), NULL, 0);
}

/* ---- receiving (inside ucp_worker_progress) */

static struct daqiri_sub *
find_sub(struct daqiri *d, uint32_t rid)
{
	struct daqiri_sub *s;

	for (s = d->subs; s != NULL; s = s->next)
		if (s->rs != NULL && s->rs->rid == rid && !s->closed)
			return s;
	return NULL;
}

static ucs_status_t
on_ctrl(void *arg, const void *header, size_t hlen, void *data, size_t len,
	const ucp_am_recv_param_t *param)
{
	struct daqiri *d = arg;
	struct client_remote *r = d->remote;
	struct remote_msg *m;

	if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) ||
	    len > DAQIRI_MSG_SIZE_MAX || len == 0) {
		r->garbage++;
		return (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) ?
		    UCS_ERR_UNSUPPORTED : UCS_OK;
	}
	/* A relay that floods us is not let fill our memory: events past
	 * the bound are dropped (and counted), replies are awaited one at
	 * a time, so none is among them. */
	if (r->ninbox >= RS_INBOX_MAX) {
		r->garbage++;
		return UCS_OK;
	}
	m = malloc(sizeof(*m) + len);
	if (m == NULL)
		return UCS_OK;
	m->next = NULL;
	m->len = len;
	memcpy(m->text, data, len);
	*r->inbox_tail = m;
	r->inbox_tail = &m->next;
	r->ninbox++;
	return UCS_OK;
}

static ucs_status_t
on_tensor(void *arg, const void *header, size_t hlen, void *data, size_t len,
	  const ucp_am_recv_param_t *param)
{
	bool rndv = param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV;
	struct daqiri *d = arg;
	struct relay_tensor_hdr h;
	struct daqiri_sub *s;
	struct remote_sub *rs;
	struct remote_slot *sl = NULL;
	uint32_t sub, i;

	/* The sub id is the header's second word. */
	if (hlen < sizeof(h))
		goto bad;
	memcpy(&sub, (const uint8_t *)header + 4, sizeof(sub));
	s = find_sub(d, sub);
	if (s == NULL || relay_tensor_check(header, hlen, len, s->info.ppb,
	    s->info.kind, s->info.tensor_bytes, &h) < 0)
		goto bad;
	rs = s->rs;
	for (i = 0; i < rs->nslots; i++)
		if (rs->slots[i].state == SLOT_FREE) {
			sl = &rs->slots[i];
			break;
		}
	if (sl == NULL)			/* sent without a credit */
		goto bad;
	sl->hdr = h;
	sl->len = len;
	sl->dst = sl->base;
	if (h.relay_flags & RELAY_TENSOR_META_IN_HDR) {
		memcpy(sl->base, (const uint8_t *)header + sizeof(h),
		    rs->meta_bytes);
		sl->dst = sl->base + rs->meta_bytes;
	}
	rs->fifo[(rs->head + rs->count) % rs->nslots] = (uint32_t)(sl - rs->slots);
	rs->count++;
	if (rndv) {
		sl->state = SLOT_RECV;
		sl->desc = data;
		d->remote->rndv_pending = true;
		return UCS_INPROGRESS;
	}
	memcpy(sl->dst, data, len);
	sl->state = SLOT_READY;
	return UCS_OK;
bad:
	d->remote->garbage++;
	return rndv ? UCS_ERR_REJECTED : UCS_OK;
}

static void
recv_done(void *req, ucs_status_t st, size_t length, void *user)
{
	struct remote_slot *sl = user;

	sl->state = st == UCS_OK && length == sl->len ? SLOT_READY :
	    SLOT_FAILED;
	ucp_request_free(req);
}

/* Start the rendezvous receives the callbacks noted. */
static void
start_receives(struct daqiri *d)
{
	ucp_request_param_t p = { 0 };
	struct daqiri_sub *s;
	ucs_status_ptr_t q;
	uint32_t i;

	d->remote->rndv_pending = false;
	for (s = d->subs; s != NULL; s = s->next) {
		if (s->rs == NULL)
			continue;
		for (i = 0; i < s->rs->nslots; i++) {
			struct remote_slot *sl = &s->rs->slots[i];

			if (sl->state != SLOT_RECV || sl->desc == NULL)
				continue;
			p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
			    UCP_OP_ATTR_FIELD_USER_DATA;
			p.cb.recv_am = recv_done;
			p.user_data = sl;
			q = ucp_am_recv_data_nbx(d->remote->worker, sl->desc,
			    sl->dst, sl->len, &p);
			sl->desc = NULL;
			if (q == NULL)
				sl->state = SLOT_READY;
			else if (UCS_PTR_IS_ERR(q))
				sl->state = SLOT_FAILED;
		}
	}
}

static void
on_ep_error(void *arg, ucp_ep_h ep, ucs_status_t st)
{
	struct daqiri *d = arg;

	d->remote->failed = true;
	snprintf(d->err, sizeof(d->err), "the relay at %s is gone (%s)",
	    d->remote->where, ucs_status_string(st));
}

static void
remote_progress(struct daqiri *d)
{
	while (ucp_worker_progress(d->remote->worker) != 0)
		;
	if (d->remote->rndv_pending)
		start_receives(d);
}

/* ---- control messages */

static void
handle_event(struct daqiri *d, const struct daqiri_msg *m)
{
	struct daqiri_sub *s;

	if (m->u.event.kind != DAQIRI_EV_SUB_CLOSED)
		return;
	s = find_sub(d, m->u.event.sub_id);
	if (s != NULL) {
		s->closed = true;
		snprintf(d->err, sizeof(d->err), "%s", m->u.event.message);
	}
}

/* Wait up to deadline for the next control message that is not an event
 * (events are handled): 1 with *m, 0 past the deadline, -ENOTCONN,
 * -EPROTO (garbage from the relay), -EINTR. */
static int
remote_recv_ctrl(struct daqiri *d, struct relay_ctrl *m, uint64_t deadline)
{
	struct client_remote *r = d->remote;
	struct daqiri_err err;
	struct remote_msg *x;
	uint64_t now;
	int rc;

	for (;;) {
		remote_progress(d);
		while ((x = r->inbox) != NULL) {
			r->inbox = x->next;
			r->ninbox--;
			if (r->inbox == NULL)
				r->inbox_tail = &r->inbox;
			r->last_len = x->len;
			rc = relay_ctrl_decode(x->text, x->len, m, &err);
			free(x);
			if (rc < 0) {
				snprintf(d->err, sizeof(d->err), "the relay "
				    "sent garbage: %s", err.msg);
				return -EPROTO;
			}
			if (m->type == RELAY_CTRL_PROTO &&
			    m->proto.type == DAQIRI_MSG_EVENT) {
				handle_event(d, &m->proto);
				relay_ctrl_free(m);
				continue;
			}
			return 1;
		}
		if (r->failed)
			return -ENOTCONN;
		now = daqiri_mono_ns();
		if (now >= deadline)
			return 0;
		if (ucp_worker_arm(r->worker) == UCS_ERR_BUSY)
			continue;
		struct pollfd p = { .fd = r->efd, .events = POLLIN };

		rc = poll(&p, 1, (int)((deadline - now + 999999) / 1000000));
		if (rc < 0 && errno == EINTR)
			return -EINTR;
	}
}

/* Send req (consumed, given an id) and wait for its reply: 0 with *m
 * (a control protocol reply; relay_ctrl_free it), or a negative errno.
 * A reply in parts is joined into m->proto.json. */
static int
remote_transact(struct daqiri *d, cJSON *req, struct relay_ctrl *m)
{
	uint64_t deadline = daqiri_mono_ns() +
	    (uint64_t)CLIENT_REPLY_TIMEOUT_MS * 1000000ull;
	struct daqiri_err err;
	cJSON *acc = NULL;
	size_t total = 0;
	uint32_t id = d->next_id++;
	int r;

	if (req == NULL || !cJSON_AddNumberToObject(req, "id", id)) {
		cJSON_Delete(req);
		return -ENOMEM;
	}
	r = remote_send_json(d->remote, req);
	if (r < 0)
		return r;
	for (;;) {
		r = remote_recv_ctrl(d, m, deadline);
		if (r == 0) {
			cJSON_Delete(acc);
			return -ETIMEDOUT;
		}
		if (r < 0) {
			cJSON_Delete(acc);
			return r;
		}
		if (m->type != RELAY_CTRL_PROTO ||
		    m->proto.type != DAQIRI_MSG_REPLY || !m->proto.has_id ||
		    m->proto.id != id) {
			relay_ctrl_free(m);
			continue;	/* a late reply to an abandoned request */
		}
		if (!m->proto.u.reply.has_part) {
			if (acc == NULL)
				return 0;
			relay_ctrl_free(m);
			cJSON_Delete(acc);
			snprintf(d->err, sizeof(d->err), "the relay mixed a "
			    "whole reply into a series of parts");
			return -EPROTO;
		}
		total += d->remote->last_len;
		if (daqiri_reply_merge(&acc, &m->proto, total, &err) < 0) {
			relay_ctrl_free(m);
			cJSON_Delete(acc);
			snprintf(d->err, sizeof(d->err), "the relay's reply: %s",
			    err.msg);
			return -EPROTO;
		}
		if (!m->proto.u.reply.more) {
			cJSON_Delete(m->proto.json);
			m->proto.json = acc;
			return 0;
		}
		relay_ctrl_free(m);
	}
}

/* A reply's status as 0 or a negative errno, its message kept. */
static int
remote_status(struct daqiri *d, const struct relay_ctrl *m)
{
	if (m->proto.u.reply.status == DAQIRI_ST_OK)
		return 0;
	snprintf(d->err, sizeof(d->err), "%s", m->proto.u.reply.message);
	return daqiri_status_to_errno(m->proto.u.reply.status);
}

/* ---- connecting */

/* Close the endpoint: flushed and said to the relay when it stands
 * (within RS_CLOSE_MS), else at once. */
#define RS_CLOSE_MS	500
static void
ep_destroy(struct client_remote *r)
{
	uint64_t end = daqiri_mono_ns() + (uint64_t)RS_CLOSE_MS * 1000000ull;
	ucp_request_param_t p = { 0 };
	ucs_status_ptr_t q;

	if (r->ep == NULL)
		return;
	p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
	p.flags = r->failed ? UCP_EP_CLOSE_FLAG_FORCE : 0;
	q = ucp_ep_close_nbx(r->ep, &p);
	if (UCS_PTR_IS_PTR(q)) {
		while (ucp_request_check_status(q) == UCS_INPROGRESS &&
		    daqiri_mono_ns() < end)
			ucp_worker_progress(r->worker);
		if (ucp_request_check_status(q) == UCS_INPROGRESS)
			ucp_request_cancel(r->worker, q);
		while (ucp_request_check_status(q) == UCS_INPROGRESS)
			ucp_worker_progress(r->worker);
		ucp_request_free(q);
	}
	r->ep = NULL;
}

/* Create the endpoint and do the handshake, waiting until deadline.
 * 0, or a negative errno with d->err. */
static int
remote_open(struct daqiri *d, uint64_t deadline)
{
	struct client_remote *r = d->remote;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	ucp_ep_params_t ep = { 0 };
	uint8_t mac[RELAY_MAC_BYTES];
	struct remote_msg *x;
	struct relay_ctrl m;
	char port[8];
	int rc;

	ep_destroy(r);
	r->failed = false;
	r->authed = false;
	/* nothing the last endpoint said is an answer to this one */
	while ((x = r->inbox) != NULL) {
		r->inbox = x->next;
		free(x);
	}
	r->inbox_tail = &r->inbox;
	r->ninbox = 0;
	snprintf(port, sizeof(port), "%u", r->port);
	rc = getaddrinfo(r->host, port, &hints, &ai);
	if (rc != 0) {
		snprintf(d->err, sizeof(d->err), "relay host '%.80s': %s",
		    r->host, gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	ep.field_mask = UCP_EP_PARAM_FIELD_FLAGS |
	    UCP_EP_PARAM_FIELD_SOCK_ADDR | UCP_EP_PARAM_FIELD_ERR_HANDLER |
	    UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
	ep.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
	ep.sockaddr.addr = ai->ai_addr;
	ep.sockaddr.addrlen = ai->ai_addrlen;
	ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
	ep.err_handler.cb = on_ep_error;
	ep.err_handler.arg = d;
	rc = ucp_ep_create(r->worker, &ep, &r->ep) == UCS_OK ? 0 : -ENOMEM;
	freeaddrinfo(ai);
	if (rc < 0) {
		r->ep = NULL;
		snprintf(d->err, sizeof(d->err), "UCX could not make an "
		    "endpoint to %s", r->where);
		return rc;
	}
	rc = remote_recv_ctrl(d, &m, deadline);
	if (rc <= 0)
		goto lost;
	if (m.type != RELAY_CTRL_CHALLENGE) {
		relay_ctrl_free(&m);
		snprintf(d->err, sizeof(d->err), "%s did not begin as a "
		    "daqiri-relay does", r->where);
		return -EPROTO;
	}
	if (m.u.challenge.auth && !r->have_secret) {
		snprintf(d->err, sizeof(d->err), "the relay at %s needs its "
		    "shared secret: set $DAQIRI_SECRET_FILE to a copy of its "
		    "--secret-file (mode 600)", r->where);
		return -EACCES;
	}
	r->relay_instance = m.u.challenge.instance;
	if (r->have_secret && relay_mac(r->secret, r->secret_len,
	    m.u.challenge.nonce, mac) < 0)
		return -EIO;
	rc = remote_send_json(r, relay_auth_new(r->have_secret ? mac : NULL,
	    program_invocation_short_name));
	if (rc < 0)
		goto lost;
	rc = remote_recv_ctrl(d, &m, deadline);
	if (rc <= 0)
		goto lost;
	if (m.type != RELAY_CTRL_AUTH_REPLY) {
		relay_ctrl_free(&m);
		snprintf(d->err, sizeof(d->err), "the relay answered auth "
		    "with something else");
		return -EPROTO;
	}
	if (m.u.auth_reply.status != DAQIRI_ST_OK) {
		snprintf(d->err, sizeof(d->err), "the relay at %s refused "
		    "us: %.120s", r->where, m.u.auth_reply.message);
		return daqiri_status_to_errno(m.u.auth_reply.status);
	}
	r->authed = true;
	return 0;
lost:
	if (rc == 0) {
		snprintf(d->err, sizeof(d->err), "no answer from a relay at "
		    "%s", r->where);
		return -ETIMEDOUT;
	}
	if (rc == -ENOTCONN) {
		snprintf(d->err, sizeof(d->err), "no daqiri-relay is "
		    "listening at %s", r->where);
		return -ECONNREFUSED;
	}
	return rc;
}

int
client_remote_connect(struct daqiri *d, const char *url)
{
	struct client_remote *r;
	ucp_params_t up = { 0 };
	ucp_worker_params_t wp = { 0 };
	ucp_am_handler_param_t ap = { 0 };
	const char *sf = getenv("DAQIRI_SECRET_FILE");
	ucp_config_t *cfg = NULL;
	int rc;

	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return -ENOMEM;
	d->remote = r;
	d->fd = -1;
	r->efd = -1;
	r->inbox_tail = &r->inbox;
	if (relay_url_parse(url, r->host, sizeof(r->host), &r->port) != 1) {
		snprintf(d->err, sizeof(d->err), "'%.200s' is not "
		    "ucx://HOST[:PORT]", url);
		return -EINVAL;
	}
	snprintf(r->where, sizeof(r->where), "%.80s:%u", r->host, r->port);
	if (sf != NULL && sf[0] != '\0') {
		rc = relay_secret_load(sf, r->secret, &r->secret_len, d->err,
		    sizeof(d->err));
		if (rc < 0)
			return rc == -EPERM ? -EACCES : rc;
		r->have_secret = true;
	}
	if (ucp_config_read(NULL, NULL, &cfg) != UCS_OK)
		return -ENOMEM;
	up.field_mask = UCP_PARAM_FIELD_FEATURES;
	up.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
	rc = ucp_init(&up, cfg, &r->ctx);
	ucp_config_release(cfg);
	if (rc != UCS_OK) {
		r->ctx = NULL;
		snprintf(d->err, sizeof(d->err), "UCX did not start: %s",
		    ucs_status_string((ucs_status_t)rc));
		return -ENODEV;
	}
	wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
	wp.thread_mode = UCS_THREAD_MODE_SINGLE;
	if (ucp_worker_create(r->ctx, &wp, &r->worker) != UCS_OK ||
	    ucp_worker_get_efd(r->worker, &r->efd) != UCS_OK) {
		snprintf(d->err, sizeof(d->err), "UCX: no worker");
		return -ENODEV;
	}
	ap.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
	    UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG |
	    UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
	ap.flags = UCP_AM_FLAG_WHOLE_MSG;
	ap.arg = d;
	ap.id = RELAY_AM_CTRL;
	ap.cb = on_ctrl;
	if (ucp_worker_set_am_recv_handler(r->worker, &ap) != UCS_OK)
		return -ENODEV;
	ap.id = RELAY_AM_TENSOR;
	ap.cb = on_tensor;
	if (ucp_worker_set_am_recv_handler(r->worker, &ap) != UCS_OK)
		return -ENODEV;
	return remote_open(d, daqiri_mono_ns() +
	    (uint64_t)CLIENT_REPLY_TIMEOUT_MS * 1000000ull);
}

void
client_remote_free(struct daqiri *d)
{
	struct client_remote *r = d->remote;
	struct remote_msg *m;

	if (r == NULL)
		return;
	if (r->worker != NULL) {
		ep_destroy(r);
		ucp_worker_destroy(r->worker);
	}
	if (r->ctx != NULL)
		ucp_cleanup(r->ctx);
	while ((m = r->inbox) != NULL) {
		r->inbox = m->next;
		free(m);
	}
	explicit_bzero(r->secret, sizeof(r->secret));
	free(r);
	d->remote = NULL;
}

/* ---- subscriptions */

/* Slots of a subscription, after its geometry is known. */
static int
slots_make(struct daqiri_sub *s)
{
	struct remote_sub *rs = s->rs;
	uint64_t stride, n;
	long pg = sysconf(_SC_PAGESIZE);

	rs->meta_bytes = relay_meta_bytes(s->info.ppb, s->info.kind);
	stride = ((uint64_t)rs->meta_bytes + s->info.tensor_bytes +
	    (uint64_t)pg - 1) / (uint64_t)pg * (uint64_t)pg;
	n = s->info.max_held + RS_SLOTS_EXTRA;
	if (n < RS_SLOTS_MIN)
		n = RS_SLOTS_MIN;
	if (n > RS_SLOTS_MAX)
		n = RS_SLOTS_MAX;
	while (n > 2 && n * stride > RS_MEM_MAX)
		n--;
	if (rs->meta_bytes == 0 || n * stride > SIZE_MAX / 2)
		return -EPROTO;
	rs->nslots = (uint32_t)n;
	rs->stride = (size_t)stride;
	rs->mem_len = (size_t)(n * stride);
	rs->mem = mmap(NULL, rs->mem_len, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (rs->mem == MAP_FAILED) {
		rs->mem = NULL;
		return -ENOMEM;
	}
	rs->slots = calloc(n, sizeof(*rs->slots));
	rs->fifo = calloc(n, sizeof(*rs->fifo));
	if (rs->slots == NULL || rs->fifo == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		rs->slots[i].base = rs->mem + (size_t)i * rs->stride;
		rs->slots[i].rs = rs;
	}
#ifdef DAQIRI_HAVE_CUDA
	if (s->info.mem_kind == DAQIRI_MEM_DEVICE) {
		void *p = NULL;

		rs->dev_ordinal = s->info.device;
		if (cudaSetDevice(rs->dev_ordinal) != cudaSuccess ||
		    cudaMalloc(&p, (size_t)(n * s->info.tensor_bytes)) !=
		    cudaSuccess) {
			cudaGetLastError();
			snprintf(s->d->err, sizeof(s->d->err), "no room on GPU "
			    "%d for %u tensors of %s", rs->dev_ordinal,
			    rs->nslots, s->info.stream);
			return -ENOMEM;
		}
		rs->dev = p;
	}
#endif
	return 0;
}

/* The data of slot i as handed out: its device buffer, or the slot. */
static uint8_t *
slot_data(const struct remote_sub *rs, size_t i, uint64_t tensor_bytes)
{
	if (rs->dev != NULL)
		return rs->dev + i * tensor_bytes;
	return rs->slots[i].base + rs->meta_bytes;
}

static uint32_t
slots_free(const struct remote_sub *rs)
{
	uint32_t i, n = 0;

	for (i = 0; i < rs->nslots; i++)
		n += rs->slots[i].state == SLOT_FREE;
	return n;
}

/* Where a stream's tensors are in this process: a device stream's on
 * this thread's current GPU (built with CUDA), everything else in host
 * memory. 0, or -ENODEV with d->err (no GPU here for a device stream). */
static int
local_memory(struct daqiri *d, struct daqiri_sub_info *info)
{
	if (info->mem_kind != DAQIRI_MEM_DEVICE) {
		info->mem_kind = DAQIRI_MEM_HOST;
		info->device = -1;
		return 0;
	}
#ifdef DAQIRI_HAVE_CUDA
	int dev = -1;
	cudaError_t e = cudaGetDevice(&dev);

	if (e != cudaSuccess || dev < 0) {
		cudaGetLastError();
		snprintf(d->err, sizeof(d->err), "%s is a device stream and "
		    "this process has no GPU (%s)", info->stream,
		    cudaGetErrorString(e));
		return -ENODEV;
	}
	info->device = dev;
#else
	info->mem_kind = DAQIRI_MEM_HOST;
	info->device = -1;
#endif
	return 0;
}

/* Subscribe s->req at the relay: the reply's id and geometry into id and
 * *info, as this process sees it (local_memory()). 0 or a negative errno
 * with d->err. */
static int
sub_request(struct daqiri_sub *s, uint32_t *id, struct daqiri_sub_info *info)
{
	struct daqiri *d = s->d;
	struct daqiri_err err;
	struct relay_ctrl m;
	const cJSON *v;
	cJSON *req;
	int r;

	req = daqiri_msg_new(DAQIRI_MSG_SUBSCRIBE);
	if (req == NULL || daqiri_sub_req_encode(&s->req, req) < 0) {
		cJSON_Delete(req);
		return -ENOMEM;
	}
	r = remote_transact(d, req, &m);
	if (r < 0)
		return r;
	r = remote_status(d, &m);
	if (r == 0) {
		v = cJSON_GetObjectItemCaseSensitive(m.proto.json, "sub");
		if (!daqiri_json_int_in(v, 1, UINT32_MAX) ||
		    daqiri_sub_info_decode(m.proto.json, info, &err) < 0) {
			snprintf(d->err, sizeof(d->err), "the relay's "
			    "subscribe reply: %s", v == NULL ? "no sub" :
			    err.msg);
			r = -EPROTO;
		} else {
			*id = (uint32_t)v->valuedouble;
			r = local_memory(d, info);
		}
	}
	relay_ctrl_free(&m);
	return r;
}

int
client_remote_sub_open(struct daqiri_sub *s)
{
	uint32_t id;
	int r;

	s->rs = calloc(1, sizeof(*s->rs));
	if (s->rs == NULL)
		return -ENOMEM;
	if (s->d->remote->failed)
		return -ENOTCONN;
	r = sub_request(s, &id, &s->info);
	if (r < 0)
		return r;
	s->rs->rid = id;
	s->info.sub_id = id;
	s->instance = s->d->remote->relay_instance;
	r = slots_make(s);
	if (r < 0) {
		s->rs->rid = 0;
		(void)client_remote_unsubscribe(s);
		return r;
	}
	send_credit(s, s->rs->nslots);
	return 0;
}

void
client_remote_sub_free(struct daqiri_sub *s)
{
	struct remote_sub *rs = s->rs;
	uint64_t end = daqiri_mono_ns() + 1000000000ull;
	uint32_t i;
	bool busy;

	if (rs == NULL)
		return;
	/* A rendezvous noted and not started is given back; a receive
	 * under way writes into the slots: let it end first. */
	for (i = 0; rs->slots != NULL && s->d != NULL && s->d->remote != NULL &&
	    i < rs->nslots; i++)
		if (rs->slots[i].desc != NULL) {
			ucp_am_data_release(s->d->remote->worker,
			    rs->slots[i].desc);
			rs->slots[i].desc = NULL;
			rs->slots[i].state = SLOT_FAILED;
		}
	do {
		busy = false;
		if (rs->slots != NULL && s->d != NULL && s->d->remote != NULL) {
			remote_progress(s->d);
			for (i = 0; i < rs->nslots; i++)
				busy |= rs->slots[i].state == SLOT_RECV &&
				    rs->slots[i].desc == NULL;
		}
	} while (busy && daqiri_mono_ns() < end);
	if (rs->mem != NULL && !busy)
		munmap(rs->mem, rs->mem_len);
#ifdef DAQIRI_HAVE_CUDA
	if (rs->dev != NULL)
		cudaFree(rs->dev);
#endif
	free(rs->slots);
	free(rs->fifo);
	free(rs);
	s->rs = NULL;
}

int
client_remote_unsubscribe(struct daqiri_sub *s)
{
	struct relay_ctrl m;
	cJSON *req;
	int r;

	if (s->rs == NULL || s->rs->rid == 0 || s->lost != 0 ||
	    s->d->remote->failed)
		return s->closed ? 0 : -ENOTCONN;
	req = daqiri_msg_new(DAQIRI_MSG_UNSUBSCRIBE);
	if (req == NULL || !cJSON_AddNumberToObject(req, "sub", s->rs->rid)) {
		cJSON_Delete(req);
		return -ENOMEM;
	}
	r = remote_transact(s->d, req, &m);
	if (r < 0)
		return r;
	r = remote_status(s->d, &m);
	relay_ctrl_free(&m);
	if (r == -ESRCH && s->closed)
		r = 0;
	return r;
}

/* The relay is gone: every receive under way failed. */
static void
slots_abort(struct daqiri_sub *s)
{
	uint32_t i;

	for (i = 0; s->rs != NULL && i < s->rs->nslots; i++)
		if (s->rs->slots[i].state == SLOT_RECV) {
			if (s->rs->slots[i].desc != NULL)
				ucp_am_data_release(s->d->remote->worker,
				    s->rs->slots[i].desc);
			s->rs->slots[i].desc = NULL;
			s->rs->slots[i].state = SLOT_FAILED;
		}
}

/* Reconnect to the relay and subscribe every reconnecting subscription
 * anew, trying until deadline: 1 when up again, 0 not yet, -ENOTCONN
 * when the outage outlasted the limit (the subscriptions' lost says). */
static int
remote_reconnect(struct daqiri *d, uint64_t deadline)
{
	struct client_remote *r = d->remote;
	struct daqiri_sub_info info;
	struct daqiri_sub *s;
	char what[160];
	uint64_t now, end;
	uint32_t id;
	int rc;

	for (;;) {
		now = daqiri_mono_ns();
		if (d->state == CLIENT_UP) {
			d->state = CLIENT_DOWN;
			d->down_ns = now;
			d->next_try_ns = now;
			d->backoff_ms = CLIENT_RECONNECT_MIN_MS;
			for (s = d->subs; s != NULL; s = s->next)
				slots_abort(s);
			/* the endpoint goes with the failure: no receive
			 * into our slots may follow */
			ep_destroy(r);
		}
		for (s = d->subs; s != NULL; s = s->next)
			if (s->lost == 0 && s->rs != NULL &&
			    (!(s->flags & DAQIRI_SUB_RECONNECT) ||
			    now - d->down_ns >=
			    (uint64_t)s->reconnect_ms * 1000000ull)) {
				s->lost = -ENOTCONN;
				snprintf(s->lost_msg, sizeof(s->lost_msg),
				    "the relay at %s stayed away", r->where);
			}
		for (s = d->subs; s != NULL; s = s->next)
			if (s->lost == 0 && s->rs != NULL)
				break;
		if (s == NULL)
			return -ENOTCONN;
		if (now < d->next_try_ns) {
			if (now >= deadline)
				return 0;
			end = d->next_try_ns < deadline ? d->next_try_ns :
			    deadline;
			if (poll(NULL, 0, (int)((end - now + 999999) /
			    1000000)) < 0 && errno == EINTR)
				return -EINTR;
			continue;
		}
		end = now + (uint64_t)RS_ATTEMPT_MIN_MS * 1000000ull;
		rc = remote_open(d, deadline > end ? deadline : end);
		if (rc < 0) {
			ep_destroy(r);
			d->next_try_ns = daqiri_mono_ns() +
			    (uint64_t)d->backoff_ms * 1000000ull;
			d->backoff_ms = d->backoff_ms * 2 >
			    CLIENT_RECONNECT_MAX_MS ? CLIENT_RECONNECT_MAX_MS :
			    d->backoff_ms * 2;
			if (rc == -EINTR)
				return rc;
			if (daqiri_mono_ns() >= deadline)
				return 0;
			continue;
		}
		d->state = CLIENT_UP;
		for (s = d->subs; s != NULL; s = s->next) {
			if (s->lost != 0 || s->rs == NULL)
				continue;
			rc = sub_request(s, &id, &info);
			if (rc == 0) {
				client_geometry_diff(&s->info, &info, what,
				    sizeof(what));
				if (what[0] != '\0') {
					rc = -ESTALE;
					snprintf(s->lost_msg,
					    sizeof(s->lost_msg), "%.100s changed "
					    "across the restart: %.120s",
					    s->info.stream, what);
				}
			} else {
				snprintf(s->lost_msg, sizeof(s->lost_msg),
				    "%s", d->err);
			}
			if (rc < 0) {
				s->lost = rc;
				continue;
			}
			s->rs->rid = id;
			s->info.sub_id = id;
			s->closed = false;
			s->instance = r->relay_instance;
			s->restart_pending = true;
			send_credit(s, slots_free(s->rs));
		}
		return 1;
	}
}

/* ---- the consumer's calls */

/* The next tensor in arrival order into *t: 1, or 0 when none is ready
 * (failed receives are skipped, their slots freed). */
static int
try_take(struct daqiri_sub *s, struct daqiri_tensor *t)
{
	struct remote_sub *rs = s->rs;
	struct remote_slot *sl;
	const struct relay_tensor_hdr *h;
	struct daqiri_tensor x;
	size_t i;

	while (rs->count > 0) {
		sl = &rs->slots[rs->fifo[rs->head]];
		if (sl->state == SLOT_FAILED) {
			rs->head = (rs->head + 1) % rs->nslots;
			rs->count--;
			sl->state = SLOT_FREE;
			rs->dropped++;
			send_credit(s, 1);
			continue;
		}
		if (sl->state != SLOT_READY)
			return 0;
		rs->head = (rs->head + 1) % rs->nslots;
		rs->count--;
		h = &sl->hdr;
		i = (size_t)(sl - rs->slots);
#ifdef DAQIRI_HAVE_CUDA
		/* to this process's GPU, done when the call returns (so no
		 * event to wait on) */
		if (rs->dev != NULL &&
		    (cudaSetDevice(rs->dev_ordinal) != cudaSuccess ||
		    cudaMemcpy(slot_data(rs, i, s->info.tensor_bytes),
		    sl->base + rs->meta_bytes, s->info.tensor_bytes,
		    cudaMemcpyHostToDevice) != cudaSuccess)) {
			cudaGetLastError();
			sl->state = SLOT_FREE;
			send_credit(s, 1);
			s->lost = -EIO;
			snprintf(s->lost_msg, sizeof(s->lost_msg), "copying a "
			    "tensor to GPU %d failed", rs->dev_ordinal);
			return -EIO;
		}
#endif
		memset(&x, 0, sizeof(x));
		x.size = t->size;
		x.data = slot_data(rs, i, s->info.tensor_bytes);
		x.device = rs->dev != NULL ? rs->dev_ordinal : -1;
		x.dtype = s->info.dtype;
		x.dtype_name = daqiri_dtype_name(s->info.dtype);
		x.elem_bytes = s->info.elem_bytes;
		x.ndim = 2;
		x.shape[0] = s->info.ppb;
		x.shape[1] = s->info.elems_per_slot;
		x.bytes = s->info.tensor_bytes;
		x.slot_bytes = s->info.slot_bytes;
		x.seq = h->seq;
		x.batch_id = h->batch_id;
		x.flags = h->flags;
		if (s->restart_pending)
			x.flags |= DAQIRI_TENSOR_RESTART;
		s->restart_pending = false;
		x.packets_expected = h->packets_expected;
		x.packets_received = h->packets_received;
		x.bitmap = (const uint64_t *)sl->base;
		x.bitmap_bits = s->info.ppb;
		if (s->info.kind == DAQIRI_STREAM_RAW) {
			x.lengths = (const uint32_t *)(sl->base +
			    DAQIRI_RAW_LENGTHS_OFF(s->info.ppb));
			x.rx_ns = (const uint64_t *)(sl->base +
			    DAQIRI_RAW_RXNS_OFF(s->info.ppb));
		}
		x.first_rx_ns = h->first_rx_ns;
		x.last_rx_ns = h->last_rx_ns;
		x.publish_ns = h->publish_ns;
		x.buf_index = h->buf_index;
		x.instance = h->instance;
		rs->trig_count = h->trig_count;
		rs->trig_ns = h->trig_ns;
		sl->state = SLOT_HELD;
		memcpy(t, &x, t->size < sizeof(x) ? t->size : sizeof(x));
		return 1;
	}
	return 0;
}

/* Read the control messages that came unasked (events). */
static void
pump_ctrl(struct daqiri *d)
{
	struct relay_ctrl m;

	while (d->remote->inbox != NULL &&
	    remote_recv_ctrl(d, &m, 0) == 1)
		relay_ctrl_free(&m);	/* a late reply: nobody waits */
}

int
client_remote_next(struct daqiri_sub *s, struct daqiri_tensor *t,
		   int timeout_ms)
{
	struct client_remote *r = s->d->remote;
	uint64_t deadline = 0, now;
	struct pollfd p;
	int rc;

	if (timeout_ms > 0)
		deadline = daqiri_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	else if (timeout_ms < 0)
		deadline = UINT64_MAX;
	for (;;) {
		if (s->d->state == CLIENT_UP) {
			remote_progress(s->d);
			pump_ctrl(s->d);
		}
		rc = try_take(s, t);
		if (rc != 0)
			return rc;
		if (s->lost != 0) {
			client_set_err(s->d, s->lost_msg);
			return s->lost;
		}
		if (s->closed)
			return -ESHUTDOWN;
		if (r->failed || s->d->state != CLIENT_UP) {
			if (!(s->flags & DAQIRI_SUB_RECONNECT)) {
				s->lost = -ENOTCONN;
				snprintf(s->lost_msg, sizeof(s->lost_msg),
				    "%s", s->d->err);
				continue;
			}
			rc = remote_reconnect(s->d, deadline);
			if (rc == 0 || rc == -EINTR)
				return rc;
			continue;
		}
		if (s->flags & DAQIRI_SUB_BUSY_POLL) {
			/* spin on the worker instead of sleeping on its fd */
			if (timeout_ms == 0 || (timeout_ms > 0 &&
			    daqiri_mono_ns() >= deadline))
				return 0;
			continue;
		}
		if (ucp_worker_arm(r->worker) == UCS_ERR_BUSY)
			continue;
		if (timeout_ms == 0)
			return 0;
		now = daqiri_mono_ns();
		if (now >= deadline)
			return 0;
		p.fd = r->efd;
		p.events = POLLIN;
		p.revents = 0;
		rc = poll(&p, 1, deadline == UINT64_MAX ? -1 :
		    (int)((deadline - now + 999999) / 1000000));
		if (rc < 0)
			return errno == EINTR ? -EINTR : -errno;
	}
}

int
client_remote_release(struct daqiri_sub *s, const struct daqiri_tensor *t)
{
	struct remote_sub *rs = s->rs;
	const uint8_t *p = t->data;
	size_t i;

	for (i = 0; i < rs->nslots; i++)
		if (p == slot_data(rs, i, s->info.tensor_bytes))
			break;
	if (i == rs->nslots || rs->slots[i].state != SLOT_HELD)
		return -EINVAL;
	rs->slots[i].state = SLOT_FREE;
	if (s->d->state == CLIENT_UP && !s->d->remote->failed &&
	    s->lost == 0)
		send_credit(s, 1);
	return 0;
}

int
client_remote_fd(const struct daqiri *d)
{
	return d->state == CLIENT_UP && !d->remote->failed ? d->remote->efd :
	    -1;
}

int
client_remote_arm(struct daqiri_sub *s)
{
	if (s->d->state != CLIENT_UP || s->d->remote->failed)
		return 1;
	remote_progress(s->d);
	pump_ctrl(s->d);
	if (s->rs->count > 0 &&
	    s->rs->slots[s->rs->fifo[s->rs->head]].state != SLOT_RECV)
		return 1;
	return ucp_worker_arm(s->d->remote->worker) == UCS_ERR_BUSY;
}

int
client_remote_trigger(const struct daqiri_sub *s, uint64_t *count,
		      uint64_t *last_ns)
{
	if (s->closed || s->lost != 0)
		return -ENOTCONN;
	*count = s->rs->trig_count;
	*last_ns = s->rs->trig_ns;
	return 0;
}

int
client_remote_request(struct daqiri *d, const char *json, char **reply)
{
	struct daqiri_err err;
	struct relay_ctrl m;
	struct daqiri_msg q;
	cJSON *req;
	char *txt;
	int r;

	if (d->remote->failed)
		return -ENOTCONN;
	/* Checked here as the daemon would (the relay checks again). */
	if (daqiri_msg_decode(json, strlen(json), &q, &err) < 0) {
		snprintf(d->err, sizeof(d->err), "%s", err.msg);
		return daqiri_status_to_errno(err.status);
	}
	req = q.json;
	q.json = NULL;
	daqiri_msg_free(&q);
	cJSON_DeleteItemFromObjectCaseSensitive(req, "id");
	r = remote_transact(d, req, &m);
	if (r < 0)
		return r;
	txt = cJSON_PrintUnformatted(m.proto.json);
	*reply = txt != NULL ? strdup(txt) : NULL;
	cJSON_free(txt);
	r = *reply == NULL ? -ENOMEM : remote_status(d, &m);
	relay_ctrl_free(&m);
	return r;
}
