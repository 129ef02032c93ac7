/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to daemon.c (start-up, the main loop, teardown) and daemon_ops.c
 * (the main thread's answers to control requests): struct daemon, the
 * record of each running interface, and the few helpers both walk the
 * daemon's streams and workers with. Everything here is the main thread's.
 */
#ifndef DAQIRI_DAEMON_INTERNAL_H
#define DAQIRI_DAEMON_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "control.h"
#include "engine.h"
#include "flow.h"
#include "http.h"
#include "mem.h"
#include "stream.h"
#include "worker.h"

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

/*
 * The running daemon. Main thread only: the RX workers get pointers to
 * their engine queue, flow table copy and streams at creation, never to
 * this.
 */
struct daemon {
	const struct cfg *cfg;
	const char *config_file;	/* NULL: the built-in default */
	const char *socket_path;
	uint64_t start_ns;
	struct mem_region regions[CFG_MAX_REGIONS];
	bool regions_made;
	int nifs;			/* interfaces brought up (or trying) */
	struct daemon_iface ifs[CFG_MAX_INTERFACES];
	struct control *ctl;
	struct http *http;		/* NULL: no daemon.metrics_listen */
	int epfd;
	int sigfd;
	int tick_fd;			/* timerfd, every DAEMON_TICK_MS */
	uint32_t next_sub_id;		/* last subscription id given */
	uint64_t wd_usec;		/* systemd watchdog interval, 0 = off */
	uint64_t last_wd_ns;
	uint64_t stale_ns;		/* a heartbeat older than this: stuck */
	bool wd_stuck;			/* not feeding: a worker is stuck */
	uint64_t last_status_ns;
	bool stop;
};

/* Reorder streams first, then the raw stream of every rx queue. */
static inline struct stream *
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

/* Age of a worker's heartbeat at now (0 when it beat after now). */
static inline uint64_t
heartbeat_age(const struct worker *w, uint64_t now)
{
	uint64_t b = worker_heartbeat_ns(w);

	return now > b ? now - b : 0;
}

/*
 * daemon_ops.c: the Prometheus text of the stats and consumers views
 * (proto/metrics.h), for http_serve() on the main thread (ctx is the
 * daemon). 0 and a malloc'ed *text, or -ENOMEM.
 */
int daemon_metrics_text(void *ctx, char **text, size_t *len);

/* daemon_ops.c: what the control server calls back (control_init()). */
extern const struct control_ops daemon_control_ops;

/*
 * daemon_ops.c, stream_reap()'s callback (ctx is the daemon): a worker cut
 * subscription (conn_id, sub_id) off for why; tell the consumer, end that
 * subscription and nothing else.
 */
void daemon_sub_broken(void *ctx, uint64_t conn_id, uint32_t sub_id,
		       const char *why);

#endif
