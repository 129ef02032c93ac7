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
#include "doctor.h"
#include "stream.h"
#include "tx.h"
#include "worker.h"

/* One configured interface as it runs: its engine, its flow table, its
 * streams, one RX worker per rx queue and one TX worker per tx queue. */
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
	int ntx;
	struct tx_worker *txw[CFG_MAX_QUEUES];	/* per tx queue */
	/* Flow steering (daemon_steer()): whether the engine steers the
	 * flows of `flows` to their queues, and whether its refusal was
	 * logged. One rx queue: nothing to steer (steered). */
	bool steered;
	bool steer_said;
};

/*
 * The running daemon. Main thread only: the RX workers get pointers to
 * their engine queue, flow table copy and streams at creation, never to
 * this.
 */
struct daemon {
	struct cfg *cfg;		/* the running config; a reload
					 * rewrites its live fields */
	int level_override;		/* -l LEVEL, or -1: the config's */
	uint64_t reloads;		/* applied */
	/* Streams a reload removed, until every worker of their interface
	 * let them go (reload.c). */
	int nretiring;
	struct {
		struct stream *s;
		int iface;
	} retiring[CFG_MAX_INTERFACES * CFG_MAX_REORDERS];
	int regions_keep;		/* regions past this are let go with
					 * the retiring streams; -1 none */
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
	uint64_t last_doctor_ns;	/* daemon_doctor() */
	uint64_t stale_ns;		/* a heartbeat older than this: stuck */
	bool wd_stuck;			/* not feeding: a worker is stuck */
	uint64_t last_status_ns;
	bool stop;
	/* --replay: every interface on the replay engine; NULL: live */
	const struct replay_cfg *replay;
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

static inline uint64_t
tx_heartbeat_age(const struct tx_worker *w, uint64_t now)
{
	uint64_t b = tx_worker_heartbeat_ns(w);

	return now > b ? now - b : 0;
}

/*
 * daemon_ops.c: the Prometheus text of the stats and consumers views
 * (proto/metrics.h), for http_serve() on the main thread (ctx is the
 * daemon). 0 and a malloc'ed *text, or -ENOMEM.
 */
int daemon_metrics_text(void *ctx, char **text, size_t *len);
/* What a reload did (reload.c). */
enum reload_outcome {
	RELOAD_APPLIED,			/* every change applied */
	RELOAD_UNCHANGED,		/* the file says what runs */
	RELOAD_REFUSED,			/* errors or restart-only changes */
	RELOAD_MAX
};
extern const char *const reload_outcome_names[RELOAD_MAX];

struct reload_result {
	enum reload_outcome outcome;
	char file[CFG_PATH_MAX];	/* as named in the diagnostics */
	char reason[256];		/* one line: why, or what was done */
	struct cfg_diags diags;		/* the loader's */
	struct cfg_changes changes;	/* cfg_diff()'s */
};

/*
 * reload.c: re-read d->config_file (the built-in default when NULL),
 * check it and apply it whole or not at all (RELOADING=1 and READY=1
 * to systemd around the apply). *r says what happened. Returns 0 when
 * applied or unchanged, -1 when refused.
 */
int daemon_reload(struct daemon *d, struct reload_result *r);
/* daemon_ops.c: each reorder stream judged (doctor.c), a change logged;
 * on the main tick, every DOCTOR_PERIOD_NS. */
void daemon_doctor(struct daemon *d, uint64_t now);
/* Log *r: every error or change, then the outcome. */
void daemon_reload_log(const struct reload_result *r);
/* Each tick: end the subscriptions of removed streams ("stream removed")
 * and free them once their workers let go. */
void daemon_reload_reap(struct daemon *d);
/* At teardown (workers stopped): free what is still retiring. */
void daemon_reload_fini(struct daemon *d);
/* daemon.c: the stream of reorder config r of ifc, with its backend and
 * the daemon's limits, on region d->regions[r->region_idx]. 0 or a
 * negative errno (logged). */
int daemon_stream_make(struct daemon *d, const struct cfg_interface *ifc,
		       const struct cfg_reorder *r, struct stream **out);

/* daemon_ops.c: what the control server calls back (control_init()). */
extern const struct control_ops daemon_control_ops;

/*
 * daemon_ops.c, stream_reap()'s callback (ctx is the daemon): a worker cut
 * subscription (conn_id, sub_id) off for why; tell the consumer, end that
 * subscription and nothing else.
 */
void daemon_sub_broken(void *ctx, uint64_t conn_id, uint32_t sub_id,
		       const char *why);
/* tx_worker_reap()'s callback: the worker cut TX channel (conn_id,
 * tx_id) off; tell the consumer (tx_closed) and close that channel. */
void daemon_tx_broken(void *ctx, uint64_t conn_id, uint32_t tx_id,
		      const char *why);

/* Ask the engine to steer di->flows to their queues (engine_ops.steer)
 * after start and after every change of the table; logs the outcome when
 * it changes. Main thread. */
void daemon_steer(const struct cfg *c, struct daemon_iface *di);

#endif
