/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl-garbage: throws random and malformed messages at the daemon's
 * control socket over several connections (random bytes, truncated JSON,
 * wrong types, huge numbers, no hello, wrong version, unknown types,
 * oversize messages, messages carrying an fd, ...) and checks that each
 * one is answered with a non-ok status or that the connection is closed,
 * that attached fds are not kept, that the daemon's counters saw exactly
 * what was sent, and that "status" still answers at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#define CG_DEFAULT_COUNT	1000
#define CG_MSG_MAX		65536	/* the protocol's limit */
#define CG_BUF			(2 * CG_MSG_MAX)
#define CG_REPLY_WAIT_MS	3000	/* the daemon answers at once */
#define CG_PER_CONN		40	/* messages per connection */
#define CG_BURST		8	/* sent before reading the replies */
#define CG_DEEP			5000	/* nesting of deep JSON */
#define CG_SNDBUF		(1 << 20)
#define CG_STREAM		"sensor0/sensor_tensor"

enum expect { EXP_ERROR, EXP_OK, EXP_ANY };
enum need { NEED_ANY, NEED_NO_HELLO, NEED_HELLO };

/* One message to send and what must come back. */
struct cg_msg {
	char *buf;
	size_t len;
	bool with_fd;
	bool closes;			/* the daemon closes after it */
	enum expect expect;
	enum need need;
	const char *what;		/* category, for messages */
};

struct cg {
	const char *path;
	int fd;				/* -1: not connected */
	bool hello;
	unsigned on_conn;		/* messages on this connection */
	uint64_t rng;
	/* results */
	unsigned sent, replied, closed, ok, nonok, wrong, unanswered;
	unsigned fd_sent, fd_leaks, conns, version_closes;
	unsigned daemon_msgs;		/* requests the daemon reads */
	unsigned status_count[32];
	char status_name[32][32];
	int nstatus;
};

static uint64_t
cg_rand(struct cg *g)
{
	/* xorshift64* */
	g->rng ^= g->rng >> 12;
	g->rng ^= g->rng << 25;
	g->rng ^= g->rng >> 27;
	return g->rng * 2685821657736338717ull;
}

static uint32_t
cg_below(struct cg *g, uint32_t n)
{
	return (uint32_t)(cg_rand(g) % n);
}

static void __attribute__((noreturn))
die(const char *what)
{
	fprintf(stderr, "ctl-garbage: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void
cg_disconnect(struct cg *g)
{
	if (g->fd >= 0)
		close(g->fd);
	g->fd = -1;
	g->hello = false;
	g->on_conn = 0;
}

static void
cg_connect(struct cg *g)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int v = CG_SNDBUF;

	cg_disconnect(g);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", g->path);
	g->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (g->fd < 0)
		die("socket");
	(void)setsockopt(g->fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
	if (connect(g->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect");
	g->conns++;
}

/* Send one message, optionally with fd attached. 0 or -errno. */
static int
cg_send(struct cg *g, const char *buf, size_t len, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		struct cmsghdr *c;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	if (sendmsg(g->fd, &mh, MSG_NOSIGNAL) < 0)
		return -errno;
	return 0;
}

/*
 * Receive one message within the wait. Returns its length (> 0) in buf
 * (NUL-terminated), 0 when the daemon closed the connection, -ETIMEDOUT.
 * Any fd that comes along is closed.
 */
static ssize_t
cg_recv(struct cg *g, char *buf, size_t cap)
{
	struct pollfd p = { .fd = g->fd, .events = POLLIN };
	char cbuf[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = { .iov_base = buf, .iov_len = cap - 1 };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c;
	ssize_t n;
	int r;

	r = poll(&p, 1, CG_REPLY_WAIT_MS);
	if (r < 0)
		die("poll");
	if (r == 0)
		return -ETIMEDOUT;
	n = recvmsg(g->fd, &mh, MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == ECONNRESET || errno == EPIPE))
		return 0;
	if (n < 0)
		die("recvmsg");
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) /
			    sizeof(int); i++) {
				int f;

				memcpy(&f, CMSG_DATA(c) + i * sizeof(int),
				    sizeof(int));
				close(f);
			}
	buf[n] = '\0';
	return n;
}

static void
count_status(struct cg *g, const char *st)
{
	int i;

	for (i = 0; i < g->nstatus; i++)
		if (strcmp(g->status_name[i], st) == 0)
			break;
	if (i == g->nstatus) {
		if (g->nstatus == 32)
			return;
		snprintf(g->status_name[i], sizeof(g->status_name[i]), "%s",
		    st);
		g->nstatus++;
	}
	g->status_count[i]++;
}

/*
 * Wait for the reply to one request: skips daemon messages that are not
 * replies. Returns 1 with *status (malloc'd) set, 0 when the connection
 * was closed, -1 when no reply came in time.
 */
static int
cg_reply(struct cg *g, char **status, const char *what)
{
	static char buf[CG_BUF];

	for (;;) {
		ssize_t n = cg_recv(g, buf, sizeof(buf));
		const cJSON *t, *s, *e;
		cJSON *o;

		if (n == -ETIMEDOUT)
			return -1;
		if (n == 0)
			return 0;
		o = cJSON_ParseWithLength(buf, (size_t)n);
		t = cJSON_GetObjectItemCaseSensitive(o, "type");
		s = cJSON_GetObjectItemCaseSensitive(o, "status");
		e = cJSON_GetObjectItemCaseSensitive(o, "error");
		if (cJSON_IsString(t) && strcmp(t->valuestring, "reply") != 0) {
			cJSON_Delete(o);
			continue;
		}
		if (!cJSON_IsString(t) || !cJSON_IsString(s) ||
		    (strcmp(s->valuestring, "ok") != 0 &&
		    (!cJSON_IsObject(e) ||
		    !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e,
		    "message"))))) {
			fprintf(stderr, "ctl-garbage: %s: malformed reply: "
			    "%.200s\n", what, buf);
			g->wrong++;
			*status = strdup("?");
		} else {
			*status = strdup(s->valuestring);
		}
		cJSON_Delete(o);
		return 1;
	}
}

/* Say hello properly on the current connection. */
static void
cg_hello(struct cg *g)
{
	static const char h[] = "{\"type\":\"hello\",\"version\":2,"
	    "\"client\":\"ctl-garbage\"}";
	char *st = NULL;

	if (cg_send(g, h, sizeof(h) - 1, -1) < 0)
		die("send hello");
	g->daemon_msgs++;
	if (cg_reply(g, &st, "hello") != 1 || strcmp(st, "ok") != 0) {
		fprintf(stderr, "ctl-garbage: a proper hello was refused "
		    "(%s)\n", st != NULL ? st : "no reply");
		exit(1);
	}
	free(st);
	g->hello = true;
}

/* ---- the message generator */

static char *
xstrdup(const char *s)
{
	char *p = strdup(s);

	if (p == NULL)
		die("strdup");
	return p;
}

static char *
xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *
xprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;

	va_start(ap, fmt);
	if (vasprintf(&p, fmt, ap) < 0)
		die("vasprintf");
	va_end(ap);
	return p;
}

static const char *const valid_requests[] = {
	"{\"type\":\"subscribe\",\"stream\":\"" CG_STREAM "\","
	    "\"mode\":\"broadcast\",\"depth\":64}",
	"{\"type\":\"stats\",\"id\":17}",
	"{\"type\":\"flow_list\",\"interface\":\"sensor0\"}",
	"{\"type\":\"unsubscribe\",\"sub\":3}",
	"{\"type\":\"hello\",\"version\":2,\"client\":\"x\"}",
};

static const char *const word_pool[] = {
	"helo", "Hello", "STATUS", "status ", "subscribe2", "reply", "event",
	"sub_fd", "", "flow", "flow_lists", "stat", "consumer",
	"\\u00e9t\\u00e9",
	"top", "metrics", "shutdown", "exec",
};

enum cat {
	CAT_RANDOM_BYTES,
	CAT_RANDOM_TEXT,
	CAT_TRUNCATED,
	CAT_NOT_OBJECT,
	CAT_BAD_TYPE,
	CAT_UNKNOWN_TYPE,
	CAT_WRONG_FIELD_TYPE,
	CAT_HUGE_NUMBER,
	CAT_NO_HELLO,
	CAT_WRONG_VERSION,
	CAT_OVERSIZE,
	CAT_WITH_FD,
	CAT_SECOND_HELLO,
	CAT_DEEP,
	CAT_BAD_STRINGS,
	CAT_LONG_STRINGS,
	CAT_FAILING_REQUEST,
	CAT_EMPTY,
	CAT_VALID,
	CAT_MAX
};

static const char *const cat_names[CAT_MAX] = {
	"random bytes", "random text", "truncated JSON", "not an object",
	"bad type field", "unknown type", "wrong field type", "huge number",
	"no hello", "wrong version", "oversize", "fd attached",
	"second hello", "deep nesting", "bad strings", "long strings",
	"failing request", "empty message", "valid request",
};

static void
gen(struct cg *g, enum cat c, struct cg_msg *m)
{
	size_t n, i;
	char *p;

	memset(m, 0, sizeof(*m));
	m->expect = EXP_ERROR;
	m->need = NEED_ANY;
	m->what = cat_names[c];
	switch (c) {
	case CAT_RANDOM_BYTES:
		n = 1 + cg_below(g, 2048);
		m->buf = malloc(n);
		if (m->buf == NULL)
			die("malloc");
		for (i = 0; i < n; i++)
			m->buf[i] = (char)cg_rand(g);
		/* random bytes that happen to open an object could still be
		 * JSON: they cannot (a valid request needs "type") */
		m->len = n;
		break;
	case CAT_RANDOM_TEXT:
		n = 1 + cg_below(g, 512);
		m->buf = malloc(n + 1);
		if (m->buf == NULL)
			die("malloc");
		for (i = 0; i < n; i++)
			m->buf[i] = "{}[]\":,0123456789.eE+-truefalsnl \\"
			    "abcxyz"[cg_below(g, 46)];
		m->buf[n] = '\0';
		m->len = n;
		break;
	case CAT_TRUNCATED: {
		const char *v = valid_requests[cg_below(g,
		    sizeof(valid_requests) / sizeof(valid_requests[0]))];

		/* every proper prefix of an object is invalid JSON */
		m->len = 1 + cg_below(g, (uint32_t)strlen(v) - 1);
		m->buf = xstrdup(v);
		m->need = NEED_HELLO;
		break;
	}
	case CAT_NOT_OBJECT: {
		static const char *const v[] = {
			"[]", "1", "\"status\"", "null", "true", "false",
			"[{\"type\":\"status\"}]", "-0.5e3", " ", "\n",
			"{\"type\":\"status\"} {\"type\":\"status\"}",
			"{\"type\":\"status\"}x", "{\"type\":\"status\",}",
			"{'type':'status'}", "{type:\"status\"}",
		};

		m->buf = xstrdup(v[cg_below(g, sizeof(v) / sizeof(v[0]))]);
		m->need = NEED_HELLO;
		break;
	}
	case CAT_BAD_TYPE: {
		static const char *const v[] = {
			"{}", "{\"typ\":\"status\"}", "{\"type\":5}",
			"{\"type\":null}", "{\"type\":[\"status\"]}",
			"{\"type\":{\"name\":\"status\"}}", "{\"type\":true}",
			"{\"TYPE\":\"status\"}", "{\"id\":1}",
		};

		m->buf = xstrdup(v[cg_below(g, sizeof(v) / sizeof(v[0]))]);
		m->need = NEED_HELLO;
		break;
	}
	case CAT_UNKNOWN_TYPE:
		m->buf = xprintf("{\"type\":\"%s\",\"id\":%u}",
		    word_pool[cg_below(g, sizeof(word_pool) /
		    sizeof(word_pool[0]))], cg_below(g, 1000));
		m->need = NEED_HELLO;
		break;
	case CAT_WRONG_FIELD_TYPE: {
		static const char *const v[] = {
			"{\"type\":\"subscribe\",\"stream\":123}",
			"{\"type\":\"subscribe\",\"stream\":null}",
			"{\"type\":\"subscribe\",\"stream\":\"" CG_STREAM
			    "\",\"depth\":\"64\"}",
			"{\"type\":\"subscribe\",\"stream\":\"" CG_STREAM
			    "\",\"mode\":1}",
			"{\"type\":\"subscribe\",\"stream\":\"" CG_STREAM
			    "\",\"mode\":\"multicast\"}",
			"{\"type\":\"subscribe\",\"stream\":\"" CG_STREAM
			    "\",\"mode\":\"shared\"}",
			"{\"type\":\"subscribe\",\"stream\":[\"" CG_STREAM
			    "\"]}",
			"{\"type\":\"subscribe\"}",
			"{\"type\":\"unsubscribe\",\"sub\":\"1\"}",
			"{\"type\":\"unsubscribe\"}",
			"{\"type\":\"flow_list\",\"interface\":7}",
			"{\"type\":\"status\",\"extra\":1}",
			"{\"type\":\"stats\",\"id\":\"7\"}",
			"{\"type\":\"flow_add\",\"interface\":\"sensor0\","
			    "\"id\":\"x\"}",
			"{\"type\":\"flow_del\",\"interface\":{}}",
		};

		m->buf = xstrdup(v[cg_below(g, sizeof(v) / sizeof(v[0]))]);
		m->need = NEED_HELLO;
		break;
	}
	case CAT_HUGE_NUMBER: {
		static const char *const v[] = {
			"\"depth\":1e308", "\"depth\":18446744073709551616",
			"\"depth\":-1", "\"depth\":3", "\"depth\":0.5",
			"\"depth\":4294967296", "\"max_held\":1e20",
			"\"max_held\":-5", "\"max_held\":99999999",
			"\"max_held\":1.0000001", "\"depth\":1e-300",
			"\"depth\":131072",
		};

		if (cg_below(g, 3) == 0)
			m->buf = xprintf("{\"type\":\"%s\",\"%s\":%s}",
			    cg_below(g, 2) ? "unsubscribe" : "status",
			    cg_below(g, 2) ? "sub" : "id",
			    (const char *[]){ "4294967296", "-1", "1e400",
			    "1.5", "-0.0001", "1e19" }[cg_below(g, 6)]);
		else
			m->buf = xprintf("{\"type\":\"subscribe\",\"stream\":"
			    "\"" CG_STREAM "\",%s}",
			    v[cg_below(g, sizeof(v) / sizeof(v[0]))]);
		m->need = NEED_HELLO;
		/* {"type":"status","id":...} with a bad id is a field
		 * error; {"type":"unsubscribe","sub":...} one too */
		break;
	}
	case CAT_NO_HELLO: {
		static const char *const v[] = {
			"{\"type\":\"status\"}", "{\"type\":\"stats\"}",
			"{\"type\":\"streams\"}", "{\"type\":\"consumers\"}",
			"{\"type\":\"subscribe\",\"stream\":\"" CG_STREAM "\"}",
			"{\"type\":\"flow_list\"}",
			"{\"type\":\"unsubscribe\",\"sub\":1}",
		};

		m->buf = xstrdup(v[cg_below(g, sizeof(v) / sizeof(v[0]))]);
		m->need = NEED_NO_HELLO;
		break;
	}
	case CAT_WRONG_VERSION: {
		static const char *const v[] = {
			"1", "3", "0", "\"2\"", "-1", "1.5", "1e30", "null",
			"[1]", "4294967297",
		};

		if (cg_below(g, 5) == 0) {
			m->buf = xstrdup("{\"type\":\"hello\"}");
		} else {
			m->buf = xprintf("{\"type\":\"%s\",\"version\":%s}",
			    cg_below(g, 3) ? "hello" : "status",
			    v[cg_below(g, sizeof(v) / sizeof(v[0]))]);
		}
		m->closes = true;
		m->need = cg_below(g, 2) ? NEED_NO_HELLO : NEED_ANY;
		break;
	}
	case CAT_OVERSIZE:
		n = CG_MSG_MAX + 1 + cg_below(g, 4096);
		m->buf = malloc(n + 1);
		if (m->buf == NULL)
			die("malloc");
		p = m->buf + sprintf(m->buf, "{\"type\":\"status\",\"pad\":\"");
		memset(p, 'a', n - (size_t)(p - m->buf) - 2);
		memcpy(m->buf + n - 2, "\"}", 3);
		m->len = n;
		m->need = NEED_HELLO;
		break;
	case CAT_WITH_FD:
		m->buf = xstrdup(cg_below(g, 2) ? "{\"type\":\"status\"}" :
		    "{\"type\":\"subscribe\",\"stream\":\"" CG_STREAM "\"}");
		m->with_fd = true;
		m->need = cg_below(g, 2) ? NEED_HELLO : NEED_NO_HELLO;
		break;
	case CAT_SECOND_HELLO:
		m->buf = xstrdup("{\"type\":\"hello\",\"version\":2}");
		m->need = NEED_HELLO;
		break;
	case CAT_DEEP:
		n = 2 * CG_DEEP + 64;
		m->buf = malloc(n);
		if (m->buf == NULL)
			die("malloc");
		p = m->buf + sprintf(m->buf, "{\"type\":\"status\",\"x\":");
		for (i = 0; i < CG_DEEP; i++)
			*p++ = '[';
		for (i = 0; i < CG_DEEP; i++)
			*p++ = ']';
		*p++ = '}';
		*p = '\0';
		m->need = NEED_HELLO;
		break;
	case CAT_BAD_STRINGS: {
		static const char *const v[] = {
			"{\"type\":\"status\\u0000\"}",
			"{\"type\":\"subscribe\",\"stream\":\"sensor0/"
			    "sensor_tensor\\u0000x\"}",
			"{\"type\":\"subscribe\",\"stream\":\"\xff\xfe\"}",
			"{\"type\":\"subscribe\",\"stream\":\"\"}",
			"{\"type\":\"subscribe\",\"stream\":\"\\ud800\"}",
			"{\"type\":\"flow_list\",\"interface\":\"a\\nb\"}",
			"{\"type\":\"sta\xc3\"}",
		};

		m->buf = xstrdup(v[cg_below(g, sizeof(v) / sizeof(v[0]))]);
		m->need = NEED_HELLO;
		break;
	}
	case CAT_LONG_STRINGS:
		n = 200 + cg_below(g, 8000);
		p = malloc(n + 1);
		if (p == NULL)
			die("malloc");
		memset(p, 'q', n);
		p[n] = '\0';
		switch (cg_below(g, 4)) {
		case 0:
			m->buf = xprintf("{\"type\":\"subscribe\",\"stream\":"
			    "\"%s\"}", p);
			m->need = NEED_HELLO;
			break;
		case 1:
			m->buf = xprintf("{\"type\":\"subscribe\",\"stream\":"
			    "\"" CG_STREAM "\",\"mode\":\"shared\","
			    "\"group\":\"%s\"}", p);
			m->need = NEED_HELLO;
			break;
		case 2:
			m->buf = xprintf("{\"type\":\"flow_list\","
			    "\"interface\":\"%s\"}", p);
			m->need = NEED_HELLO;
			break;
		default:
			m->buf = xprintf("{\"type\":\"hello\",\"version\":2,"
			    "\"client\":\"%s\"}", p);
			m->need = NEED_NO_HELLO;
			break;
		}
		free(p);
		break;
	case CAT_FAILING_REQUEST: {
		static const char *const v[] = {
			"{\"type\":\"subscribe\",\"stream\":\"nope/nope\"}",
			"{\"type\":\"subscribe\",\"stream\":\"sensor0\"}",
			"{\"type\":\"unsubscribe\",\"sub\":12345}",
			"{\"type\":\"unsubscribe\",\"sub\":0}",
			"{\"type\":\"flow_list\",\"interface\":\"nope\"}",
			"{\"type\":\"flow_del\",\"interface\":\"sensor0\","
			    "\"id\":99}",
		};

		m->buf = xstrdup(v[cg_below(g, sizeof(v) / sizeof(v[0]))]);
		m->need = NEED_HELLO;
		break;
	}
	case CAT_EMPTY:
		/* On SOCK_SEQPACKET a message of no bytes reads as the end of
		 * the connection: the daemon may only close it. */
		m->buf = xstrdup("");
		m->len = 0;
		m->closes = true;
		m->expect = EXP_ANY;
		break;
	case CAT_VALID: {
		static const char *const v[] = {
			"{\"type\":\"status\"}",
			"{\"type\":\"stats\",\"id\":9}",
			"{\"type\":\"streams\"}", "{\"type\":\"consumers\"}",
			"{\"type\":\"flow_list\"}",
		};

		m->buf = xstrdup(v[cg_below(g, sizeof(v) / sizeof(v[0]))]);
		m->expect = EXP_OK;
		m->need = NEED_HELLO;
		break;
	}
	default:
		abort();
	}
	if (m->len == 0 && c != CAT_EMPTY)
		m->len = strlen(m->buf);
	if (c == CAT_TRUNCATED)
		m->buf[m->len] = '\0';
}

/* Bring the connection into the state the message needs. */
static void
cg_prepare(struct cg *g, const struct cg_msg *m)
{
	if (g->fd < 0 || g->on_conn >= CG_PER_CONN ||
	    (m->need == NEED_NO_HELLO && g->hello))
		cg_connect(g);
	if (m->need == NEED_HELLO && !g->hello)
		cg_hello(g);
}

/* Judge one reply (or close) against the expectation. */
static void
cg_judge(struct cg *g, const struct cg_msg *m, int got, char *st)
{
	if (got < 0) {
		fprintf(stderr, "ctl-garbage: %s: no reply and the connection "
		    "stays open (%.60s)\n", m->what, m->buf);
		g->unanswered++;
		cg_disconnect(g);
		return;
	}
	if (got == 0) {
		g->closed++;
		if (m->expect == EXP_OK) {
			fprintf(stderr, "ctl-garbage: %s: connection closed "
			    "instead of an answer\n", m->what);
			g->wrong++;
		}
		cg_disconnect(g);
		return;
	}
	g->replied++;
	count_status(g, st);
	if (strcmp(st, "ok") == 0)
		g->ok++;
	else
		g->nonok++;
	if ((m->expect == EXP_ERROR && strcmp(st, "ok") == 0) ||
	    (m->expect == EXP_OK && strcmp(st, "ok") != 0)) {
		fprintf(stderr, "ctl-garbage: %s: status %s (%.80s)\n",
		    m->what, st, m->buf);
		g->wrong++;
	}
	if (m->closes) {
		/* after the answer the daemon must hang up */
		static char buf[CG_BUF];
		ssize_t n = cg_recv(g, buf, sizeof(buf));

		if (n != 0) {
			fprintf(stderr, "ctl-garbage: %s: connection not "
			    "closed after the answer\n", m->what);
			g->wrong++;
		} else {
			g->version_closes++;
		}
		cg_disconnect(g);
	}
	free(st);
}

/* Send one message; with an fd, check afterwards that the daemon did not
 * keep it (the pipe's last read end must be gone). */
static void
cg_one(struct cg *g, struct cg_msg *m)
{
	int pfd[2] = { -1, -1 }, r, got;
	char *st = NULL;

	cg_prepare(g, m);
	if (m->with_fd && pipe2(pfd, O_CLOEXEC | O_NONBLOCK) < 0)
		die("pipe2");
	r = cg_send(g, m->buf, m->len, pfd[0]);
	if (r < 0) {
		fprintf(stderr, "ctl-garbage: %s: send: %s\n", m->what,
		    strerror(-r));
		exit(2);
	}
	g->sent++;
	g->on_conn++;
	if (m->len > 0)
		g->daemon_msgs++;
	if (pfd[0] >= 0) {
		close(pfd[0]);
		g->fd_sent++;
	}
	got = cg_reply(g, &st, m->what);
	if (pfd[1] >= 0) {
		/* The daemon answered, so it has read the message and closed
		 * what came with it: writing must find no reader. */
		if (write(pfd[1], "x", 1) != -1 || errno != EPIPE) {
			fprintf(stderr, "ctl-garbage: the fd sent with a "
			    "message is still open in the daemon\n");
			g->fd_leaks++;
		}
		close(pfd[1]);
	}
	cg_judge(g, m, got, st);
}

/* A burst of garbage sent before any reply is read: every one answered,
 * in order. */
static void
cg_burst(struct cg *g, unsigned n)
{
	struct cg_msg m[CG_BURST];
	unsigned i;

	for (i = 0; i < n; i++) {
		gen(g, cg_below(g, 2) ? CAT_RANDOM_BYTES : CAT_UNKNOWN_TYPE,
		    &m[i]);
		m[i].need = NEED_HELLO;
	}
	if (g->fd < 0 || g->on_conn + n > CG_PER_CONN)
		cg_connect(g);
	if (!g->hello)
		cg_hello(g);
	for (i = 0; i < n; i++) {
		if (cg_send(g, m[i].buf, m[i].len, -1) < 0)
			die("send (burst)");
		g->sent++;
		g->on_conn++;
		g->daemon_msgs++;
	}
	for (i = 0; i < n; i++) {
		char *st = NULL;
		int got = cg_reply(g, &st, "burst");

		cg_judge(g, &m[i], got, st);
		free(m[i].buf);
		if (got <= 0) {
			for (i++; i < n; i++)
				free(m[i].buf);
			break;
		}
	}
}

/* The daemon's control counters "requests" and "errors" (one stats
 * request on the current connection, which has said hello). */
static void
cg_control_counters(struct cg *g, double *requests, double *errors)
{
	static char buf[CG_BUF];
	static const char q[] = "{\"type\":\"stats\"}";
	const cJSON *c, *r, *e;
	cJSON *o;
	ssize_t n;

	if (cg_send(g, q, sizeof(q) - 1, -1) < 0)
		die("send stats");
	g->daemon_msgs++;
	n = cg_recv(g, buf, sizeof(buf));
	if (n <= 0) {
		fprintf(stderr, "ctl-garbage: stats: no answer\n");
		exit(1);
	}
	o = cJSON_ParseWithLength(buf, (size_t)n);
	c = cJSON_GetObjectItemCaseSensitive(o, "control");
	r = cJSON_GetObjectItemCaseSensitive(c, "requests");
	e = cJSON_GetObjectItemCaseSensitive(c, "errors");
	if (!cJSON_IsNumber(r) || !cJSON_IsNumber(e)) {
		fprintf(stderr, "ctl-garbage: stats: no control counters\n");
		exit(1);
	}
	*requests = r->valuedouble;
	*errors = e->valuedouble;
	cJSON_Delete(o);
}

int
main(int argc, char **argv)
{
	struct cg g = { .fd = -1, .rng = 0x9e3779b97f4a7c15ull };
	unsigned count = CG_DEFAULT_COUNT, seed = 1;
	double req0, err0, req1, err1;
	unsigned i;
	char *st = NULL;
	int got;

	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: ctl-garbage SOCKET [COUNT [SEED]]\n");
		return 2;
	}
	g.path = argv[1];
	if (argc > 2)
		count = (unsigned)strtoul(argv[2], NULL, 0);
	if (argc > 3)
		seed = (unsigned)strtoul(argv[3], NULL, 0);
	g.rng ^= seed;
	signal(SIGPIPE, SIG_IGN);

	/* The daemon's own count of requests and error replies, before. */
	cg_connect(&g);
	cg_hello(&g);
	cg_control_counters(&g, &req0, &err0);
	g.daemon_msgs = 0;
	cg_disconnect(&g);

	for (i = 0; i < count;) {
		struct cg_msg m;
		enum cat c = (enum cat)(i % CAT_MAX);

		if (i % 100 == 50 && count - i >= CG_BURST) {
			cg_burst(&g, CG_BURST);
			i += CG_BURST;
			continue;
		}
		if (g.unanswered > 3)
			break;	/* the daemon is stuck */
		gen(&g, c, &m);
		cg_one(&g, &m);
		free(m.buf);
		i++;
	}

	/* status still answers on a fresh connection */
	cg_connect(&g);
	cg_hello(&g);
	{
		static const char q[] = "{\"type\":\"status\"}";

		if (cg_send(&g, q, sizeof(q) - 1, -1) < 0)
			die("send status");
		g.daemon_msgs++;
		got = cg_reply(&g, &st, "final status");
	}
	cg_control_counters(&g, &req1, &err1);
	cg_disconnect(&g);

	for (int k = 0; k < g.nstatus; k++)
		printf("status %s=%u\n", g.status_name[k], g.status_count[k]);
	printf("ctl-garbage sent=%u replied=%u closed=%u ok=%u nonok=%u "
	    "wrong=%u unanswered=%u fds=%u fd_leaks=%u connections=%u "
	    "closed_after_answer=%u\n", g.sent, g.replied, g.closed, g.ok,
	    g.nonok, g.wrong, g.unanswered, g.fd_sent, g.fd_leaks, g.conns,
	    g.version_closes);
	/* Each reading counts its own request: between them the daemon
	 * read daemon_msgs requests, and every non-ok reply was an error. */
	printf("daemon requests=%.0f expected=%u errors=%.0f expected=%u\n",
	    req1 - req0, g.daemon_msgs, err1 - err0, g.nonok);
	if (got != 1 || strcmp(st, "ok") != 0) {
		printf("FAIL: status after the garbage: %s\n",
		    got == 1 ? st : "no answer");
		return 1;
	}
	free(st);
	if (g.sent != count || g.wrong != 0 || g.unanswered != 0 ||
	    g.fd_leaks != 0 || g.replied + g.closed != g.sent ||
	    req1 - req0 != (double)g.daemon_msgs ||
	    err1 - err0 != (double)g.nonok) {
		printf("FAIL\n");
		return 1;
	}
	printf("ok\n");
	return 0;
}
