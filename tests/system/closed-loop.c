/* SPDX-License-Identifier: Apache-2.0 */
/*
 * closed-loop: the C consumer of a closed loop, and the sender of the
 * transmit benchmark. "loop" subscribes to a stream and, for every
 * tensor, computes a decision from it (an automatic gain: target / the
 * mean absolute value of slot 0's samples), sends it back to the
 * instrument as a control packet (scripts/daqiri_control.h) through a
 * TX channel of the daemon and releases the tensor; daqiri-sim --control
 * checks that every decision arrived, in order, and measures the loop.
 * "flood" only sends: N payloads of B bytes as fast as the channel takes
 * them, for scripts/bench-tx.sh. Each ends with one summary line.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "daqiri_client.h"
#include "daqiri_control.h"
#include "desc.h"
#include "../tool.h"

#define CL_WAIT_MS		1000	/* one wait slice */
#define CL_NEXT_TIMEOUT_MS	30000	/* no tensor this long: give up */
#define CL_FLUSH_MS		10000
#define CL_MAX_BATCH		256
#define CL_DEFAULT_TARGET	4.0

static volatile sig_atomic_t cl_stop;

static void
on_signal(int sig)
{
	(void)sig;
	cl_stop = 1;
}

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr,
	    "usage: closed-loop [-s SOCK] loop STREAM TXQUEUE [--count N] "
	    "[--max-held H]\n"
	    "                   [--target T] [--lossless]\n"
	    "       closed-loop [-s SOCK] flood TXQUEUE [--bytes B] "
	    "[--count N] [--batch M]\n"
	    "                   [--nbufs K]\n");
	exit(2);
}

/* A number option, checked (tool.h). */
static uint64_t
num(const char *opt, const char *s, uint64_t lo, uint64_t hi)
{
	return tool_num("closed-loop", opt, s, lo, hi);
}

/* IEEE half to float, subnormals included. */
static float
half(uint16_t h)
{
	uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
	float v;

	if (e == 0)
		v = ldexpf((float)m, -24);
	else if (e == 31)
		v = m ? NAN : INFINITY;
	else
		v = ldexpf((float)(m | 0x400), (int)e - 25);
	return (h & 0x8000) ? -v : v;
}

/* Sample k of a slot, whatever the stream's output type (raw bytes read
 * as int8, the simulator's pattern); NAN for a type it does not read. */
static double
sample(const struct daqiri_tensor *t, const uint8_t *slot, uint64_t k)
{
	const uint8_t *p = slot + k * t->elem_bytes;
	int16_t i16;
	int32_t i32;
	uint16_t u16;
	float f;

	switch (t->dtype) {
	case DAQIRI_DTYPE_RAW:
	case DAQIRI_DTYPE_INT8:
		return (int8_t)p[0];
	case DAQIRI_DTYPE_INT16:
		memcpy(&i16, p, 2);
		return i16;
	case DAQIRI_DTYPE_INT32:
		memcpy(&i32, p, 4);
		return i32;
	case DAQIRI_DTYPE_FP16:
		memcpy(&u16, p, 2);
		return half(u16);
	case DAQIRI_DTYPE_FP32:
		memcpy(&f, p, 4);
		return f;
	default:
		return NAN;
	}
}

/* The decision: the gain that brings slot 0's mean absolute sample to
 * target, x 1000 (1000 when the slot is silent or unreadable). */
static int32_t
decide(const struct daqiri_tensor *t, double target)
{
	uint64_t n = t->elem_bytes ? t->slot_bytes / t->elem_bytes : 0, k;
	double sum = 0, g;

	if (t->device >= 0 || n == 0)
		return 1000;
	for (k = 0; k < n; k++)
		sum += fabs(sample(t, t->data, k));
	if (!(sum > 0))
		return 1000;
	g = target / (sum / (double)n) * 1000.0;
	return g > INT32_MAX ? INT32_MAX : (int32_t)lround(g);
}

/* A free buffer of the channel, waiting while every one is in flight. */
static int
take_buf(struct daqiri_tx *tx, struct daqiri_tx_buf *b)
{
	int r;

	while ((r = daqiri_tx_buf(tx, b)) == -EAGAIN && !cl_stop) {
		r = daqiri_tx_wait(tx, CL_WAIT_MS);
		if (r < 0 && r != -ETIMEDOUT && r != -EINTR)
			return r;
	}
	return r;
}

static int
open_tx(struct daqiri *d, const char *queue, uint32_t nbufs,
	struct daqiri_tx **tx)
{
	struct daqiri_tx_opts o;
	int r;

	memset(&o, 0, sizeof(o));
	o.size = sizeof(o);
	o.nbufs = nbufs;
	if ((r = daqiri_tx_open(d, queue, &o, tx)) < 0)
		fprintf(stderr, "closed-loop: tx_open %s: %s (%s)\n", queue,
		    strerror(-r), daqiri_last_error(d));
	return r;
}

static void
print_tx(const char *what, struct daqiri_tx *tx)
{
	struct daqiri_tx_stats st;

	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	if (daqiri_tx_stats(tx, &st) < 0)
		return;
	printf(" %s_sent=%llu %s_failed=%llu ring_full=%llu", what,
	    (unsigned long long)st.sent, what,
	    (unsigned long long)st.failed,
	    (unsigned long long)st.ring_full);
}

static int
do_loop(struct daqiri *d, const char *stream, const char *queue,
	uint64_t count, uint32_t max_held, double target, bool lossless)
{
	struct daqiri_sub_opts so;
	struct daqiri_sub *sub;
	struct daqiri_tx *tx;
	struct daqiri_tensor t;
	uint64_t n = 0, sent = 0;
	uint32_t dseq = 0;
	int r, rc = 0;

	memset(&so, 0, sizeof(so));
	so.size = sizeof(so);
	so.max_held = max_held;
	/* a consumer that falls behind holds the stream back instead of
	 * missing tensors (their decisions would be missing too) */
	if (lossless)
		so.policy = DAQIRI_POLICY_LOSSLESS;
	if ((r = daqiri_subscribe(d, stream, &so, &sub)) < 0) {
		fprintf(stderr, "closed-loop: subscribe %s: %s (%s)\n", stream,
		    strerror(-r), daqiri_last_error(d));
		return 1;
	}
	if (open_tx(d, queue, 0, &tx) < 0)
		return 1;
	printf("ready stream=%s tx=%s\n", stream, queue);
	fflush(stdout);
	while ((count == 0 || n < count) && !cl_stop) {
		struct daqiri_ctl c;
		struct daqiri_tx_buf b;

		memset(&t, 0, sizeof(t));
		t.size = sizeof(t);
		r = daqiri_next(sub, &t, CL_NEXT_TIMEOUT_MS);
		if (r == 0) {
			fprintf(stderr, "closed-loop: no tensor for %d ms\n",
			    CL_NEXT_TIMEOUT_MS);
			rc = 1;
			break;
		}
		if (r < 0) {
			if (r != -EINTR) {
				fprintf(stderr, "closed-loop: next: %s\n",
				    strerror(-r));
				rc = 1;
			}
			break;
		}
		n++;
		c.seq = dseq;
		c.tensor_seq = t.seq;
		c.publish_ns = t.publish_ns;
		c.gain_milli = decide(&t, target);
		/* the tensor is not needed past the decision */
		(void)daqiri_release(sub, &t);
		if ((r = take_buf(tx, &b)) < 0) {
			fprintf(stderr, "closed-loop: tx_buf: %s\n",
			    strerror(-r));
			rc = 1;
			break;
		}
		if (b.cap < DAQIRI_CTL_LEN) {
			fprintf(stderr, "closed-loop: tx buffers of %u bytes "
			    "are smaller than a control packet\n", b.cap);
			rc = 1;
			break;
		}
		daqiri_ctl_encode(&c, b.data);
		b.len = DAQIRI_CTL_LEN;
		while ((r = daqiri_tx_send(tx, &b, 1)) == 0 && !cl_stop)
			(void)daqiri_tx_wait(tx, CL_WAIT_MS);
		if (r == 0) {		/* stopped before it went: not sent */
			(void)daqiri_tx_discard(tx, &b);
			break;
		}
		if (r < 0) {
			fprintf(stderr, "closed-loop: tx_send: %s\n",
			    strerror(-r));
			rc = 1;
			break;
		}
		dseq++;
		sent++;
	}
	if ((r = daqiri_tx_flush(tx, CL_FLUSH_MS)) < 0) {
		fprintf(stderr, "closed-loop: tx_flush: %s\n", strerror(-r));
		rc = 1;
	}
	printf("loop tensors=%llu decisions=%llu",
	    (unsigned long long)n, (unsigned long long)sent);
	print_tx("tx", tx);
	printf("\n");
	fflush(stdout);
	daqiri_tx_close(tx);
	daqiri_unsubscribe(sub);
	return rc;
}

static int
do_flood(struct daqiri *d, const char *queue, uint32_t bytes,
	 uint64_t count, uint32_t batch, uint32_t nbufs)
{
	struct daqiri_tx_buf bufs[CL_MAX_BATCH];
	struct daqiri_tx_stats st;
	struct daqiri_tx *tx;
	uint64_t sent = 0, t0, t1;
	double c0, c1, secs;
	uint8_t *filled = NULL;
	uint32_t nb = 0, i;
	int r, rc = 0;

	if (open_tx(d, queue, nbufs, &tx) < 0)
		return 1;
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	if (daqiri_tx_stats(tx, &st) < 0 || st.buf_size < bytes) {
		fprintf(stderr, "closed-loop: %s takes payloads of %u bytes "
		    "at most, not %u\n", queue, st.buf_size, bytes);
		return 1;
	}
	if ((filled = calloc(st.nbufs ? st.nbufs : 1, 1)) == NULL)
		return 1;
	printf("ready tx=%s nbufs=%u buf_size=%u\n", queue, st.nbufs,
	    st.buf_size);
	fflush(stdout);
	t0 = daqiri_mono_ns();
	c0 = tool_cpu_s();
	while (sent < count && !cl_stop) {
		/* as many buffers as are free, up to a batch */
		while (nb < batch && sent + nb < count) {
			r = daqiri_tx_buf(tx, &bufs[nb]);
			if (r == -EAGAIN)
				break;
			if (r < 0) {
				fprintf(stderr, "closed-loop: tx_buf: %s\n",
				    strerror(-r));
				rc = 1;
				goto out;
			}
			/* a payload is written once per buffer, as the
			 * baseline's are: the cost measured is sending */
			if (bufs[nb].index < st.nbufs &&
			    !filled[bufs[nb].index]) {
				for (i = 0; i < bytes; i++)
					((uint8_t *)bufs[nb].data)[i] =
					    (uint8_t)i;
				filled[bufs[nb].index] = 1;
			}
			bufs[nb++].len = bytes;
		}
		if (nb == 0) {
			r = daqiri_tx_wait(tx, CL_WAIT_MS);
			if (r < 0 && r != -ETIMEDOUT && r != -EINTR) {
				fprintf(stderr, "closed-loop: tx_wait: %s\n",
				    strerror(-r));
				rc = 1;
				goto out;
			}
			continue;
		}
		r = daqiri_tx_send(tx, bufs, nb);
		if (r < 0) {
			fprintf(stderr, "closed-loop: tx_send: %s\n",
			    strerror(-r));
			rc = 1;
			goto out;
		}
		sent += (uint64_t)r;
		/* what the ring did not take stays ours, first in line */
		memmove(bufs, bufs + r, (nb - (uint32_t)r) * sizeof(*bufs));
		nb -= (uint32_t)r;
		if (r == 0)
			(void)daqiri_tx_wait(tx, CL_WAIT_MS);
	}
	if ((r = daqiri_tx_flush(tx, CL_FLUSH_MS)) < 0) {
		fprintf(stderr, "closed-loop: tx_flush: %s\n", strerror(-r));
		rc = 1;
	}
out:
	t1 = daqiri_mono_ns();
	c1 = tool_cpu_s();
	for (i = 0; i < nb; i++)
		(void)daqiri_tx_discard(tx, &bufs[i]);
	secs = (double)(t1 - t0) / 1e9;
	printf("flood submitted=%llu bytes=%llu seconds=%.6f gbps=%.3f "
	    "cpu_s=%.3f", (unsigned long long)sent,
	    (unsigned long long)sent * bytes, secs,
	    secs > 0 ? (double)sent * bytes * 8 / secs / 1e9 : 0.0, c1 - c0);
	print_tx("tx", tx);
	printf("\n");
	fflush(stdout);
	free(filled);
	daqiri_tx_close(tx);
	return rc;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "count", required_argument, NULL, 'n' },
		{ "max-held", required_argument, NULL, 'H' },
		{ "target", required_argument, NULL, 't' },
		{ "bytes", required_argument, NULL, 'b' },
		{ "batch", required_argument, NULL, 'm' },
		{ "lossless", no_argument, NULL, 'L' },
		{ "nbufs", required_argument, NULL, 'N' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock = NULL, *mode;
	uint64_t count = 0;
	uint32_t max_held = 0, bytes = 8000, batch = 64, nbufs = 0;
	double target = CL_DEFAULT_TARGET;
	bool lossless = false;
	struct sigaction sa;
	struct daqiri *d;
	char hint[256], *end;
	int ch, r, rc;

	while ((ch = getopt_long(argc, argv, "s:", longopts, NULL)) != -1) {
		switch (ch) {
		case 's':
			sock = optarg;
			break;
		case 'n':
			count = num("--count", optarg, 0, UINT64_MAX);
			break;
		case 'H':
			max_held = (uint32_t)num("--max-held", optarg, 0, 1024);
			break;
		case 't':
			target = strtod(optarg, &end);
			if (*end || !(target > 0))
				usage();
			break;
		case 'b':
			bytes = (uint32_t)num("--bytes", optarg, 1, 65507);
			break;
		case 'L':
			lossless = true;
			break;
		case 'N':
			nbufs = (uint32_t)num("--nbufs", optarg, 0, UINT32_MAX);
			break;
		case 'm':
			batch = (uint32_t)num("--batch", optarg, 1,
			    CL_MAX_BATCH);
			break;
		default:
			usage();
		}
	}
	if (optind >= argc)
		usage();
	mode = argv[optind++];
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if ((strcmp(mode, "loop") == 0 && argc - optind != 2) ||
	    (strcmp(mode, "flood") == 0 && argc - optind != 1))
		usage();
	if (strcmp(mode, "loop") != 0 && strcmp(mode, "flood") != 0)
		usage();
	if ((r = daqiri_connect(sock, &d)) < 0) {
		fprintf(stderr, "closed-loop: %s\n",
		    daqiri_connect_hint(r, sock, hint, sizeof(hint)));
		return 1;
	}
	if (strcmp(mode, "loop") == 0)
		rc = do_loop(d, argv[optind], argv[optind + 1], count,
		    max_held, target, lossless);
	else
		rc = do_flood(d, argv[optind], bytes, count ? count : 100000,
		    batch, nbufs);
	daqiri_disconnect(d);
	return rc;
}
