/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daqiri-relay's counters, shown three ways (relay.h): GET /metrics in
 * the Prometheus text format, GET /stats as one JSON object (the same
 * numbers, for scripts), and one log line per peer and subscription on
 * SIGUSR1. The HTTP server is libmicrohttpd driven from the relay's own
 * loop (MHD_USE_EPOLL without a thread: its epoll fd sits in the loop's),
 * so it reads the counters on the thread that writes them, no lock.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "metrics.h"
#include "relay.h"

#define STATS_CONN_LIMIT	32	/* HTTP connections at once */
#define STATS_CONN_TIMEOUT_S	10	/* an idle one is closed */

struct relay_stats {
	struct MHD_Daemon *mhd;
	struct relay_watch watch;
	uint64_t requests;
};

/* ---- text */

struct buf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void bput(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
bput(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p != NULL ? b->p + b->len : NULL,
		    b->p != NULL ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if (b->p != NULL && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		size_t ncap = (b->cap + (size_t)n + 1) * 2;
		char *np = realloc(b->p, ncap);

		if (np == NULL) {
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap = ncap;
	}
}

/* A label value, escaped as the text format wants (\\, \", \n). */
static void
blabel(struct buf *b, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\' || *s == '"')
			bput(b, "\\%c", *s);
		else if (*s == '\n')
			bput(b, "\\n");
		else
			bput(b, "%c", *s);
	}
}

static void
sub_labels(struct buf *b, const struct relay_peer *p,
	   const struct relay_sub *s)
{
	bput(b, "{peer=\"");
	blabel(b, p->addr);
	bput(b, "\",client=\"");
	blabel(b, p->client);
	bput(b, "\",stream=\"");
	blabel(b, s->stream);
	bput(b, "\",sub=\"%u\"}", s->id);
}

enum sub_metric { SM_TENSORS, SM_BYTES, SM_OVERRUNS, SM_STAGED, SM_LAG,
	SM_LAG_MAX, SM_CREDITS, SM_MAX };

static const struct {
	const char *name, *type, *help;
} sub_metrics[SM_MAX] = {
	[SM_TENSORS] = { "daqiri_relay_tensors_total", "counter",
	    "Tensors sent to the remote consumer." },
	[SM_BYTES] = { "daqiri_relay_bytes_total", "counter",
	    "Tensor data bytes sent to the remote consumer." },
	[SM_OVERRUNS] = { "daqiri_relay_overruns_total", "counter",
	    "Tensors the daemon skipped for this consumer (seq gaps)." },
	[SM_STAGED] = { "daqiri_relay_staged_bytes_total", "counter",
	    "Device tensor bytes copied to host memory to be sent." },
	[SM_LAG] = { "daqiri_relay_lag_seconds", "gauge",
	    "Publish to send completion, last tensor." },
	[SM_LAG_MAX] = { "daqiri_relay_lag_max_seconds", "gauge",
	    "Publish to send completion, largest so far." },
	[SM_CREDITS] = { "daqiri_relay_credits", "gauge",
	    "Receive buffers the remote consumer has free." },
};

static double
sub_value(const struct relay_sub *s, enum sub_metric m)
{
	switch (m) {
	case SM_TENSORS: return (double)s->c.tensors;
	case SM_BYTES: return (double)s->c.bytes;
	case SM_OVERRUNS: return (double)s->c.overruns;
	case SM_STAGED: return (double)s->c.staged_bytes;
	case SM_LAG: return (double)s->c.lag_last_ns / 1e9;
	case SM_LAG_MAX: return (double)s->c.lag_max_ns / 1e9;
	case SM_CREDITS: return (double)s->credits;
	default: return 0;
	}
}

static char *
metrics_text(const struct relay *r, size_t *len)
{
	const struct relay_peer *p;
	const struct relay_sub *s;
	struct buf b = { 0 };
	int m, i;

	for (m = 0; m < SM_MAX; m++) {
		bput(&b, "# HELP %s %s\n# TYPE %s %s\n", sub_metrics[m].name,
		    sub_metrics[m].help, sub_metrics[m].name,
		    sub_metrics[m].type);
		for (p = r->peers; p != NULL; p = p->next)
			for (s = p->subs; s != NULL; s = s->next) {
				bput(&b, "%s", sub_metrics[m].name);
				sub_labels(&b, p, s);
				bput(&b, " %.9g\n", sub_value(s, m));
			}
	}
	bput(&b, "# HELP daqiri_relay_peers Remote consumers connected.\n"
	    "# TYPE daqiri_relay_peers gauge\ndaqiri_relay_peers %u\n",
	    r->npeers);
	bput(&b, "# HELP daqiri_relay_peers_total Remote consumers accepted."
	    "\n# TYPE daqiri_relay_peers_total counter\n"
	    "daqiri_relay_peers_total %llu\n",
	    (unsigned long long)r->peers_total);
	bput(&b, "# HELP daqiri_relay_refused_total Peers or requests "
	    "refused, by reason.\n# TYPE daqiri_relay_refused_total counter\n");
	for (i = 0; i < RR_MAX; i++)
		bput(&b, "daqiri_relay_refused_total{reason=\"%s\"} %llu\n",
		    relay_refusal_name((enum relay_refusal)i),
		    (unsigned long long)r->refused[i]);
	bput(&b, "# HELP daqiri_relay_garbage_total Messages of peers that "
	    "were not valid, by reason.\n"
	    "# TYPE daqiri_relay_garbage_total counter\n");
	for (i = 0; i < RG_MAX; i++)
		bput(&b, "daqiri_relay_garbage_total{reason=\"%s\"} %llu\n",
		    relay_garbage_name((enum relay_garbage)i),
		    (unsigned long long)r->garbage[i]);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	*len = b.len;
	return b.p;
}

/* ---- JSON */

#define JNUM(o, k, v) cJSON_AddNumberToObject((o), (k), (double)(v))

cJSON *
relay_stats_json(const struct relay *r)
{
	const struct relay_peer *p;
	const struct relay_sub *s;
	cJSON *o = cJSON_CreateObject(), *peers, *x;
	char inst[DAQIRI_INSTANCE_HEX + 1];
	int i;

	if (o == NULL)
		return NULL;
	snprintf(inst, sizeof(inst), "%016llx",
	    (unsigned long long)r->instance);
	cJSON_AddStringToObject(o, "instance", inst);
	cJSON_AddBoolToObject(o, "cuda_transport", r->cuda_mem);
	JNUM(o, "peers", r->npeers);
	JNUM(o, "peers_total", r->peers_total);
	x = cJSON_AddObjectToObject(o, "refused");
	for (i = 0; x != NULL && i < RR_MAX; i++)
		JNUM(x, relay_refusal_name((enum relay_refusal)i),
		    r->refused[i]);
	x = cJSON_AddObjectToObject(o, "garbage");
	for (i = 0; x != NULL && i < RG_MAX; i++)
		JNUM(x, relay_garbage_name((enum relay_garbage)i),
		    r->garbage[i]);
	peers = cJSON_AddArrayToObject(o, "peer_list");
	for (p = r->peers; peers != NULL && p != NULL; p = p->next) {
		static const char *const st[] = { "new", "challenged",
		    "ready", "closing" };
		cJSON *po = cJSON_CreateObject(), *subs, *g;

		if (po == NULL)
			break;
		cJSON_AddItemToArray(peers, po);
		cJSON_AddStringToObject(po, "peer", p->addr);
		cJSON_AddStringToObject(po, "client", p->client);
		cJSON_AddStringToObject(po, "state", st[p->state]);
		g = cJSON_AddObjectToObject(po, "garbage");
		for (i = 0; g != NULL && i < RG_MAX; i++)
			if (p->garbage[i] != 0)
				JNUM(g, relay_garbage_name(
				    (enum relay_garbage)i), p->garbage[i]);
		subs = cJSON_AddArrayToObject(po, "subs");
		for (s = p->subs; subs != NULL && s != NULL; s = s->next) {
			cJSON *so = cJSON_CreateObject();

			if (so == NULL)
				break;
			cJSON_AddItemToArray(subs, so);
			JNUM(so, "sub", s->id);
			cJSON_AddStringToObject(so, "stream", s->stream);
			cJSON_AddStringToObject(so, "policy",
			    daqiri_sub_policy_name(s->info.policy));
			cJSON_AddStringToObject(so, "memory",
			    daqiri_mem_kind_name(s->info.mem_kind));
			JNUM(so, "tensors", s->c.tensors);
			JNUM(so, "bytes", s->c.bytes);
			JNUM(so, "overruns", s->c.overruns);
			JNUM(so, "staged_bytes", s->c.staged_bytes);
			JNUM(so, "restarts", s->c.restarts);
			JNUM(so, "lag_ns", s->c.lag_last_ns);
			JNUM(so, "lag_max_ns", s->c.lag_max_ns);
			JNUM(so, "credits", s->credits);
			JNUM(so, "in_flight", s->inflight);
			cJSON_AddBoolToObject(so, "closing", s->closing);
		}
	}
	return o;
}

void
relay_stats_log(const struct relay *r)
{
	const struct relay_peer *p;
	const struct relay_sub *s;

	relay_log(RLOG_WARN, "%u peers (%llu so far)", r->npeers,
	    (unsigned long long)r->peers_total);
	for (p = r->peers; p != NULL; p = p->next) {
		if (p->subs == NULL)
			relay_log(RLOG_WARN, "peer %s (%s): no subscription, "
			    "%llu garbage", p->addr, p->client,
			    (unsigned long long)p->garbage_total);
		for (s = p->subs; s != NULL; s = s->next)
			relay_log(RLOG_WARN, "peer %s (%s): sub %u %s: %llu "
			    "tensors, %llu bytes, %llu overruns, %llu staged "
			    "bytes, lag %.3f ms (max %.3f), %u credits, "
			    "%llu garbage", p->addr, p->client, s->id,
			    s->stream, (unsigned long long)s->c.tensors,
			    (unsigned long long)s->c.bytes,
			    (unsigned long long)s->c.overruns,
			    (unsigned long long)s->c.staged_bytes,
			    (double)s->c.lag_last_ns / 1e6,
			    (double)s->c.lag_max_ns / 1e6, s->credits,
			    (unsigned long long)p->garbage_total);
	}
}

/* ---- HTTP */

static enum MHD_Result
respond(struct MHD_Connection *c, unsigned code, const char *type,
	char *body, size_t len)
{
	struct MHD_Response *rs = MHD_create_response_from_buffer(len, body,
	    MHD_RESPMEM_MUST_FREE);
	enum MHD_Result rc;

	if (rs == NULL) {
		free(body);
		return MHD_NO;
	}
	(void)MHD_add_response_header(rs, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	rc = MHD_queue_response(c, code, rs);
	MHD_destroy_response(rs);
	return rc;
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *c, const char *url,
	   const char *method, const char *version, const char *upload,
	   size_t *upload_len, void **ctx)
{
	struct relay *r = cls;
	char *body;
	size_t len = 0;
	cJSON *o;

	if (*ctx == NULL) {		/* headers only: wait for the body */
		*ctx = r;
		return MHD_YES;
	}
	if (*upload_len != 0) {		/* a GET has none: drop it */
		*upload_len = 0;
		return MHD_YES;
	}
	r->stats->requests++;
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return respond(c, 405, "text/plain", strdup("GET only\n"), 9);
	if (strcmp(url, "/metrics") == 0) {
		body = metrics_text(r, &len);
		if (body == NULL)
			return MHD_NO;
		return respond(c, 200, DAQIRI_METRICS_CONTENT_TYPE, body, len);
	}
	if (strcmp(url, "/stats") == 0) {
		o = relay_stats_json(r);
		body = o != NULL ? cJSON_Print(o) : NULL;
		cJSON_Delete(o);
		if (body == NULL)
			return MHD_NO;
		len = strlen(body);
		return respond(c, 200, "application/json", body, len);
	}
	return respond(c, 404, "text/plain",
	    strdup("not found: /metrics or /stats\n"), 30);
}

int
relay_stats_init(struct relay *r)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
	    .ai_flags = AI_NUMERICSERV | AI_PASSIVE }, *ai = NULL;
	const union MHD_DaemonInfo *di;
	char host[256], *colon;
	const char *port;
	struct relay_stats *st;
	int e;

	if (r->o->metrics == NULL)
		return 0;
	snprintf(host, sizeof(host), "%s", r->o->metrics);
	colon = strrchr(host, ':');
	if (colon == NULL || colon == host || colon[1] == '\0') {
		relay_log(RLOG_WARN, "--metrics %s: give ADDR:PORT (for "
		    "instance 127.0.0.1:9250)", r->o->metrics);
		return -1;
	}
	*colon = '\0';
	port = colon + 1;
	if (host[0] == '[' && colon[-1] == ']') {	/* [IPv6]:PORT */
		colon[-1] = '\0';
		memmove(host, host + 1, strlen(host));
	}
	e = getaddrinfo(host, port, &hints, &ai);
	if (e != 0) {
		relay_log(RLOG_WARN, "--metrics %s: %s", r->o->metrics,
		    gai_strerror(e));
		return -1;
	}
	st = calloc(1, sizeof(*st));
	if (st == NULL) {
		freeaddrinfo(ai);
		return -1;
	}
	r->stats = st;
	st->watch.kind = RW_HTTP;
	st->watch.fd = -1;
	st->mhd = MHD_start_daemon(MHD_USE_EPOLL, 0, NULL, NULL, on_request, r,
	    MHD_OPTION_SOCK_ADDR, ai->ai_addr,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)STATS_CONN_LIMIT,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)STATS_CONN_TIMEOUT_S,
	    MHD_OPTION_END);
	freeaddrinfo(ai);
	if (st->mhd == NULL) {
		relay_log(RLOG_WARN, "--metrics %s: cannot serve there (in "
		    "use, or not an address of this host?)", r->o->metrics);
		return -1;
	}
	di = MHD_get_daemon_info(st->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (di == NULL) {
		relay_log(RLOG_WARN, "--metrics: libmicrohttpd without epoll");
		return -1;
	}
	relay_watch_set(r, &st->watch, di->epoll_fd, EPOLLIN);
	relay_log(RLOG_INFO, "serving /metrics and /stats on http://%s/",
	    r->o->metrics);
	return 0;
}

int
relay_stats_run(struct relay *r)
{
	MHD_UNSIGNED_LONG_LONG ms;

	if (r->stats == NULL || r->stats->mhd == NULL)
		return -1;
	(void)MHD_run(r->stats->mhd);
	if (MHD_get_timeout(r->stats->mhd, &ms) != MHD_YES)
		return -1;
	return ms > 60000 ? 60000 : (int)ms;
}

void
relay_stats_fini(struct relay *r)
{
	if (r->stats == NULL)
		return;
	relay_watch_set(r, &r->stats->watch, -1, 0);
	if (r->stats->mhd != NULL)
		MHD_stop_daemon(r->stats->mhd);
	free(r->stats);
	r->stats = NULL;
}
