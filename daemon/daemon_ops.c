/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The main thread's answers to control requests: the control_ops table
 * control.c calls once a request has passed validation (streams, status,
 * stats, consumers, subscribe and unsubscribe with the daemon-wide
 * admission limits, a connection's end, flow list/add/del), and what the
 * main loop does when a worker cut a subscription off. Everything here
 * runs on the main thread, between two epoll waits; it reads the workers
 * and streams only through their snapshot and command functions.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "daemon_internal.h"
#include "engine_replay.h"
#include "flow.h"
#include "log.h"
#include "metrics.h"
#include "stream.h"
#include "tap.h"
#include "tx.h"
#include "txring.h"
#include "worker.h"

/* --- views: streams, status, stats, consumers ---------------------------- */

static struct stream *
find_stream(struct daemon *d, const char *name)
{
	struct stream *s;

	FOR_EACH_STREAM(d, s)
		if (strcmp(stream_name(s), name) == 0)
			return s;
	return NULL;
}

static int
op_streams(void *ctx, cJSON *reply, struct daqiri_err *err)
{
	struct daemon *d = ctx;
	struct stream *s;
	cJSON *arr = cJSON_AddArrayToObject(reply, "streams");

	if (arr == NULL)
		return -ENOMEM;
	FOR_EACH_STREAM(d, s) {
		cJSON *o = cJSON_CreateObject();

		if (o == NULL)
			return -ENOMEM;
		cJSON_AddItemToArray(arr, o);
		if (stream_info_json(s, o) != 0)
			return -ENOMEM;
	}
	return 0;
}

static int
count_subs(struct daemon *d)
{
	struct stream *s;
	int n = 0;

	FOR_EACH_STREAM(d, s)
		n += stream_nsubs(s);
	return n;
}

/* Every RX worker: queue, core, heartbeat age, and stale when the
 * watchdog rule counts it stuck. */
static int
workers_json(struct daemon *d, cJSON *reply)
{
	cJSON *a = cJSON_AddArrayToObject(reply, "workers");
	uint64_t now = daqiri_mono_ns();

	if (a == NULL)
		return -ENOMEM;
	for (int i = 0; i < d->nifs; i++)
		for (int q = 0; q < d->ifs[i].nworkers; q++) {
			struct worker *w = d->ifs[i].workers[q];
			uint64_t age = heartbeat_age(w, now);
			cJSON *o = cJSON_CreateObject();

			if (o == NULL || !cJSON_AddItemToArray(a, o) ||
			    cJSON_AddStringToObject(o, "queue",
				worker_queue_name(w)) == NULL ||
			    cJSON_AddNumberToObject(o, "core",
				worker_core(w)) == NULL ||
			    cJSON_AddStringToObject(o, "kind", "rx") == NULL ||
			    cJSON_AddNumberToObject(o, "heartbeat_age_ms",
				(double)(age / 1000000)) == NULL ||
			    cJSON_AddBoolToObject(o, "stale",
				age > d->stale_ns) == NULL)
				return -ENOMEM;
		}
	for (int i = 0; i < d->nifs; i++)
		for (int q = 0; q < d->ifs[i].ntx; q++) {
			struct tx_worker *w = d->ifs[i].txw[q];
			uint64_t age = tx_heartbeat_age(w, now);
			cJSON *o = cJSON_CreateObject();

			if (o == NULL || !cJSON_AddItemToArray(a, o) ||
			    cJSON_AddStringToObject(o, "queue",
				tx_worker_name(w)) == NULL ||
			    cJSON_AddNumberToObject(o, "core",
				tx_worker_core(w)) == NULL ||
			    cJSON_AddStringToObject(o, "kind", "tx") == NULL ||
			    cJSON_AddNumberToObject(o, "heartbeat_age_ms",
				(double)(age / 1000000)) == NULL ||
			    cJSON_AddBoolToObject(o, "stale",
				age > d->stale_ns) == NULL)
				return -ENOMEM;
		}
	return 0;
}

static int replay_json(struct daemon *d, cJSON *o);

static int
op_status(void *ctx, cJSON *reply, struct daqiri_err *err)
{
	struct daemon *d = ctx;
	int nstreams = 0, nqueues = 0;	/* as `streams` lists them, rx queues */
	int ntx = 0, nchan = 0;
	struct stream *s;
	cJSON *ctl;

	FOR_EACH_STREAM(d, s)
		nstreams++;
	for (int i = 0; i < d->nifs; i++) {
		nqueues += d->ifs[i].nworkers;
		ntx += d->ifs[i].ntx;
		for (int q = 0; q < d->ifs[i].ntx; q++)
			nchan += tx_worker_nchannels(d->ifs[i].txw[q]);
	}
	if (cJSON_AddStringToObject(reply, "daemon_version", DAQIRI_VERSION) == NULL ||
	    cJSON_AddStringToObject(reply, "state",
		d->stop ? "stopping" : "running") == NULL ||
	    cJSON_AddNumberToObject(reply, "pid", getpid()) == NULL ||
	    cJSON_AddNumberToObject(reply, "uptime_s",
		(double)(daqiri_mono_ns() - d->start_ns) / 1e9) == NULL ||
	    cJSON_AddStringToObject(reply, "config", d->config_file != NULL ?
		d->config_file : "<built-in default>") == NULL ||
	    cJSON_AddNumberToObject(reply, "reloads", (double)d->reloads) == NULL ||
	    cJSON_AddStringToObject(reply, "socket", d->socket_path) == NULL ||
	    cJSON_AddStringToObject(reply, "engine",
		d->nifs > 0 ? d->ifs[0].ops->name : "none") == NULL ||
	    cJSON_AddNumberToObject(reply, "interfaces", d->nifs) == NULL ||
	    cJSON_AddNumberToObject(reply, "rx_queues", nqueues) == NULL ||
	    cJSON_AddNumberToObject(reply, "tx_queues", ntx) == NULL ||
	    cJSON_AddNumberToObject(reply, "tx_channels", nchan) == NULL ||
	    cJSON_AddNumberToObject(reply, "streams", nstreams) == NULL ||
	    cJSON_AddNumberToObject(reply, "subscriptions", count_subs(d)) == NULL ||
	    cJSON_AddNumberToObject(reply, "watchdog_ms",
		(double)(d->wd_usec / 1000)) == NULL ||
	    cJSON_AddBoolToObject(reply, "watchdog_fed", d->wd_usec != 0 &&
		!d->wd_stuck) == NULL ||
	    workers_json(d, reply) != 0)
		return -ENOMEM;
	if (d->replay != NULL) {
		cJSON *rp = cJSON_AddObjectToObject(reply, "replay");

		if (rp == NULL || replay_json(d, rp) != 0)
			return -ENOMEM;
	}
	/* who is connected and who was turned away (attack 4 shows here) */
	ctl = cJSON_AddObjectToObject(reply, "control");
	return ctl == NULL ? -ENOMEM : control_counters_json(d->ctl, ctl);
}

/* A replay's state (daqirid --replay) into o: speed ("max" or the
 * multiple), hold, running, and per rx queue its file and progress. */
static int
replay_json(struct daemon *d, cJSON *o)
{
	cJSON *qs;
	bool running = true;

	for (int i = 0; i < d->nifs; i++)
		if (d->ifs[i].eng != NULL)
			running &= engine_replay_running(d->ifs[i].eng);
	if ((d->replay->speed > 0 ?
	    cJSON_AddNumberToObject(o, "speed", d->replay->speed) :
	    cJSON_AddStringToObject(o, "speed", "max")) == NULL ||
	    cJSON_AddBoolToObject(o, "hold", d->replay->hold) == NULL ||
	    cJSON_AddBoolToObject(o, "running", running) == NULL ||
	    (qs = cJSON_AddArrayToObject(o, "queues")) == NULL)
		return -ENOMEM;
	for (int i = 0; i < d->nifs; i++)
		if (d->ifs[i].eng != NULL &&
		    engine_replay_json(d->ifs[i].eng, qs) != 0)
			return -ENOMEM;
	return 0;
}

static int
op_replay(void *ctx, const struct daqiri_replay_req *req,
	  const struct control_peer *peer, cJSON *reply,
	  struct daqiri_err *err)
{
	struct daemon *d = ctx;
	bool was = true;
	cJSON *o;

	if (d->replay == NULL)
		return daqiri_err_set(err, DAQIRI_ST_NOT_SUPPORTED,
		    "this daqirid is not replaying (start it with --replay "
		    "INTERFACE/QUEUE=FILE.pcap)"), DAQIRI_ST_NOT_SUPPORTED;
	if (req->action == DAQIRI_REPLAY_START) {
		if (!peer->admin)
			return daqiri_err_set(err, DAQIRI_ST_PERMISSION_DENIED,
			    "replay start is for %s",
			    control_admin_hint(d->ctl)),
			    DAQIRI_ST_PERMISSION_DENIED;
		for (int i = 0; i < d->nifs; i++)
			if (d->ifs[i].eng != NULL &&
			    engine_replay_release(d->ifs[i].eng) == 0)
				was = false;
		if (!was)
			log_notice("pid %d (uid %u) starts the replay",
			    (int)peer->pid, (unsigned)peer->uid);
		if (cJSON_AddBoolToObject(reply, "was_running", was) == NULL)
			return -ENOMEM;
	}
	o = cJSON_AddObjectToObject(reply, "replay");
	return o == NULL ? -ENOMEM : replay_json(d, o);
}

/* The reorder streams rx queue q's worker feeds (cfg_rx_owner(), the
 * rule the workers follow), by name; a spread stream under each of its
 * queues. */
static int
queue_streams_json(const struct daemon_iface *di, int q, cJSON *qo)
{
	cJSON *a = cJSON_AddArrayToObject(qo, "streams");
	char name[DAQIRI_STREAM_NAME_MAX];

	if (a == NULL)
		return -ENOMEM;
	for (int j = 0; j < di->ifc->rx.nreorders; j++) {
		const struct cfg_reorder *r = &di->ifc->rx.reorders[j];
		cJSON *v;

		if (!(cfg_rx_owner_queues(di->ifc, r) & (1u << q)))
			continue;
		snprintf(name, sizeof(name), "%s/%s", di->ifc->name, r->name);
		if ((v = cJSON_CreateString(name)) == NULL ||
		    !cJSON_AddItemToArray(a, v))
			return -ENOMEM;
	}
	return 0;
}

static int verdict_json(struct stream *s, cJSON *o);

static int
interface_stats_json(struct daemon_iface *di, cJSON *o)
{
	uint64_t rx = 0, unmatched = 0, no_stream = 0, misrouted = 0, in = 0;
	uint64_t drops = 0, truncated = 0;
	cJSON *qs;

	if (cJSON_AddStringToObject(o, "name", di->ifc->name) == NULL ||
	    (qs = cJSON_AddArrayToObject(o, "queues")) == NULL)
		return -ENOMEM;
	for (int q = 0; q < di->nworkers; q++) {
		struct worker_counters c;
		cJSON *qo = cJSON_CreateObject();

		if (qo == NULL)
			return -ENOMEM;
		cJSON_AddItemToArray(qs, qo);
		if (worker_stats_json(di->workers[q], qo) != 0 ||
		    queue_streams_json(di, q, qo) != 0)
			return -ENOMEM;
		worker_snapshot(di->workers[q], &c);
		rx += c.rx_packets;
		unmatched += c.unmatched;
		no_stream += c.no_stream;
		misrouted += c.misrouted;
		drops += c.engine.kernel;
		truncated += c.engine.truncated;
		/* taken with rx_packets, so the sums agree at every read */
		in += c.streams_packets_in;
	}
	if (cJSON_AddNumberToObject(o, "rx_packets", (double)rx) == NULL ||
	    cJSON_AddNumberToObject(o, "streams_packets_in", (double)in) == NULL ||
	    cJSON_AddNumberToObject(o, "unmatched", (double)unmatched) == NULL ||
	    cJSON_AddNumberToObject(o, "no_stream", (double)no_stream) == NULL ||
	    cJSON_AddNumberToObject(o, "misrouted", (double)misrouted) == NULL ||
	    cJSON_AddNumberToObject(o, "kernel", (double)drops) == NULL ||
	    cJSON_AddNumberToObject(o, "truncated", (double)truncated) == NULL)
		return -ENOMEM;
	if (di->ntx > 0) {
		cJSON *tx = cJSON_AddObjectToObject(o, "tx"), *tq;

		if (tx == NULL || (tq = cJSON_AddArrayToObject(tx,
		    "queues")) == NULL)
			return -ENOMEM;
		for (int q = 0; q < di->ntx; q++) {
			cJSON *qo = cJSON_CreateObject();

			if (qo == NULL || !cJSON_AddItemToArray(tq, qo) ||
			    tx_worker_stats_json(di->txw[q], qo) != 0)
				return -ENOMEM;
		}
	}
	return 0;
}

/* Who answers: versions for daqiri_build_info, and the uptime. */
static int
daemon_json(struct daemon *d, cJSON *o)
{
	if (cJSON_AddStringToObject(o, "version", DAQIRI_VERSION) == NULL ||
	    cJSON_AddNumberToObject(o, "protocol", DAQIRI_PROTO_VERSION) == NULL ||
	    cJSON_AddStringToObject(o, "cjson", cJSON_Version()) == NULL ||
	    cJSON_AddStringToObject(o, "microhttpd",
		http_library_version()) == NULL ||
	    cJSON_AddNumberToObject(o, "uptime_s",
		(double)(daqiri_mono_ns() - d->start_ns) / 1e9) == NULL)
		return -ENOMEM;
	return 0;
}

static int
op_stats(void *ctx, cJSON *reply, struct daqiri_err *err)
{
	struct daemon *d = ctx;
	struct stream *s;
	cJSON *ifs, *ss, *ctl, *dm, *web;

	if ((dm = cJSON_AddObjectToObject(reply, "daemon")) == NULL ||
	    daemon_json(d, dm) != 0)
		return -ENOMEM;
	if (d->http != NULL && ((web = cJSON_AddObjectToObject(reply,
	    "http")) == NULL || http_counters_json(d->http, web) != 0))
		return -ENOMEM;
	if ((ifs = cJSON_AddArrayToObject(reply, "interfaces")) == NULL ||
	    (ss = cJSON_AddArrayToObject(reply, "streams")) == NULL ||
	    (ctl = cJSON_AddObjectToObject(reply, "control")) == NULL)
		return -ENOMEM;
	for (int i = 0; i < d->nifs; i++) {
		cJSON *o = cJSON_CreateObject();

		if (o == NULL)
			return -ENOMEM;
		cJSON_AddItemToArray(ifs, o);
		if (interface_stats_json(&d->ifs[i], o) != 0)
			return -ENOMEM;
	}
	FOR_EACH_STREAM(d, s) {
		cJSON *o = cJSON_CreateObject();

		if (o == NULL)
			return -ENOMEM;
		cJSON_AddItemToArray(ss, o);
		if (stream_stats_json(s, o) != 0 || verdict_json(s, o) != 0)
			return -ENOMEM;
	}
	return control_counters_json(d->ctl, ctl);
}

/* A reorder stream's verdict (doctor.c) beside its counters; a raw
 * stream has none. */
static int
verdict_json(struct stream *s, cJSON *o)
{
	const struct doctor *doc = stream_doctor(s);
	cJSON *v;

	if (!stream_is_reorder(s))
		return 0;
	if ((v = cJSON_AddObjectToObject(o, "verdict")) == NULL ||
	    cJSON_AddStringToObject(v, "state",
	    doctor_state_names[doc->state]) == NULL ||
	    cJSON_AddStringToObject(v, "why", doc->why[0] != '\0' ? doc->why :
	    "no look yet") == NULL)
		return -ENOMEM;
	return 0;
}

void
daemon_doctor(struct daemon *d, uint64_t now)
{
	for (int i = 0; i < d->nifs; i++) {
		struct daemon_iface *di = &d->ifs[i];
		uint64_t rx = 0;

		for (int q = 0; q < di->nworkers; q++) {
			struct worker_counters c;

			worker_snapshot(di->workers[q], &c);
			rx += c.rx_packets;
		}
		for (int j = 0; j < di->nstreams; j++) {
			struct stream *s = di->streams[j];
			struct doctor *doc = stream_doctor(s);
			struct reorder_counters rc;
			struct stream_counters sc;
			struct doctor_sample smp;
			enum doctor_state was = doc->state;

			stream_snapshot(s, &rc, &sc);
			smp.ns = now;
			smp.packets_in = rc.packets_in;
			smp.duplicate = rc.duplicate;
			smp.malformed = rc.malformed;
			smp.last_malformed_bytes = sc.last_malformed_bytes;
			smp.if_rx = rx;
			if (!doctor_look(doc, &smp, di->ifc, di->reorder_cfgs[j],
			    stream_live_nsubs(s, false, 0) > 0))
				continue;
			if (doc->state != DOCTOR_OK)
				log_warnx("stream '%s': %s", stream_name(s),
				    doc->why);
			else if (was != DOCTOR_WAITING)
				log_info("stream '%s': receiving again",
				    stream_name(s));
		}
	}
}

static int
op_consumers(void *ctx, cJSON *reply, struct daqiri_err *err)
{
	struct daemon *d = ctx;
	struct stream *s;
	cJSON *arr = cJSON_AddArrayToObject(reply, "consumers");

	if (arr == NULL)
		return -ENOMEM;
	FOR_EACH_STREAM(d, s)
		if (stream_consumers_json(s, arr) != 0)
			return -ENOMEM;
	return 0;
}

int
daemon_metrics_text(void *ctx, char **text, size_t *len)
{
	cJSON *st = cJSON_CreateObject(), *co = cJSON_CreateObject();
	struct daqiri_err err = { .status = DAQIRI_ST_OK };
	int rc = -ENOMEM;
	static long delay_ms = -1;

	/* test only (daqirid(8) DAQIRID_TEST_METRICS_DELAY_MS) */
	if (delay_ms < 0) {
		const char *e = getenv("DAQIRID_TEST_METRICS_DELAY_MS");

		delay_ms = e != NULL ? strtol(e, NULL, 10) : 0;
		if (delay_ms < 0 || delay_ms > 60000)
			delay_ms = 0;
	}
	if (delay_ms > 0) {
		struct timespec ts = { delay_ms / 1000,
			(delay_ms % 1000) * 1000000L };

		log_info("metrics: this build takes %ld ms longer (test only)",
		    delay_ms);
		nanosleep(&ts, NULL);
	}

	if (st != NULL && co != NULL && op_stats(ctx, st, &err) == 0 &&
	    op_consumers(ctx, co, &err) == 0)
		rc = daqiri_metrics_render(st, co, text, len);
	cJSON_Delete(st);
	cJSON_Delete(co);
	return rc;
}

/* --- subscriptions ---------------------------------------------------------- */

/* "no stream 'X'", with the closest name when one is close. */
static int
no_such_stream(struct daemon *d, const char *name, struct daqiri_err *err)
{
	const char *names[CFG_MAX_INTERFACES * (CFG_MAX_REORDERS +
	    CFG_MAX_QUEUES)], *near;
	struct stream *s;
	size_t n = 0;

	FOR_EACH_STREAM(d, s)
		if (n < sizeof(names) / sizeof(names[0]))
			names[n++] = stream_name(s);
	near = cfg_closest(name, strlen(name), names, n);
	if (near != NULL)
		return daqiri_err_set(err, DAQIRI_ST_NO_SUCH_STREAM,
		    "no stream '%s'; did you mean '%s'? (daqirictl streams "
		    "lists them)", name, near), DAQIRI_ST_NO_SUCH_STREAM;
	return daqiri_err_set(err, DAQIRI_ST_NO_SUCH_STREAM,
	    "no stream '%s' (daqirictl streams lists them)", name),
	    DAQIRI_ST_NO_SUCH_STREAM;
}

static int
op_subscribe(void *ctx, const struct daqiri_sub_req *req,
	     const struct control_peer *peer, struct daqiri_sub_info *info,
	     struct control_sub_fds *fds, struct daqiri_err *err)
{
	struct daemon *d = ctx;
	struct stream *s = find_stream(d, req->stream), *t;
	const struct cfg_daemon *dm = &d->cfg->daemon;
	uint32_t uid_most = stream_user_share(dm->max_consumers);
	int rc, mine = 0, live = 0, uid_live = 0;

	/* A lossless subscriber can stop a stream for everyone (its
	 * backlog takes the buffers): permission, before anything else. */
	if (req->policy == DAQIRI_POLICY_LOSSLESS && !peer->admin)
		return daqiri_err_set(err, DAQIRI_ST_PERMISSION_DENIED,
		    "policy \"lossless\" needs %s: a lossless subscriber "
		    "can stop the stream for everyone",
		    control_admin_hint(d->ctl)), DAQIRI_ST_PERMISSION_DENIED;
	if (s == NULL)
		return no_such_stream(d, req->stream, err);
	/* Subscriptions still ending do not count: they go at the worker's
	 * next loop. Root and the admin group may use the reserve beyond
	 * max_consumers; one unprivileged uid at most half of it. */
	FOR_EACH_STREAM(d, t) {
		live += stream_live_nsubs(t, false, 0);
		if (!peer->admin)
			uid_live += stream_live_nsubs(t, true, peer->uid);
	}
	if ((uint32_t)live >= dm->max_consumers + (peer->admin ?
	    dm->reserved_admin_connections : 0))
		return daqiri_err_set(err, DAQIRI_ST_TOO_MANY_CONSUMERS,
		    "daemon.max_consumers (%u) reached%s", dm->max_consumers,
		    peer->admin ? ", and the admin reserve" : ""),
		    DAQIRI_ST_TOO_MANY_CONSUMERS;
	if (!peer->admin && (uint32_t)uid_live >= uid_most)
		return daqiri_err_set(err, DAQIRI_ST_TOO_MANY_CONSUMERS,
		    "uid %u has %d subscriptions, the most one user may "
		    "have (half of daemon.max_consumers %u)",
		    (unsigned)peer->uid, uid_live, dm->max_consumers),
		    DAQIRI_ST_TOO_MANY_CONSUMERS;
	FOR_EACH_STREAM(d, t)
		mine += stream_conn_nsubs(t, peer->conn_id);
	if ((uint32_t)mine >= d->cfg->daemon.max_subscriptions_per_connection)
		return daqiri_err_set(err, DAQIRI_ST_TOO_MANY_CONSUMERS,
		    "this connection has %d subscriptions, the most "
		    "daemon.max_subscriptions_per_connection (%u) allows", mine,
		    d->cfg->daemon.max_subscriptions_per_connection),
		    DAQIRI_ST_TOO_MANY_CONSUMERS;
	if (++d->next_sub_id == 0)
		d->next_sub_id = 1;
	rc = stream_subscribe(s, req, peer, d->next_sub_id, info, fds->fd,
	    &fds->n, err);
	if (rc != 0)
		return err->status != DAQIRI_ST_OK ? (int)err->status : rc;
	log_info("consumer pid %d (uid %u) subscribed to '%s' as %u (%s, %s)",
	    (int)peer->pid, (unsigned)peer->uid, req->stream, info->sub_id,
	    daqiri_sub_mode_name(req->mode),
	    daqiri_sub_policy_name(req->policy));
	return 0;
}

static int
op_unsubscribe(void *ctx, const struct control_peer *peer, uint32_t sub_id,
	       struct daqiri_err *err)
{
	struct daemon *d = ctx;
	struct stream *s;
	int n = 0;

	if (sub_id == 0)
		return DAQIRI_ST_NO_SUCH_SUBSCRIPTION;
	FOR_EACH_STREAM(d, s)
		n += stream_unsubscribe(s, peer->conn_id, sub_id);
	return n > 0 ? 0 : DAQIRI_ST_NO_SUCH_SUBSCRIPTION;
}

static void
op_conn_closed(void *ctx, const struct control_peer *peer)
{
	struct daemon *d = ctx;
	struct stream *s;
	int n = 0;

	FOR_EACH_STREAM(d, s)
		n += stream_unsubscribe(s, peer->conn_id, 0);
	if (n > 0 && !d->stop)
		log_info("consumer pid %d gone: %d subscription(s) ended, their "
		    "buffers returned", (int)peer->pid, n);
	for (int i = 0; i < d->nifs; i++)
		for (int q = 0; q < d->ifs[i].nworkers; q++)
			(void)tap_stop(worker_tap(d->ifs[i].workers[q]),
			    peer->conn_id);
	n = 0;
	for (int i = 0; i < d->nifs; i++)
		for (int q = 0; q < d->ifs[i].ntx; q++)
			n += tx_channel_close(d->ifs[i].txw[q], peer->conn_id,
			    0);
	if (n > 0 && !d->stop)
		log_info("consumer pid %d gone: %d TX channel(s) closed",
		    (int)peer->pid, n);
}

/* --- TX channels ------------------------------------------------------------ */

/* "no such KIND 'NAME'", with the closest of names when one is close. */
static int
no_such_queue(const char *kind, const char *name, const char *const *names,
	      size_t n, struct daqiri_err *err)
{
	const char *near = cfg_closest(name, strlen(name), names, n);

	return daqiri_err_set(err, DAQIRI_ST_NO_SUCH_STREAM, "no such %s "
	    "'%s'%s%s%s (daqirictl status lists them)", kind, name,
	    near != NULL ? "; did you mean '" : "", near != NULL ? near : "",
	    near != NULL ? "'?" : ""), DAQIRI_ST_NO_SUCH_STREAM;
}

/* The TX worker of "<interface>/<tx queue>"; *iface_found says whether
 * the interface exists. */
static struct tx_worker *
find_txq(struct daemon *d, const char *name, bool *iface_found)
{
	const char *slash = strchr(name, '/');
	size_t il = slash != NULL ? (size_t)(slash - name) : strlen(name);

	*iface_found = false;
	for (int i = 0; i < d->nifs; i++) {
		struct daemon_iface *di = &d->ifs[i];

		if (di->ifc == NULL || strlen(di->ifc->name) != il ||
		    strncmp(di->ifc->name, name, il) != 0)
			continue;
		*iface_found = true;
		for (int q = 0; slash != NULL && q < di->ntx; q++)
			if (strcmp(tx_worker_name(di->txw[q]), name) == 0)
				return di->txw[q];
	}
	return NULL;
}

/* The buffers one channel of this queue may have: the queue's first
 * memory region's num_bufs (the configured size of its pool), at most
 * DAQIRI_TX_NBUFS_MAX. */
static uint32_t
txq_nbufs_limit(struct daemon *d, const char *name)
{
	for (int i = 0; i < d->nifs; i++) {
		const struct cfg_interface *ifc = d->ifs[i].ifc;

		for (int q = 0; ifc != NULL && q < d->ifs[i].ntx; q++) {
			const struct cfg_queue *cq = &ifc->tx.queues[q];
			uint32_t n = DAQIRI_TX_NBUFS_MAX;

			if (strcmp(tx_worker_name(d->ifs[i].txw[q]), name) != 0)
				continue;
			if (cq->nregions > 0 && cq->region_idx[0] >= 0 &&
			    cq->region_idx[0] < d->cfg->nregions &&
			    d->cfg->regions[cq->region_idx[0]].num_bufs < n)
				n = d->cfg->regions[cq->region_idx[0]].num_bufs;
			return n > 0 ? n : 1;
		}
	}
	return DAQIRI_TX_NBUFS_MAX;
}

static int
op_tx_open(void *ctx, const struct daqiri_tx_req *req,
	   const struct control_peer *peer, struct daqiri_tx_info *info,
	   struct control_sub_fds *fds, struct daqiri_err *err)
{
	struct daemon *d = ctx;
	bool iface;
	struct tx_worker *w = find_txq(d, req->queue, &iface);
	uint32_t limit, nbufs = req->nbufs;
	char msg[256] = "";
	int rc;

	if (!iface)
		return daqiri_err_set(err, DAQIRI_ST_NO_SUCH_INTERFACE,
		    "no interface for tx queue '%s' (\"<interface>/<tx "
		    "queue>\")", req->queue), DAQIRI_ST_NO_SUCH_INTERFACE;
	if (w == NULL) {
		const char *names[CFG_MAX_INTERFACES * CFG_MAX_QUEUES];
		size_t n = 0;

		for (int i = 0; i < d->nifs; i++)
			for (int q = 0; q < d->ifs[i].ntx; q++)
				names[n++] = tx_worker_name(d->ifs[i].txw[q]);
		return no_such_queue("tx queue", req->queue, names, n, err);
	}
	limit = txq_nbufs_limit(d, req->queue);
	if (nbufs == 0)
		nbufs = DAQIRI_TX_NBUFS_DEFAULT < limit ?
		    DAQIRI_TX_NBUFS_DEFAULT : limit;
	if (nbufs > limit)
		return daqiri_err_set(err, DAQIRI_ST_OUT_OF_RANGE,
		    "nbufs %u: tx queue '%s' allows at most %u (its memory "
		    "region's num_bufs)", nbufs, req->queue, limit),
		    DAQIRI_ST_OUT_OF_RANGE;
	if (++d->next_sub_id == 0)
		d->next_sub_id = 1;
	rc = tx_channel_open(w, peer->conn_id, d->next_sub_id, peer->pid,
	    nbufs, info, fds->fd, msg, sizeof(msg));
	if (rc != 0) {
		enum daqiri_status st = rc == -ENOSPC ?
		    DAQIRI_ST_NO_RESOURCES : rc == -EINVAL ?
		    DAQIRI_ST_OUT_OF_RANGE : daqiri_status_from_errno(rc);

		return daqiri_err_set(err, st, "%s", msg[0] != '\0' ? msg :
		    strerror(-rc)), (int)st;
	}
	fds->n = 3;
	log_info("consumer pid %d (uid %u) opened TX channel %u on '%s' "
	    "(%u buffers of %u bytes)", (int)peer->pid, (unsigned)peer->uid,
	    info->tx_id, req->queue, info->nbufs, info->buf_size);
	return 0;
}

static int
op_tx_close(void *ctx, const struct control_peer *peer, uint32_t tx_id,
	    struct daqiri_err *err)
{
	struct daemon *d = ctx;
	int n = 0;

	if (tx_id != 0)
		for (int i = 0; i < d->nifs; i++)
			for (int q = 0; q < d->ifs[i].ntx; q++)
				n += tx_channel_close(d->ifs[i].txw[q],
				    peer->conn_id, tx_id);
	if (n == 0)
		return daqiri_err_set(err, DAQIRI_ST_NO_SUCH_SUBSCRIPTION,
		    "this connection has no TX channel %u", tx_id),
		    DAQIRI_ST_NO_SUCH_SUBSCRIPTION;
	return 0;
}

/* --- taps ------------------------------------------------------------------- */

/* The rx worker of "<interface>/<rx queue>", or NULL after setting err
 * (with the closest name). */
static struct worker *
find_rxq(struct daemon *d, const char *name, struct daqiri_err *err)
{
	const char *names[CFG_MAX_INTERFACES * CFG_MAX_QUEUES];
	size_t n = 0;

	for (int i = 0; i < d->nifs; i++)
		for (int q = 0; q < d->ifs[i].nworkers; q++) {
			struct worker *w = d->ifs[i].workers[q];

			if (strcmp(worker_queue_name(w), name) == 0)
				return w;
			names[n++] = worker_queue_name(w);
		}
	no_such_queue("rx queue", name, names, n, err);
	return NULL;
}

static int
op_tap(void *ctx, const struct daqiri_tap_req *req,
       const struct control_peer *peer, cJSON *reply,
       struct control_sub_fds *fds, uint32_t *fd_id, struct daqiri_err *err)
{
	struct daemon *d = ctx;
	struct worker *w = find_rxq(d, req->queue, err);
	struct daqiri_tap_info info;
	struct tap *t;
	int rc = 0;

	if (w == NULL)
		return err->status;
	t = worker_tap(w);
	switch (req->action) {
	case DAQIRI_TAP_START:
		rc = tap_start(t, peer->conn_id, req->count, req->snap);
		if (rc == -EBUSY)
			return daqiri_err_set(err, DAQIRI_ST_NO_RESOURCES,
			    "rx queue '%s' is tapped by another connection "
			    "(one at a time); try again when it is done",
			    req->queue), DAQIRI_ST_NO_RESOURCES;
		if (rc == 0 && req->map) {
			/* the ring itself, for a reader that drains it in
			 * its own process */
			info = (struct daqiri_tap_info){ .gen = t->gen,
			    .records = t->ring.records,
			    .record_bytes = t->ring.rec_bytes,
			    .data_max = t->ring.data_max,
			    .ring_bytes = t->ring.bytes };
			if ((rc = tap_ring_fd(t, peer->conn_id)) >= 0) {
				fds->fd[0] = rc;
				fds->n = 1;
				*fd_id = t->gen;
				rc = daqiri_tap_info_encode(&info, reply);
			}
			if (rc < 0)
				(void)tap_stop(t, peer->conn_id);
		}
		if (rc == 0)
			log_info("pid %d (uid %u) taps rx queue '%s': %u "
			    "frames, %u bytes of each%s", (int)peer->pid,
			    (unsigned)peer->uid, req->queue, req->count,
			    req->snap, req->map ? ", shared ring" : "");
		break;
	case DAQIRI_TAP_READ:
		rc = tap_read(t, peer->conn_id, DAQIRI_TAP_READ_MAX, reply);
		break;
	case DAQIRI_TAP_STOP:
		rc = tap_stop(t, peer->conn_id);
		break;
	}
	if (rc == -ENOENT)
		return daqiri_err_set(err, DAQIRI_ST_BAD_REQUEST,
		    "this connection has no tap on rx queue '%s' (start one "
		    "first)", req->queue), DAQIRI_ST_BAD_REQUEST;
	if (rc != 0)
		return daqiri_err_set(err, daqiri_status_from_errno(rc),
		    "tap on '%s': %s", req->queue, strerror(-rc)),
		    (int)daqiri_status_from_errno(rc);
	return 0;
}

static int
op_trigger(void *ctx, const char *name, const struct control_peer *peer,
	   cJSON *reply, struct daqiri_err *err)
{
	struct daemon *d = ctx;
	struct stream *s = find_stream(d, name);
	uint64_t ns = daqiri_mono_ns(), n;

	if (s == NULL)
		return no_such_stream(d, name, err);
	n = stream_trigger(s, ns);
	log_info("pid %d (uid %u) triggers stream '%s' (trigger %llu)",
	    (int)peer->pid, (unsigned)peer->uid, name, (unsigned long long)n);
	if (cJSON_AddStringToObject(reply, "stream", name) == NULL ||
	    cJSON_AddNumberToObject(reply, "count", (double)n) == NULL ||
	    cJSON_AddNumberToObject(reply, "ns", (double)ns) == NULL)
		return daqiri_err_set(err, DAQIRI_ST_INTERNAL, "out of memory"),
		    DAQIRI_ST_INTERNAL;
	return 0;
}

/* --- flows ------------------------------------------------------------------ */

static int
flow_json(const struct flow_rule *r, cJSON *o)
{
	cJSON *q, *m;
	char buf[32];

	if (cJSON_AddNumberToObject(o, "id", r->id) == NULL ||
	    cJSON_AddStringToObject(o, "name", r->name) == NULL ||
	    (q = cJSON_AddArrayToObject(o, "queues")) == NULL ||
	    (m = cJSON_AddObjectToObject(o, "match")) == NULL)
		return -ENOMEM;
	for (int i = 0; i < r->nqueue_ids; i++)
		cJSON_AddItemToArray(q, cJSON_CreateNumber(r->queue_ids[i]));
	if (r->fields & FLOW_F_UDP_SRC) {
		snprintf(buf, sizeof(buf), "%u-%u", r->udp_src_lo, r->udp_src_hi);
		cJSON_AddStringToObject(m, "udp_src", buf);
	}
	if (r->fields & FLOW_F_UDP_DST) {
		snprintf(buf, sizeof(buf), "%u-%u", r->udp_dst_lo, r->udp_dst_hi);
		cJSON_AddStringToObject(m, "udp_dst", buf);
	}
	if (r->fields & FLOW_F_IPV4_LEN)
		cJSON_AddNumberToObject(m, "ipv4_len", r->ipv4_len);
	if (r->fields & FLOW_F_IPV4_SRC) {
		snprintf(buf, sizeof(buf), "%u.%u.%u.%u", r->ipv4_src >> 24,
		    (r->ipv4_src >> 16) & 255, (r->ipv4_src >> 8) & 255,
		    r->ipv4_src & 255);
		cJSON_AddStringToObject(m, "ipv4_src", buf);
	}
	if (r->fields & FLOW_F_IPV4_DST) {
		snprintf(buf, sizeof(buf), "%u.%u.%u.%u", r->ipv4_dst >> 24,
		    (r->ipv4_dst >> 16) & 255, (r->ipv4_dst >> 8) & 255,
		    r->ipv4_dst & 255);
		cJSON_AddStringToObject(m, "ipv4_dst", buf);
	}
	return 0;
}

static int
op_flow_list(void *ctx, const char *iface, cJSON *reply, struct daqiri_err *err)
{
	struct daemon *d = ctx;
	cJSON *arr = cJSON_AddArrayToObject(reply, "interfaces");
	bool found = iface[0] == '\0';

	if (arr == NULL)
		return -ENOMEM;
	for (int i = 0; i < d->nifs; i++) {
		const struct flow_table *t = d->ifs[i].flows;
		cJSON *o, *fl;

		if (iface[0] != '\0' && strcmp(iface, d->ifs[i].ifc->name) != 0)
			continue;
		/* a transmit-only interface has no rx flows */
		if (t == NULL) {
			if (iface[0] == '\0')
				continue;
			return daqiri_err_set(err, DAQIRI_ST_NO_SUCH_INTERFACE,
			    "interface '%s' has no rx queues (transmit only), "
			    "so no flows", iface), DAQIRI_ST_NO_SUCH_INTERFACE;
		}
		found = true;
		if ((o = cJSON_CreateObject()) == NULL)
			return -ENOMEM;
		cJSON_AddItemToArray(arr, o);
		if (cJSON_AddStringToObject(o, "name", d->ifs[i].ifc->name) == NULL ||
		    cJSON_AddBoolToObject(o, "flow_isolation", t->isolation) == NULL ||
		    cJSON_AddStringToObject(o, "classified", "software") == NULL ||
		    (fl = cJSON_AddArrayToObject(o, "flows")) == NULL)
			return -ENOMEM;
		for (uint32_t r = 0; r < t->nrules; r++) {
			cJSON *fo = cJSON_CreateObject();

			if (fo == NULL)
				return -ENOMEM;
			cJSON_AddItemToArray(fl, fo);
			if (flow_json(&t->rules[r], fo) != 0)
				return -ENOMEM;
		}
	}
	if (!found)
		return daqiri_err_set(err, DAQIRI_ST_NO_SUCH_INTERFACE,
		    "no interface '%s'", iface), DAQIRI_ST_NO_SUCH_INTERFACE;
	return 0;
}

static struct daemon_iface *
find_interface(struct daemon *d, const char *name)
{
	for (int i = 0; i < d->nifs; i++)
		if (strcmp(d->ifs[i].ifc->name, name) == 0)
			return &d->ifs[i];
	return NULL;
}

/* Give every worker of di a copy of table t; then t becomes di's table. */
static int
flows_install(struct daemon *d, struct daemon_iface *di, struct flow_table *t,
	      struct daqiri_err *err)
{
	struct flow_change *change[CFG_MAX_QUEUES];
	int q;

	/* All or none: no worker may still be taking the previous change. */
	for (q = 0; q < di->nworkers; q++)
		if (worker_flows_busy(di->workers[q])) {
			flow_table_free(t);
			return daqiri_err_set(err, DAQIRI_ST_BUSY, "interface "
			    "'%s' is still taking the previous flow change; try "
			    "again", di->ifc->name), DAQIRI_ST_BUSY;
		}
	/* Every worker's copy made before any is posted: a copy that cannot
	 * be made leaves every queue on the old table. */
	for (q = 0; q < di->nworkers; q++) {
		change[q] = worker_flows_prepare(di->workers[q], t);
		if (change[q] == NULL) {
			int rc = errno == EBUSY ? -EBUSY : -ENOMEM;

			while (q-- > 0)
				worker_flows_discard(change[q]);
			flow_table_free(t);
			return rc;
		}
	}
	for (q = 0; q < di->nworkers; q++)
		worker_flows_post(di->workers[q], change[q]);
	flow_table_free(di->flows);
	di->flows = t;
	daemon_steer(d->cfg, di);
	return 0;
}

/*
 * An interface holds at most its configured flows plus
 * rx.dynamic_flow_capacity at run time (a deleted flow makes room for
 * another), and never more than FLOW_MAX_RULES. Returns 0 when one more
 * fits, else the status, with err saying which key to raise and where.
 */
static int
flow_room(const struct daemon *d, const struct daemon_iface *di,
	  struct daqiri_err *err)
{
	const struct cfg_rx *rx = &di->ifc->rx;
	uint64_t limit = (uint64_t)rx->nflows + rx->dynamic_flow_capacity;
	const char *file = d->config_file != NULL ? d->config_file :
	    "a file given with -c (this daqirid runs the built-in default)";

	if (di->flows->nrules >= FLOW_MAX_RULES)
		return daqiri_err_set(err, DAQIRI_ST_NO_RESOURCES,
		    "interface '%s' holds %u flows, the most an interface "
		    "takes", di->ifc->name, (unsigned)di->flows->nrules),
		    DAQIRI_ST_NO_RESOURCES;
	if (di->flows->nrules < limit)
		return 0;
	if (rx->dynamic_flow_capacity == 0)
		return daqiri_err_set(err, DAQIRI_ST_NO_RESOURCES,
		    "dynamic_flow_capacity 0 allows no flows added at run "
		    "time beyond the %d configured; raise it in interface "
		    "'%s' of %s", rx->nflows, di->ifc->name, file),
		    DAQIRI_ST_NO_RESOURCES;
	return daqiri_err_set(err, DAQIRI_ST_NO_RESOURCES,
	    "interface '%s' holds %u flows, its %d configured and "
	    "dynamic_flow_capacity %u; raise it in interface '%s' of %s",
	    di->ifc->name, (unsigned)di->flows->nrules, rx->nflows,
	    (unsigned)rx->dynamic_flow_capacity, di->ifc->name, file),
	    DAQIRI_ST_NO_RESOURCES;
}

static int
op_flow_add(void *ctx, const struct daqiri_flow_req *req,
	    const struct control_peer *peer, cJSON *reply,
	    struct daqiri_err *err)
{
	struct daemon *d = ctx;
	struct daemon_iface *di = find_interface(d, req->iface);
	struct cfg_flow cf;
	struct flow_table *t;
	cJSON *o;
	int rc;

	if (di == NULL || di->flows == NULL)
		return daqiri_err_set(err, DAQIRI_ST_NO_SUCH_INTERFACE,
		    "no interface '%s' with rx queues", req->iface),
		    DAQIRI_ST_NO_SUCH_INTERFACE;
	if (flow_table_find(di->flows, req->id) >= 0)
		return daqiri_err_set(err, DAQIRI_ST_EXISTS, "interface '%s' "
		    "has a flow %u already", req->iface, req->id),
		    DAQIRI_ST_EXISTS;
	if (req->nqueues < 1 || req->nqueues > CFG_MAX_QUEUE_IDS)
		return daqiri_err_set(err, DAQIRI_ST_OUT_OF_RANGE,
		    "a flow targets 1 to %d queues", CFG_MAX_QUEUE_IDS),
		    DAQIRI_ST_OUT_OF_RANGE;
	if ((rc = flow_room(d, di, err)) != 0)
		return rc;
	memset(&cf, 0, sizeof(cf));
	snprintf(cf.name, sizeof(cf.name), "%s", req->name);
	cf.id = req->id;
	cf.nqueue_ids = req->nqueues;
	for (int i = 0; i < req->nqueues; i++) {
		bool found = false;

		for (int q = 0; q < di->ifc->rx.nqueues; q++)
			found |= di->ifc->rx.queues[q].id == req->queues[i];
		if (!found)
			return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
			    "interface '%s' has no rx queue %u", req->iface,
			    req->queues[i]), DAQIRI_ST_BAD_FIELD;
		cf.queue_ids[i] = req->queues[i];
	}
	cf.match.has_udp_src = req->has_udp_src;
	cf.match.udp_src_lo = req->udp_src_lo;
	cf.match.udp_src_hi = req->udp_src_hi;
	cf.match.has_udp_dst = req->has_udp_dst;
	cf.match.udp_dst_lo = req->udp_dst_lo;
	cf.match.udp_dst_hi = req->udp_dst_hi;
	cf.match.has_ipv4_len = req->has_ipv4_len;
	cf.match.ipv4_len = req->ipv4_len;
	cf.match.has_ipv4_src = req->has_ipv4_src;
	cf.match.ipv4_src = req->ipv4_src;
	cf.match.has_ipv4_dst = req->has_ipv4_dst;
	cf.match.ipv4_dst = req->ipv4_dst;
	cf.has_match = req->has_udp_src || req->has_udp_dst ||
	    req->has_ipv4_len || req->has_ipv4_src || req->has_ipv4_dst;

	t = flow_table_clone(di->flows, 1);
	if (t == NULL)
		return -ENOMEM;
	rc = flow_table_add(t, &cf);
	if (rc != 0) {
		flow_table_free(t);
		return daqiri_err_set(err, rc == -ENOSPC ?
		    DAQIRI_ST_NO_RESOURCES : DAQIRI_ST_EXISTS, "flow %u: %s",
		    req->id, strerror(-rc)), rc == -ENOSPC ?
		    DAQIRI_ST_NO_RESOURCES : DAQIRI_ST_EXISTS;
	}
	rc = flows_install(d, di, t, err);
	if (rc != 0)
		return rc;
	log_info("flow %u added on '%s' by pid %d (uid %u)", req->id,
	    req->iface, (int)peer->pid, (unsigned)peer->uid);
	o = cJSON_AddObjectToObject(reply, "flow");
	if (o == NULL)
		return -ENOMEM;
	return flow_json(&di->flows->rules[di->flows->nrules - 1], o);
}

static int
op_flow_del(void *ctx, const struct daqiri_flow_req *req,
	    const struct control_peer *peer, cJSON *reply,
	    struct daqiri_err *err)
{
	struct daemon *d = ctx;
	struct daemon_iface *di = find_interface(d, req->iface);
	struct flow_table *t;
	int rc;

	if (di == NULL || di->flows == NULL)
		return daqiri_err_set(err, DAQIRI_ST_NO_SUCH_INTERFACE,
		    "no interface '%s' with rx queues", req->iface),
		    DAQIRI_ST_NO_SUCH_INTERFACE;
	if (flow_table_find(di->flows, req->id) < 0)
		return daqiri_err_set(err, DAQIRI_ST_NO_SUCH_FLOW, "interface "
		    "'%s' has no flow %u", req->iface, req->id),
		    DAQIRI_ST_NO_SUCH_FLOW;
	t = flow_table_clone(di->flows, 0);
	if (t == NULL)
		return -ENOMEM;
	(void)flow_table_del(t, req->id);
	rc = flows_install(d, di, t, err);
	if (rc != 0)
		return rc;
	log_info("flow %u deleted on '%s' by pid %d (uid %u)", req->id,
	    req->iface, (int)peer->pid, (unsigned)peer->uid);
	return 0;
}

/* --- reload and the running config ---------------------------------------- */

static int
add_where(cJSON *o, const char *file, struct cfg_pos pos)
{
	char where[CFG_PATH_MAX + 32];

	if (pos.line > 0)
		snprintf(where, sizeof(where), "%s:%d:%d", file, pos.line,
		    pos.col);
	else
		snprintf(where, sizeof(where), "%s", file);
	return cJSON_AddStringToObject(o, "where", where) == NULL ? -ENOMEM : 0;
}

/* The outcome is the payload, refused or not: the reply says "ok" when
 * the request was carried out, and "outcome" what became of the file. */
static int
op_reload(void *ctx, const struct control_peer *peer, cJSON *reply,
	  struct daqiri_err *err)
{
	static struct reload_result r;	/* big */
	struct daemon *d = ctx;
	cJSON *ch, *dg;

	log_notice("reload asked by pid %d (uid %u)", (int)peer->pid,
	    (unsigned)peer->uid);
	(void)daemon_reload(d, &r);
	daemon_reload_log(&r);
	if (cJSON_AddStringToObject(reply, "outcome",
	    reload_outcome_names[r.outcome]) == NULL ||
	    cJSON_AddStringToObject(reply, "config", r.file) == NULL ||
	    cJSON_AddStringToObject(reply, "reason", r.reason) == NULL ||
	    (ch = cJSON_AddArrayToObject(reply, "changes")) == NULL ||
	    (dg = cJSON_AddArrayToObject(reply, "diagnostics")) == NULL)
		return -ENOMEM;
	for (int i = 0; i < r.changes.n; i++) {
		const struct cfg_change *c = &r.changes.ch[i];
		cJSON *o = cJSON_CreateObject();

		if (o == NULL || !cJSON_AddItemToArray(ch, o) ||
		    add_where(o, r.file, c->pos) != 0 ||
		    cJSON_AddStringToObject(o, "kind", c->live ? "live" :
			"restart") == NULL ||
		    cJSON_AddStringToObject(o, "change", c->msg) == NULL)
			return -ENOMEM;
	}
	for (int i = 0; i < r.diags.ndiags; i++) {
		const struct cfg_diag *g = &r.diags.diags[i];
		cJSON *o = cJSON_CreateObject();

		if (o == NULL || !cJSON_AddItemToArray(dg, o) ||
		    add_where(o, r.file, g->pos) != 0 ||
		    cJSON_AddStringToObject(o, "severity", g->severity ==
			CFG_SEV_ERROR ? "error" : "warning") == NULL ||
		    cJSON_AddStringToObject(o, "message", g->msg) == NULL)
			return -ENOMEM;
	}
	return 0;
}

/* The running config as -n -v prints it, one array element per line
 * (top-level arrays are what a reply in parts may cut). */
static int
op_config(void *ctx, cJSON *reply, struct daqiri_err *err)
{
	struct daemon *d = ctx;
	char *text = NULL, *line, *end;
	size_t len = 0;
	FILE *fp = open_memstream(&text, &len);
	cJSON *a;
	int rc = 0;

	if (fp == NULL)
		return -ENOMEM;
	if (cfg_print(d->cfg, fp) != 0 || fclose(fp) != 0) {
		free(text);
		return -ENOMEM;
	}
	if (cJSON_AddStringToObject(reply, "config", d->config_file != NULL ?
	    d->config_file : "<built-in default>") == NULL ||
	    cJSON_AddNumberToObject(reply, "reloads", (double)d->reloads) == NULL ||
	    (a = cJSON_AddArrayToObject(reply, "lines")) == NULL)
		rc = -ENOMEM;
	/* every line, empty ones too: the client prints them back as they are */
	for (line = text; rc == 0 && line < text + len; line = end + 1) {
		end = memchr(line, '\n', (size_t)(text + len - line));
		if (end == NULL)
			end = text + len;
		*end = '\0';
		if (!cJSON_AddItemToArray(a, cJSON_CreateString(line)))
			rc = -ENOMEM;
	}
	free(text);
	return rc;
}

/* --- what the rest of the daemon calls ------------------------------------- */

const struct control_ops daemon_control_ops = {
	.streams = op_streams,
	.status = op_status,
	.stats = op_stats,
	.consumers = op_consumers,
	.subscribe = op_subscribe,
	.unsubscribe = op_unsubscribe,
	.conn_closed = op_conn_closed,
	.flow_list = op_flow_list,
	.flow_add = op_flow_add,
	.flow_del = op_flow_del,
	.reload = op_reload,
	.config = op_config,
	.tx_open = op_tx_open,
	.tx_close = op_tx_close,
	.tap = op_tap,
	.trigger = op_trigger,
	.replay = op_replay,
};

/* A worker cut a subscription off (a corrupt ring, a buffer held too
 * long): tell the consumer why and end that subscription; everything
 * else carries on. */
void
daemon_sub_broken(void *ctx, uint64_t conn_id, uint32_t sub_id,
		  const char *why)
{
	struct daemon *d = ctx;
	const struct control_peer *p = control_peer_find(d->ctl, conn_id);
	struct stream *s;
	int n = 0;

	log_warnx("consumer pid %d, subscription %u: %s; ending that "
	    "subscription", p != NULL ? (int)p->pid : -1, sub_id, why);
	/* Only the subscription ends: the connection stays, so the event
	 * is never lost in a close, and the consumer's other subscriptions
	 * go on. Its buffers are already back in the stream. */
	control_sub_closed(d->ctl, conn_id, sub_id, DAQIRI_ST_BAD_REQUEST, why);
	FOR_EACH_STREAM(d, s)
		n += stream_unsubscribe(s, conn_id, sub_id);
	/* A full command queue: the connection's end frees it instead */
	if (n == 0)
		control_close_conn(d->ctl, conn_id);
}

/* A TX worker cut a channel off (its ring positions were impossible):
 * tell the consumer and close that channel; the connection and its
 * other channels and subscriptions go on. */
void
daemon_tx_broken(void *ctx, uint64_t conn_id, uint32_t tx_id,
		 const char *why)
{
	struct daemon *d = ctx;
	const struct control_peer *p = control_peer_find(d->ctl, conn_id);

	log_warnx("consumer pid %d, TX channel %u: %s; closing that channel",
	    p != NULL ? (int)p->pid : -1, tx_id, why);
	control_tx_closed(d->ctl, conn_id, tx_id, DAQIRI_ST_BAD_REQUEST, why);
	for (int i = 0; i < d->nifs; i++)
		for (int q = 0; q < d->ifs[i].ntx; q++)
			(void)tx_channel_close(d->ifs[i].txw[q], conn_id, tx_id);
}
