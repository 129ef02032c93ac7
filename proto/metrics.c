/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The drop-reason table and the Prometheus text generator (metrics.h):
 * a fixed table of families, each read from named members of the stats
 * and consumers replies, so the text has the same names whoever renders
 * it (the daemon's /metrics, `daqirictl metrics`).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

/* --- the vocabulary ------------------------------------------------------ */

static const struct {
	const char *name;
	enum daqiri_drop_scope scope;
	const char *help;
} drops[] = {
	[DAQIRI_DROP_DUPLICATE] = { "duplicate", DAQIRI_DROP_AT_STREAM,
	    "a packet for a slot already filled" },
	[DAQIRI_DROP_LATE] = { "late", DAQIRI_DROP_AT_STREAM,
	    "a packet of a batch already published or passed over" },
	[DAQIRI_DROP_MALFORMED] = { "malformed", DAQIRI_DROP_AT_STREAM,
	    "a packet whose sequence or batch field or payload size does not "
	    "fit the reorder layout" },
	[DAQIRI_DROP_OVERSIZE] = { "oversize", DAQIRI_DROP_AT_STREAM,
	    "a frame longer than a raw stream's slot" },
	[DAQIRI_DROP_NO_BUFFER] = { "no_buffer", DAQIRI_DROP_AT_STREAM,
	    "a packet of a batch (or burst) that found no free tensor buffer" },
	[DAQIRI_DROP_BACKEND_ERROR] = { "backend_error", DAQIRI_DROP_AT_STREAM,
	    "a packet whose write the reorder backend failed, or of a batch "
	    "that failed" },
	[DAQIRI_DROP_UNMATCHED] = { "unmatched", DAQIRI_DROP_AT_QUEUE,
	    "a frame no flow matched, with flow_isolation on" },
	[DAQIRI_DROP_NO_STREAM] = { "no_stream", DAQIRI_DROP_AT_QUEUE,
	    "a frame for the queue's raw stream when the queue has none" },
	[DAQIRI_DROP_MISROUTED] = { "misrouted", DAQIRI_DROP_AT_QUEUE,
	    "a frame steered to a queue whose worker does not own its flow's "
	    "stream" },
	[DAQIRI_DROP_KERNEL] = { "kernel", DAQIRI_DROP_AT_ENGINE,
	    "a datagram the kernel dropped before daqirid read it (socket "
	    "buffer full; a lower bound with UDP GRO), or a frame the NIC "
	    "missed (DPDK imissed)" },
	[DAQIRI_DROP_TRUNCATED] = { "truncated", DAQIRI_DROP_AT_ENGINE,
	    "a datagram longer than a receive buffer" },
	[DAQIRI_DROP_INCOMPLETE] = { "incomplete", DAQIRI_DROP_AT_TENSOR,
	    "a packet placed in a batch that did not complete, dropped whole "
	    "with missing_action drop (counted in placed too)" },
};
_Static_assert(sizeof(drops) / sizeof(drops[0]) == DAQIRI_DROP_MAX,
    "one entry per drop reason");

const char *
daqiri_drop_name(enum daqiri_drop r)
{
	return (unsigned)r < DAQIRI_DROP_MAX ? drops[r].name : "?";
}

enum daqiri_drop_scope
daqiri_drop_scope(enum daqiri_drop r)
{
	return (unsigned)r < DAQIRI_DROP_MAX ? drops[r].scope :
	    DAQIRI_DROP_SCOPE_MAX;
}

const char *
daqiri_drop_help(enum daqiri_drop r)
{
	return (unsigned)r < DAQIRI_DROP_MAX ? drops[r].help : "?";
}

int
daqiri_drop_parse(const char *name)
{
	for (int r = 0; r < DAQIRI_DROP_MAX; r++)
		if (strcmp(drops[r].name, name) == 0)
			return r;
	return -1;
}

/* --- output buffer ------------------------------------------------------- */

struct mbuf {
	char *p;
	size_t n, cap;
	bool oom;
};

static void __attribute__((format(printf, 2, 3)))
mb_printf(struct mbuf *b, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		k = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
		va_end(ap);
		if (k < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)k < b->cap - b->n) {
			b->n += (size_t)k;
			return;
		}
		size_t cap = b->cap * 2 + (size_t)k + 1;
		char *q = realloc(b->p, cap);

		if (q == NULL) {
			b->oom = true;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
}

/* A value: integers as integers, the rest in the fewest digits that
 * read back as the same double. */
static void
mb_value(struct mbuf *b, double v)
{
	char buf[40];

	if (v == floor(v) && fabs(v) < 9007199254740992.0) {
		mb_printf(b, "%.0f\n", v);
		return;
	}
	snprintf(buf, sizeof(buf), "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, sizeof(buf), "%.17g", v);
	mb_printf(b, "%s\n", buf);
}

/* Label set: up to four name="value" pairs, values escaped. */
struct labels {
	int n;
	const char *k[5];
	const char *v[5];
};

static void
lab_add(struct labels *l, const char *k, const char *v)
{
	if (v != NULL && l->n < 5) {
		l->k[l->n] = k;
		l->v[l->n] = v;
		l->n++;
	}
}

static void
mb_labels(struct mbuf *b, const struct labels *l, const char *lek,
	  const char *lev)
{
	struct labels all = *l;

	if (lek != NULL)
		lab_add(&all, lek, lev);
	if (all.n == 0) {
		mb_printf(b, " ");
		return;
	}
	mb_printf(b, "{");
	for (int i = 0; i < all.n; i++) {
		mb_printf(b, "%s%s=\"", i > 0 ? "," : "", all.k[i]);
		for (const char *s = all.v[i]; *s != '\0'; s++) {
			if (*s == '\\' || *s == '"')
				mb_printf(b, "\\%c", *s);
			else if (*s == '\n')
				mb_printf(b, "\\n");
			else
				mb_printf(b, "%c", *s);
		}
		mb_printf(b, "\"");
	}
	mb_printf(b, "} ");
}

static void
mb_sample(struct mbuf *b, const char *name, const struct labels *l,
	  double v)
{
	mb_printf(b, "%s", name);
	mb_labels(b, l, NULL, NULL);
	mb_value(b, v);
}

static void
mb_header(struct mbuf *b, const char *name, const char *type,
	  const char *help)
{
	mb_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* --- JSON access ---------------------------------------------------------- */

static const cJSON *
member(const cJSON *o, const char *k)
{
	return o != NULL ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

/* A number member of o, *ok false when absent. */
static double
num(const cJSON *o, const char *k, bool *ok)
{
	const cJSON *v = member(o, k);

	*ok = cJSON_IsNumber(v);
	return *ok ? v->valuedouble : 0;
}

static const char *
str(const cJSON *o, const char *k)
{
	const cJSON *v = member(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The part of "iface/rest" before the slash (into buf) and after it. */
static const char *
split_name(const char *full, char *iface, size_t cap)
{
	const char *sl = full != NULL ? strchr(full, '/') : NULL;

	if (full == NULL) {
		snprintf(iface, cap, "%s", "");
		return "";
	}
	if (sl == NULL) {
		snprintf(iface, cap, "%s", "");
		return full;
	}
	snprintf(iface, cap, "%.*s", (int)(sl - full), full);
	return sl + 1;
}

/* A stream's counters object: "reorder" or "raw". */
static const cJSON *
stream_counters(const cJSON *s)
{
	const cJSON *c = member(s, "reorder");

	return c != NULL ? c : member(s, "raw");
}

/* --- table-driven families ----------------------------------------------- */

enum fam_scope { AT_QUEUE, AT_TXQUEUE, AT_STREAM, AT_CONTROL, AT_HTTP,
	AT_DAEMON };

/* One series of a family: member key of the scope's object (sub, when
 * set, names a sub-object first), with an extra label. */
struct src {
	const char *sub;
	const char *key;
	const char *lk, *lv;	/* extra label, NULL for none */
};

#define MAX_SRC 6
struct family {
	const char *name;
	bool counter;
	enum fam_scope scope;
	const char *help;
	struct src src[MAX_SRC];
};

static const struct family families[] = {
	{ "daqiri_uptime_seconds", false, AT_DAEMON,
	  "Seconds since daqirid started", { { NULL, "uptime_s", NULL, NULL } } },
	/* queues */
	{ "daqiri_rx_packets_total", true, AT_QUEUE,
	  "Frames the queue's worker received from the engine",
	  { { NULL, "rx_packets", NULL, NULL } } },
	{ "daqiri_rx_bytes_total", true, AT_QUEUE,
	  "Bytes of those frames (headers and payload)",
	  { { NULL, "rx_bytes", NULL, NULL } } },
	{ "daqiri_rx_bursts_total", true, AT_QUEUE,
	  "Receive bursts that returned frames", { { NULL, "bursts", NULL, NULL } } },
	{ "daqiri_rx_errors_total", true, AT_QUEUE,
	  "Failed receive bursts (worker) and receive calls (engine)",
	  { { NULL, "rx_errors", "source", "worker" },
	    { NULL, "engine_errors", "source", "engine" } } },
	{ "daqiri_rx_gro_reads_total", true, AT_QUEUE,
	  "Reads that held more than one datagram (UDP GRO)",
	  { { NULL, "engine_gro_reads", NULL, NULL } } },
	{ "daqiri_rx_direct_total", true, AT_QUEUE,
	  "Frames received straight into a tensor slot (direct placement)",
	  { { NULL, "engine_direct", NULL, NULL } } },
	{ "daqiri_rx_bursts_in_flight", false, AT_QUEUE,
	  "Bursts whose payloads the GPU still reads where they landed",
	  { { NULL, "inflight", NULL, NULL } } },
	{ "daqiri_rx_in_flight_waits_total", true, AT_QUEUE,
	  "Times the worker waited for the GPU to read the oldest burst in "
	  "flight before taking another",
	  { { NULL, "inflight_waits", NULL, NULL } } },
	{ "daqiri_rx_replay_waits_total", true, AT_QUEUE,
	  "Replay: times a stream had no free buffer and the worker waited "
	  "for its consumers", { { NULL, "replay_waits", NULL, NULL } } },
	{ "daqiri_flow_matched_packets_total", true, AT_QUEUE,
	  "Frames that matched a flow", { { NULL, "matched", NULL, NULL } } },
	{ "daqiri_queue_streams_packets_in_total", true, AT_QUEUE,
	  "Frames the queue's streams took in",
	  { { NULL, "streams_packets_in", NULL, NULL } } },
	{ "daqiri_tap_frames_total", true, AT_QUEUE,
	  "Frames a tap (daqirictl capture, learn) copied, and those it could "
	  "not because its ring was full (tap_full: not a data loss, the "
	  "streams got them)",
	  { { NULL, "tap_taken", "outcome", "copied" },
	    { NULL, "tap_full", "outcome", "tap_full" } } },
	/* tx queues (an interface's "tx": {"queues": [...]}) */
	{ "daqiri_tx_submitted_total", true, AT_TXQUEUE,
	  "Submissions the queue's TX worker took off its channels' rings",
	  { { NULL, "submitted", NULL, NULL } } },
	{ "daqiri_tx_packets_total", true, AT_TXQUEUE,
	  "Payloads the TX worker handed to the engine (sent)",
	  { { NULL, "packets", NULL, NULL } } },
	{ "daqiri_tx_bytes_total", true, AT_TXQUEUE,
	  "Payload bytes of those (headers not counted)",
	  { { NULL, "bytes", NULL, NULL } } },
	{ "daqiri_tx_ring_full_total", true, AT_TXQUEUE,
	  "Submissions consumers had refused for a full ring or no free "
	  "buffer (their own count)", { { NULL, "ring_full", NULL, NULL } } },
	{ "daqiri_tx_paced_seconds_total", true, AT_TXQUEUE,
	  "Time the TX worker waited for the pacing rate",
	  { { NULL, "paced_s", NULL, NULL } } },
	{ "daqiri_tx_channels", false, AT_TXQUEUE,
	  "TX channels open on the queue now",
	  { { NULL, "channels_open", NULL, NULL } } },
	{ "daqiri_tx_channels_broken_total", true, AT_TXQUEUE,
	  "TX channels the daemon cut off for an impossible ring position",
	  { { NULL, "broken", NULL, NULL } } },
	{ "daqiri_tx_engine_calls_total", true, AT_TXQUEUE,
	  "Engine send calls (sendmmsg, rte_eth_tx_burst), and those that "
	  "found the queue full",
	  { { "engine", "calls", "result", "all" },
	    { "engine", "full", "result", "full" } } },
	{ "daqiri_tx_gso_sends_total", true, AT_TXQUEUE,
	  "Messages the socket engine sent with UDP_SEGMENT (several payloads)",
	  { { "engine", "gso_sends", NULL, NULL } } },
	{ "daqiri_tx_copied_total", true, AT_TXQUEUE,
	  "Payloads the DPDK engine copied into its frame instead of sending "
	  "from the pool (a port without multi-segment transmit, or a PCI "
	  "port)", { { "engine", "copied", NULL, NULL } } },
	{ "daqiri_tx_staged_total", true, AT_TXQUEUE,
	  "Payloads in device memory the socket engine copied to host memory "
	  "to send them (a tx queue whose region is device)",
	  { { "engine", "staged", NULL, NULL } } },
	{ "daqiri_tx_staged_bytes_total", true, AT_TXQUEUE,
	  "Bytes of those payloads",
	  { { "engine", "staged_bytes", NULL, NULL } } },
	/* streams */
	{ "daqiri_stream_packets_in_total", true, AT_STREAM,
	  "Packets the stream took in (placed + dropped)",
	  { { "", "packets_in", NULL, NULL } } },
	{ "daqiri_stream_packets_placed_total", true, AT_STREAM,
	  "Packets written into a tensor", { { "", "placed", NULL, NULL } } },
	{ "daqiri_stream_batches_total", true, AT_STREAM,
	  "Batches (raw: bursts) by how they ended",
	  { { "reorder", "batches_complete", "outcome", "complete" },
	    { "reorder", "batches_timeout", "outcome", "timeout" },
	    { "reorder", "batches_evicted", "outcome", "evicted" },
	    { "reorder", "batches_no_buffer", "outcome", "no_buffer" },
	    { "reorder", "batches_backend_error", "outcome", "backend_error" },
	    { "reorder", "batches_incomplete", "outcome", "incomplete" } } },
	{ "daqiri_stream_bursts_total", true, AT_STREAM,
	  "Raw bursts published, by why",
	  { { "raw", "bursts_full", "outcome", "full" },
	    { "raw", "bursts_timeout", "outcome", "timeout" },
	    { "raw", "bursts_flush", "outcome", "flush" } } },
	{ "daqiri_stream_resyncs_total", true, AT_STREAM,
	  "Times the sender restarted (a new epoch; daqirid(8) RESYNC)",
	  { { "reorder", "resync", NULL, NULL } } },
	{ "daqiri_stream_missing_slots_total", true, AT_STREAM,
	  "Slots of published batches that no packet filled",
	  { { "reorder", "missing_slots", NULL, NULL } } },
	{ "daqiri_stream_tensors_published_total", true, AT_STREAM,
	  "Tensors published to subscribers", { { "handoff", "published", NULL, NULL } } },
	{ "daqiri_stream_tensors_delivered_total", true, AT_STREAM,
	  "Tensor descriptors put into subscribers' rings",
	  { { "handoff", "delivered", NULL, NULL } } },
	{ "daqiri_stream_tensors_unseen_total", true, AT_STREAM,
	  "Tensors no subscriber took (none subscribed, or every ring full)",
	  { { "handoff", "unseen", NULL, NULL } } },
	{ "daqiri_stream_overruns_total", true, AT_STREAM,
	  "Tensors subscribers missed for a full ring or quota (summed)",
	  { { "handoff", "overruns", NULL, NULL } } },
	{ "daqiri_stream_subscriptions_ended_total", true, AT_STREAM,
	  "Subscriptions the daemon ended, by why",
	  { { "handoff", "subs_broken", "reason", "broken" },
	    { "handoff", "subs_held_too_long", "reason", "held_too_long" } } },
	{ "daqiri_stream_buffers", false, AT_STREAM,
	  "Tensor buffers now, by state",
	  { { "handoff", "free_bufs", "state", "free" },
	    { "handoff", "held_bufs", "state", "held" },
	    { "handoff", "open_bufs", "state", "open" } } },
	/* control socket */
	{ "daqiri_control_connections_accepted_total", true, AT_CONTROL,
	  "Control connections accepted", { { NULL, "accepted", NULL, NULL } } },
	{ "daqiri_control_connections_rejected_total", true, AT_CONTROL,
	  "Control connections refused, by limit",
	  { { NULL, "rejected_full", "reason", "full" },
	    { NULL, "rejected_uid", "reason", "uid" } } },
	{ "daqiri_control_hello_timeouts_total", true, AT_CONTROL,
	  "Control connections closed for no hello in time",
	  { { NULL, "hello_timeouts", NULL, NULL } } },
	{ "daqiri_control_connections_closed_total", true, AT_CONTROL,
	  "Control connections closed", { { NULL, "closed", NULL, NULL } } },
	{ "daqiri_control_connections_dropped_slow_total", true, AT_CONTROL,
	  "Control connections dropped for not reading their replies",
	  { { NULL, "dropped_slow", NULL, NULL } } },
	{ "daqiri_control_requests_total", true, AT_CONTROL,
	  "Control requests answered", { { NULL, "requests", NULL, NULL } } },
	{ "daqiri_control_errors_total", true, AT_CONTROL,
	  "Control replies with a status other than ok",
	  { { NULL, "errors", NULL, NULL } } },
	{ "daqiri_control_connections", false, AT_CONTROL,
	  "Control connections open now, all and of root or the admin group",
	  { { NULL, "current", "class", "all" },
	    { NULL, "current_admin", "class", "admin" } } },
	{ "daqiri_control_queued_bytes", false, AT_CONTROL,
	  "Reply bytes waiting for room to send, now",
	  { { NULL, "queued_bytes", NULL, NULL } } },
	{ "daqiri_control_throttled_connections", false, AT_CONTROL,
	  "Control connections not read until their replies drain, now",
	  { { NULL, "throttled", NULL, NULL } } },
	/* the HTTP endpoint */
	{ "daqiri_http_connections_accepted_total", true, AT_HTTP,
	  "HTTP connections accepted", { { NULL, "accepted", NULL, NULL } } },
	{ "daqiri_http_connections_rejected_total", true, AT_HTTP,
	  "HTTP connections refused at the connection limit",
	  { { NULL, "rejected", NULL, NULL } } },
	{ "daqiri_http_connections", false, AT_HTTP,
	  "HTTP connections open now", { { NULL, "current", NULL, NULL } } },
	{ "daqiri_http_connections_incomplete_total", true, AT_HTTP,
	  "HTTP connections closed unanswered by their client, or refused "
	  "by the server itself (requests over the memory limit or "
	  "malformed)",
	  { { NULL, "incomplete", NULL, NULL } } },
	{ "daqiri_http_timeouts_total", true, AT_HTTP,
	  "HTTP connections closed unanswered by the idle timeout after a "
	  "complete request",
	  { { NULL, "timeouts", NULL, NULL } } },
	{ "daqiri_http_deadline_closed_total", true, AT_HTTP,
	  "HTTP connections closed for a request not complete within the "
	  "deadline (slow or silent clients)",
	  { { NULL, "deadline", NULL, NULL } } },
	{ "daqiri_http_evicted_total", true, AT_HTTP,
	  "HTTP connections closed at the limit to make room for a newcomer "
	  "(the oldest incomplete request)",
	  { { NULL, "evicted", NULL, NULL } } },
	{ "daqiri_http_metrics_cached_total", true, AT_HTTP,
	  "/metrics requests answered with a text built less than a second "
	  "before",
	  { { NULL, "metrics_cached", NULL, NULL } } },
	{ "daqiri_http_responses_total", true, AT_HTTP,
	  "HTTP responses daqirid sent, by status code",
	  { { "responses", "200", "code", "200" },
	    { "responses", "404", "code", "404" },
	    { "responses", "405", "code", "405" },
	    { "responses", "413", "code", "413" },
	    { "responses", "503", "code", "503" } } },
};

/* Value of one source in object o (sub "" = the stream's counters). */
static bool
src_value(const cJSON *o, const struct src *s, enum fam_scope scope,
	  double *v)
{
	const cJSON *base = o;
	bool ok;

	if (s->sub != NULL)
		base = s->sub[0] == '\0' && scope == AT_STREAM ?
		    stream_counters(o) : member(o, s->sub);
	*v = num(base, s->key, &ok);
	return ok;
}

/* Every object of a scope, each with its labels, through cb. */
typedef void (*each_fn)(struct mbuf *b, const struct family *f,
			const cJSON *o, const struct labels *l, bool *hdr);

static void
emit_sources(struct mbuf *b, const struct family *f, const cJSON *o,
	     const struct labels *l, bool *hdr)
{
	for (int i = 0; i < MAX_SRC && f->src[i].key != NULL; i++) {
		double v;

		if (!src_value(o, &f->src[i], f->scope, &v))
			continue;
		if (!*hdr) {
			mb_header(b, f->name, f->counter ? "counter" : "gauge",
			    f->help);
			*hdr = true;
		}
		mb_printf(b, "%s", f->name);
		mb_labels(b, l, f->src[i].lk, f->src[i].lv);
		mb_value(b, v);
	}
}

static void
for_each(struct mbuf *b, const cJSON *stats, enum fam_scope scope,
	 const struct family *f, each_fn cb, bool *hdr)
{
	const cJSON *e, *q;
	char iface[128];
	struct labels l;

	switch (scope) {
	case AT_QUEUE:
		cJSON_ArrayForEach(e, member(stats, "interfaces"))
			cJSON_ArrayForEach(q, member(e, "queues")) {
				memset(&l, 0, sizeof(l));
				lab_add(&l, "interface", str(e, "name"));
				lab_add(&l, "queue", split_name(str(q, "queue"),
				    iface, sizeof(iface)));
				cb(b, f, q, &l, hdr);
			}
		break;
	case AT_TXQUEUE:
		cJSON_ArrayForEach(e, member(stats, "interfaces"))
			cJSON_ArrayForEach(q, member(member(e, "tx"), "queues")) {
				memset(&l, 0, sizeof(l));
				lab_add(&l, "interface", str(e, "name"));
				lab_add(&l, "queue", split_name(str(q, "queue"),
				    iface, sizeof(iface)));
				cb(b, f, q, &l, hdr);
			}
		break;
	case AT_STREAM:
		cJSON_ArrayForEach(e, member(stats, "streams")) {
			const char *n = str(e, "name");

			memset(&l, 0, sizeof(l));
			split_name(n, iface, sizeof(iface));
			lab_add(&l, "interface", iface);
			lab_add(&l, "stream", n);
			cb(b, f, e, &l, hdr);
		}
		break;
	case AT_CONTROL:
	case AT_HTTP:
	case AT_DAEMON:
		memset(&l, 0, sizeof(l));
		e = member(stats, scope == AT_CONTROL ? "control" :
		    scope == AT_HTTP ? "http" : "daemon");
		if (cJSON_IsObject(e))
			cb(b, f, e, &l, hdr);
		break;
	}
}

/* --- drops --------------------------------------------------------------- */

static void
emit_drops(struct mbuf *b, const cJSON *stats)
{
	const cJSON *e, *q;
	char iface[128];
	struct labels l;
	bool ok;

	mb_header(b, "daqiri_packets_dropped_total", "counter",
	    "Packets dropped, by reason (daqirid(8) DROP REASONS); stream "
	    "reasons carry the stream label, queue and engine reasons the "
	    "queue label");
	cJSON_ArrayForEach(e, member(stats, "streams")) {
		const char *n = str(e, "name");
		const cJSON *c = stream_counters(e);

		for (int r = 0; r < DAQIRI_DROP_MAX; r++) {
			double v;

			if (drops[r].scope != DAQIRI_DROP_AT_STREAM &&
			    drops[r].scope != DAQIRI_DROP_AT_TENSOR)
				continue;
			v = num(c, drops[r].name, &ok);
			if (!ok)
				continue;
			memset(&l, 0, sizeof(l));
			split_name(n, iface, sizeof(iface));
			lab_add(&l, "interface", iface);
			lab_add(&l, "stream", n);
			lab_add(&l, "reason", drops[r].name);
			mb_sample(b, "daqiri_packets_dropped_total", &l, v);
		}
	}
	cJSON_ArrayForEach(e, member(stats, "interfaces"))
		cJSON_ArrayForEach(q, member(e, "queues"))
			for (int r = 0; r < DAQIRI_DROP_MAX; r++) {
				double v;

				if (drops[r].scope == DAQIRI_DROP_AT_STREAM ||
				    drops[r].scope == DAQIRI_DROP_AT_TENSOR)
					continue;
				v = num(q, drops[r].name, &ok);
				if (!ok)
					continue;
				memset(&l, 0, sizeof(l));
				lab_add(&l, "interface", str(e, "name"));
				lab_add(&l, "queue", split_name(str(q, "queue"),
				    iface, sizeof(iface)));
				lab_add(&l, "reason", drops[r].name);
				mb_sample(b, "daqiri_packets_dropped_total", &l,
				    v);
			}
}

/* TX drops: every member of each tx queue's "drops" object is a reason
 * (the daemon's bounded set, daqirid(8) TX). */
static void
emit_tx_drops(struct mbuf *b, const cJSON *stats)
{
	const cJSON *e, *q, *r;
	char iface[128];
	struct labels l;
	bool hdr = false;

	cJSON_ArrayForEach(e, member(stats, "interfaces"))
		cJSON_ArrayForEach(q, member(member(e, "tx"), "queues"))
			cJSON_ArrayForEach(r, member(q, "drops")) {
				if (!cJSON_IsNumber(r) || r->string == NULL)
					continue;
				if (!hdr) {
					mb_header(b, "daqiri_tx_drops_total",
					    "counter", "Submissions that did "
					    "not go out, by reason (daqirid(8) "
					    "TX)");
					hdr = true;
				}
				memset(&l, 0, sizeof(l));
				lab_add(&l, "interface", str(e, "name"));
				lab_add(&l, "queue", split_name(str(q, "queue"),
				    iface, sizeof(iface)));
				lab_add(&l, "reason", r->string);
				mb_sample(b, "daqiri_tx_drops_total", &l,
				    r->valuedouble);
			}
}

/* Per TX channel (each tx queue's "channels"): its own counters, labelled
 * by the consumer's pid and the channel's id (at most TX_MAX_CHANNELS
 * per queue, so the series stay few). Family by family, as the text
 * format wants them grouped. */
static void
emit_tx_channels(struct mbuf *b, const cJSON *stats)
{
	static const struct {
		const char *name, *key, *help;
	} cf[] = {
		{ "daqiri_tx_channel_packets_total", "packets",
		  "Payloads of this TX channel sent" },
		{ "daqiri_tx_channel_bytes_total", "bytes",
		  "Payload bytes of those" },
		{ "daqiri_tx_channel_ring_full_total", "ring_full",
		  "Submissions the consumer had refused for no free buffer "
		  "or a full ring (its own count)" },
		{ "daqiri_tx_channel_drops_total", NULL,
		  "Submissions of this channel that did not go out, by "
		  "reason" },
	};
	const cJSON *e, *q, *c, *r;
	char iface[128], pid[24], id[24];
	struct labels l;
	bool ok;

	for (size_t f = 0; f < sizeof(cf) / sizeof(cf[0]); f++) {
		bool hdr = false;

		cJSON_ArrayForEach(e, member(stats, "interfaces"))
		    cJSON_ArrayForEach(q, member(member(e, "tx"), "queues"))
			cJSON_ArrayForEach(c, member(q, "channels")) {
				snprintf(pid, sizeof(pid), "%.0f",
				    num(c, "pid", &ok));
				snprintf(id, sizeof(id), "%.0f",
				    num(c, "tx", &ok));
				memset(&l, 0, sizeof(l));
				lab_add(&l, "interface", str(e, "name"));
				lab_add(&l, "queue", split_name(str(q, "queue"),
				    iface, sizeof(iface)));
				lab_add(&l, "consumer", pid);
				lab_add(&l, "tx", id);
				if (cf[f].key != NULL) {
					double v = num(c, cf[f].key, &ok);

					if (!ok)
						continue;
					if (!hdr) {
						mb_header(b, cf[f].name,
						    "counter", cf[f].help);
						hdr = true;
					}
					mb_sample(b, cf[f].name, &l, v);
					continue;
				}
				cJSON_ArrayForEach(r, member(c, "drops")) {
					struct labels lr = l;

					if (!cJSON_IsNumber(r) || r->string == NULL)
						continue;
					if (!hdr) {
						mb_header(b, cf[f].name,
						    "counter", cf[f].help);
						hdr = true;
					}
					lab_add(&lr, "reason", r->string);
					mb_sample(b, cf[f].name, &lr,
					    r->valuedouble);
				}
			}
	}
}

/* --- histograms ---------------------------------------------------------- */

/* True when h has the histogram shape (metrics.h), bounds increasing. */
static bool
is_histogram(const cJSON *h)
{
	const cJSON *le = member(h, "le_ns"), *bk = member(h, "buckets"), *x;
	double prev = -1;

	if (!cJSON_IsArray(le) || !cJSON_IsArray(bk) ||
	    cJSON_GetArraySize(bk) != cJSON_GetArraySize(le) + 1 ||
	    !cJSON_IsNumber(member(h, "sum_ns")))
		return false;
	cJSON_ArrayForEach(x, le) {
		if (!cJSON_IsNumber(x) || x->valuedouble <= prev)
			return false;
		prev = x->valuedouble;
	}
	cJSON_ArrayForEach(x, bk)
		if (!cJSON_IsNumber(x) || x->valuedouble < 0)
			return false;
	return true;
}

/* A bound in ns as exact decimal seconds: 1000 -> "0.000001". */
static void
le_text(double ns, char *buf, size_t cap)
{
	uint64_t n = (uint64_t)ns;
	uint64_t s = n / 1000000000u, f = n % 1000000000u;
	int digits = 9;

	if (f == 0) {
		snprintf(buf, cap, "%llu", (unsigned long long)s);
		return;
	}
	while (f % 10 == 0) {
		f /= 10;
		digits--;
	}
	snprintf(buf, cap, "%llu.%0*llu", (unsigned long long)s, digits,
	    (unsigned long long)f);
}

/* Family name of histogram member key under prefix: _ns dropped,
 * _seconds added. */
static void
hist_name(char *dst, size_t cap, const char *prefix, const char *key)
{
	size_t n = strlen(key);

	if (n > 3 && strcmp(key + n - 3, "_ns") == 0)
		n -= 3;
	snprintf(dst, cap, "%s_%.*s_seconds", prefix, (int)n, key);
	for (char *p = dst; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		    *p == '_'))
			*p = '_';
}

static const char *
hist_help(const char *key)
{
	if (strcmp(key, "assembly_ns") == 0)
		return "Seconds from a batch's first packet to its publication";
	if (strcmp(key, "hold_ns") == 0)
		return "Seconds a consumer held a tensor, delivery to release";
	return "Histogram of the stats member of the same name, in seconds";
}

/* One histogram's samples; the _count is the +Inf bucket, so the two
 * always agree. */
static void
emit_hist(struct mbuf *b, const char *name, const cJSON *h,
	  const struct labels *l)
{
	const cJSON *le = member(h, "le_ns"), *bk = member(h, "buckets");
	int nle = cJSON_GetArraySize(le);
	double cum = 0;
	char bucket[200], buf[48];
	bool ok;

	snprintf(bucket, sizeof(bucket), "%s_bucket", name);
	for (int i = 0; i <= nle; i++) {
		cum += cJSON_GetArrayItem(bk, i)->valuedouble;
		if (i < nle)
			le_text(cJSON_GetArrayItem(le, i)->valuedouble, buf,
			    sizeof(buf));
		else
			snprintf(buf, sizeof(buf), "+Inf");
		mb_printf(b, "%s", bucket);
		mb_labels(b, l, "le", buf);
		mb_value(b, cum);
	}
	mb_printf(b, "%s_sum", name);
	mb_labels(b, l, NULL, NULL);
	mb_value(b, num(h, "sum_ns", &ok) / 1e9);
	mb_printf(b, "%s_count", name);
	mb_labels(b, l, NULL, NULL);
	mb_value(b, cum);
}

/* Histogram member keys of the objects of arr, each once, in order. */
static int
hist_keys(const cJSON *arr, const char **keys, int max)
{
	const cJSON *e, *c;
	int n = 0;

	cJSON_ArrayForEach(e, arr)
		cJSON_ArrayForEach(c, e) {
			int k;

			if (c->string == NULL || !is_histogram(c))
				continue;
			for (k = 0; k < n && strcmp(keys[k], c->string) != 0; k++)
				;
			if (k == n && n < max)
				keys[n++] = c->string;
		}
	return n;
}

#define MAX_HIST_KEYS 16

static void
emit_stream_hists(struct mbuf *b, const cJSON *stats)
{
	const cJSON *ss = member(stats, "streams"), *e;
	const char *keys[MAX_HIST_KEYS];
	int nk = hist_keys(ss, keys, MAX_HIST_KEYS);
	char name[160], iface[128];

	for (int k = 0; k < nk; k++) {
		hist_name(name, sizeof(name), "daqiri_stream", keys[k]);
		mb_header(b, name, "histogram", hist_help(keys[k]));
		cJSON_ArrayForEach(e, ss) {
			const cJSON *h = member(e, keys[k]);
			struct labels l = { 0 };

			if (!is_histogram(h))
				continue;
			split_name(str(e, "name"), iface, sizeof(iface));
			lab_add(&l, "interface", iface);
			lab_add(&l, "stream", str(e, "name"));
			emit_hist(b, name, h, &l);
		}
	}
}

/* --- consumers ------------------------------------------------------------- */

/* Subscriptions with the same (stream, consumer) summed into one. */
struct cons {
	const char *stream;
	char consumer[72];
	double delivered, released, overruns, held, pending, blocked, subs;
	const cJSON *hist[MAX_HIST_KEYS];	/* first of each key */
	double *hsum[MAX_HIST_KEYS];		/* summed buckets, sum_ns last */
};

static void
cons_free(struct cons *v, int n)
{
	for (int i = 0; i < n; i++)
		for (int k = 0; k < MAX_HIST_KEYS; k++)
			free(v[i].hsum[k]);
	free(v);
}

/* Add histogram h into slot k of c (bounds must match the first). */
static int
cons_add_hist(struct cons *c, int k, const cJSON *h)
{
	int nb = cJSON_GetArraySize(member(h, "buckets"));
	bool ok;

	if (c->hist[k] == NULL) {
		c->hist[k] = h;
		c->hsum[k] = calloc((size_t)nb + 1, sizeof(double));
		if (c->hsum[k] == NULL)
			return -ENOMEM;
	} else {
		const cJSON *a = member(c->hist[k], "le_ns");
		const cJSON *bb = member(h, "le_ns");

		if (cJSON_GetArraySize(a) != cJSON_GetArraySize(bb))
			return 0;
		for (int i = 0; i < cJSON_GetArraySize(a); i++)
			if (cJSON_GetArrayItem(a, i)->valuedouble !=
			    cJSON_GetArrayItem(bb, i)->valuedouble)
				return 0;
	}
	for (int i = 0; i < nb; i++)
		c->hsum[k][i] += cJSON_GetArrayItem(member(h, "buckets"),
		    i)->valuedouble;
	c->hsum[k][nb] += num(h, "sum_ns", &ok);
	return 0;
}

static int
emit_consumers(struct mbuf *b, const cJSON *consumers)
{
	const cJSON *arr = member(consumers, "consumers"), *e;
	const char *keys[MAX_HIST_KEYS];
	int nk = hist_keys(arr, keys, MAX_HIST_KEYS);
	int n = 0, cap = cJSON_GetArraySize(arr);
	struct cons *v = calloc((size_t)cap + 1, sizeof(*v));
	static const struct {
		const char *name;
		size_t off;
		bool counter;
		const char *help;
	} cf[] = {
		{ "daqiri_consumer_tensors_delivered_total",
		  offsetof(struct cons, delivered), true,
		  "Tensors put into the consumer's ring" },
		{ "daqiri_consumer_tensors_released_total",
		  offsetof(struct cons, released), true,
		  "Tensors the consumer released" },
		{ "daqiri_consumer_overruns_total",
		  offsetof(struct cons, overruns), true,
		  "Tensors the consumer missed for a full ring or quota" },
		{ "daqiri_consumer_buffers_held", offsetof(struct cons, held),
		  false, "Tensor buffers the consumer holds now" },
		{ "daqiri_consumer_tensors_pending",
		  offsetof(struct cons, pending), false,
		  "Tensors waiting, with their buffers, for a lossless "
		  "consumer's ring to have room, now" },
		{ "daqiri_consumer_blocked_total",
		  offsetof(struct cons, blocked), true,
		  "Buffer requests refused (no_buffer: batches, raw streams "
		  "packets) while the consumer held the most buffers" },
		{ "daqiri_consumer_subscriptions", offsetof(struct cons, subs),
		  false, "Subscriptions summed under this consumer label" },
	};

	if (v == NULL)
		return -ENOMEM;
	cJSON_ArrayForEach(e, arr) {
		const char *s = str(e, "stream"), *g = str(e, "group");
		char who[72];
		bool ok;
		int i;

		if (s == NULL)
			continue;
		if (g != NULL && g[0] != '\0')
			snprintf(who, sizeof(who), "%s", g);
		else
			snprintf(who, sizeof(who), "%.0f", num(e, "pid", &ok));
		for (i = 0; i < n; i++)
			if (strcmp(v[i].stream, s) == 0 &&
			    strcmp(v[i].consumer, who) == 0)
				break;
		if (i == n) {
			v[n].stream = s;
			memcpy(v[n].consumer, who, sizeof(who));
			n++;
		}
		v[i].delivered += num(e, "delivered", &ok);
		v[i].released += num(e, "released", &ok);
		v[i].overruns += num(e, "overruns", &ok);
		v[i].held += num(e, "held", &ok);
		/* absent from an older daemon: 0 */
		v[i].pending += num(e, "pending", &ok);
		v[i].blocked += num(e, "blocked", &ok);
		v[i].subs += 1;
		for (int k = 0; k < nk; k++) {
			const cJSON *h = member(e, keys[k]);

			if (is_histogram(h) && cons_add_hist(&v[i], k, h) != 0) {
				cons_free(v, n);
				return -ENOMEM;
			}
		}
	}
	for (size_t f = 0; n > 0 && f < sizeof(cf) / sizeof(cf[0]); f++) {
		mb_header(b, cf[f].name, cf[f].counter ? "counter" : "gauge",
		    cf[f].help);
		for (int i = 0; i < n; i++) {
			struct labels l = { 0 };

			lab_add(&l, "stream", v[i].stream);
			lab_add(&l, "consumer", v[i].consumer);
			mb_sample(b, cf[f].name, &l, *(const double *)(const void *)
			    ((const char *)&v[i] + cf[f].off));
		}
	}
	for (int k = 0; k < nk; k++) {
		char name[160];

		hist_name(name, sizeof(name), "daqiri_consumer", keys[k]);
		mb_header(b, name, "histogram", hist_help(keys[k]));
		for (int i = 0; i < n; i++) {
			struct labels l = { 0 };
			cJSON *h, *bk;
			int nb;

			if (v[i].hist[k] == NULL)
				continue;
			/* the summed copy, rendered like any histogram */
			nb = cJSON_GetArraySize(member(v[i].hist[k], "buckets"));
			h = cJSON_CreateObject();
			bk = cJSON_CreateDoubleArray(v[i].hsum[k], nb);
			if (h == NULL || bk == NULL ||
			    !cJSON_AddItemToObject(h, "buckets", bk) ||
			    !cJSON_AddItemReferenceToObject(h, "le_ns",
				(cJSON *)member(v[i].hist[k], "le_ns")) ||
			    cJSON_AddNumberToObject(h, "sum_ns",
				v[i].hsum[k][nb]) == NULL) {
				if (h == NULL)
					cJSON_Delete(bk);
				cJSON_Delete(h);
				cons_free(v, n);
				return -ENOMEM;
			}
			lab_add(&l, "stream", v[i].stream);
			lab_add(&l, "consumer", v[i].consumer);
			emit_hist(b, name, h, &l);
			cJSON_Delete(h);
		}
	}
	cons_free(v, n);
	return 0;
}

/* --- the whole text -------------------------------------------------------- */

static void
emit_build_info(struct mbuf *b, const cJSON *stats)
{
	const cJSON *d = member(stats, "daemon");
	struct labels l = { 0 };
	char proto[24];
	bool ok;
	double p = num(d, "protocol", &ok);

	snprintf(proto, sizeof(proto), "%.0f", p);
	lab_add(&l, "version", str(d, "version") != NULL ?
	    str(d, "version") : "unknown");
	lab_add(&l, "protocol", ok ? proto : "unknown");
	lab_add(&l, "cjson", str(d, "cjson"));
	lab_add(&l, "microhttpd", str(d, "microhttpd"));
	mb_header(b, "daqiri_build_info", "gauge",
	    "Always 1; the labels name daqirid's version, its protocol "
	    "version and the libraries it runs with");
	mb_sample(b, "daqiri_build_info", &l, 1);
}

int
daqiri_metrics_render(const cJSON *stats, const cJSON *consumers,
		      char **text, size_t *len)
{
	struct mbuf b = { .cap = 16384 };

	b.p = malloc(b.cap);
	if (b.p == NULL)
		return -ENOMEM;
	b.p[0] = '\0';
	emit_build_info(&b, stats);
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		bool hdr = false;

		for_each(&b, stats, families[i].scope, &families[i],
		    emit_sources, &hdr);
	}
	emit_drops(&b, stats);
	emit_tx_drops(&b, stats);
	emit_tx_channels(&b, stats);
	emit_stream_hists(&b, stats);
	if (consumers != NULL && emit_consumers(&b, consumers) != 0)
		b.oom = true;
	if (b.oom) {
		free(b.p);
		return -ENOMEM;
	}
	*text = b.p;
	*len = b.n;
	return 0;
}
