/* SPDX-License-Identifier: Apache-2.0 */
/*
 * good-consumer: a well-behaved consumer for the system tests. It
 * subscribes, checks every tensor's descriptor (sequence numbers without
 * holes, presence bitmap agreeing with the packet count and the flags)
 * and releases it at once; at SIGTERM, or when the daemon goes away, it
 * prints one summary line the tests read, with its own histogram of the
 * descriptors' assembly times (publish - first packet, the daemon's
 * buckets) to hold the daemon's assembly_ns against.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daqiri_client.h"
#include "histogram.h"

#define GC_BUSY_SLICE_MS	100	/* busy-poll wait slices */
#define GC_EXIT_BAD		3	/* a tensor broke a rule */

static volatile sig_atomic_t gc_stop;

static void
gc_on_signal(int sig)
{
	(void)sig;
	gc_stop = 1;
}

static unsigned long long
realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull +
	    (unsigned long long)ts.tv_nsec;
}

static const char *
end_name(int r)
{
	switch (r) {
	case -ENOTCONN:		return "ENOTCONN";
	case -ESHUTDOWN:	return "ESHUTDOWN";
	case -EPROTO:		return "EPROTO";
	case -EINTR:		return "signal";
	default:		return strerror(-r);
	}
}

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: good-consumer [-s SOCKET] [--max-held N] "
	    "[--group G] [--depth N] [--busy-poll] STREAM\n");
	exit(1);
}

struct gc_totals {
	unsigned long long got, missed, bad, complete, timeout, evicted,
	    flush, missing_slots;
	long long first, last;
	struct daqiri_hist assembly;
};

/* Check one tensor against the descriptor rules; count what it is. */
static void
gc_check(struct gc_totals *c, const struct daqiri_tensor *t)
{
	uint32_t present = 0;
	bool full;

	for (uint32_t s = 0; s < t->bitmap_bits; s++)
		present += (uint32_t)(t->bitmap[s / 64] >> (s % 64)) & 1u;
	full = t->packets_received == t->packets_expected;
	if (present != t->packets_received ||
	    t->packets_expected != t->bitmap_bits ||
	    t->packets_received > t->packets_expected ||
	    full != ((t->flags & DAQIRI_TENSOR_COMPLETE) != 0) ||
	    full == ((t->flags & DAQIRI_TENSOR_HAS_GAPS) != 0)) {
		fprintf(stderr, "good-consumer: seq %llu: bitmap has %u, "
		    "descriptor says %u of %u, flags 0x%x\n",
		    (unsigned long long)t->seq, present, t->packets_received,
		    t->packets_expected, t->flags);
		c->bad++;
	}
	if (c->got > 0 && (long long)t->seq <= c->last) {
		fprintf(stderr, "good-consumer: seq %llu after %lld\n",
		    (unsigned long long)t->seq, c->last);
		c->bad++;
	} else if (c->got > 0)
		c->missed += t->seq - (unsigned long long)c->last - 1;
	if (c->got == 0)
		c->first = (long long)t->seq;
	c->last = (long long)t->seq;
	c->got++;
	c->complete += (t->flags & DAQIRI_TENSOR_COMPLETE) != 0;
	c->timeout += (t->flags & DAQIRI_TENSOR_TIMEOUT) != 0;
	c->evicted += (t->flags & DAQIRI_TENSOR_EVICTED) != 0;
	c->flush += (t->flags & DAQIRI_TENSOR_FLUSH) != 0;
	c->missing_slots += t->packets_expected - t->packets_received;
	daqiri_hist_add(&c->assembly, t->publish_ns > t->first_rx_ns ?
	    t->publish_ns - t->first_rx_ns : 0);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "max-held", required_argument, NULL, 'm' },
		{ "group", required_argument, NULL, 'G' },
		{ "depth", required_argument, NULL, 'd' },
		{ "busy-poll", no_argument, NULL, 'b' },
		{ NULL, 0, NULL, 0 },
	};
	struct daqiri_sub_opts o = { .size = sizeof(o) };
	struct daqiri_stream_info info = { .size = sizeof(info) };
	struct gc_totals c = { .first = -1, .last = -1 };
	const char *sock = NULL;
	struct sigaction sa;
	struct daqiri_sub *sub;
	struct daqiri *d;
	int ch, r;

	while ((ch = getopt_long(argc, argv, "s:", longopts, NULL)) != -1) {
		switch (ch) {
		case 's':
			sock = optarg;
			break;
		case 'm':
			o.max_held = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'G':
			o.mode = DAQIRI_SUB_SHARED;
			o.group = optarg;
			break;
		case 'd':
			o.depth = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'b':
			o.flags |= DAQIRI_SUB_BUSY_POLL;
			break;
		default:
			usage();
		}
	}
	if (optind + 1 != argc)
		usage();

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = gc_on_signal;	/* no SA_RESTART: EINTR */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	if ((r = daqiri_connect(sock, &d)) < 0) {
		fprintf(stderr, "good-consumer: connect: %s\n", strerror(-r));
		return 1;
	}
	if ((r = daqiri_subscribe(d, argv[optind], &o, &sub)) < 0) {
		fprintf(stderr, "good-consumer: subscribe: %s: %s\n",
		    strerror(-r), daqiri_last_error(d));
		return 1;
	}
	daqiri_sub_info(sub, &info);
	printf("subscribed sub=%u nbufs=%u ppb=%u max_held=%u depth=%u\n",
	    info.sub_id, info.nbufs, info.ppb, info.max_held, info.ring_depth);
	fflush(stdout);

	for (;;) {
		struct daqiri_tensor t = { .size = sizeof(t) };

		if (gc_stop) {
			/* Take what is already published, then stop. */
			while ((r = daqiri_next(sub, &t, 0)) == 1) {
				gc_check(&c, &t);
				daqiri_release(sub, &t);
			}
			r = -EINTR;
			break;
		}
		r = daqiri_next(sub, &t, (o.flags & DAQIRI_SUB_BUSY_POLL) ?
		    GC_BUSY_SLICE_MS : -1);
		if (r == 0 || r == -EINTR)
			continue;
		if (r < 0)
			break;
		gc_check(&c, &t);
		if ((r = daqiri_release(sub, &t)) < 0) {
			fprintf(stderr, "good-consumer: release: %s\n",
			    strerror(-r));
			c.bad++;
		}
	}
	printf("consumer got=%llu first=%lld last=%lld missed=%llu bad=%llu "
	    "complete=%llu timeout=%llu evicted=%llu flush=%llu "
	    "missing_slots=%llu end=%s end_ns=%llu\n", c.got, c.first, c.last,
	    c.missed, c.bad, c.complete, c.timeout, c.evicted, c.flush,
	    c.missing_slots, end_name(r), realtime_ns());
	printf("consumer assembly=");
	for (unsigned i = 0; i < DAQIRI_HIST_NBUCKETS; i++)
		printf("%s%llu", i ? "," : "",
		    (unsigned long long)c.assembly.buckets[i]);
	printf(" assembly_sum_ns=%llu\n",
	    (unsigned long long)c.assembly.sum_ns);
	fflush(stdout);
	daqiri_unsubscribe(sub);
	daqiri_disconnect(d);
	return c.bad > 0 ? GC_EXIT_BAD : 0;
}
