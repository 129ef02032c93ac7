/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tx-raw: a TX channel spoken by hand (proto/ framing and txring, not
 * libdaqiri-client), for tests/system/35-tx-socket.sh and 36-tx-hostile.sh.
 *
 *   tx-raw SOCK QUEUE open                 tx_open only: "open: ok" or
 *                                          "open: refused STATUS" (exit 3)
 *   tx-raw SOCK QUEUE send N LEN [vary|nofill] [NBUFS]
 *                                          N payloads (see below) and
 *                                          every completion sent;
 *                                          nofill: each buffer written
 *                                          once only (a benchmark)
 *   tx-raw SOCK QUEUE too-big|bad-index|resubmit|garbage-head|
 *                     after-close|flood    one hostile mode each
 *
 * Payload seq (0-based) of length len: bytes 0..7 the seq (little
 * endian), byte k >= 8 is (seq + k) & 0xff. With "vary" the length is
 * LEN - seq % 3 (runs of one length are short: the engine's path
 * without UDP_SEGMENT). Prints what it saw ("completions: sent=.."),
 * exits 0 when it was what the mode expects, 1 otherwise, 2 on a usage
 * or set-up error.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"
#include "ring.h"
#include "txring.h"

#define TR_REPLY_MS	5000
#define TR_DONE_MS	20000		/* every completion within this */
#define TR_LIFETIME_S	120

static char tr_buf[DAQIRI_MSG_SIZE_MAX + 1];

struct chan {
	int ctl;
	struct daqiri_tx_info info;
	struct daqiri_txring r;
	void *ring;
	uint8_t *pool;
	int wake;
	uint64_t st[DAQIRI_TX_STATUS_MAX];
	uint64_t ncomp;
	bool closed_event;
	char closed_why[DAQIRI_ERR_MSG_MAX];
};

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "tx-raw: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* One message within ms, decoded; its fd in *fd. 1, or -errno. */
static int
recv_one(int s, struct daqiri_msg *m, int *fd, int ms)
{
	struct pollfd p = { .fd = s, .events = POLLIN };
	struct daqiri_err err;
	ssize_t n;

	*fd = -1;
	if (poll(&p, 1, ms) <= 0)
		return -ETIMEDOUT;
	n = daqiri_recv_msg(s, tr_buf, sizeof(tr_buf) - 1, fd);
	if (n == 0)
		return -ECONNRESET;
	if (n < 0)
		return (int)n;
	if (daqiri_msg_decode(tr_buf, (size_t)n, m, &err) < 0)
		die("undecodable message from the daemon: %s", err.msg);
	return 1;
}

static void
note_event(struct chan *c, const struct daqiri_msg *m)
{
	if (m->type == DAQIRI_MSG_EVENT &&
	    m->u.event.kind == DAQIRI_EV_TX_CLOSED &&
	    m->u.event.sub_id == c->info.tx_id) {
		c->closed_event = true;
		snprintf(c->closed_why, sizeof(c->closed_why), "%s",
		    m->u.event.message);
	}
}

/* Send req and wait for its reply (events meanwhile are noted). */
static enum daqiri_status
request(struct chan *c, const char *req, struct daqiri_msg *rep)
{
	uint64_t end = mono_ms() + TR_REPLY_MS;
	int fd, r;

	if ((r = daqiri_send_msg(c->ctl, req, strlen(req), -1)) < 0)
		die("send: %s", strerror(-r));
	for (;;) {
		int left = (int)(end - mono_ms());

		if (left <= 0 || (r = recv_one(c->ctl, rep, &fd, left)) < 0)
			die("no reply to %s", req);
		if (fd >= 0)
			close(fd);
		if (rep->type == DAQIRI_MSG_REPLY)
			return rep->u.reply.status;
		note_event(c, rep);
		daqiri_msg_free(rep);
	}
}

static void
ctl_open(struct chan *c, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct daqiri_msg m;
	char req[128];

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	c->ctl = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (c->ctl < 0 || connect(c->ctl, (struct sockaddr *)&sa,
	    sizeof(sa)) < 0)
		die("connect %s: %s", path, strerror(errno));
	snprintf(req, sizeof(req), "{\"type\":\"hello\",\"version\":%u,"
	    "\"client\":\"tx-raw\"}", DAQIRI_PROTO_VERSION);
	if (request(c, req, &m) != DAQIRI_ST_OK)
		die("hello refused");
	daqiri_msg_free(&m);
}

/* tx_open; DAQIRI_ST_OK with the channel mapped, else the status. */
static enum daqiri_status
tx_open(struct chan *c, const char *queue, uint32_t nbufs)
{
	struct daqiri_err err;
	struct daqiri_msg m;
	enum daqiri_status st;
	char req[256];
	int fds[3] = { -1, -1, -1 };

	if (nbufs != 0)
		snprintf(req, sizeof(req), "{\"type\":\"tx_open\",\"queue\":"
		    "\"%s\",\"nbufs\":%u}", queue, nbufs);
	else
		snprintf(req, sizeof(req), "{\"type\":\"tx_open\",\"queue\":"
		    "\"%s\"}", queue);
	st = request(c, req, &m);
	if (st != DAQIRI_ST_OK) {
		printf("open: refused %s (%s)\n", daqiri_status_name(st),
		    m.u.reply.message);
		daqiri_msg_free(&m);
		return st;
	}
	if (daqiri_tx_info_decode(m.json, &c->info, &err) < 0)
		die("tx_open reply: %s", err.msg);
	daqiri_msg_free(&m);
	for (uint32_t i = 0; i < c->info.nfds; i++) {
		int fd, r = recv_one(c->ctl, &m, &fd, TR_REPLY_MS);

		if (r < 0 || m.type != DAQIRI_MSG_SUB_FD || fd < 0 ||
		    m.u.sub_fd.sub_id != c->info.tx_id || m.u.sub_fd.index != i)
			die("fd %u of the channel did not come", i);
		fds[i] = fd;
		daqiri_msg_free(&m);
	}
	c->ring = mmap(NULL, c->info.ring_bytes, PROT_READ | PROT_WRITE,
	    MAP_SHARED, fds[0], 0);
	c->pool = mmap(NULL, c->info.pool_bytes, PROT_READ | PROT_WRITE,
	    MAP_SHARED, fds[1], 0);
	if (c->ring == MAP_FAILED || c->pool == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	if (daqiri_txring_attach(&c->r, c->ring, c->info.ring_bytes) < 0)
		die("the ring does not check");
	close(fds[0]);
	close(fds[1]);
	c->wake = fds[2];
	printf("open: ok tx %u nbufs %u buf_size %u depth %u\n", c->info.tx_id,
	    c->info.nbufs, c->info.buf_size, c->info.ring_depth);
	return DAQIRI_ST_OK;
}

static void
kick(struct chan *c)
{
	if (daqiri_txring_kick_wanted(&c->r))
		(void)daqiri_wake_signal(c->wake);
}

static void
fill(struct chan *c, uint32_t buf, uint64_t seq, uint32_t len)
{
	uint8_t *p = c->pool + (size_t)buf * c->info.buf_stride;

	for (uint32_t k = 0; k < len; k++)
		p[k] = k < 8 ? (uint8_t)(seq >> (8 * k)) : (uint8_t)(seq + k);
}

/* Take completions; wait at most ms for at least one (0: do not wait).
 * Events on the control socket are noted. Returns how many. */
static int
reap(struct chan *c, int ms, uint32_t *bufs, int max)
{
	struct daqiri_tx_comp cp;
	int n = 0, r;

	for (;;) {
		while (n < max && (r = daqiri_tx_comp_pop(&c->r, &cp)) == 1) {
			if (cp.status >= DAQIRI_TX_STATUS_MAX)
				die("completion with status %u", cp.status);
			c->st[cp.status]++;
			c->ncomp++;
			if (bufs != NULL)
				bufs[n] = cp.buf;
			n++;
		}
		if (n > 0 || ms <= 0 || c->closed_event)
			return n;
		if ((r = daqiri_txring_arm_wake(&c->r)) < 0)
			die("completion ring impossible");
		if (r == 0) {
			struct pollfd p[2] = {
				{ .fd = c->wake, .events = POLLIN },
				{ .fd = c->ctl, .events = POLLIN },
			};
			uint64_t t0 = mono_ms();

			if (poll(p, 2, ms) <= 0)
				return 0;
			(void)daqiri_wake_drain(c->wake);
			if (p[1].revents != 0) {
				struct daqiri_msg m;
				int fd;

				if (recv_one(c->ctl, &m, &fd, 0) == 1) {
					note_event(c, &m);
					daqiri_msg_free(&m);
				}
				if (fd >= 0)
					close(fd);
			}
			ms -= (int)(mono_ms() - t0);
		}
		daqiri_txring_disarm_wake(&c->r);
	}
}

static void
print_comps(const struct chan *c)
{
	printf("completions: sent=%llu too_big=%llu engine_error=%llu "
	    "closed=%llu\n", (unsigned long long)c->st[DAQIRI_TX_SENT],
	    (unsigned long long)c->st[DAQIRI_TX_TOO_BIG],
	    (unsigned long long)c->st[DAQIRI_TX_ENGINE_ERROR],
	    (unsigned long long)c->st[DAQIRI_TX_CLOSED]);
}

/* Send n payloads through the pool, every buffer reused as it comes
 * back. True when all n completed sent. */
static bool
do_send(struct chan *c, uint64_t n, uint32_t len, bool vary, bool nofill)
{
	uint32_t *freeb = calloc(c->info.nbufs, sizeof(uint32_t));
	uint32_t nfree = c->info.nbufs;
	uint64_t seq = 0, end;

	if (freeb == NULL)
		die("out of memory");
	for (uint32_t i = 0; i < nfree; i++)
		freeb[i] = i;
	end = mono_ms() + TR_DONE_MS;
	while (c->ncomp < n && mono_ms() < end && !c->closed_event) {
		while (seq < n && nfree > 0) {
			uint32_t b = freeb[--nfree];
			uint32_t l = vary ? len - (uint32_t)(seq % 3) : len;

			if (!nofill || seq < c->info.nbufs)
				fill(c, b, seq, l);
			if (daqiri_tx_sub_push(&c->r, b, l) != 0)
				die("submission ring refused with a free buffer");
			seq++;
		}
		kick(c);
		nfree += (uint32_t)reap(c, 1000, freeb + nfree,
		    (int)(c->info.nbufs - nfree));
	}
	free(freeb);
	print_comps(c);
	return c->st[DAQIRI_TX_SENT] == n && c->ncomp == n;
}

/* Wait for n completions in all (ms at most). */
static void
wait_comps(struct chan *c, uint64_t n, int ms)
{
	uint64_t end = mono_ms() + (uint64_t)ms;

	while (c->ncomp < n && mono_ms() < end && !c->closed_event)
		(void)reap(c, 200, NULL, INT32_MAX);
}

static void
wait_event(struct chan *c, int ms)
{
	uint64_t end = mono_ms() + (uint64_t)ms;

	while (!c->closed_event && mono_ms() < end) {
		struct daqiri_msg m;
		int fd;

		if (recv_one(c->ctl, &m, &fd, 200) == 1) {
			note_event(c, &m);
			daqiri_msg_free(&m);
		}
		if (fd >= 0)
			close(fd);
	}
}

int
main(int argc, char **argv)
{
	struct chan c;
	const char *mode;
	uint32_t nbufs = 0;
	bool ok = false;

	if (argc < 4)
		die("usage: tx-raw SOCK QUEUE MODE [args]");
	alarm(TR_LIFETIME_S);
	memset(&c, 0, sizeof(c));
	c.wake = -1;
	mode = argv[3];
	if (strcmp(mode, "send") == 0 && argc > 7)
		nbufs = (uint32_t)strtoul(argv[7], NULL, 0);
	else if (strcmp(mode, "send") != 0 && strcmp(mode, "open") != 0)
		nbufs = 8;
	ctl_open(&c, argv[1]);
	if (tx_open(&c, argv[2], nbufs) != DAQIRI_ST_OK)
		return 3;
	if (strcmp(mode, "open") == 0) {
		ok = true;
	} else if (strcmp(mode, "send") == 0) {
		if (argc < 6)
			die("send N LEN [vary] [NBUFS]");
		ok = do_send(&c, strtoull(argv[4], NULL, 0),
		    (uint32_t)strtoul(argv[5], NULL, 0),
		    argc > 6 && strcmp(argv[6], "vary") == 0,
		    argc > 6 && strcmp(argv[6], "nofill") == 0);
	} else if (strcmp(mode, "too-big") == 0) {
		/* one over buf_size: completed too_big, never sent */
		fill(&c, 0, 0, 8);
		daqiri_tx_sub_push(&c.r, 0, c.info.buf_size + 1);
		kick(&c);
		wait_comps(&c, 1, TR_DONE_MS);
		print_comps(&c);
		ok = c.ncomp == 1 && c.st[DAQIRI_TX_TOO_BIG] == 1;
	} else if (strcmp(mode, "bad-index") == 0) {
		/* a buffer out of the pool, then a good one: only the
		 * good one completes (the daemon takes them in order) */
		daqiri_tx_sub_push(&c.r, c.info.nbufs + 5, 8);
		daqiri_tx_sub_push(&c.r, UINT32_MAX, 8);
		fill(&c, 1, 1, 64);
		daqiri_tx_sub_push(&c.r, 1, 64);
		kick(&c);
		wait_comps(&c, 1, TR_DONE_MS);
		(void)reap(&c, 0, NULL, INT32_MAX);
		print_comps(&c);
		ok = c.ncomp == 1 && c.st[DAQIRI_TX_SENT] == 1;
	} else if (strcmp(mode, "resubmit") == 0) {
		/* buffer 0 twice in one store of sub_head: the second is
		 * in flight when the daemon checks it; then buffer 1 */
		uint32_t pos = c.r.sub_pos;

		fill(&c, 0, 0, 64);
		fill(&c, 1, 1, 64);
		c.r.sub[pos & c.r.mask] = (struct daqiri_tx_sub){ 0, 64 };
		c.r.sub[(pos + 1) & c.r.mask] = (struct daqiri_tx_sub){ 0, 64 };
		c.r.sub[(pos + 2) & c.r.mask] = (struct daqiri_tx_sub){ 1, 64 };
		c.r.sub_pos = pos + 3;
		atomic_store_explicit(&c.r.shm->sub_head, pos + 3,
		    memory_order_release);
		kick(&c);
		wait_comps(&c, 2, TR_DONE_MS);
		(void)reap(&c, 0, NULL, INT32_MAX);
		print_comps(&c);
		ok = c.ncomp == 2 && c.st[DAQIRI_TX_SENT] == 2;
	} else if (strcmp(mode, "garbage-head") == 0) {
		/* sub_head far ahead of anything the ring can hold: the
		 * daemon cuts the channel off and says so */
		atomic_store_explicit(&c.r.shm->sub_head,
		    c.r.sub_pos + c.r.depth * 7 + 3, memory_order_release);
		(void)daqiri_wake_signal(c.wake);
		wait_event(&c, TR_DONE_MS);
		printf("tx_closed: %s%s%s\n", c.closed_event ? "yes" : "no",
		    c.closed_event ? " why: " : "", c.closed_why);
		ok = c.closed_event;
	} else if (strcmp(mode, "after-close") == 0) {
		/* close, then go on submitting and kicking: nothing may
		 * come back, the channel's id is gone */
		struct daqiri_msg m;
		enum daqiri_status st, st1;
		char req[96];

		snprintf(req, sizeof(req), "{\"type\":\"tx_close\",\"tx\":%u}",
		    c.info.tx_id);
		st1 = request(&c, req, &m);
		daqiri_msg_free(&m);
		printf("tx_close: %s\n", daqiri_status_name(st1));
		for (int i = 0; i < 200; i++) {
			fill(&c, (uint32_t)i % c.info.nbufs, (uint64_t)i, 32);
			(void)daqiri_tx_sub_push(&c.r, (uint32_t)i % c.info.nbufs,
			    32);
			(void)daqiri_wake_signal(c.wake);
		}
		/* a status request round trip: the daemon took them all */
		st = request(&c, "{\"type\":\"status\"}", &m);
		daqiri_msg_free(&m);
		(void)reap(&c, 0, NULL, INT32_MAX);
		print_comps(&c);
		st = request(&c, req, &m);
		printf("second tx_close: %s (%s)\n", daqiri_status_name(st),
		    m.u.reply.message);
		ok = st1 == DAQIRI_ST_OK && c.ncomp == 0 &&
		    st == DAQIRI_ST_NO_SUCH_SUBSCRIPTION &&
		    strstr(m.u.reply.message, "no TX channel") != NULL;
		daqiri_msg_free(&m);
	} else if (strcmp(mode, "flood") == 0) {
		/* every buffer, again and again, never reading a
		 * completion: the rest are bad_buffer, nothing grows */
		uint64_t pushed = 0;

		for (int round = 0; round < 200; round++) {
			for (uint32_t b = 0; b < c.info.nbufs; b++) {
				fill(&c, b, b, 128);
				if (daqiri_tx_sub_push(&c.r, b, 128) == 0)
					pushed++;
			}
			(void)daqiri_wake_signal(c.wake);
			if (round % 20 == 0)
				usleep(1000);
		}
		/* now read. A buffer is sent at most twice: once whose
		 * completion sits unread in the ring, once more whose
		 * completion waits in the worker for room (check_tx
		 * test_completions_full); every later resubmission of it
		 * is bad_buffer. Every completion is a sent one. */
		wait_comps(&c, c.info.nbufs, TR_DONE_MS);
		usleep(100000);
		(void)reap(&c, 0, NULL, INT32_MAX);
		printf("pushed: %llu\n", (unsigned long long)pushed);
		print_comps(&c);
		ok = c.st[DAQIRI_TX_SENT] >= c.info.nbufs &&
		    c.st[DAQIRI_TX_SENT] <= 2 * (uint64_t)c.info.nbufs &&
		    c.ncomp == c.st[DAQIRI_TX_SENT] && c.ncomp <= pushed &&
		    !c.closed_event;
	} else
		die("unknown mode %s", mode);
	if (c.closed_event && strcmp(mode, "garbage-head") != 0)
		printf("unexpected tx_closed: %s\n", c.closed_why);
	printf("result: %s\n", ok ? "as expected" : "UNEXPECTED");
	return ok ? 0 : 1;
}
