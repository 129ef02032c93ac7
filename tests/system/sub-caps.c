/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sub-caps: one connection that subscribes to a stream again and again,
 * for the admission tests. Prints one "subscribed" line per subscription
 * it got and one "refused" line with the daemon's reason for the first
 * it did not. With --hold it then takes tensors on its first
 * subscription, never releases them, and prints how that subscription
 * ended and why.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daqiri_client.h"

#define SC_MAX_SUBS		64	/* subscriptions it tries at most */
#define SC_SLICE_MS		100	/* daqiri_next waits (signals) */

static volatile sig_atomic_t sc_stop;

static void
sc_on_signal(int sig)
{
	(void)sig;
	sc_stop = 1;
}

static const char *
end_name(int r)
{
	switch (r) {
	case -ENOTCONN:		return "ENOTCONN";
	case -ESHUTDOWN:	return "ESHUTDOWN";
	case -EUSERS:		return "EUSERS";
	case -ENOBUFS:		return "ENOBUFS";
	default:		return strerror(-r);
	}
}

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: sub-caps [-s SOCKET] [-n COUNT] [--max-held N] "
	    "[--hold] STREAM\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "max-held", required_argument, NULL, 'm' },
		{ "hold", no_argument, NULL, 'H' },
		{ NULL, 0, NULL, 0 },
	};
	struct daqiri_sub_opts o = { .size = sizeof(o) };
	struct daqiri_sub *subs[SC_MAX_SUBS];
	const char *sock = NULL;
	struct daqiri *d;
	int ch, r, n = SC_MAX_SUBS, nsubs = 0, hold = 0;
	unsigned got = 0;

	while ((ch = getopt_long(argc, argv, "s:n:", lo, NULL)) != -1) {
		switch (ch) {
		case 's':
			sock = optarg;
			break;
		case 'n':
			n = atoi(optarg);
			if (n < 1 || n > SC_MAX_SUBS)
				usage();
			break;
		case 'm':
			o.max_held = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'H':
			hold = 1;
			break;
		default:
			usage();
		}
	}
	if (optind + 1 != argc)
		usage();
	signal(SIGTERM, sc_on_signal);
	signal(SIGINT, sc_on_signal);
	if ((r = daqiri_connect(sock, &d)) < 0) {
		fprintf(stderr, "sub-caps: connect: %s\n", strerror(-r));
		return 1;
	}
	for (int k = 0; k < n; k++) {
		struct daqiri_stream_info info = { .size = sizeof(info) };

		r = daqiri_subscribe(d, argv[optind], &o, &subs[nsubs]);
		if (r < 0) {
			printf("refused k=%d err=%s msg=%s\n", k, end_name(r),
			    daqiri_last_error(d));
			break;
		}
		daqiri_sub_info(subs[nsubs], &info);
		printf("subscribed k=%d sub=%u max_held=%u\n", k, info.sub_id,
		    info.max_held);
		nsubs++;
	}
	printf("subscriptions n=%d\n", nsubs);
	fflush(stdout);
	while (hold && nsubs > 0) {
		struct daqiri_tensor t = { .size = sizeof(t) };

		if (sc_stop) {
			r = -EINTR;
			break;
		}
		r = daqiri_next(subs[0], &t, SC_SLICE_MS);
		if (r == 0 || r == -EINTR)
			continue;
		if (r < 0)
			break;
		printf("held got=%u buf=%u\n", ++got, t.buf_index);
		fflush(stdout);
	}
	if (hold)
		printf("ended got=%u end=%s why=%s\n", got,
		    r == -EINTR ? "signal" : end_name(r), daqiri_last_error(d));
	fflush(stdout);
	/* Keep the subscriptions open until told to stop. */
	while (!hold && !sc_stop) {
		struct timespec ts = { 0, SC_SLICE_MS * 1000000L };

		nanosleep(&ts, NULL);
	}
	daqiri_disconnect(d);
	return 0;
}
