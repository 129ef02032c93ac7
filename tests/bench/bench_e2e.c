/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_e2e: the client side of the end-to-end benchmark driven by
 * scripts/bench-e2e.sh. It waits for a daemon, prints its stats JSON, and
 * runs a consumer that subscribes to a stream and releases every tensor as
 * soon as it sees it, so the whole chain (receive, place, publish, hand
 * off, reclaim) runs as it would for a real consumer.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daqiri_client.h"

#define E2E_WAIT_DEFAULT_S	10	/* `wait` gives up after this */
#define E2E_WAIT_STEP_MS	20
#define E2E_NEXT_TIMEOUT_MS	200	/* consumer checks for a stop signal */

static volatile sig_atomic_t e2e_stop;

static void
on_signal(int sig)
{
	(void)sig;
	e2e_stop = 1;
}

static void __attribute__((noreturn))
usage(int rc)
{
	fprintf(rc ? stderr : stdout,
	    "usage: bench_e2e [-s SOCKET] wait [SECONDS]\n"
	    "       bench_e2e [-s SOCKET] stats\n"
	    "       bench_e2e [-s SOCKET] consume STREAM [--busy] "
	    "[--max-held N]\n"
	    "wait: until the daemon answers a streams request (exit 1 on "
	    "timeout).\nstats: print the daemon's stats reply (JSON).\n"
	    "consume: subscribe to STREAM and release every tensor until "
	    "SIGTERM/SIGINT or\nthe daemon goes (--max-held: tensors it may "
	    "hold before it misses some);\nprints 'ready' once subscribed and "
	    "a closing 'consume ...' line.\n");
	exit(rc);
}

static int
cmd_wait(const char *sock, int argc, char **argv)
{
	long secs = argc > 0 ? strtol(argv[0], NULL, 10) : E2E_WAIT_DEFAULT_S;
	long tries = secs * 1000 / E2E_WAIT_STEP_MS;
	struct timespec ts = { 0, E2E_WAIT_STEP_MS * 1000000L };

	for (long i = 0; i <= tries; i++) {
		struct daqiri *d;
		char *reply = NULL;
		int rc;

		if (daqiri_connect(sock, &d) == 0) {
			rc = daqiri_streams(d, &reply);
			free(reply);
			daqiri_disconnect(d);
			if (rc == 0)
				return 0;
		}
		nanosleep(&ts, NULL);
	}
	fprintf(stderr, "bench_e2e: no daemon answered on %s within %ld s\n",
	    sock ? sock : "(default)", secs);
	return 1;
}

static int
cmd_stats(const char *sock)
{
	struct daqiri *d;
	char *reply = NULL;
	int rc;

	if ((rc = daqiri_connect(sock, &d)) < 0) {
		fprintf(stderr, "bench_e2e: connect: %s\n", strerror(-rc));
		return 1;
	}
	rc = daqiri_request(d, "{\"type\":\"stats\"}", &reply);
	if (reply != NULL)
		printf("%s\n", reply);
	if (rc < 0)
		fprintf(stderr, "bench_e2e: stats: %s %s\n", strerror(-rc),
		    daqiri_last_error(d));
	free(reply);
	daqiri_disconnect(d);
	return rc < 0;
}

static int
cmd_consume(const char *sock, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "busy", no_argument, NULL, 'b' },
		{ "max-held", required_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 }
	};
	struct daqiri_sub_opts so;
	struct daqiri_tensor t;
	struct daqiri_sub *sub;
	struct daqiri *d;
	struct sigaction sa;
	uint64_t n = 0, pkts = 0, gaps = 0, bytes = 0;
	int rc, ch;

	memset(&so, 0, sizeof(so));
	so.size = sizeof(so);
	optind = 0;	/* glibc: start afresh after main()'s getopt */
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'b':
			so.flags |= DAQIRI_SUB_BUSY_POLL;
			break;
		case 'm':
			so.max_held = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		default:
			usage(2);
		}
	}
	if (optind != argc - 1)
		usage(2);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if ((rc = daqiri_connect(sock, &d)) < 0) {
		fprintf(stderr, "bench_e2e: connect: %s\n", strerror(-rc));
		return 1;
	}
	if ((rc = daqiri_subscribe(d, argv[optind], &so, &sub)) < 0) {
		fprintf(stderr, "bench_e2e: subscribe '%s': %s %s\n", argv[optind],
		    strerror(-rc), daqiri_last_error(d));
		daqiri_disconnect(d);
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	memset(&t, 0, sizeof(t));
	t.size = sizeof(t);
	while (!e2e_stop) {
		rc = daqiri_next(sub, &t, E2E_NEXT_TIMEOUT_MS);
		if (rc == 0 || rc == -EINTR)
			continue;
		if (rc < 0)
			break;
		n++;
		pkts += t.packets_received;
		bytes += t.bytes;
		gaps += (t.flags & DAQIRI_TENSOR_HAS_GAPS) != 0;
		if ((rc = daqiri_release(sub, &t)) < 0)
			break;
	}
	printf("consume tensors=%llu packets=%llu bytes=%llu with_gaps=%llu "
	    "end=%s\n", (unsigned long long)n, (unsigned long long)pkts,
	    (unsigned long long)bytes, (unsigned long long)gaps,
	    rc < 0 ? strerror(-rc) : "signal");
	daqiri_unsubscribe(sub);
	daqiri_disconnect(d);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *sock = NULL;
	int ch;

	while ((ch = getopt(argc, argv, "+s:h")) != -1) {
		switch (ch) {
		case 's':
			sock = optarg;
			break;
		case 'h':
			usage(0);
		default:
			usage(2);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage(2);
	if (strcmp(argv[0], "wait") == 0)
		return cmd_wait(sock, argc - 1, argv + 1);
	if (strcmp(argv[0], "stats") == 0)
		return cmd_stats(sock);
	if (strcmp(argv[0], "consume") == 0)
		return cmd_consume(sock, argc, argv);
	usage(2);
}
