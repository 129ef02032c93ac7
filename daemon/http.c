/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP endpoint (http.h): a libmicrohttpd daemon with its own polling
 * thread (epoll) on a socket bound here, so that a bad address is
 * reported by name. /healthz is answered on that thread from the
 * workers' and the main loop's heartbeats (atomics; the worker list is
 * fixed while the daemon runs). /metrics is built by the main loop (the
 * stats and consumers views walk the main thread's stream list and
 * subscription tables, which it changes without a lock), but the server
 * thread never waits for it: a text built less than HTTP_METRICS_FRESH_MS
 * ago is served as it is, so a flood of scrapes costs one build; else
 * the request is suspended, the main loop asked through an eventfd, and
 * every suspended request resumed with the new text (or, past
 * HTTP_MAIN_WAIT_MS, with a 503). Meanwhile /healthz is served at once.
 *
 * Nobody can hold the endpoint: a request must be complete (line and
 * headers) within HTTP_REQUEST_DEADLINE_MS of its connection, whatever it
 * trickles (the main loop's tick, and every new connection, close the
 * late ones); at the connection limit a newcomer takes the place of the
 * oldest connection whose request is not complete; a request body over
 * HTTP_BODY_MAX gets 413. What it closes or refuses is counted by
 * reason. RX workers never see any of this. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "config.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "desc.h"

#define HTTP_BACKLOG	1024	/* the kernel queues this many for accept() */

enum http_code { HC_200, HC_404, HC_405, HC_413, HC_503, HC_MAX };
static const unsigned http_codes[HC_MAX] = { 200, 404, 405, 413, 503 };

/* Why the endpoint closed a connection itself (hconn.killed). */
enum kill_why { KILL_NONE, KILL_DEADLINE, KILL_EVICTED };

struct http {
	struct MHD_Daemon *mhd;
	int lfd;
	int efd;			/* eventfd: a request wants a build */
	char unix_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t path_dev;
	ino_t path_ino;
	struct http_opts o;

	pthread_mutex_t mu;		/* guards want..waiting */
	uint64_t want;			/* builds asked for */
	uint64_t done;			/* the want the text answers */
	char *text;
	size_t len;
	uint64_t built_ns;		/* when text was built */
	bool stopping;
	struct hconn *conns;		/* every open connection */
	struct hreq *waiting;		/* suspended /metrics requests */

	/* The main loop's last tick (http_tick()), for /healthz. */
	_Atomic uint64_t main_beat_ns;

	/* Counters: written by the server thread (or, for deadline, the
	 * main loop's sweep), read by any. */
	_Atomic uint64_t accepted, rejected, current, incomplete, timeouts;
	_Atomic uint64_t deadline, evicted, cached;
	_Atomic uint64_t responses[HC_MAX];
};

/* Per connection (MHD's socket context), on h->conns under h->mu from
 * its start to its close notification (MHD closes the socket after it,
 * so while it is listed, fd is this connection's). */
struct hconn {
	struct hconn *prev, *next;
	uint64_t start_ns;
	int fd;
	bool request;			/* line and headers are in */
	bool answered;
	enum kill_why killed;
};

/* Per /metrics request waiting for the main loop, on h->waiting under
 * h->mu while suspended. */
struct hreq {
	struct hreq *next;
	struct MHD_Connection *c;
	uint64_t mine;			/* the build it waits for */
	uint64_t until_ns;		/* then a 503 */
	uint64_t body;			/* request body bytes seen */
	bool waiting;			/* suspended, on h->waiting */
	bool resumed;
};

/* --- the socket -------------------------------------------------------- */

static int
bind_unix_at(struct http *h, const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		int e = errno;

		snprintf(err, errlen, "daemon.metrics_listen 'unix:%s': socket: "
		    "%s", path, strerror(e));
		return -e;
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int e = errno, probe;
		bool live = false;

		if (e == EADDRINUSE) {
			/* A socket left behind is taken over; a live one is
			 * not, nor a path that is no socket. */
			probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
			live = probe >= 0 && connect(probe,
			    (struct sockaddr *)&sa, sizeof(sa)) == 0;
			if (probe >= 0)
				close(probe);
			if (!live && lstat(path, &st) == 0 &&
			    S_ISSOCK(st.st_mode) && unlink(path) == 0 &&
			    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
				e = 0;
		}
		if (e != 0) {
			snprintf(err, errlen, "daemon.metrics_listen 'unix:%s': "
			    "%s", path, live ? "another process listens there" :
			    strerror(e));
			close(fd);
			return -e;
		}
	}
	if (lstat(path, &st) == 0) {
		h->path_dev = st.st_dev;
		h->path_ino = st.st_ino;
		snprintf(h->unix_path, sizeof(h->unix_path), "%s", path);
		if (chmod(path, h->o.unix_mode) != 0)
			log_warn("daemon.metrics_listen 'unix:%s': chmod %o",
			    path, h->o.unix_mode);
	}
	return fd;
}

/* The socket is made owner-only and chmod then opens it to unix_mode,
 * so it is never wider than asked in between (main thread, at start). */
static int
bind_unix(struct http *h, const char *path, char *err, size_t errlen)
{
	mode_t old = umask(0177);
	int fd = bind_unix_at(h, path, err, errlen);

	umask(old);
	return fd;
}

static int
bind_listen(struct http *h, char *err, size_t errlen)
{
	struct cfg_listen l;
	union {
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} sa;
	socklen_t salen;
	int fd, one = 1, e;

	if (!cfg_parse_listen(h->o.listen, &l)) {
		snprintf(err, errlen, "daemon.metrics_listen '%s': not an "
		    "IPV4:PORT, [IPV6]:PORT or unix:/PATH", h->o.listen);
		return -EINVAL;
	}
	if (l.kind == CFG_LISTEN_UNIX)
		fd = bind_unix(h, l.path, err, errlen);
	else {
		memset(&sa, 0, sizeof(sa));
		if (l.kind == CFG_LISTEN_INET) {
			sa.in.sin_family = AF_INET;
			sa.in.sin_port = htons(l.port);
			memcpy(&sa.in.sin_addr, l.addr, 4);
			salen = sizeof(sa.in);
		} else {
			sa.in6.sin6_family = AF_INET6;
			sa.in6.sin6_port = htons(l.port);
			memcpy(&sa.in6.sin6_addr, l.addr, 16);
			salen = sizeof(sa.in6);
		}
		fd = socket(l.kind == CFG_LISTEN_INET ? AF_INET : AF_INET6,
		    SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0) {
			e = errno;
			snprintf(err, errlen, "daemon.metrics_listen '%s': socket: "
			    "%s", h->o.listen, strerror(e));
			return -e;
		}
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
		    sizeof(one));
		if (l.kind == CFG_LISTEN_INET6)
			(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
			    sizeof(one));
		if (bind(fd, (struct sockaddr *)&sa, salen) != 0) {
			e = errno;
			snprintf(err, errlen, "daemon.metrics_listen '%s': %s%s",
			    h->o.listen, strerror(e), e == EADDRINUSE ?
			    " (another process has the port; choose another)" :
			    "");
			close(fd);
			return -e;
		}
	}
	if (fd < 0)
		return fd;
	if (listen(fd, HTTP_BACKLOG) != 0) {
		e = errno;
		snprintf(err, errlen, "daemon.metrics_listen '%s': listen: %s",
		    h->o.listen, strerror(e));
		close(fd);
		return -e;
	}
	return fd;
}

/* --- the server thread's callbacks ---------------------------------------- */

/* Close c's socket under it, for why (h->mu held: it is still c's). MHD
 * sees the end and closes the connection; its close notification counts
 * it. */
static void
kill_conn(struct hconn *k, enum kill_why why)
{
	k->killed = why;
	if (k->fd >= 0)
		(void)shutdown(k->fd, SHUT_RDWR);
}

/* Close every connection whose request is not complete by the deadline
 * (h->mu held). */
static void
sweep_locked(struct http *h, uint64_t now)
{
	for (struct hconn *k = h->conns; k != NULL; k = k->next)
		if (!k->request && k->killed == KILL_NONE &&
		    now - k->start_ns >= HTTP_REQUEST_DEADLINE_MS * 1000000ull)
			kill_conn(k, KILL_DEADLINE);
}

/* Resume the waiting requests that are answered (done) or out of time;
 * all of them when stopping (h->mu held). */
static void
resume_locked(struct http *h, uint64_t now)
{
	struct hreq **pp = &h->waiting;

	while (*pp != NULL) {
		struct hreq *q = *pp;

		if (h->done < q->mine && !h->stopping && now < q->until_ns) {
			pp = &q->next;
			continue;
		}
		*pp = q->next;
		q->waiting = false;
		q->resumed = true;
		MHD_resume_connection(q->c);
	}
}

static enum MHD_Result
on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	struct http *h = cls;
	struct hconn *old = NULL;
	uint64_t now = daqiri_mono_ns();

	if (atomic_load(&h->current) < HTTP_MAX_CONNECTIONS)
		return MHD_YES;
	/* Full: the late ones go first, then the oldest request not yet
	 * complete makes room; a house full of answered or waiting
	 * requests refuses the newcomer, counted. */
	pthread_mutex_lock(&h->mu);
	sweep_locked(h, now);
	resume_locked(h, now);
	for (struct hconn *k = h->conns; k != NULL; k = k->next)
		if (!k->request && k->killed == KILL_NONE &&
		    (old == NULL || k->start_ns < old->start_ns))
			old = k;
	if (old != NULL)
		kill_conn(old, KILL_EVICTED);
	pthread_mutex_unlock(&h->mu);
	if (old != NULL)
		return MHD_YES;
	atomic_fetch_add(&h->rejected, 1);
	return MHD_NO;
}

static void
on_connection(void *cls, struct MHD_Connection *c, void **socket_ctx,
	      enum MHD_ConnectionNotificationCode code)
{
	struct http *h = cls;
	struct hconn *k = *socket_ctx;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
		    MHD_CONNECTION_INFO_CONNECTION_FD);

		atomic_fetch_add(&h->accepted, 1);
		atomic_fetch_add(&h->current, 1);
		k = calloc(1, sizeof(*k));
		if (k != NULL) {
			k->start_ns = daqiri_mono_ns();
			k->fd = ci != NULL ? ci->connect_fd : -1;
			pthread_mutex_lock(&h->mu);
			k->next = h->conns;
			if (h->conns != NULL)
				h->conns->prev = k;
			h->conns = k;
			pthread_mutex_unlock(&h->mu);
		}
		*socket_ctx = k;
		return;
	}
	atomic_fetch_sub(&h->current, 1);
	if (k != NULL) {
		pthread_mutex_lock(&h->mu);
		if (k->prev != NULL)
			k->prev->next = k->next;
		else
			h->conns = k->next;
		if (k->next != NULL)
			k->next->prev = k->prev;
		pthread_mutex_unlock(&h->mu);
	}
	/*
	 * Closed without an answer: by us (the request deadline, or room
	 * for a newcomer); after about the idle timeout (MHD counts it in
	 * whole seconds, hence the second of slack), by MHD; else by its
	 * client, or refused by MHD itself (a request over the memory
	 * limit, a malformed one).
	 */
	if (k != NULL && k->killed == KILL_DEADLINE)
		atomic_fetch_add(&h->deadline, 1);
	else if (k != NULL && k->killed == KILL_EVICTED)
		atomic_fetch_add(&h->evicted, 1);
	else if (k != NULL && !k->answered && k->request &&
	    daqiri_mono_ns() - k->start_ns >=
	    (HTTP_TIMEOUT_S - 1) * 1000000000ull)
		atomic_fetch_add(&h->timeouts, 1);
	else if (k == NULL || !k->answered)
		atomic_fetch_add(&h->incomplete, 1);
	free(k);
	*socket_ctx = NULL;
}

/* MHD's own messages (refused requests and the like), at debug level. */
static void
on_log(void *cls, const char *fmt, va_list ap)
{
	char line[256];
	size_t n;

	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n > 0 && line[n - 1] == '\n')
		line[--n] = '\0';
	log_debug("metrics endpoint: %s", line);
}

static enum MHD_Result
respond(struct http *h, struct MHD_Connection *c, enum http_code code,
	const char *type, const char *body, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len,
	    (void *)body, MHD_RESPMEM_MUST_COPY);
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
	    MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	enum MHD_Result rc;

	if (r == NULL)
		return MHD_NO;
	(void)MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (code == HC_405)
		(void)MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW,
		    "GET, HEAD");
	rc = MHD_queue_response(c, http_codes[code], r);
	MHD_destroy_response(r);
	if (rc == MHD_YES) {
		atomic_fetch_add(&h->responses[code], 1);
		if (ci != NULL && ci->socket_context != NULL)
			((struct hconn *)ci->socket_context)->answered = true;
	}
	return rc;
}

static enum MHD_Result
healthz(struct http *h, struct MHD_Connection *c)
{
	char body[2048];
	size_t n = 0;
	uint64_t now = daqiri_mono_ns();
	uint64_t mb = atomic_load_explicit(&h->main_beat_ns,
	    memory_order_relaxed);

	body[0] = '\0';
	if (now > mb && now - mb > h->o.stale_ns)
		n += (size_t)snprintf(body, sizeof(body), "daqirid's main loop "
		    "has not turned for %llu ms (control socket, reloads and "
		    "/metrics wait on it)\n",
		    (unsigned long long)((now - mb) / 1000000));
	for (int i = 0; i < h->o.nworkers; i++) {
		uint64_t b = worker_heartbeat_ns(h->o.workers[i]);
		uint64_t age = now > b ? now - b : 0;

		if (age > h->o.stale_ns && n < sizeof(body))
			n += (size_t)snprintf(body + n, sizeof(body) - n,
			    "queue '%s': its RX worker's heartbeat has not "
			    "advanced for %llu ms\n",
			    worker_queue_name(h->o.workers[i]),
			    (unsigned long long)(age / 1000000));
	}
	for (int i = 0; i < h->o.ntx; i++) {
		uint64_t b = tx_worker_heartbeat_ns(h->o.txws[i]);
		uint64_t age = now > b ? now - b : 0;

		if (age > h->o.stale_ns && n < sizeof(body))
			n += (size_t)snprintf(body + n, sizeof(body) - n,
			    "tx queue '%s': its TX worker's heartbeat has not "
			    "advanced for %llu ms\n",
			    tx_worker_name(h->o.txws[i]),
			    (unsigned long long)(age / 1000000));
	}
	if (n >= sizeof(body))
		n = sizeof(body) - 1;
	if (n == 0)
		return respond(h, c, HC_200, "text/plain", "ok\n", 3);
	return respond(h, c, HC_503, "text/plain", body, n);
}

/*
 * /metrics: a fresh enough text at once; else suspended until the main
 * loop built one (http_serve()) or HTTP_MAIN_WAIT_MS passed, and then
 * (resumed, called again) the text or a 503. Never waits here.
 */
static enum MHD_Result
metrics(struct http *h, struct MHD_Connection *c, struct hreq *q)
{
	static const char late[] = "daqirid's main loop did not answer in "
	    "time\n";
	uint64_t one = 1, now = daqiri_mono_ns();
	enum MHD_Result rc;

	pthread_mutex_lock(&h->mu);
	if (q->resumed) {
		if (h->done >= q->mine && h->text != NULL)
			rc = respond(h, c, HC_200, DAQIRI_METRICS_CONTENT_TYPE,
			    h->text, h->len);
		else
			rc = respond(h, c, HC_503, "text/plain", late,
			    sizeof(late) - 1);
		pthread_mutex_unlock(&h->mu);
		return rc;
	}
	if (h->text != NULL && now - h->built_ns <
	    HTTP_METRICS_FRESH_MS * 1000000ull) {
		atomic_fetch_add(&h->cached, 1);
		rc = respond(h, c, HC_200, DAQIRI_METRICS_CONTENT_TYPE, h->text,
		    h->len);
		pthread_mutex_unlock(&h->mu);
		return rc;
	}
	if (h->stopping) {
		pthread_mutex_unlock(&h->mu);
		return respond(h, c, HC_503, "text/plain", late,
		    sizeof(late) - 1);
	}
	/* requests that come while a build is asked for share it */
	if (h->want > h->done)
		q->mine = h->want;
	else {
		q->mine = ++h->want;
		(void)!write(h->efd, &one, sizeof(one));
	}
	q->until_ns = now + HTTP_MAIN_WAIT_MS * 1000000ull;
	q->waiting = true;
	q->next = h->waiting;
	h->waiting = q;
	MHD_suspend_connection(c);
	pthread_mutex_unlock(&h->mu);
	return MHD_YES;
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *c, const char *url,
	   const char *method, const char *version, const char *upload,
	   size_t *upload_size, void **req_ctx)
{
	struct http *h = cls;
	static const char nf[] = "not found: try /metrics or /healthz\n";
	static const char big[] = "request body too large\n";
	struct hreq *q = *req_ctx;
	const union MHD_ConnectionInfo *ci;
	const char *cl;

	if (q == NULL) {
		/* headers in; the body, if any, next */
		if ((q = calloc(1, sizeof(*q))) == NULL)
			return MHD_NO;
		q->c = c;
		*req_ctx = q;
		ci = MHD_get_connection_info(c,
		    MHD_CONNECTION_INFO_SOCKET_CONTEXT);
		if (ci != NULL && ci->socket_context != NULL) {
			pthread_mutex_lock(&h->mu);
			((struct hconn *)ci->socket_context)->request = true;
			pthread_mutex_unlock(&h->mu);
		}
		/* a probe arriving is a moment to end what is overdue */
		pthread_mutex_lock(&h->mu);
		resume_locked(h, daqiri_mono_ns());
		pthread_mutex_unlock(&h->mu);
		/* a body announced over the bound is refused before it is
		 * read (MHD then closes the connection) */
		cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
		    MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl != NULL && strtoull(cl, NULL, 10) > HTTP_BODY_MAX)
			return respond(h, c, HC_413, "text/plain", big,
			    sizeof(big) - 1);
		return MHD_YES;
	}
	if (*upload_size != 0) {
		/* a body is read and ignored, up to a bound: one sent in
		 * chunks past it ends the connection */
		q->body += *upload_size;
		*upload_size = 0;
		return q->body > HTTP_BODY_MAX ? MHD_NO : MHD_YES;
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return respond(h, c, HC_405, "text/plain",
		    "only GET and HEAD\n", 18);
	if (strcmp(url, "/metrics") == 0)
		return metrics(h, c, q);
	if (strcmp(url, "/healthz") == 0)
		return healthz(h, c);
	return respond(h, c, HC_404, "text/plain", nf, sizeof(nf) - 1);
}

/* The request is over (answered or not): its state goes. */
static void
on_completed(void *cls, struct MHD_Connection *c, void **req_ctx,
	     enum MHD_RequestTerminationCode why)
{
	struct http *h = cls;
	struct hreq *q = *req_ctx;
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
	    MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	(void)why;
	pthread_mutex_lock(&h->mu);
	/* a kept-alive connection's next request has its own deadline,
	 * from now */
	if (ci != NULL && ci->socket_context != NULL) {
		struct hconn *k = ci->socket_context;

		k->request = false;
		k->start_ns = daqiri_mono_ns();
	}
	if (q == NULL) {
		pthread_mutex_unlock(&h->mu);
		return;
	}
	if (q->waiting) {
		struct hreq **pp = &h->waiting;

		while (*pp != NULL && *pp != q)
			pp = &(*pp)->next;
		if (*pp != NULL)
			*pp = q->next;
	}
	pthread_mutex_unlock(&h->mu);
	free(q);
	*req_ctx = NULL;
}

/* --- the main thread's side ------------------------------------------------ */

int
http_init(struct http **out, const struct http_opts *o, char *err,
	  size_t errlen)
{
	struct http *h = calloc(1, sizeof(*h));
	int rc;

	*out = NULL;
	if (h == NULL)
		return -ENOMEM;
	h->o = *o;
	h->lfd = h->efd = -1;
	pthread_mutex_init(&h->mu, NULL);
	/* the main loop's first tick is DAEMON_TICK_MS away: from now */
	atomic_init(&h->main_beat_ns, daqiri_mono_ns());
	h->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (h->efd < 0) {
		rc = -errno;
		snprintf(err, errlen, "metrics endpoint: eventfd: %s",
		    strerror(-rc));
		http_fini(h);
		return rc;
	}
	h->lfd = bind_listen(h, err, errlen);
	if (h->lfd < 0) {
		rc = h->lfd;
		http_fini(h);
		return rc;
	}
	/* The thread inherits the caller's signal mask (TERM, INT and HUP
	 * blocked; they are the main loop's). */
	h->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
	    MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME, 0,
	    on_accept, h, on_request, h,
	    MHD_OPTION_EXTERNAL_LOGGER, on_log, h,
	    MHD_OPTION_LISTEN_SOCKET, h->lfd,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)(HTTP_MAX_CONNECTIONS + 8),
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_TIMEOUT_S,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_MEMORY_LIMIT,
	    MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)HTTP_BACKLOG,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
	    MHD_OPTION_END);
	if (h->mhd == NULL) {
		snprintf(err, errlen, "daemon.metrics_listen '%s': libmicrohttpd "
		    "%s did not start", o->listen, MHD_get_version());
		http_fini(h);
		return -EIO;
	}
	log_info("metrics endpoint on %s (/metrics, /healthz)", o->listen);
	*out = h;
	return 0;
}

int
http_fd(const struct http *h)
{
	return h->efd;
}

void
http_serve(struct http *h, int (*build)(void *ctx, char **text,
    size_t *len), void *ctx)
{
	uint64_t n, want;
	char *text = NULL;
	size_t len = 0;

	(void)!read(h->efd, &n, sizeof(n));
	pthread_mutex_lock(&h->mu);
	want = h->want;
	pthread_mutex_unlock(&h->mu);
	/* built without the lock: the server thread never waits on it for
	 * longer than a copy */
	if (build(ctx, &text, &len) != 0) {
		log_warnx("metrics endpoint: no memory for the text");
		text = NULL;
	}
	pthread_mutex_lock(&h->mu);
	free(h->text);
	h->text = text;
	h->len = len;
	h->done = want;
	h->built_ns = daqiri_mono_ns();
	resume_locked(h, h->built_ns);
	pthread_mutex_unlock(&h->mu);
}

void
http_tick(struct http *h)
{
	uint64_t now = daqiri_mono_ns();

	atomic_store_explicit(&h->main_beat_ns, now, memory_order_relaxed);
	pthread_mutex_lock(&h->mu);
	sweep_locked(h, now);
	resume_locked(h, now);
	pthread_mutex_unlock(&h->mu);
}

int
http_counters_json(const struct http *h, cJSON *o)
{
	struct http *m = (struct http *)h;
	cJSON *r;
	char k[8];

	if (cJSON_AddNumberToObject(o, "accepted",
		(double)atomic_load(&m->accepted)) == NULL ||
	    cJSON_AddNumberToObject(o, "rejected",
		(double)atomic_load(&m->rejected)) == NULL ||
	    cJSON_AddNumberToObject(o, "current",
		(double)atomic_load(&m->current)) == NULL ||
	    cJSON_AddNumberToObject(o, "incomplete",
		(double)atomic_load(&m->incomplete)) == NULL ||
	    cJSON_AddNumberToObject(o, "timeouts",
		(double)atomic_load(&m->timeouts)) == NULL ||
	    cJSON_AddNumberToObject(o, "deadline",
		(double)atomic_load(&m->deadline)) == NULL ||
	    cJSON_AddNumberToObject(o, "evicted",
		(double)atomic_load(&m->evicted)) == NULL ||
	    cJSON_AddNumberToObject(o, "metrics_cached",
		(double)atomic_load(&m->cached)) == NULL ||
	    (r = cJSON_AddObjectToObject(o, "responses")) == NULL)
		return -ENOMEM;
	for (int i = 0; i < HC_MAX; i++) {
		snprintf(k, sizeof(k), "%u", http_codes[i]);
		if (cJSON_AddNumberToObject(r, k,
		    (double)atomic_load(&m->responses[i])) == NULL)
			return -ENOMEM;
	}
	return 0;
}

const char *
http_library_version(void)
{
	return MHD_get_version();
}

void
http_fini(struct http *h)
{
	struct stat st;

	if (h == NULL)
		return;
	/* A request waiting for the main loop gives up now (MHD stops
	 * only with every connection resumed). */
	pthread_mutex_lock(&h->mu);
	h->stopping = true;
	resume_locked(h, daqiri_mono_ns());
	pthread_mutex_unlock(&h->mu);
	if (h->mhd != NULL)
		MHD_stop_daemon(h->mhd);
	if (h->lfd >= 0)
		close(h->lfd);
	if (h->unix_path[0] != '\0' && lstat(h->unix_path, &st) == 0 &&
	    st.st_dev == h->path_dev && st.st_ino == h->path_ino)
		unlink(h->unix_path);
	if (h->efd >= 0)
		close(h->efd);
	free(h->text);
	pthread_mutex_destroy(&h->mu);
	free(h);
}
