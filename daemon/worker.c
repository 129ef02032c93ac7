/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The RX worker loop: receive a burst, route every frame by flow to the
 * stream that owns it, hand each stream its share of the burst, release
 * the burst to the engine, then service the streams. The receive call
 * never sleeps past the nearest reorder deadline, so a partial batch is
 * published on time even when no further packet arrives.
 *
 * Rx queues of an interface pinned to the same core share one thread (a
 * worker group, DPDK l3fwd's per-lcore queue list): its first worker,
 * the host, runs the thread and makes a pass of each member's loop in
 * turn without waiting; when none received anything it sleeps in one
 * ppoll() over every member's socket and command eventfd (the engine's
 * rx_fd()) until the nearest deadline of them all, or, on an engine
 * without such fds (DPDK), polls on. Each member keeps its own queue,
 * streams, counters and heartbeat.
 *
 * Replay (an engine with a clock of its own, engine_ops.now_ns: the
 * replay engine). The loop's "now" -- what the streams are given, and
 * what the receive's timeout is measured from -- is the engine's virtual
 * clock, so every deadline falls at the same point of the capture on
 * every replay; the heartbeat stays wall time. And the worker waits for
 * its consumers: it takes no more frames in a burst than every stream of
 * its queue has free buffers (a frame opens at most one batch, so none
 * can find no buffer), and while one has none it takes no burst at all,
 * only releases (its passes run on at the same now: the virtual clock
 * stands still), every WORKER_REPLAY_WAIT_NS of wall time, counted in
 * replay_waits: so no batch drops as no_buffer depending on how fast the
 * consumers ran. A burst cut short changes nothing else: the rest of its
 * run comes with the next receive at the same now, and the streams drain
 * at the start of every burst what a pass between would publish. A
 * consumer that never releases stalls the replay until
 * daemon.hold_timeout_ms (wall time) ends it. Such a queue has a thread
 * of its own (worker_join() refuses it). The live path pays three tests
 * of w->clock per pass.
 */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "reorder_cuda.h"
#include "seqlock.h"
#include "tap.h"
#include "worker.h"

_Static_assert(sizeof(struct worker_counters) % sizeof(uint64_t) == 0,
    "struct worker_counters is made of uint64_t only (seqlock copies)");

/*
 * Where route() sends a frame: an index into w->ws (>= 0), or one of these
 * reasons it goes nowhere, each counted. Not to be confused with what
 * flow_route() returns (a flow rule index or FLOW_ROUTE_*), which route()
 * maps to a ws index through rule_stream[] and default_ws.
 */
enum ws_route {
	WS_ROUTE_NO_STREAM = -1,	/* no raw stream to take it */
	WS_ROUTE_MISROUTED = -2,	/* another queue's worker owns it */
};

struct wstream {
	struct stream *s;
	unsigned n;
	struct rx_frame frames[ENGINE_MAX_BURST];	/* this burst's share */
};

/* A burst whose payloads a backend still reads in place (the GPU): its
 * frames go back to the engine once every stream's mark is done, in
 * burst order (the engine releases its oldest frames first). */
struct inflight {
	unsigned n;			/* frames of the burst */
	int nmarks;
	struct {
		struct stream *s;
		uint64_t mark;
	} m[WORKER_MAX_STREAMS];
};

static void reap_inflight(struct worker *w, bool wait, bool wait_all);

/* A new flow table and its routes, handed to the worker; the old pair
 * comes back in the same struct for the main thread to free. A reload
 * that adds or removes streams also hands a new set of streams (ws not
 * NULL); the old array comes back the same way. */
struct flow_change {
	struct flow_table *flows;
	int *rule_stream;
	struct wstream *ws;
	int nws;
	int default_ws;
	int nscfg;
	const struct cfg_reorder *scfg[WORKER_MAX_STREAMS];
	int local[WORKER_MAX_STREAMS];
};

struct worker {
	char name[CFG_NAME_MAX * 2 + 2];
	uint32_t qid;			/* the rx queue's id */
	int qi;				/* its index in the interface's */
	int core;
	uint32_t batch;
	struct engine *eng;
	struct engine_rxq *q;
	/* frames that land whole in device memory: their header shadow
	 * (geometry.h), else NULL; a failed burst is logged once */
	struct gpu_shadow *shadow;
	bool shadow_warned;
	/* bursts in flight, oldest at fly_head (worker thread only) */
	struct inflight fly[WORKER_INFLIGHT];
	unsigned fly_head, fly_n;
	struct flow_table *flows;	/* the worker's own copy */
	int *rule_stream;		/* per flow rule: ws index or
					 * WS_ROUTE_* */
	const struct cfg_reorder *scfg[WORKER_MAX_STREAMS];
	int nscfg;
	int local[WORKER_MAX_STREAMS];	/* stream index -> ws index or -1 */
	/* Flow table changes (main -> worker -> main). */
	_Atomic(struct flow_change *) pending;
	_Atomic(struct flow_change *) retired;
	int default_ws;			/* for FLOW_ROUTE_DEFAULT: ws index or
					 * WS_ROUTE_NO_STREAM */
	int nws;
	struct wstream *ws;		/* reorder streams, then the raw one */
	int wake_fd;
	pthread_t thr;
	bool started;
	_Atomic int stop;
	_Atomic uint64_t beat_ns;	/* last loop iteration, monotonic */
	uint64_t idle_ns;		/* longest sleep without a beat */
	bool wedge;			/* test only: WORKER_WEDGE_ENV */
	const char *wedge_file;		/* test only: WORKER_WEDGE_FILE_ENV */

	struct worker_counters ctr;
	struct flow_stats fstats;
	uint64_t last_snap_ns;
	struct rx_frame frames[ENGINE_MAX_BURST];
	/* direct placement: the hint for the next receive */
	struct rx_place place;
	uint8_t *place_dst[ENGINE_MAX_BURST];
	int hint_ws;			/* the ws index that hints */
	/* a spread stream's copies, run outside its lock (stream_burst()) */
	struct reorder_jobs *jobs;
	/* Core sharing (the top): a member's host, NULL for a worker with
	 * its own thread; a host's group, itself first. */
	struct worker *host;
	struct worker *group[CFG_MAX_QUEUES];
	int ngroup;
	uint64_t now;			/* its loop's clock (its thread) */
	/* the engine's clock (replay), NULL: the wall clock */
	uint64_t (*clock)(struct engine_rxq *q);

	struct tap tap;			/* daqirictl learn's copies */

	struct seqlock snap_lock;
	struct worker_counters snap;
};

/* The loop's clock: the engine's (replay) or the wall clock. */
static inline uint64_t
worker_clock(struct worker *w)
{
	return w->clock != NULL ? w->clock(w->q) : daqiri_mono_ns();
}

/* Worker side: make the counters visible to worker_snapshot(). */
static void
publish_counters(struct worker *w)
{
	w->ctr.matched = w->fstats.matched;
	w->ctr.unmatched = w->fstats.unmatched;
	w->ctr.inflight = w->fly_n;
	for (int k = 0; k < w->nws; k++)
		stream_publish_counters(w->ws[k].s);
	w->eng->ops->stats(w->q, &w->ctr.engine);
	seqlock_write_begin(&w->snap_lock);
	seqlock_copy((uint64_t *)&w->snap, (const uint64_t *)&w->ctr,
	    SEQLOCK_WORDS(w->snap));
	seqlock_write_end(&w->snap_lock);
}

void
worker_snapshot(struct worker *w, struct worker_counters *out)
{
	uint32_t v;

	do {
		v = seqlock_read_begin(&w->snap_lock);
		seqlock_copy((uint64_t *)out, (const uint64_t *)&w->snap,
		    SEQLOCK_WORDS(*out));
	} while (seqlock_read_retry(&w->snap_lock, v));
}

/* A frame received into a stream's buffer leaves it for its stash. */
static void
unplace(struct rx_frame *f)
{
	memcpy(f->stash, f->payload, f->payload_len);
	f->payload = f->stash;
	f->stash = NULL;
}

/* Route one burst's frames to their streams. */
static void
route(struct worker *w, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		const struct rx_frame *f = &w->frames[i];
		const uint8_t *h = f->hdr_len != 0 ? f->hdr : f->payload;
		uint32_t hl = f->hdr_len != 0 ? f->hdr_len : f->payload_len;
		int rule = flow_route(w->flows, &w->fstats, h, hl);
		int to;

		w->ctr.rx_bytes += (uint64_t)f->hdr_len + f->payload_len;
		if (rule == FLOW_ROUTE_DROP)
			continue;
		to = rule == FLOW_ROUTE_DEFAULT ? w->default_ws :
		    w->rule_stream[rule];
		if (to >= 0) {
			struct wstream *ws = &w->ws[to];

			ws->frames[ws->n] = *f;
			if (f->stash != NULL && to != w->hint_ws)
				unplace(&ws->frames[ws->n]);
			ws->n++;
			/* the stream counts it in its packets_in: a spread
			 * stream's are this queue's share */
			w->ctr.streams_packets_in++;
		} else if (to == WS_ROUTE_MISROUTED)
			w->ctr.misrouted++;
		else
			w->ctr.no_stream++;
	}
	w->ctr.rx_packets += n;
}

/* A reload took streams away: what they hold goes out (FLUSH) to their
 * subscribers (a spread stream's queues change only at a restart, so a
 * stream one worker lets go of, every worker lets go of). */
static void
let_go_streams(struct worker *w, const struct flow_change *fc, uint64_t now)
{
	for (int k = 0; k < w->nws; k++) {
		struct stream *s = w->ws[k].s;
		bool kept = false;

		for (int n = 0; n < fc->nws && !kept; n++)
			kept = fc->ws[n].s == s;
		if (kept)
			continue;
		stream_service(s, now);
		stream_flush(s, now);
	}
}

_Static_assert(ENGINE_MAX_BURST <= REORDER_BURST_MAX,
    "a stream takes a whole burst");

/*
 * Direct placement: the stream that took most of the last burst says
 * where the next payloads go (its plan's reorder_place_hints()). A frame
 * received into its buffers but routed to another stream is copied out
 * first (route()), so only the hinting stream ever sees such a frame.
 */
static void
hint_place(struct worker *w)
{
	struct rx_place *pl = &w->place;

	if (w->eng->ops->set_place == NULL)
		return;
	pl->n = 0;
	if (w->hint_ws >= 0 && w->hint_ws < w->nws &&
	    atomic_load_explicit(&w->pending, memory_order_relaxed) == NULL)
		pl->n = stream_place_hints(w->ws[w->hint_ws].s, w->place_dst,
		    w->batch, &pl->payload_off, &pl->payload_len);
	pl->dst = w->place_dst;
	w->eng->ops->set_place(w->q, pl->n > 0 ? pl : NULL);
}

/* Between bursts: take a new flow table (and set of streams), hand back
 * the old one; the n frames of the burst just received stay valid. */
static void
take_flow_change(struct worker *w, uint64_t now, int n)
{
	struct flow_change *fc;
	struct flow_table *t;
	int *r;

	fc = atomic_load_explicit(&w->pending, memory_order_acquire);
	if (fc == NULL)
		return;
	if (fc->ws != NULL) {
		struct wstream *old = w->ws;

		/* no mark may name a stream that goes */
		reap_inflight(w, true, true);
		/* the streams change under the burst's frames */
		for (int i = 0; i < n; i++)
			if (w->frames[i].stash != NULL)
				unplace(&w->frames[i]);
		w->hint_ws = 0;
		let_go_streams(w, fc, now);
		w->ws = fc->ws;
		w->nws = fc->nws;
		w->default_ws = fc->default_ws;
		w->nscfg = fc->nscfg;
		memcpy(w->scfg, fc->scfg, sizeof(w->scfg));
		memcpy(w->local, fc->local, sizeof(w->local));
		fc->ws = old;
	}
	t = w->flows;
	r = w->rule_stream;
	w->flows = fc->flows;
	w->rule_stream = fc->rule_stream;
	fc->flows = t;
	fc->rule_stream = r;
	/* The old pair is handed back before pending clears: whoever sees
	 * pending empty also sees it to free. */
	atomic_store_explicit(&w->retired, fc, memory_order_release);
	atomic_store_explicit(&w->pending, NULL, memory_order_release);
}

/* Test only: hang as a worker stuck in a call would, without beating,
 * but still let an orderly stop join the thread; with WORKER_WEDGE_FILE
 * set, only while that file exists. True when it resumes. */
static bool
wedge(struct worker *w)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	const char *until = w->wedge_file;

	/* a member of a group stops with its host's thread */
	struct worker *h = w->host != NULL ? w->host : w;

	log_warnx("queue '%s': %s: this worker stops now (test only)",
	    w->name, WORKER_WEDGE_ENV);
	while (!atomic_load_explicit(&h->stop, memory_order_acquire)) {
		if (until != NULL && access(until, F_OK) != 0) {
			log_warnx("queue '%s': %s gone: this worker resumes "
			    "(test only)", w->name, until);
			return true;
		}
		nanosleep(&ts, NULL);
	}
	return false;
}

/* Give back the bursts in flight whose reads finished, oldest first;
 * with wait, block until the oldest one's did (and so on while wait_all). */
static void
reap_inflight(struct worker *w, bool wait, bool wait_all)
{
	while (w->fly_n > 0) {
		struct inflight *f = &w->fly[w->fly_head];

		for (int i = 0; i < f->nmarks; i++)
			if (!stream_fence_done(f->m[i].s, f->m[i].mark, wait))
				return;
		w->eng->ops->release(w->q, f->n);
		w->fly_head = (w->fly_head + 1) % WORKER_INFLIGHT;
		w->fly_n--;
		wait = wait_all;
	}
}

/* After a burst fed its streams: its frames go back to the engine now, or
 * once the reads its streams' marks stand for finished (at most
 * WORKER_INFLIGHT bursts wait; one more waits for the oldest). */
static void
release_burst(struct worker *w, const struct inflight *cur)
{
	if (cur->nmarks == 0 && w->fly_n == 0) {
		w->eng->ops->release(w->q, cur->n);
		return;
	}
	if (w->fly_n == WORKER_INFLIGHT) {
		w->ctr.inflight_waits++;
		reap_inflight(w, true, false);
	}
	w->fly[(w->fly_head + w->fly_n) % WORKER_INFLIGHT] = *cur;
	w->fly_n++;
}

/* Frames whole in device memory: the CPU reads their header shadow. A
 * burst the GPU could not copy goes back to the engine unread (an rx
 * error, logged once); its frames reach no stream. */
static int
shadow(struct worker *w, int n)
{
	if (gpu_shadow_burst(w->shadow, w->frames, (unsigned)n) == 0)
		return n;
	struct inflight none;

	if (!w->shadow_warned) {
		log_warnx("queue '%s': header shadow of %d frames: %s (the "
		    "burst is dropped; counted in rx_errors)", w->name, n,
		    gpu_last_error());
		w->shadow_warned = true;
	}
	/* behind the bursts in flight: the engine releases oldest first */
	none.n = (unsigned)n;
	none.nmarks = 0;
	release_burst(w, &none);
	return -EIO;
}

/* Replay: the most frames the next burst may take (the top: every
 * stream's free buffers, at most the queue's batch); 0: none now. */
static unsigned
replay_room(struct worker *w)
{
	unsigned room = w->batch;

	for (int k = 0; k < w->nws && room > 0; k++) {
		unsigned r = stream_room(w->ws[k].s);

		if (r < room)
			room = r;
	}
	return room;
}

/* Replay: a stream has no free buffer: wait a little for its consumers'
 * releases, in wall time, waking for commands (whose eventfd is drained
 * here, or it would turn the wait into a spin; they are seen through
 * the streams' flags). */
static void
replay_wait(struct worker *w)
{
	struct pollfd p = { .fd = w->wake_fd, .events = POLLIN };
	struct timespec ts = { 0, WORKER_REPLAY_WAIT_NS };
	uint64_t drain;

	w->ctr.replay_waits++;
	if (ppoll(&p, 1, &ts, NULL) > 0)
		(void)!read(w->wake_fd, &drain, sizeof(drain));
}

/* The nearest time w's loop must run again: a stream's deadline, or its
 * idle interval (heartbeat, commands, counters). */
static uint64_t
next_wake(struct worker *w)
{
	uint64_t deadline = w->now + w->idle_ns;

	for (int k = 0; k < w->nws; k++) {
		uint64_t d = stream_next_deadline(w->ws[k].s);

		if (d < deadline)
			deadline = d;
	}
	return deadline;
}

/* One pass of w's loop: receive (waiting up to next_wake() when wait,
 * else not at all), feed the streams, service them. Returns the frames
 * received (or a negative errno), or WORKER_PASS_STOP when a test's
 * wedge ended with a stop. */
#define WORKER_PASS_STOP	INT32_MIN
static int
worker_pass(struct worker *w, bool wait)
{
	uint64_t drain, deadline;
	int64_t timeout = 0;
	unsigned max = w->batch;
	int n;

	/* the watchdog is fed only while this advances (wall time) */
	atomic_store_explicit(&w->beat_ns, w->clock == NULL ? w->now :
	    daqiri_mono_ns(), memory_order_relaxed);
	if (wait) {
		deadline = next_wake(w);
		timeout = deadline > w->now ? (int64_t)(deadline - w->now) : 0;
	}
	reap_inflight(w, false, false);
	hint_place(w);
	if (w->clock != NULL && (max = replay_room(w)) == 0) {
		replay_wait(w);
		n = 0;
	} else
		n = w->eng->ops->rx_burst(w->q, w->frames, max, timeout);
	if (n > 0 && w->shadow != NULL)
		n = shadow(w, n);
	if (n > 0)
		tap_frames(&w->tap, w->frames, (unsigned)n);
	w->now = w->clock == NULL ? daqiri_mono_ns() : w->clock(w->q);
	/* A flow change posted before this burst arrived applies to it:
	 * daqirictl's reply comes after the post. */
	take_flow_change(w, w->now, n);
	if (n > 0) {
		w->ctr.bursts++;
		unsigned most = 0;
		struct inflight cur;

		cur.n = (unsigned)n;
		cur.nmarks = 0;
		route(w, (unsigned)n);
		for (int k = 0; k < w->nws; k++) {
			struct wstream *ws = &w->ws[k];
			uint64_t mark;

			if (ws->n == 0)
				continue;
			if (ws->n > most) {
				most = ws->n;
				w->hint_ws = k;
			}
			stream_burst(ws->s, ws->frames, ws->n, w->now, w->jobs);
			ws->n = 0;
			if ((mark = stream_fence(ws->s)) != 0) {
				cur.m[cur.nmarks].s = ws->s;
				cur.m[cur.nmarks++].mark = mark;
			}
		}
		release_burst(w, &cur);
		/* with a wedge file, at any burst while it exists */
		if (w->wedge && (w->wedge_file == NULL ||
		    access(w->wedge_file, F_OK) == 0)) {
			if (!wedge(w))
				return WORKER_PASS_STOP;
			w->now = worker_clock(w);
		}
	} else if (n < 0) {
		w->ctr.rx_errors++;
		if (n != -EINTR && n != -EAGAIN) {
			/* do not spin on a persistent error */
			struct timespec ts = { 0, 1000000 };

			nanosleep(&ts, NULL);
		}
	}
	/* An empty return may be the wake eventfd: drain it, or the next
	 * receive would return at once again. Commands are seen through the
	 * streams' flags either way. */
	if (n == 0 && w->wake_fd >= 0)
		(void)!read(w->wake_fd, &drain, sizeof(drain));
	for (int k = 0; k < w->nws; k++)
		stream_service(w->ws[k].s, w->now);
	/* Counters for the main thread: when idle, else at most every
	 * WORKER_SNAP_NS (reading the engine's may be a syscall). */
	if (n <= 0 || w->now - w->last_snap_ns >= WORKER_SNAP_NS) {
		publish_counters(w);
		w->last_snap_ns = w->now;
	}
	return n;
}

/* A stopping worker: what its streams hold goes out, its bursts back. */
static void
worker_finish(struct worker *w)
{
	uint64_t now = worker_clock(w);

	for (int k = 0; k < w->nws; k++) {
		stream_service(w->ws[k].s, now);
		stream_flush(w->ws[k].s, now);
	}
	reap_inflight(w, true, true);
	publish_counters(w);
}

/* A group's idle wait (the top): every member's socket and eventfd until
 * the nearest next_wake() of them all; false when an engine has no fd
 * to wait on (the group then polls on). */
static bool
group_wait(struct worker *h)
{
	struct pollfd pfd[2 * CFG_MAX_QUEUES];
	uint64_t deadline = UINT64_MAX, now;
	struct timespec ts;
	nfds_t n = 0;

	for (int k = 0; k < h->ngroup; k++) {
		struct worker *w = h->group[k];
		int fd = w->eng->ops->rx_fd != NULL ?
		    w->eng->ops->rx_fd(w->q) : -1;
		uint64_t d;

		if (fd < 0)
			return false;
		pfd[n++] = (struct pollfd){ .fd = fd, .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = w->wake_fd, .events = POLLIN };
		if ((d = next_wake(w)) < deadline)
			deadline = d;
	}
	now = daqiri_mono_ns();
	deadline = deadline > now ? deadline - now : 0;
	ts.tv_sec = (time_t)(deadline / 1000000000u);
	ts.tv_nsec = (long)(deadline % 1000000000u);
	(void)ppoll(pfd, n, &ts, NULL);
	return true;
}

static void *
worker_main(void *arg)
{
	struct worker *h = arg;

	for (int k = 0; k < h->ngroup; k++)
		h->group[k]->now = worker_clock(h->group[k]);
	while (!atomic_load_explicit(&h->stop, memory_order_acquire)) {
		bool got = false, stop = false;

		if (h->ngroup == 1) {
			if (worker_pass(h, true) == WORKER_PASS_STOP)
				break;
			continue;
		}
		for (int k = 0; k < h->ngroup && !stop; k++) {
			int n = worker_pass(h->group[k], false);

			stop = n == WORKER_PASS_STOP;
			got |= n > 0;
		}
		if (stop)
			break;
		if (!got)
			(void)group_wait(h);
	}
	for (int k = 0; k < h->ngroup; k++)
		worker_finish(h->group[k]);
	return NULL;
}

static int
stream_of_flow(const struct cfg_reorder *const *cfgs, int n, uint32_t flow_id)
{
	for (int j = 0; j < n; j++)
		for (int i = 0; i < cfgs[j]->nflow_ids; i++)
			if (cfgs[j]->flow_ids[i] == flow_id)
				return j;
	return -1;
}

/* Does rx queue qi feed reorder config r (cfg_rx_owner())? Is it its
 * home (whose worker is woken for the stream's commands)? */
static bool
feeds(const struct cfg_interface *ifc, const struct cfg_reorder *r, int qi)
{
	return (cfg_rx_owner_queues(ifc, r) & (1u << qi)) != 0;
}

static bool
home_of(const struct cfg_interface *ifc, const struct cfg_reorder *r, int qi)
{
	return cfg_rx_owner_queue(ifc, r) == qi;
}

/* Routes of every rule of t, for a worker with these streams. */
static int *
routes_for(const struct cfg_reorder *const *scfg, int nscfg, const int *local,
	   int default_ws, const struct flow_table *t)
{
	int *rs = calloc(t->nrules > 0 ? t->nrules : 1, sizeof(int));

	if (rs == NULL)
		return NULL;
	for (uint32_t i = 0; i < t->nrules; i++) {
		int j = stream_of_flow(scfg, nscfg, t->rules[i].id);

		rs[i] = j < 0 ? default_ws :
		    local[j] >= 0 ? local[j] : WS_ROUTE_MISROUTED;
	}
	return rs;
}

static int *
make_routes(const struct worker *w, const struct flow_table *t)
{
	return routes_for(w->scfg, w->nscfg, w->local, w->default_ws, t);
}

bool
worker_flows_busy(struct worker *w)
{
	return atomic_load_explicit(&w->pending, memory_order_acquire) != NULL;
}

static void
flow_change_free(struct flow_change *fc)
{
	if (fc == NULL)
		return;
	flow_table_free(fc->flows);
	free(fc->rule_stream);
	free(fc->ws);
	free(fc);
}

struct flow_change *
worker_streams_prepare(struct worker *w, const struct flow_table *t,
		       const struct cfg_interface *nifc,
		       struct stream *const *streams,
		       const struct cfg_reorder *const *keep_cfgs, int nstreams)
{
	const struct cfg_reorder *now_cfgs[WORKER_MAX_STREAMS];
	struct flow_change *fc;
	struct stream *raw = w->default_ws >= 0 ? w->ws[w->default_ws].s :
	    NULL;

	if (nstreams > WORKER_MAX_STREAMS) {
		errno = EINVAL;
		return NULL;
	}
	if (atomic_load_explicit(&w->pending, memory_order_acquire) != NULL) {
		errno = EBUSY;
		return NULL;
	}
	flow_change_free(atomic_exchange_explicit(&w->retired, NULL,
	    memory_order_acquire));
	if ((fc = calloc(1, sizeof(*fc))) == NULL)
		return NULL;
	fc->nscfg = nstreams;
	for (int j = 0; j < nstreams; j++) {
		now_cfgs[j] = &nifc->rx.reorders[j];
		fc->scfg[j] = keep_cfgs[j];
		fc->local[j] = feeds(nifc, now_cfgs[j], w->qi) ? fc->nws++ :
		    -1;
	}
	fc->ws = calloc((size_t)fc->nws + 1, sizeof(*fc->ws));
	fc->flows = flow_table_clone(t, 0);
	if (fc->ws == NULL || fc->flows == NULL) {
		flow_change_free(fc);
		errno = ENOMEM;
		return NULL;
	}
	for (int j = 0; j < nstreams; j++)
		if (fc->local[j] >= 0) {
			fc->ws[fc->local[j]].s = streams[j];
			if (home_of(nifc, now_cfgs[j], w->qi))
				stream_set_wake_fd(streams[j], w->wake_fd);
		}
	fc->default_ws = WS_ROUTE_NO_STREAM;
	if (raw != NULL) {
		fc->ws[fc->nws].s = raw;
		fc->default_ws = fc->nws++;
	}
	/* routes from the new streams' flow ids, which the running config
	 * (keep_cfgs) holds only once the reload copied them in */
	fc->rule_stream = routes_for(now_cfgs, nstreams, fc->local,
	    fc->default_ws, fc->flows);
	if (fc->rule_stream == NULL) {
		flow_change_free(fc);
		errno = ENOMEM;
		return NULL;
	}
	return fc;
}

struct flow_change *
worker_flows_prepare(struct worker *w, const struct flow_table *t)
{
	struct flow_change *fc;

	if (atomic_load_explicit(&w->pending, memory_order_acquire) != NULL) {
		errno = EBUSY;
		return NULL;
	}
	/* The previous change's leftovers, if the worker returned them. */
	flow_change_free(atomic_exchange_explicit(&w->retired, NULL,
	    memory_order_acquire));
	fc = calloc(1, sizeof(*fc));
	if (fc == NULL)
		return NULL;
	fc->flows = flow_table_clone(t, 0);
	fc->rule_stream = fc->flows != NULL ? make_routes(w, fc->flows) : NULL;
	if (fc->flows == NULL || fc->rule_stream == NULL) {
		flow_change_free(fc);
		errno = ENOMEM;
		return NULL;
	}
	return fc;
}

void
worker_flows_discard(struct flow_change *fc)
{
	flow_change_free(fc);
}

void
worker_flows_post(struct worker *w, struct flow_change *fc)
{
	if (!w->started) {
		/* Not running: swap here. */
		atomic_store_explicit(&w->pending, fc, memory_order_relaxed);
		take_flow_change(w, worker_clock(w), 0);
		return;
	}
	atomic_store_explicit(&w->pending, fc, memory_order_release);
	if (w->wake_fd >= 0)
		(void)!write(w->wake_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
}

void
worker_reap(struct worker *w)
{
	struct flow_change *old;

	old = atomic_exchange_explicit(&w->retired, NULL, memory_order_acquire);
	flow_change_free(old);
}

int
worker_create(struct worker **out, const struct cfg_interface *ifc, int qi,
	      struct engine *eng, const struct flow_table *flows,
	      struct stream *const *streams,
	      const struct cfg_reorder *const *stream_cfg, int nstreams,
	      struct stream *raw, uint32_t shadow_bytes, char *err,
	      size_t errlen)
{
	const struct cfg_queue *cq = &ifc->rx.queues[qi];
	struct worker *w;

	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (w == NULL)
		return -ENOMEM;
	snprintf(w->name, sizeof(w->name), "%s/%s", ifc->name, cq->name);
	w->qid = cq->id;
	w->qi = qi;
	w->core = cq->cpu_core;
	w->batch = cq->batch_size > 0 && cq->batch_size < ENGINE_MAX_BURST ?
	    cq->batch_size : ENGINE_MAX_BURST;
	w->eng = eng;
	w->q = eng->ops->rxq(eng, qi);
	w->clock = eng->ops->now_ns;
	w->flows = flow_table_clone(flows, 0);
	w->jobs = reorder_jobs_create((unsigned)qi);
	w->wake_fd = -1;
	w->idle_ns = WORKER_IDLE_NS;
	w->group[0] = w;
	w->ngroup = 1;
	atomic_store_explicit(&w->beat_ns, daqiri_mono_ns(),
	    memory_order_relaxed);
	{
		const char *wq = getenv(WORKER_WEDGE_ENV);

		w->wedge = wq != NULL && (strcmp(wq, w->name) == 0 ||
		    strcmp(wq, cq->name) == 0);
		w->wedge_file = getenv(WORKER_WEDGE_FILE_ENV);
	}
	if (w->q == NULL || w->flows == NULL || w->jobs == NULL) {
		int rc = w->q == NULL ? -EINVAL : -ENOMEM;

		snprintf(err, errlen, "queue '%s': %s", w->name, w->q == NULL ?
		    "the engine has no such queue" : "out of memory");
		worker_destroy(w);
		return rc;
	}
	if (shadow_bytes > 0) {
		int rc = gpu_shadow_create(w->batch, shadow_bytes, &w->shadow);

		if (rc != 0) {
			snprintf(err, errlen, "queue '%s': its frames land "
			    "whole in device memory, and their header shadow "
			    "needs CUDA: %s", w->name, gpu_last_error());
			worker_destroy(w);
			return rc;
		}
	}

	/* The streams this queue owns. */
	w->nscfg = nstreams < WORKER_MAX_STREAMS ? nstreams : WORKER_MAX_STREAMS;
	for (int j = 0; j < w->nscfg; j++) {
		w->scfg[j] = stream_cfg[j];
		w->local[j] = -1;
		if (feeds(ifc, stream_cfg[j], qi))
			w->local[j] = w->nws++;
	}
	w->ws = calloc((size_t)w->nws + 1, sizeof(*w->ws));
	if (w->ws == NULL) {
		snprintf(err, errlen, "queue '%s': out of memory", w->name);
		worker_destroy(w);
		return -ENOMEM;
	}
	for (int j = 0; j < w->nscfg; j++)
		if (w->local[j] >= 0)
			w->ws[w->local[j]].s = streams[j];
	/* Frames no reorder config takes go to the raw stream of the queue
	 * that received them (the socket engine spreads datagrams over its
	 * queues by hash, not by flow). */
	w->default_ws = WS_ROUTE_NO_STREAM;
	if (raw != NULL) {
		w->ws[w->nws].s = raw;
		w->default_ws = w->nws++;
	}
	w->rule_stream = make_routes(w, w->flows);
	if (w->rule_stream == NULL) {
		snprintf(err, errlen, "queue '%s': out of memory", w->name);
		worker_destroy(w);
		return -ENOMEM;
	}

	w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->wake_fd < 0) {
		int rc = -errno;

		snprintf(err, errlen, "queue '%s': eventfd: %s", w->name,
		    strerror(errno));
		worker_destroy(w);
		return rc;
	}
	eng->ops->set_wake_fd(w->q, w->wake_fd);
	for (int j = 0; j < w->nscfg; j++)
		if (w->local[j] >= 0 && home_of(ifc, stream_cfg[j], qi))
			stream_set_wake_fd(w->ws[w->local[j]].s, w->wake_fd);
	if (raw != NULL)
		stream_set_wake_fd(raw, w->wake_fd);
	publish_counters(w);
	*out = w;
	return 0;
}

int
worker_join(struct worker *w, struct worker *host)
{
	while (host->host != NULL)
		host = host->host;
	/* a queue on its engine's clock waits alone (the top: Replay) */
	if (w == host || w->started || host->started || w->host != NULL ||
	    w->ngroup > 1 || host->ngroup >= CFG_MAX_QUEUES ||
	    w->clock != NULL || host->clock != NULL)
		return -EINVAL;
	host->group[host->ngroup++] = w;
	w->host = host;
	return 0;
}

int
worker_start(struct worker *w)
{
	int rc;

	/* a member runs in its host's thread */
	if (w->host != NULL)
		return 0;
	rc = pthread_create(&w->thr, NULL, worker_main, w);
	if (rc != 0)
		return -rc;
	w->started = true;
	{
		/* "rx:<queue>" ("+" when others share it) in top -H, perf
		 * and /proc/PID/task/TID/comm */
		const char *q = strchr(w->name, '/');
		char comm[16] = "rx:";
		size_t n, room = sizeof(comm) - 4 - (w->ngroup > 1);

		q = q != NULL ? q + 1 : w->name;
		/* truncated to what the kernel keeps */
		n = strlen(q) < room ? strlen(q) : room;
		memcpy(comm + 3, q, n);
		if (w->ngroup > 1)
			comm[3 + n++] = '+';
		comm[3 + n] = '\0';
		(void)pthread_setname_np(w->thr, comm);
	}
	if (w->core >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		if (w->core < CPU_SETSIZE && w->core < sysconf(_SC_NPROCESSORS_ONLN))
			CPU_SET(w->core, &set);
		if (CPU_COUNT(&set) == 0 ||
		    (rc = pthread_setaffinity_np(w->thr, sizeof(set), &set)) != 0)
			log_warnx("queue '%s': cannot pin to core %d (%s); "
			    "running unpinned", w->name, w->core,
			    CPU_COUNT(&set) == 0 ? "no such core" : strerror(rc));
	}
	return 0;
}

void
worker_stop(struct worker *w)
{
	uint64_t one = 1;

	if (w == NULL)
		return;
	/* a member's thread is its host's */
	if (w->host != NULL) {
		worker_stop(w->host);
		return;
	}
	if (!w->started)
		return;
	atomic_store_explicit(&w->stop, 1, memory_order_release);
	if (w->wake_fd >= 0 && write(w->wake_fd, &one, sizeof(one)) < 0)
		log_warn("queue '%s': waking the worker", w->name);
	pthread_join(w->thr, NULL);
	w->started = false;
}

void
worker_destroy(struct worker *w)
{
	if (w == NULL)
		return;
	worker_stop(w);
	/* the thread is joined: its members are on their own */
	for (int k = 1; k < w->ngroup; k++)
		w->group[k]->host = NULL;
	if (w->host != NULL)
		for (int k = 1; k < w->host->ngroup; k++)
			if (w->host->group[k] == w)
				w->host->group[k] = w->host->group[--w->host->ngroup];
	if (w->wake_fd >= 0)
		close(w->wake_fd);
	worker_reap(w);
	gpu_shadow_destroy(w->shadow);
	flow_change_free(w->pending);
	flow_table_free(w->flows);
	free(w->rule_stream);
	free(w->ws);
	reorder_jobs_free(w->jobs);
	tap_free(&w->tap);
	free(w);
}

struct tap *
worker_tap(struct worker *w)
{
	return &w->tap;
}

const char *
worker_queue_name(const struct worker *w)
{
	return w->name;
}

uint64_t
worker_heartbeat_ns(const struct worker *w)
{
	return atomic_load_explicit(&((struct worker *)w)->beat_ns,
	    memory_order_relaxed);
}

void
worker_set_idle(struct worker *w, uint64_t idle_ns)
{
	w->idle_ns = idle_ns > 0 && idle_ns < WORKER_IDLE_NS ? idle_ns :
	    WORKER_IDLE_NS;
}

int
worker_core(const struct worker *w)
{
	return w->core;
}

int
worker_stats_json(struct worker *w, cJSON *o)
{
	struct worker_counters c;
	static const struct {
		const char *name;
		size_t off;
	} f[] = {
#define F(x) { #x, offsetof(struct worker_counters, x) }
		F(rx_packets), F(rx_bytes), F(matched), F(unmatched),
		F(no_stream), F(misrouted), F(bursts), F(rx_errors),
		F(streams_packets_in), F(inflight), F(inflight_waits),
		F(replay_waits),
#undef F
/* the engine's drops under their reason names (proto/metrics.h) */
		{ "kernel", offsetof(struct worker_counters, engine.kernel) },
		{ "truncated", offsetof(struct worker_counters, engine.truncated) },
#define E(x) { "engine_" #x, offsetof(struct worker_counters, engine.x) }
		E(rx_packets), E(errors), E(gro_reads), E(direct),
#undef E
	};

	worker_snapshot(w, &c);
	if (cJSON_AddStringToObject(o, "queue", w->name) == NULL ||
	    cJSON_AddNumberToObject(o, "tap_taken", (double)atomic_load_explicit(
	    &worker_tap(w)->taken_total, memory_order_relaxed)) == NULL ||
	    cJSON_AddNumberToObject(o, "tap_full", (double)atomic_load_explicit(
	    &worker_tap(w)->full_total, memory_order_relaxed)) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (cJSON_AddNumberToObject(o, f[i].name,
		    (double)*(const uint64_t *)(const void *)
		    ((const char *)&c + f[i].off)) == NULL)
			return -ENOMEM;
	return 0;
}
