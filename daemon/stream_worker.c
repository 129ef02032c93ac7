/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The RX worker's side of a stream: it lends tensor buffers to the
 * reorder (or raw) plan, publishes finished tensors into the subscribers'
 * rings, takes back what they release, ends subscriptions that misbehave,
 * runs the main thread's commands and publishes the counters, with the
 * assembly and hold time histograms (proto/histogram.h). Everything
 * here runs on the one worker that feeds the stream (stream_pool_fill(),
 * stream_owner_init() and a first stream_publish_counters() also on the
 * main thread at creation, before that worker exists). It may touch the
 * worker-only fields of struct stream and struct sub freely, and crosses
 * to the main thread only as stream_internal.h says: commands under
 * cmd_lock, sub.state with release, relaxed counters, the seqlocks. It
 * never allocates and never logs; the one lock it takes is cmd_lock, and
 * only when a command is pending (main holds it just to append one).
 *
 * Buffer life: FREE -> lent to the plan (get) -> published -> held by the
 * subscribers it was delivered to -> FREE when the last one released it
 * (or at once when nobody took it). The daemon never waits for a
 * consumer. A `latest` subscriber whose ring is full or who holds
 * max_held buffers misses the tensor (`overruns`). A `lossless` one is
 * never skipped: a tensor it has no room for waits in its pending FIFO,
 * keeping its buffer, and goes into its ring, in order, as releases make
 * room (reclaim()); meanwhile the plan finds fewer free buffers, and a
 * batch that finds none is dropped at ingest (no_buffer), charged to the
 * subscription holding the most (blocked_by, its `blocked`). A replay is
 * the one exception: there the worker waits for the consumers rather
 * than drop (stream_room(), worker.c "Replay").
 *
 * Isolation (DESIGN.md "Isolation"): the plan marks slots in a private
 * bitmap, copied into the consumers' sealed sidecar at publish, so no
 * consumer can touch duplicate detection; a buffer held past
 * hold_timeout_ms ends its subscription; a release ring that names a
 * buffer its subscriber does not hold cuts that subscriber off, and so
 * does a lossless subscriber's ring faked full (it would make the stream
 * wait for nothing).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "histogram.h"
#include "raw.h"
#include "ring.h"
#include "seqlock.h"
#include "stream_internal.h"

/* --- buffer pool -------------------------------------------------------- */

static void
buf_free(struct stream *s, uint32_t i)
{
	if (s->buf_state[i] == BUF_PUBLISHED)
		s->npub--;
	s->buf_state[i] = BUF_FREE;
	s->refs[i] = 0;
	s->free_stack[s->nfree++] = i;
}

/* Every buffer free, lowest index first out, which keeps tests readable.
 * Main thread, at creation. */
void
stream_pool_fill(struct stream *s)
{
	for (uint32_t i = s->nbufs; i-- > 0;)
		buf_free(s, i);
}

/*
 * No free buffer for the plan: charge the subscription that holds the
 * most, its pending backlog included (a lossless one wins a tie, being
 * the one that cannot let go). Only when the plan is refused a buffer:
 * once per dropped batch of a reorder stream, once per dropped packet of
 * a raw one (which asks again for each), a scan of at most max_subs
 * entries on a path that is dropping anyway; never per placed packet.
 */
static void
note_blocked(struct stream *s)
{
	struct sub *who = NULL;
	uint32_t most = 0;

	for (int k = 0; k < s->nserved; k++) {
		struct sub *u = s->served[k];
		uint32_t n = u->nheld + u->npend;

		if (atomic_load_explicit(&u->state, memory_order_relaxed) !=
		    SUB_ACTIVE || n == 0)
			continue;
		if (n > most || (n == most && u->policy ==
		    DAQIRI_POLICY_LOSSLESS && who->policy !=
		    DAQIRI_POLICY_LOSSLESS)) {
			who = u;
			most = n;
		}
	}
	if (who == NULL)
		return;
	atomic_fetch_add_explicit(&who->blocked, 1, memory_order_relaxed);
	s->ctr.blocked_by = who->sub_id;
}

static int
owner_get(void *ctx, struct reorder_buf *out)
{
	struct stream *s = ctx;
	uint32_t i;

	if (s->nfree == 0) {
		note_blocked(s);
		return -ENOBUFS;
	}
	i = s->free_stack[--s->nfree];
	s->buf_state[i] = BUF_LENT;
	s->nlent++;
	out->index = i;
	out->data = mem_host_visible(s->region) ? mem_buf(s->region, i) :
	    mem_dev_buf(s->region, i);
	out->bitmap = (uint64_t *)(void *)(s->priv_bitmap +
	    (size_t)i * s->bitmap_bytes);
	return 0;
}

/* The same, ahead of need: no free buffer is then no stall to note. */
static int
owner_get_ahead(void *ctx, struct reorder_buf *out)
{
	struct stream *s = ctx;

	return s->nfree == 0 ? -ENOBUFS : owner_get(ctx, out);
}

static void
owner_put(void *ctx, const struct reorder_buf *buf)
{
	struct stream *s = ctx;

	if (buf->index < s->nbufs && s->buf_state[buf->index] == BUF_LENT) {
		s->nlent--;
		buf_free(s, buf->index);
	}
}

/* --- what each subscriber holds --------------------------------------- */

/* u now holds buffer i (delivered at stream time since). */
static void
held_add(struct sub *u, uint32_t i, uint64_t since)
{
	u->held[u->nheld].idx = i;
	u->held[u->nheld].since = since;
	u->held_pos[i] = ++u->nheld;
	atomic_store_explicit(&u->held_now, u->nheld, memory_order_relaxed);
}

/* u no longer holds buffer i (which it held). */
static void
held_remove(struct sub *u, uint32_t i)
{
	uint32_t at = u->held_pos[i] - 1;

	u->held[at] = u->held[--u->nheld];
	u->held_pos[u->held[at].idx] = at + 1;
	u->held_pos[i] = 0;
	atomic_store_explicit(&u->held_now, u->nheld, memory_order_relaxed);
}

/* The oldest of u's pending tensors leaves the FIFO (its buffer
 * reference goes with it to whoever called). */
static void
pend_pop(struct stream *s, struct sub *u)
{
	u->pend_head = u->pend_head + 1 == s->nbufs ? 0 : u->pend_head + 1;
	u->npend--;
	atomic_store_explicit(&u->pending_now, u->npend, memory_order_relaxed);
}

/* Take back every buffer u holds, and those pending for it. */
static void
sub_return_all(struct stream *s, struct sub *u)
{
	while (u->npend > 0) {
		uint32_t i = u->pend[u->pend_head].buf_index;

		pend_pop(s, u);
		if (--s->refs[i] == 0)
			buf_free(s, i);
	}
	while (u->nheld > 0) {
		uint32_t i = u->held[u->nheld - 1].idx;

		held_remove(u, i);
		if (--s->refs[i] == 0)
			buf_free(s, i);
	}
}

/* Cut a subscriber off: give back what it held, leave it for main to
 * report and remove; *counter counts why. */
static void
sub_break(struct stream *s, struct sub *u, uint64_t *counter,
	  const char *why)
{
	snprintf(u->why, sizeof(u->why), "%s", why);
	sub_return_all(s, u);
	(*counter)++;
	atomic_store_explicit(&u->state, SUB_BROKEN, memory_order_release);
}

static void
sub_drop_from_list(struct stream *s, int k)
{
	s->served[k] = s->served[--s->nserved];
	s->served[s->nserved] = NULL;
}

/* u missed a tensor; the stream's count only ever grows. */
static void
note_overrun(struct stream *s, struct sub *u)
{
	atomic_fetch_add_explicit(&u->overruns, 1, memory_order_relaxed);
	s->ctr.overruns++;
}

/*
 * Worker: shared subscription u joins its group (found by name once,
 * here, so publishing never compares names). A group slot nobody is in
 * any more is reused, its round-robin cursor reset; live groups are at
 * most the subscriptions, so a slot is always there.
 */
static void
group_join(struct stream *s, struct sub *u)
{
	int g, empty = -1;

	for (g = 0; g < s->ngroups; g++) {
		if (s->groups[g].nmembers == 0) {
			if (empty < 0)
				empty = g;
			continue;
		}
		if (strcmp(s->groups[g].name, u->group) == 0)
			break;
	}
	if (g == s->ngroups) {
		g = empty >= 0 ? empty : s->ngroups++;
		snprintf(s->groups[g].name, sizeof(s->groups[g].name), "%s",
		    u->group);
		s->groups[g].next = 0;
	}
	s->groups[g].nmembers++;
	u->gi = (uint32_t)g;
}

/* --- publishing ----------------------------------------------------------- */

/* Put tensor d into u's ring: 1 done, 0 no room (max_held or a full
 * ring), -1 u was cut off. */
static int
ring_push(struct stream *s, struct sub *u, const struct daqiri_desc *d)
{
	int rc;

	if (u->nheld >= u->max_held)
		return 0;
	rc = daqiri_comp_push(&u->ring, d);
	if (rc == -ENOSPC)
		return 0;
	if (rc < 0) {
		sub_break(s, u, &s->ctr.subs_broken,
		    "completion ring positions corrupted by the consumer");
		return -1;
	}
	held_add(u, d->buf_index, s->capture_clock ? daqiri_mono_ns() :
	    s->now_ns);
	atomic_fetch_add_explicit(&u->delivered, 1, memory_order_relaxed);
	s->ctr.delivered++;
	/* Only a consumer that armed need_wakeup is asleep; a busy-polling
	 * one costs no system call. The send cannot block whatever the
	 * consumer did to its own socket; a wake-up already queued, or an
	 * end the consumer closed or moved, needs no action. */
	if (daqiri_ring_wake_wanted(&u->ring)) {
		rc = daqiri_wake_signal(u->wake_fd);
		/* Nothing was sent, and the word is cleared: set it again,
		 * or a sleeping consumer is never woken for this tensor. */
		if (rc == -ENOBUFS || rc == -ENOMEM)
			(void)daqiri_ring_arm(&u->ring);
	}
	return 1;
}

/* Latest: hand tensor d to u or count the miss. 1 delivered, 0 missed
 * (overrun), -1 broken. */
static int
deliver(struct stream *s, struct sub *u, const struct daqiri_desc *d)
{
	int rc = ring_push(s, u, d);

	if (rc == 0)
		note_overrun(s, u);
	return rc;
}

/*
 * Lossless: no room in u's ring. Its depth is at least nbufs and every
 * descriptor in it is a buffer u holds, so an honest consumer's ring is
 * never full below max_held: one that looks full then was faked by the
 * consumer to make the stream wait for it, and it is cut off (its
 * buffers, pending ones too, come back). true when so.
 */
static bool
lossless_ring_faked(struct stream *s, struct sub *u)
{
	if (u->nheld >= u->max_held)
		return false;
	sub_break(s, u, &s->ctr.subs_broken,
	    "completion ring full with fewer tensors held than max_held: "
	    "positions corrupted by the consumer");
	return true;
}

/*
 * Lossless: tensor d goes into u's ring, or, with no room or others
 * already waiting (order), to the back of its pending FIFO. true: u
 * keeps a reference on d's buffer either way; false: u was cut off.
 */
static bool
deliver_lossless(struct stream *s, struct sub *u, const struct daqiri_desc *d)
{
	if (u->npend == 0) {
		int rc = ring_push(s, u, d);

		if (rc != 0)
			return rc > 0;
		if (lossless_ring_faked(s, u))
			return false;
	}
	u->pend[(u->pend_head + u->npend) % s->nbufs] = *d;
	u->npend++;
	atomic_store_explicit(&u->pending_now, u->npend, memory_order_relaxed);
	return true;
}

/* Move what now fits of u's pending tensors into its ring, oldest
 * first (after a release made room). */
static void
pend_drain(struct stream *s, struct sub *u)
{
	while (u->npend > 0) {
		/* a copy: a cut-off empties the FIFO under it */
		struct daqiri_desc d = u->pend[u->pend_head];
		int rc = ring_push(s, u, &d);

		if (rc <= 0) {
			if (rc == 0)
				(void)lossless_ring_faked(s, u);
			return;
		}
		pend_pop(s, u);
	}
}

static bool
sub_can_take(const struct sub *u)
{
	return atomic_load_explicit(&u->state, memory_order_relaxed) ==
	    SUB_ACTIVE && u->nheld < u->max_held &&
	    daqiri_comp_pending(&u->ring) < u->ring.depth;
}

static void
owner_publish(void *ctx, const struct daqiri_desc *dd,
	      const struct reorder_buf *buf)
{
	struct stream *s = ctx;
	struct daqiri_desc d = *dd;
	uint32_t i = buf->index;
	uint32_t refs = 0;

	/* replay: the capture's clock, as first_rx_ns (stream.h) */
	d.publish_ns = s->capture_clock ? s->now_ns : daqiri_mono_ns();
	/* Assembly time, per tensor; the clocks agree (CLOCK_MONOTONIC),
	 * the guard only keeps a bad engine stamp from wrapping. */
	daqiri_hist_add(&s->ctr.assembly, d.publish_ns > d.first_rx_ns ?
	    d.publish_ns - d.first_rx_ns : 0);
	/* hold times are wall time, whatever the stream's clock */
	s->pub_ns[i] = s->capture_clock ? daqiri_mono_ns() : d.publish_ns;
	/* The consumers' copy of the presence bitmap, before any ring
	 * carries the descriptor (the push orders it before). */
	memcpy(s->bitmap + (size_t)i * s->bitmap_bytes,
	    s->priv_bitmap + (size_t)i * s->bitmap_bytes, s->bitmap_bytes);
	s->nlent--;
	s->buf_state[i] = BUF_PUBLISHED;
	s->npub++;
	s->ctr.published++;

	/* Broadcast subscribers each get it. */
	for (int k = 0; k < s->nserved; k++) {
		struct sub *u = s->served[k];

		if (u->mode != DAQIRI_SUB_BROADCAST ||
		    atomic_load_explicit(&u->state, memory_order_relaxed) !=
		    SUB_ACTIVE)
			continue;
		if (u->policy == DAQIRI_POLICY_LOSSLESS ?
		    deliver_lossless(s, u, &d) : deliver(s, u, &d) > 0)
			refs++;
	}
	/* Each shared group gives it to one member with room, round robin
	 * from the member after the last one served; a group where nobody
	 * has room counts one overrun on the member whose turn it was. The
	 * active members are bucketed by group first (a counting sort, in
	 * list order within a group), so this is linear in subscriptions. */
	for (int g = 0; g < s->ngroups; g++)
		s->groups[g].count = 0;
	for (int k = 0; k < s->nserved; k++)
		if (s->served[k]->mode == DAQIRI_SUB_SHARED &&
		    atomic_load_explicit(&s->served[k]->state,
		    memory_order_relaxed) == SUB_ACTIVE)
			s->groups[s->served[k]->gi].count++;
	for (int g = 0, at = 0; g < s->ngroups; g++) {
		s->groups[g].start = (uint32_t)at;
		at += (int)s->groups[g].count;
		s->groups[g].count = 0;
	}
	for (int k = 0; k < s->nserved; k++) {
		struct sub *u = s->served[k];
		struct stream_group *gr;

		if (u->mode != DAQIRI_SUB_SHARED ||
		    atomic_load_explicit(&u->state, memory_order_relaxed) !=
		    SUB_ACTIVE)
			continue;
		gr = &s->groups[u->gi];
		s->members[gr->start + gr->count++] = u;
	}
	for (int g = 0; g < s->ngroups; g++) {
		struct stream_group *gr = &s->groups[g];
		struct sub **m = s->members + gr->start;
		uint32_t nm = gr->count;

		for (uint32_t j = 0; j < nm; j++) {
			struct sub *u = m[(gr->next + j) % nm];

			if (sub_can_take(u)) {
				gr->next = (gr->next + j + 1) % nm;
				if (deliver(s, u, &d) > 0)
					refs++;
				break;
			}
			if (j == nm - 1)
				note_overrun(s, m[gr->next % nm]);
		}
	}

	/* refs: the rings it went into and the lossless FIFOs it waits in
	 * (those count as delivered when they reach the ring) */
	if (refs == 0) {
		s->ctr.unseen++;
		buf_free(s, i);
	} else
		s->refs[i] = refs;
}

/* The callbacks through which the stream's plan borrows, returns and
 * publishes buffers. Main thread, at creation. */
void
stream_owner_init(struct stream *s, struct reorder_owner *owner)
{
	owner->ctx = s;
	owner->get = owner_get;
	owner->get_ahead = owner_get_ahead;
	owner->put = owner_put;
	owner->publish = owner_publish;
}

/* --- the worker's loop -------------------------------------------------- */

/* Make u's hold times visible to main (the consumers view). */
static void
sub_publish_hold(struct sub *u)
{
	seqlock_write_begin(&u->hold_lock);
	seqlock_copy((uint64_t *)&u->hold_snap, (const uint64_t *)&u->hold,
	    SEQLOCK_WORDS(u->hold_snap));
	seqlock_write_end(&u->hold_lock);
}

/*
 * Take back what every subscriber released. Each release counts its hold
 * time, publish to now: the time the buffer was out of the daemon's
 * hands, which includes how long the worker took to look (its next loop;
 * up to its idle interval when no packets arrive). The clock is read
 * once per pass, and only when something was released.
 */
static void
reclaim(struct stream *s)
{
	uint64_t now = 0;

	for (int k = 0; k < s->nserved; k++) {
		struct sub *u = s->served[k];
		bool took = false;
		uint32_t idx;
		int rc;

		if (atomic_load_explicit(&u->state, memory_order_relaxed) !=
		    SUB_ACTIVE)
			continue;
		while ((rc = daqiri_rel_pop(&u->ring, &idx)) == 1) {
			char why[DAQIRI_ERR_MSG_MAX];
			uint64_t held;

			if (idx >= s->nbufs || u->held_pos[idx] == 0) {
				snprintf(why, sizeof(why),
				    "released buffer %u, which it does not hold",
				    idx);
				sub_break(s, u, &s->ctr.subs_broken, why);
				break;
			}
			if (now == 0)
				now = daqiri_mono_ns();
			held = now > s->pub_ns[idx] ? now - s->pub_ns[idx] : 0;
			daqiri_hist_add(&u->hold, held);
			daqiri_hist_add(&s->ctr.hold, held);
			took = true;
			held_remove(u, idx);
			atomic_fetch_add_explicit(&u->released, 1,
			    memory_order_relaxed);
			if (--s->refs[idx] == 0)
				buf_free(s, idx);
		}
		if (took)
			sub_publish_hold(u);
		if (rc < 0)
			sub_break(s, u, &s->ctr.subs_broken,
			    "release ring positions corrupted by the consumer");
		else if (u->npend > 0 && atomic_load_explicit(&u->state,
		    memory_order_relaxed) == SUB_ACTIVE)
			pend_drain(s, u);
	}
}

/*
 * End every subscription holding a buffer longer than hold_ns, lossless
 * ones too: a lossless consumer that stops releasing would otherwise
 * stop the stream for good, and ending it gives its buffers (pending
 * ones included) back. A buffer's hold counts from when it went into
 * the ring, not from its publish: time spent pending is the daemon's
 * wait, not the consumer's hold. At most
 * once per STREAM_HOLD_CHECK_NS of stream time, and O(held buffers): the
 * admission rule keeps those under nbufs whatever the subscriptions.
 */
static void
check_holds(struct stream *s)
{
	uint64_t now;

	if (s->hold_ns == 0)
		return;
	/* replay: wall time (stream_use_capture_clock()) */
	now = s->capture_clock ? daqiri_mono_ns() : s->now_ns;
	if (now < s->next_hold_check)
		return;
	s->next_hold_check = now + STREAM_HOLD_CHECK_NS;
	for (int k = 0; k < s->nserved; k++) {
		struct sub *u = s->served[k];

		if (atomic_load_explicit(&u->state, memory_order_relaxed) !=
		    SUB_ACTIVE)
			continue;
		for (uint32_t h = 0; h < u->nheld; h++) {
			char why[DAQIRI_ERR_MSG_MAX];
			uint64_t held;

			if (now <= u->held[h].since ||
			    (held = now - u->held[h].since) <= s->hold_ns)
				continue;
			snprintf(why, sizeof(why), "held too long: buffer %u "
			    "for %llu ms, more than daemon.hold_timeout_ms %llu",
			    u->held[h].idx,
			    (unsigned long long)(held / 1000000u),
			    (unsigned long long)(s->hold_ns / 1000000u));
			sub_break(s, u, &s->ctr.subs_held_too_long, why);
			break;
		}
	}
}

static void
run_commands(struct stream *s)
{
	struct cmd *cmds = s->cmds_run;
	int n;

	if (!atomic_load_explicit(&s->cmd_pending, memory_order_acquire))
		return;
	pthread_mutex_lock(&s->cmd_lock);
	n = s->ncmds;
	memcpy(cmds, s->cmds, sizeof(cmds[0]) * (size_t)n);
	s->ncmds = 0;
	atomic_store_explicit(&s->cmd_pending, 0, memory_order_relaxed);
	pthread_mutex_unlock(&s->cmd_lock);

	for (int c = 0; c < n; c++) {
		struct sub *u = cmds[c].sub;

		if (cmds[c].op == CMD_ADD) {
			/* main keeps nall <= the list size, so this fits */
			s->served[s->nserved++] = u;
			if (u->mode == DAQIRI_SUB_SHARED)
				group_join(s, u);
			atomic_store_explicit(&u->state, SUB_ACTIVE,
			    memory_order_release);
			continue;
		}
		for (int k = 0; k < s->nserved; k++) {
			if (s->served[k] != u)
				continue;
			if (atomic_load_explicit(&u->state,
			    memory_order_relaxed) == SUB_ACTIVE)
				sub_return_all(s, u);
			if (u->mode == DAQIRI_SUB_SHARED)
				s->groups[u->gi].nmembers--;
			sub_drop_from_list(s, k);
			break;
		}
		atomic_store_explicit(&u->state, SUB_GONE, memory_order_release);
	}
}

/* --- counters and entry points -------------------------------------------- */

/* A shared stream's worker side is whoever holds work_lock
 * (stream_internal.h); a stream of one worker takes no lock. */
static void
work_lock(struct stream *s)
{
	if (s->shared)
		pthread_mutex_lock(&s->work_lock);
}

static void
work_unlock(struct stream *s)
{
	if (s->shared)
		pthread_mutex_unlock(&s->work_lock);
}

/* The stream's time, which only goes forward: a shared stream's workers
 * read their clocks a little apart (lock held). */
static uint64_t
advance(struct stream *s, uint64_t now_ns)
{
	if (now_ns > s->now_ns)
		s->now_ns = now_ns;
	return s->now_ns;
}

static void
publish_counters_locked(struct stream *s)
{
	s->ctr.free_bufs = s->nfree;
	s->ctr.open_bufs = s->nlent;
	s->ctr.held_bufs = s->npub;
	s->ctr.last_malformed_bytes = s->plan != NULL ?
	    reorder_last_malformed_bytes(s->plan) : 0;

	seqlock_write_begin(&s->snap_lock);
	if (s->plan != NULL)
		seqlock_copy((uint64_t *)&s->snap_reorder,
		    (const uint64_t *)reorder_counters(s->plan),
		    SEQLOCK_WORDS(s->snap_reorder));
	else
		seqlock_copy((uint64_t *)&s->snap_raw,
		    (const uint64_t *)raw_counters(s->raw),
		    SEQLOCK_WORDS(s->snap_raw));
	seqlock_copy((uint64_t *)&s->snap_stream, (const uint64_t *)&s->ctr,
	    SEQLOCK_WORDS(s->snap_stream));
	seqlock_write_end(&s->snap_lock);
}

/* Also called by main at creation, before the worker exists. */
void
stream_publish_counters(struct stream *s)
{
	work_lock(s);
	publish_counters_locked(s);
	work_unlock(s);
}

/* A shared stream: the burst's decisions under the lock, its copies
 * outside it (concurrently with the other workers'), then what they
 * finished published under it (reorder.c "Shared plans"). */
void
stream_burst(struct stream *s, const struct rx_frame *pkts, unsigned n,
	     uint64_t now_ns, struct reorder_jobs *jobs)
{
	if (s->shared) {
		pthread_mutex_lock(&s->work_lock);
		now_ns = advance(s, now_ns);
		reorder_burst_shared(s->plan, pkts, n, now_ns, jobs);
		pthread_mutex_unlock(&s->work_lock);
		reorder_jobs_run(s->plan, jobs);
		pthread_mutex_lock(&s->work_lock);
		reorder_poll(s->plan, advance(s, now_ns));
		pthread_mutex_unlock(&s->work_lock);
		return;
	}
	s->now_ns = now_ns;
	if (s->plan != NULL)
		reorder_burst(s->plan, pkts, n, now_ns);
	else
		raw_burst(s->raw, pkts, n, now_ns);
}

/* A shared stream's plan is the CPU backend's, which leaves nothing to
 * read after a burst and places nothing directly. */
uint64_t
stream_fence(struct stream *s)
{
	return s->plan != NULL && !s->shared ? reorder_fence(s->plan) : 0;
}

bool
stream_fence_done(struct stream *s, uint64_t mark, bool wait)
{
	return s->plan == NULL || s->shared ||
	    reorder_fence_done(s->plan, mark, wait);
}

unsigned
stream_place_hints(struct stream *s, uint8_t **dst, unsigned max,
		   uint32_t *payload_off, uint32_t *payload_len)
{
	if (s->plan == NULL || s->shared)
		return 0;
	return reorder_place_hints(s->plan, dst, max, payload_off,
	    payload_len);
}

/* A reload's retune, between bursts (the plan committed at the end of the
 * last one). */
static void
take_tune(struct stream *s)
{
	struct reorder_tune *t = atomic_load_explicit(&s->tune_pending,
	    memory_order_acquire);

	if (t == NULL)
		return;
	reorder_tune_apply(s->plan, t, s->now_ns);
	/* handed back before pending clears: whoever sees pending empty
	 * also sees it to free */
	atomic_store_explicit(&s->tune_retired, t, memory_order_release);
	atomic_store_explicit(&s->tune_pending, NULL, memory_order_release);
}

void
stream_service(struct stream *s, uint64_t now_ns)
{
	work_lock(s);
	now_ns = advance(s, now_ns);
	run_commands(s);
	if (s->plan != NULL)
		take_tune(s);
	reclaim(s);
	check_holds(s);
	if (s->plan != NULL)
		reorder_poll(s->plan, now_ns);
	else
		raw_poll(s->raw, now_ns);
	work_unlock(s);
}

unsigned
stream_room(struct stream *s)
{
	unsigned room;

	work_lock(s);
	room = s->nfree > 0 ? s->nfree : s->npub > 0 ? 0 : UINT_MAX;
	work_unlock(s);
	return room;
}

uint64_t
stream_next_deadline(struct stream *s)
{
	uint64_t d;

	work_lock(s);
	d = s->plan != NULL ? reorder_next_deadline(s->plan) :
	    raw_next_deadline(s->raw);
	work_unlock(s);
	return d;
}

void
stream_flush(struct stream *s, uint64_t now_ns)
{
	work_lock(s);
	now_ns = advance(s, now_ns);
	if (s->plan != NULL)
		reorder_flush(s->plan, now_ns);
	else
		raw_flush(s->raw, now_ns);
	publish_counters_locked(s);
	work_unlock(s);
}
