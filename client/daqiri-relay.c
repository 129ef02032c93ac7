/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daqiri-relay: serves the local daemon's streams to consumers on other
 * machines over UCX (daqiri_connect("ucx://HOST:PORT") on their side;
 * client/relay_wire.h is the protocol). A separate, unprivileged
 * consumer process: each remote consumer is one local connection to
 * daqirid, so the daemon accounts for it like any other. This file: the
 * options, logging, signals and the one-thread epoll loop; relay.h names
 * the rest.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "relay.h"

#define RELAY_EPOLL_EVENTS	64

int relay_verbosity = RLOG_INFO;

void
relay_log(enum relay_log_level lvl, const char *fmt, ...)
{
	int saved = errno;
	char line[1024];
	va_list ap;

	if ((int)lvl > relay_verbosity)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s\n", RELAY_PROG, line);
	errno = saved;
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: %s [-s SOCKET] [--listen ucx://ADDR[:PORT]] "
	    "[--allow STREAM]...\n"
	    "       [--secret-file FILE] [--metrics ADDR:PORT] "
	    "[--max-peers N] [-v]\n"
	    "  -s, --socket PATH     the daemon's socket (default $%s or "
	    "%s)\n"
	    "  -l, --listen URL      where remote consumers connect "
	    "(default ucx://%s:%d)\n"
	    "  -a, --allow PATTERN   serve only streams matching it "
	    "(fnmatch on <interface>/<stream>; repeatable)\n"
	    "  -k, --secret-file F   require the shared secret of F "
	    "(mode 600)\n"
	    "  -m, --metrics A:P     serve /metrics and /stats over HTTP "
	    "on A:P\n"
	    "  -p, --max-peers N     remote consumers at once (default %d)\n"
	    "  -v, --verbose         log each peer's details\n"
	    "  -h, --help            this text\n"
	    "SIGUSR1 logs a line per peer and subscription. "
	    "See daqiri-relay(8).\n",
	    RELAY_PROG, DAQIRI_SOCKET_ENV, DAQIRI_DEFAULT_SOCKET,
	    RELAY_DEFAULT_HOST, RELAY_DEFAULT_PORT, RELAY_MAX_PEERS_DEFAULT);
}

static int
parse_opts(int argc, char **argv, struct relay_opts *o)
{
	static const struct option lo[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "listen", required_argument, NULL, 'l' },
		{ "allow", required_argument, NULL, 'a' },
		{ "secret-file", required_argument, NULL, 'k' },
		{ "metrics", required_argument, NULL, 'm' },
		{ "max-peers", required_argument, NULL, 'p' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char err[512], *end;
	unsigned long v;
	int c, r;

	memset(o, 0, sizeof(*o));
	snprintf(o->host, sizeof(o->host), "%s", RELAY_DEFAULT_HOST);
	o->port = RELAY_DEFAULT_PORT;
	o->max_peers = RELAY_MAX_PEERS_DEFAULT;
	while ((c = getopt_long(argc, argv, "s:l:a:k:m:p:vh", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			o->sock = optarg;
			break;
		case 'l':
			r = relay_url_parse(optarg, o->host, sizeof(o->host),
			    &o->port);
			if (r <= 0) {
				relay_log(RLOG_WARN, "--listen '%s': give "
				    "ucx://ADDR[:PORT] (ADDR an address of "
				    "this host, [v6] in brackets)", optarg);
				return -1;
			}
			break;
		case 'a':
			if (o->nallow == RELAY_ALLOW_MAX) {
				relay_log(RLOG_WARN, "--allow: at most %d "
				    "patterns", RELAY_ALLOW_MAX);
				return -1;
			}
			o->allow[o->nallow++] = optarg;
			break;
		case 'k':
			if (relay_secret_load(optarg, o->secret,
			    &o->secret_len, err, sizeof(err)) < 0) {
				relay_log(RLOG_WARN, "%s", err);
				return -1;
			}
			o->has_secret = true;
			break;
		case 'm':
			o->metrics = optarg;
			break;
		case 'p':
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || v < 1 ||
			    v > RELAY_MAX_PEERS_MAX) {
				relay_log(RLOG_WARN, "--max-peers '%s': give "
				    "1 to %d", optarg, RELAY_MAX_PEERS_MAX);
				return -1;
			}
			o->max_peers = (unsigned)v;
			break;
		case 'v':
			relay_verbosity = RLOG_DEBUG;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		relay_log(RLOG_WARN, "unexpected argument '%s'", argv[optind]);
		usage(stderr);
		return -1;
	}
	return 0;
}

/* The daemon answers now (a relay that cannot reach it says why at
 * start, not at the first remote subscribe). Not fatal: it may start
 * later, and each peer connects on its own. */
static void
probe_daemon(const struct relay_opts *o)
{
	struct daqiri *d = NULL;
	char hint[512];
	int r = daqiri_connect(o->sock, &d);

	if (r < 0) {
		relay_log(RLOG_WARN, "the daemon is not reachable yet: %s",
		    daqiri_connect_hint(r, o->sock, hint, sizeof(hint)));
		return;
	}
	daqiri_disconnect(d);
}

static int
signals_init(struct relay *r, struct relay_watch *w)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = w };
	sigset_t set;
	int fd;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0 ||
	    (fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		relay_log(RLOG_WARN, "signalfd: %s", strerror(errno));
		return -1;
	}
	w->kind = RW_SIGNAL;
	w->fd = fd;
	if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		relay_log(RLOG_WARN, "epoll: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* 1: stop. */
static int
signals_read(struct relay *r, int fd)
{
	struct signalfd_siginfo si;

	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGUSR1) {
			relay_stats_log(r);
			continue;
		}
		relay_log(RLOG_INFO, "%s from pid %u: stopping",
		    si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM", si.ssi_pid);
		return 1;
	}
	return 0;
}

static int
min_wait(int a, int b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

static int
relay_loop(struct relay *r)
{
	struct epoll_event ev[RELAY_EPOLL_EVENTS];
	int n, i, wait, http_wait = -1;
	ucs_status_t st;

	for (;;) {
		while (ucp_worker_progress(r->worker) != 0)
			;
		wait = relay_peers_service(r);
		wait = min_wait(wait, relay_subs_pump(r));
		/* Sends and closes may have completed, or control replies
		 * queued: progress once more before sleeping. */
		if (ucp_worker_progress(r->worker) != 0)
			continue;
		if (r->npending > 0)
			continue;
		st = ucp_worker_arm(r->worker);
		if (st == UCS_ERR_BUSY)
			continue;
		if (st != UCS_OK) {
			relay_log(RLOG_WARN, "UCX worker arm: %s",
			    ucs_status_string(st));
			wait = min_wait(wait, 10);
		}
		n = epoll_wait(r->epfd, ev, RELAY_EPOLL_EVENTS,
		    min_wait(wait, http_wait));
		if (n < 0 && errno != EINTR) {
			relay_log(RLOG_WARN, "epoll_wait: %s", strerror(errno));
			return -1;
		}
		if (r->stats != NULL)
			http_wait = relay_stats_run(r);
		for (i = 0; i < n; i++) {
			struct relay_watch *w = ev[i].data.ptr;

			if (w->kind == RW_SIGNAL && signals_read(r, w->fd))
				return 0;
			/* UCX, HTTP (run above), local subs: the next turn
			 * of the loop serves them */
		}
	}
}

int
main(int argc, char **argv)
{
	static struct relay_opts o;
	struct relay r;
	struct relay_watch sigw = { .fd = -1 };
	int rc = 1, i;

	memset(&r, 0, sizeof(r));
	r.epfd = -1;
	if (parse_opts(argc, argv, &o) < 0)
		return 1;
	if (o.sock == NULL)
		o.sock = getenv(DAQIRI_SOCKET_ENV);
	r.o = &o;
	if (getrandom(&r.instance, sizeof(r.instance), 0) !=
	    (ssize_t)sizeof(r.instance)) {
		relay_log(RLOG_WARN, "getrandom: %s", strerror(errno));
		return 1;
	}
	r.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (r.epfd < 0) {
		relay_log(RLOG_WARN, "epoll_create1: %s", strerror(errno));
		return 1;
	}
	if (o.nallow == 0)
		relay_log(RLOG_INFO, "no --allow: every stream of the daemon "
		    "is served");
	else
		for (i = 0; i < o.nallow; i++)
			relay_log(RLOG_DEBUG, "serving streams matching '%s'",
			    o.allow[i]);
	if (signals_init(&r, &sigw) < 0 || relay_ucx_init(&r) < 0 ||
	    relay_stats_init(&r) < 0)
		goto out;
	probe_daemon(&o);
	if (relay_loop(&r) == 0)
		rc = 0;
	relay_peers_close_all(&r);
out:
	relay_stats_fini(&r);
	relay_ucx_fini(&r);
	if (sigw.fd >= 0)
		close(sigw.fd);
	if (r.epfd >= 0)
		close(r.epfd);
	memset(o.secret, 0, sizeof(o.secret));
	return rc;
}
