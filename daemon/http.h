/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP endpoint at daemon.metrics_listen (libmicrohttpd, on its own
 * thread): GET /metrics, the Prometheus text, and GET /healthz, 200 while
 * the main loop turns and every RX and TX worker's heartbeat advances,
 * else 503 naming what is stuck.
 * Bounded: a connection limit (a newcomer replaces the oldest incomplete
 * request), a deadline for each request's line and headers, an idle
 * timeout, a per-connection memory limit and a body limit; what it turns
 * away is counted by reason (the stats "http" object).
 */
#ifndef DAQIRI_HTTP_H
#define DAQIRI_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "tx.h"
#include "worker.h"

/* Connections served at once; more are accepted and closed at once. */
#define HTTP_MAX_CONNECTIONS	64
/* Seconds a connection may be idle before it is closed. */
#define HTTP_TIMEOUT_S		5
/* Bytes of request (line and headers) one connection may take. */
#define HTTP_MEMORY_LIMIT	(32u * 1024)
/* Longest a /metrics request waits for the main loop (then 503). */
#define HTTP_MAIN_WAIT_MS	2000
/* A /metrics text younger than this is served again, not rebuilt. */
#define HTTP_METRICS_FRESH_MS	1000
/* A request's line and headers must be in this long after its
 * connection opened, however slowly they come; else it is closed. */
#define HTTP_REQUEST_DEADLINE_MS	2000
/* Request body bytes read (and ignored) at most; more: 413. */
#define HTTP_BODY_MAX		4096
#define HTTP_MAX_WORKERS	(CFG_MAX_INTERFACES * CFG_MAX_QUEUES)

struct http;

/* What the endpoint reads off the main thread. */
struct http_opts {
	const char *listen;		/* daemon.metrics_listen text */
	unsigned unix_mode;		/* mode of a unix: socket */
	uint64_t stale_ns;		/* heartbeat older than this: stuck */
	int nworkers;
	struct worker *workers[HTTP_MAX_WORKERS];	/* live until fini */
	int ntx;
	struct tx_worker *txws[HTTP_MAX_WORKERS];	/* the same */
};

/*
 * Bind o->listen and start the server thread. The workers must outlive
 * the endpoint (http_fini() first at teardown). Returns 0 and *out, or a
 * negative errno with a message naming the address in err.
 */
int http_init(struct http **out, const struct http_opts *o, char *err,
	      size_t errlen);

/* Readable (an eventfd) when a /metrics request waits for the main loop. */
int http_fd(const struct http *h);

/*
 * Main thread, when http_fd() is readable: build the text with
 * build(ctx, &text, &len) (a malloc'ed buffer the endpoint takes) and
 * hand it to every request waiting for it.
 */
void http_serve(struct http *h, int (*build)(void *ctx, char **text,
    size_t *len), void *ctx);

/* Main thread, every tick: the main loop's heartbeat (/healthz), and
 * connections past the request deadline and /metrics requests past
 * their wait are ended. */
void http_tick(struct http *h);

/* The counters as the stats "http" object (any thread). */
int http_counters_json(const struct http *h, cJSON *o);

/* libmicrohttpd's version, for daqiri_build_info. */
const char *http_library_version(void);

/* Stop the thread, close and (unix:) remove the socket. NULL-safe. */
void http_fini(struct http *h);

#endif
