/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bad-consumer: consumers that misbehave, for the system tests. --hold
 * takes tensors and never releases them; --garbage KIND takes one tensor
 * and then writes into its shared ring what no library would (an index
 * out of range, a buffer it does not hold, impossible positions) and
 * reports whether and how the daemon cut it off.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daqiri_client.h"
#include "ring.h"

#define BC_SLICE_MS		100	/* daqiri_next waits (signals) */
#define BC_FIRST_WAIT_MS	20000	/* for the first tensor */
#define BC_CUTOFF_WAIT_MS	10000	/* for the daemon to cut us off */
#define BC_MAPS_LINE		512

static volatile sig_atomic_t bc_stop;

static void
bc_on_signal(int sig)
{
	(void)sig;
	bc_stop = 1;
}

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static const char *
end_name(int r)
{
	switch (r) {
	case -ENOTCONN:		return "ENOTCONN";
	case -ESHUTDOWN:	return "ESHUTDOWN";
	case -EPROTO:		return "EPROTO";
	default:		return strerror(-r);
	}
}

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: bad-consumer [-s SOCKET] [--max-held N] "
	    "[--group G] --hold STREAM\n"
	    "       bad-consumer [-s SOCKET] --garbage "
	    "range|notheld|double|positions|comp STREAM\n");
	exit(1);
}

/*
 * The ring pair as this process mapped it: the library maps the daemon's
 * "daqiri-ring" memfd shared and read-write, and that mapping is what a
 * hostile consumer can scribble on.
 */
static struct daqiri_ring_shm *
find_ring(void)
{
	char line[BC_MAPS_LINE];
	struct daqiri_ring_shm *shm = NULL;
	FILE *f = fopen("/proc/self/maps", "re");
	uintptr_t lo, hi;
	char perms[8];

	if (f == NULL)
		return NULL;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strstr(line, "memfd:daqiri-ring") == NULL ||
		    sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s", &lo, &hi,
		    perms) != 3 || strncmp(perms, "rw", 2) != 0)
			continue;
		shm = (struct daqiri_ring_shm *)lo;
		break;
	}
	fclose(f);
	if (shm != NULL && shm->magic != DAQIRI_RING_MAGIC)
		shm = NULL;
	return shm;
}

/* Put n indexes into the release ring as the consumer side would,
 * unchecked, and publish them with one store: the daemon sees all or
 * none of them. */
static void
raw_release(struct daqiri_ring_shm *shm, const uint32_t *idx, uint32_t n)
{
	uint32_t *rel = (uint32_t *)(void *)((uint8_t *)shm + shm->rel_off);
	uint32_t head = atomic_load_explicit(&shm->rel_head,
	    memory_order_relaxed);

	for (uint32_t i = 0; i < n; i++)
		rel[(head + i) & (shm->depth - 1)] = idx[i];
	atomic_store_explicit(&shm->rel_head, head + n, memory_order_release);
}

static unsigned long long
realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull +
	    (unsigned long long)ts.tv_nsec;
}

static int
do_hold(struct daqiri_sub *sub)
{
	unsigned got = 0;
	int r;

	for (;;) {
		struct daqiri_tensor t = { .size = sizeof(t) };

		if (bc_stop) {
			r = -EINTR;
			break;
		}
		r = daqiri_next(sub, &t, BC_SLICE_MS);
		if (r == 0 || r == -EINTR)
			continue;
		if (r < 0)
			break;
		got++;
		printf("held got=%u seq=%llu buf=%u\n", got,
		    (unsigned long long)t.seq, t.buf_index);
		fflush(stdout);
	}
	printf("hold got=%u end=%s end_ns=%llu\n", got, r == -EINTR ?
	    "signal" : end_name(r), realtime_ns());
	fflush(stdout);
	return 0;
}

static int
do_garbage(struct daqiri *d, struct daqiri_sub *sub, const char *kind)
{
	struct daqiri_tensor t = { .size = sizeof(t) };
	struct daqiri_ring_shm *shm;
	uint64_t t0;
	int r;

	r = daqiri_next(sub, &t, BC_FIRST_WAIT_MS);
	if (r != 1) {
		printf("garbage %s: no tensor (%s)\n", kind,
		    r == 0 ? "timeout" : end_name(r));
		return 1;
	}
	if ((shm = find_ring()) == NULL) {
		printf("garbage %s: ring mapping not found\n", kind);
		return 1;
	}
	if (strcmp(kind, "range") == 0) {
		/* the first index past the stream's buffers */
		uint32_t x = shm->nbufs;

		raw_release(shm, &x, 1);
	} else if (strcmp(kind, "notheld") == 0) {
		/* max_held is 1: the next buffer was never given to us */
		uint32_t x = (t.buf_index + 1) % shm->nbufs;

		raw_release(shm, &x, 1);
	} else if (strcmp(kind, "double") == 0) {
		/* Both at once: released apart, the buffer could come back
		 * to us in between and the second release would be valid. */
		uint32_t x[2] = { t.buf_index, t.buf_index };

		raw_release(shm, x, 2);
	} else if (strcmp(kind, "positions") == 0) {
		/* one behind the daemon's tail: 2^32 - 1 entries ahead */
		atomic_store_explicit(&shm->rel_head, atomic_load_explicit(
		    &shm->rel_tail, memory_order_relaxed) - 1,
		    memory_order_release);
	} else if (strcmp(kind, "comp") == 0) {
		/* Claim to have read descriptors the daemon never wrote, then
		 * give the tensor back properly so that the daemon publishes
		 * to us again (and finds the claim). */
		atomic_store_explicit(&shm->comp_tail, atomic_load_explicit(
		    &shm->comp_head, memory_order_relaxed) + 3,
		    memory_order_release);
		if ((r = daqiri_release(sub, &t)) < 0) {
			printf("garbage comp: release: %s\n", strerror(-r));
			return 1;
		}
	} else {
		usage();
	}
	printf("garbage %s written (held buf %u of %u)\n", kind, t.buf_index,
	    shm->nbufs);
	fflush(stdout);

	/* Whatever still comes is not released: only the cut-off counts. */
	t0 = mono_ms();
	while (mono_ms() - t0 < BC_CUTOFF_WAIT_MS && !bc_stop) {
		struct daqiri_tensor x = { .size = sizeof(x) };

		r = daqiri_next(sub, &x, BC_SLICE_MS);
		if (r == -ESHUTDOWN || r == -ENOTCONN) {
			printf("cut off end=%s after_ms=%llu why=%s\n",
			    end_name(r), (unsigned long long)(mono_ms() - t0),
			    daqiri_last_error(d));
			fflush(stdout);
			return 0;
		}
		if (r < 0 && r != -EINTR) {
			printf("garbage %s: unexpected %s\n", kind,
			    end_name(r));
			return 1;
		}
	}
	printf("not cut off within %d ms\n", BC_CUTOFF_WAIT_MS);
	return 1;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "max-held", required_argument, NULL, 'm' },
		{ "group", required_argument, NULL, 'G' },
		{ "hold", no_argument, NULL, 'H' },
		{ "garbage", required_argument, NULL, 'g' },
		{ NULL, 0, NULL, 0 },
	};
	struct daqiri_sub_opts o = { .size = sizeof(o) };
	struct daqiri_stream_info info = { .size = sizeof(info) };
	const char *sock = NULL, *garbage = NULL;
	struct sigaction sa;
	struct daqiri_sub *sub;
	struct daqiri *d;
	int ch, r, hold = 0;

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
		case 'H':
			hold = 1;
			break;
		case 'g':
			garbage = optarg;
			break;
		default:
			usage();
		}
	}
	if (optind + 1 != argc || hold == (garbage != NULL))
		usage();
	if (garbage != NULL)
		o.max_held = 1;	/* so exactly one buffer is ours */

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = bc_on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	if ((r = daqiri_connect(sock, &d)) < 0) {
		fprintf(stderr, "bad-consumer: connect: %s\n", strerror(-r));
		return 1;
	}
	if ((r = daqiri_subscribe(d, argv[optind], &o, &sub)) < 0) {
		fprintf(stderr, "bad-consumer: subscribe: %s: %s\n",
		    strerror(-r), daqiri_last_error(d));
		return 1;
	}
	daqiri_sub_info(sub, &info);
	printf("subscribed sub=%u nbufs=%u max_held=%u\n", info.sub_id,
	    info.nbufs, info.max_held);
	fflush(stdout);
	r = hold ? do_hold(sub) : do_garbage(d, sub, garbage);
	daqiri_unsubscribe(sub);
	daqiri_disconnect(d);
	return r;
}
