/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tx-client: a TX channel through libdaqiri-client, as an application
 * would use it (37-tx-client.sh). Opens IFACE/TXQ with NBUFS buffers,
 * sends COUNT payloads with daqiri_tx_buf() / daqiri_tx_send() in
 * batches, waits with daqiri_tx_wait() whenever no buffer is free
 * (-EAGAIN), then daqiri_tx_flush(). Payload seq is tx-recv.py's: bytes
 * 0..7 the number (little endian), byte k >= 8 is (seq + k) & 0xff, LEN
 * - seq % 3 bytes long (LEN with --fixed, for a reorder stream). Before
 * that it takes every buffer unsent, so the next daqiri_tx_buf() must say
 * -EAGAIN, and tries a payload over the channel's cap (-EINVAL, nothing
 * sent). Checks the channel's
 * counters at the end; prints "ok sent=N eagain=E ring_full=R" or why
 * not, exit 0 or 1.
 *
 * --device: the queue's region is device memory (44-tx-device.sh), so the
 * channel's pool is (daqiri_tx_stats() device >= 0, else FAIL): each
 * payload is written into a host scratch buffer of its own and copied to
 * its pool buffer with cudaMemcpyAsync on a stream of ours, and the
 * stream is synchronised before every daqiri_tx_send() (the contract of
 * libdaqiri-client(3)). With --no-sync that synchronisation is left out,
 * to show that a sender who breaks the contract sends wrong bytes (on
 * the CUDA stand-in the copies then run only at the next wait). Without
 * --device the pool must be host memory.
 *
 * usage: tx-client [--device [--no-sync]] [--fixed] SOCKET IFACE/TXQ COUNT
 *        LEN [NBUFS]
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef DAQIRI_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "daqiri_client.h"

#define BATCH		16
#define WAIT_MS		30000

/* --device: the stream of the copies and one scratch buffer per slot of
 * b[] (an asynchronous copy reads its source until the stream is
 * synchronised). */
static bool dev_mode, dev_sync = true, fixed_len;
static uint8_t *scratch;
static uint32_t scratch_len;
#ifdef DAQIRI_HAVE_CUDA
static cudaStream_t dev_stream;
#endif

static int
die(const char *what, int r, struct daqiri *d)
{
	printf("FAIL %s: %s (%s)\n", what, strerror(r < 0 ? -r : r),
	    d != NULL ? daqiri_last_error(d) : "");
	return 1;
}

/* Payload seq into b, which is slot `slot` of b[] (its scratch buffer in
 * device mode, whose copy is queued). */
static uint32_t
fill(struct daqiri_tx_buf *b, uint32_t slot, uint64_t seq, uint32_t len)
{
	uint8_t *p = dev_mode ? scratch + (size_t)slot * scratch_len : b->data;
	uint32_t n = fixed_len ? len : len - (uint32_t)(seq % 3), k;

	for (k = 0; k < n; k++)
		p[k] = k < 8 ? (uint8_t)(seq >> (8 * k)) : (uint8_t)(seq + k);
	b->len = n;
#ifdef DAQIRI_HAVE_CUDA
	if (dev_mode && cudaMemcpyAsync(b->data, p, n, cudaMemcpyHostToDevice,
	    dev_stream) != cudaSuccess) {
		printf("FAIL cudaMemcpyAsync into the device pool: %s\n",
		    cudaGetErrorString(cudaGetLastError()));
		exit(1);
	}
#endif
	return n;
}

/* Device mode: every queued copy done before a submission. */
static void
fills_done(void)
{
#ifdef DAQIRI_HAVE_CUDA
	if (dev_mode && dev_sync && cudaStreamSynchronize(dev_stream) !=
	    cudaSuccess) {
		printf("FAIL cudaStreamSynchronize: %s\n",
		    cudaGetErrorString(cudaGetLastError()));
		exit(1);
	}
#endif
}

int
main(int argc, char **argv)
{
	struct daqiri_tx_opts o = { .size = sizeof(o) };
	struct daqiri_tx_stats st = { .size = sizeof(st) };
	struct daqiri_tx_buf *b;
	struct daqiri_tx *tx;
	struct daqiri *d;
	uint64_t count, seq = 0, eagain = 0;
	uint32_t len, i, n;
	int r;

	while (argc > 1 && strncmp(argv[1], "--", 2) == 0) {
		if (strcmp(argv[1], "--device") == 0)
			dev_mode = true;
		else if (strcmp(argv[1], "--no-sync") == 0)
			dev_sync = false;
		else if (strcmp(argv[1], "--fixed") == 0)
			fixed_len = true;
		else
			break;
		argv++;
		argc--;
	}
	if (argc < 5 || argc > 6 || (!dev_sync && !dev_mode)) {
		fprintf(stderr, "usage: tx-client [--device [--no-sync]] "
		    "[--fixed] SOCKET IFACE/TXQ COUNT LEN [NBUFS]\n");
		return 2;
	}
#ifndef DAQIRI_HAVE_CUDA
	if (dev_mode)
		return fprintf(stderr, "tx-client: --device: built without "
		    "CUDA\n"), 2;
#endif
	count = strtoull(argv[3], NULL, 10);
	len = (uint32_t)strtoul(argv[4], NULL, 10);
	o.nbufs = argc == 6 ? (uint32_t)strtoul(argv[5], NULL, 10) : 0;
	if (len < 3)
		return fprintf(stderr, "tx-client: LEN of 3 or more\n"), 2;
	if ((r = daqiri_connect(argv[1], &d)) < 0)
		return die("connect", r, NULL);
	if ((r = daqiri_tx_open(d, argv[2], &o, &tx)) < 0)
		return die("tx_open", r, d);
	daqiri_tx_stats(tx, &st);
	if (len > st.buf_size)
		return printf("FAIL LEN %u over the channel's %u\n", len,
		    st.buf_size), 1;
	if (dev_mode ? st.device < 0 : st.device != -1)
		return printf("FAIL the pool is %s memory (device %d)\n",
		    st.device < 0 ? "host" : "device", st.device), 1;
	/* one more than the pool: the take that must fail writes there */
	b = calloc((st.nbufs > BATCH ? st.nbufs : BATCH) + 1, sizeof(*b));
	if (b == NULL)
		return die("calloc", -ENOMEM, NULL);
	if (dev_mode) {
		scratch_len = len;
		scratch = malloc(((size_t)(st.nbufs > BATCH ? st.nbufs :
		    BATCH) + 1) * len);
		if (scratch == NULL)
			return die("malloc", -ENOMEM, NULL);
#ifdef DAQIRI_HAVE_CUDA
		if (cudaStreamCreateWithFlags(&dev_stream,
		    cudaStreamNonBlocking) != cudaSuccess)
			return printf("FAIL cudaStreamCreate: %s\n",
			    cudaGetErrorString(cudaGetLastError())), 1;
#endif
	}

	/* Every buffer taken and none sent: the next take must fail. */
	for (n = 0; n < st.nbufs; n++)
		if ((r = daqiri_tx_buf(tx, &b[n])) < 0)
			return die("daqiri_tx_buf of a free buffer", r, d);
	if ((r = daqiri_tx_buf(tx, &b[n])) != -EAGAIN)
		return printf("FAIL daqiri_tx_buf with every buffer taken: %d, "
		    "not -EAGAIN\n", r), 1;
	eagain++;
	b[0].len = b[0].cap + 1;
	if ((r = daqiri_tx_send(tx, b, 1)) != -EINVAL)
		return printf("FAIL a payload over cap: %d, not -EINVAL\n",
		    r), 1;
	for (i = 0; i < n && seq < count; i++)
		fill(&b[i], i, seq++, len);
	for (; i < n; i++)	/* COUNT below NBUFS: give the rest back */
		if ((r = daqiri_tx_discard(tx, &b[i])) < 0)
			return die("daqiri_tx_discard", r, d);
	n = (uint32_t)(seq < n ? seq : n);
	fills_done();
	if ((r = daqiri_tx_send(tx, b, n)) != (int)n)
		return die("daqiri_tx_send of the first buffers", r, d);

	while (seq < count) {
		n = 0;
		while (n < BATCH && seq + n < count) {
			r = daqiri_tx_buf(tx, &b[n]);
			if (r == -EAGAIN) {
				eagain++;
				if (n > 0)
					break;	/* send what we have */
				if ((r = daqiri_tx_wait(tx, WAIT_MS)) < 0)
					return die("daqiri_tx_wait", r, d);
				continue;
			}
			if (r < 0)
				return die("daqiri_tx_buf", r, d);
			fill(&b[n], n, seq + n, len);
			n++;
		}
		fills_done();
		if ((r = daqiri_tx_send(tx, b, n)) != (int)n)
			return die("daqiri_tx_send", r, d);
		seq += n;
	}
	if ((r = daqiri_tx_flush(tx, WAIT_MS)) < 0)
		return die("daqiri_tx_flush", r, d);
	daqiri_tx_stats(tx, &st);
	if (st.sent != count || st.failed != 0 || st.in_flight != 0 ||
	    st.free != st.nbufs || st.ring_full != eagain)
		return printf("FAIL counters: sent %llu of %llu, failed %llu, "
		    "in flight %u, free %u of %u, ring_full %llu for %llu "
		    "-EAGAIN\n", (unsigned long long)st.sent,
		    (unsigned long long)count, (unsigned long long)st.failed,
		    st.in_flight, st.free, st.nbufs,
		    (unsigned long long)st.ring_full,
		    (unsigned long long)eagain), 1;
	if ((r = daqiri_tx_close(tx)) < 0)
		return die("daqiri_tx_close", r, d);
	daqiri_disconnect(d);
#ifdef DAQIRI_HAVE_CUDA
	if (dev_mode) {
		/* --no-sync: copies still queued are done by now (closing
		 * the pool's handle waited for them) */
		(void)cudaStreamSynchronize(dev_stream);
		(void)cudaStreamDestroy(dev_stream);
		(void)cudaGetLastError();
	}
#endif
	free(scratch);
	free(b);
	printf("ok sent=%llu eagain=%llu ring_full=%llu nbufs=%u\n",
	    (unsigned long long)st.sent, (unsigned long long)eagain,
	    (unsigned long long)st.ring_full, st.nbufs);
	return 0;
}
