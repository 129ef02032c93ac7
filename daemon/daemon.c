/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The running daemon: memory regions, engines, flow tables, streams and
 * RX workers brought up in that order (and down in reverse), then one
 * epoll loop on the main thread for the control socket, signals (through
 * signalfd) and a timer that reaps subscriptions and feeds the systemd
 * watchdog. The main thread never touches packet data.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "control.h"
#include "daemon.h"
#include "engine.h"
#include "flow.h"
#include "log.h"
#include "mem.h"
#include "reorder_cuda.h"
#include "stream.h"
#include "worker.h"

#define ERRLEN	256
/* fds of regions, engines, workers, epoll and timers, above the
 * connections' and subscriptions' */
#define DAEMON_FD_MARGIN	256

/* One configured interface as it runs: its engine, its flow table, its
 * streams and one RX worker per rx queue. */
struct daemon_iface {
	const struct cfg_interface *ifc;
	const struct engine_ops *ops;
	struct engine *eng;
	struct flow_table *flows;	/* main's copy; each worker has its own */
	int nstreams;			/* reorder streams */
	struct stream *streams[CFG_MAX_REORDERS];
	const struct cfg_reorder *reorder_cfgs[CFG_MAX_REORDERS]; /* of streams[] */
	int nworkers;
	struct worker *workers[CFG_MAX_QUEUES];
	struct stream *raws[CFG_MAX_QUEUES];	/* per rx queue */
};

struct daemon {
	const struct cfg *cfg;
	const char *config_file;
	const char *socket_path;
	uint64_t start_ns;
	struct mem_region regions[CFG_MAX_REGIONS];
	bool regions_made;
	int nifs;
	struct daemon_iface ifs[CFG_MAX_INTERFACES];
	struct control *ctl;
	int epfd;
	int sigfd;
	int tick_fd;
	uint32_t next_sub_id;
	uint64_t wd_usec;		/* systemd watchdog interval, 0 = off */
	uint64_t last_wd_ns;
	uint64_t stale_ns;		/* a heartbeat older than this: stuck */
	bool wd_stuck;			/* not feeding: a worker is stuck */
	uint64_t last_status_ns;
	bool stop;
};

/* Reorder streams first, then the raw stream of every rx queue. */
static struct stream *
iface_stream_at(struct daemon_iface *di, int j)
{
	if (j < di->nstreams)
		return di->streams[j];
	return j - di->nstreams < di->nworkers ? di->raws[j - di->nstreams] :
	    NULL;
}

#define FOR_EACH_STREAM(d, s)						\
	for (int _i = 0; _i < (d)->nifs; _i++)				\
		for (int _j = 0;					\
		    ((s) = iface_stream_at(&(d)->ifs[_i], _j)) != NULL; _j++)

static struct stream *
find_stream(struct daemon *d, const char *name)
{
	struct stream *s;

	FOR_EACH_STREAM(d, s)
		if (strcmp(stream_name(s), name) == 0)
			return s;
	return NULL;
}

/* --- control callbacks ----------------------------------------------------- */

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

/* Age of a worker's heartbeat at now (0 when it beat after now). */
static uint64_t
heartbeat_age(const struct worker *w, uint64_t now)
{
	uint64_t b = worker_heartbeat_ns(w);

	return now > b ? now - b : 0;
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
			    cJSON_AddNumberToObject(o, "heartbeat_age_ms",
				(double)(age / 1000000)) == NULL ||
			    cJSON_AddBoolToObject(o, "stale",
				age > d->stale_ns) == NULL)
				return -ENOMEM;
		}
	return 0;
}

static int
op_status(void *ctx, cJSON *reply, struct daqiri_err *err)
{
	struct daemon *d = ctx;
	int nstreams = 0, nqueues = 0;	/* reorder streams, rx queues */
	cJSON *ctl;

	for (int i = 0; i < d->nifs; i++) {
		nstreams += d->ifs[i].nstreams;
		nqueues += d->ifs[i].nworkers;
	}
	if (cJSON_AddStringToObject(reply, "daemon_version", DAQIRI_VERSION) == NULL ||
	    cJSON_AddStringToObject(reply, "state",
		d->stop ? "stopping" : "running") == NULL ||
	    cJSON_AddNumberToObject(reply, "pid", getpid()) == NULL ||
	    cJSON_AddNumberToObject(reply, "uptime_s",
		(double)(daqiri_mono_ns() - d->start_ns) / 1e9) == NULL ||
	    cJSON_AddStringToObject(reply, "config", d->config_file != NULL ?
		d->config_file : "<built-in default>") == NULL ||
	    cJSON_AddStringToObject(reply, "socket", d->socket_path) == NULL ||
	    cJSON_AddStringToObject(reply, "engine",
		d->nifs > 0 ? d->ifs[0].ops->name : "none") == NULL ||
	    cJSON_AddNumberToObject(reply, "interfaces", d->nifs) == NULL ||
	    cJSON_AddNumberToObject(reply, "rx_queues", nqueues) == NULL ||
	    cJSON_AddNumberToObject(reply, "streams", nstreams) == NULL ||
	    cJSON_AddNumberToObject(reply, "subscriptions", count_subs(d)) == NULL ||
	    cJSON_AddNumberToObject(reply, "watchdog_ms",
		(double)(d->wd_usec / 1000)) == NULL ||
	    cJSON_AddBoolToObject(reply, "watchdog_fed", d->wd_usec != 0 &&
		!d->wd_stuck) == NULL ||
	    workers_json(d, reply) != 0)
		return -ENOMEM;
	/* who is connected and who was turned away (attack 4 shows here) */
	ctl = cJSON_AddObjectToObject(reply, "control");
	return ctl == NULL ? -ENOMEM : control_counters_json(d->ctl, ctl);
}

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
		if (worker_stats_json(di->workers[q], qo) != 0)
			return -ENOMEM;
		worker_snapshot(di->workers[q], &c);
		rx += c.rx_packets;
		unmatched += c.unmatched;
		no_stream += c.no_stream;
		misrouted += c.misrouted;
		drops += c.engine.kernel_drops;
		truncated += c.engine.truncated;
		/* taken with rx_packets, so the sums agree at every read */
		in += c.streams_packets_in;
	}
	if (cJSON_AddNumberToObject(o, "rx_packets", (double)rx) == NULL ||
	    cJSON_AddNumberToObject(o, "streams_packets_in", (double)in) == NULL ||
	    cJSON_AddNumberToObject(o, "unmatched", (double)unmatched) == NULL ||
	    cJSON_AddNumberToObject(o, "no_stream", (double)no_stream) == NULL ||
	    cJSON_AddNumberToObject(o, "misrouted", (double)misrouted) == NULL ||
	    cJSON_AddNumberToObject(o, "kernel_drops", (double)drops) == NULL ||
	    cJSON_AddNumberToObject(o, "truncated", (double)truncated) == NULL)
		return -ENOMEM;
	return 0;
}

static int
op_stats(void *ctx, cJSON *reply, struct daqiri_err *err)
{
	struct daemon *d = ctx;
	struct stream *s;
	cJSON *ifs, *ss, *ctl;

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
		if (stream_stats_json(s, o) != 0)
			return -ENOMEM;
	}
	return control_counters_json(d->ctl, ctl);
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

	if (s == NULL)
		return daqiri_err_set(err, DAQIRI_ST_NO_SUCH_STREAM,
		    "no stream '%s' (daqirictl streams lists them)",
		    req->stream), DAQIRI_ST_NO_SUCH_STREAM;
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
	log_info("consumer pid %d (uid %u) subscribed to '%s' as %u (%s)",
	    (int)peer->pid, (unsigned)peer->uid, req->stream, info->sub_id,
	    daqiri_sub_mode_name(req->mode));
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
}

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
flows_install(struct daemon_iface *di, struct flow_table *t,
	      struct daqiri_err *err)
{
	/* All or none: no worker may still be taking the previous change. */
	for (int q = 0; q < di->nworkers; q++)
		if (worker_flows_busy(di->workers[q])) {
			flow_table_free(t);
			return daqiri_err_set(err, DAQIRI_ST_BUSY, "interface "
			    "'%s' is still taking the previous flow change; try "
			    "again", di->ifc->name), DAQIRI_ST_BUSY;
		}
	for (int q = 0; q < di->nworkers; q++) {
		int rc = worker_set_flows(di->workers[q], t);

		if (rc != 0) {
			flow_table_free(t);
			return rc;
		}
	}
	flow_table_free(di->flows);
	di->flows = t;
	return 0;
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
	rc = flows_install(di, t, err);
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
	rc = flows_install(di, t, err);
	if (rc != 0)
		return rc;
	log_info("flow %u deleted on '%s' by pid %d (uid %u)", req->id,
	    req->iface, (int)peer->pid, (unsigned)peer->uid);
	return 0;
}

static const struct control_ops daemon_control_ops = {
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
};

/* A worker cut a subscription off (a corrupt ring, a buffer held too
 * long): tell the consumer why and end that subscription; everything
 * else carries on. */
static void
sub_broken(void *ctx, uint64_t conn_id, uint32_t sub_id, const char *why)
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

/* --- bring-up -------------------------------------------------------------- */

/* A tensor region belongs to one stream and nothing else. */
static int
check_region_owners(const struct cfg *c)
{
	int owner[CFG_MAX_REGIONS];

	for (int r = 0; r < CFG_MAX_REGIONS; r++)
		owner[r] = -1;
	for (int i = 0; i < c->ninterfaces; i++) {
		const struct cfg_rx *rx = &c->interfaces[i].rx;

		for (int j = 0; j < rx->nreorders; j++) {
			int r = rx->reorders[j].region_idx;

			if (owner[r] >= 0) {
				log_warnx("memory region '%s' is the output of two "
				    "reorder configs; give each its own region",
				    c->regions[r].name);
				return -1;
			}
			owner[r] = i * CFG_MAX_REORDERS + j;
		}
		for (int q = 0; q < rx->nqueues; q++)
			for (int k = 0; k < rx->queues[q].nregions; k++) {
				int r = rx->queues[q].region_idx[k];

				if (owner[r] >= 0) {
					log_warnx("memory region '%s' is both a "
					    "reorder output and a receive region "
					    "of queue '%s'", c->regions[r].name,
					    rx->queues[q].name);
					return -1;
				}
			}
	}
	return 0;
}

static const struct reorder_backend *
backend_for(const struct cfg_interface *ifc, const struct cfg_reorder *r)
{
	char why[ERRLEN];

	if (r->type == CFG_REORDER_CPU)
		return &reorder_backend_cpu;
	if (reorder_cuda_backend() == NULL) {
		log_warnx("reorder config '%s/%s': reorder_type gpu: %s",
		    ifc->name, r->name, reorder_cuda_last_error());
		return NULL;
	}
	if (!gpu_available(why, sizeof(why))) {
		log_warnx("reorder config '%s/%s': reorder_type gpu: %s",
		    ifc->name, r->name, why);
		return NULL;
	}
	return reorder_cuda_backend();
}

/* Longest frame a queue receives: its buffers, at most one IPv4 UDP
 * datagram behind its headers. */
static uint64_t
queue_frame_bytes(const struct cfg *c, const struct cfg_queue *q)
{
	uint64_t b = 0;

	for (int k = 0; k < q->nregions; k++)
		b += c->regions[q->region_idx[k]].buf_size;
	if (b > ENGINE_SYNTH_HDR_LEN + ENGINE_UDP_MAX_PAYLOAD)
		b = ENGINE_SYNTH_HDR_LEN + ENGINE_UDP_MAX_PAYLOAD;
	return b > 0 ? b : 2048;
}

/*
 * A stream may take every subscription the daemon admits, and as many
 * again that are ending: those keep their slot until the worker lets
 * them go, and a client that subscribes and hangs up in a loop must not
 * fill the stream with them.
 */
static int
apply_stream_limits(const struct cfg *c, struct stream *s)
{
	uint32_t room = 2 * (c->daemon.max_consumers +
	    c->daemon.reserved_admin_connections);
	int rc = stream_set_limits(s, room, c->daemon.hold_timeout_ms);

	if (rc != 0)
		log_warnx("stream '%s': room for %u subscriptions: %s",
		    stream_name(s), room, strerror(-rc));
	else if (stream_held_budget(s) == 0)
		log_warnx("stream '%s': its buffers leave none for consumers "
		    "beside the reorder window (nbufs - window - 1 = 0): every "
		    "subscribe is refused", stream_name(s));
	return rc;
}

static int
interface_up(struct daemon *d, struct daemon_iface *di,
	     const struct cfg_interface *ifc)
{
	const struct cfg *c = d->cfg;
	struct engine_opts opts = { .rx_mode = ENGINE_RX_BLOCKING };
	char err[ERRLEN] = "";
	int rc;

	di->ifc = ifc;
	di->ops = engine_lookup(c->engine);
	if (di->ops == NULL) {
		log_warnx("interface '%s': engine %s is not built into this "
		    "daqirid (use stream_type socket)", ifc->name,
		    c->engine == CFG_ENGINE_DPDK ? "dpdk" : "?");
		return -1;
	}
	if (!ifc->has_rx || ifc->rx.nqueues == 0) {
		log_info("interface '%s': no rx queues; nothing to receive",
		    ifc->name);
		return 0;
	}
	di->flows = flow_table_create(ifc);
	if (di->flows == NULL) {
		log_warn("interface '%s': flow table", ifc->name);
		return -1;
	}
	opts.rx_mode = c->daemon.rx_mode == CFG_RX_BUSY_POLL ?
	    ENGINE_RX_BUSY_POLL : ENGINE_RX_BLOCKING;
	rc = di->ops->init(&di->eng, c, ifc, d->regions, &opts, err, sizeof(err));
	if (rc != 0) {
		log_warnx("%s", err[0] != '\0' ? err : strerror(-rc));
		return -1;
	}
	for (int j = 0; j < ifc->rx.nreorders; j++) {
		const struct cfg_reorder *r = &ifc->rx.reorders[j];
		const struct reorder_backend *be = backend_for(ifc, r);

		if (be == NULL)
			return -1;
		rc = stream_create(&di->streams[j], ifc, r,
		    &d->regions[r->region_idx], be, err, sizeof(err));
		if (rc != 0) {
			log_warnx("%s", err);
			return -1;
		}
		if (apply_stream_limits(c, di->streams[j]) != 0)
			return -1;
		di->reorder_cfgs[j] = r;
		di->nstreams++;
	}
	for (int q = 0; q < ifc->rx.nqueues; q++) {
		rc = stream_create_raw(&di->raws[q], ifc, &ifc->rx.queues[q],
		    queue_frame_bytes(c, &ifc->rx.queues[q]), err, sizeof(err));
		if (rc != 0) {
			log_warnx("%s", err);
			return -1;
		}
		if (apply_stream_limits(c, di->raws[q]) != 0)
			return -1;
		rc = worker_create(&di->workers[q], ifc, q, di->eng, di->flows,
		    di->streams, di->reorder_cfgs, di->nstreams, di->raws[q], err,
		    sizeof(err));
		if (rc != 0) {
			log_warnx("%s", err);
			return -1;
		}
		di->nworkers++;
	}
	return 0;
}

static void
interface_down(struct daemon_iface *di)
{
	for (int q = 0; q < di->nworkers; q++)
		worker_destroy(di->workers[q]);
	for (int j = 0; j < di->nstreams; j++)
		stream_destroy(di->streams[j]);
	for (int q = 0; q < CFG_MAX_QUEUES; q++)
		stream_destroy(di->raws[q]);
	if (di->ops != NULL && di->eng != NULL)
		di->ops->fini(di->eng);
	flow_table_free(di->flows);
	memset(di, 0, sizeof(*di));
}

/* The socket's directory: made when missing (e.g. /run/daqiri outside
 * systemd's RuntimeDirectory). */
static void
make_socket_dir(const char *path)
{
	char dir[CFG_PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == NULL || slash == dir)
		return;
	*slash = '\0';
	if (mkdir(dir, 0755) == 0)
		log_info("made the control socket's directory %s", dir);
}

/*
 * The control socket: the one systemd passes (daqirid.socket, socket
 * activation) or our own at socket_path.
 */
static int
control_up(struct daemon *d)
{
	const struct cfg *c = d->cfg;
	const struct control_opts o = {
		.mode = c->daemon.socket_mode,
		.group = c->daemon.socket_group,
		.admin_group = c->daemon.admin_group,
		.max_clients = c->daemon.max_consumers,
		.reserved_admin = c->daemon.reserved_admin_connections,
		.max_per_uid = c->daemon.max_connections_per_uid,
		.hello_timeout_ms = c->daemon.hello_timeout_ms,
	};
	int n = sd_listen_fds(1);

	if (n == 1 && sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_SEQPACKET, 1,
	    NULL, 0) > 0) {
		log_info("control socket passed by systemd");
		d->socket_path = "(systemd socket)";
		return control_init_fd(&d->ctl, SD_LISTEN_FDS_START, &o,
		    &daemon_control_ops, d);
	}
	if (n > 0)
		log_warnx("systemd passed %d socket(s), expected one "
		    "SOCK_SEQPACKET listener; making our own at %s", n,
		    d->socket_path);
	make_socket_dir(d->socket_path);
	return control_init(&d->ctl, d->socket_path, &o, &daemon_control_ops,
	    d);
}

/*
 * Every connection, subscription and region is an fd or more: take the
 * whole hard limit (systemd gives 524288) and say when even that cannot
 * hold what the configuration admits.
 */
static void
raise_nofile(const struct cfg *c)
{
	uint64_t conns = (uint64_t)c->daemon.max_consumers +
	    c->daemon.reserved_admin_connections;
	/* per connection its socket, per subscription its ring and wake-up socket
	 * while they are being sent, and a margin for the rest */
	uint64_t need = conns + 2 * (uint64_t)c->daemon.max_consumers *
	    DAQIRI_SUB_MAX_FDS + DAEMON_FD_MARGIN;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			log_warn("setrlimit RLIMIT_NOFILE %llu",
			    (unsigned long long)rl.rlim_max);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < need)
		log_warnx("open files limit %llu is below the %llu that "
		    "max_consumers %u and reserved_admin_connections %u can "
		    "take; connections past it are refused (raise LimitNOFILE)",
		    (unsigned long long)rl.rlim_cur, (unsigned long long)need,
		    c->daemon.max_consumers,
		    c->daemon.reserved_admin_connections);
}

void
daemon_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
}

static int
loop_setup(struct daemon *d)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct itimerspec its = {
		.it_interval = { 0, DAEMON_TICK_MS * 1000000L },
		.it_value = { 0, DAEMON_TICK_MS * 1000000L },
	};
	sigset_t set;

	/* main() blocked these already; again, for a caller that did not */
	daemon_signals(&set);
	if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
		return -1;
	signal(SIGPIPE, SIG_IGN);
	d->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	d->tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (d->sigfd < 0 || d->tick_fd < 0 || d->epfd < 0) {
		log_warn("main loop");
		return -1;
	}
	if (timerfd_settime(d->tick_fd, 0, &its, NULL) != 0)
		return -1;
	ev.data.fd = d->sigfd;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->sigfd, &ev) != 0)
		return -1;
	ev.data.fd = d->tick_fd;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->tick_fd, &ev) != 0)
		return -1;
	ev.data.fd = control_fd(d->ctl);
	return epoll_ctl(d->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev);
}

static void
notify_status(struct daemon *d)
{
	uint64_t placed = 0, tensors = 0, dropped = 0;
	struct stream *s;

	FOR_EACH_STREAM(d, s) {
		struct reorder_counters reorder;
		struct stream_counters handoff;

		stream_snapshot(s, &reorder, &handoff);
		placed += reorder.placed;
		tensors += handoff.published;
		dropped += reorder.duplicate + reorder.late + reorder.malformed +
		    reorder.no_buffer_packets + reorder.backend_error_packets;
	}
	sd_notifyf(0, "STATUS=%llu tensors published, %llu packets placed, "
	    "%llu dropped (see daqirictl stats)", (unsigned long long)tensors,
	    (unsigned long long)placed, (unsigned long long)dropped);
}

/*
 * True while every RX worker's heartbeat advanced within stale_ns (half
 * the watchdog interval, the feeding period; a worker beats at least four
 * times in it). Otherwise the watchdog goes unfed and systemd restarts
 * the daemon: a wedged worker stops its streams for good while the main
 * thread would go on answering. Logged once per episode.
 */
static bool
workers_alive(struct daemon *d, uint64_t now)
{
	for (int i = 0; i < d->nifs; i++)
		for (int q = 0; q < d->ifs[i].nworkers; q++) {
			struct worker *w = d->ifs[i].workers[q];
			uint64_t age = heartbeat_age(w, now);

			if (age <= d->stale_ns)
				continue;
			if (!d->wd_stuck)
				log_warnx("queue '%s': its RX worker's heartbeat "
				    "has not advanced for %llu ms; no longer "
				    "feeding the systemd watchdog, so systemd "
				    "restarts daqirid", worker_queue_name(w),
				    (unsigned long long)(age / 1000000));
			d->wd_stuck = true;
			return false;
		}
	if (d->wd_stuck)
		log_warnx("every RX worker's heartbeat advances again; feeding "
		    "the systemd watchdog");
	d->wd_stuck = false;
	return true;
}

static void
on_tick(struct daemon *d)
{
	uint64_t expirations, now = daqiri_mono_ns();
	struct stream *s;

	(void)!read(d->tick_fd, &expirations, sizeof(expirations));
	FOR_EACH_STREAM(d, s)
		stream_reap(s, sub_broken, d);
	for (int i = 0; i < d->nifs; i++)
		for (int q = 0; q < d->ifs[i].nworkers; q++)
			worker_reap(d->ifs[i].workers[q]);
	if (d->wd_usec != 0 && now - d->last_wd_ns >= d->wd_usec * 1000 / 2 &&
	    workers_alive(d, now)) {
		sd_notify(0, "WATCHDOG=1");
		d->last_wd_ns = now;
	}
	if (now - d->last_status_ns >=
	    (uint64_t)d->cfg->daemon.stats_interval_ms * 1000000u) {
		notify_status(d);
		d->last_status_ns = now;
	}
}

static void
on_signal(struct daemon *d)
{
	struct signalfd_siginfo si;

	while (read(d->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			log_warnx("SIGHUP: configuration reload is not built yet; "
			    "restart daqirid to apply a new configuration");
			continue;
		}
		log_info("%s: stopping", strsignal((int)si.ssi_signo));
		d->stop = true;
	}
}

static void
run_loop(struct daemon *d)
{
	struct epoll_event evs[16];

	while (!d->stop) {
		int n = epoll_wait(d->epfd, evs, 16, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_warn("epoll_wait");
			break;
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;

			if (fd == d->sigfd)
				on_signal(d);
			else if (fd == d->tick_fd)
				on_tick(d);
			else if (fd == control_fd(d->ctl))
				control_handle(d->ctl, fd, evs[i].events);
		}
	}
}

static void
teardown(struct daemon *d)
{
	/* Workers first: they flush open batches to the subscribers. */
	for (int i = 0; i < d->nifs; i++)
		for (int q = 0; q < d->ifs[i].nworkers; q++)
			worker_stop(d->ifs[i].workers[q]);
	control_fini(d->ctl);
	d->ctl = NULL;
	for (int i = d->nifs; i-- > 0;)
		interface_down(&d->ifs[i]);
	if (d->regions_made)
		mem_regions_destroy(d->regions, d->cfg->nregions);
	if (d->epfd >= 0)
		close(d->epfd);
	if (d->tick_fd >= 0)
		close(d->tick_fd);
	if (d->sigfd >= 0)
		close(d->sigfd);
}

int
daemon_run(const struct cfg *c, const char *socket_path,
	   const char *config_file)
{
	static struct daemon dd;
	struct daemon *d = &dd;
	char err[ERRLEN] = "";
	int rc = 1;

	d->cfg = c;
	d->config_file = config_file;
	d->socket_path = socket_path;
	d->epfd = d->sigfd = d->tick_fd = -1;
	d->start_ns = daqiri_mono_ns();
	log_init(c->log_level, getenv("JOURNAL_STREAM") != NULL);

	raise_nofile(c);
	if (check_region_owners(c) != 0)
		goto out;
	if (c->daemon.metrics_listen[0] != '\0')
		log_warnx("daemon.metrics_listen '%s': the HTTP metrics endpoint "
		    "is not built into this daqirid; 'daqirictl metrics' prints "
		    "the same Prometheus text", c->daemon.metrics_listen);
	/* The control socket first: a second daqirid on the same path is
	 * told so before it touches ports and memory. Nothing is served
	 * until the loop runs. */
	if (control_up(d) != 0)
		goto out;
	if (mem_regions_create(c, d->regions, err, sizeof(err)) != 0) {
		log_warnx("%s", err);
		goto out;
	}
	d->regions_made = true;
	for (int i = 0; i < c->ninterfaces; i++) {
		d->nifs++;
		if (interface_up(d, &d->ifs[i], &c->interfaces[i]) != 0)
			goto out;
	}
	if (loop_setup(d) != 0) {
		log_warn("main loop setup");
		goto out;
	}
	if (sd_watchdog_enabled(0, &d->wd_usec) <= 0)
		d->wd_usec = 0;
	/* a healthy worker beats four times per feeding period (wd/2) */
	d->stale_ns = d->wd_usec != 0 ? d->wd_usec * 1000 / 2 :
	    DAEMON_STALE_NS;
	if (d->stale_ns < DAEMON_STALE_MIN_NS)
		d->stale_ns = DAEMON_STALE_MIN_NS;
	for (int i = 0; i < d->nifs; i++) {
		struct daemon_iface *di = &d->ifs[i];

		if (di->eng != NULL && di->ops->start(di->eng) != 0) {
			log_warnx("interface '%s': cannot start", di->ifc->name);
			goto out;
		}
		for (int q = 0; q < di->nworkers; q++)
			worker_set_idle(di->workers[q], d->stale_ns / 4);
		for (int q = 0; q < di->nworkers; q++)
			if (worker_start(di->workers[q]) != 0) {
				log_warnx("queue '%s': cannot start its worker",
				    worker_queue_name(di->workers[q]));
				goto out;
			}
	}
	log_info("daqirid %s running: %d interface(s), control socket %s",
	    DAQIRI_VERSION, d->nifs, d->socket_path);
	sd_notifyf(0, "READY=1\nSTATUS=receiving; control socket %s\nMAINPID=%d",
	    d->socket_path, (int)getpid());
	d->last_status_ns = daqiri_mono_ns();
	run_loop(d);
	sd_notify(0, "STOPPING=1\nSTATUS=stopping");
	rc = 0;
out:
	teardown(d);
	if (rc != 0)
		log_warnx("start-up failed; daqirid exits");
	return rc;
}
