/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dpdk-tx-tool: drives the DPDK engine's transmit side alone, without the
 * daemon (tests/system/38-tx-dpdk.sh). It loads a config, brings up one
 * interface with engine_dpdk_ops, and sends -n payloads through tx queue
 * -q with tx_burst/tx_done: payload k is pay_len(k) bytes, its first four
 * the big-endian k, then bytes (k + j) & 0xff. Every buffer stays busy
 * until tx_done() hands its tag back; a tag that comes back twice, or
 * that was never accepted, fails the run. With --fill it first sends
 * without taking completions until the engine answers -EAGAIN, and
 * checks that exactly the accepted tags come back. With --loop the port
 * loops frames back (net_ring): it first sends until the port itself is
 * full (-EAGAIN) and checks that no tag comes back while the port holds
 * the frames, then receives them on rx queue 0 (each one's payload must
 * be the pool's buffer itself: zero copy) and takes the tags. Destination
 * fields given here override the config's; --no-eth-dst takes eth_dst
 * out (the engine must refuse the queue). --go FILE: wait for FILE after
 * the port is up (a capture on a port the tool makes, net_tap, can start),
 * --end FILE: wait for FILE before closing it. Prints one "txtool ..."
 * line (before waiting for --end).
 *
 *   dpdk-tx-tool -c CONFIG [-i IFACE] [-q QUEUE] -n COUNT [--min L]
 *     [--max L] [--burst B] [--gap-us U] [--fill] [--copy] [--loop]
 *     [--eth-dst MAC] [--eth-src MAC] [--ip-src A] [--ip-dst A]
 *     [--udp-src P] [--udp-dst P] [--ttl N] [--dscp N] [--no-eth-dst]
 *     [--go FILE] [--end FILE]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "desc.h"
#include "engine.h"
#include "log.h"
#include "mem.h"

/* engine_dpdk_internal.h (it needs DPDK's headers): the copying path. */
void dpdk_tx_force_copy(bool on);

#define POOL_BUFS	4096u
#define MAX_BURST	256u

static uint32_t min_len = 16, max_len = 1400;

static uint32_t
pay_len(uint64_t k)
{
	return min_len + (uint32_t)((k * 37) % (max_len - min_len + 1));
}

static void
pay_fill(uint8_t *b, uint64_t k)
{
	uint32_t len = pay_len(k);

	for (uint32_t j = 0; j < len; j++)
		b[j] = (uint8_t)(k + j);
	if (len < 4)
		return;			/* --max 0: empty payloads */
	b[0] = (uint8_t)(k >> 24);
	b[1] = (uint8_t)(k >> 16);
	b[2] = (uint8_t)(k >> 8);
	b[3] = (uint8_t)k;
}

static int
parse_mac(const char *s, uint8_t m[6])
{
	unsigned v[6];
	char end;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3],
	    &v[4], &v[5], &end) != 6)
		return -1;
	for (int i = 0; i < 6; i++) {
		if (v[i] > 255)
			return -1;
		m[i] = (uint8_t)v[i];
	}
	return 0;
}

static int
parse_ip(const char *s, uint32_t *out)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return -1;
	*out = ntohl(a.s_addr);
	return 0;
}

static void
usage(void)
{
	fprintf(stderr, "usage: dpdk-tx-tool -c CONFIG [-i IFACE] [-q QUEUE] "
	    "-n COUNT [--min L] [--max L] [--burst B] [--gap-us U] [--fill] "
	    "[--copy] [--eth-dst MAC] [--eth-src MAC] [--ip-src A] "
	    "[--ip-dst A] [--udp-src P] [--udp-dst P] [--ttl N] [--dscp N] "
	    "[--no-eth-dst] [--go FILE] [--end FILE]\n");
	exit(2);
}

/* Wait (60 s at most) until path exists. */
static int
wait_file(const char *path)
{
	for (int i = 0; i < 6000; i++) {
		if (access(path, F_OK) == 0)
			return 0;
		usleep(10000);
	}
	fprintf(stderr, "dpdk-tx-tool: no %s within 60 s\n", path);
	return -1;
}


/* Tool state: which buffers are free, which tags are out. */
struct tool {
	const struct engine_tx_ops *tx;
	struct engine_txq *q;
	uint8_t *pool;
	uint32_t buf_size;
	uint32_t free_stk[POOL_BUFS];
	uint32_t nfree;
	uint8_t *out;			/* per payload k: 1 accepted, 2 done */
	uint64_t count;
	uint64_t accepted, done, eagain, failed;
	struct engine_rxq *rxq;		/* --loop */
	uint64_t rx, rx_zc;
};

/* Take completions; 0 or -1 on a bad tag. */
static int
reap(struct tool *t)
{
	uint64_t tags[MAX_BURST];
	unsigned n;

	while ((n = t->tx->tx_done(t->q, tags, MAX_BURST)) > 0) {
		for (unsigned i = 0; i < n; i++) {
			uint64_t k = tags[i] >> 16;
			uint32_t b = (uint32_t)(tags[i] & 0xffff);

			if (k >= t->count || b >= POOL_BUFS ||
			    t->out[k] != 1) {
				fprintf(stderr, "dpdk-tx-tool: tag %#llx came "
				    "back %s\n", (unsigned long long)tags[i],
				    k < t->count && t->out[k] == 2 ? "twice" :
				    "without being accepted");
				return -1;
			}
			t->out[k] = 2;
			t->done++;
			t->free_stk[t->nfree++] = b;
		}
	}
	return 0;
}

/* --loop: receive what the port looped back, check it, release it (the
 * port then frees the payload mbufs). 0 or -1. */
static int
drain(struct tool *t)
{
	struct rx_frame f[MAX_BURST];
	int n;

	while ((n = engine_dpdk_ops.rx_burst(t->rxq, f, MAX_BURST, 0)) > 0) {
		for (int i = 0; i < n; i++) {
			const uint8_t *pl = f[i].payload;
			uint32_t len = f[i].payload_len;
			uint8_t want[65536];
			uint64_t k;

			if (len == 0 && f[i].hdr_len > ENGINE_SYNTH_HDR_LEN) {
				/* one segment: the copying path */
				pl = f[i].hdr + ENGINE_SYNTH_HDR_LEN;
				len = f[i].hdr_len - ENGINE_SYNTH_HDR_LEN;
			} else if (f[i].hdr_len != ENGINE_SYNTH_HDR_LEN) {
				fprintf(stderr, "dpdk-tx-tool: looped frame "
				    "with %u header bytes\n", f[i].hdr_len);
				return -1;
			}
			k = (uint64_t)pl[0] << 24 | (uint64_t)pl[1] << 16 |
			    (uint64_t)pl[2] << 8 | pl[3];
			if (k < t->count && len == pay_len(k))
				pay_fill(want, k);
			if (k >= t->count || len != pay_len(k) ||
			    memcmp(pl, want, len) != 0) {
				fprintf(stderr, "dpdk-tx-tool: looped frame "
				    "%llu (%u bytes) is not its payload\n",
				    (unsigned long long)k, len);
				return -1;
			}
			t->rx++;
			t->rx_zc += pl >= t->pool && pl < t->pool +
			    (size_t)POOL_BUFS * t->buf_size;
		}
		engine_dpdk_ops.release(t->rxq, (unsigned)n);
	}
	if (n < 0) {
		fprintf(stderr, "dpdk-tx-tool: rx_burst: %s\n", strerror(-n));
		return -1;
	}
	return 0;
}

/* Offer payloads next .. next+n; returns how many were accepted, -1 on
 * an error other than -EAGAIN. */
static int
offer(struct tool *t, uint64_t next, unsigned n)
{
	struct engine_tx_pkt p[MAX_BURST];
	int err, got;

	if (n > t->nfree)
		n = t->nfree;
	for (unsigned i = 0; i < n; i++) {
		uint32_t b = t->free_stk[t->nfree - 1 - i];
		uint8_t *d = t->pool + (size_t)b * t->buf_size;

		pay_fill(d, next + i);
		p[i].data = d;
		p[i].len = pay_len(next + i);
		p[i].tag = (next + i) << 16 | b;
	}
	if (n == 0)
		return 0;
	got = t->tx->tx_burst(t->q, p, n, &err);
	if (got < 0 || (unsigned)got > n) {
		fprintf(stderr, "dpdk-tx-tool: tx_burst returned %d of %u\n",
		    got, n);
		return -1;
	}
	for (int i = 0; i < got; i++)
		t->out[next + (unsigned)i] = 1;
	t->nfree -= (unsigned)got;
	t->accepted += (unsigned)got;
	if ((unsigned)got < n) {
		if (err == -EAGAIN) {
			t->eagain++;
		} else {
			fprintf(stderr, "dpdk-tx-tool: tx_burst: payload %llu "
			    "refused: %s\n", (unsigned long long)(next +
			    (unsigned)got), strerror(-err));
			return -1;
		}
	} else if (err != 0) {
		fprintf(stderr, "dpdk-tx-tool: all accepted, err %d\n", err);
		return -1;
	}
	return got;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "min", required_argument, NULL, 'm' },
		{ "max", required_argument, NULL, 'M' },
		{ "burst", required_argument, NULL, 'b' },
		{ "gap-us", required_argument, NULL, 'g' },
		{ "fill", no_argument, NULL, 'f' },
		{ "copy", no_argument, NULL, 'C' },
		{ "loop", no_argument, NULL, 'L' },
		{ "eth-dst", required_argument, NULL, 1 },
		{ "eth-src", required_argument, NULL, 2 },
		{ "ip-src", required_argument, NULL, 3 },
		{ "ip-dst", required_argument, NULL, 4 },
		{ "udp-src", required_argument, NULL, 5 },
		{ "udp-dst", required_argument, NULL, 6 },
		{ "ttl", required_argument, NULL, 7 },
		{ "dscp", required_argument, NULL, 8 },
		{ "no-eth-dst", no_argument, NULL, 9 },
		{ "go", required_argument, NULL, 10 },
		{ "end", required_argument, NULL, 11 },
		{ NULL, 0, NULL, 0 }
	};
	static struct cfg c;
	static struct cfg_diags d;
	static struct mem_region regions[CFG_MAX_REGIONS];
	static struct tool t;
	struct cfg_interface *ifc;
	struct cfg_tx_dest *dst;
	struct engine *e = NULL;
	struct engine_tx_stats st;
	const char *conf = NULL, *go = NULL, *end = NULL;
	char err[ENGINE_ERR_MAX];
	int iface = 0, qi = 0, opt, rc = 1;
	unsigned burst = 32, gap_us = 0;
	bool fill = false, loop = false, no_eth_dst = false;
	uint64_t next = 0, fill_got = 0, held = 0, early = 0, t0, t1;
	/* destination overrides, applied after the config is loaded */
	struct cfg_tx_dest ov;

	memset(&ov, 0, sizeof(ov));
	while ((opt = getopt_long(argc, argv, "c:i:q:n:", lo, NULL)) != -1) {
		switch (opt) {
		case 'c': conf = optarg; break;
		case 'i': iface = atoi(optarg); break;
		case 'q': qi = atoi(optarg); break;
		case 'n': t.count = strtoull(optarg, NULL, 10); break;
		case 'm': min_len = (uint32_t)atoi(optarg); break;
		case 'M': max_len = (uint32_t)atoi(optarg); break;
		case 'b': burst = (unsigned)atoi(optarg); break;
		case 'g': gap_us = (unsigned)atoi(optarg); break;
		case 'f': fill = true; break;
		case 'C': dpdk_tx_force_copy(true); break;
		case 'L': loop = true; break;
		case 1:
			if (parse_mac(optarg, ov.eth_dst) != 0)
				usage();
			ov.has_eth_dst = true;
			break;
		case 2:
			if (parse_mac(optarg, ov.eth_src) != 0)
				usage();
			ov.has_eth_src = true;
			break;
		case 3:
			if (parse_ip(optarg, &ov.ipv4_src) != 0)
				usage();
			ov.has_ipv4_src = true;
			break;
		case 4:
			if (parse_ip(optarg, &ov.ipv4_dst) != 0)
				usage();
			ov.has_ipv4_dst = true;
			break;
		case 5:
			ov.udp_src = (uint16_t)atoi(optarg);
			ov.has_udp_src = true;
			break;
		case 6:
			ov.udp_dst = (uint16_t)atoi(optarg);
			ov.has_udp_dst = true;
			break;
		case 7:
			ov.ttl = (uint8_t)atoi(optarg);
			ov.has_ttl = true;
			break;
		case 8:
			ov.dscp = (uint8_t)atoi(optarg);
			ov.has_dscp = true;
			break;
		case 9:
			no_eth_dst = true;
			break;
		case 10:
			go = optarg;
			break;
		case 11:
			end = optarg;
			break;
		default:
			usage();
		}
	}
	if (conf == NULL || t.count == 0 || max_len < min_len ||
	    (min_len < 4 && max_len != 0) ||
	    burst == 0 || burst > MAX_BURST)
		usage();
	log_init(CFG_LOG_INFO, 0);
	if (cfg_load(conf, &c, &d) != 0) {
		cfg_diags_print(&d, stderr);
		return 1;
	}
	if (iface < 0 || iface >= c.ninterfaces ||
	    qi < 0 || qi >= c.interfaces[iface].tx.nqueues) {
		fprintf(stderr, "dpdk-tx-tool: no interface %d tx queue %d\n",
		    iface, qi);
		return 1;
	}
	ifc = &c.interfaces[iface];
	dst = &ifc->tx.queues[qi].dest;
#define OV(f, h) do { if (ov.h) { dst->f = ov.f; dst->h = true; } } while (0)
	if (ov.has_eth_dst) {
		memcpy(dst->eth_dst, ov.eth_dst, 6);
		dst->has_eth_dst = true;
	}
	if (ov.has_eth_src) {
		memcpy(dst->eth_src, ov.eth_src, 6);
		dst->has_eth_src = true;
	}
	OV(ipv4_src, has_ipv4_src);
	OV(ipv4_dst, has_ipv4_dst);
	OV(udp_src, has_udp_src);
	OV(udp_dst, has_udp_dst);
	OV(ttl, has_ttl);
	OV(dscp, has_dscp);
#undef OV
	if (no_eth_dst)
		dst->has_eth_dst = false;
	if (mem_regions_create(&c, regions, err, sizeof(err)) != 0) {
		fprintf(stderr, "dpdk-tx-tool: %s\n", err);
		return 1;
	}
	if (engine_dpdk_ops.init(&e, &c, ifc, regions, NULL, err,
	    sizeof(err)) != 0) {
		fprintf(stderr, "dpdk-tx-tool: init: %s\n", err);
		goto out;
	}
	if (engine_dpdk_ops.start(e) != 0) {
		fprintf(stderr, "dpdk-tx-tool: start failed\n");
		goto out;
	}
	t.tx = engine_dpdk_ops.tx;
	if (t.tx == NULL || (t.q = t.tx->txq(e, qi)) == NULL) {
		fprintf(stderr, "dpdk-tx-tool: no tx queue %d\n", qi);
		goto out;
	}
	if (loop && (t.rxq = engine_dpdk_ops.rxq(e, 0)) == NULL) {
		fprintf(stderr, "dpdk-tx-tool: --loop needs rx queue 0\n");
		goto out;
	}
	if (max_len > t.q->max_payload) {
		fprintf(stderr, "dpdk-tx-tool: --max %u over the queue's max "
		    "payload %u\n", max_len, t.q->max_payload);
		goto out;
	}
	t.buf_size = (max_len + 64) & ~63u;
	t.pool = aligned_alloc(4096, (size_t)POOL_BUFS * t.buf_size);
	t.out = calloc(t.count, 1);
	if (t.pool == NULL || t.out == NULL) {
		fprintf(stderr, "dpdk-tx-tool: out of memory\n");
		goto out;
	}
	for (uint32_t b = 0; b < POOL_BUFS; b++)
		t.free_stk[t.nfree++] = POOL_BUFS - 1 - b;

	if (go != NULL) {
		fprintf(stderr, "dpdk-tx-tool: port up, waiting for %s\n", go);
		if (wait_file(go) != 0)
			goto out;
	}
	t0 = daqiri_mono_ns();
	if (fill) {
		/* No completions taken: the engine must run out of slots and
		 * say -EAGAIN before the pool runs out. */
		while (next < t.count && t.eagain == 0 && t.nfree > 0) {
			int got = offer(&t, next, burst);

			if (got < 0)
				goto out;
			next += (unsigned)got;
		}
		fill_got = next;
		if (t.eagain == 0) {
			fprintf(stderr, "dpdk-tx-tool: --fill: %llu accepted "
			    "without -EAGAIN\n", (unsigned long long)next);
			goto out;
		}
		if (reap(&t) != 0)
			goto out;
	}
	if (loop) {
		/* The port holds every frame until we receive it: send until
		 * it is full; no tag may come back before the receive. */
		while (next < t.count && t.eagain == 0 && t.nfree > 0) {
			int got = offer(&t, next, burst);

			if (got < 0)
				goto out;
			next += (unsigned)got;
		}
		held = next;
		if (reap(&t) != 0)
			goto out;
		early = t.done;
		if (drain(&t) != 0 || reap(&t) != 0)
			goto out;
	}
	while (next < t.count) {
		unsigned n = t.count - next < burst ? (unsigned)(t.count -
		    next) : burst;
		int got;

		if (reap(&t) != 0)
			goto out;
		if ((got = offer(&t, next, n)) < 0)
			goto out;
		next += (unsigned)got;
		if (loop && drain(&t) != 0)
			goto out;
		if (gap_us > 0)
			usleep(gap_us);
	}
	/* the last completions: the PMD may free late */
	for (uint64_t until = daqiri_mono_ns() + 5000000000ull;
	    t.done < t.accepted && daqiri_mono_ns() < until; usleep(1000))
		if ((loop && drain(&t) != 0) || reap(&t) != 0)
			goto out;
	t1 = daqiri_mono_ns();
	(void)t.tx->tx_stats(t.q, &st);
	printf("txtool count=%llu accepted=%llu done=%llu eagain=%llu "
	    "fill=%llu copied=%llu tx_packets=%llu tx_bytes=%llu calls=%llu "
	    "full=%llu errors=%llu held=%llu early=%llu rx=%llu rx_zc=%llu "
	    "max_payload=%u ms=%.1f\n",
	    (unsigned long long)t.count, (unsigned long long)t.accepted,
	    (unsigned long long)t.done, (unsigned long long)t.eagain,
	    (unsigned long long)fill_got, (unsigned long long)st.copied,
	    (unsigned long long)st.tx_packets, (unsigned long long)st.tx_bytes,
	    (unsigned long long)st.calls, (unsigned long long)st.full,
	    (unsigned long long)st.errors, (unsigned long long)held,
	    (unsigned long long)early, (unsigned long long)t.rx,
	    (unsigned long long)t.rx_zc, t.q->max_payload,
	    (double)(t1 - t0) / 1e6);
	fflush(stdout);
	rc = t.done == t.count && t.accepted == t.count ? 0 : 1;
	if (rc != 0)
		fprintf(stderr, "dpdk-tx-tool: %llu of %llu completed\n",
		    (unsigned long long)t.done, (unsigned long long)t.count);
	if (end != NULL && wait_file(end) != 0)
		rc = 1;
out:
	if (e != NULL)
		engine_dpdk_ops.fini(e);
	mem_regions_destroy(regions, c.nregions);
	free(t.pool);
	free(t.out);
	return rc;
}
