/* SPDX-License-Identifier: Apache-2.0 */
/*
 * relay-hostile: a peer of daqiri-relay that breaks every rule of its
 * protocol (client/relay_wire.h), over UCX like a real consumer (test
 * 59). One connection per case, each ending when the relay answers or
 * closes it:
 *   early      a subscribe before auth: answered no_hello
 *   badauth    an auth with a wrong MAC (and one without): refused,
 *              closed
 *   garbage    after a good auth: not JSON, a bad request, a request a
 *              remote consumer may not make, a tensor AM
 *              (a consumer sends none), credits with a bad magic, for no
 *              subscription, and past the limit; a rendezvous control
 *              message; then a flood of garbage until the relay closes
 *              the connection
 * Prints one line per case, "case NAME: ..." with what came back, and
 * "hostile done" at the end; exits 1 when the relay answered a case
 * otherwise than it must. The relay must stay up through all of it
 * (the test checks, and serves a good consumer after).
 * Usage: relay-hostile HOST PORT SECRET-FILE
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <netdb.h>

#include <ucp/api/ucp.h>

#include "relay_wire.h"

struct peer {
	ucp_context_h ctx;
	ucp_worker_h worker;
	ucp_ep_h ep;
	bool failed;
	char *msg[64];			/* control messages received */
	size_t nmsg;
	uint8_t nonce[RELAY_NONCE_BYTES];
};

static uint8_t secret[RELAY_SECRET_MAX + 1];
static size_t secret_len;

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static ucs_status_t
on_ctrl(void *arg, const void *h, size_t hl, void *data, size_t len,
	const ucp_am_recv_param_t *prm)
{
	struct peer *p = arg;

	if (p->nmsg < sizeof(p->msg) / sizeof(p->msg[0]) &&
	    !(prm->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
		p->msg[p->nmsg] = strndup(data, len);
		p->nmsg++;
	}
	return UCS_OK;
}

static void
on_err(void *arg, ucp_ep_h ep, ucs_status_t st)
{
	((struct peer *)arg)->failed = true;
}

static void
progress_for(struct peer *p, unsigned ms, size_t want_msgs)
{
	uint64_t end = now_ms() + ms;

	while (now_ms() < end && !p->failed && p->nmsg < want_msgs) {
		if (ucp_worker_progress(p->worker) == 0)
			poll(NULL, 0, 1);
	}
}

static void
sent(void *req, ucs_status_t st, void *user)
{
	ucp_request_free(req);
}

/* Send an AM (copies made by the caller stay alive: static buffers). */
static void
send_am(struct peer *p, unsigned id, const void *hdr, size_t hlen,
	const void *data, size_t len, uint32_t flags)
{
	ucp_request_param_t prm = { 0 };
	ucs_status_ptr_t q;

	prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK;
	prm.flags = flags | UCP_AM_SEND_FLAG_REPLY;
	prm.cb.send = sent;
	q = ucp_am_send_nbx(p->ep, id, hdr, hlen, data, len, &prm);
	if (UCS_PTR_IS_PTR(q)) {
		uint64_t end = now_ms() + 2000;

		while (ucp_request_check_status(q) == UCS_INPROGRESS &&
		    now_ms() < end && !p->failed)
			ucp_worker_progress(p->worker);
	}
}

static void
send_text(struct peer *p, const char *t)
{
	send_am(p, RELAY_AM_CTRL, NULL, 0, t, strlen(t),
	    UCP_AM_SEND_FLAG_EAGER);
}

static int
peer_open(struct peer *p, const char *host, const char *port)
{
	ucp_params_t up = { .field_mask = UCP_PARAM_FIELD_FEATURES,
	    .features = UCP_FEATURE_AM };
	ucp_worker_params_t wp = { .field_mask =
	    UCP_WORKER_PARAM_FIELD_THREAD_MODE,
	    .thread_mode = UCS_THREAD_MODE_SINGLE };
	ucp_am_handler_param_t ap = { 0 };
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	ucp_ep_params_t ep = { 0 };
	ucp_config_t *cfg;
	int rc;

	memset(p, 0, sizeof(*p));
	if (ucp_config_read(NULL, NULL, &cfg) != UCS_OK ||
	    ucp_init(&up, cfg, &p->ctx) != UCS_OK)
		return -1;
	ucp_config_release(cfg);
	if (ucp_worker_create(p->ctx, &wp, &p->worker) != UCS_OK)
		return -1;
	ap.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
	    UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG |
	    UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
	ap.id = RELAY_AM_CTRL;
	ap.cb = on_ctrl;
	ap.arg = p;
	ap.flags = UCP_AM_FLAG_WHOLE_MSG;
	if (ucp_worker_set_am_recv_handler(p->worker, &ap) != UCS_OK)
		return -1;
	if ((rc = getaddrinfo(host, port, &hints, &ai)) != 0)
		return -1;
	ep.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
	    UCP_EP_PARAM_FIELD_ERR_HANDLER |
	    UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
	ep.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
	ep.sockaddr.addr = ai->ai_addr;
	ep.sockaddr.addrlen = ai->ai_addrlen;
	ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
	ep.err_handler.cb = on_err;
	ep.err_handler.arg = p;
	rc = ucp_ep_create(p->worker, &ep, &p->ep) == UCS_OK ? 0 : -1;
	freeaddrinfo(ai);
	if (rc < 0)
		return -1;
	/* the challenge */
	progress_for(p, 10000, 1);
	if (p->nmsg < 1) {
		fprintf(stderr, "relay-hostile: no challenge\n");
		return -1;
	}
	{
		struct relay_ctrl m;
		struct daqiri_err err;

		if (relay_ctrl_decode(p->msg[0], strlen(p->msg[0]), &m,
		    &err) < 0 || m.type != RELAY_CTRL_CHALLENGE) {
			fprintf(stderr, "relay-hostile: not a challenge: %s\n",
			    p->msg[0]);
			return -1;
		}
		memcpy(p->nonce, m.u.challenge.nonce, sizeof(p->nonce));
	}
	return 0;
}

static void
peer_close(struct peer *p)
{
	ucp_request_param_t prm = { .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
	    .flags = UCP_EP_CLOSE_FLAG_FORCE };
	ucs_status_ptr_t q;
	size_t i;

	if (p->ep != NULL) {
		q = ucp_ep_close_nbx(p->ep, &prm);
		if (UCS_PTR_IS_PTR(q)) {
			while (ucp_request_check_status(q) == UCS_INPROGRESS)
				ucp_worker_progress(p->worker);
			ucp_request_free(q);
		}
	}
	if (p->worker != NULL)
		ucp_worker_destroy(p->worker);
	if (p->ctx != NULL)
		ucp_cleanup(p->ctx);
	for (i = 0; i < p->nmsg; i++)
		free(p->msg[i]);
}

static void
auth(struct peer *p, bool good)
{
	uint8_t mac[RELAY_MAC_BYTES];
	cJSON *o;
	char *t;

	relay_mac(secret, secret_len, p->nonce, mac);
	if (!good)
		mac[0] ^= 1;
	o = relay_auth_new(mac, "relay-hostile");
	t = cJSON_PrintUnformatted(o);
	send_text(p, t);
	cJSON_free(t);
	cJSON_Delete(o);
}

/* The last control message contains want: 0, else 1 with a line. */
static int
expect(struct peer *p, const char *what, const char *want)
{
	const char *last = p->nmsg > 0 ? p->msg[p->nmsg - 1] : "(nothing)";

	if (strstr(last, want) != NULL) {
		printf("case %s: %s\n", what, last);
		return 0;
	}
	printf("case %s: FAILED: want '%s', got %s\n", what, want, last);
	return 1;
}

int
main(int argc, char **argv)
{
	static char junk[4096], big[DAQIRI_MSG_SIZE_MAX + 1000];
	struct relay_credit c;
	struct relay_tensor_hdr th;
	struct peer p;
	char err[256];
	int bad = 0, i;
	size_t n;

	if (argc != 4) {
		fprintf(stderr, "usage: relay-hostile HOST PORT SECRET-FILE\n");
		return 2;
	}
	if (relay_secret_load(argv[3], secret, &secret_len, err,
	    sizeof(err)) < 0) {
		fprintf(stderr, "relay-hostile: %s\n", err);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* early: a request before auth */
	if (peer_open(&p, argv[1], argv[2]) < 0)
		return 1;
	n = p.nmsg;
	send_text(&p, "{\"type\":\"subscribe\",\"id\":1,\"stream\":\"x/y\"}");
	progress_for(&p, 5000, n + 1);
	bad |= expect(&p, "early", "no_hello");
	peer_close(&p);

	/* badauth: a wrong MAC, then none */
	for (i = 0; i < 2; i++) {
		if (peer_open(&p, argv[1], argv[2]) < 0)
			return 1;
		n = p.nmsg;
		if (i == 0) {
			auth(&p, false);
		} else {
			send_text(&p, "{\"type\":\"auth\",\"version\":1,"
			    "\"mac\":\"\"}");
		}
		progress_for(&p, 5000, n + 1);
		bad |= expect(&p, i == 0 ? "badauth" : "nomac",
		    "permission_denied");
		progress_for(&p, 3000, SIZE_MAX);	/* until closed */
		printf("case %s: closed by the relay: %s\n",
		    i == 0 ? "badauth" : "nomac", p.failed ? "yes" : "no");
		bad |= !p.failed;
		peer_close(&p);
	}

	/* garbage after a good auth */
	if (peer_open(&p, argv[1], argv[2]) < 0)
		return 1;
	n = p.nmsg;
	auth(&p, true);
	progress_for(&p, 5000, n + 1);
	bad |= expect(&p, "auth", "\"ok\"");
	n = p.nmsg;
	send_text(&p, "this is not json");
	progress_for(&p, 3000, n + 1);
	bad |= expect(&p, "notjson", "bad_json");
	n = p.nmsg;
	send_text(&p, "{\"type\":\"subscribe\",\"id\":7,\"stream\":42}");
	progress_for(&p, 3000, n + 1);
	bad |= expect(&p, "badfield", "bad_field");
	n = p.nmsg;
	send_text(&p, "{\"type\":\"status\",\"id\":8}");
	progress_for(&p, 3000, n + 1);
	bad |= expect(&p, "status", "not_supported");
	/* a tensor a consumer never sends, credits of every wrong kind */
	memset(&th, 0xA5, sizeof(th));
	send_am(&p, RELAY_AM_TENSOR, &th, sizeof(th), junk, sizeof(junk), 0);
	c = (struct relay_credit){ .magic = 0xdeadbeef, .sub = 1, .count = 1 };
	send_am(&p, RELAY_AM_CREDIT, &c, sizeof(c), NULL, 0,
	    UCP_AM_SEND_FLAG_EAGER);
	c = (struct relay_credit){ .magic = RELAY_CREDIT_MAGIC, .sub = 999,
	    .count = 1 };
	send_am(&p, RELAY_AM_CREDIT, &c, sizeof(c), NULL, 0,
	    UCP_AM_SEND_FLAG_EAGER);
	c.count = 0xffffffffu;
	send_am(&p, RELAY_AM_CREDIT, &c, sizeof(c), NULL, 0,
	    UCP_AM_SEND_FLAG_EAGER);
	send_am(&p, RELAY_AM_CREDIT, &c, 3, NULL, 0, UCP_AM_SEND_FLAG_EAGER);
	/* a control message over the limit, by rendezvous */
	memset(big, '{', sizeof(big));
	send_am(&p, RELAY_AM_CTRL, NULL, 0, big, sizeof(big),
	    UCP_AM_SEND_FLAG_RNDV);
	/* an id never heard of in an AM the relay does not know */
	send_am(&p, 77, NULL, 0, junk, 16, UCP_AM_SEND_FLAG_EAGER);
	printf("case binary: sent (a tensor, 4 bad credits, a rendezvous "
	    "control message, an unknown AM id)\n");
	/* a flood: the relay must close the connection */
	for (i = 0; i < 64 && !p.failed; i++) {
		send_text(&p, "]]]");
		progress_for(&p, 20, SIZE_MAX);
	}
	progress_for(&p, 5000, SIZE_MAX);
	printf("case flood: closed by the relay after %d messages: %s\n", i,
	    p.failed ? "yes" : "no");
	bad |= !p.failed;
	peer_close(&p);
	printf("hostile done\n");
	return bad ? 1 : 0;
}
