/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TX workers (tx.h): one thread per tx queue. Each turn it takes the
 * main thread's commands (channels added or closed; a mutex, taken only
 * when the command eventfd fired), gathers submissions round robin
 * (batch_size per channel), checks each, paces the queue, hands the
 * payloads to the engine, turns the engine's returned tags into
 * completions and rings the consumers that asked. With nothing to do it
 * arms every channel's kick word and sleeps in epoll on the command
 * eventfd and every doorbell.
 *
 * Pacing counts frame bytes: payload + ENGINE_SYNTH_HDR_LEN (Ethernet,
 * IPv4 and UDP headers, no preamble or FCS), against a virtual clock
 * that may lag the real one by at most TX_PACE_BURST_NS of credit.
 *
 * A queue whose engine says its pools are device memory (engine_txq
 * .device: the queue's region is kind device) gives each channel a
 * device pool instead of a memfd: gpu_alloc_pool() on the queue's GPU,
 * handed to the owner as a memfd holding its cudaIpcMemHandle_t (fd kind
 * "ipc"). The worker passes device pointers to the engine, which sends
 * them or stages them (the socket engine). The owner has finished
 * writing a buffer when it submits it (its contract, PROTOCOL.md "TX
 * channels"): nothing here waits on the owner's GPU work.
 *
 * Ownership: main allocates and frees a channel; between the worker's
 * taking its ADD command and its setting `released`, only the worker
 * touches its ring, pool and in-flight state. Counters cross through a
 * seqlock per channel and one per queue.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "desc.h"
#include "gpu.h"
#include "log.h"
#include "ring.h"
#include "seqlock.h"
#include "tx.h"
#include "txring.h"

_Static_assert(sizeof(struct tx_counters) % sizeof(uint64_t) == 0,
    "struct tx_counters is made of uint64_t only (seqlock copies)");
_Static_assert(sizeof(struct engine_tx_stats) % sizeof(uint64_t) == 0,
    "struct engine_tx_stats is made of uint64_t only (seqlock copies)");
_Static_assert(GPU_IPC_HANDLE_BYTES == DAQIRI_TX_IPC_FILE_BYTES,
    "a device pool's ipc file is one cudaIpcMemHandle_t");

const char *const tx_drop_names[TX_DROP_MAX] = {
	[TX_DROP_TOO_BIG] = "too_big",
	[TX_DROP_BAD_BUFFER] = "bad_buffer",
	[TX_DROP_ENGINE_ERROR] = "engine_error",
	[TX_DROP_CLOSED] = "closed",
	[TX_DROP_NO_PEER] = "no_peer",
};

/* Longest sleep without a heartbeat (tx_worker_set_idle shortens it). */
#define TX_IDLE_NS		(50u * 1000u * 1000u)
/* Credit the pacer may bank while idle or woken late: a burst of at
 * most this much line time goes out at once. 200 us lost a quarter of
 * the rate on a loaded 2-core machine (wake-ups later than that); 1 ms
 * keeps it within 1 % unloaded and loses less loaded. */
#define TX_PACE_BURST_NS	(1000u * 1000u)
/* Wait after the engine said its queue is full (-EAGAIN), and while
 * completions wait for room in a consumer's ring. */
#define TX_BACKOFF_NS		(50u * 1000u)
#define TX_BACKOFF_MAX_NS	(1000u * 1000u)
/* Payloads the worker holds between its rings and the engine. */
#define TX_PEND_MAX		ENGINE_MAX_BURST
#define TX_DONE_MAX		ENGINE_MAX_BURST
#define TX_EPOLL_MAX		(TX_MAX_CHANNELS + 1)
/* Kicks read off one doorbell per event (doorbell_drain()). */
#define TX_DOORBELL_READS	64
/* epoll data of the command eventfd (a channel's is its slot). */
#define TX_EV_CMD		UINT64_MAX

/* The tag of a payload: slot, generation and buffer of its channel. */
#define TAG_MAKE(slot, gen, buf) ((uint64_t)(slot) << 56 | \
	(uint64_t)((gen) & 0xFFFFFFu) << 32 | (uint64_t)(buf))
#define TAG_SLOT(t)	((unsigned)((t) >> 56))
#define TAG_GEN(t)	((uint32_t)((t) >> 32) & 0xFFFFFFu)
#define TAG_BUF(t)	((uint32_t)(t))

enum buf_state {
	BUF_FREE,			/* the consumer's */
	BUF_QUEUED,			/* taken off the ring, not yet sent */
	BUF_ENGINE,			/* the engine still reads it */
	BUF_DONE,			/* its completion waits for room */
};

struct tx_chan {
	/* main's, set before the worker sees it */
	uint64_t conn_id;
	uint32_t tx_id;
	pid_t pid;
	uint32_t nbufs;
	int slot;
	uint32_t gen;
	struct daqiri_txring r;
	void *ring_mem;
	size_t ring_len;
	const void *pool_mem;		/* a device pointer when pool_dev */
	size_t pool_len;
	bool pool_dev;			/* gpu_alloc_pool(), not a mapping */
	int wake_fd;			/* daemon end of the doorbell */

	/* worker's */
	uint8_t *bstate;		/* enum buf_state per buffer */
	struct daqiri_tx_comp *comps;	/* completions waiting for room */
	uint32_t ncomp, comp_head;	/* ring of nbufs */
	uint32_t queued;		/* in w->pend */
	uint32_t in_engine;
	bool closing;			/* main closed it, or the queue stops */
	bool dead;			/* no ring op any more (broken) */
	struct tx_counters ctr;
	uint64_t full_seen_sub;		/* ctr.submitted at the last look at
					 * the consumer's ring_full */

	/* crossing */
	struct seqlock snap_lock;
	struct tx_counters snap;
	_Atomic uint32_t in_flight;	/* buffers not the consumer's */
	_Atomic int released;		/* the worker let go of it */
	_Atomic int cmds;		/* commands naming it the worker has
					 * not done yet: main frees it only
					 * at 0 */
	_Atomic int broken;		/* cut off: why is set */
	char why[128];
	bool reported;			/* main: broken() called */
	bool main_closed;		/* main: tx_channel_close() took it */
};

enum tx_cmd_kind { TX_CMD_ADD, TX_CMD_CLOSE };

struct tx_cmd {
	enum tx_cmd_kind kind;
	struct tx_chan *c;
};

/* A payload between ring and engine. */
struct tx_pend {
	struct tx_chan *c;		/* NULL: its channel closed, skip */
	uint32_t buf;
	uint32_t len;
};

struct tx_snap {
	struct tx_counters q;
	struct engine_tx_stats e;
};

struct tx_worker {
	char name[CFG_NAME_MAX * 2 + 2];
	int core;
	uint32_t batch;
	uint32_t pacing_mbps;
	uint32_t max_payload;
	struct engine *eng;
	const struct engine_tx_ops *ops;
	struct engine_txq *q;
	int cmd_fd;			/* eventfd: commands waiting, or stop */
	int epfd;
	pthread_t thr;
	bool started;
	_Atomic int stop;
	_Atomic uint64_t beat_ns;
	uint64_t idle_ns;

	/* commands, main -> worker */
	pthread_mutex_t mu;
	struct tx_cmd cmds[2 * TX_MAX_CHANNELS];
	int ncmds;

	/* main's view */
	struct tx_chan *mchans[TX_MAX_CHANNELS];
	uint32_t gens[TX_MAX_CHANNELS];

	/* worker's */
	struct tx_chan *chans[TX_MAX_CHANNELS];
	int rr;				/* next slot to gather from */
	struct tx_pend pend[TX_PEND_MAX];
	uint32_t pend_off, npend;
	struct engine_tx_pkt pkts[TX_PEND_MAX];
	uint64_t tags[TX_DONE_MAX];
	uint64_t pace_next_ns;		/* the pacer's virtual clock */
	uint32_t pace_frac_ps;		/* and its ps below pace_next_ns */
	uint64_t backoff_ns;
	struct tx_counters ctr;		/* the queue's */

	struct seqlock snap_lock;
	struct tx_snap snap;
};

static void
sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u),
	    (long)(ns % 1000000000u) };

	nanosleep(&ts, NULL);
}

/* --- counters ---------------------------------------------------------- */

static void
chan_publish(struct tx_chan *c)
{
	/* The consumer's own word: taken only where it grows, and by at
	 * most one refusal per submission since the last look plus one
	 * ring's depth (a consumer retrying on a full ring refuses more
	 * often than it submits), so no consumer can make the counter go
	 * back or jump to 2^64; it can at most inflate its own count by a
	 * depth per publication (every 1 ms or so). */
	if (!c->dead) {
		uint64_t v = daqiri_txring_full(&c->r);
		uint64_t cap = c->ctr.ring_full + (c->ctr.submitted -
		    c->full_seen_sub) + c->r.depth;

		if (v > c->ctr.ring_full)
			c->ctr.ring_full = v < cap ? v : cap;
		c->full_seen_sub = c->ctr.submitted;
	}
	seqlock_write_begin(&c->snap_lock);
	seqlock_copy((uint64_t *)&c->snap, (const uint64_t *)&c->ctr,
	    SEQLOCK_WORDS(c->snap));
	seqlock_write_end(&c->snap_lock);
}

static void
chan_snapshot(struct tx_chan *c, struct tx_counters *out)
{
	uint32_t v;

	do {
		v = seqlock_read_begin(&c->snap_lock);
		seqlock_copy((uint64_t *)out, (const uint64_t *)&c->snap,
		    SEQLOCK_WORDS(*out));
	} while (seqlock_read_retry(&c->snap_lock, v));
}

/* The queue's ring_full: the gone channels' (kept in ctr) plus the live
 * ones'. */
static void
publish(struct tx_worker *w)
{
	struct tx_snap s;

	s.q = w->ctr;
	for (int i = 0; i < TX_MAX_CHANNELS; i++) {
		struct tx_chan *c = w->chans[i];

		if (c == NULL)
			continue;
		chan_publish(c);
		s.q.ring_full += c->ctr.ring_full;
	}
	if (w->ops->tx_stats(w->q, &s.e) != 0)
		memset(&s.e, 0, sizeof(s.e));
	seqlock_write_begin(&w->snap_lock);
	seqlock_copy((uint64_t *)&w->snap, (const uint64_t *)&s,
	    SEQLOCK_WORDS(w->snap));
	seqlock_write_end(&w->snap_lock);
}

static void
snapshot(struct tx_worker *w, struct tx_snap *out)
{
	uint32_t v;

	do {
		v = seqlock_read_begin(&w->snap_lock);
		seqlock_copy((uint64_t *)out, (const uint64_t *)&w->snap,
		    SEQLOCK_WORDS(*out));
	} while (seqlock_read_retry(&w->snap_lock, v));
}

void
tx_worker_snapshot(struct tx_worker *w, struct tx_counters *out)
{
	struct tx_snap s;

	snapshot(w, &s);
	*out = s.q;
}

static void
count_drop(struct tx_worker *w, struct tx_chan *c, enum tx_drop why)
{
	c->ctr.drops[why]++;
	w->ctr.drops[why]++;
}

/* --- the worker: channels ---------------------------------------------- */

static void
in_flight_set(struct tx_chan *c, int delta)
{
	atomic_fetch_add_explicit(&c->in_flight, (uint32_t)delta,
	    memory_order_relaxed);
}

/* Buffer buf of c is the consumer's again with status st: now, or once
 * its ring has room. */
static void
complete(struct tx_chan *c, uint32_t buf, enum daqiri_tx_status st)
{
	uint32_t at;

	if (c->dead) {
		c->bstate[buf] = BUF_FREE;
		in_flight_set(c, -1);
		return;
	}
	/* bounded: a buffer has at most one completion waiting */
	at = (c->comp_head + c->ncomp) % c->nbufs;
	c->comps[at].buf = buf;
	c->comps[at].status = (uint32_t)st;
	c->ncomp++;
	c->bstate[buf] = BUF_DONE;
}

static void chan_close(struct tx_worker *w, struct tx_chan *c,
		       enum daqiri_tx_status st);

/* Cut c off: its ring positions are impossible. Nothing of it is read
 * or written again; what the engine holds still comes back. */
static void
chan_break(struct tx_worker *w, struct tx_chan *c, const char *why)
{
	if (c->dead)
		return;
	c->dead = true;
	c->ctr.broken = 1;
	w->ctr.broken++;
	snprintf(c->why, sizeof(c->why), "%s", why);
	atomic_store_explicit(&c->broken, 1, memory_order_release);
	chan_close(w, c, DAQIRI_TX_CLOSED);
	for (uint32_t k = 0; k < c->ncomp; k++) {
		uint32_t b = c->comps[(c->comp_head + k) % c->nbufs].buf;

		c->bstate[b] = BUF_FREE;
		in_flight_set(c, -1);
	}
	c->ncomp = 0;
	if (w->epfd >= 0)
		(void)epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->wake_fd, NULL);
}

/* Push waiting completions; ring the consumer when it asked. */
static void
flush_comps(struct tx_worker *w, struct tx_chan *c)
{
	bool pushed = false;
	int rc;

	while (c->ncomp > 0 && !c->dead) {
		struct daqiri_tx_comp *p = &c->comps[c->comp_head];

		rc = daqiri_tx_comp_push(&c->r, p->buf,
		    (enum daqiri_tx_status)p->status);
		if (rc == -ENOSPC)
			break;
		if (rc < 0) {
			chan_break(w, c, "its completion ring's comp_tail is "
			    "impossible");
			return;
		}
		c->bstate[p->buf] = BUF_FREE;
		in_flight_set(c, -1);
		c->comp_head = (c->comp_head + 1) % c->nbufs;
		c->ncomp--;
		pushed = true;
	}
	if (pushed && daqiri_txring_wake_wanted(&c->r))
		(void)daqiri_wake_signal(c->wake_fd);
}

/* Take channel c (its ADD command). */
static void
chan_attach(struct tx_worker *w, struct tx_chan *c)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)c->slot };

	w->chans[c->slot] = c;
	if (w->epfd >= 0 && epoll_ctl(w->epfd, EPOLL_CTL_ADD, c->wake_fd,
	    &ev) != 0)
		log_warn("queue '%s': epoll on channel %u's doorbell", w->name,
		    c->tx_id);
	chan_publish(c);
}

/* Let go of c when nothing of it is left in the worker or the engine. */
static bool
chan_try_release(struct tx_worker *w, struct tx_chan *c)
{
	if (c->queued > 0 || c->in_engine > 0)
		return false;
	if (!c->dead) {
		flush_comps(w, c);
		if (w->epfd >= 0)
			(void)epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->wake_fd, NULL);
	}
	/* its gone counters stay in the queue's */
	w->ctr.ring_full += c->ctr.ring_full;
	chan_publish(c);
	w->chans[c->slot] = NULL;
	atomic_store_explicit(&c->released, 1, memory_order_release);
	return true;
}

/* c is closing: what it queued and never sent is dropped (closed). */
static void
chan_close(struct tx_worker *w, struct tx_chan *c, enum daqiri_tx_status st)
{
	if (c->closing)
		return;
	c->closing = true;
	for (uint32_t i = w->pend_off; i < w->pend_off + w->npend; i++) {
		struct tx_pend *p = &w->pend[i];

		if (p->c != c)
			continue;
		count_drop(w, c, TX_DROP_CLOSED);
		complete(c, p->buf, st);
		p->c = NULL;
		c->queued--;
	}
}

static void
apply_commands(struct tx_worker *w, const struct tx_cmd *cmds, int n)
{
	for (int i = 0; i < n; i++) {
		struct tx_chan *c = cmds[i].c;

		if (cmds[i].kind == TX_CMD_ADD)
			chan_attach(w, c);
		else if (w->chans[c->slot] == c) {
			chan_close(w, c, DAQIRI_TX_CLOSED);
			(void)chan_try_release(w, c);
		}
		/* the last touch of c for this command */
		atomic_fetch_sub_explicit(&c->cmds, 1, memory_order_release);
	}
}

static void
take_commands(struct tx_worker *w)
{
	struct tx_cmd cmds[2 * TX_MAX_CHANNELS];
	uint64_t v;
	int n;

	(void)!read(w->cmd_fd, &v, sizeof(v));
	pthread_mutex_lock(&w->mu);
	n = w->ncmds;
	memcpy(cmds, w->cmds, (size_t)n * sizeof(cmds[0]));
	w->ncmds = 0;
	pthread_mutex_unlock(&w->mu);
	apply_commands(w, cmds, n);
}

/* --- the worker: submissions --------------------------------------------- */

/* Check one submission of c and queue it. */
static void
take_sub(struct tx_worker *w, struct tx_chan *c, const struct daqiri_tx_sub *s)
{
	struct tx_pend *p;

	c->ctr.submitted++;
	w->ctr.submitted++;
	if (s->buf >= c->nbufs || c->bstate[s->buf] != BUF_FREE) {
		count_drop(w, c, TX_DROP_BAD_BUFFER);
		return;
	}
	in_flight_set(c, 1);
	if (s->len > c->r.buf_size) {
		count_drop(w, c, TX_DROP_TOO_BIG);
		complete(c, s->buf, DAQIRI_TX_TOO_BIG);
		return;
	}
	c->bstate[s->buf] = BUF_QUEUED;
	p = &w->pend[w->pend_off + w->npend++];
	p->c = c;
	p->buf = s->buf;
	p->len = s->len;
	c->queued++;
}

/* Fill the pending array round robin, at most batch per channel per
 * round, and at most TX_PEND_MAX submissions looked at in all: one that
 * is refused (a bad buffer, too big) takes no pending slot, so without
 * that bound a channel resubmitting garbage as fast as the worker pops it
 * would keep the worker here forever. Returns whether anything was
 * taken. */
static bool
gather(struct tx_worker *w)
{
	bool any = true, took = false;
	uint32_t pops = 0;

	/* Paced, what is pending waits for its line time: gathering more
	 * while a batch waits would queue a flooding channel's whole pool
	 * ahead of the next channel's payload. One round of at most
	 * batch_size per channel, once the last batch is nearly out. */
	if (w->pacing_mbps != 0 && w->npend >= w->batch)
		return false;
	if (w->pend_off > 0) {
		memmove(w->pend, w->pend + w->pend_off,
		    (size_t)w->npend * sizeof(w->pend[0]));
		w->pend_off = 0;
	}
	while (any && w->pend_off + w->npend < TX_PEND_MAX &&
	    pops < TX_PEND_MAX) {
		any = false;
		for (int k = 0; k < TX_MAX_CHANNELS &&
		    w->pend_off + w->npend < TX_PEND_MAX &&
		    pops < TX_PEND_MAX; k++) {
			int slot = (w->rr + k) % TX_MAX_CHANNELS;
			struct tx_chan *c = w->chans[slot];
			uint32_t n;

			if (c == NULL || c->dead || c->closing)
				continue;
			for (n = 0; n < w->batch && w->pend_off + w->npend <
			    TX_PEND_MAX && pops < TX_PEND_MAX; n++) {
				struct daqiri_tx_sub s;
				int rc = daqiri_tx_sub_pop(&c->r, &s);

				if (rc == 0)
					break;
				pops++;
				if (rc < 0) {
					chan_break(w, c, "its submission ring's "
					    "sub_head is impossible");
					break;
				}
				take_sub(w, c, &s);
				took = any = true;
			}
		}
		w->rr = (w->rr + 1) % TX_MAX_CHANNELS;
		if (w->pacing_mbps != 0)
			break;
	}
	return took;
}

/* Line time of one payload at the pacing rate, ns. */
static uint64_t
pace_cost(const struct tx_worker *w, uint32_t len)
{
	return ((uint64_t)len + ENGINE_SYNTH_HDR_LEN) * 8000u /
	    w->pacing_mbps;
}

/* Advance the pacer's clock by one payload's line time, in ps carried
 * over from payload to payload: whole ns per payload would run 3 % fast
 * for 64-byte payloads at 25 Gb/s. */
static void
pace_charge(struct tx_worker *w, uint32_t len)
{
	uint64_t ps = ((uint64_t)len + ENGINE_SYNTH_HDR_LEN) * 8000000u /
	    w->pacing_mbps + w->pace_frac_ps;

	w->pace_next_ns += ps / 1000;
	w->pace_frac_ps = (uint32_t)(ps % 1000);
}

/*
 * Send what is pending, as far as pacing and the engine allow. Returns
 * 0 when all went, else how long to wait (ns) before trying again.
 */
static uint64_t
send_pending(struct tx_worker *w, uint64_t now)
{
	while (w->npend > 0) {
		struct tx_pend *p0 = &w->pend[w->pend_off];
		uint64_t t = w->pace_next_ns;
		unsigned n = 0, i;
		int err = 0, acc;

		/* skip what closed channels left */
		if (p0->c == NULL) {
			w->pend_off++;
			w->npend--;
			continue;
		}
		if (w->pacing_mbps != 0 && t + TX_PACE_BURST_NS < now)
			t = now - TX_PACE_BURST_NS;
		for (i = 0; i < w->npend; i++) {
			struct tx_pend *p = &w->pend[w->pend_off + i];

			if (p->c == NULL)
				break;
			if (w->pacing_mbps != 0) {
				if (t > now)
					break;
				t += pace_cost(w, p->len);
			}
			w->pkts[n].data = (const uint8_t *)p->c->pool_mem +
			    (size_t)p->buf * p->c->r.buf_stride;
			w->pkts[n].len = p->len;
			w->pkts[n].tag = TAG_MAKE(p->c->slot, p->c->gen, p->buf);
			n++;
		}
		if (n == 0) {
			/* pacing: wait for the first one's turn; the loop
			 * sleeps at most idle_ns of it, and counts that much
			 * (a longer wait is counted turn by turn) */
			uint64_t wait = w->pace_next_ns > now ?
			    w->pace_next_ns - now : 0;

			w->ctr.paced_ns += wait < w->idle_ns ? wait : w->idle_ns;
			return wait > 0 ? wait : 1;
		}
		acc = w->ops->tx_burst(w->q, w->pkts, n, &err);
		if (acc < 0)
			acc = 0;
		for (i = 0; i < (unsigned)acc; i++) {
			struct tx_pend *p = &w->pend[w->pend_off + i];
			struct tx_chan *c = p->c;

			c->queued--;
			c->in_engine++;
			c->bstate[p->buf] = BUF_ENGINE;
			c->ctr.packets++;
			c->ctr.bytes += p->len;
			w->ctr.packets++;
			w->ctr.bytes += p->len;
			if (w->pacing_mbps != 0) {
				if (w->pace_next_ns + TX_PACE_BURST_NS < now)
					w->pace_next_ns = now - TX_PACE_BURST_NS;
				pace_charge(w, p->len);
			}
		}
		w->pend_off += (uint32_t)acc;
		w->npend -= (uint32_t)acc;
		if ((unsigned)acc == n)
			continue;
		if (err == -EAGAIN || err == 0) {
			w->backoff_ns = w->backoff_ns == 0 ? TX_BACKOFF_NS :
			    w->backoff_ns * 2 > TX_BACKOFF_MAX_NS ?
			    TX_BACKOFF_MAX_NS : w->backoff_ns * 2;
			return w->backoff_ns;
		}
		/* p[acc] itself failed: dropped, and the rest goes on (the
		 * consumer's status has no word for a missing peer: it
		 * reads engine_error; the counters tell them apart) */
		{
			struct tx_pend *p = &w->pend[w->pend_off];
			struct tx_chan *c = p->c;

			c->queued--;
			count_drop(w, c, err == -EDESTADDRREQ ?
			    TX_DROP_NO_PEER : TX_DROP_ENGINE_ERROR);
			complete(c, p->buf, DAQIRI_TX_ENGINE_ERROR);
			w->pend_off++;
			w->npend--;
		}
	}
	w->backoff_ns = 0;
	return 0;
}

/* Tags the engine is done with: completions. */
static void
reap_engine(struct tx_worker *w)
{
	unsigned n;

	do {
		n = w->ops->tx_done(w->q, w->tags, TX_DONE_MAX);
		for (unsigned i = 0; i < n; i++) {
			unsigned slot = TAG_SLOT(w->tags[i]);
			uint32_t buf = TAG_BUF(w->tags[i]);
			struct tx_chan *c = slot < TX_MAX_CHANNELS ?
			    w->chans[slot] : NULL;

			/* a channel already gone, or a tag not ours */
			if (c == NULL || (c->gen & 0xFFFFFFu) !=
			    TAG_GEN(w->tags[i]) || buf >= c->nbufs ||
			    c->bstate[buf] != BUF_ENGINE)
				continue;
			c->in_engine--;
			complete(c, buf, DAQIRI_TX_SENT);
		}
	} while (n == TX_DONE_MAX);
}

/* Before sleeping: arm every channel's kick. True when one had
 * submissions meanwhile (do not sleep). */
static bool
arm_all(struct tx_worker *w)
{
	bool busy = false;

	for (int i = 0; i < TX_MAX_CHANNELS; i++) {
		struct tx_chan *c = w->chans[i];
		int rc;

		if (c == NULL || c->dead || c->closing)
			continue;
		rc = daqiri_txring_arm_kick(&c->r);
		if (rc < 0)
			chan_break(w, c, "its submission ring's sub_head is "
			    "impossible");
		else if (rc > 0) {
			daqiri_txring_disarm_kick(&c->r);
			busy = true;
		}
	}
	return busy;
}

static void
disarm_all(struct tx_worker *w)
{
	for (int i = 0; i < TX_MAX_CHANNELS; i++) {
		struct tx_chan *c = w->chans[i];

		if (c != NULL && !c->dead && !c->closing)
			daqiri_txring_disarm_kick(&c->r);
	}
}

/*
 * Read at most TX_DOORBELL_READS kicks off a doorbell: a consumer that
 * floods its end with datagrams (empty ones too) costs the worker that
 * many reads per turn, not a turn of its own; epoll is level-triggered,
 * the rest are read at the next. 0, or -errno for a broken socket.
 */
static int
doorbell_drain(int fd)
{
	char b[16];

	for (int i = 0; i < TX_DOORBELL_READS; i++) {
		if (recv(fd, b, sizeof(b), MSG_DONTWAIT) >= 0)
			continue;
		if (errno == EINTR)
			continue;
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	}
	return 0;
}

/* Payloads of some channel the engine has not handed back yet. */
static bool
engine_holds(const struct tx_worker *w)
{
	for (int i = 0; i < TX_MAX_CHANNELS; i++)
		if (w->chans[i] != NULL && w->chans[i]->in_engine > 0)
			return true;
	return false;
}

/* Sleep in epoll at most timeout_ns (0: just look); drain doorbells and
 * take commands. */
static void
wait_events(struct tx_worker *w, uint64_t timeout_ns)
{
	struct epoll_event evs[TX_EPOLL_MAX];
	int ms = (int)((timeout_ns + 999999u) / 1000000u), n;

	n = epoll_wait(w->epfd, evs, TX_EPOLL_MAX, ms);
	for (int i = 0; i < n; i++) {
		uint64_t u = evs[i].data.u64;

		if (u == TX_EV_CMD)
			take_commands(w);
		else if (u < TX_MAX_CHANNELS && w->chans[u] != NULL) {
			struct tx_chan *c = w->chans[u];

			/* a doorbell the consumer broke would fire for
			 * ever: it is looked at every idle interval only */
			if ((evs[i].events & (EPOLLHUP | EPOLLERR)) != 0 ||
			    doorbell_drain(c->wake_fd) < 0)
				(void)epoll_ctl(w->epfd, EPOLL_CTL_DEL,
				    c->wake_fd, NULL);
		}
	}
}

static bool
comps_waiting(const struct tx_worker *w)
{
	for (int i = 0; i < TX_MAX_CHANNELS; i++)
		if (w->chans[i] != NULL && w->chans[i]->ncomp > 0 &&
		    !w->chans[i]->dead)
			return true;
	return false;
}

/* The queue stops: what is queued goes nowhere, what the engine holds
 * comes back, every channel is let go (completions where room). */
static void
worker_drain(struct tx_worker *w)
{
	for (int tries = 0; tries < 100; tries++) {
		bool left = false;

		for (int i = 0; i < TX_MAX_CHANNELS; i++)
			if (w->chans[i] != NULL)
				chan_close(w, w->chans[i], DAQIRI_TX_CLOSED);
		reap_engine(w);
		for (int i = 0; i < TX_MAX_CHANNELS; i++)
			if (w->chans[i] != NULL &&
			    !chan_try_release(w, w->chans[i]))
				left = true;
		if (!left)
			break;
		sleep_ns(TX_BACKOFF_MAX_NS);
	}
	publish(w);
}

static void *
tx_main(void *arg)
{
	struct tx_worker *w = arg;
	uint64_t now = daqiri_mono_ns();

	while (!atomic_load_explicit(&w->stop, memory_order_acquire)) {
		uint64_t wait_ns;
		bool took;

		atomic_store_explicit(&w->beat_ns, now, memory_order_relaxed);
		took = gather(w);
		wait_ns = send_pending(w, now);
		reap_engine(w);
		/* counters first: a consumer that sees its completion
		 * and asks for stats finds them counted */
		publish(w);
		for (int i = 0; i < TX_MAX_CHANNELS; i++) {
			struct tx_chan *c = w->chans[i];

			if (c == NULL)
				continue;
			flush_comps(w, c);
			if (c->closing || c->dead)
				(void)chan_try_release(w, c);
		}
		if (w->npend > 0 || took) {
			/* more may be waiting: look at events without
			 * sleeping unless pacing or the engine asks */
			if (wait_ns > 0)
				sleep_ns(wait_ns < w->idle_ns ? wait_ns :
				    w->idle_ns);
			wait_events(w, 0);
		} else if (!arm_all(w)) {
			/* Armed: any channel's submission kicks us awake.
			 * A full completion ring (its consumer frees room
			 * without telling us) or payloads the engine still
			 * holds (a PMD may free them late) are looked at
			 * again soon; otherwise sleep the idle interval. */
			wait_events(w, comps_waiting(w) || engine_holds(w) ?
			    TX_BACKOFF_MAX_NS : w->idle_ns);
			disarm_all(w);
		} else
			wait_events(w, 0);
		now = daqiri_mono_ns();
	}
	worker_drain(w);
	return NULL;
}

/* --- main thread ----------------------------------------------------------- */

static void
chan_free(struct tx_chan *c)
{
	if (c == NULL)
		return;
	if (c->ring_mem != NULL)
		munmap(c->ring_mem, c->ring_len);
	if (c->pool_mem != NULL && c->pool_dev)
		gpu_free((void *)c->pool_mem);
	else if (c->pool_mem != NULL)
		munmap((void *)c->pool_mem, c->pool_len);
	if (c->wake_fd >= 0)
		close(c->wake_fd);
	free(c->bstate);
	free(c->comps);
	free(c);
}

/* Hand a command to the worker, or do it here when it does not run. */
static int
post(struct tx_worker *w, enum tx_cmd_kind k, struct tx_chan *c)
{
	uint64_t one = 1;

	if (!w->started) {
		if (k == TX_CMD_ADD)
			chan_attach(w, c);
		else if (w->chans[c->slot] == c) {
			chan_close(w, c, DAQIRI_TX_CLOSED);
			(void)chan_try_release(w, c);
			publish(w);
		}
		return 0;
	}
	pthread_mutex_lock(&w->mu);
	if (w->ncmds >= (int)(sizeof(w->cmds) / sizeof(w->cmds[0]))) {
		pthread_mutex_unlock(&w->mu);
		return -EBUSY;
	}
	w->cmds[w->ncmds].kind = k;
	w->cmds[w->ncmds].c = c;
	w->ncmds++;
	atomic_fetch_add_explicit(&c->cmds, 1, memory_order_relaxed);
	pthread_mutex_unlock(&w->mu);
	if (write(w->cmd_fd, &one, sizeof(one)) < 0)
		log_warn("queue '%s': waking the tx worker", w->name);
	return 0;
}

int
tx_worker_create(struct tx_worker **out, const struct cfg_interface *ifc,
		 int qi, struct engine *eng, char *err, size_t errlen)
{
	const struct cfg_queue *cq = &ifc->tx.queues[qi];
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TX_EV_CMD };
	struct tx_worker *w;

	*out = NULL;
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return -ENOMEM;
	snprintf(w->name, sizeof(w->name), "%s/%s", ifc->name, cq->name);
	w->core = cq->cpu_core;
	w->batch = cq->batch_size > 0 && cq->batch_size < TX_PEND_MAX ?
	    cq->batch_size : TX_PEND_MAX;
	w->pacing_mbps = ifc->tx.pacing_mbps;
	w->eng = eng;
	w->ops = eng->ops->tx;
	w->cmd_fd = w->epfd = -1;
	w->idle_ns = TX_IDLE_NS;
	pthread_mutex_init(&w->mu, NULL);
	atomic_store_explicit(&w->beat_ns, daqiri_mono_ns(),
	    memory_order_relaxed);
	if (w->ops == NULL || (w->q = w->ops->txq(eng, qi)) == NULL) {
		snprintf(err, errlen, "tx queue '%s': the %s engine has no "
		    "such tx queue", w->name, eng->ops->name);
		tx_worker_destroy(w);
		return -EINVAL;
	}
	w->max_payload = w->q->max_payload;
	if (w->max_payload == 0) {
		snprintf(err, errlen, "tx queue '%s': the engine takes no "
		    "payload (max_payload 0)", w->name);
		tx_worker_destroy(w);
		return -EINVAL;
	}
	w->cmd_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (w->cmd_fd < 0 || w->epfd < 0 ||
	    epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->cmd_fd, &ev) != 0) {
		int rc = -errno;

		snprintf(err, errlen, "tx queue '%s': eventfd/epoll: %s",
		    w->name, strerror(errno));
		tx_worker_destroy(w);
		return rc;
	}
	publish(w);
	*out = w;
	return 0;
}

int
tx_worker_start(struct tx_worker *w)
{
	int rc;

	rc = pthread_create(&w->thr, NULL, tx_main, w);
	if (rc != 0)
		return -rc;
	w->started = true;
	if (w->core >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		if (w->core < CPU_SETSIZE &&
		    w->core < sysconf(_SC_NPROCESSORS_ONLN))
			CPU_SET(w->core, &set);
		if (CPU_COUNT(&set) == 0 ||
		    (rc = pthread_setaffinity_np(w->thr, sizeof(set), &set)) != 0)
			log_warnx("tx queue '%s': cannot pin to core %d (%s); "
			    "running unpinned", w->name, w->core,
			    CPU_COUNT(&set) == 0 ? "no such core" : strerror(rc));
	}
	return 0;
}

void
tx_worker_stop(struct tx_worker *w)
{
	uint64_t one = 1;

	if (w == NULL || !w->started)
		return;
	atomic_store_explicit(&w->stop, 1, memory_order_release);
	if (write(w->cmd_fd, &one, sizeof(one)) < 0)
		log_warn("tx queue '%s': waking the worker", w->name);
	pthread_join(w->thr, NULL);
	w->started = false;
	/* commands it never took: main does them now */
	apply_commands(w, w->cmds, w->ncmds);
	w->ncmds = 0;
	worker_drain(w);
}

void
tx_worker_destroy(struct tx_worker *w)
{
	if (w == NULL)
		return;
	tx_worker_stop(w);
	worker_drain(w);
	for (int i = 0; i < TX_MAX_CHANNELS; i++) {
		/* a channel whose payloads the engine never gave back
		 * (drain gave up): left mapped, the engine may read it */
		if (w->chans[i] != NULL) {
			log_warnx("tx queue '%s': the engine still holds "
			    "payloads of channel %u; its memory stays",
			    w->name, w->chans[i]->tx_id);
			w->mchans[i] = NULL;
		}
		chan_free(w->mchans[i]);
		w->mchans[i] = NULL;
	}
	if (w->cmd_fd >= 0)
		close(w->cmd_fd);
	if (w->epfd >= 0)
		close(w->epfd);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

const char *
tx_worker_name(const struct tx_worker *w)
{
	return w->name;
}

uint32_t
tx_worker_max_payload(const struct tx_worker *w)
{
	return w->max_payload;
}

uint64_t
tx_worker_heartbeat_ns(const struct tx_worker *w)
{
	return atomic_load_explicit(&((struct tx_worker *)w)->beat_ns,
	    memory_order_relaxed);
}

void
tx_worker_set_idle(struct tx_worker *w, uint64_t idle_ns)
{
	w->idle_ns = idle_ns > 0 && idle_ns < TX_IDLE_NS ? idle_ns : TX_IDLE_NS;
}

/* A device pool's "ipc" fd: a memfd holding its cudaIpcMemHandle_t,
 * sealed whole. 0 and *out, or a negative errno. */
static int
pool_ipc_file(void *dev, int *out)
{
	uint8_t h[GPU_IPC_HANDLE_BYTES];
	int fd, rc;

	*out = -1;
	if ((rc = gpu_ipc_handle(dev, h)) != 0)
		return rc;
	fd = memfd_create("daqiri-txipc", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (pwrite(fd, h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
	    F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
		rc = errno != 0 ? -errno : -EIO;
		close(fd);
		return rc;
	}
	*out = fd;
	return 0;
}

/* c's device pool of pool_bytes on the queue's GPU and its ipc fd. 0, or
 * a negative errno with err: -ENOMEM (the GPU's memory or the memfd ran
 * out), else -EIO (CUDA failed: never -ENODEV, which the consumer would
 * read as "no such interface"). */
static int
pool_device(struct tx_worker *w, struct tx_chan *c, uint64_t pool_bytes,
	    int *pool_fd, char *err, size_t errlen)
{
	void *dev;
	int rc;

	if ((rc = gpu_alloc_pool(w->q->gpu, (size_t)pool_bytes, &dev)) != 0) {
		snprintf(err, errlen, "tx queue '%s': device pool of %llu "
		    "bytes on GPU %d: %s", w->name,
		    (unsigned long long)pool_bytes, w->q->gpu,
		    gpu_last_error());
		return rc == -ENOMEM ? rc : -EIO;
	}
	c->pool_mem = dev;
	c->pool_len = (size_t)pool_bytes;
	c->pool_dev = true;
	if ((rc = pool_ipc_file(dev, pool_fd)) != 0) {
		snprintf(err, errlen, "tx queue '%s': the device pool's CUDA "
		    "IPC handle: %s", w->name, rc == -EIO || rc == -ENODEV ||
		    rc == -EINVAL ? gpu_last_error() : strerror(-rc));
		return rc == -ENOMEM || rc == -EMFILE || rc == -ENFILE ? rc :
		    -EIO;
	}
	return 0;
}

int
tx_channel_open(struct tx_worker *w, uint64_t conn_id, uint32_t tx_id,
		pid_t pid, uint32_t nbufs, struct daqiri_tx_info *info,
		int fds[3], char *err, size_t errlen)
{
	struct tx_chan *c;
	int slot = -1, ring_fd = -1, pool_fd = -1, theirs = -1, rc;
	bool said = false;

	fds[0] = fds[1] = fds[2] = -1;
	if (nbufs == 0)
		nbufs = DAQIRI_TX_NBUFS_DEFAULT;
	if (nbufs > DAQIRI_TX_NBUFS_MAX) {
		snprintf(err, errlen, "nbufs %u: at most %u", nbufs,
		    DAQIRI_TX_NBUFS_MAX);
		return -EINVAL;
	}
	for (int i = 0; i < TX_MAX_CHANNELS && slot < 0; i++)
		if (w->mchans[i] == NULL)
			slot = i;
	if (slot < 0) {
		/* channels closed since the last tick may be free by now */
		for (int i = 0; i < TX_MAX_CHANNELS; i++) {
			struct tx_chan *o = w->mchans[i];

			if (o != NULL && o->main_closed &&
			    atomic_load_explicit(&o->released,
			    memory_order_acquire) &&
			    atomic_load_explicit(&o->cmds,
			    memory_order_acquire) == 0) {
				w->mchans[i] = NULL;
				chan_free(o);
				if (slot < 0)
					slot = i;
			}
		}
	}
	if (slot < 0) {
		int open = tx_worker_nchannels(w);

		snprintf(err, errlen, "tx queue '%s' takes %d channels: %d "
		    "open and %d closing (their worker has not let them go "
		    "yet; try again)", w->name, TX_MAX_CHANNELS, open,
		    TX_MAX_CHANNELS - open);
		return -ENOSPC;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return -ENOMEM;
	c->wake_fd = -1;
	c->conn_id = conn_id;
	c->tx_id = tx_id;
	c->pid = pid;
	c->nbufs = nbufs;
	c->slot = slot;
	c->gen = ++w->gens[slot];
	c->bstate = calloc(nbufs, 1);
	c->comps = calloc(nbufs, sizeof(*c->comps));
	if (c->bstate == NULL || c->comps == NULL) {
		chan_free(c);
		return -ENOMEM;
	}
	if (!w->q->device)
		rc = daqiri_txring_create(&c->r, nbufs, w->max_payload,
		    &ring_fd, &c->ring_mem, &c->ring_len, &pool_fd,
		    &c->pool_mem, &c->pool_len);
	else if ((rc = daqiri_txring_create(&c->r, nbufs, w->max_payload,
	    &ring_fd, &c->ring_mem, &c->ring_len, NULL, NULL, NULL)) == 0 &&
	    (rc = pool_device(w, c, c->r.shm->pool_bytes, &pool_fd, err,
	    errlen)) != 0)
		said = true;
	if (rc == 0)
		rc = daqiri_txwake_create(&c->wake_fd, &theirs);
	if (rc != 0) {
		if (!said)
			snprintf(err, errlen, "tx queue '%s': channel memory: "
			    "%s", w->name, strerror(-rc));
		if (ring_fd >= 0)
			close(ring_fd);
		if (pool_fd >= 0)
			close(pool_fd);
		chan_free(c);
		return rc;
	}
	memset(info, 0, sizeof(*info));
	info->tx_id = tx_id;
	snprintf(info->queue, sizeof(info->queue), "%.*s",
	    (int)sizeof(info->queue) - 1, w->name);
	info->nbufs = nbufs;
	info->buf_size = c->r.buf_size;
	info->buf_stride = c->r.buf_stride;
	info->pool_bytes = c->pool_len;
	info->ring_depth = c->r.depth;
	info->ring_bytes = c->ring_len;
	info->mem_kind = c->pool_dev ? DAQIRI_MEM_DEVICE : DAQIRI_MEM_HOST;
	info->device = c->pool_dev ? w->q->gpu : -1;
	info->nfds = 3;
	info->fds[0] = DAQIRI_FD_TX_RING;
	info->fds[1] = c->pool_dev ? DAQIRI_FD_IPC : DAQIRI_FD_TX_POOL;
	info->fds[2] = DAQIRI_FD_WAKE;
	/* the memfds themselves go (the pool read-write, or the device
	 * pool's IPC handle): the daemon keeps only its mappings */
	fds[0] = ring_fd;
	fds[1] = pool_fd;
	fds[2] = theirs;
	w->mchans[slot] = c;
	if ((rc = post(w, TX_CMD_ADD, c)) != 0) {
		w->mchans[slot] = NULL;
		chan_free(c);
		close(fds[0]);
		close(fds[1]);
		close(fds[2]);
		fds[0] = fds[1] = fds[2] = -1;
		snprintf(err, errlen, "tx queue '%s': busy, try again", w->name);
		return rc;
	}
	return 0;
}

int
tx_channel_close(struct tx_worker *w, uint64_t conn_id, uint32_t tx_id)
{
	int n = 0;

	for (int i = 0; i < TX_MAX_CHANNELS; i++) {
		struct tx_chan *c = w->mchans[i];

		if (c == NULL || c->main_closed || c->conn_id != conn_id ||
		    (tx_id != 0 && c->tx_id != tx_id))
			continue;
		/* one already cut off is reported, not closed twice */
		if (atomic_load_explicit(&c->broken, memory_order_acquire))
			c->reported = true;
		c->main_closed = true;
		if (post(w, TX_CMD_CLOSE, c) != 0) {
			/* Not reached: each slot has at most an ADD and a
			 * CLOSE outstanding (a slot is reused only once its
			 * commands are done) and cmds holds two per slot.
			 * Were it, the channel would stay open for a later
			 * close to try again. */
			c->main_closed = false;
			continue;
		}
		n++;
	}
	return n;
}

void
tx_worker_reap(struct tx_worker *w,
	       void (*broken)(void *ctx, uint64_t conn_id, uint32_t tx_id,
			      const char *why),
	       void *ctx)
{
	for (int i = 0; i < TX_MAX_CHANNELS; i++) {
		struct tx_chan *c = w->mchans[i];

		if (c == NULL)
			continue;
		if (!c->reported && !c->main_closed &&
		    atomic_load_explicit(&c->broken, memory_order_acquire)) {
			c->reported = true;
			if (broken != NULL)
				broken(ctx, c->conn_id, c->tx_id, c->why);
		}
		/* a broken one stays until main closes it (the callback's
		 * tx_channel_close), so its id is not reused meanwhile */
		if (c->main_closed && atomic_load_explicit(&c->released,
		    memory_order_acquire) && atomic_load_explicit(&c->cmds,
		    memory_order_acquire) == 0) {
			w->mchans[i] = NULL;
			chan_free(c);
		}
	}
}

/* The counters of a queue, or of a channel (queue false: without what
 * only a queue has, pacing and broken channels; a channel's "broken" is
 * its state). */
static int
add_counters(cJSON *o, const struct tx_counters *c, bool queue)
{
	cJSON *d;

	if (cJSON_AddNumberToObject(o, "submitted", (double)c->submitted) == NULL ||
	    cJSON_AddNumberToObject(o, "packets", (double)c->packets) == NULL ||
	    cJSON_AddNumberToObject(o, "bytes", (double)c->bytes) == NULL ||
	    cJSON_AddNumberToObject(o, "ring_full", (double)c->ring_full) == NULL ||
	    (queue && (cJSON_AddNumberToObject(o, "paced_s",
		(double)c->paced_ns / 1e9) == NULL ||
	    cJSON_AddNumberToObject(o, "broken", (double)c->broken) == NULL)) ||
	    (d = cJSON_AddObjectToObject(o, "drops")) == NULL)
		return -ENOMEM;
	for (int k = 0; k < TX_DROP_MAX; k++)
		if (cJSON_AddNumberToObject(d, tx_drop_names[k],
		    (double)c->drops[k]) == NULL)
			return -ENOMEM;
	return 0;
}

int
tx_worker_stats_json(struct tx_worker *w, cJSON *o)
{
	struct tx_snap s;
	cJSON *e, *chs;

	snapshot(w, &s);
	if (cJSON_AddStringToObject(o, "queue", w->name) == NULL ||
	    cJSON_AddNumberToObject(o, "max_payload", w->max_payload) == NULL ||
	    cJSON_AddNumberToObject(o, "pacing_mbps", w->pacing_mbps) == NULL ||
	    cJSON_AddStringToObject(o, "memory", w->q->device ? "device" :
		"host") == NULL ||
	    cJSON_AddNumberToObject(o, "channels_open",
		tx_worker_nchannels(w)) == NULL ||
	    add_counters(o, &s.q, true) != 0 ||
	    (e = cJSON_AddObjectToObject(o, "engine")) == NULL ||
	    cJSON_AddNumberToObject(e, "tx_packets", (double)s.e.tx_packets) == NULL ||
	    cJSON_AddNumberToObject(e, "tx_bytes", (double)s.e.tx_bytes) == NULL ||
	    cJSON_AddNumberToObject(e, "errors", (double)s.e.errors) == NULL ||
	    cJSON_AddNumberToObject(e, "calls", (double)s.e.calls) == NULL ||
	    cJSON_AddNumberToObject(e, "full", (double)s.e.full) == NULL ||
	    cJSON_AddNumberToObject(e, "gso_sends", (double)s.e.gso_sends) == NULL ||
	    cJSON_AddNumberToObject(e, "copied", (double)s.e.copied) == NULL ||
	    cJSON_AddNumberToObject(e, "staged", (double)s.e.staged) == NULL ||
	    cJSON_AddNumberToObject(e, "staged_bytes",
		(double)s.e.staged_bytes) == NULL ||
	    (chs = cJSON_AddArrayToObject(o, "channels")) == NULL)
		return -ENOMEM;
	for (int i = 0; i < TX_MAX_CHANNELS; i++) {
		struct tx_chan *c = w->mchans[i];
		struct tx_counters cc;
		cJSON *co;

		if (c == NULL || c->main_closed)
			continue;
		chan_snapshot(c, &cc);
		if ((co = cJSON_CreateObject()) == NULL ||
		    !cJSON_AddItemToArray(chs, co) ||
		    cJSON_AddNumberToObject(co, "tx", c->tx_id) == NULL ||
		    cJSON_AddNumberToObject(co, "conn", (double)c->conn_id) == NULL ||
		    cJSON_AddNumberToObject(co, "pid", c->pid) == NULL ||
		    cJSON_AddNumberToObject(co, "nbufs", c->nbufs) == NULL ||
		    cJSON_AddNumberToObject(co, "in_flight",
			atomic_load_explicit(&c->in_flight,
			memory_order_relaxed)) == NULL ||
		    cJSON_AddBoolToObject(co, "broken",
			atomic_load_explicit(&c->broken,
			memory_order_acquire) != 0) == NULL ||
		    add_counters(co, &cc, false) != 0)
			return -ENOMEM;
	}
	return 0;
}

int
tx_worker_core(const struct tx_worker *w)
{
	return w->core;
}

int
tx_worker_nchannels(const struct tx_worker *w)
{
	int n = 0;

	for (int i = 0; i < TX_MAX_CHANNELS; i++)
		n += w->mchans[i] != NULL && !w->mchans[i]->main_closed;
	return n;
}
