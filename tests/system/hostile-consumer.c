/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hostile-consumer: a consumer that speaks the control protocol itself
 * (framing from proto/, nothing from libdaqiri-client's safe API) and
 * does with what it is given whatever a hostile program could. Each
 * attack prints "attack NAME: refused|ineffective|EFFECTIVE (why)" when
 * it can judge the outcome alone, or "info NAME: ..." and "ready NAME"
 * when tests/system/18-hostile.sh judges it from the daemon's behaviour.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"
#include "ring.h"

#define HC_REPLY_MS		5000	/* a reply must come within this */
#define HC_LIFETIME_S		120	/* no attacker outlives this (alarm) */
#define HC_CUTOFF_MS		10000	/* wait for the daemon to cut us off */
#define HC_MAX_FDS		4	/* fds of one subscription we keep */
#define HC_STRAY_FDS		200	/* fds sent in one message */
#define HC_NEST			20000	/* JSON nesting depth of one message */
#define HC_MAX_CONNS		4096	/* "connections N" upper bound */
#define HC_SUBS_TRIES		10000	/* subscribe requests of "limits" */
#define HC_SUBS_BUDGET_MS	30000	/* stop subscribing after this */
#define HC_BIG_CONNS		512	/* connections of "big-replies" */
#define HC_OMIT			(-0.5)	/* a subscribe field left out */
#define HC_MSG_BUF		(DAQIRI_MSG_SIZE_MAX + 1)
#define HC_BIG_MSG		70000	/* over DAQIRI_MSG_SIZE_MAX */

static volatile sig_atomic_t hc_stop;
static const char *hc_sock;
static char hc_buf[HC_MSG_BUF];

static void
hc_on_signal(int sig)
{
	(void)sig;
	hc_stop = 1;
}

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void
sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "hostile-consumer: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

static void __attribute__((format(printf, 1, 2)))
out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* Append to a bounded report string. */
static void __attribute__((format(printf, 3, 4)))
appendf(char *s, size_t cap, const char *fmt, ...)
{
	size_t n = strlen(s);
	va_list ap;

	if (n + 1 >= cap)
		return;
	va_start(ap, fmt);
	vsnprintf(s + n, cap - n, fmt, ap);
	va_end(ap);
}

/* ---- the protocol, spoken by hand ------------------------------------ */

static int
hc_connect_nb(bool nonblock)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", hc_sock);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC |
	    (nonblock ? SOCK_NONBLOCK : 0), 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

/* Send one message with nfds fds attached (any number, unlike
 * daqiri_send_msg: sending what the daemon did not ask for is the point). */
static int
hc_send(int sock, const char *buf, size_t len, const int *fds, int nfds)
{
	static char cbuf[CMSG_SPACE(sizeof(int) * 253)];
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds > 0) {
		struct cmsghdr *c;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	if (sendmsg(sock, &mh, MSG_NOSIGNAL) < 0)
		return -errno;
	return 0;
}

static int
hc_send_str(int sock, const char *s)
{
	return hc_send(sock, s, strlen(s), NULL, 0);
}

/*
 * Receive one message within ms: its JSON in *json (NULL when it is not
 * JSON) and its fd in *fd (or -1). Returns 1, 0 when the daemon closed
 * the connection, -ETIMEDOUT, or another negative errno.
 */
static int
hc_recv(int sock, cJSON **json, int *fd, int ms)
{
	struct pollfd p = { .fd = sock, .events = POLLIN };
	ssize_t n;
	int r;

	*json = NULL;
	if (fd != NULL)
		*fd = -1;
	r = poll(&p, 1, ms);
	if (r < 0)
		return -errno;
	if (r == 0)
		return -ETIMEDOUT;
	n = daqiri_recv_msg(sock, hc_buf, sizeof(hc_buf), fd);
	if (n == 0)
		return 0;
	if (n < 0)
		return (int)n;
	*json = cJSON_ParseWithLength(hc_buf, (size_t)n);
	return 1;
}

static const char *
jstr(const cJSON *o, const char *name)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsString(x) ? x->valuestring : "";
}

static double
jnum(const cJSON *o, const char *name)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsNumber(x) ? x->valuedouble : -1;
}

/* The human message of a failed reply. */
static const char *
jerr(const cJSON *o)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");

	return e != NULL ? jstr(e, "message") : "";
}

/*
 * Send a request and wait for its reply, skipping events. Returns 1 with
 * *reply (cJSON_Delete it), 0 when the connection closed, -ETIMEDOUT,
 * or a negative errno. Where reason is not NULL it gets a short
 * "status: message" of what the daemon said.
 */
static int
hc_request(int sock, const char *req, cJSON **reply, char *reason,
    size_t cap)
{
	uint64_t t0 = mono_ms();
	int r, fd;

	*reply = NULL;
	if (reason != NULL)
		snprintf(reason, cap, "?");
	if ((r = hc_send_str(sock, req)) < 0) {
		if (reason != NULL)
			snprintf(reason, cap, "send: %s", strerror(-r));
		return r == -EPIPE || r == -ECONNRESET ? 0 : r;
	}
	for (;;) {
		uint64_t el = mono_ms() - t0;

		if (el >= HC_REPLY_MS) {
			r = -ETIMEDOUT;
			break;
		}
		r = hc_recv(sock, reply, &fd, (int)(HC_REPLY_MS - el));
		if (fd >= 0)
			close(fd);
		if (r <= 0)
			break;
		if (*reply != NULL &&
		    strcmp(jstr(*reply, "type"), "reply") == 0) {
			if (reason != NULL)
				snprintf(reason, cap, "%s%s%s",
				    jstr(*reply, "status"),
				    jerr(*reply)[0] ? ": " : "", jerr(*reply));
			return 1;
		}
		cJSON_Delete(*reply);
		*reply = NULL;
	}
	if (reason != NULL)
		snprintf(reason, cap, "%s", r == 0 ? "connection closed" :
		    r == -ETIMEDOUT ? "no reply" : strerror(-r));
	return r;
}

static bool
reply_ok(const cJSON *reply)
{
	return reply != NULL && strcmp(jstr(reply, "status"), "ok") == 0;
}

static int
hc_hello(int sock)
{
	cJSON *rep;
	char req[128];
	int r;

	snprintf(req, sizeof(req), "{\"type\":\"hello\",\"version\":%u,"
	    "\"client\":\"hostile-consumer\"}", DAQIRI_PROTO_VERSION);
	r = hc_request(sock, req, &rep, NULL, 0);

	if (r == 1 && !reply_ok(rep))
		r = -EPROTO;
	cJSON_Delete(rep);
	return r == 1 ? 0 : r < 0 ? r : -ENOTCONN;
}

static int
hc_open(void)
{
	int s = hc_connect_nb(false), r;

	if (s < 0)
		die("connect %s: %s", hc_sock, strerror(-s));
	if ((r = hc_hello(s)) < 0)
		die("hello: %s", strerror(-r));
	return s;
}

/* One subscription as the wire gave it. */
struct hc_sub {
	uint32_t id, nbufs, max_held, depth, bitmap_bytes;
	uint64_t map_bytes, ring_bytes;
	int nfds;
	char kinds[HC_MAX_FDS][16];
	int fds[HC_MAX_FDS];
};

static int
hc_sub_fd(const struct hc_sub *s, const char *kind)
{
	for (int i = 0; i < s->nfds; i++)
		if (strcmp(s->kinds[i], kind) == 0)
			return s->fds[i];
	return -1;
}

static void
hc_sub_close(struct hc_sub *s)
{
	for (int i = 0; i < s->nfds; i++)
		if (s->fds[i] >= 0)
			close(s->fds[i]);
	s->nfds = 0;
}

/*
 * Subscribe with the given fields (depth, max_held as JSON numbers,
 * HC_OMIT: left out). Returns 1 with *s filled and its fds received, 0
 * with reason set when the daemon refused, or -1 when the connection
 * broke (reason says how).
 */
static int
hc_subscribe(int sock, const char *stream, double depth, double max_held,
    struct hc_sub *s, char *reason, size_t cap)
{
	char req[512];
	const cJSON *fds, *k;
	cJSON *rep, *m;
	int r, n = 0;

	memset(s, 0, sizeof(*s));
	snprintf(req, sizeof(req), "{\"type\":\"subscribe\",\"stream\":\"%s\"",
	    stream);
	if (depth != HC_OMIT)
		appendf(req, sizeof(req), ",\"depth\":%.0f", depth);
	if (max_held != HC_OMIT)
		appendf(req, sizeof(req), ",\"max_held\":%.0f", max_held);
	appendf(req, sizeof(req), "}");
	r = hc_request(sock, req, &rep, reason, cap);
	if (r != 1)
		return -1;
	if (!reply_ok(rep)) {
		cJSON_Delete(rep);
		return 0;
	}
	s->id = (uint32_t)jnum(rep, "sub");
	s->nbufs = (uint32_t)jnum(rep, "nbufs");
	s->max_held = (uint32_t)jnum(rep, "max_held");
	s->depth = (uint32_t)jnum(rep, "ring_depth");
	s->bitmap_bytes = (uint32_t)jnum(rep, "bitmap_bytes");
	s->map_bytes = (uint64_t)jnum(rep, "map_bytes");
	s->ring_bytes = (uint64_t)jnum(rep, "ring_bytes");
	fds = cJSON_GetObjectItemCaseSensitive(rep, "fds");
	cJSON_ArrayForEach(k, fds) {
		if (n < HC_MAX_FDS && cJSON_IsString(k))
			snprintf(s->kinds[n++], sizeof(s->kinds[0]), "%s",
			    k->valuestring);
	}
	cJSON_Delete(rep);
	for (int i = 0; i < n; i++) {
		int fd;

		do {
			r = hc_recv(sock, &m, &fd, HC_REPLY_MS);
			if (r == 1 && m != NULL &&
			    strcmp(jstr(m, "type"), "sub_fd") == 0)
				break;
			cJSON_Delete(m);
			if (fd >= 0)
				close(fd);
		} while (r == 1);
		cJSON_Delete(m);
		if (r != 1) {
			snprintf(reason, cap, "fd series broken");
			hc_sub_close(s);
			return -1;
		}
		s->fds[i] = fd;
		s->nfds = i + 1;
	}
	snprintf(reason, cap, "ok");
	return 1;
}

static void
hc_unsubscribe(int sock, uint32_t id)
{
	char req[96];
	cJSON *rep;

	snprintf(req, sizeof(req), "{\"type\":\"unsubscribe\",\"sub\":%u}", id);
	hc_request(sock, req, &rep, NULL, 0);
	cJSON_Delete(rep);
}

/* Wait for a sub_closed event or the connection closing; returns the
 * daemon's reason in why, false when neither came within ms. */
static bool
hc_wait_cutoff(int sock, int ms, char *why, size_t cap)
{
	uint64_t t0 = mono_ms();

	while (mono_ms() - t0 < (uint64_t)ms) {
		cJSON *m;
		int fd, r = hc_recv(sock, &m, &fd, 100);

		if (fd >= 0)
			close(fd);
		if (r == 0 || (r < 0 && r != -ETIMEDOUT && r != -EINTR)) {
			snprintf(why, cap, "connection closed");
			return true;
		}
		if (r == 1 && m != NULL &&
		    strcmp(jstr(m, "type"), "event") == 0) {
			snprintf(why, cap, "%s: %s", jstr(m, "status"),
			    jstr(m, "message"));
			cJSON_Delete(m);
			return true;
		}
		cJSON_Delete(m);
	}
	return false;
}

static void
wait_for_stop(void)
{
	while (!hc_stop)
		pause();
}

/* ---- attacks on memory ----------------------------------------------- */

/*
 * Try every way to write or resize the memory behind fd (len bytes
 * mapped read-only is the contract): a writable mapping of the fd,
 * mprotect of a read-only one, write(2), and the same again on the fd
 * reopened O_RDWR through /proc/self/fd; ftruncate grow and shrink.
 * Every write is undone at once (traffic is stopped while this runs), so
 * the daemon's tensors stay exact; what counts is that it was possible.
 */
static void
attack_write_fd(const char *name, int fd, size_t len, bool resize_only)
{
	char rep[1024] = "", eff[512] = "";
	struct stat st;
	uint8_t *ro = MAP_FAILED, orig, flip;
	void *p;
	int rw, seals;

	if (fd < 0 || fstat(fd, &st) < 0) {
		out("attack %s: ineffective (no such fd was given)", name);
		return;
	}
	seals = fcntl(fd, F_GET_SEALS);
	appendf(rep, sizeof(rep), "seals 0x%x", seals < 0 ? 0 : seals);
	if (!resize_only) {
		ro = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
		if (ro == MAP_FAILED) {
			out("attack %s: ineffective (cannot even map it "
			    "read-only: %s)", name, strerror(errno));
			return;
		}
		orig = ro[0];
		flip = (uint8_t)~orig;
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p != MAP_FAILED) {
			appendf(eff, sizeof(eff), "mmap PROT_WRITE; ");
			munmap(p, len);
		} else
			appendf(rep, sizeof(rep), "; mmap PROT_WRITE: %s",
			    strerror(errno));
		p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
		if (p != MAP_FAILED) {
			if (mprotect(p, len, PROT_READ | PROT_WRITE) == 0)
				appendf(eff, sizeof(eff), "mprotect PROT_WRITE; ");
			else
				appendf(rep, sizeof(rep), "; mprotect: %s",
				    strerror(errno));
			munmap(p, len);
		}
		if (pwrite(fd, &orig, 1, 0) == 1)
			appendf(eff, sizeof(eff), "write(2); ");
		else
			appendf(rep, sizeof(rep), "; write: %s", strerror(errno));
	}
	snprintf(hc_buf, sizeof(hc_buf), "/proc/self/fd/%d", fd);
	rw = open(hc_buf, O_RDWR | O_CLOEXEC);
	if (rw < 0) {
		appendf(rep, sizeof(rep), "; reopen O_RDWR: %s", strerror(errno));
		rw = fd;	/* resizing is still worth a try */
	} else
		appendf(rep, sizeof(rep), "; reopen O_RDWR: ok");
	if (!resize_only && rw != fd) {
		if (pwrite(rw, &flip, 1, 0) == 1) {
			appendf(eff, sizeof(eff), "write(2) after reopen%s; ",
			    ro[0] == flip ? " (seen by readers)" : "");
			(void)pwrite(rw, &orig, 1, 0);
		} else
			appendf(rep, sizeof(rep), "; its write: %s",
			    strerror(errno));
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0);
		if (p != MAP_FAILED) {
			((volatile uint8_t *)p)[0] = flip;
			appendf(eff, sizeof(eff), "writable mmap after reopen%s; ",
			    ro[0] == flip ? " (seen by readers)" : "");
			((volatile uint8_t *)p)[0] = orig;
			munmap(p, len);
		} else
			appendf(rep, sizeof(rep), "; its mmap PROT_WRITE: %s",
			    strerror(errno));
	}
	if (ftruncate(rw, st.st_size + 4096) == 0) {
		appendf(eff, sizeof(eff), "grew it; ");
		(void)ftruncate(rw, st.st_size);
	} else
		appendf(rep, sizeof(rep), "; grow: %s", strerror(errno));
	/* A shrink would make the daemon's next store into the lost pages
	 * a SIGBUS: put the size back before it can write there. */
	if (ftruncate(rw, st.st_size / 2) == 0) {
		appendf(eff, sizeof(eff), "shrank it from %lld to %lld bytes "
		    "(the daemon's next store there is a SIGBUS); ",
		    (long long)st.st_size, (long long)st.st_size / 2);
		(void)ftruncate(rw, st.st_size);
	} else
		appendf(rep, sizeof(rep), "; shrink: %s", strerror(errno));
	if (rw != fd)
		close(rw);
	if (ro != MAP_FAILED)
		munmap(ro, len);
	if (eff[0] != '\0') {
		eff[strlen(eff) - 2] = '\0';
		out("attack %s: EFFECTIVE (%s)", name, eff);
	} else
		out("attack %s: refused (%s)", name, rep);
}

static int
run_memory(const char *stream)
{
	char why[256];
	struct hc_sub s;
	int sock = hc_open();

	if (hc_subscribe(sock, stream, HC_OMIT, 1, &s, why, sizeof(why)) != 1)
		die("subscribe %s: %s", stream, why);
	out("info memory: fds %s %s %s %s", s.kinds[0], s.kinds[1],
	    s.kinds[2], s.kinds[3]);
	attack_write_fd("write-tensor", hc_sub_fd(&s, "tensor"), s.map_bytes,
	    false);
	attack_write_fd("write-bitmap", hc_sub_fd(&s, "bitmap"),
	    (size_t)s.nbufs * s.bitmap_bytes, false);
	attack_write_fd("resize-ring", hc_sub_fd(&s, "ring"), s.ring_bytes,
	    true);
	hc_sub_close(&s);
	close(sock);
	return 0;
}

/*
 * Zero the presence bitmap of every buffer, over and over, while the
 * stream runs: where the sidecar is the daemon's duplicate detection
 * state, duplicates are placed and counts go wrong. The subscription is
 * ended first: what the fds reach outlives it.
 */
static int
run_bitmap_clear(const char *stream, unsigned seconds)
{
	char why[256];
	struct hc_sub s;
	size_t len;
	uint64_t t0, passes = 0;
	void *p = MAP_FAILED;
	int sock = hc_open(), fd, rw;

	if (hc_subscribe(sock, stream, HC_OMIT, 1, &s, why, sizeof(why)) != 1)
		die("subscribe %s: %s", stream, why);
	hc_unsubscribe(sock, s.id);
	len = (size_t)s.nbufs * s.bitmap_bytes;
	fd = hc_sub_fd(&s, "bitmap");
	snprintf(hc_buf, sizeof(hc_buf), "/proc/self/fd/%d", fd);
	if ((rw = open(hc_buf, O_RDWR | O_CLOEXEC)) < 0) {
		out("attack bitmap-clear: refused (reopen O_RDWR: %s)",
		    strerror(errno));
		return 0;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0);
	if (p == MAP_FAILED) {
		out("attack bitmap-clear: refused (writable mapping of the "
		    "reopened sidecar: %s)", strerror(errno));
		return 0;
	}
	out("info bitmap-clear: zeroing %zu bitmap bytes for %u s", len,
	    seconds);
	out("ready bitmap-clear");
	t0 = mono_ms();
	while (!hc_stop && mono_ms() - t0 < seconds * 1000ull) {
		memset(p, 0, len);
		passes++;
		if (passes % 64 == 0)
			sleep_ms(1);
	}
	out("info bitmap-clear: %" PRIu64 " passes", passes);
	return 0;
}

/* ---- attacks on the ring ---------------------------------------------- */

/*
 * Overwrite everything in the ring the daemon owns (header, comp_head,
 * rel_tail, the completion entries), again and again until stopped,
 * without ever releasing: the daemon must keep its geometry and
 * positions privately. And, on a second subscription, a release ring
 * claiming exactly depth entries of an impossible index (the boundary
 * 05-garbage-release.sh does not write).
 */
static int
run_ring(const char *stream)
{
	char why[256];
	struct daqiri_ring_shm *shm;
	struct hc_sub s, f;
	uint64_t t0;
	int sock = hc_open();
	int sock2 = hc_open();
	uint32_t *rel, tail, comp_off;
	size_t comp_len;

	if (hc_subscribe(sock2, stream, HC_OMIT, 1, &f, why, sizeof(why)) != 1)
		die("subscribe %s: %s", stream, why);
	shm = mmap(NULL, f.ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
	    hc_sub_fd(&f, "ring"), 0);
	if (shm == MAP_FAILED)
		die("mmap ring: %s", strerror(errno));
	rel = (uint32_t *)(void *)((uint8_t *)shm + shm->rel_off);
	tail = atomic_load(&shm->rel_tail);
	for (uint32_t i = 0; i < f.depth; i++)
		rel[i] = UINT32_MAX;
	atomic_store(&shm->rel_head, tail + f.depth);
	if (hc_wait_cutoff(sock2, HC_CUTOFF_MS, why, sizeof(why)))
		out("attack release-flood: refused (daemon ended the "
		    "subscription: %s)", why);
	else
		out("attack release-flood: EFFECTIVE (%u releases of index "
		    "%u not refused within %d ms)", f.depth, UINT32_MAX,
		    HC_CUTOFF_MS);
	close(sock2);
	hc_sub_close(&f);

	if (hc_subscribe(sock, stream, HC_OMIT, 1, &s, why, sizeof(why)) != 1)
		die("subscribe %s: %s", stream, why);
	shm = mmap(NULL, s.ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
	    hc_sub_fd(&s, "ring"), 0);
	if (shm == MAP_FAILED)
		die("mmap ring: %s", strerror(errno));
	/* Where the entries are, read once, before the header is garbage. */
	comp_off = shm->comp_off;
	if (comp_off >= s.ring_bytes)
		die("ring: comp_off %u past %llu bytes", comp_off,
		    (unsigned long long)s.ring_bytes);
	comp_len = (size_t)s.depth * sizeof(struct daqiri_desc);
	if (comp_len > s.ring_bytes - comp_off)
		comp_len = s.ring_bytes - comp_off;
	out("info ring-scribble: header, comp_head, rel_tail and completion "
	    "entries overwritten until stopped");
	out("ready ring-scribble");
	t0 = mono_ms();
	while (!hc_stop && mono_ms() - t0 < HC_LIFETIME_S * 1000ull) {
		shm->magic = 0;
		shm->depth = 0x80000000u;
		shm->nbufs = UINT32_MAX;
		shm->comp_off = UINT32_MAX - 7;
		shm->rel_off = UINT32_MAX - 3;
		shm->size = 1;
		atomic_store(&shm->comp_head, 0x7fffffffu);
		atomic_store(&shm->rel_tail, 0x7fffffffu);
		memset((uint8_t *)shm + comp_off, 0xff, comp_len);
		sleep_ms(5);
	}
	return 0;
}

/* ---- attacks on shares --------------------------------------------------- */

/*
 * Take buffers and never give them back: nsubs subscriptions asking for
 * max_held each, on one connection, then nsubs more on a second one.
 * Descriptors are never popped nor released. Stopped by SIGTERM; a
 * SIGSTOP/SIGCONT in between (the hold timeout test) is fine.
 */
static int
run_hold(const char *stream, unsigned max_held, unsigned nsubs)
{
	char why[256] = "", first_no[256] = "";
	unsigned ok = 0, sum = 0, refused = 0;
	int socks[2] = { hc_open(), hc_open() };
	struct hc_sub s;

	for (int c = 0; c < 2; c++)
		for (unsigned i = 0; i < nsubs; i++) {
			int r = hc_subscribe(socks[c], stream, HC_OMIT, max_held,
			    &s, why, sizeof(why));

			if (r == 1) {
				ok++;
				sum += s.max_held;
				hc_sub_close(&s);
			} else {
				if (refused++ == 0)
					snprintf(first_no, sizeof(first_no),
					    "%s", why);
				if (r < 0)
					break;
			}
		}
	if (ok == 0)
		out("attack hold: refused (%u subscriptions asking max_held "
		    "%u: %s)", 2 * nsubs, max_held, first_no);
	out("info hold: %u of %u subscriptions asking max_held %u accepted, "
	    "holding up to %u buffers%s%s", ok, 2 * nsubs, max_held, sum,
	    refused ? "; refused: " : "", first_no);
	out("ready hold");
	wait_for_stop();
	for (int c = 0; c < 2; c++) {
		if (hc_wait_cutoff(socks[c], 200, why, sizeof(why)))
			out("info hold: the daemon said: %s", why);
	}
	return 0;
}

/*
 * The limits of one subscribe: depths and max_held outside the protocol's
 * ranges (each must be refused), the largest legal ones (each must come
 * back within nbufs), and HC_SUBS_TRIES subscriptions on one connection
 * (a per-connection cap must stop them; cap is the expected one).
 */
static int
run_limits(const char *stream, unsigned cap)
{
	static const double bad_depth[] = { 3, 131072, 2147483648.0,
	    4294967296.0, -1e9 };
	static const double bad_held[] = { 65537, 4294967295.0,
	    4294967296.0 };
	char why[256], rep[1024] = "", eff[1024] = "", first_no[256] = "";
	unsigned ok = 0, tries = 0;
	struct hc_sub s;
	uint64_t t0;
	int sock = hc_open(), r;
	cJSON *reply;

	for (size_t i = 0; i < sizeof(bad_depth) / sizeof(bad_depth[0]); i++) {
		r = hc_subscribe(sock, stream, bad_depth[i], HC_OMIT, &s, why,
		    sizeof(why));
		if (r == 1) {
			appendf(eff, sizeof(eff), "depth %.0f accepted; ",
			    bad_depth[i]);
			hc_unsubscribe(sock, s.id);
			hc_sub_close(&s);
		} else if (r < 0)
			die("subscribe: %s", why);
		else if (i == 0)
			appendf(rep, sizeof(rep), "depth %.0f: %s", bad_depth[i],
			    why);
	}
	for (size_t i = 0; i < sizeof(bad_held) / sizeof(bad_held[0]); i++) {
		r = hc_subscribe(sock, stream, HC_OMIT, bad_held[i], &s, why,
		    sizeof(why));
		if (r == 1) {
			appendf(eff, sizeof(eff), "max_held %.0f accepted; ",
			    bad_held[i]);
			hc_unsubscribe(sock, s.id);
			hc_sub_close(&s);
		} else if (r < 0)
			die("subscribe: %s", why);
		else if (i == 0)
			appendf(rep, sizeof(rep), "; max_held %.0f: %s",
			    bad_held[i], why);
	}
	/* The largest legal values: the answer must stay within the stream. */
	r = hc_subscribe(sock, stream, 65536, 65536, &s, why, sizeof(why));
	if (r == 1) {
		if (s.max_held > s.nbufs || s.depth > 65536 ||
		    s.depth < s.nbufs)
			appendf(eff, sizeof(eff), "depth 65536 max_held 65536 gave "
			    "depth %u max_held %u of %u buffers; ", s.depth,
			    s.max_held, s.nbufs);
		else
			appendf(rep, sizeof(rep), "; depth 65536 max_held 65536: "
			    "ok, depth %u, max_held %u of %u buffers", s.depth,
			    s.max_held, s.nbufs);
		hc_unsubscribe(sock, s.id);
		hc_sub_close(&s);
	} else if (r == 0)
		appendf(rep, sizeof(rep), "; depth 65536 max_held 65536: %s", why);
	else
		die("subscribe: %s", why);
	if (eff[0] != '\0') {
		eff[strlen(eff) - 2] = '\0';
		out("attack subscribe-ranges: EFFECTIVE (%s)", eff);
	} else
		out("attack subscribe-ranges: refused (%s)", rep);

	t0 = mono_ms();
	for (tries = 0; tries < HC_SUBS_TRIES; tries++) {
		if (mono_ms() - t0 > HC_SUBS_BUDGET_MS)
			break;
		r = hc_subscribe(sock, stream, HC_OMIT, 1, &s, why, sizeof(why));
		if (r == 1) {
			ok++;
			hc_sub_close(&s);
		} else if (first_no[0] == '\0')
			snprintf(first_no, sizeof(first_no), "%s", why);
		if (r < 0)
			break;
	}
	/* The connection must still answer after all that. */
	r = hc_request(sock, "{\"type\":\"status\"}", &reply, why,
	    sizeof(why));
	cJSON_Delete(reply);
	if (ok > cap)
		out("attack subscribe-10000: EFFECTIVE (%u of %u subscribe "
		    "requests accepted on one connection in %llu ms, cap "
		    "expected %u%s%s)", ok, tries,
		    (unsigned long long)(mono_ms() - t0), cap,
		    first_no[0] ? "; then: " : "", first_no);
	else if (r != 1)
		out("attack subscribe-10000: EFFECTIVE (the connection broke "
		    "after %u requests: %s)", tries, why);
	else if (ok < cap || strstr(first_no,
	    "max_subscriptions_per_connection") == NULL)
		out("attack subscribe-10000: EFFECTIVE (the test proves "
		    "nothing: %u accepted, cap %u, then: %s)", ok, cap,
		    first_no);
	else
		out("attack subscribe-10000: refused (%u of %u accepted; "
		    "then: %s)", ok, tries, first_no);
	close(sock);
	return 0;
}

/*
 * As many subscriptions as the daemon allows, up to total, to every
 * stream it lists, over up to HC_BIG_CONNS connections (a new one when
 * a connection is refused): the list replies must still come whole.
 */
static int
run_big(unsigned total)
{
	struct rlimit rl = { HC_BIG_CONNS + 64, HC_BIG_CONNS + 64 };
	char why[256] = "", first_no[512] = "", names[1024] = "";
	int sock, cur = -1, nsocks = 1, nstreams = 0;
	unsigned ok = 0, on_cur = 0;
	const cJSON *st, *list;
	struct hc_sub s;
	cJSON *reply;

	setrlimit(RLIMIT_NOFILE, &rl);
	sock = hc_open();
	if (hc_request(sock, "{\"type\":\"streams\"}", &reply, why,
	    sizeof(why)) != 1 || !reply_ok(reply))
		die("streams: %s", why);
	list = cJSON_GetObjectItemCaseSensitive(reply, "streams");
	cur = sock;
	cJSON_ArrayForEach(st, list) {
		const char *name = jstr(st, "name");

		nstreams++;
		appendf(names, sizeof(names), "%s%s", nstreams > 1 ? ", " : "",
		    name);
		while (ok < total && nsocks <= HC_BIG_CONNS) {
			int r;

			if (cur < 0) {
				cur = hc_connect_nb(false);
				if (cur < 0 || hc_hello(cur) < 0) {
					appendf(first_no, sizeof(first_no), "; "
					    "connection %d refused", nsocks + 1);
					if (cur >= 0)
						close(cur);
					cur = -1;
					goto done;
				}
				nsocks++;	/* kept open: its subs live on */
				on_cur = 0;
			}
			r = hc_subscribe(cur, name, HC_OMIT, 1, &s, why,
			    sizeof(why));
			if (r == 1) {
				hc_sub_close(&s);
				ok++;
				on_cur++;
				continue;
			}
			if (r < 0)
				cur = -1;
			else if (on_cur > 0)
				cur = -1;	/* a fresh connection may do */
			else {
				/* refused even on a fresh connection */
				if (first_no[0] == '\0')
					appendf(first_no, sizeof(first_no), "; "
					    "then %s: %s", name, why);
				break;
			}
		}
	}
done:
	out("info big-replies: %u subscriptions to %d streams (%s) over %d "
	    "connections%s", ok, nstreams, names, nsocks, first_no);
	out("subs=%u", ok);
	out("ready big-replies");
	cJSON_Delete(reply);
	wait_for_stop();
	return 0;
}

/* ---- attacks on connections --------------------------------------------- */

/*
 * Keep n connections open that never say hello, reconnecting each one
 * the daemon closes, until SIGTERM. Run as an unprivileged uid.
 */
static int
run_connections(unsigned n)
{
	static struct pollfd p[HC_MAX_CONNS];
	unsigned open_now = 0, closed = 0, errors = 0;
	uint64_t t0 = mono_ms();
	int first_err = 0;

	if (n > HC_MAX_CONNS)
		n = HC_MAX_CONNS;
	for (unsigned i = 0; i < n; i++)
		p[i].fd = -1;
	/* Open them all (bounded: 10 s), then tell the test. */
	while (open_now < n && mono_ms() - t0 < 10000) {
		for (unsigned i = 0; i < n; i++) {
			if (p[i].fd >= 0)
				continue;
			p[i].fd = hc_connect_nb(true);
			p[i].events = POLLIN;
			if (p[i].fd < 0) {
				if (first_err == 0)
					first_err = -p[i].fd;
				errors++;
				p[i].fd = -1;
			} else
				open_now++;
		}
		if (open_now < n)
			sleep_ms(5);
	}
	out("info connections: %u of %u connections open as uid %u "
	    "(%u connect errors%s%s)", open_now, n, (unsigned)getuid(),
	    errors, first_err ? ", first: " : "",
	    first_err ? strerror(first_err) : "");
	out("ready connections");
	while (!hc_stop && mono_ms() - t0 < HC_LIFETIME_S * 1000ull) {
		if (poll(p, n, 10) < 0 && errno != EINTR)
			break;
		for (unsigned i = 0; i < n; i++) {
			if (p[i].fd >= 0 && p[i].revents != 0) {
				/* The daemon said something or hung up:
				 * whatever it was, come back, still silent. */
				close(p[i].fd);
				closed++;
				p[i].fd = -1;
			}
			if (p[i].fd < 0) {
				/* a full backlog (EAGAIN): next round */
				p[i].fd = hc_connect_nb(true);
				if (p[i].fd < 0)
					p[i].fd = -1;
				p[i].revents = 0;
			}
		}
	}
	out("info connections: the daemon closed %u connections; each was "
	    "reopened at once", closed);
	return 0;
}

/* ---- attacks with the messages themselves --------------------------------- */

/* Whether the read end of this pipe is closed everywhere (write fails
 * EPIPE), polled for up to ms. */
static bool
pipe_reader_gone(int wfd, int ms)
{
	uint64_t t0 = mono_ms();
	char c = 0;

	do {
		if (write(wfd, &c, 1) < 0 && errno == EPIPE)
			return true;
		sleep_ms(10);
	} while (mono_ms() - t0 < (uint64_t)ms);
	return false;
}

/*
 * fds the daemon never asked for: one with hello, HC_STRAY_FDS with a
 * status request, one with a subscribe. Each message must be refused
 * and every fd closed by the daemon (the pipes' write ends then see
 * EPIPE). ctl-garbage (06-control-garbage.sh) sends single fds with
 * random messages; this sends many in one message.
 */
static int
run_stray_fds(const char *stream)
{
	static int rd[HC_STRAY_FDS], wr[HC_STRAY_FDS];
	char rep[1024] = "", req[256];
	unsigned kept = 0, accepted = 0, sent = 0;
	struct rlimit rl = { 4096, 4096 };
	int sock, r;
	cJSON *reply;

	setrlimit(RLIMIT_NOFILE, &rl);
	for (int i = 0; i < HC_STRAY_FDS; i++) {
		int pp[2];

		if (pipe2(pp, O_CLOEXEC | O_NONBLOCK) < 0)
			die("pipe: %s", strerror(errno));
		rd[i] = pp[0];
		wr[i] = pp[1];
	}
	struct {
		const char *what;
		int first, n;
	} steps[] = {
		{ "hello", 0, 1 },
		{ "status", 1, HC_STRAY_FDS - 2 },
		{ "subscribe", HC_STRAY_FDS - 1, 1 },
	};
	if ((sock = hc_connect_nb(false)) < 0)
		die("connect: %s", strerror(-sock));
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		if (strcmp(steps[k].what, "hello") == 0)
			snprintf(req, sizeof(req), "{\"type\":\"hello\","
			    "\"version\":%u}", DAQIRI_PROTO_VERSION);
		else if (strcmp(steps[k].what, "status") == 0)
			snprintf(req, sizeof(req), "{\"type\":\"status\"}");
		else
			snprintf(req, sizeof(req), "{\"type\":\"subscribe\","
			    "\"stream\":\"%s\"}", stream);
		r = hc_send(sock, req, strlen(req), rd + steps[k].first,
		    steps[k].n);
		if (r < 0) {
			appendf(rep, sizeof(rep), "%s%s with %d fds: send %s",
			    k ? "; " : "", steps[k].what, steps[k].n,
			    strerror(-r));
			continue;
		}
		sent += (unsigned)steps[k].n;
		for (int i = 0; i < steps[k].n; i++) {
			close(rd[steps[k].first + i]);
			rd[steps[k].first + i] = -1;
		}
		for (;;) {
			int fd;

			r = hc_recv(sock, &reply, &fd, HC_REPLY_MS);
			if (fd >= 0)
				close(fd);
			if (r != 1 || (reply != NULL &&
			    strcmp(jstr(reply, "type"), "reply") == 0))
				break;
			cJSON_Delete(reply);
		}
		if (r == 1) {
			appendf(rep, sizeof(rep), "%s%s with %d fds: %s%s%s",
			    k ? "; " : "", steps[k].what, steps[k].n,
			    jstr(reply, "status"), jerr(reply)[0] ? " " : "",
			    jerr(reply));
			if (reply_ok(reply))
				accepted++;
			if (strcmp(steps[k].what, "hello") == 0 &&
			    !reply_ok(reply))
				hc_hello(sock);	/* the real hello */
		} else {
			appendf(rep, sizeof(rep), "%s%s with %d fds: %s",
			    k ? "; " : "", steps[k].what, steps[k].n,
			    r == 0 ? "connection closed" : "no reply");
			close(sock);
			if ((sock = hc_connect_nb(false)) < 0 ||
			    hc_hello(sock) < 0)
				die("reconnect after stray fds failed");
		}
		cJSON_Delete(reply);
		/* The first fd gets time for the daemon to get to it; the
		 * rest went with the same message. */
		for (int i = 0; i < steps[k].n; i++)
			if (!pipe_reader_gone(wr[steps[k].first + i],
			    i == 0 ? 2000 : 50))
				kept++;
	}
	close(sock);
	if (kept > 0)
		out("attack stray-fds: EFFECTIVE (the daemon kept %u of the %u "
		    "fds it was sent; %s)", kept, sent, rep);
	else
		out("attack stray-fds: refused (%s; all %u fds closed by the "
		    "daemon%s)", rep, sent, accepted ? ", though some requests "
		    "were answered ok" : "");
	return 0;
}

/* Garbage after hello (06-control-garbage.sh sends 1000 random
 * messages; these are the big and deep ones it does not). Each must be
 * answered (any status: a raw NUL between tokens is JSON whitespace to
 * cJSON, harmless) or its connection closed; a message left without an
 * answer, or no answer to status afterwards, is a stuck daemon. */
static int
run_garbage(void)
{
	static char big[HC_BIG_MSG + 64];
	char rep[2048] = "", why[256];
	unsigned unanswered = 0, sent = 0;
	int sock = hc_open(), r;
	cJSON *reply;
	struct {
		const char *what;
		int kind;
	} steps[] = {
		{ "nested 20000 deep", 0 }, { "70 KiB", 1 }, { "empty", 2 },
		{ "5000 fields", 3 }, { "second hello", 4 },
		{ "daemon-only type", 5 }, { "id 2^32", 6 },
		{ "unsubscribe never given", 7 }, { "NUL inside", 8 },
	};

	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		size_t n = 0;

		switch (steps[k].kind) {
		case 0:
			n = (size_t)snprintf(big, sizeof(big),
			    "{\"type\":\"status\",\"x\":");
			for (int i = 0; i < HC_NEST; i++)
				big[n++] = '[';
			for (int i = 0; i < HC_NEST; i++)
				big[n++] = ']';
			big[n++] = '}';
			break;
		case 1:
			n = (size_t)snprintf(big, sizeof(big),
			    "{\"type\":\"status\",\"x\":\"");
			memset(big + n, 'a', HC_BIG_MSG - n);
			n = HC_BIG_MSG;
			memcpy(big + n, "\"}", 2);
			n += 2;
			break;
		case 2:
			n = 0;
			break;
		case 3:
			n = (size_t)snprintf(big, sizeof(big),
			    "{\"type\":\"status\"");
			for (int i = 0; i < 5000; i++)
				n += (size_t)snprintf(big + n, sizeof(big) - n,
				    ",\"f%d\":%d", i, i);
			big[n++] = '}';
			break;
		case 4:
			n = (size_t)snprintf(big, sizeof(big),
			    "{\"type\":\"hello\",\"version\":%u}",
			    DAQIRI_PROTO_VERSION);
			break;
		case 5:
			n = (size_t)snprintf(big, sizeof(big),
			    "{\"type\":\"sub_fd\",\"sub\":1,\"index\":0,"
			    "\"count\":4,\"kind\":\"ring\"}");
			break;
		case 6:
			n = (size_t)snprintf(big, sizeof(big),
			    "{\"type\":\"status\",\"id\":4294967296}");
			break;
		case 7:
			n = (size_t)snprintf(big, sizeof(big),
			    "{\"type\":\"unsubscribe\",\"sub\":4294967295}");
			break;
		case 8:
			n = (size_t)snprintf(big, sizeof(big),
			    "{\"type\":\"status\"}");
			big[n - 1] = '\0';
			big[n++] = '}';
			break;
		}
		r = hc_send(sock, big, n, NULL, 0);
		sent++;
		if (r == 0) {
			int fd;

			do {
				r = hc_recv(sock, &reply, &fd, HC_REPLY_MS);
				if (fd >= 0)
					close(fd);
				if (r == 1 && reply != NULL &&
				    strcmp(jstr(reply, "type"), "reply") == 0)
					break;
				cJSON_Delete(reply);
				reply = NULL;
			} while (r == 1);
		}
		if (r == 1) {
			appendf(rep, sizeof(rep), "%s%s: %s", k ? "; " : "",
			    steps[k].what, jstr(reply, "status"));
			cJSON_Delete(reply);
		} else {
			if (r == -ETIMEDOUT)
				unanswered++;
			appendf(rep, sizeof(rep), "%s%s: %s", k ? "; " : "",
			    steps[k].what, r == -ETIMEDOUT ? "NO ANSWER" :
			    r == -EMSGSIZE ? "send EMSGSIZE" :
			    "connection closed");
			close(sock);
			sock = hc_open();
		}
	}
	r = hc_request(sock, "{\"type\":\"status\"}", &reply, why,
	    sizeof(why));
	cJSON_Delete(reply);
	if (unanswered > 0 || r != 1)
		out("attack garbage-after-hello: EFFECTIVE (%u of %u not "
		    "refused; status afterwards: %s; %s)", unanswered, sent,
		    why, rep);
	else
		out("attack garbage-after-hello: refused (%s)", rep);
	close(sock);
	return 0;
}

/*
 * A client that asks and never reads: requests are sent until its socket
 * is full, none of the replies taken. Meanwhile another connection must
 * be answered (the daemon never waits on a client), and the daemon may
 * drop the slow one (dropped_slow). Then subscribe requests abandoned
 * before their fds are read, connection closed at once.
 */
static int
run_slow(const char *stream)
{
	char req[256], why[256];
	unsigned sent = 0, replies = 0, abandoned = 0;
	bool closed = false;
	int sock = hc_open(), other, r, fd;
	uint64_t t0;
	cJSON *reply;

	fcntl(sock, F_SETFL, fcntl(sock, F_GETFL) | O_NONBLOCK);
	t0 = mono_ms();
	while (sent < 100000 && mono_ms() - t0 < 5000) {
		r = hc_send_str(sock, "{\"type\":\"stats\"}");
		if (r == -EAGAIN) {
			sleep_ms(1);	/* the daemon may still be reading */
			if (hc_send_str(sock, "{\"type\":\"stats\"}") < 0)
				break;
		} else if (r < 0)
			break;
		sent++;
	}
	other = hc_open();
	r = hc_request(other, "{\"type\":\"status\"}", &reply, why,
	    sizeof(why));
	cJSON_Delete(reply);
	close(other);
	/* Now read what the daemon left us: replies, then EOF if it cut us
	 * off as slow. */
	t0 = mono_ms();
	for (;;) {
		int q = hc_recv(sock, &reply, &fd, 500);

		if (fd >= 0)
			close(fd);
		cJSON_Delete(reply);
		if (q == 1)
			replies++;
		else {
			closed = q == 0 || (q < 0 && q != -ETIMEDOUT &&
			    q != -EAGAIN);
			break;
		}
		if (mono_ms() - t0 > 10000)
			break;
	}
	close(sock);
	if (r != 1)
		out("attack slow-reader: EFFECTIVE (with %u requests unread on "
		    "one connection, another got no answer to status: %s)",
		    sent, why);
	else
		out("attack slow-reader: ineffective (%u requests never read; "
		    "status on another connection answered; %u replies came, "
		    "%s)", sent, replies, closed ? "then the daemon closed the "
		    "slow connection" : "the connection stayed open");

	for (int i = 0; i < 100; i++) {
		int c = hc_connect_nb(false);

		if (c < 0 || hc_hello(c) < 0) {
			if (c >= 0)
				close(c);
			continue;
		}
		snprintf(req, sizeof(req), "{\"type\":\"subscribe\","
		    "\"stream\":\"%s\"}", stream);
		if (hc_send_str(c, req) == 0)
			abandoned++;
		close(c);
	}
	other = hc_open();
	r = hc_request(other, "{\"type\":\"status\"}", &reply, why,
	    sizeof(why));
	cJSON_Delete(reply);
	close(other);
	if (r != 1)
		out("attack abandoned-subscribe: EFFECTIVE (after %u subscribe "
		    "requests whose fds nobody read, status: %s)", abandoned,
		    why);
	else
		out("attack abandoned-subscribe: ineffective (%u subscribe "
		    "requests closed before their fds were read; status "
		    "answered)", abandoned);
	return 0;
}

/* ---- the wake-up path ----------------------------------------------------- */

/*
 * Whatever the wake-up fd is, try to make the daemon's next signal on it
 * block: clear O_NONBLOCK, push an eventfd's counter to its maximum,
 * fill a pipe or socket from our end, and never read it. Then hold still
 * (never pop, never release) until SIGTERM, and drain it on the way out
 * so that a worker this did wedge comes free for the rest of the test.
 */
static int
run_wakeup(const char *stream)
{
	char why[256], what[160], rep[512] = "";
	struct hc_sub s;
	ssize_t n;
	uint64_t v = 0xfffffffffffffffeull;
	int sock = hc_open(), fd = -1, fl;

	if (hc_subscribe(sock, stream, HC_OMIT, 1, &s, why, sizeof(why)) != 1)
		die("subscribe %s: %s", stream, why);
	for (int i = 0; i < s.nfds; i++)
		if (strcmp(s.kinds[i], "tensor") != 0 &&
		    strcmp(s.kinds[i], "ipc") != 0 &&
		    strcmp(s.kinds[i], "bitmap") != 0 &&
		    strcmp(s.kinds[i], "ring") != 0)
			fd = s.fds[i];
	if (fd < 0) {
		out("attack wakeup-stall: ineffective (no wake-up fd was "
		    "given: fds %s %s %s)", s.kinds[0], s.kinds[1],
		    s.kinds[2]);
		out("ready wakeup");
		wait_for_stop();
		return 0;
	}
	snprintf(hc_buf, sizeof(hc_buf), "/proc/self/fd/%d", fd);
	n = readlink(hc_buf, what, sizeof(what) - 1);
	what[n > 0 ? n : 0] = '\0';
	fl = fcntl(fd, F_GETFL);
	appendf(rep, sizeof(rep), "fd %s", what);
	appendf(rep, sizeof(rep), "; F_SETFL 0: %s",
	    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0 ? "ok" :
	    strerror(errno));
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	if (strstr(what, "eventfd") != NULL) {
		n = write(fd, &v, sizeof(v));
		appendf(rep, sizeof(rep), "; wrote 0xfffffffffffffffe: %s",
		    n == 8 ? "ok" : strerror(errno));
	} else {
		unsigned long long bytes = 0;
		char junk[4096];

		memset(junk, 0x5a, sizeof(junk));
		for (int i = 0; i < 1 << 16; i++) {
			n = send(fd, junk, sizeof(junk), MSG_DONTWAIT |
			    MSG_NOSIGNAL);
			if (n < 0 && errno == ENOTSOCK)
				n = write(fd, junk, sizeof(junk));
			if (n <= 0)
				break;
			bytes += (unsigned long long)n;
		}
		appendf(rep, sizeof(rep), "; filled our end with %llu bytes",
		    bytes);
	}
	/* Blocking again, as the attack wants it, while the test runs. */
	fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	out("info wakeup: %s", rep);
	out("ready wakeup");
	/* Ask for a wake-up before every tensor (need_wakeup set again and
	 * again) and take the tensors, so the daemon keeps sending, but
	 * never read the wake-ups: its sends meet a full socket that its
	 * owner made blocking. */
	{
		struct daqiri_ring r;
		struct daqiri_desc d;
		void *m = mmap(NULL, s.ring_bytes, PROT_READ | PROT_WRITE,
		    MAP_SHARED, hc_sub_fd(&s, "ring"), 0);
		struct timespec nap = { 0, 100 * 1000 };
		unsigned long taken = 0;

		if (m == MAP_FAILED || daqiri_ring_attach(&r, m,
		    s.ring_bytes) != 0)
			die("ring: cannot map or attach");
		while (!hc_stop) {
			(void)daqiri_ring_arm(&r);
			while (daqiri_comp_pop(&r, &d) == 1) {
				taken++;
				(void)daqiri_rel_push(&r, d.buf_index);
			}
			nanosleep(&nap, NULL);
		}
		out("info wakeup: took %lu tensors, armed before each, read "
		    "no wake-up", taken);
	}
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	while (read(fd, hc_buf, 4096) > 0)
		;
	return 0;
}

/* ---- main ------------------------------------------------------------------ */

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: hostile-consumer -s SOCKET [-u UID] ATTACK "
	    "[ARGS]\n"
	    "  memory STREAM | bitmap-clear STREAM SECONDS | ring STREAM |\n"
	    "  hold STREAM MAX_HELD NSUBS | limits STREAM CAP |\n"
	    "  big-replies TOTAL | connections N | stray-fds STREAM |\n"
	    "  garbage | slow STREAM | wakeup STREAM\n");
	exit(1);
}

/* Become an unprivileged user, after raising what only root may raise. */
static void
drop_to(uid_t uid)
{
	struct rlimit rl = { HC_MAX_CONNS + 64, HC_MAX_CONNS + 64 };

	setrlimit(RLIMIT_NOFILE, &rl);
	if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
	    setresuid(uid, uid, uid) < 0)
		die("become uid %u: %s", (unsigned)uid, strerror(errno));
}

static unsigned
arg_u(const char *s)
{
	char *end;
	unsigned long v = strtoul(s, &end, 0);

	if (*s == '\0' || *end != '\0' || v > UINT_MAX)
		usage();
	return (unsigned)v;
}

int
main(int argc, char **argv)
{
	struct sigaction sa;
	const char *a;
	int ch;

	while ((ch = getopt(argc, argv, "s:u:")) != -1) {
		switch (ch) {
		case 's':
			hc_sock = optarg;
			break;
		case 'u':
			drop_to((uid_t)arg_u(optarg));
			break;
		default:
			usage();
		}
	}
	if (hc_sock == NULL || optind >= argc)
		usage();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = hc_on_signal;	/* no SA_RESTART: pause() returns */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	alarm(HC_LIFETIME_S);
	a = argv[optind];
	argc -= optind + 1;
	argv += optind + 1;
	if (strcmp(a, "memory") == 0 && argc == 1)
		return run_memory(argv[0]);
	if (strcmp(a, "bitmap-clear") == 0 && argc == 2)
		return run_bitmap_clear(argv[0], arg_u(argv[1]));
	if (strcmp(a, "ring") == 0 && argc == 1)
		return run_ring(argv[0]);
	if (strcmp(a, "hold") == 0 && argc == 3)
		return run_hold(argv[0], arg_u(argv[1]), arg_u(argv[2]));
	if (strcmp(a, "limits") == 0 && argc == 2)
		return run_limits(argv[0], arg_u(argv[1]));
	if (strcmp(a, "big-replies") == 0 && argc == 1)
		return run_big(arg_u(argv[0]));
	if (strcmp(a, "connections") == 0 && argc == 1)
		return run_connections(arg_u(argv[0]));
	if (strcmp(a, "stray-fds") == 0 && argc == 1)
		return run_stray_fds(argv[0]);
	if (strcmp(a, "garbage") == 0 && argc == 0)
		return run_garbage();
	if (strcmp(a, "slow") == 0 && argc == 1)
		return run_slow(argv[0]);
	if (strcmp(a, "wakeup") == 0 && argc == 1)
		return run_wakeup(argv[0]);
	usage();
}
