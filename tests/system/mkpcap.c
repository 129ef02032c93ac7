/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mkpcap: write a pcap capture of sensor frames in the default config's
 * layout (Ethernet/IPv4/UDP, 32-bit big-endian sequence at UDP payload
 * bytes 0..3, int4 samples in daqiri-sim's pattern from byte 8), with
 * seeded shuffling, loss and duplication, for DPDK's net_pcap and
 * daqirid --replay in the system tests. Frames are stamped 1 us apart, or
 * in bursts of --burst frames sharing a stamp, with --gap-us more after
 * every --gap-every frames (so reorder deadlines fall inside the
 * capture); --cut leaves out the last sequence numbers (a sender that
 * stopped mid-batch). Written with the tools' pcap writer
 * (client/pcap_out.h, over libpcap), the one home of the format.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcap_out.h"

#define MKPCAP_SNAPLEN		65535u
#define MKPCAP_HDR_LEN		42u	/* Ethernet + IPv4 + UDP */
#define MKPCAP_FIELDS_LEN	8u	/* sequence + 4 zero bytes */
#define MKPCAP_MAX_FRAME	(MKPCAP_SNAPLEN - 1)
#define MKPCAP_PERIOD		5	/* the pattern repeats every 5 slots */
#define MKPCAP_SRC_PORT		4096u
#define MKPCAP_JUNK_PORT	9u	/* UDP discard: matches no sensor flow */
#define MKPCAP_SRC_ADDR		0x0a000001u	/* 10.0.0.1 */
#define MKPCAP_DST_ADDR		0x0a000002u	/* 10.0.0.2 */

struct opts {
	const char *out;
	uint32_t batches;
	uint32_t ppb;
	uint32_t payload_bytes;	/* sample bytes after the 8 field bytes */
	uint32_t port;
	uint64_t seed;
	uint32_t shuffle;	/* permute within runs of this many frames */
	double loss, dup;
	uint32_t junk;		/* frames to another UDP port */
	uint32_t shorts;	/* sensor frames with half the samples */
	uint32_t burst;		/* frames sharing one timestamp */
	uint32_t gap_every;	/* frames between two gaps (0 = none) */
	uint64_t gap_us;	/* each gap's length */
	uint32_t cut;		/* last sequence numbers not sent */
	int quiet;
};

static struct opts gopt;	/* for record() */

static uint64_t rng_state;

static uint64_t
rng(void)
{
	/* xorshift64*: the same seed gives the same capture everywhere */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Dull;
}

static double
rng_unit(void)
{
	return (double)(rng() >> 11) / (double)(1ull << 53);
}

static void __attribute__((noreturn))
usage(int code)
{
	fprintf(code ? stderr : stdout, "usage: mkpcap -o FILE [--batches N] "
	    "[--ppb N] [--payload-bytes N] [--port P]\n"
	    "              [--seed S] [--shuffle W] [--loss P] [--dup P] "
	    "[--junk N] [--short N] [--quiet]\n"
	    "              [--burst K] [--gap-every N --gap-us U] [--cut N]\n");
	exit(code);
}

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("mkpcap: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static uint64_t
num(const char *opt, const char *s, uint64_t max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0' || end == s || v > max)
		die("%s: '%s' is not a number up to %llu", opt, s,
		    (unsigned long long)max);
	return v;
}

static double
prob(const char *opt, const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (*end != '\0' || end == s || !(v >= 0.0 && v < 1.0))
		die("%s: '%s' is not a probability in [0, 1)", opt, s);
	return v;
}

static void
put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void
put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xFFFF);
}

/* Ethernet/IPv4/UDP headers for a datagram of dlen bytes to dport. */
static void
headers(uint8_t *h, uint32_t dport, uint32_t dlen)
{
	static const uint8_t dst_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };
	static const uint8_t src_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
	uint8_t *ip = h + 14, *udp = h + 34;
	uint32_t sum = 0;

	memcpy(h, dst_mac, 6);
	memcpy(h + 6, src_mac, 6);
	put16(h + 12, 0x0800);
	memset(ip, 0, 20);
	ip[0] = 0x45;
	put16(ip + 2, 20 + 8 + dlen);
	put16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = 17;
	put32(ip + 12, MKPCAP_SRC_ADDR);
	put32(ip + 16, MKPCAP_DST_ADDR);
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	put16(ip + 10, ~sum & 0xFFFF);
	put16(udp, MKPCAP_SRC_PORT);
	put16(udp + 2, dport);
	put16(udp + 4, 8 + dlen);
	put16(udp + 6, 0);
}

/* daqiri-sim's pattern: value(slot, e) = ((3 slot + e) mod 15) - 7, int4
 * with element 2k in the high nibble of byte k. */
static void
samples(uint32_t slot, uint8_t *out, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++) {
		int hi = (int)((3 * (uint64_t)slot + 2 * (uint64_t)k) % 15) - 7;
		int lo = (int)((3 * (uint64_t)slot + 2 * (uint64_t)k + 1) %
		    15) - 7;

		out[k] = (uint8_t)((hi & 0xF) << 4 | (lo & 0xF));
	}
}

static void
record(struct pcap_out *p, const uint8_t *frame, uint32_t len, uint64_t i)
{
	/* 1 us apart, or a burst's frames together; plus the gaps (on the
	 * writer's monotonic scale: it adds one offset to them all) */
	uint64_t us = i / gopt.burst + (gopt.gap_every > 0 ?
	    i / gopt.gap_every * gopt.gap_us : 0);

	if (pcap_out_write(p, frame, len, us * 1000) < 0)
		die("%s", pcap_out_error(p));
}

static void
parse(int argc, char **argv, struct opts *o)
{
	enum { O_BATCHES = 256, O_PPB, O_PBYTES, O_PORT, O_SEED, O_SHUFFLE,
		O_LOSS, O_DUP, O_JUNK, O_SHORT, O_QUIET, O_BURST, O_GAP_EVERY,
		O_GAP_US, O_CUT };
	static const struct option lo[] = {
		{ "batches", required_argument, NULL, O_BATCHES },
		{ "ppb", required_argument, NULL, O_PPB },
		{ "payload-bytes", required_argument, NULL, O_PBYTES },
		{ "port", required_argument, NULL, O_PORT },
		{ "seed", required_argument, NULL, O_SEED },
		{ "shuffle", required_argument, NULL, O_SHUFFLE },
		{ "loss", required_argument, NULL, O_LOSS },
		{ "dup", required_argument, NULL, O_DUP },
		{ "junk", required_argument, NULL, O_JUNK },
		{ "short", required_argument, NULL, O_SHORT },
		{ "quiet", no_argument, NULL, O_QUIET },
		{ "burst", required_argument, NULL, O_BURST },
		{ "gap-every", required_argument, NULL, O_GAP_EVERY },
		{ "gap-us", required_argument, NULL, O_GAP_US },
		{ "cut", required_argument, NULL, O_CUT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	memset(o, 0, sizeof(*o));
	o->batches = 10;
	o->ppb = 128;
	o->payload_bytes = 8000;
	o->port = 5005;
	o->seed = 1;
	o->burst = 1;
	while ((ch = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'o':
			o->out = optarg;
			break;
		case O_BATCHES:
			o->batches = (uint32_t)num("--batches", optarg, 1u << 20);
			break;
		case O_PPB:
			o->ppb = (uint32_t)num("--ppb", optarg, 1u << 20);
			break;
		case O_PBYTES:
			o->payload_bytes = (uint32_t)num("--payload-bytes",
			    optarg, MKPCAP_MAX_FRAME - MKPCAP_HDR_LEN -
			    MKPCAP_FIELDS_LEN);
			break;
		case O_PORT:
			o->port = (uint32_t)num("--port", optarg, 65535);
			break;
		case O_SEED:
			o->seed = num("--seed", optarg, UINT64_MAX);
			break;
		case O_SHUFFLE:
			o->shuffle = (uint32_t)num("--shuffle", optarg, 1u << 20);
			break;
		case O_LOSS:
			o->loss = prob("--loss", optarg);
			break;
		case O_DUP:
			o->dup = prob("--dup", optarg);
			break;
		case O_JUNK:
			o->junk = (uint32_t)num("--junk", optarg, 1u << 20);
			break;
		case O_SHORT:
			o->shorts = (uint32_t)num("--short", optarg, 1u << 20);
			break;
		case O_QUIET:
			o->quiet = 1;
			break;
		case O_BURST:
			o->burst = (uint32_t)num("--burst", optarg, 1u << 20);
			break;
		case O_GAP_EVERY:
			o->gap_every = (uint32_t)num("--gap-every", optarg,
			    1u << 30);
			break;
		case O_GAP_US:
			o->gap_us = num("--gap-us", optarg, 1ull << 40);
			break;
		case O_CUT:
			o->cut = (uint32_t)num("--cut", optarg, 1u << 30);
			break;
		case 'h':
			usage(0);
		default:
			usage(2);
		}
	}
	if (o->out == NULL || optind != argc)
		usage(2);
	if (o->ppb == 0 || o->batches == 0 || o->burst == 0)
		die("--ppb, --batches and --burst must be positive");
	if ((uint64_t)o->cut >= (uint64_t)o->batches * o->ppb)
		die("--cut leaves nothing to send");
	if ((uint64_t)o->batches * o->ppb > UINT32_MAX)
		die("more than 2^32 sequence numbers");
}

int
main(int argc, char **argv)
{
	struct opts o;
	uint64_t cut_from;
	struct pcap_out_opts po = { .snaplen = MKPCAP_SNAPLEN, .force = true };
	struct pcap_out *fp;
	char err[512];
	uint8_t *img[MKPCAP_PERIOD], *frame;
	uint32_t *order, n = 0, flen, dlen;
	uint64_t total, written = 0, dups = 0, dropped = 0, lossy = 0;
	uint64_t rec = 0;

	parse(argc, argv, &o);
	gopt = o;
	cut_from = (uint64_t)o.batches * o.ppb - o.cut;
	rng_state = o.seed * 0x9E3779B97F4A7C15ull + 1;
	dlen = MKPCAP_FIELDS_LEN + o.payload_bytes;
	flen = MKPCAP_HDR_LEN + dlen;
	total = (uint64_t)o.batches * o.ppb;
	order = calloc(total, sizeof(*order));
	frame = calloc(1, flen);
	for (int k = 0; k < MKPCAP_PERIOD; k++)
		if ((img[k] = malloc(o.payload_bytes + 1)) != NULL)
			samples((uint32_t)k, img[k], o.payload_bytes);
	if (order == NULL || frame == NULL)
		die("out of memory");
	for (int k = 0; k < MKPCAP_PERIOD; k++)
		if (img[k] == NULL)
			die("out of memory");

	/* Which packets exist (loss), then in what order (shuffle). */
	for (uint32_t b = 0; b < o.batches; b++) {
		int hit = 0;

		for (uint32_t s = 0; s < o.ppb; s++) {
			uint32_t g = b * o.ppb + s;

			if (g >= cut_from) {
				dropped++;
				hit = 1;
				continue;
			}
			if (o.loss > 0 && rng_unit() < o.loss) {
				dropped++;
				hit = 1;
				if (!o.quiet)
					printf("dropped seq=%u batch=%u slot=%u\n",
					    g, b, s);
				continue;
			}
			order[n++] = g;
		}
		lossy += (uint64_t)hit;
	}
	if (o.shuffle > 1)
		for (uint32_t base = 0; base < n; base += o.shuffle) {
			uint32_t len = n - base < o.shuffle ? n - base :
			    o.shuffle;

			for (uint32_t i = len; i > 1; i--) {
				uint32_t j = (uint32_t)(rng() % i), t;

				t = order[base + i - 1];
				order[base + i - 1] = order[base + j];
				order[base + j] = t;
			}
		}

	if (pcap_out_open(o.out, &po, &fp, err, sizeof(err)) < 0)
		die("%s", err);
	headers(frame, o.port, dlen);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t g = order[i], copies = 1;

		put32(frame + MKPCAP_HDR_LEN, g);
		memset(frame + MKPCAP_HDR_LEN + 4, 0, 4);
		memcpy(frame + MKPCAP_HDR_LEN + MKPCAP_FIELDS_LEN,
		    img[(g % o.ppb) % MKPCAP_PERIOD], o.payload_bytes);
		if (o.dup > 0 && rng_unit() < o.dup)
			copies = 2;
		for (uint32_t c = 0; c < copies; c++)
			record(fp, frame, flen, rec++);
		written += copies;
		dups += copies - 1;
	}
	/* Frames no sensor flow takes, then sensor frames too short for a
	 * slot (malformed): after the sensor data, so they disturb nothing. */
	headers(frame, MKPCAP_JUNK_PORT, dlen);
	for (uint32_t i = 0; i < o.junk; i++)
		record(fp, frame, flen, rec++);
	if (o.shorts > 0) {
		uint32_t half = MKPCAP_FIELDS_LEN + o.payload_bytes / 2;

		headers(frame, o.port, half);
		for (uint32_t i = 0; i < o.shorts; i++) {
			put32(frame + MKPCAP_HDR_LEN, i % o.ppb);
			record(fp, frame, MKPCAP_HDR_LEN + half, rec++);
		}
	}
	if (pcap_out_close(fp, err, sizeof(err)) < 0)
		die("%s", err);
	printf("mkpcap frames=%llu sensor=%llu unique=%u dropped=%llu "
	    "duplicates=%llu lossy_batches=%llu junk=%u short=%u "
	    "frame_bytes=%u\n", (unsigned long long)rec,
	    (unsigned long long)written, n, (unsigned long long)dropped,
	    (unsigned long long)dups, (unsigned long long)lossy, o.junk,
	    o.shorts, flen);
	for (int k = 0; k < MKPCAP_PERIOD; k++)
		free(img[k]);
	free(order);
	free(frame);
	return 0;
}
