/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daqiri-relay's UCX side (relay.h): the context, worker and listener,
 * the active-message handlers, each remote peer's endpoint and its life
 * (challenge, auth, close), and the control requests a peer may make
 * (streams here; subscribe and unsubscribe in relay_sub.c). Callbacks
 * only count, mark and queue; relay_peers_service() does the rest on the
 * loop, outside ucp_worker_progress().
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fnmatch.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "relay.h"

static const char *const garbage_names[RG_MAX] = {
	[RG_CTRL_DECODE] = "ctrl_decode",
	[RG_CTRL_RNDV] = "ctrl_rndv",
	[RG_CTRL_UNEXPECTED] = "ctrl_unexpected",
	[RG_CREDIT] = "credit",
	[RG_CREDIT_EXCESS] = "credit_excess",
	[RG_CREDIT_NO_SUB] = "credit_no_sub",
	[RG_UNEXPECTED_AM] = "unexpected_am",
	[RG_NO_REPLY_EP] = "no_reply_ep",
	[RG_CTRL_FLOOD] = "ctrl_flood",
};
_Static_assert(sizeof(garbage_names) / sizeof(garbage_names[0]) == RG_MAX,
	       "a name for every garbage reason");

static const char *const refusal_names[RR_MAX] = {
	[RR_SECRET] = "secret",
	[RR_ALLOW] = "allow",
	[RR_GARBAGE] = "garbage",
	[RR_AUTH_TIMEOUT] = "auth_timeout",
	[RR_MAX_PEERS] = "max_peers",
	[RR_VERSION] = "version",
};
_Static_assert(sizeof(refusal_names) / sizeof(refusal_names[0]) == RR_MAX,
	       "a name for every refusal");

const char *
relay_garbage_name(enum relay_garbage g)
{
	return (unsigned)g < RG_MAX ? garbage_names[g] : "?";
}

const char *
relay_refusal_name(enum relay_refusal x)
{
	return (unsigned)x < RR_MAX ? refusal_names[x] : "?";
}

/* ---- sending control messages */

/* A control message in flight: its text lives until completion. */
struct ctrl_send {
	struct relay_peer *p;
	size_t len;
	char text[];
};

static void
ctrl_sent(void *req, ucs_status_t st, void *user)
{
	struct ctrl_send *cs = user;

	cs->p->ctrl_sends--;
	free(cs);
	ucp_request_free(req);
}

static int
send_text(struct relay_peer *p, const char *text, size_t len)
{
	ucp_request_param_t prm = { 0 };
	struct ctrl_send *cs;
	ucs_status_ptr_t req;

	if (p->ep == NULL || p->failed || p->state == PEER_CLOSING)
		return -ENOTCONN;
	cs = malloc(sizeof(*cs) + len + 1);
	if (cs == NULL)
		return -ENOMEM;
	cs->p = p;
	cs->len = len;
	memcpy(cs->text, text, len);
	cs->text[len] = '\0';
	prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
	    UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
	prm.cb.send = ctrl_sent;
	prm.user_data = cs;
	prm.flags = UCP_AM_SEND_FLAG_EAGER;
	req = ucp_am_send_nbx(p->ep, RELAY_AM_CTRL, NULL, 0, cs->text, len,
	    &prm);
	if (req == NULL) {
		free(cs);
		return 0;
	}
	if (UCS_PTR_IS_ERR(req)) {
		relay_log(RLOG_DEBUG, "peer %s: control send: %s", p->addr,
		    ucs_status_string(UCS_PTR_STATUS(req)));
		free(cs);
		relay_peer_fail(p, "control send failed");
		return -EIO;
	}
	p->ctrl_sends++;
	return 0;
}

int
relay_peer_send_json(struct relay_peer *p, const cJSON *o)
{
	struct daqiri_part *parts = NULL;
	int n, i, r = 0;

	/* A long reply goes in parts, as the daemon sends it. */
	n = daqiri_reply_split(o, DAQIRI_MSG_SIZE_MAX, &parts);
	if (n < 0)
		return n;
	for (i = 0; i < n && r == 0; i++)
		r = send_text(p, parts[i].text, parts[i].len);
	daqiri_parts_free(parts, n);
	return r;
}

void
relay_peer_reply(struct relay_peer *p, enum daqiri_msg_type re, int64_t id,
		 enum daqiri_status st, const char *msg)
{
	cJSON *o = daqiri_reply_new(re, id, st, msg);

	if (o != NULL)
		(void)relay_peer_send_json(p, o);
	cJSON_Delete(o);
}

static void
auth_reply(struct relay_peer *p, enum daqiri_status st, const char *msg)
{
	cJSON *o = relay_auth_reply_new(st, msg);
	char *t = o != NULL ? cJSON_PrintUnformatted(o) : NULL;

	if (t != NULL)
		(void)send_text(p, t, strlen(t));
	free(t);
	cJSON_Delete(o);
}

/* ---- peers */

void
relay_peer_fail(struct relay_peer *p, const char *why)
{
	if (!p->failed && p->state != PEER_CLOSING)
		relay_log(RLOG_DEBUG, "peer %s: closing: %s", p->addr, why);
	p->failed = true;
}

/* Close after the last control message got out (a refusal). */
static void
peer_close_flush(struct relay_peer *p)
{
	ucp_request_param_t prm = { 0 };

	if (p->state == PEER_CLOSING)
		return;
	relay_subs_stop(p);
	p->state = PEER_CLOSING;
	prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
	prm.flags = 0;			/* flush mode */
	p->close_req = ucp_ep_close_nbx(p->ep, &prm);
	if (UCS_PTR_IS_ERR(p->close_req))
		p->close_req = NULL;
	p->close_deadline_ns = relay_now_ns() +
	    (uint64_t)RELAY_CLOSE_WAIT_MS * 1000000ull;
}

static void
peer_close_force(struct relay_peer *p)
{
	ucp_request_param_t prm = { 0 };

	if (p->state == PEER_CLOSING)
		return;
	relay_subs_stop(p);
	p->state = PEER_CLOSING;
	prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
	prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
	p->close_req = ucp_ep_close_nbx(p->ep, &prm);
	if (UCS_PTR_IS_ERR(p->close_req))
		p->close_req = NULL;
	p->close_deadline_ns = relay_now_ns() +
	    (uint64_t)RELAY_CLOSE_WAIT_MS * 1000000ull;
}

void
relay_garbage(struct relay *r, struct relay_peer *p, enum relay_garbage g)
{
	r->garbage[g]++;
	if (p == NULL)
		return;
	p->garbage[g]++;
	if (++p->garbage_total >= RELAY_GARBAGE_MAX && !p->failed) {
		if (!p->garbage_logged)
			relay_log(RLOG_WARN, "peer %s: %llu garbage messages "
			    "(last: %s): closing it", p->addr,
			    (unsigned long long)p->garbage_total,
			    relay_garbage_name(g));
		p->garbage_logged = true;
		r->refused[RR_GARBAGE]++;
		relay_peer_fail(p, "garbage");
	}
}

static void
on_ep_error(void *arg, ucp_ep_h ep, ucs_status_t st)
{
	struct relay_peer *p = arg;

	p->fail_status = st;
	relay_peer_fail(p, ucs_status_string(st));
}

static struct relay_peer *
peer_of(struct relay *r, const ucp_am_recv_param_t *prm)
{
	struct relay_peer *p;

	if (!(prm->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ||
	    prm->reply_ep == NULL)
		return NULL;
	for (p = r->peers; p != NULL; p = p->next)
		if (p->ep == prm->reply_ep)
			return p;
	return NULL;
}

static ucs_status_t
on_ctrl(void *arg, const void *hdr, size_t hlen, void *data, size_t len,
	const ucp_am_recv_param_t *prm)
{
	struct relay *r = arg;
	struct relay_peer *p = peer_of(r, prm);
	struct relay_ctrl_msg *m;
	size_t keep;

	if (prm->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
		/* Control messages are small and eager; a rendezvous one
		 * is refused without being fetched. */
		relay_garbage(r, p, RG_CTRL_RNDV);
		return UCS_ERR_UNSUPPORTED;
	}
	if (p == NULL) {
		relay_garbage(r, NULL, RG_NO_REPLY_EP);
		return UCS_OK;
	}
	if (p->failed || p->state == PEER_CLOSING)
		return UCS_OK;
	if (p->q_len >= RELAY_CTRL_QUEUE_MAX) {
		relay_garbage(r, p, RG_CTRL_FLOOD);
		return UCS_OK;
	}
	/* One byte over the limit is enough for the decoder to say
	 * too_big. */
	keep = len > DAQIRI_MSG_SIZE_MAX ? DAQIRI_MSG_SIZE_MAX + 1 : len;
	m = malloc(sizeof(*m) + keep);
	if (m == NULL)
		return UCS_OK;
	m->next = NULL;
	m->len = keep;
	if (keep > 0)
		memcpy(m->buf, data, keep);
	if (p->q_tail != NULL)
		p->q_tail->next = m;
	else
		p->q_head = m;
	p->q_tail = m;
	p->q_len++;
	return UCS_OK;
}

static ucs_status_t
on_credit(void *arg, const void *hdr, size_t hlen, void *data, size_t len,
	  const ucp_am_recv_param_t *prm)
{
	struct relay *r = arg;
	struct relay_peer *p = peer_of(r, prm);
	struct relay_credit c;

	if (p == NULL) {
		relay_garbage(r, NULL, RG_NO_REPLY_EP);
		return prm->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV ?
		    UCS_ERR_UNSUPPORTED : UCS_OK;
	}
	if (prm->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
		relay_garbage(r, p, RG_CREDIT);
		return UCS_ERR_UNSUPPORTED;
	}
	if (relay_credit_check(hdr, hlen, len, &c) < 0) {
		relay_garbage(r, p, RG_CREDIT);
		return UCS_OK;
	}
	if (p->state != PEER_READY || p->failed)
		return UCS_OK;
	relay_sub_credit(p, &c);
	return UCS_OK;
}

/* A consumer sends no tensors. */
static ucs_status_t
on_other(void *arg, const void *hdr, size_t hlen, void *data, size_t len,
	 const ucp_am_recv_param_t *prm)
{
	struct relay *r = arg;

	relay_garbage(r, peer_of(r, prm), RG_UNEXPECTED_AM);
	return prm->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV ?
	    UCS_ERR_UNSUPPORTED : UCS_OK;
}

static void
on_conn(ucp_conn_request_h req, void *arg)
{
	struct relay *r = arg;

	if (r->npending == sizeof(r->pending) / sizeof(r->pending[0])) {
		r->refused[RR_MAX_PEERS]++;
		(void)ucp_listener_reject(r->listener, req);
		return;
	}
	r->pending[r->npending++] = req;
}

static void
sockaddr_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char h[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)ss;

		inet_ntop(AF_INET, &a->sin_addr, h, sizeof(h));
		snprintf(buf, len, "%s:%u", h, ntohs(a->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;

		inet_ntop(AF_INET6, &a->sin6_addr, h, sizeof(h));
		snprintf(buf, len, "[%s]:%u", h, ntohs(a->sin6_port));
	} else {
		snprintf(buf, len, "?");
	}
}

/* The transports an endpoint uses, from ucp_ep_print_info(): its lanes'
 * "tcp/eth0"-like names, de-duplicated. */
static void
ep_transports(ucp_ep_h ep, char *out, size_t len)
{
	char *text = NULL, *line, *save = NULL;
	size_t tlen = 0, n = 0;
	FILE *f = open_memstream(&text, &tlen);

	out[0] = '\0';
	if (f == NULL)
		return;
	ucp_ep_print_info(ep, f);
	fclose(f);
	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		char *tl = strstr(line, "lane[");
		char *rs, *sp;

		if (tl == NULL || (rs = strchr(tl, ':')) == NULL)
			continue;
		/* "#   lane[0]:  2:tcp/lo.0 md[1]  ..." */
		rs++;
		while (*rs == ' ')
			rs++;
		if ((sp = strchr(rs, ':')) != NULL && sp - rs < 4)
			rs = sp + 1;
		sp = strpbrk(rs, " \t");
		if (sp != NULL)
			*sp = '\0';
		/* transports are "tl/device"; the connection manager's
		 * lane is not one */
		if (strchr(rs, '/') == NULL || strstr(out, rs) != NULL)
			continue;
		n += (size_t)snprintf(out + n, n < len ? len - n : 0, "%s%s",
		    n > 0 ? " " : "", rs);
	}
	free(text);
	if (out[0] == '\0')
		snprintf(out, len, "?");
}

static void
accept_one(struct relay *r, ucp_conn_request_h req)
{
	ucp_conn_request_attr_t ca = {
		.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR,
	};
	ucp_ep_params_t ep = { 0 };
	struct relay_peer *p;
	ucs_status_t st;
	cJSON *o;
	char *t;

	if (r->npeers >= r->o->max_peers) {
		r->refused[RR_MAX_PEERS]++;
		relay_log(RLOG_WARN, "a peer refused: %u peers already "
		    "(--max-peers)", r->npeers);
		(void)ucp_listener_reject(r->listener, req);
		return;
	}
	p = calloc(1, sizeof(*p));
	if (p == NULL) {
		(void)ucp_listener_reject(r->listener, req);
		return;
	}
	p->r = r;
	p->serial = ++r->peers_total;
	p->next_sub_id = 1;
	p->local_watch.kind = RW_LOCAL;
	p->local_watch.fd = -1;
	p->local_watch.ptr = p;
	if (ucp_conn_request_query(req, &ca) == UCS_OK)
		sockaddr_str(&ca.client_address, p->addr, sizeof(p->addr));
	else
		snprintf(p->addr, sizeof(p->addr), "peer%llu",
		    (unsigned long long)p->serial);
	ep.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST |
	    UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
	    UCP_EP_PARAM_FIELD_ERR_HANDLER;
	ep.conn_request = req;
	ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
	ep.err_handler.cb = on_ep_error;
	ep.err_handler.arg = p;
	st = ucp_ep_create(r->worker, &ep, &p->ep);
	if (st != UCS_OK) {
		relay_log(RLOG_WARN, "peer %s: cannot make its endpoint: %s",
		    p->addr, ucs_status_string(st));
		free(p);
		return;
	}
	p->next = r->peers;
	r->peers = p;
	r->npeers++;
	if (getrandom(p->nonce, sizeof(p->nonce), 0) !=
	    (ssize_t)sizeof(p->nonce)) {
		relay_peer_fail(p, "getrandom failed");
		return;
	}
	p->state = PEER_CHALLENGED;
	p->deadline_ns = relay_now_ns() +
	    (uint64_t)RELAY_AUTH_TIMEOUT_MS * 1000000ull;
	o = relay_challenge_new(p->nonce, r->o->has_secret, r->instance);
	t = o != NULL ? cJSON_PrintUnformatted(o) : NULL;
	if (t == NULL || send_text(p, t, strlen(t)) < 0)
		relay_peer_fail(p, "cannot send the challenge");
	free(t);
	cJSON_Delete(o);
	relay_log(RLOG_DEBUG, "peer %s: connected", p->addr);
}

/* ---- control requests */

/* A stream record of the daemon's streams reply is served when its name
 * is allowed. */
static void
streams_request(struct relay_peer *p, const struct daqiri_msg *m)
{
	int64_t id = m->has_id ? (int64_t)m->id : -1;
	struct daqiri_err err;
	char *text = NULL;
	cJSON *o, *arr, *e, *nx;
	int r;

	if (relay_peer_local(p, &err) < 0) {
		relay_peer_reply(p, DAQIRI_MSG_STREAMS, id, err.status, err.msg);
		return;
	}
	r = daqiri_streams(p->local, &text);
	if (text == NULL) {
		relay_peer_reply(p, DAQIRI_MSG_STREAMS, id, daqiri_status_from_errno(r),
		    daqiri_last_error(p->local)[0] != '\0' ?
		    daqiri_last_error(p->local) : strerror(-r));
		return;
	}
	o = cJSON_Parse(text);
	free(text);
	arr = cJSON_GetObjectItemCaseSensitive(o, "streams");
	if (o == NULL || !cJSON_IsArray(arr)) {
		cJSON_Delete(o);
		relay_peer_reply(p, DAQIRI_MSG_STREAMS, id, DAQIRI_ST_INTERNAL,
		    "the daemon's streams reply has no streams list");
		return;
	}
	for (e = arr->child; e != NULL; e = nx) {
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "name");

		nx = e->next;
		if (!cJSON_IsString(n) || !relay_allowed(p->r->o,
		    n->valuestring))
			cJSON_Delete(cJSON_DetachItemViaPointer(arr, e));
	}
	/* The remote's request id, not the relay's. */
	cJSON_DeleteItemFromObjectCaseSensitive(o, "id");
	if (id >= 0)
		cJSON_AddNumberToObject(o, "id", (double)id);
	if (relay_peer_send_json(p, o) < 0)
		relay_peer_reply(p, DAQIRI_MSG_STREAMS, id, DAQIRI_ST_NO_RESOURCES,
		    "the streams reply could not be sent");
	cJSON_Delete(o);
}

static bool
is_request(enum daqiri_msg_type t)
{
	return t < DAQIRI_MSG_REPLY;
}

static void
auth_request(struct relay_peer *p, const struct relay_ctrl *c)
{
	const struct relay_opts *o = p->r->o;
	uint8_t mac[RELAY_MAC_BYTES];

	snprintf(p->client, sizeof(p->client), "%s", c->u.auth.client);
	if (o->has_secret &&
	    (!c->u.auth.has_mac ||
	     relay_mac(o->secret, o->secret_len, p->nonce, mac) < 0 ||
	     !relay_mac_equal(mac, c->u.auth.mac))) {
		p->r->refused[RR_SECRET]++;
		relay_log(RLOG_WARN, "peer %s (%s): refused: wrong secret",
		    p->addr, p->client[0] != '\0' ? p->client : "no name");
		auth_reply(p, DAQIRI_ST_PERMISSION_DENIED, "wrong secret: the "
		    "relay needs the secret of its --secret-file "
		    "(DAQIRI_SECRET_FILE on the consumer's side)");
		peer_close_flush(p);
		return;
	}
	p->state = PEER_READY;
	auth_reply(p, DAQIRI_ST_OK, "");
	relay_log(RLOG_INFO, "peer %s (%s): authenticated%s", p->addr,
	    p->client[0] != '\0' ? p->client : "no name",
	    o->has_secret ? " by the shared secret" : "");
	if (!p->transports_logged && p->ep != NULL) {
		char tr[256];

		ep_transports(p->ep, tr, sizeof(tr));
		relay_log(p->r->first_peer_logged ? RLOG_DEBUG : RLOG_INFO,
		    "peer %s: UCX transports %s", p->addr, tr);
		p->r->first_peer_logged = true;
		p->transports_logged = true;
	}
}

static void
ctrl_one(struct relay_peer *p, const char *buf, size_t len)
{
	struct relay *r = p->r;
	struct relay_ctrl c;
	struct daqiri_err err;
	int64_t id;

	if (relay_ctrl_decode(buf, len, &c, &err) < 0) {
		relay_garbage(r, p, RG_CTRL_DECODE);
		if (p->state == PEER_CHALLENGED) {
			/* whatever it was, it was not a good auth */
			if (err.status == DAQIRI_ST_VERSION_MISMATCH)
				r->refused[RR_VERSION]++;
			auth_reply(p, err.status, err.msg);
			relay_log(RLOG_WARN, "peer %s: refused: %s", p->addr,
			    err.msg);
			peer_close_flush(p);
		} else {
			/* Answered as the daemon answers: with the status,
			 * and the request's type and id when they could be
			 * read (the flood is bounded: 16 of these close
			 * the peer). */
			relay_peer_reply(p, c.proto.type < DAQIRI_MSG_MAX &&
			    is_request(c.proto.type) ? c.proto.type :
			    DAQIRI_MSG_MAX, c.proto.has_id ?
			    (int64_t)c.proto.id : -1, err.status, err.msg);
		}
		relay_ctrl_free(&c);
		return;
	}
	id = c.proto.has_id ? (int64_t)c.proto.id : -1;
	switch (c.type) {
	case RELAY_CTRL_AUTH:
		if (p->state != PEER_CHALLENGED)
			relay_garbage(r, p, RG_CTRL_UNEXPECTED);
		else
			auth_request(p, &c);
		break;
	case RELAY_CTRL_PROTO:
		if (!is_request(c.proto.type)) {
			relay_garbage(r, p, RG_CTRL_UNEXPECTED);
			break;
		}
		if (p->state != PEER_READY) {
			relay_peer_reply(p, c.proto.type, id, DAQIRI_ST_NO_HELLO,
			    "authenticate first (auth after the challenge)");
			break;
		}
		switch (c.proto.type) {
		case DAQIRI_MSG_STREAMS:
			streams_request(p, &c.proto);
			break;
		case DAQIRI_MSG_SUBSCRIBE:
			relay_sub_request(p, &c.proto);
			break;
		case DAQIRI_MSG_UNSUBSCRIBE:
			relay_unsub_request(p, &c.proto);
			break;
		default:
			relay_peer_reply(p, c.proto.type, id, DAQIRI_ST_NOT_SUPPORTED,
			    "remote consumers may ask streams, subscribe and "
			    "unsubscribe; ask daqirictl on the relay's host");
			break;
		}
		break;
	default:
		relay_garbage(r, p, RG_CTRL_UNEXPECTED);
		break;
	}
	relay_ctrl_free(&c);
}

/* ---- the loop's turn */

static void
peer_free(struct relay *r, struct relay_peer *p)
{
	struct relay_peer **pp;
	struct relay_ctrl_msg *m, *n;

	for (pp = &r->peers; *pp != NULL; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	r->npeers--;
	for (m = p->q_head; m != NULL; m = n) {
		n = m->next;
		free(m);
	}
	relay_subs_free(p);
	relay_log(RLOG_INFO, "peer %s (%s): gone%s%s", p->addr,
	    p->client[0] != '\0' ? p->client : "no name",
	    p->fail_status != UCS_OK ? ": " : "",
	    p->fail_status != UCS_OK ? ucs_status_string(p->fail_status) :
	    "");
	free(p);
}

/* How often a peer that has not authenticated yet is looked at. */
#define RELAY_WIREUP_POLL_NS	(10ull * 1000000ull)

int
relay_peers_service(struct relay *r)
{
	struct relay_peer *p, *nx;
	uint64_t now = relay_now_ns(), next = UINT64_MAX;
	unsigned i;

	for (i = 0; i < r->npending; i++)
		accept_one(r, r->pending[i]);
	r->npending = 0;
	for (p = r->peers; p != NULL; p = nx) {
		nx = p->next;
		while (p->q_head != NULL && !p->failed &&
		    p->state != PEER_CLOSING) {
			struct relay_ctrl_msg *m = p->q_head;

			p->q_head = m->next;
			if (p->q_head == NULL)
				p->q_tail = NULL;
			p->q_len--;
			ctrl_one(p, m->buf, m->len);
			free(m);
		}
		if (p->state == PEER_CHALLENGED && !p->failed) {
			if (now >= p->deadline_ns) {
				r->refused[RR_AUTH_TIMEOUT]++;
				relay_log(RLOG_WARN, "peer %s: no auth within "
				    "%d ms: closing it", p->addr,
				    RELAY_AUTH_TIMEOUT_MS);
				relay_peer_fail(p, "auth timeout");
			} else if (p->deadline_ns < next) {
				next = p->deadline_ns;
			}
			/* Its endpoint may still be wiring up, and UCX 1.13's
			 * TCP connection manager does not always wake the
			 * worker's fd for that: look again soon. */
			if (now + RELAY_WIREUP_POLL_NS < next)
				next = now + RELAY_WIREUP_POLL_NS;
		}
		if (p->failed && p->state != PEER_CLOSING)
			peer_close_force(p);
		if (p->state != PEER_CLOSING)
			continue;
		if (p->close_req != NULL &&
		    ucp_request_check_status(p->close_req) ==
		    UCS_INPROGRESS) {
			if (now < p->close_deadline_ns) {
				if (p->close_deadline_ns < next)
					next = p->close_deadline_ns;
				continue;
			}
			/* A flush that does not end (a peer that stopped
			 * reading): cancel it; UCX completes it. */
			ucp_request_cancel(r->worker, p->close_req);
			continue;
		}
		if (p->close_req != NULL) {
			ucp_request_free(p->close_req);
			p->close_req = NULL;
		}
		if (p->ctrl_sends > 0 || !relay_subs_idle(p))
			continue;
		peer_free(r, p);
	}
	if (next == UINT64_MAX)
		return -1;
	return next <= now ? 0 : (int)((next - now + 999999) / 1000000);
}

void
relay_peers_close_all(struct relay *r)
{
	struct relay_peer *p;
	uint64_t end = relay_now_ns() + 1000000000ull;

	for (p = r->peers; p != NULL; p = p->next)
		relay_peer_fail(p, "relay stopping");
	while (r->peers != NULL && relay_now_ns() < end) {
		while (ucp_worker_progress(r->worker) != 0)
			;
		(void)relay_peers_service(r);
		(void)relay_subs_pump(r);
	}
}

/* ---- set-up */

static bool
addr_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)(const void *)sa)->
		    sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(
		    &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr);
	return false;
}

/* The resources UCX found, from ucp_context_print_info(): "tcp/lo"-like
 * names. */
static void
ctx_transports(ucp_context_h ctx, char *out, size_t len)
{
	char *text = NULL, *line, *save = NULL;
	size_t tlen = 0, n = 0;
	FILE *f = open_memstream(&text, &tlen);

	out[0] = '\0';
	if (f == NULL)
		return;
	ucp_context_print_info(ctx, f);
	fclose(f);
	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		char *rs = strstr(line, "resource"), *last;

		if (rs == NULL || strstr(line, "flags") == NULL)
			continue;
		last = strrchr(line, ' ');
		if (last == NULL || last[1] == '\0' ||
		    strstr(out, last + 1) != NULL)
			continue;
		n += (size_t)snprintf(out + n, n < len ? len - n : 0, "%s%s",
		    n > 0 ? " " : "", last + 1);
	}
	free(text);
	if (out[0] == '\0')
		snprintf(out, len, "?");
}

int
relay_ucx_init(struct relay *r)
{
	ucp_params_t up = {
		.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME,
		.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP,
		.name = RELAY_PROG,
	};
	ucp_worker_params_t wp = {
		.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
		.thread_mode = UCS_THREAD_MODE_SINGLE,
	};
	ucp_context_attr_t ca = { .field_mask = UCP_ATTR_FIELD_MEMORY_TYPES };
	static const struct {
		unsigned id;
		ucp_am_recv_callback_t cb;
	} am[] = {
		{ RELAY_AM_CTRL, on_ctrl },
		{ RELAY_AM_TENSOR, on_other },
		{ RELAY_AM_CREDIT, on_credit },
	};
	ucp_listener_params_t lp = { 0 };
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
	    .ai_flags = AI_NUMERICSERV | AI_PASSIVE }, *ai = NULL;
	char port[8], tr[512];
	ucp_config_t *cfg;
	ucs_status_t st;
	size_t i;
	int e, efd;

	/* A restarted relay binds its port again at once, whatever
	 * connections of the last one linger in TIME_WAIT (the user's own
	 * UCX_TCP_CM_REUSEADDR wins). */
	(void)setenv("UCX_TCP_CM_REUSEADDR", "y", 0);
	st = ucp_config_read(NULL, NULL, &cfg);
	if (st != UCS_OK) {
		relay_log(RLOG_WARN, "UCX configuration: %s (check the UCX_* "
		    "environment variables)", ucs_status_string(st));
		return -1;
	}
	st = ucp_init(&up, cfg, &r->ctx);
	ucp_config_release(cfg);
	if (st != UCS_OK) {
		relay_log(RLOG_WARN, "UCX initialisation: %s (check the UCX_* "
		    "environment variables, UCX_TLS in particular)",
		    ucs_status_string(st));
		return -1;
	}
	if (ucp_context_query(r->ctx, &ca) == UCS_OK)
		r->cuda_mem = (ca.memory_types &
		    UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
	ctx_transports(r->ctx, tr, sizeof(tr));
	relay_log(RLOG_INFO, "UCX %s: transports %s; CUDA memory %s",
	    ucp_get_version_string(), tr,
	    r->cuda_mem ? "supported" : "not supported");
	st = ucp_worker_create(r->ctx, &wp, &r->worker);
	if (st != UCS_OK) {
		relay_log(RLOG_WARN, "UCX worker: %s", ucs_status_string(st));
		return -1;
	}
	/* A tensor's meta rides in its AM header when it fits, so that
	 * the data goes as one contiguous buffer (relay_wire.h). */
	{
		ucp_worker_attr_t wa = {
			.field_mask = UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER };

		r->max_am_header = ucp_worker_query(r->worker, &wa) ==
		    UCS_OK ? wa.max_am_header : 0;
	}
	for (i = 0; i < sizeof(am) / sizeof(am[0]); i++) {
		ucp_am_handler_param_t hp = {
			.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
			    UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
			    UCP_AM_HANDLER_PARAM_FIELD_CB |
			    UCP_AM_HANDLER_PARAM_FIELD_ARG,
			.id = am[i].id,
			.flags = UCP_AM_FLAG_WHOLE_MSG,
			.cb = am[i].cb,
			.arg = r,
		};

		st = ucp_worker_set_am_recv_handler(r->worker, &hp);
		if (st != UCS_OK) {
			relay_log(RLOG_WARN, "UCX active message handler: %s",
			    ucs_status_string(st));
			return -1;
		}
	}
	st = ucp_worker_get_efd(r->worker, &efd);
	if (st != UCS_OK) {
		relay_log(RLOG_WARN, "UCX worker has no event fd: %s",
		    ucs_status_string(st));
		return -1;
	}
	r->ucx_watch.kind = RW_UCX;
	r->ucx_watch.fd = -1;
	relay_watch_set(r, &r->ucx_watch, efd, EPOLLIN);

	snprintf(port, sizeof(port), "%u", r->o->port);
	e = getaddrinfo(r->o->host, port, &hints, &ai);
	if (e != 0) {
		relay_log(RLOG_WARN, "--listen %s: %s (give an address of "
		    "this host, or a name that resolves to one)", r->o->host,
		    gai_strerror(e));
		return -1;
	}
	lp.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR |
	    UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
	lp.sockaddr.addr = ai->ai_addr;
	lp.sockaddr.addrlen = ai->ai_addrlen;
	lp.conn_handler.cb = on_conn;
	lp.conn_handler.arg = r;
	st = ucp_listener_create(r->worker, &lp, &r->listener);
	if (st != UCS_OK) {
		relay_log(RLOG_WARN, "cannot listen on ucx://%s:%u: %s (is "
		    "another relay running there, or is the address not "
		    "this host's?)", r->o->host, r->o->port,
		    ucs_status_string(st));
		freeaddrinfo(ai);
		r->listener = NULL;
		return -1;
	}
	if (!addr_loopback(ai->ai_addr) && !r->o->has_secret)
		relay_log(RLOG_WARN, "listening on %s, not loopback, without "
		    "--secret-file: anyone who reaches this port may read "
		    "the served streams", r->o->host);
	freeaddrinfo(ai);
	relay_log(RLOG_INFO, "listening on ucx://%s:%u%s", r->o->host,
	    r->o->port, r->o->has_secret ? ", shared secret required" : "");
	return 0;
}

void
relay_ucx_fini(struct relay *r)
{
	if (r->listener != NULL)
		ucp_listener_destroy(r->listener);
	r->listener = NULL;
	if (r->worker != NULL)
		ucp_worker_destroy(r->worker);
	r->worker = NULL;
	if (r->ctx != NULL)
		ucp_cleanup(r->ctx);
	r->ctx = NULL;
}
