/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of the TX worker (daemon/tx.c) on a fake engine whose tx ops the
 * test steers: payloads sent and completed, a full engine queue
 * (-EAGAIN) retried, a payload the engine refuses (engine_error), an
 * engine that gives tags back late (a closed channel waits for them, a
 * stale tag never completes in a new channel), a completion ring full,
 * a ring with an impossible sub_head cut off and reported once, and a
 * ring of refused submissions looked at only TX_PEND_MAX at a time,
 * and a queue of device pools (opened on the CUDA stand-in, refused with
 * CUDA's reason without a GPU). Every wait is a poll with a generous bound, never a timing assertion.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpu.h"
#include "ring.h"
#include "tx.h"
#include "txring.h"

#define WAIT_MS		10000

/* --- the fake engine ------------------------------------------------------ */

static struct {
	_Atomic int eagain;		/* tx_burst takes nothing */
	_Atomic uint32_t bad_len;	/* a payload of this length fails */
	_Atomic int hold;		/* tx_done gives nothing back */
	_Atomic int nodata;		/* device pointers: keep, do not read */
	const void *ptrs[8];		/* nodata: the first payloads' data */
	pthread_mutex_t mu;
	uint64_t held[8192];
	unsigned nheld;
	_Atomic uint64_t sent, calls;
	uint8_t last[64];		/* first bytes of the last payload */
	/* the first payload of FK_WATCH_LEN bytes: *watch when it came */
	_Atomic(_Atomic uint32_t *) watch;
	uint32_t watch_at;
} fk = { .mu = PTHREAD_MUTEX_INITIALIZER };
#define FK_WATCH_LEN	77

struct fake_engine {
	struct engine base;
	struct engine_txq q;
};

static struct engine_txq *
fk_txq(struct engine *e, int qi)
{
	return qi == 0 ? &((struct fake_engine *)e)->q : NULL;
}

static int
fk_burst(struct engine_txq *q, const struct engine_tx_pkt *p, unsigned n,
	 int *err)
{
	unsigned i;

	*err = 0;
	atomic_fetch_add(&fk.calls, 1);
	if (atomic_load(&fk.eagain)) {
		*err = -EAGAIN;
		return 0;
	}
	pthread_mutex_lock(&fk.mu);
	for (i = 0; i < n; i++) {
		if (p[i].len == atomic_load(&fk.bad_len)) {
			*err = -EIO;
			break;
		}
		if (atomic_load(&fk.nodata)) {
			if (fk.sent < 8)
				fk.ptrs[fk.sent] = p[i].data;
		} else
			memcpy(fk.last, p[i].data, p[i].len < 64 ?
			    p[i].len : 64);
		if (p[i].len == FK_WATCH_LEN && atomic_load(&fk.watch) != NULL &&
		    fk.watch_at == UINT32_MAX)
			fk.watch_at = atomic_load(atomic_load(&fk.watch));
		fk.held[fk.nheld++] = p[i].tag;
		atomic_fetch_add(&fk.sent, 1);
	}
	pthread_mutex_unlock(&fk.mu);
	return (int)i;
}

static unsigned
fk_done(struct engine_txq *q, uint64_t *tags, unsigned max)
{
	unsigned n;

	if (atomic_load(&fk.hold))
		return 0;
	pthread_mutex_lock(&fk.mu);
	n = fk.nheld < max ? fk.nheld : max;
	memcpy(tags, fk.held + (fk.nheld - n), n * sizeof(*tags));
	fk.nheld -= n;
	pthread_mutex_unlock(&fk.mu);
	return n;
}

static int
fk_stats(struct engine_txq *q, struct engine_tx_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->tx_packets = atomic_load(&fk.sent);
	out->calls = atomic_load(&fk.calls);
	return 0;
}

static const struct engine_tx_ops fk_tx_ops = {
	.txq = fk_txq, .tx_burst = fk_burst, .tx_done = fk_done,
	.tx_stats = fk_stats,
};
static const struct engine_ops fk_ops = { .name = "fake", .tx = &fk_tx_ops };

static struct fake_engine eng;
static struct cfg_interface ifc;

static struct tx_worker *
mkworker(uint32_t batch)
{
	struct tx_worker *w;
	char err[256] = "";

	memset(&fk.held, 0, sizeof(fk.held));
	fk.nheld = 0;
	atomic_store(&fk.eagain, 0);
	atomic_store(&fk.bad_len, UINT32_MAX);
	atomic_store(&fk.hold, 0);
	atomic_store(&fk.nodata, 0);
	atomic_store(&fk.sent, 0);
	atomic_store(&fk.calls, 0);
	memset(&eng, 0, sizeof(eng));
	eng.base.ops = &fk_ops;
	eng.q.engine = &eng.base;
	eng.q.max_payload = 1000;
	memset(&ifc, 0, sizeof(ifc));
	snprintf(ifc.name, sizeof(ifc.name), "if0");
	ifc.has_tx = true;
	ifc.tx.nqueues = 1;
	snprintf(ifc.tx.queues[0].name, sizeof(ifc.tx.queues[0].name), "t0");
	ifc.tx.queues[0].cpu_core = -1;
	ifc.tx.queues[0].batch_size = batch;
	ck_assert_int_eq(tx_worker_create(&w, &ifc, 0, &eng.base, err,
	    sizeof(err)), 0);
	ck_assert_str_eq(tx_worker_name(w), "if0/t0");
	ck_assert_uint_eq(tx_worker_max_payload(w), 1000);
	tx_worker_set_idle(w, 5u * 1000u * 1000u);
	ck_assert_int_eq(tx_worker_start(w), 0);
	return w;
}

/* --- a consumer's side ---------------------------------------------------- */

struct cons {
	struct daqiri_tx_info info;
	struct daqiri_txring r;
	void *ring;
	uint8_t *pool;
	int wake;
	uint32_t st[DAQIRI_TX_STATUS_MAX];
	uint32_t n;
};

static void
copen(struct tx_worker *w, struct cons *c, uint64_t conn, uint32_t id,
      uint32_t nbufs)
{
	char err[256] = "";
	int fds[3];

	memset(c, 0, sizeof(*c));
	ck_assert_int_eq(tx_channel_open(w, conn, id, 1, nbufs, &c->info, fds,
	    err, sizeof(err)), 0);
	ck_assert_uint_eq(c->info.tx_id, id);
	ck_assert_uint_eq(c->info.nfds, 3);
	c->ring = mmap(NULL, c->info.ring_bytes, PROT_READ | PROT_WRITE,
	    MAP_SHARED, fds[0], 0);
	c->pool = mmap(NULL, c->info.pool_bytes, PROT_READ | PROT_WRITE,
	    MAP_SHARED, fds[1], 0);
	ck_assert(c->ring != MAP_FAILED && c->pool != MAP_FAILED);
	ck_assert_int_eq(daqiri_txring_attach(&c->r, c->ring,
	    c->info.ring_bytes), 0);
	close(fds[0]);
	close(fds[1]);
	c->wake = fds[2];
}

static void
cclose(struct cons *c)
{
	munmap(c->ring, c->info.ring_bytes);
	munmap(c->pool, c->info.pool_bytes);
	close(c->wake);
}

static void
sleep_ms(unsigned ms)
{
	struct timespec ts = { 0, (long)ms * 1000000L };

	nanosleep(&ts, NULL);
}

static void
submit(struct cons *c, uint32_t buf, uint32_t len, uint8_t mark)
{
	memset(c->pool + (size_t)buf * c->info.buf_stride, mark, len);
	ck_assert_int_eq(daqiri_tx_sub_push(&c->r, buf, len), 0);
	if (daqiri_txring_kick_wanted(&c->r))
		(void)daqiri_wake_signal(c->wake);
}

/* Pop completions until n in all (WAIT_MS at most). */
static void
wait_comps(struct cons *c, uint32_t n)
{
	struct daqiri_tx_comp cp;

	for (int i = 0; i < WAIT_MS && c->n < n; i++) {
		while (daqiri_tx_comp_pop(&c->r, &cp) == 1) {
			ck_assert_uint_lt(cp.status, DAQIRI_TX_STATUS_MAX);
			ck_assert_uint_lt(cp.buf, c->info.nbufs);
			c->st[cp.status]++;
			c->n++;
		}
		if (c->n < n)
			sleep_ms(1);
	}
	ck_assert_uint_eq(c->n, n);
}

static void
wait_counters(struct tx_worker *w, uint64_t packets, uint64_t submitted)
{
	struct tx_counters t;

	for (int i = 0; i < WAIT_MS; i++) {
		tx_worker_snapshot(w, &t);
		if (t.packets == packets && t.submitted == submitted)
			return;
		sleep_ms(1);
	}
	ck_abort_msg("counters: packets %llu submitted %llu, want %llu %llu",
	    (unsigned long long)t.packets, (unsigned long long)t.submitted,
	    (unsigned long long)packets, (unsigned long long)submitted);
}

static int nbroken;
static char broken_why[128];

static void
on_broken(void *ctx, uint64_t conn, uint32_t id, const char *why)
{
	nbroken++;
	snprintf(broken_why, sizeof(broken_why), "%s", why);
	ck_assert_uint_eq(conn, 7);
	ck_assert_uint_eq(id, 3);
}

/* --- tests ------------------------------------------------------------------ */

START_TEST(test_send)
{
	struct tx_worker *w = mkworker(4);
	struct tx_counters t;
	struct cons c;
	cJSON *o;

	copen(w, &c, 1, 1, 8);
	ck_assert_uint_eq(c.info.buf_size, 1000);
	for (uint32_t b = 0; b < 8; b++)
		submit(&c, b, 100 + b, (uint8_t)b);
	wait_comps(&c, 8);
	ck_assert_uint_eq(c.st[DAQIRI_TX_SENT], 8);
	wait_counters(w, 8, 8);
	tx_worker_snapshot(w, &t);
	ck_assert_uint_eq(t.bytes, 8 * 100 + 28);
	ck_assert_uint_eq(fk.last[0], 7);
	/* a length over buf_size: completed too_big, never sent */
	submit(&c, 0, 10, 1);
	ck_assert_int_eq(daqiri_tx_sub_push(&c.r, 1, 1001), 0);
	(void)daqiri_wake_signal(c.wake);
	wait_comps(&c, 10);
	ck_assert_uint_eq(c.st[DAQIRI_TX_TOO_BIG], 1);
	wait_counters(w, 9, 10);
	tx_worker_snapshot(w, &t);
	ck_assert_uint_eq(t.drops[TX_DROP_TOO_BIG], 1);
	ck_assert_int_eq(tx_worker_nchannels(w), 1);
	o = cJSON_CreateObject();
	ck_assert_int_eq(tx_worker_stats_json(w, o), 0);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o,
	    "channels")), 1);
	cJSON_Delete(o);
	ck_assert_int_eq(tx_channel_close(w, 1, 1), 1);
	ck_assert_int_eq(tx_channel_close(w, 1, 1), 0);
	ck_assert_int_eq(tx_worker_nchannels(w), 0);
	for (int i = 0; i < 20; i++) {
		tx_worker_reap(w, on_broken, NULL);
		sleep_ms(1);
	}
	tx_worker_destroy(w);
	cclose(&c);
}
END_TEST

START_TEST(test_eagain_and_error)
{
	struct tx_worker *w = mkworker(16);
	struct tx_counters t;
	struct cons c;
	uint64_t calls;

	atomic_store(&fk.eagain, 1);
	copen(w, &c, 1, 1, 8);
	for (uint32_t b = 0; b < 4; b++)
		submit(&c, b, 50, 9);
	/* the worker retries a full queue without losing anything */
	for (int i = 0; i < WAIT_MS && atomic_load(&fk.calls) < 3; i++)
		sleep_ms(1);
	calls = atomic_load(&fk.calls);
	ck_assert_uint_ge(calls, 3);
	/* nothing completed meanwhile: no completion in the ring */
	ck_assert_int_eq(daqiri_tx_comp_pop(&c.r, &(struct daqiri_tx_comp){ 0 }),
	    0);
	atomic_store(&fk.bad_len, 13);
	atomic_store(&fk.eagain, 0);
	submit(&c, 4, 13, 1);
	submit(&c, 5, 50, 1);
	wait_comps(&c, 6);
	ck_assert_uint_eq(c.st[DAQIRI_TX_SENT], 5);
	ck_assert_uint_eq(c.st[DAQIRI_TX_ENGINE_ERROR], 1);
	wait_counters(w, 5, 6);
	tx_worker_snapshot(w, &t);
	ck_assert_uint_eq(t.drops[TX_DROP_ENGINE_ERROR], 1);
	tx_worker_destroy(w);
	cclose(&c);
}
END_TEST

START_TEST(test_late_tags)
{
	struct tx_worker *w = mkworker(8);
	struct cons c, d;
	uint64_t stale;

	atomic_store(&fk.hold, 1);
	copen(w, &c, 1, 1, 4);
	submit(&c, 0, 20, 1);
	submit(&c, 1, 20, 1);
	for (int i = 0; i < WAIT_MS && atomic_load(&fk.sent) < 2; i++)
		sleep_ms(1);
	ck_assert_uint_eq(atomic_load(&fk.sent), 2);
	/* closed while the engine still holds its payloads: main no longer
	 * counts it, and reaping meanwhile reports nothing broken */
	ck_assert_int_eq(tx_channel_close(w, 1, 0), 1);
	ck_assert_int_eq(tx_worker_nchannels(w), 0);
	for (int i = 0; i < 50; i++) {
		tx_worker_reap(w, on_broken, NULL);
		sleep_ms(1);
	}
	pthread_mutex_lock(&fk.mu);
	stale = fk.held[0];
	pthread_mutex_unlock(&fk.mu);
	/* the engine lets go: the worker releases the channel, main
	 * frees it, and its slot takes the next channel */
	atomic_store(&fk.hold, 0);
	unsigned left = 1;

	for (int i = 0; i < WAIT_MS; i++) {
		tx_worker_reap(w, on_broken, NULL);
		pthread_mutex_lock(&fk.mu);
		left = fk.nheld;
		pthread_mutex_unlock(&fk.mu);
		if (left == 0)
			break;
		sleep_ms(1);
	}
	ck_assert_uint_eq(left, 0);
	/* the old channel freed, so the new one takes its slot: only
	 * then is the tag below a stale one of the same slot */
	for (int i = 0; i < WAIT_MS && tx_worker_nchannels(w) != 0; i++) {
		tx_worker_reap(w, on_broken, NULL);
		sleep_ms(1);
	}
	ck_assert_int_eq(tx_worker_nchannels(w), 0);
	copen(w, &d, 2, 2, 4);
	/* a stale tag (the old channel's, same slot, older generation)
	 * handed back again: no completion in the new channel */
	pthread_mutex_lock(&fk.mu);
	fk.held[fk.nheld++] = stale;
	pthread_mutex_unlock(&fk.mu);
	submit(&d, 0, 30, 2);
	wait_comps(&d, 1);
	sleep_ms(20);
	wait_comps(&d, 1);
	ck_assert_uint_eq(d.st[DAQIRI_TX_SENT], 1);
	ck_assert_int_eq(nbroken, 0);
	tx_worker_destroy(w);
	cclose(&c);
	cclose(&d);
}
END_TEST

START_TEST(test_completions_full)
{
	struct tx_worker *w = mkworker(8);
	struct cons c;

	copen(w, &c, 1, 1, 4);
	ck_assert_uint_eq(c.info.ring_depth, 4);
	for (uint32_t b = 0; b < 4; b++)
		submit(&c, b, 10, 1);
	/* all four completed into the ring, not read: resubmitting them
	 * is allowed (they are the consumer's), their completions wait */
	for (int i = 0; i < WAIT_MS && atomic_load(&c.r.shm->comp_head) < 4;
	    i++)
		sleep_ms(1);
	for (uint32_t b = 0; b < 4; b++)
		submit(&c, b, 10, 2);
	wait_counters(w, 8, 8);
	/* a third time: in flight (waiting to complete), bad_buffer */
	submit(&c, 0, 10, 3);
	wait_counters(w, 8, 9);
	wait_comps(&c, 8);
	ck_assert_uint_eq(c.st[DAQIRI_TX_SENT], 8);
	{
		struct tx_counters t;

		tx_worker_snapshot(w, &t);
		ck_assert_uint_eq(t.drops[TX_DROP_BAD_BUFFER], 1);
	}
	tx_worker_destroy(w);
	cclose(&c);
}
END_TEST

START_TEST(test_broken)
{
	struct tx_worker *w = mkworker(8);
	struct tx_counters t;
	struct cons c;

	nbroken = 0;
	copen(w, &c, 7, 3, 4);
	atomic_store(&c.r.shm->sub_head, 1000);
	(void)daqiri_wake_signal(c.wake);
	for (int i = 0; i < WAIT_MS && nbroken == 0; i++) {
		tx_worker_reap(w, on_broken, NULL);
		sleep_ms(1);
	}
	ck_assert_int_eq(nbroken, 1);
	ck_assert_ptr_nonnull(strstr(broken_why, "sub_head"));
	for (int i = 0; i < 20; i++) {
		tx_worker_reap(w, on_broken, NULL);
		sleep_ms(1);
	}
	ck_assert_int_eq(nbroken, 1);
	tx_worker_snapshot(w, &t);
	ck_assert_uint_eq(t.broken, 1);
	/* main closes it (what daemon_tx_broken does) and it is freed */
	ck_assert_int_eq(tx_channel_close(w, 7, 3), 1);
	for (int i = 0; i < WAIT_MS && tx_worker_nchannels(w) != 0; i++)
		sleep_ms(1);
	tx_worker_reap(w, on_broken, NULL);
	ck_assert_int_eq(tx_worker_nchannels(w), 0);
	ck_assert_int_eq(nbroken, 1);
	tx_worker_destroy(w);
	cclose(&c);
}
END_TEST

/* A channel whose whole ring is refused submissions (buffers it does not
 * have) cannot keep the worker looking at them: the other channel's
 * payload goes out after at most TX_PEND_MAX of them, not all 4096. */
START_TEST(test_refused_submissions_bounded)
{
	struct tx_worker *w = mkworker(8);
	struct tx_counters t;
	struct cons good, bad;
	uint32_t depth;

	copen(w, &good, 1, 1, 8);
	copen(w, &bad, 2, 2, DAQIRI_TX_NBUFS_MAX);
	depth = bad.r.depth;
	for (uint32_t i = 0; i < depth; i++)
		bad.r.sub[i] = (struct daqiri_tx_sub){ .buf = depth + 1,
		    .len = 1 };
	fk.watch_at = UINT32_MAX;
	atomic_store(&fk.watch, &bad.r.shm->sub_tail);
	atomic_store(&bad.r.shm->sub_head, depth);
	submit(&good, 0, FK_WATCH_LEN, 1);
	(void)daqiri_wake_signal(bad.wake);
	wait_comps(&good, 1);
	ck_assert_uint_eq(good.st[DAQIRI_TX_SENT], 1);
	ck_assert_msg(fk.watch_at < depth, "the payload waited for all %u "
	    "refused submissions", fk.watch_at);
	for (int i = 0; i < WAIT_MS; i++) {
		tx_worker_snapshot(w, &t);
		if (t.drops[TX_DROP_BAD_BUFFER] == depth)
			break;
		sleep_ms(1);
	}
	ck_assert_uint_eq(t.drops[TX_DROP_BAD_BUFFER], depth);
	atomic_store(&fk.watch, NULL);
	ck_assert_int_eq(tx_channel_close(w, 1, 1), 1);
	ck_assert_int_eq(tx_channel_close(w, 2, 2), 1);
	tx_worker_destroy(w);
	cclose(&good);
	cclose(&bad);
}
END_TEST

START_TEST(test_limits)
{
	struct tx_worker *w = mkworker(8);
	struct daqiri_tx_info info;
	char err[256];
	int fds[3];

	ck_assert_int_eq(tx_channel_open(w, 1, 1, 1, DAQIRI_TX_NBUFS_MAX + 1,
	    &info, fds, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(fds[0], -1);
	/* stopped with a channel open: closed on main, freed at destroy */
	{
		struct cons c;

		copen(w, &c, 1, 2, 0);
		ck_assert_uint_eq(c.info.nbufs, DAQIRI_TX_NBUFS_DEFAULT);
		tx_worker_stop(w);
		ck_assert_int_eq(tx_channel_close(w, 1, 0), 1);
		tx_worker_reap(w, NULL, NULL);
		ck_assert_int_eq(tx_worker_nchannels(w), 0);
		cclose(&c);
	}
	tx_worker_destroy(w);
}
END_TEST

/* Every channel taken: the refusal says how many are open and how many
 * closing; once all are closed, and their worker let them go, an open
 * succeeds without waiting for the main loop's reap (no tick here). */
START_TEST(test_channel_limit)
{
	struct tx_worker *w = mkworker(8);
	static struct cons c[TX_MAX_CHANNELS];
	struct daqiri_tx_info info;
	char err[256] = "";
	int fds[3], rc = -ENOSPC;

	for (int i = 0; i < TX_MAX_CHANNELS; i++)
		copen(w, &c[i], 1, (uint32_t)i + 1, 4);
	ck_assert_int_eq(tx_channel_open(w, 1, 100, 1, 4, &info, fds, err,
	    sizeof(err)), -ENOSPC);
	ck_assert_msg(strstr(err, "takes 64 channels: 64 open and 0 closing")
	    != NULL, "%s", err);
	ck_assert_int_eq(tx_channel_close(w, 1, 0), TX_MAX_CHANNELS);
	for (int i = 0; i < TX_MAX_CHANNELS; i++)
		cclose(&c[i]);
	/* the worker lets closed channels go on its next turn */
	for (int i = 0; i < 1000 && rc == -ENOSPC; i++) {
		rc = tx_channel_open(w, 1, 100, 1, 4, &info, fds, err,
		    sizeof(err));
		if (rc == -ENOSPC) {
			ck_assert_msg(strstr(err, "0 open and 64 closing") !=
			    NULL, "%s", err);
			sleep_ms(10);
		}
	}
	ck_assert_msg(rc == 0, "open after closing all: %d %s", rc, err);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	ck_assert_int_eq(tx_channel_close(w, 1, 100), 1);
	tx_worker_stop(w);
	tx_worker_reap(w, NULL, NULL);
	tx_worker_destroy(w);
}
END_TEST

/* A queue whose engine takes device pools (engine_txq.device): each
 * channel's pool is device memory on the queue's GPU, handed over as an
 * "ipc" memfd of one sealed handle, and the worker gives the engine
 * device pointers at buf x stride. Without a GPU (the plain run) the
 * open fails with CUDA's reason and leaves nothing behind; on the CUDA
 * stand-in (make unit-standin) it opens. */
START_TEST(test_device_pool)
{
	struct tx_worker *w = mkworker(8);
	struct daqiri_tx_info info;
	struct daqiri_err e;
	struct daqiri_txring r;
	struct stat st;
	char err[256] = "";
	void *ring;
	int fds[3], rc;
	uint32_t n = 0;

	eng.q.device = true;
	eng.q.gpu = 0;
	atomic_store(&fk.nodata, 1);
	rc = tx_channel_open(w, 1, 1, 1, 4, &info, fds, err, sizeof(err));
	if (!gpu_available(NULL, 0)) {
		ck_assert_msg(rc == -EIO, "rc %d", rc);
		ck_assert_msg(strncmp(err, "tx queue 'if0/t0': device pool of "
		    "4096 bytes on GPU 0: ", 52) == 0 && strlen(err) > 52,
		    "error text: %s", err);
		ck_assert(fds[0] == -1 && fds[1] == -1 && fds[2] == -1);
		ck_assert_int_eq(tx_worker_nchannels(w), 0);
		tx_worker_destroy(w);
		return;
	}
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_int_eq(info.mem_kind, DAQIRI_MEM_DEVICE);
	ck_assert_int_eq(info.device, 0);
	ck_assert_int_eq(info.fds[1], DAQIRI_FD_IPC);
	ck_assert_int_eq(daqiri_tx_info_check(&info, &e), 0);
	ck_assert_int_eq(fstat(fds[1], &st), 0);
	ck_assert_int_eq(st.st_size, DAQIRI_TX_IPC_FILE_BYTES);
	ck_assert(fcntl(fds[1], F_GET_SEALS) & F_SEAL_WRITE);
	ring = mmap(NULL, info.ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
	    fds[0], 0);
	ck_assert(ring != MAP_FAILED);
	ck_assert_int_eq(daqiri_txring_attach(&r, ring, info.ring_bytes), 0);
	ck_assert_uint_eq(r.shm->pool_bytes, info.pool_bytes);
	ck_assert_int_eq(daqiri_tx_sub_push(&r, 0, 10), 0);
	ck_assert_int_eq(daqiri_tx_sub_push(&r, 3, 20), 0);
	if (daqiri_txring_kick_wanted(&r))
		(void)daqiri_wake_signal(fds[2]);
	for (int i = 0; i < WAIT_MS && n < 2; i++) {
		struct daqiri_tx_comp cp;

		while (daqiri_tx_comp_pop(&r, &cp) == 1) {
			ck_assert_uint_eq(cp.status, DAQIRI_TX_SENT);
			n++;
		}
		if (n < 2)
			sleep_ms(1);
	}
	ck_assert_uint_eq(n, 2);
	ck_assert_ptr_nonnull(fk.ptrs[0]);
	ck_assert_int_eq((const uint8_t *)fk.ptrs[1] -
	    (const uint8_t *)fk.ptrs[0], 3 * (long)info.buf_stride);
	ck_assert_int_eq(tx_channel_close(w, 1, 1), 1);
	for (int i = 0; i < WAIT_MS && tx_worker_nchannels(w) > 0; i++) {
		tx_worker_reap(w, NULL, NULL);
		sleep_ms(1);
	}
	tx_worker_destroy(w);
	munmap(ring, info.ring_bytes);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
}
END_TEST

static Suite *
tx_suite(void)
{
	Suite *s = suite_create("tx");
	TCase *tc = tcase_create("worker");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_send);
	tcase_add_test(tc, test_eagain_and_error);
	tcase_add_test(tc, test_late_tags);
	tcase_add_test(tc, test_completions_full);
	tcase_add_test(tc, test_broken);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_channel_limit);
	tcase_add_test(tc, test_refused_submissions_bounded);
	tcase_add_test(tc, test_device_pool);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(tx_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
