/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reorder stage: a window of open batches that places every packet's
 * payload at its slot, publishes one tensor per batch strictly in batch
 * order and accounts for every packet; plus the CPU placement backend.
 *
 * The exact rules (DESIGN.md "Reorder semantics"; tests/unit/check_reorder.c
 * holds an independent model of them):
 *
 * Geometry (derived once, by geom_reorder() in geometry.c). ppb =
 * packets_per_batch (a power of two for both methods), S = number of
 * batch ids: 2^batch_bits (seq_batch_number) or 2^seq_bits / ppb
 * (seq_packets_per_batch), W = min(window, S/2), at least 1. Batch id =
 * the batch field, or seq / ppb; slot = seq mod ppb. Ids compare as
 * serial numbers: sdiff(a, b) = (a - b) mod S taken in (-S/2, S/2].
 *
 * Malformed. A frame too short for a bit field, or whose payload length
 * (frame length - payload_byte_offset) is not payload_bytes, is counted
 * `malformed` and dropped.
 *
 * Window. `base` is the oldest unresolved batch id: every id before it
 * has been published or passed over. Open batches lie in [base, base+W).
 * The first valid packet sets base to its id. For a packet of batch b,
 * d = sdiff(b, base):
 *  - 0 <= d < W: b is opened if it is not open (its first packet), then
 *    the packet is placed, or counted `duplicate` if its slot is filled.
 *  - d >= W (ahead): the window slides so that b is its newest id
 *    (base = b - W + 1); open batches now before base are published in
 *    order (partial ones flagged EVICTED), then b is opened as above. A
 *    jump far ahead thus publishes everything open and leaves a gap.
 *  - -W <= d < 0: b was published or passed over: `late`, dropped --
 *    unless the packet shows that the sender restarted (below).
 *  - d < -W: the sender restarted (below).
 *
 * Resync. A sender that restarts its counter looks like a packet far
 * behind the window (d < -W), or, when it restarts close behind where it
 * was, like a stream of late packets. So a late packet starts a new epoch
 * too (a resync) when
 *  - time: its batch's position was published or passed over more than
 *    resync_after_us before now (the burst's time; 0 turns the rule off;
 *    the last REORDER_CLOSED_MAX positions keep that time, a position
 *    with no time kept -- before the first packet -- never resyncs by
 *    time). A real straggler arrives within its batch's deadline, so at
 *    most timeout_us after the batch went out: resync_after_us >=
 *    timeout_us (the config checks it) never takes one for a restart.
 *  - volume: it is the R-th late packet in a row, R = max(ppb,
 *    REORDER_RESYNC_RUN_MIN): a whole batch's worth. Any packet of an
 *    open or newer batch (d >= 0) ends the row; a malformed one does not.
 * On a resync every open batch is published in order (partial ones
 * flagged EVICTED), `resync` is counted, base = b and the row restarts;
 * the packet then opens b like any other and is placed. The late packets
 * of the row before it stay counted `late` (their payload is gone), so
 * packets_in = placed + drops holds exactly. The first tensor published
 * after a resync carries RESYNC (beside COMPLETE or HAS_GAPS + cause).
 *
 * Publication. A batch opened when its first packet arrives gets a buffer
 * from the owner and a fixed deadline, that packet's rx_ns + timeout_us
 * (none when timeout_us is 0). Publication is strictly in batch order:
 * only the oldest open batch is ever published on its own, when it is
 * complete (all ppb slots, COMPLETE) or when its deadline is <= now
 * (TIMEOUT); when it goes, base moves past it, so ids between the old base
 * and it that never opened are passed over. A newer batch that completed
 * or expired waits until it is the oldest open one, then follows at once.
 * The plan drains (publishes what that rule allows) at the start of every
 * burst, after every packet, and in reorder_poll(). Slides, resyncs and
 * reorder_flush() (FLUSH) publish the batches they push out in order.
 * Flags: COMPLETE when every slot arrived, otherwise HAS_GAPS plus the
 * cause (TIMEOUT, EVICTED or FLUSH); missing slots are filled per
 * the config (zero, nan, keep) and counted in `missing_slots`. Every
 * published batch counts once in batches_complete (complete), or else
 * batches_timeout (deadline) or batches_evicted (slide, resync, flush).
 * A tensor's RESYNC flag says it starts a new epoch.
 * The descriptor's seq counts published tensors: 0, 1, 2, ... with no
 * gaps; lost batches show as gaps in batch_id.
 *
 * No buffer. A batch that finds no free buffer when it opens is counted
 * once in batches_no_buffer; it stays in the window like any open batch
 * (so later batches keep their ids and order) but all its packets count
 * as `no_buffer`, and when it would be published it is dropped
 * instead. It never completes, so it holds newer batches until its
 * deadline, a slide, a resync or a flush. The next batch to open asks the
 * owner again, so the stream recovers as soon as a buffer is free.
 *
 * Backend errors. placed counts a packet when the backend's commit()
 * after it succeeds (the plan commits at the end of every burst and
 * before every publication, so no packet waits uncounted when stats are
 * read). A failed commit() counts the packets it covered as
 * `backend_error` and marks every batch they went to failed; a
 * failed finish() marks its batch. A failed batch stays in the window
 * like a no-buffer one (its later packets count as backend_error,
 * duplicates still as duplicate) and when it would be published it is
 * dropped instead: its buffer goes back through owner.put(), it counts
 * once in batches_backend_error and takes no descriptor seq. So a tensor
 * is published only when every write into it was confirmed. The first
 * failure is logged, then at most one line per REORDER_ERROR_LOG_NS with
 * the count since the last line.
 *
 * Missing action (missing_action, the reference's key). passthrough
 * publishes a batch that did not complete as above (HAS_GAPS plus its
 * cause). drop publishes only complete batches: one whose deadline
 * passed, or that a slide, a resync or a flush pushes out, while a slot
 * is missing goes back through owner.put() unfilled, counts once in
 * batches_incomplete (not in batches_timeout or batches_evicted: the
 * batch outcomes stay a partition) and its packets in `incomplete`; it
 * takes no descriptor seq, so the seq of published tensors stays gapless
 * and the dropped batch shows, as a lost one does, as a gap in batch_id.
 * A RESYNC mark waits for the next tensor published. Its packets stay in
 * placed: placed says a packet's write was confirmed, which is known at
 * commit(), while its batch's fate is known only later, and a counter
 * read as a Prometheus counter must never go down. So the identity
 * packets_in = placed + duplicate + late + malformed + no_buffer +
 * backend_error stays exact at every instant, and incomplete is a part
 * of placed (incomplete <= placed): packets in published tensors =
 * placed - incomplete - those of batches still open. A batch that failed
 * (backend_error) or had no buffer (no_buffer) is counted there, never
 * as incomplete. A reload can change missing_action live (batches open
 * then are finished by the new one).
 *
 * Direct placement (CPU backend copying raw bytes only). Before a
 * receive, reorder_place_hints() names the slots the next packets take if
 * they come in order: after the last packet placed, through its batch and
 * on into the next one, which is opened in a buffer got ahead (the
 * spare; the next batch to open takes it, whichever that is). The engine
 * receives payloads straight into them and marks such frames with a
 * stash. A frame found in its own slot is placed without a copy (a hit).
 * Any other frame is placed by a copy as always; so is one whose guess
 * was wrong (moved). Nothing is lost on a wrong guess because a frame
 * still in a destination is copied to its stash (staged) before a write
 * to that destination, and before its destination's buffer is published,
 * filled or given back; a frame's fields are read from its stash once it
 * is there. Destinations are slots not yet filled, so whatever a wrong
 * guess wrote there is a missing slot's content until it is filled
 * (zero, nan); with fill keep the plan gives no hints, because that
 * content could be any datagram the socket received.
 *
 * Shared plans (a stream whose flows spread over several rx queues:
 * cfg_owner.c). Every worker of those queues feeds the one plan, which
 * keeps one window, one publication order and one set of counters, so
 * every rule above holds for the stream as a whole, whichever queue a
 * packet came by. The caller serialises every call on the plan with a
 * lock (stream_worker.c) except reorder_jobs_run(): the decisions --
 * window, duplicate (the bitmap bit is claimed under the lock, so a
 * packet that came by both queues is placed once), late, resync,
 * counters -- are made under it, while the copies into the slots, the
 * work that needs the cores, run outside it, concurrently. So
 * reorder_burst_shared() records each placement as a job instead of
 * writing it, and counts a writer on its batch; the caller runs the jobs
 * after letting the lock go, and each writer is let go (release) after
 * its copy and a store fence. A batch is published only with no writer
 * left: drain() leaves a complete or expired head with writers for the
 * next drain (the one after the jobs run), and a batch that must go now
 * (slide, resync, flush, a smaller window) first runs the caller's own
 * jobs, then waits for the other workers' (acquire), who need no lock to
 * finish. placed counts a packet when its job is recorded: the CPU
 * backend, the only one a shared plan takes, cannot fail a write, and a
 * tensor is published only after every write into it. Direct placement
 * is off (a hint belongs to one worker's receive). A restart shows in
 * every feeder at once (the sender spreads over all of them), while a
 * feeder that only lags behind the others sends a run of late packets
 * alone: so a late run resyncs a shared plan only when every feeder has
 * packets in it -- by time, or far behind the window (d < -W), once each
 * has one; by volume once each has its share of R (R / feeders, at least
 * 1). Until then a packet far behind is late like any other. A payload split over
 * the frame's two parts is joined in the plan's bounce buffer and written
 * at once, under the lock.
 *
 * Bitmap: bit s (slot s) is bitmap[s / 64] >> (s % 64) & 1. Nothing here
 * allocates, locks or makes a syscall per packet.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "convert_cpu.h"
#include "log.h"
#include "reorder.h"

const char *const reorder_counter_names[REORDER_NCOUNTERS] = {
	"packets_in", "placed", "duplicate", "late", "malformed",
	"no_buffer", "batches_complete", "batches_timeout",
	"batches_evicted", "batches_no_buffer", "resync", "missing_slots",
	"backend_error", "batches_backend_error", "incomplete",
	"batches_incomplete",
};

_Static_assert(REORDER_CLOSED_MAX >= CFG_WINDOW_MAX &&
    (REORDER_CLOSED_MAX & (REORDER_CLOSED_MAX - 1)) == 0,
    "the closed positions cover the largest window");

_Static_assert(sizeof(struct reorder_counters) ==
    REORDER_NCOUNTERS * sizeof(uint64_t), "one name per counter");

/* One open batch. pos is the plan's unwrapped position of the batch. */
struct rbatch {
	uint64_t pos;
	uint64_t id;
	uint64_t first_rx_ns;
	uint64_t last_rx_ns;
	uint64_t deadline;		/* UINT64_MAX = none */
	uint32_t received;
	bool open;
	bool has_buf;
	bool written;			/* written to since the last commit */
	bool failed;			/* a write into buf failed: drop it */
	struct reorder_buf buf;
};

/* Direct placement: a run of consecutive destinations of one buffer. */
struct hint_run {
	uint8_t *addr;			/* the first one */
	uint32_t n;
	uint32_t first;			/* its index among the hints */
};
#define REORDER_HINT_RUNS	8
/* Most buffers got ahead: the batches after the one being filled that
 * the hints run into (more only matters for very small batches). */
#define REORDER_SPARES		3

/* A frame of this burst received into a destination: src is where its
 * payload is now (the destination, or its stash once staged). */
struct sframe {
	const uint8_t *src;
	uint8_t *stash;
};

/* A shared plan's placement to make outside its lock (the rules at the
 * top): buf is a copy of its batch's (which stays lent while the job's
 * writer is counted), w its writers[] index. */
struct reorder_job {
	struct reorder_buf buf;
	const uint8_t *src;
	uint32_t slot;
	uint32_t w;
};

struct reorder_jobs {
	uint32_t feeder;		/* the caller's bit in feeders */
	unsigned n;
	struct reorder_job j[REORDER_BURST_MAX];
};

/* A position the window passed: when it was published or passed over. */
struct rclosed {
	uint64_t pos;
	uint64_t ns;
	bool set;
};

struct reorder_plan {
	struct cfg_reorder cfg;
	struct reorder_owner owner;
	const struct reorder_backend *be;
	void *be_state;
	struct reorder_geom g;
	struct reorder_counters c;
	uint64_t id_mask;		/* S - 1 */
	uint64_t timeout_ns;		/* 0 = none */
	uint32_t ring_mask;		/* ring size (power of two >= W) - 1 */
	struct rbatch *ring;
	bool started;
	/* id of position pos is (pos + id_off) & id_mask */
	uint64_t id_off;
	uint64_t base_pos;		/* oldest unresolved position */
	uint64_t head_pos;		/* oldest open position (nopen > 0) */
	uint32_t nopen;
	uint64_t next_seq;		/* seq of the next published tensor */
	uint8_t *bounce;		/* in_bytes: a payload split in two */
	uint64_t pending;		/* packets placed since the last commit */
	bool written;			/* any batch written since then */
	uint64_t err_log_ns;		/* last backend error line; 0 = none */
	uint64_t err_unlogged;		/* failures since that line */
	uint64_t resync_after_ns;	/* 0 = no resync by time */
	uint32_t resync_run;		/* late packets in a row that resync */
	uint32_t late_run;		/* late packets in a row now */
	bool mark_resync;		/* the next tensor starts an epoch */
	uint64_t last_bad_len;		/* the last malformed frame's bytes */
	struct rclosed closed[REORDER_CLOSED_MAX];

	/* Shared plans (the rules at the top): writers of the open batch at
	 * position pos in writers[pos % REORDER_CLOSED_MAX] (the open
	 * positions lie within one window, so each has its own); jobs is
	 * the caller's list during reorder_burst_shared(), else NULL. */
	bool shared;
	_Atomic uint32_t writers[REORDER_CLOSED_MAX];
	struct reorder_jobs *jobs;
	uint32_t feeders;		/* every feeder's bit */
	uint32_t nfeeders;
	/* the late run's packets per feeder (bit i: feeder_run[i]) */
	uint32_t feeder_run[32];

	/* Direct placement (the rules at the top) */
	bool direct;			/* the plan places directly */
	bool nx_set;			/* the slot after the last one */
	uint64_t nx_pos;
	uint32_t nx_slot;
	uint32_t nspare;		/* buffers got ahead, in the order */
	struct reorder_buf spare[REORDER_SPARES];	/* batches open */
	struct hint_run runs[REORDER_HINT_RUNS];
	uint32_t nruns;
	uint32_t nhints;
	int32_t *occupant;		/* per hint: the frame in it */
	struct sframe *sf;		/* per frame of the burst */
	uint32_t sf_n;			/* frames; 0 = no direct frame */
	uint32_t sf_next;		/* frames before it are done with */
	struct reorder_direct_counters dc;
};

bool
reorder_field(const struct rx_frame *pkt, uint32_t bit_offset,
	      uint32_t bit_width, uint32_t *out)
{
	uint64_t total, end, acc = 0;
	uint32_t first, last, i;

	if (bit_width < 1 || bit_width > 32)
		return false;
	total = (uint64_t)pkt->hdr_len + pkt->payload_len;
	end = (uint64_t)bit_offset + bit_width;
	if (end > total * 8)
		return false;
	first = bit_offset / 8;
	last = (uint32_t)((end - 1) / 8);
	if (last >= pkt->hdr_len && (pkt->flags & RX_FRAME_DEV_PAYLOAD))
		return false;	/* past the header shadow */
	for (i = first; i <= last; i++)
		acc = acc << 8 | (i < pkt->hdr_len ? pkt->hdr[i] :
		    pkt->payload[i - pkt->hdr_len]);
	acc >>= (uint64_t)(last + 1) * 8 - end;
	*out = (uint32_t)(acc & ((1ull << bit_width) - 1));
	return true;
}

/* (a - b) mod S, as a signed value in (-S/2, S/2]. */
static int64_t
sdiff(const struct reorder_plan *p, uint64_t a, uint64_t b)
{
	uint64_t u = (a - b) & p->id_mask;

	if (u > (p->id_mask + 1) / 2)
		return (int64_t)u - (int64_t)(p->id_mask + 1);
	return (int64_t)u;
}

static struct rbatch *
slot_of(const struct reorder_plan *p, uint64_t pos)
{
	return &p->ring[pos & p->ring_mask];
}

/* The open batch at pos, or NULL. */
static struct rbatch *
open_at(const struct reorder_plan *p, uint64_t pos)
{
	struct rbatch *r = slot_of(p, pos);

	return r->open && r->pos == pos ? r : NULL;
}

/* Move base forward to `to`, keeping when the positions it passes went
 * (the last REORDER_CLOSED_MAX of them are all a late packet can ask). */
static void
pass_base(struct reorder_plan *p, uint64_t to, uint64_t now_ns)
{
	uint64_t q = p->base_pos;

	if (to <= q)
		return;
	if (to - q > REORDER_CLOSED_MAX)
		q = to - REORDER_CLOSED_MAX;
	for (; q < to; q++) {
		struct rclosed *c = &p->closed[q & (REORDER_CLOSED_MAX - 1)];

		c->pos = q;
		c->ns = now_ns;
		c->set = true;
	}
	p->base_pos = to;
}

/*
 * A shared plan's restart: the sender spreads over every feeder, so a
 * restarted one makes every feeder's packets late, while a feeder that
 * only lags behind the others (preempted, overloaded) sends a run of late
 * packets of its own alone. So a late run resyncs a shared plan only
 * when every feeder is in it: by time or far behind (by_time) once each
 * has a packet in it, by volume once each has its share of R (R /
 * feeders, at least 1).
 */
static bool
shared_resyncs(struct reorder_plan *p, bool by_time)
{
	uint32_t f = p->jobs != NULL ? p->jobs->feeder : 0, share;
	bool every = true, volume = true;

	if (f < 32)
		p->feeder_run[f]++;
	p->late_run++;
	share = p->resync_run / (p->nfeeders > 0 ? p->nfeeders : 1);
	if (share == 0)
		share = 1;
	for (uint32_t i = 0; i < 32; i++) {
		if (!(p->feeders & (1u << i)))
			continue;
		every &= p->feeder_run[i] > 0;
		volume &= p->feeder_run[i] >= share;
	}
	return every && (by_time || volume);
}

/* Does a packet behind the window, for position pos, show that the sender
 * restarted? (The rules at the top: far behind it, by time, or by a whole
 * batch of late packets.) */
static bool
late_resyncs(struct reorder_plan *p, uint64_t pos, bool far, uint64_t now_ns)
{
	const struct rclosed *c = &p->closed[pos & (REORDER_CLOSED_MAX - 1)];
	bool by_time = p->resync_after_ns != 0 && c->set && c->pos == pos &&
	    now_ns > c->ns && now_ns - c->ns > p->resync_after_ns;

	if (p->shared)
		return shared_resyncs(p, by_time || far);
	if (far || by_time)
		return true;
	return ++p->late_run >= p->resync_run;
}

/* The late run ends (a packet of an open or newer batch, a resync). */
static void
late_run_end(struct reorder_plan *p)
{
	p->late_run = 0;
	if (p->shared)
		memset(p->feeder_run, 0, sizeof(p->feeder_run));
}

static void
open_batch(struct reorder_plan *p, struct rbatch *r, uint64_t pos,
	   uint64_t rx_ns)
{
	bool got;

	memset(r, 0, sizeof(*r));
	r->pos = pos;
	r->id = (pos + p->id_off) & p->id_mask;
	r->first_rx_ns = rx_ns;
	r->last_rx_ns = rx_ns;
	if (p->timeout_ns == 0)
		r->deadline = UINT64_MAX;
	else if (rx_ns > UINT64_MAX - p->timeout_ns)
		r->deadline = UINT64_MAX - 1;
	else
		r->deadline = rx_ns + p->timeout_ns;
	r->open = true;
	if (p->nspare > 0) {
		r->buf = p->spare[0];
		memmove(p->spare, p->spare + 1,
		    --p->nspare * sizeof(p->spare[0]));
		got = true;
	} else {
		got = p->owner.get(p->owner.ctx, &r->buf) == 0;
	}
	if (got) {
		r->has_buf = true;
		memset(r->buf.bitmap, 0, ((p->g.ppb + 63) / 64) * 8);
	} else {
		r->has_buf = false;
		p->c.batches_no_buffer++;
	}
	if (p->nopen == 0 || pos < p->head_pos)
		p->head_pos = pos;
	p->nopen++;
}

static void
backend_failed(struct reorder_plan *p, const char *what, int rc,
	       uint64_t now_ns)
{
	p->err_unlogged++;
	if (p->err_log_ns != 0 && now_ns - p->err_log_ns < REORDER_ERROR_LOG_NS)
		return;
	log_warnx("reorder '%s': backend %s: %s failed: %s; batches written "
	    "to are dropped (backend_error; %llu failure(s) since the last "
	    "report)", p->cfg.name, p->be->name, what, strerror(rc < 0 ? -rc :
	    rc != 0 ? rc : EIO), (unsigned long long)p->err_unlogged);
	p->err_log_ns = now_ns != 0 ? now_ns : 1;
	p->err_unlogged = 0;
}

/* Commit what was placed since the last commit; count it placed, or on
 * failure backend_error, failing every batch it went to. */
static void
commit(struct reorder_plan *p, uint64_t now_ns)
{
	uint32_t i;
	int rc;

	rc = p->be->commit(p->be_state);
	if (rc == 0 && !p->written)
		return;
	if (rc == 0) {
		p->c.placed += p->pending;
	} else {
		p->c.backend_error += p->pending;
		for (i = 0; i <= p->ring_mask; i++)
			if (p->ring[i].open && p->ring[i].written)
				p->ring[i].failed = true;
		backend_failed(p, "commit", rc, now_ns);
	}
	for (i = 0; i <= p->ring_mask; i++)
		p->ring[i].written = false;
	p->pending = 0;
	p->written = false;
}

/* The index of the hint at addr, or -1. */
static int32_t
hint_of(const struct reorder_plan *p, const uint8_t *addr)
{
	uint64_t sb = p->g.slot_bytes, off;
	uint32_t i;

	for (i = 0; i < p->nruns; i++) {
		const struct hint_run *h = &p->runs[i];

		if (addr < h->addr)
			continue;
		off = (uint64_t)(addr - h->addr);
		if (off < h->n * sb && off % sb == 0)
			return (int32_t)(h->first + off / sb);
	}
	return -1;
}

/* Frame j leaves its destination for its stash. */
static void
stage(struct reorder_plan *p, uint32_t j)
{
	struct sframe *f = &p->sf[j];

	memcpy(f->stash, f->src, p->g.in_bytes);
	f->src = f->stash;
	p->dc.staged++;
}

/* Before dst is written: a frame not done with that is still there
 * goes to its stash. */
static void
guard_slot(struct reorder_plan *p, const uint8_t *dst)
{
	int32_t k = hint_of(p, dst), j;

	if (k < 0 || (j = p->occupant[k]) < 0 || (uint32_t)j < p->sf_next)
		return;
	if (p->sf[j].src == dst)
		stage(p, (uint32_t)j);
}

/* Before buf is published, filled or given back: frames not done with
 * that are still in it go to their stash. */
static void
guard_buf(struct reorder_plan *p, const struct reorder_buf *buf)
{
	const uint8_t *lo = buf->data, *hi = lo + p->g.tensor_bytes;
	uint32_t j;

	for (j = p->sf_next; j < p->sf_n; j++)
		if (p->sf[j].src != p->sf[j].stash && p->sf[j].src >= lo &&
		    p->sf[j].src < hi)
			stage(p, j);
}

/* Before the burst: which frames are in a destination, and where. A
 * frame in memory that is no hint of this plan's is staged at once. */
static void
direct_begin(struct reorder_plan *p, const struct rx_frame *pkts,
	     unsigned n)
{
	unsigned i;
	int32_t k;

	p->sf_n = 0;
	p->sf_next = 0;
	for (i = 0; i < n && pkts[i].stash == NULL; i++)
		;
	if (i == n)
		return;
	for (k = 0; k < (int32_t)p->nhints; k++)
		p->occupant[k] = -1;
	for (i = 0; i < n; i++) {
		struct sframe *f = &p->sf[i];

		f->stash = pkts[i].stash;
		f->src = pkts[i].stash != NULL ? pkts[i].payload : NULL;
		if (f->src == NULL)
			continue;
		if (!p->direct || pkts[i].payload_len != p->g.in_bytes ||
		    (k = hint_of(p, f->src)) < 0 || p->occupant[k] >= 0) {
			/* not where this plan's hints are: copy it out */
			memcpy(f->stash, f->src, pkts[i].payload_len);
			f->src = f->stash;
			continue;
		}
		p->occupant[k] = (int32_t)i;
	}
	p->sf_n = n;
}

static _Atomic uint32_t *
writers_of(struct reorder_plan *p, uint64_t pos)
{
	return &p->writers[pos & (REORDER_CLOSED_MAX - 1)];
}

static bool
has_writers(struct reorder_plan *p, uint64_t pos)
{
	return p->shared && atomic_load_explicit(writers_of(p, pos),
	    memory_order_acquire) != 0;
}

/* A batch of a shared plan that must go now: its writes first, the
 * caller's own at once, the other workers' (who need no lock to finish
 * them) waited for. */
static void
wait_writers(struct reorder_plan *p, uint64_t pos)
{
	if (!has_writers(p, pos))
		return;
	if (p->jobs != NULL)
		reorder_jobs_run(p, p->jobs);
	while (has_writers(p, pos))
		sched_yield();
}

/* Publish (or, without a buffer or after a backend error, drop) the
 * oldest open batch. cause is the flag a partial batch gets. */
static void
publish_head(struct reorder_plan *p, uint32_t cause, uint64_t now_ns)
{
	struct rbatch *r = slot_of(p, p->head_pos);
	struct daqiri_desc d;
	uint64_t q, end;
	bool complete = false, drop = false;
	int rc;

	wait_writers(p, r->pos);

	if (r->has_buf && p->sf_n > 0)
		guard_buf(p, &r->buf);
	if (r->has_buf) {
		complete = r->received == p->g.ppb;
		drop = !complete &&
		    p->cfg.missing_action == CFG_MISSING_DROP;
		if (!complete && !drop && !r->failed) {
			p->be->fill(p->be_state, &r->buf);
			r->written = p->written = true;
		}
		/* a dropped batch is committed too: its packets are then
		 * placed (or backend_error) like any other's */
		commit(p, now_ns);
		if (!r->failed && !drop && p->be->finish != NULL &&
		    (rc = p->be->finish(p->be_state, &r->buf)) != 0) {
			r->failed = true;
			backend_failed(p, "finish", rc, now_ns);
		}
	}
	if (r->has_buf && r->failed) {
		p->c.batches_backend_error++;
		p->owner.put(p->owner.ctx, &r->buf);
	} else if (r->has_buf && drop) {
		p->c.batches_incomplete++;
		p->c.incomplete += r->received;
		p->owner.put(p->owner.ctx, &r->buf);
	} else if (r->has_buf) {
		memset(&d, 0, sizeof(d));
		if (complete) {
			d.flags = DAQIRI_TENSOR_COMPLETE;
			p->c.batches_complete++;
		} else {
			d.flags = DAQIRI_TENSOR_HAS_GAPS | cause;
			p->c.missing_slots += p->g.ppb - r->received;
			if (cause == DAQIRI_TENSOR_TIMEOUT)
				p->c.batches_timeout++;
			else
				p->c.batches_evicted++;
		}
		d.buf_index = r->buf.index;
		d.seq = p->next_seq++;
		d.batch_id = r->id;
		d.packets_expected = p->g.ppb;
		d.packets_received = r->received;
		d.bytes = p->g.tensor_bytes;
		d.first_rx_ns = r->first_rx_ns;
		d.last_rx_ns = r->last_rx_ns;
		d.publish_ns = now_ns;
		if (p->mark_resync) {
			d.flags |= DAQIRI_TENSOR_RESYNC;
			p->mark_resync = false;
		}
		p->owner.publish(p->owner.ctx, &d, &r->buf);
	}
	r->open = false;
	p->nopen--;
	pass_base(p, r->pos + 1, now_ns);
	if (p->nopen == 0)
		return;
	/* the other open batches lie in (pos, pos + W): base <= pos */
	end = r->pos + p->g.window - 1;
	for (q = r->pos + 1; q <= end; q++) {
		if (open_at(p, q) != NULL) {
			p->head_pos = q;
			return;
		}
	}
}

/* Publish the oldest open batches while they are complete or expired. */
static void
drain(struct reorder_plan *p, uint64_t now_ns)
{
	struct rbatch *r;

	while (p->nopen > 0) {
		r = slot_of(p, p->head_pos);
		/* a shared plan's writes still under way: the next drain */
		if (has_writers(p, r->pos))
			break;
		if (r->has_buf && r->received == p->g.ppb)
			publish_head(p, 0, now_ns);
		else if (r->deadline <= now_ns)
			publish_head(p, DAQIRI_TENSOR_TIMEOUT, now_ns);
		else
			break;
	}
}

static void
publish_all(struct reorder_plan *p, uint32_t cause, uint64_t now_ns)
{
	while (p->nopen > 0)
		publish_head(p, cause, now_ns);
}

/* The payload of a packet, contiguous (through the bounce buffer when the
 * frame's two parts split it). The caller checked the length. */
static const uint8_t *
payload_of(struct reorder_plan *p, const struct rx_frame *pkt)
{
	uint32_t off = p->cfg.payload_byte_offset, n = p->g.in_bytes, h;

	/* a frame whole in device memory: hdr copies its first bytes,
	 * payload goes on right after them there */
	if (pkt->flags & RX_FRAME_DEV_PAYLOAD)
		return pkt->payload - pkt->hdr_len + off;
	if (off >= pkt->hdr_len)
		return pkt->payload + (off - pkt->hdr_len);
	if ((uint64_t)off + n <= pkt->hdr_len)
		return pkt->hdr + off;
	h = pkt->hdr_len - off;
	memcpy(p->bounce, pkt->hdr + off, h);
	memcpy(p->bounce + h, pkt->payload, n - h);
	return p->bounce;
}

/* Place the packet of this burst's frame sf_next in a burst with direct
 * frames: a hit costs nothing; anything else is copied, once whatever is
 * still in its destination is safe. */
static void
place_direct(struct reorder_plan *p, struct rbatch *r, uint32_t slot,
	     const struct rx_frame *pkt)
{
	const struct sframe *f = &p->sf[p->sf_next];
	uint8_t *dst = (uint8_t *)r->buf.data +
	    (uint64_t)slot * p->g.slot_bytes;

	if (f->src == dst) {
		p->dc.hits++;
		return;
	}
	if (p->direct)
		guard_slot(p, dst);
	if (f->src != NULL)
		p->dc.moved++;
	p->be->place(p->be_state, &r->buf, slot,
	    f->src != NULL ? f->src : payload_of(p, pkt));
}

/* A shared plan's placement: a job for the caller to run outside the
 * lock, its batch's writer counted; a payload joined in the bounce
 * buffer, which the next packet reuses, is written now. */
static void
defer(struct reorder_plan *p, const struct rbatch *r, uint32_t slot,
      const uint8_t *src)
{
	struct reorder_job *j;

	if (src == p->bounce) {
		p->be->place(p->be_state, &r->buf, slot, src);
		return;
	}
	j = &p->jobs->j[p->jobs->n++];
	j->buf = r->buf;
	j->src = src;
	j->slot = slot;
	j->w = (uint32_t)(r->pos & (REORDER_CLOSED_MAX - 1));
	atomic_fetch_add_explicit(&p->writers[j->w], 1, memory_order_relaxed);
}

static void
one_packet(struct reorder_plan *p, const struct rx_frame *pkt,
	   uint64_t now_ns)
{
	uint64_t total, b, pos;
	uint32_t seq, bf, slot;
	struct rx_frame moved;
	struct rbatch *r;
	int64_t d;

	p->c.packets_in++;
	/* A direct frame already copied to its stash: its destination may
	 * hold another packet by now, and a field may lie in the payload. */
	if (p->sf_n > 0 && p->sf[p->sf_next].src != NULL &&
	    p->sf[p->sf_next].src != pkt->payload) {
		moved = *pkt;
		moved.payload = p->sf[p->sf_next].src;
		pkt = &moved;
	}
	total = (uint64_t)pkt->hdr_len + pkt->payload_len;
	if (!reorder_field(pkt, p->cfg.seq.bit_offset, p->cfg.seq.bit_width,
	    &seq) || total < p->cfg.payload_byte_offset ||
	    total - p->cfg.payload_byte_offset != p->g.in_bytes) {
		p->c.malformed++;
		p->last_bad_len = total;
		return;
	}
	if (p->cfg.method == CFG_METHOD_SEQ_BATCH_NUMBER) {
		if (!reorder_field(pkt, p->cfg.batch.bit_offset,
		    p->cfg.batch.bit_width, &bf)) {
			p->c.malformed++;
			p->last_bad_len = total;
			return;
		}
		b = bf & p->id_mask;
	} else {
		b = ((uint64_t)seq >> p->g.ppb_shift) & p->id_mask;
	}
	slot = seq & (p->g.ppb - 1);

	if (!p->started) {
		p->started = true;
		p->id_off = (b - p->base_pos) & p->id_mask;
	}
	d = sdiff(p, b, (p->base_pos + p->id_off) & p->id_mask);
	if (d < 0) {
		if (!late_resyncs(p, p->base_pos - (uint64_t)-d,
		    -d > (int64_t)p->g.window, now_ns)) {
			p->c.late++;
			return;
		}
		p->c.resync++;
		late_run_end(p);
		publish_all(p, DAQIRI_TENSOR_EVICTED, now_ns);
		p->id_off = (b - p->base_pos) & p->id_mask;
		p->mark_resync = true;
		d = 0;
	} else if (d >= (int64_t)p->g.window) {
		uint64_t target = p->base_pos + (uint64_t)d - p->g.window + 1;

		late_run_end(p);
		while (p->nopen > 0 && p->head_pos < target)
			publish_head(p, DAQIRI_TENSOR_EVICTED, now_ns);
		/* publishing moved base_pos to at most target */
		pass_base(p, target, now_ns);
		d = p->g.window - 1;
	} else {
		late_run_end(p);
	}
	pos = p->base_pos + (uint64_t)d;
	r = open_at(p, pos);
	if (r == NULL) {
		r = slot_of(p, pos);
		open_batch(p, r, pos, pkt->rx_ns);
	}
	if (!r->has_buf) {
		p->c.no_buffer++;
		return;
	}
	if (r->buf.bitmap[slot / 64] & (1ull << (slot % 64))) {
		p->c.duplicate++;
		return;
	}
	r->buf.bitmap[slot / 64] |= 1ull << (slot % 64);
	r->received++;
	r->last_rx_ns = pkt->rx_ns;
	if (r->failed) {
		/* the batch is dropped anyway: do not write into it */
		p->c.backend_error++;
		return;
	}
	if (p->sf_n > 0)
		place_direct(p, r, slot, pkt);
	else if (p->jobs != NULL)
		defer(p, r, slot, payload_of(p, pkt));
	else
		p->be->place(p->be_state, &r->buf, slot, payload_of(p, pkt));
	r->written = p->written = true;
	p->pending++;		/* placed once commit() confirms it */
	if (p->direct) {
		p->nx_set = true;
		p->nx_pos = slot + 1 < p->g.ppb ? pos : pos + 1;
		p->nx_slot = slot + 1 < p->g.ppb ? slot + 1 : 0;
	}
}

void
reorder_burst(struct reorder_plan *p, const struct rx_frame *pkts,
	      unsigned n, uint64_t now_ns)
{
	unsigned i;

	if (n > REORDER_BURST_MAX)
		n = REORDER_BURST_MAX;
	direct_begin(p, pkts, n);
	drain(p, now_ns);
	for (i = 0; i < n; i++) {
		p->sf_next = i;
		one_packet(p, &pkts[i], now_ns);
		p->sf_next = i + 1;
		drain(p, now_ns);
	}
	commit(p, now_ns);
	p->sf_n = 0;
}

void
reorder_burst_shared(struct reorder_plan *p, const struct rx_frame *pkts,
		     unsigned n, uint64_t now_ns, struct reorder_jobs *jobs)
{
	jobs->n = 0;
	p->jobs = p->shared ? jobs : NULL;
	reorder_burst(p, pkts, n, now_ns);
	p->jobs = NULL;
}

void
reorder_jobs_run(struct reorder_plan *p, struct reorder_jobs *jobs)
{
	unsigned i, n = jobs->n;

	jobs->n = 0;
	for (i = 0; i < n; i++)
		p->be->place(p->be_state, &jobs->j[i].buf, jobs->j[i].slot,
		    jobs->j[i].src);
	/* the CPU backend's commit is its store fence, and cannot fail */
	if (n > 0)
		(void)p->be->commit(p->be_state);
	for (i = 0; i < n; i++)
		atomic_fetch_sub_explicit(&p->writers[jobs->j[i].w], 1,
		    memory_order_release);
}

struct reorder_jobs *
reorder_jobs_create(unsigned feeder)
{
	struct reorder_jobs *j = calloc(1, sizeof(struct reorder_jobs));

	if (j != NULL)
		j->feeder = feeder;
	return j;
}

void
reorder_jobs_free(struct reorder_jobs *jobs)
{
	free(jobs);
}

int
reorder_set_shared(struct reorder_plan *p, uint32_t feeders)
{
	if (p->be != &reorder_backend_cpu || feeders == 0)
		return -EINVAL;
	p->shared = true;
	p->direct = false;
	p->feeders = feeders;
	p->nfeeders = (uint32_t)__builtin_popcount(feeders);
	return 0;
}

/* The spares go back between bursts, so an idle stream holds none. */
static void
put_spare(struct reorder_plan *p)
{
	while (p->nspare > 0)
		p->owner.put(p->owner.ctx, &p->spare[--p->nspare]);
}

unsigned
reorder_place_hints(struct reorder_plan *p, uint8_t **dst, unsigned max,
		    uint32_t *payload_off, uint32_t *payload_len)
{
	uint64_t pos, sb = p->g.slot_bytes;
	uint32_t slot, k = 0, spares = 0;
	struct reorder_buf *b;
	struct hint_run *h;
	struct rbatch *r;

	p->nruns = 0;
	p->nhints = 0;
	/* With fill keep a missing slot would show what a wrong guess put
	 * there: any datagram the socket got, another stream's too. */
	if (!p->direct || !p->nx_set || p->cfg.fill == DAQIRI_FILL_KEEP)
		return 0;
	if (max > REORDER_BURST_MAX)
		max = REORDER_BURST_MAX;
	pos = p->nx_pos;
	slot = p->nx_slot;
	if (pos < p->base_pos) {
		/* its batch went out: on from the oldest unresolved one */
		pos = p->base_pos;
		slot = 0;
	}
	while (k < max && p->nruns < REORDER_HINT_RUNS) {
		if (pos - p->base_pos >= p->g.window)
			break;
		if ((r = open_at(p, pos)) != NULL) {
			if (!r->has_buf || r->failed)
				break;
			b = &r->buf;
		} else {
			/* the next batch to open takes the next spare */
			if (spares == p->nspare) {
				if (p->nspare == REORDER_SPARES ||
				    p->owner.get_ahead == NULL ||
				    p->owner.get_ahead(p->owner.ctx,
				    &p->spare[p->nspare]) != 0)
					break;
				p->nspare++;
			}
			b = &p->spare[spares++];
		}
		/* a run that got no slot (its batch had none missing) is
		 * used again */
		if (p->nruns == 0 || p->runs[p->nruns - 1].n > 0)
			p->nruns++;
		h = &p->runs[p->nruns - 1];
		h->addr = (uint8_t *)b->data + slot * sb;
		h->first = k;
		h->n = 0;
		/* the slots still missing, in order; a run is contiguous */
		for (; k < max && slot < p->g.ppb; slot++) {
			if (r != NULL && (r->buf.bitmap[slot / 64] &
			    (1ull << (slot % 64)))) {
				if (h->n == 0) {
					h->addr += sb;
					continue;
				}
				if (p->nruns == REORDER_HINT_RUNS)
					goto out;
				h = &p->runs[p->nruns++];
				h->addr = (uint8_t *)b->data + (slot + 1) * sb;
				h->first = k;
				h->n = 0;
				continue;
			}
			dst[k++] = (uint8_t *)b->data + slot * sb;
			h->n++;
		}
		pos++;
		slot = 0;
	}
out:
	if (p->nruns > 0 && p->runs[p->nruns - 1].n == 0)
		p->nruns--;
	p->nhints = k;
	*payload_off = p->cfg.payload_byte_offset;
	*payload_len = p->g.in_bytes;
	return k;
}

const struct reorder_direct_counters *
reorder_direct_counters(const struct reorder_plan *p)
{
	return &p->dc;
}

void
reorder_poll(struct reorder_plan *p, uint64_t now_ns)
{
	put_spare(p);
	drain(p, now_ns);
}

void
reorder_flush(struct reorder_plan *p, uint64_t now_ns)
{
	put_spare(p);
	drain(p, now_ns);
	publish_all(p, DAQIRI_TENSOR_FLUSH, now_ns);
	commit(p, now_ns);
}

uint64_t
reorder_fence(struct reorder_plan *p)
{
	return p->be->fence != NULL ? p->be->fence(p->be_state) : 0;
}

bool
reorder_fence_done(struct reorder_plan *p, uint64_t mark, bool wait)
{
	if (mark == 0 || p->be->fence_done == NULL)
		return true;
	return p->be->fence_done(p->be_state, mark, wait) != 0;
}

/* Only the oldest open batch's deadline can publish anything: a newer
 * batch that expires first waits behind it (in-order publication). */
uint64_t
reorder_next_deadline(const struct reorder_plan *p)
{
	if (p->nopen == 0)
		return UINT64_MAX;
	return slot_of(p, p->head_pos)->deadline;
}

/* --- a reload's retuning ------------------------------------------------- */

struct reorder_tune {
	uint64_t timeout_ns;
	uint32_t timeout_us;
	enum daqiri_fill fill;
	uint32_t window_cfg;		/* as configured */
	uint32_t window;		/* after the cap */
	bool has_resync_after;
	uint32_t resync_after_us;
	bool has_missing;
	enum cfg_missing missing_action;
	uint32_t ring_mask;
	struct rbatch *ring;		/* the new ring; after apply, the old */
};

struct reorder_tune *
reorder_tune_prepare(const struct reorder_plan *p, uint32_t timeout_us,
		     enum daqiri_fill fill, uint32_t window)
{
	struct reorder_tune *t = calloc(1, sizeof(*t));
	uint32_t ring = 1;

	if (t == NULL)
		return NULL;
	t->timeout_us = timeout_us;
	t->timeout_ns = (uint64_t)timeout_us * 1000;
	t->fill = fill;
	t->window_cfg = window;
	/* id_space is fixed at creation: safe to read beside the worker */
	t->window = geom_window(window, p->g.id_space);
	while (ring < t->window)
		ring <<= 1;
	t->ring_mask = ring - 1;
	t->ring = calloc(ring, sizeof(*t->ring));
	if (t->ring == NULL) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	return t;
}

void
reorder_tune_set_resync_after(struct reorder_tune *t, uint32_t resync_after_us)
{
	t->has_resync_after = true;
	t->resync_after_us = resync_after_us;
}

void
reorder_tune_set_missing(struct reorder_tune *t, enum cfg_missing missing_action)
{
	t->has_missing = true;
	t->missing_action = missing_action;
}

uint32_t
reorder_tune_window(const struct reorder_tune *t)
{
	return t->window;
}

void
reorder_tune_apply(struct reorder_plan *p, struct reorder_tune *t,
		   uint64_t now_ns)
{
	struct rbatch *old = p->ring;
	uint32_t old_mask = p->ring_mask;

	p->timeout_ns = t->timeout_ns;
	p->cfg.timeout_us = t->timeout_us;
	if (p->cfg.fill != t->fill && p->be->set_fill != NULL)
		p->be->set_fill(p->be_state, t->fill);
	p->cfg.fill = t->fill;
	if (t->has_resync_after) {
		p->cfg.resync_after_us = t->resync_after_us;
		p->resync_after_ns = (uint64_t)t->resync_after_us * 1000;
	}
	if (t->has_missing)
		p->cfg.missing_action = t->missing_action;
	/* A smaller window: the open batches must lie in [base, base + W).
	 * Slide as a packet of the newest open batch would. */
	if (t->window < p->g.window && p->nopen > 0) {
		uint64_t newest = p->head_pos;

		for (uint32_t i = 0; i <= old_mask; i++)
			if (old[i].open && old[i].pos > newest)
				newest = old[i].pos;
		if (newest >= p->base_pos + t->window) {
			uint64_t target = newest - t->window + 1;

			while (p->nopen > 0 && p->head_pos < target)
				publish_head(p, DAQIRI_TENSOR_EVICTED, now_ns);
			pass_base(p, target, now_ns);
		}
	}
	/* Every open batch now lies within the new window: one ring slot
	 * each by its position, as before. */
	for (uint32_t i = 0; i <= old_mask; i++)
		if (old[i].open)
			t->ring[old[i].pos & t->ring_mask] = old[i];
	p->ring = t->ring;
	p->ring_mask = t->ring_mask;
	p->g.window = t->window;
	p->cfg.window = t->window_cfg;
	t->ring = old;
}

void
reorder_tune_free(struct reorder_tune *t)
{
	if (t == NULL)
		return;
	free(t->ring);
	free(t);
}

const struct reorder_counters *
reorder_counters(const struct reorder_plan *p)
{
	return &p->c;
}

uint64_t
reorder_last_malformed_bytes(const struct reorder_plan *p)
{
	return p->last_bad_len;
}

const struct reorder_geom *
reorder_geom(const struct reorder_plan *p)
{
	return &p->g;
}

const struct cfg_reorder *
reorder_config(const struct reorder_plan *p)
{
	return &p->cfg;
}

static void
plan_free(struct reorder_plan *p)
{
	free(p->ring);
	free(p->bounce);
	free(p->sf);
	free(p->occupant);
	free(p);
}

struct reorder_plan *
reorder_create(const struct cfg_reorder *r, const struct reorder_owner *owner,
	       const struct reorder_backend *backend)
{
	struct reorder_plan *p;
	uint32_t ring = 1;
	int rc;

	if (r == NULL || owner == NULL || owner->get == NULL ||
	    owner->put == NULL || owner->publish == NULL) {
		errno = EINVAL;
		return NULL;
	}
	if (backend == NULL)
		backend = &reorder_backend_cpu;
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	p->cfg = *r;
	p->owner = *owner;
	p->be = backend;
	/* everything the plan relies on, checked once (geometry.c) */
	if (!geom_reorder(r, &p->g)) {
		free(p);
		errno = EINVAL;
		return NULL;
	}
	p->id_mask = p->g.id_space - 1;
	p->timeout_ns = (uint64_t)r->timeout_us * 1000;
	p->resync_after_ns = (uint64_t)r->resync_after_us * 1000;
	p->resync_run = p->g.ppb > REORDER_RESYNC_RUN_MIN ? p->g.ppb :
	    REORDER_RESYNC_RUN_MIN;
	while (ring < p->g.window)
		ring <<= 1;
	p->ring_mask = ring - 1;
	p->ring = calloc(ring, sizeof(*p->ring));
	p->bounce = malloc(p->g.in_bytes);
	p->sf = calloc(REORDER_BURST_MAX, sizeof(*p->sf));
	p->occupant = calloc(REORDER_BURST_MAX, sizeof(*p->occupant));
	if (p->ring == NULL || p->bounce == NULL || p->sf == NULL ||
	    p->occupant == NULL) {
		plan_free(p);
		errno = ENOMEM;
		return NULL;
	}
	if (p->be->init != NULL && (rc = p->be->init(p, &p->be_state)) != 0) {
		plan_free(p);
		errno = rc < 0 ? -rc : rc;
		return NULL;
	}
	/* a slot is then the payload's bytes as they are (geometry.c) */
	p->direct = p->be == &reorder_backend_cpu &&
	    (!r->has_data_types || r->input_type == DAQIRI_DTYPE_RAW);
	return p;
}

void
reorder_destroy(struct reorder_plan *p)
{
	uint32_t i;

	if (p == NULL)
		return;
	for (i = 0; i <= p->ring_mask; i++) {
		if (p->ring[i].open && p->ring[i].has_buf)
			p->owner.put(p->owner.ctx, &p->ring[i].buf);
		p->ring[i].open = false;
	}
	put_spare(p);
	if (p->be->fini != NULL)
		p->be->fini(p->be_state);
	plan_free(p);
}

/* The CPU backend: converts straight into host memory as packets come. */

struct cpu_state {
	enum daqiri_dtype in;
	enum daqiri_dtype out;
	enum cfg_endian en;
	enum daqiri_fill fill;
	uint32_t in_bytes;
	uint32_t ppb;
	uint64_t slot_bytes;
};

static int
cpu_init(struct reorder_plan *p, void **state)
{
	const struct cfg_reorder *r = reorder_config(p);
	const struct reorder_geom *g = reorder_geom(p);
	struct cpu_state *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return -ENOMEM;
	s->in = r->has_data_types ? r->input_type : DAQIRI_DTYPE_RAW;
	s->out = r->has_data_types ? r->output_type : DAQIRI_DTYPE_RAW;
	s->en = r->endianness;
	s->fill = r->fill;
	s->in_bytes = g->in_bytes;
	s->ppb = g->ppb;
	s->slot_bytes = g->slot_bytes;
	*state = s;
	return 0;
}

static void
cpu_fini(void *state)
{
	free(state);
}

static void
cpu_place(void *state, const struct reorder_buf *buf, uint32_t slot,
	  const uint8_t *in)
{
	struct cpu_state *s = state;

	cvt_slot_fast(s->in, s->out, s->en, in, s->in_bytes,
	    (uint8_t *)buf->data + (uint64_t)slot * s->slot_bytes);
}

static int
cpu_commit(void *state)
{
	(void)state;
	cvt_fence();
	return 0;
}

/* Fill each run of missing slots in one go. */
static void
cpu_fill(void *state, const struct reorder_buf *buf)
{
	struct cpu_state *s = state;
	uint32_t i = 0, j;

	if (s->fill == DAQIRI_FILL_KEEP)
		return;
	while (i < s->ppb) {
		if (buf->bitmap[i / 64] & (1ull << (i % 64))) {
			i++;
			continue;
		}
		for (j = i + 1; j < s->ppb &&
		    !(buf->bitmap[j / 64] & (1ull << (j % 64))); j++)
			;
		cvt_fill_fast(s->out, s->fill,
		    (uint8_t *)buf->data + (uint64_t)i * s->slot_bytes,
		    (uint64_t)(j - i) * s->slot_bytes);
		i = j;
	}
}

static void
cpu_set_fill(void *state, enum daqiri_fill fill)
{
	((struct cpu_state *)state)->fill = fill;
}

const struct reorder_backend reorder_backend_cpu = {
	.name = "cpu",
	.set_fill = cpu_set_fill,
	.init = cpu_init,
	.fini = cpu_fini,
	.place = cpu_place,
	.commit = cpu_commit,
	.fill = cpu_fill,
	.finish = NULL,
};
