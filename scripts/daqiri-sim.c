/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daqiri-sim: a sensor simulator. Reads the daemon's YAML (or flags) and
 * sends UDP datagrams laid out as one reorder config expects, sequence and
 * batch fields counting up and samples in the pattern ((3*slot + e) mod 15)
 * - 7, optionally shuffled, lost or duplicated on purpose, paced, with GSO.
 * With --control it is also the instrument end of a closed loop: it takes
 * the consumers' control packets (daqiri_control.h) between its sends,
 * checks their order and reports the loop latency.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "daqiri_control.h"
#include "desc.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT		103
#endif
#ifndef SOL_UDP
#define SOL_UDP			17
#endif

#define SIM_HDR_LEN		42	/* the frame bytes before the UDP payload */
#define SIM_HDR_BITS		(SIM_HDR_LEN * 8)
#define SIM_UDP_MAX		65507	/* largest IPv4 UDP payload */
#define SIM_MAX_MSGS		64	/* messages per sendmmsg */
#define SIM_MAX_SOCKS		16	/* --src-ports */
#define SIM_MAX_GSO		64	/* segments per GSO send (kernel limit) */
#define SIM_PATTERN_PERIOD	5	/* slots s, s+5 carry the same samples */
#define SIM_BURST_NS		100000	/* a paced burst covers at most 100 us */
#define SIM_SNDBUF		(4 << 20)
#define SIM_DEFAULT_BATCHES	10
#define SIM_MAX_SHUFFLE		(1u << 20)
#define SIM_MAX_PPB		(1u << 20)	/* larger needs --allow-huge-batch */
#define SIM_CTL_BATCH		64	/* control packets per recvmmsg */
#define SIM_CTL_BUF		64	/* > DAQIRI_CTL_LEN: longer ones are bad */
#define SIM_CTL_RCVBUF		(1 << 20)
#define SIM_CTL_WAIT_MS		10000

/* What to send: one reorder config's layout, resolved. */
struct sim_layout {
	char stream[2 * CFG_NAME_MAX];
	enum cfg_method method;
	struct cfg_bitfield seq, batch;	/* bit offsets in the frame */
	uint32_t ppb;
	uint32_t payload_offset;	/* frame byte where samples start */
	uint32_t payload_bytes;
	enum daqiri_dtype dtype;		/* NONE: bytes, written as int8 */
	enum cfg_endian endian;
	uint32_t dgram_len;		/* UDP payload bytes of every datagram */
	uint32_t sample_off;		/* UDP payload byte where samples start */
	bool prefix_only;		/* every field before the samples */
};

struct sim_opts {
	const char *config;
	const char *stream;
	const char *dest;
	double pps;			/* 0 = as fast as possible */
	uint64_t batches;		/* 0 = until interrupted */
	uint64_t packets;		/* stop after this many; 0 = no limit */
	uint32_t shuffle;
	double loss, dup;
	uint64_t seed;
	uint32_t gso;
	bool quiet, allow_remote, allow_huge;
	uint16_t src_port;		/* --src-port; 0: the kernel's */
	uint32_t src_ports;		/* --src-ports: sockets from src_port */
	/* flags that replace (or, without a config, define) the layout */
	bool has_seq, has_batch, has_ppb, has_poff, has_pbytes, has_dtype,
	    has_endian;
	struct cfg_bitfield seq, batch;
	uint32_t ppb, poff, pbytes;
	enum daqiri_dtype dtype;
	enum cfg_endian endian;
	double rate;
	bool rate_gbps;
	/* --control: the closed loop's return path */
	const char *control, *control_log;
	bool control_apply, has_control_expect, has_control_wait;
	uint64_t control_expect;
	uint64_t control_wait_ms;
};

/* One packet to send. */
struct sim_pkt {
	uint64_t g;			/* global index: batch * ppb + slot */
	bool dup;			/* the second copy */
};

struct sim_totals {
	uint64_t sent, unique, dropped, duplicates, bytes;
};

/* The control socket and what came in on it. A packet is applied when it
 * is valid and newer than the last applied one (seq > last): its gain
 * becomes the current gain and its latency is recorded; a gap before it
 * counts as missing. An older or repeated seq is out of order and not
 * applied (a late decision must not undo a newer one). */
struct sim_ctl {
	int fd;				/* -1: no --control */
	bool apply;			/* --control-apply: gain scales samples */
	FILE *log;			/* --control-log, or NULL */
	uint64_t applied, bad, out_of_order, missing;
	bool any;			/* last_seq is valid */
	uint32_t last_seq;
	int32_t gain_milli;
	bool gain_changed;		/* since the samples were made */
	uint64_t *lat;			/* latency_ns of every applied packet */
	size_t nlat, caplat;
	uint8_t buf[SIM_CTL_BATCH][SIM_CTL_BUF];
	struct iovec iov[SIM_CTL_BATCH];
	struct mmsghdr msgs[SIM_CTL_BATCH];
};

static volatile sig_atomic_t sim_stop;

static void
sim_on_signal(int sig)
{
	(void)sig;
	sim_stop = 1;
}

static void __attribute__((noreturn))
usage(int rc)
{
	fprintf(rc ? stderr : stdout,
	    "usage: daqiri-sim [-c FILE] [--stream IFACE/REORDER] "
	    "[--dest udp://IP:PORT]\n"
	    "                  [--src-port PORT [--src-ports N]] "
	    "[--rate R[pps|kpps|Mpps|Mbps|Gbps]] [--batches N]\n"
	    "                  [--packets N] [--shuffle W] [--loss P] "
	    "[--dup P] [--seed S] [--gso N]\n"
	    "                  [-q|--quiet] [--allow-remote] "
	    "[--allow-huge-batch]\n"
	    "                  [--seq OFF:WIDTH] [--batch-field OFF:WIDTH] "
	    "[--ppb N]\n"
	    "                  [--payload-offset BYTES] [--payload-bytes N] "
	    "[--dtype int4|int8|int16|int32|none]\n"
	    "                  [--endian host|network]\n"
	    "                  [--control udp://IP:PORT [--control-apply] "
	    "[--control-expect N]\n"
	    "                   [--control-wait-ms T] [--control-log FILE]]\n"
	    "       daqiri-sim -h | --help | -V | --version\n"
	    "Without -c, the config daqirid reads without it: "
	    CFG_DEFAULT_FILE "\nwhen it exists, else the built-in default. "
	    "Layout flags "
	    "replace the config's\nvalues; bit and byte offsets count from the "
	    "first byte of the Ethernet frame\n(UDP payload byte k is frame "
	    "byte 42 + k). Default: 10 batches; --batches 0 sends until interrupted;\n"
	    "--packets N stops after N packets, mid-batch as a sender that dies.\n"
	    "--control listens for control packets (daqiri_control.h) and "
	    "reports them.\n");
	exit(rc);
}

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	fputs("daqiri-sim: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* xorshift64*: small, seedable, the same on every machine. */
static uint64_t
sim_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* Uniform in [0, 1). */
static double
sim_rand01(uint64_t *s)
{
	return (double)(sim_rand(s) >> 11) * (1.0 / 9007199254740992.0);
}

static uint64_t
parse_u64(const char *opt, const char *s, uint64_t max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end != '\0' || s[0] == '-' || v > max)
		die("%s: '%s' is not a number from 0 to %llu", opt, s,
		    (unsigned long long)max);
	return v;
}

static double
parse_prob(const char *opt, const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end != '\0' || !(v >= 0.0 && v <= 1.0))
		die("%s: '%s' is not a probability from 0 to 1", opt, s);
	return v;
}

static struct cfg_bitfield
parse_field(const char *opt, const char *s)
{
	struct cfg_bitfield f;
	char buf[64], *colon;

	snprintf(buf, sizeof(buf), "%s", s);
	if ((colon = strchr(buf, ':')) == NULL)
		die("%s: '%s' is not OFFSET:WIDTH (bits)", opt, s);
	*colon = '\0';
	f.bit_offset = (uint32_t)parse_u64(opt, buf, UINT32_MAX);
	f.bit_width = (uint32_t)parse_u64(opt, colon + 1, 32);
	if (f.bit_width == 0)
		die("%s: width must be 1..32", opt);
	return f;
}

/* "R", "Rpps", "Rkpps", "RMpps" (packets/s) or "RMbps", "RGbps" (UDP
 * payload bits/s). */
static void
parse_rate(struct sim_opts *o, const char *s)
{
	static const struct {
		const char *suffix;
		double mult;
		bool bits;
	} units[] = {
		{ "", 1, false }, { "pps", 1, false }, { "kpps", 1e3, false },
		{ "Mpps", 1e6, false }, { "Mbps", 1e6, true },
		{ "Gbps", 1e9, true }, { "gbps", 1e9, true },
	};
	char *end;
	double v;
	size_t i;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !(v > 0))
		die("--rate: '%s' is not a positive rate", s);
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix) == 0) {
			o->rate = v * units[i].mult;
			o->rate_gbps = units[i].bits;
			return;
		}
	}
	die("--rate: unknown unit '%s' (pps, kpps, Mpps, Mbps, Gbps)", end);
}

static enum daqiri_dtype
parse_dtype(const char *s)
{
	static const struct {
		const char *name;
		enum daqiri_dtype t;
	} types[] = {
		{ "int4", DAQIRI_DTYPE_INT4 }, { "int8", DAQIRI_DTYPE_INT8 },
		{ "int16", DAQIRI_DTYPE_INT16 }, { "int32", DAQIRI_DTYPE_INT32 },
		{ "none", DAQIRI_DTYPE_RAW },
	};
	size_t i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(s, types[i].name) == 0)
			return types[i].t;
	die("--dtype: '%s' is not int4, int8, int16, int32 or none", s);
}

/* udp://A.B.C.D:PORT, both in host byte order; opt names the option in
 * messages. */
static void
parse_dest(const char *opt, const char *s, uint32_t *addr, uint16_t *port)
{
	char buf[64], *colon;
	struct in_addr a;

	if (strncmp(s, "udp://", 6) != 0)
		die("%s: '%s' is not udp://IP:PORT", opt, s);
	snprintf(buf, sizeof(buf), "%s", s + 6);
	if ((colon = strrchr(buf, ':')) == NULL)
		die("%s: '%s' has no port", opt, s);
	*colon = '\0';
	if (inet_pton(AF_INET, buf, &a) != 1)
		die("%s: '%s' is not an IPv4 address", opt, buf);
	*addr = ntohl(a.s_addr);
	*port = (uint16_t)parse_u64(opt, colon + 1, 65535);
	if (*port == 0)
		die("%s: port 0", opt);
}

static void
parse_args(int argc, char **argv, struct sim_opts *o)
{
	enum {
		OPT_STREAM = 256, OPT_DEST, OPT_RATE, OPT_BATCHES, OPT_SHUFFLE,
		OPT_LOSS, OPT_DUP, OPT_SEED, OPT_GSO, OPT_QUIET, OPT_REMOTE,
		OPT_SEQ, OPT_BATCH, OPT_PPB, OPT_POFF, OPT_PBYTES, OPT_DTYPE,
		OPT_ENDIAN, OPT_HUGE, OPT_PACKETS, OPT_CONTROL, OPT_CTL_APPLY,
		OPT_CTL_EXPECT, OPT_CTL_WAIT, OPT_CTL_LOG, OPT_SRC_PORT,
		OPT_SRC_PORTS,
	};
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "stream", required_argument, NULL, OPT_STREAM },
		{ "dest", required_argument, NULL, OPT_DEST },
		{ "src-port", required_argument, NULL, OPT_SRC_PORT },
		{ "src-ports", required_argument, NULL, OPT_SRC_PORTS },
		{ "rate", required_argument, NULL, OPT_RATE },
		{ "batches", required_argument, NULL, OPT_BATCHES },
		{ "packets", required_argument, NULL, OPT_PACKETS },
		{ "shuffle", required_argument, NULL, OPT_SHUFFLE },
		{ "loss", required_argument, NULL, OPT_LOSS },
		{ "dup", required_argument, NULL, OPT_DUP },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "gso", required_argument, NULL, OPT_GSO },
		{ "quiet", no_argument, NULL, OPT_QUIET },
		{ "allow-remote", no_argument, NULL, OPT_REMOTE },
		{ "allow-huge-batch", no_argument, NULL, OPT_HUGE },
		{ "seq", required_argument, NULL, OPT_SEQ },
		{ "batch-field", required_argument, NULL, OPT_BATCH },
		{ "ppb", required_argument, NULL, OPT_PPB },
		{ "payload-offset", required_argument, NULL, OPT_POFF },
		{ "payload-bytes", required_argument, NULL, OPT_PBYTES },
		{ "dtype", required_argument, NULL, OPT_DTYPE },
		{ "endian", required_argument, NULL, OPT_ENDIAN },
		{ "control", required_argument, NULL, OPT_CONTROL },
		{ "control-apply", no_argument, NULL, OPT_CTL_APPLY },
		{ "control-expect", required_argument, NULL, OPT_CTL_EXPECT },
		{ "control-wait-ms", required_argument, NULL, OPT_CTL_WAIT },
		{ "control-log", required_argument, NULL, OPT_CTL_LOG },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	memset(o, 0, sizeof(*o));
	o->batches = SIM_DEFAULT_BATCHES;
	o->seed = 1;
	o->gso = 1;
	while ((ch = getopt_long(argc, argv, "c:hqV", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			o->config = optarg;
			break;
		case OPT_STREAM:
			o->stream = optarg;
			break;
		case OPT_DEST:
			o->dest = optarg;
			break;
		case OPT_SRC_PORT:
			o->src_port = (uint16_t)parse_u64("--src-port", optarg,
			    65535);
			break;
		case OPT_SRC_PORTS:
			o->src_ports = (uint32_t)parse_u64("--src-ports",
			    optarg, SIM_MAX_SOCKS);
			break;
		case OPT_RATE:
			parse_rate(o, optarg);
			break;
		case OPT_BATCHES:
			o->batches = parse_u64("--batches", optarg, UINT64_MAX);
			break;
		case OPT_PACKETS:
			o->packets = parse_u64("--packets", optarg, UINT64_MAX);
			break;
		case OPT_SHUFFLE:
			o->shuffle = (uint32_t)parse_u64("--shuffle", optarg,
			    SIM_MAX_SHUFFLE);
			break;
		case OPT_LOSS:
			o->loss = parse_prob("--loss", optarg);
			break;
		case OPT_DUP:
			o->dup = parse_prob("--dup", optarg);
			break;
		case OPT_SEED:
			o->seed = parse_u64("--seed", optarg, UINT64_MAX);
			break;
		case OPT_GSO:
			o->gso = (uint32_t)parse_u64("--gso", optarg,
			    SIM_MAX_GSO);
			if (o->gso == 0)
				die("--gso: 0 is not 1..%d (1 sends one "
				    "datagram per call, without GSO)",
				    SIM_MAX_GSO);
			break;
		case 'q':
		case OPT_QUIET:
			o->quiet = true;
			break;
		case OPT_REMOTE:
			o->allow_remote = true;
			break;
		case OPT_HUGE:
			o->allow_huge = true;
			break;
		case OPT_SEQ:
			o->seq = parse_field("--seq", optarg);
			o->has_seq = true;
			break;
		case OPT_BATCH:
			o->batch = parse_field("--batch-field", optarg);
			o->has_batch = true;
			break;
		case OPT_PPB:
			o->ppb = (uint32_t)parse_u64("--ppb", optarg,
			    UINT32_MAX);
			o->has_ppb = true;
			break;
		case OPT_POFF:
			o->poff = (uint32_t)parse_u64("--payload-offset",
			    optarg, SIM_HDR_LEN + SIM_UDP_MAX);
			o->has_poff = true;
			break;
		case OPT_PBYTES:
			o->pbytes = (uint32_t)parse_u64("--payload-bytes",
			    optarg, SIM_UDP_MAX);
			o->has_pbytes = true;
			break;
		case OPT_DTYPE:
			o->dtype = parse_dtype(optarg);
			o->has_dtype = true;
			break;
		case OPT_ENDIAN:
			if (strcmp(optarg, "host") == 0)
				o->endian = CFG_ENDIAN_HOST;
			else if (strcmp(optarg, "network") == 0)
				o->endian = CFG_ENDIAN_NETWORK;
			else
				die("--endian: '%s' is not host or network",
				    optarg);
			o->has_endian = true;
			break;
		case OPT_CONTROL:
			o->control = optarg;
			break;
		case OPT_CTL_APPLY:
			o->control_apply = true;
			break;
		case OPT_CTL_EXPECT:
			o->control_expect = parse_u64("--control-expect",
			    optarg, UINT64_MAX);
			o->has_control_expect = true;
			break;
		case OPT_CTL_WAIT:
			o->control_wait_ms = parse_u64("--control-wait-ms",
			    optarg, 24ull * 3600 * 1000);
			o->has_control_wait = true;
			break;
		case OPT_CTL_LOG:
			o->control_log = optarg;
			break;
		case 'h':
			usage(0);
		case 'V':
			printf("daqiri-sim %s\n", DAQIRI_VERSION);
			exit(0);
		default:
			usage(2);
		}
	}
	if (optind != argc)
		usage(2);
	if (o->seed == 0)
		o->seed = 1;	/* xorshift needs a non-zero state */
	if (o->control == NULL && (o->control_apply ||
	    o->has_control_expect || o->has_control_wait ||
	    o->control_log != NULL))
		die("--control-apply, --control-expect, --control-wait-ms and "
		    "--control-log need --control udp://IP:PORT");
	if (!o->has_control_wait)
		o->control_wait_ms = SIM_CTL_WAIT_MS;
}

/* The reorder config named by --stream, or the first one there is; with
 * no --stream and no reorder config, *r_out is NULL and *ifc_out the first
 * interface (NULL if none), for a layout given entirely by flags. */
static void
pick_stream(const struct cfg *c, const char *want,
	    const struct cfg_interface **ifc_out,
	    const struct cfg_reorder **r_out)
{
	char names[1024] = "";
	int i, j;

	for (i = 0; i < c->ninterfaces; i++) {
		const struct cfg_interface *ifc = &c->interfaces[i];

		for (j = 0; j < ifc->rx.nreorders; j++) {
			const struct cfg_reorder *r = &ifc->rx.reorders[j];
			char name[2 * CFG_NAME_MAX];

			snprintf(name, sizeof(name), "%s/%s", ifc->name,
			    r->name);
			if (want == NULL || strcmp(want, name) == 0) {
				*ifc_out = ifc;
				*r_out = r;
				return;
			}
			if (strlen(names) + strlen(name) + 3 < sizeof(names)) {
				strcat(names, names[0] ? ", " : "");
				strcat(names, name);
			}
		}
	}
	if (want == NULL) {
		*ifc_out = c->ninterfaces > 0 ? &c->interfaces[0] : NULL;
		*r_out = NULL;
		return;
	}
	die("--stream: no stream '%s' (there are: %s)", want,
	    names[0] ? names : "none");
}

/* Check that a bit field lies in the UDP payload; its end in bytes. */
static uint32_t
field_end(const char *what, const struct cfg_bitfield *f)
{
	if (f->bit_width < 1 || f->bit_width > 32)
		die("%s field: width %u is not 1..32", what, f->bit_width);
	if (f->bit_offset < SIM_HDR_BITS)
		die("%s field at bit %u lies in the Ethernet/IPv4/UDP header "
		    "(bits 0..%d), which the kernel writes, not the simulator",
		    what, f->bit_offset, SIM_HDR_BITS - 1);
	return (f->bit_offset + f->bit_width + 7) / 8 - SIM_HDR_LEN;
}

static void
resolve_layout(const struct sim_opts *o, struct sim_layout *l,
	       uint32_t *daddr, uint16_t *dport)
{
	const struct cfg_interface *ifc = NULL;
	const struct cfg_reorder *r = NULL;
	bool all_flags = o->has_seq && o->has_ppb && o->has_poff &&
	    o->has_pbytes;
	uint32_t end, elem_bits;
	static struct cfg c;
	static struct cfg_diags d;

	memset(l, 0, sizeof(*l));
	*daddr = 0;
	*dport = 0;
	/* The layout flags replace single values of the config's layout,
	 * all four of them too; only a config without reorder_configs leaves
	 * the layout to the flags alone. */
	{
		/* without -c, what daqirid reads without it */
		const char *file = o->config != NULL ? o->config :
		    access(CFG_DEFAULT_FILE, F_OK) == 0 ? CFG_DEFAULT_FILE :
		    NULL;
		int rc = file != NULL ? cfg_load(file, &c, &d) :
		    cfg_parse(cfg_default_text, cfg_default_len,
		    "<built-in default>", &c, &d);

		if (rc != 0) {
			cfg_diags_print(&d, stderr);
			die("cannot use config %s", file != NULL ? file :
			    "<built-in default>");
		}
		if (o->config == NULL && !o->quiet)
			fprintf(stderr, "daqiri-sim: config %s (no -c: the one "
			    "daqirid reads without -c)\n", file != NULL ? file :
			    "<built-in default>");
		pick_stream(&c, o->stream, &ifc, &r);
	}
	if (r == NULL && !all_flags)
		die("the config has no reorder_configs to simulate; give the "
		    "layout with --seq, --ppb, --payload-offset and "
		    "--payload-bytes");
	if (ifc != NULL && ifc->socket.present && ifc->socket.local.set) {
		*daddr = ifc->socket.local.addr;
		*dport = ifc->socket.local.port;
	}
	if (r != NULL) {
		snprintf(l->stream, sizeof(l->stream), "%s/%s", ifc->name,
		    r->name);
		l->method = r->method;
		l->seq = r->seq;
		l->batch = r->batch;
		l->ppb = r->packets_per_batch;
		l->payload_offset = r->payload_byte_offset;
		l->payload_bytes = r->payload_bytes;
		l->dtype = r->has_data_types ? r->input_type : DAQIRI_DTYPE_RAW;
		l->endian = r->endianness;
	} else {
		snprintf(l->stream, sizeof(l->stream), "(flags)");
		l->method = CFG_METHOD_SEQ_PACKETS_PER_BATCH;
		l->dtype = DAQIRI_DTYPE_INT8;
	}
	if (o->has_seq)
		l->seq = o->seq;
	if (o->has_batch) {
		l->batch = o->batch;
		l->method = CFG_METHOD_SEQ_BATCH_NUMBER;
	}
	if (o->has_ppb)
		l->ppb = o->ppb;
	if (o->has_poff)
		l->payload_offset = o->poff;
	if (o->has_pbytes)
		l->payload_bytes = o->pbytes;
	if (o->has_dtype)
		l->dtype = o->dtype;
	if (o->has_endian)
		l->endian = o->endian;
	if (l->method == CFG_METHOD_SEQ_BATCH_NUMBER) {
		if (l->batch.bit_width > l->seq.bit_width)
			die("batch field wider than the sequence field");
		if (!o->has_ppb)
			l->ppb = (uint32_t)(1ull << (l->seq.bit_width -
			    l->batch.bit_width));
	}
	if (l->ppb == 0)
		die("packets per batch is 0");
	if (l->ppb > SIM_MAX_PPB && !o->allow_huge) {
		if (l->method == CFG_METHOD_SEQ_BATCH_NUMBER && !o->has_ppb)
			die("a batch of %u packets (2^(%u-bit sequence - %u-bit "
			    "batch field)) is more than %u: give --ppb N, a "
			    "wider --batch-field, or --allow-huge-batch to send "
			    "it anyway", l->ppb, l->seq.bit_width,
			    l->batch.bit_width, SIM_MAX_PPB);
		die("a batch of %u packets is more than %u: give a smaller "
		    "--ppb, or --allow-huge-batch to send it anyway", l->ppb,
		    SIM_MAX_PPB);
	}
	if (l->payload_offset < SIM_HDR_LEN)
		die("payload_byte_offset %u lies in the Ethernet/IPv4/UDP "
		    "header (the first %d bytes)", l->payload_offset,
		    SIM_HDR_LEN);
	if (l->payload_bytes == 0)
		die("payload bytes per packet unknown: give --payload-bytes");
	elem_bits = l->dtype == DAQIRI_DTYPE_INT4 ? 4 :
	    l->dtype == DAQIRI_DTYPE_INT16 ? 16 :
	    l->dtype == DAQIRI_DTYPE_INT32 ? 32 : 8;
	if ((uint64_t)l->payload_bytes * 8 % elem_bits != 0)
		die("%u payload bytes are not a whole number of %s samples",
		    l->payload_bytes, daqiri_dtype_name(l->dtype));
	l->sample_off = l->payload_offset - SIM_HDR_LEN;
	l->dgram_len = l->sample_off + l->payload_bytes;
	l->prefix_only = true;
	end = field_end("sequence", &l->seq);
	if (end > l->sample_off)
		l->prefix_only = false;
	if (end > l->dgram_len)
		l->dgram_len = end;
	if (l->method == CFG_METHOD_SEQ_BATCH_NUMBER) {
		end = field_end("batch", &l->batch);
		if (end > l->sample_off)
			l->prefix_only = false;
		if (end > l->dgram_len)
			l->dgram_len = end;
	}
	if (l->dgram_len > SIM_UDP_MAX)
		die("datagrams of %u bytes exceed the UDP maximum of %d",
		    l->dgram_len, SIM_UDP_MAX);
}

/* Write v big-endian into bits [off, off + width) of b, any alignment. */
static void
put_bits(uint8_t *b, uint32_t off, uint32_t width, uint32_t v)
{
	uint32_t j, p;

	for (j = 0; j < width; j++) {
		p = off + j;
		if ((v >> (width - 1 - j)) & 1)
			b[p / 8] |= (uint8_t)(0x80 >> (p % 8));
		else
			b[p / 8] &= (uint8_t)~(0x80 >> (p % 8));
	}
}

static int
pattern(uint32_t slot, uint64_t e)
{
	return (int)((3 * (uint64_t)slot + e) % 15) - 7;
}

/* The pattern times gain_milli / 1000 (--control-apply), rounded half
 * away from zero and clamped to [lo, hi], the sample type's range. */
static int64_t
gained(uint32_t slot, uint64_t e, int32_t gain_milli, int64_t lo, int64_t hi)
{
	int64_t v = pattern(slot, e);

	if (gain_milli == 1000)
		return v;
	v *= gain_milli;
	v = (v + (v >= 0 ? 500 : -500)) / 1000;
	return v < lo ? lo : v > hi ? hi : v;
}

/* The sample bytes of slot s (period 5: only s mod 5 matters), scaled by
 * gain_milli / 1000 (1000: the pattern itself). */
static void
make_samples(const struct sim_layout *l, uint32_t s, int32_t gain,
	     uint8_t *out)
{
	uint32_t n = l->payload_bytes, k;
	bool be = l->endian == CFG_ENDIAN_NETWORK;

	switch (l->dtype) {
	case DAQIRI_DTYPE_INT4:
		for (k = 0; k < n; k++)
			out[k] = (uint8_t)((gained(s, 2 * (uint64_t)k, gain,
			    -8, 7) & 0xF) << 4 | (gained(s, 2 * (uint64_t)k + 1,
			    gain, -8, 7) & 0xF));
		break;
	case DAQIRI_DTYPE_INT16:
		for (k = 0; k < n / 2; k++) {
			uint16_t v = (uint16_t)(int16_t)gained(s, k, gain,
			    INT16_MIN, INT16_MAX);

			out[2 * k + (be ? 0 : 1)] = (uint8_t)(v >> 8);
			out[2 * k + (be ? 1 : 0)] = (uint8_t)v;
		}
		break;
	case DAQIRI_DTYPE_INT32:
		for (k = 0; k < n / 4; k++) {
			uint32_t v = (uint32_t)(int32_t)gained(s, k, gain,
			    INT32_MIN, INT32_MAX);
			int i;

			for (i = 0; i < 4; i++)
				out[4 * k + (be ? (uint32_t)i : 3u - i)] =
				    (uint8_t)(v >> (24 - 8 * i));
		}
		break;
	default:			/* int8, or raw bytes */
		for (k = 0; k < n; k++)
			out[k] = (uint8_t)(int8_t)gained(s, k, gain, INT8_MIN,
			    INT8_MAX);
		break;
	}
}

/* The field values packet g carries: sequence and batch id (the batch
 * field's value for seq_batch_number). */
static void
field_values(const struct sim_layout *l, uint64_t g, uint32_t *seq,
	     uint32_t *batch)
{
	uint64_t b = g / l->ppb;

	*seq = l->seq.bit_width == 32 ? (uint32_t)g :
	    (uint32_t)(g & ((1ull << l->seq.bit_width) - 1));
	if (l->method == CFG_METHOD_SEQ_BATCH_NUMBER)
		*batch = (uint32_t)(b & ((1ull << l->batch.bit_width) - 1));
	else
		*batch = (uint32_t)b;
}

/* Fields of packet g written into the datagram bytes d (UDP payload). */
static void
put_fields(const struct sim_layout *l, uint8_t *d, uint64_t g)
{
	uint32_t seq, batch;

	field_values(l, g, &seq, &batch);
	put_bits(d, l->seq.bit_offset - SIM_HDR_BITS, l->seq.bit_width, seq);
	if (l->method == CFG_METHOD_SEQ_BATCH_NUMBER)
		put_bits(d, l->batch.bit_offset - SIM_HDR_BITS,
		    l->batch.bit_width, batch);
}

/* The sender. Datagrams go out in sendmmsg bursts; with GSO each message
 * carries up to gso datagrams as segments of one send. */
struct sim_tx {
	const struct sim_layout *l;
	const struct sim_opts *o;
	int fd;
	/* --src-ports: a message from each in turn (fd is fds[0]) */
	int fds[SIM_MAX_SOCKS];
	uint32_t nfd, next_fd;
	uint32_t gso;
	uint8_t *samples[SIM_PATTERN_PERIOD];
	uint8_t *dbuf;			/* per datagram of a burst */
	size_t dstride;			/* bytes of one dbuf entry */
	struct mmsghdr msgs[SIM_MAX_MSGS];
	struct iovec *iov;		/* 2 per datagram */
	uint8_t cmsg[SIM_MAX_MSGS][CMSG_SPACE(sizeof(uint16_t))];
	uint64_t t0;
	double ns_per_pkt;		/* 0 = unpaced */
	uint32_t burst;			/* datagrams per sendmmsg */
	bool refused_warned;
	struct sim_totals tot;
	struct sim_ctl *ctl;
};

static void
tx_init(struct sim_tx *t, const struct sim_layout *l,
	const struct sim_opts *o, int fd)
{
	uint32_t s, n;

	memset(t, 0, sizeof(*t));
	t->l = l;
	t->o = o;
	t->fd = fd;
	t->gso = o->gso;
	if (t->gso > 1 && t->gso * (uint64_t)l->dgram_len > SIM_UDP_MAX) {
		uint32_t fit = SIM_UDP_MAX / l->dgram_len;

		fprintf(stderr, "daqiri-sim: --gso %u: only %u datagrams of %u "
		    "bytes fit one send; using %u\n", t->gso, fit, l->dgram_len,
		    fit ? fit : 1);
		t->gso = fit ? fit : 1;
	}
	for (s = 0; s < SIM_PATTERN_PERIOD; s++) {
		if ((t->samples[s] = malloc(l->payload_bytes)) == NULL)
			die("out of memory");
		make_samples(l, s, 1000, t->samples[s]);
	}
	n = SIM_MAX_MSGS * t->gso;
	t->dstride = l->prefix_only ? l->sample_off : l->dgram_len;
	if ((t->dbuf = calloc(n, t->dstride ? t->dstride : 1)) == NULL ||
	    (t->iov = calloc(2 * (size_t)n, sizeof(*t->iov))) == NULL)
		die("out of memory");
	t->burst = n;
	if (o->pps > 0) {
		double per = o->pps * SIM_BURST_NS / 1e9;

		t->ns_per_pkt = 1e9 / o->pps;
		if (per < t->burst)
			t->burst = per < t->gso ? t->gso : (uint32_t)per;
	}
}

static void
tx_fini(struct sim_tx *t)
{
	int s;

	for (s = 0; s < SIM_PATTERN_PERIOD; s++)
		free(t->samples[s]);
	free(t->dbuf);
	free(t->iov);
	free(t);
}

static int
ctl_open(const char *spec, bool allow_remote)
{
	struct sockaddr_in sa;
	struct in_addr ia;
	uint32_t addr;
	uint16_t port;
	int fd, v = SIM_CTL_RCVBUF;

	parse_dest("--control", spec, &addr, &port);
	if ((addr >> 24) != 127 && !allow_remote) {
		ia.s_addr = htonl(addr);
		die("--control: refusing to listen on %s, which is not a "
		    "loopback address (--allow-remote to do it anyway)",
		    inet_ntoa(ia));
	}
	if ((fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0)) == -1)
		die("socket: %s", strerror(errno));
	/* a burst of decisions must not be lost while the sender is busy */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(addr);
	sa.sin_port = htons(port);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1)
		die("--control: bind %s: %s", spec, strerror(errno));
	return fd;
}

/* One control packet of len bytes, received at now. */
static void
ctl_take(struct sim_ctl *c, const uint8_t *p, uint32_t len, bool trunc,
	 uint64_t now)
{
	struct daqiri_ctl m;
	uint64_t lat;

	if (trunc || daqiri_ctl_decode(p, len, &m) != 0) {
		c->bad++;
		return;
	}
	if (c->any && m.seq <= c->last_seq) {
		c->out_of_order++;
		return;
	}
	c->missing += c->any ? m.seq - c->last_seq - 1 : m.seq;
	c->any = true;
	c->last_seq = m.seq;
	c->applied++;
	if (m.gain_milli != c->gain_milli) {
		c->gain_milli = m.gain_milli;
		c->gain_changed = true;
	}
	/* a publish_ns from the future is another host's clock: 0 */
	lat = now > m.publish_ns ? now - m.publish_ns : 0;
	if (c->nlat == c->caplat) {
		size_t cap = c->caplat ? 2 * c->caplat : 4096;
		uint64_t *n = realloc(c->lat, cap * sizeof(*n));

		if (n == NULL)
			die("out of memory");
		c->lat = n;
		c->caplat = cap;
	}
	c->lat[c->nlat++] = lat;
	if (c->log != NULL)
		fprintf(c->log, "%u %llu %llu %d\n", m.seq,
		    (unsigned long long)m.tensor_seq,
		    (unsigned long long)lat, m.gain_milli);
}

/* Everything waiting on the control socket, without blocking. */
static void
ctl_drain(struct sim_ctl *c)
{
	uint64_t now;
	int r, i;

	if (c == NULL || c->fd < 0)
		return;
	do {
		for (i = 0; i < SIM_CTL_BATCH; i++) {
			memset(&c->msgs[i].msg_hdr, 0,
			    sizeof(c->msgs[i].msg_hdr));
			c->iov[i].iov_base = c->buf[i];
			c->iov[i].iov_len = SIM_CTL_BUF;
			c->msgs[i].msg_hdr.msg_iov = &c->iov[i];
			c->msgs[i].msg_hdr.msg_iovlen = 1;
		}
		r = recvmmsg(c->fd, c->msgs, SIM_CTL_BATCH, MSG_DONTWAIT,
		    NULL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			die("--control: recvmmsg: %s", strerror(errno));
		}
		now = daqiri_mono_ns();
		for (i = 0; i < r; i++)
			ctl_take(c, c->buf[i], c->msgs[i].msg_len,
			    (c->msgs[i].msg_hdr.msg_flags & MSG_TRUNC) != 0,
			    now);
	} while (r == SIM_CTL_BATCH);
}

/* Wait up to timeout_ns for control packets (poll, so that one is taken
 * as soon as it arrives: its latency is not the sender's sleep), then
 * take what came. */
static void
ctl_wait(struct sim_ctl *c, uint64_t timeout_ns)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	struct timespec ts;

	ts.tv_sec = (time_t)(timeout_ns / 1000000000u);
	ts.tv_nsec = (long)(timeout_ns % 1000000000u);
	if (ppoll(&pfd, 1, &ts, NULL) > 0)
		ctl_drain(c);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The closing "control ..." line; latency percentiles by nearest rank. */
static void
ctl_report(struct sim_ctl *c)
{
	size_t n = c->nlat;

	printf("control applied=%llu bad=%llu out_of_order=%llu missing=%llu "
	    "last_seq=", (unsigned long long)c->applied,
	    (unsigned long long)c->bad, (unsigned long long)c->out_of_order,
	    (unsigned long long)c->missing);
	if (c->any)
		printf("%u", c->last_seq);
	else
		printf("-1");
	printf(" gain=%.3f latency_us", c->gain_milli / 1000.0);
	if (n == 0) {
		printf(" p50=- p99=- max=-\n");
		return;
	}
	qsort(c->lat, n, sizeof(*c->lat), cmp_u64);
	printf(" p50=%.1f p99=%.1f max=%.1f\n",
	    c->lat[(n * 50 + 99) / 100 - 1] / 1e3,
	    c->lat[(n * 99 + 99) / 100 - 1] / 1e3, c->lat[n - 1] / 1e3);
}

/* --control-apply: the samples again, at the gain now in force. */
static void
tx_regain(struct sim_tx *t)
{
	uint32_t s;

	if (t->ctl == NULL || !t->ctl->apply || !t->ctl->gain_changed)
		return;
	for (s = 0; s < SIM_PATTERN_PERIOD; s++)
		make_samples(t->l, s, t->ctl->gain_milli, t->samples[s]);
	t->ctl->gain_changed = false;
}

/* Sleep until datagram number `k` is due. */
static void
tx_pace(struct sim_tx *t, uint64_t k)
{
	struct timespec ts;
	uint64_t due;

	if (t->ns_per_pkt <= 0)
		return;
	due = t->t0 + (uint64_t)((double)k * t->ns_per_pkt);
	if (t->ctl != NULL) {
		uint64_t now;

		/* wait on the control socket instead of sleeping */
		while ((now = daqiri_mono_ns()) < due && !sim_stop)
			ctl_wait(t->ctl, due - now);
		return;
	}
	if (daqiri_mono_ns() >= due)
		return;
	ts.tv_sec = (time_t)(due / 1000000000u);
	ts.tv_nsec = (long)(due % 1000000000u);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	    EINTR && !sim_stop)
		;
}

/* Send pkts[0..n) in bursts. */
static void
tx_send(struct sim_tx *t, const struct sim_pkt *pkts, uint32_t n)
{
	const struct sim_layout *l = t->l;
	uint32_t first[SIM_MAX_MSGS + 1];
	uint32_t i = 0;

	while (i < n && !sim_stop) {
		uint32_t want = n - i < t->burst ? n - i : t->burst;
		uint32_t nmsg = 0, nd = 0, ni = 0, done = 0, m, j;

		tx_regain(t);
		while (nd < want) {
			struct msghdr *h = &t->msgs[nmsg].msg_hdr;
			uint32_t segs = want - nd < t->gso ? want - nd : t->gso;

			memset(h, 0, sizeof(*h));
			h->msg_iov = &t->iov[ni];
			first[nmsg] = nd;
			for (j = 0; j < segs; j++, nd++) {
				uint64_t g = pkts[i + nd].g;
				const uint8_t *smp = t->samples[(g % l->ppb) %
				    SIM_PATTERN_PERIOD];
				uint8_t *d = t->dbuf + nd * t->dstride;

				memset(d, 0, t->dstride);
				if (!l->prefix_only)
					memcpy(d + l->sample_off, smp,
					    l->payload_bytes);
				put_fields(l, d, g);
				t->iov[ni].iov_base = d;
				t->iov[ni++].iov_len = t->dstride;
				if (l->prefix_only) {
					/* the samples are shared, not copied */
					t->iov[ni].iov_base = (void *)smp;
					t->iov[ni++].iov_len = l->payload_bytes;
				}
			}
			h->msg_iovlen = (size_t)(&t->iov[ni] - h->msg_iov);
			if (segs > 1) {
				struct cmsghdr *c;
				uint16_t sz = (uint16_t)l->dgram_len;

				h->msg_control = t->cmsg[nmsg];
				h->msg_controllen = sizeof(t->cmsg[nmsg]);
				c = CMSG_FIRSTHDR(h);
				c->cmsg_level = SOL_UDP;
				c->cmsg_type = UDP_SEGMENT;
				c->cmsg_len = CMSG_LEN(sizeof(sz));
				memcpy(CMSG_DATA(c), &sz, sizeof(sz));
			}
			nmsg++;
		}
		first[nmsg] = nd;
		tx_pace(t, t->tot.sent);
		while (done < nmsg && !sim_stop) {
			/* several source ports: one message from each in
			 * turn, so every batch is spread over them */
			int r = t->nfd > 1 ? sendmmsg(t->fds[t->next_fd],
			    t->msgs + done, 1, 0) : sendmmsg(t->fd,
			    t->msgs + done, nmsg - done, 0);

			if (r < 0) {
				if (errno == EINTR)
					continue;
				if (errno == ECONNREFUSED) {
					/* an earlier datagram found nobody;
					 * this one was not sent: again */
					if (!t->refused_warned)
						fprintf(stderr, "daqiri-sim: "
						    "nobody is listening at the "
						    "destination (yet)\n");
					t->refused_warned = true;
					continue;
				}
				if (errno == ENOBUFS || errno == EAGAIN) {
					usleep(50);
					continue;
				}
				die("sendmmsg: %s", strerror(errno));
			}
			done += (uint32_t)r;
			if (t->nfd > 1)
				t->next_fd = (t->next_fd + 1) % t->nfd;
		}
		ctl_drain(t->ctl);
		for (m = 0; m < done; m++) {
			for (j = first[m]; j < first[m + 1]; j++) {
				if (pkts[i + j].dup)
					t->tot.duplicates++;
				else
					t->tot.unique++;
			}
			t->tot.sent += first[m + 1] - first[m];
			t->tot.bytes += (uint64_t)(first[m + 1] - first[m]) *
			    l->dgram_len;
		}
		i += nd;
	}
}

static void
shuffle(struct sim_pkt *p, uint32_t n, uint32_t w, uint64_t *rng)
{
	uint32_t base, i, k, len;

	if (w <= 1)
		return;
	for (base = 0; base < n; base += w) {
		len = n - base < w ? n - base : w;
		for (i = len - 1; i > 0; i--) {
			struct sim_pkt tmp;

			k = (uint32_t)(sim_rand(rng) % (i + 1));
			tmp = p[base + i];
			p[base + i] = p[base + k];
			p[base + k] = tmp;
		}
	}
}

static int
open_socket(uint32_t addr, uint16_t port, uint16_t src_port)
{
	struct sockaddr_in sa;
	int fd, v = SIM_SNDBUF;

	if ((fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		die("socket: %s", strerror(errno));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
	if (src_port != 0) {
		/* an instrument's fixed source port (a flow may match it) */
		memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		sa.sin_port = htons(src_port);
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1)
			die("--src-port %u: bind: %s", src_port,
			    strerror(errno));
	}
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(addr);
	sa.sin_port = htons(port);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1)
		die("connect udp://%s:%u: %s", inet_ntoa(sa.sin_addr), port,
		    strerror(errno));
	return fd;
}

static const char *
dtype_label(enum daqiri_dtype t)
{
	return t == DAQIRI_DTYPE_RAW ? "raw bytes (int8 pattern)" :
	    daqiri_dtype_name(t);
}

int
main(int argc, char **argv)
{
	struct sim_opts o;
	struct sim_layout l;
	struct sim_tx *t;
	struct sim_pkt *pkts;
	struct sim_ctl ctl;
	struct sigaction sa;
	struct in_addr ia;
	uint64_t rng, g = 0, total, t_end;
	uint32_t daddr, chunk, n, k, cap;
	uint16_t dport;
	double secs;
	int fd, rc = 0;

	parse_args(argc, argv, &o);
	resolve_layout(&o, &l, &daddr, &dport);
	if (o.dest != NULL)
		parse_dest("--dest", o.dest, &daddr, &dport);
	if (dport == 0)
		die("no destination: the config has no socket_config.local_addr "
		    "with a port; give --dest udp://IP:PORT");
	if (daddr == INADDR_ANY)
		daddr = INADDR_LOOPBACK;
	if ((daddr >> 24) != 127 && !o.allow_remote) {
		ia.s_addr = htonl(daddr);
		die("refusing to send to %s, which is not a loopback address "
		    "(--allow-remote to do it anyway)", inet_ntoa(ia));
	}
	if (o.rate > 0)
		o.pps = o.rate_gbps ? o.rate / (8.0 * l.dgram_len) : o.rate;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sim_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	if (o.src_ports > 1 && (o.src_port == 0 ||
	    o.src_port + (uint64_t)o.src_ports - 1 > 65535))
		die("--src-ports %u needs --src-port PORT, with PORT + %u <= "
		    "65535", o.src_ports, o.src_ports - 1);
	fd = open_socket(daddr, dport, o.src_port);
	if ((t = malloc(sizeof(*t))) == NULL)
		die("out of memory");
	tx_init(t, &l, &o, fd);
	t->fds[0] = fd;
	t->nfd = o.src_ports > 1 ? o.src_ports : 1;
	for (uint32_t f = 1; f < t->nfd; f++)
		t->fds[f] = open_socket(daddr, dport,
		    (uint16_t)(o.src_port + f));
	memset(&ctl, 0, sizeof(ctl));
	ctl.fd = -1;
	ctl.gain_milli = 1000;
	if (o.control != NULL) {
		ctl.fd = ctl_open(o.control, o.allow_remote);
		ctl.apply = o.control_apply;
		if (o.control_log != NULL &&
		    (ctl.log = fopen(o.control_log, "we")) == NULL)
			die("--control-log %s: %s", o.control_log,
			    strerror(errno));
		t->ctl = &ctl;
	}
	ia.s_addr = htonl(daddr);
	if (!o.quiet) {
		printf("sim stream=%s dest=udp://%s:%u datagram=%u "
		    "ppb=%u seq=%u:%u", l.stream, inet_ntoa(ia), dport,
		    l.dgram_len, l.ppb, l.seq.bit_offset, l.seq.bit_width);
		if (l.method == CFG_METHOD_SEQ_BATCH_NUMBER)
			printf(" batch=%u:%u", l.batch.bit_offset,
			    l.batch.bit_width);
		printf(" samples=%s@%u+%u endian=%s batches=%llu shuffle=%u "
		    "loss=%g dup=%g seed=%llu gso=%u rate=", dtype_label(l.dtype),
		    l.payload_offset, l.payload_bytes,
		    l.endian == CFG_ENDIAN_NETWORK ? "network" : "host",
		    (unsigned long long)o.batches, o.shuffle, o.loss, o.dup,
		    (unsigned long long)o.seed, t->gso);
		if (o.pps > 0)
			printf("%.0fpps\n", o.pps);
		else
			printf("unlimited\n");
		fflush(stdout);
	}

	/* Packets are generated a chunk (one shuffle window, or a burst) at
	 * a time: losses and duplicates decided per packet, then the chunk
	 * shuffled, so memory stays bounded for endless runs. */
	rng = o.seed;
	chunk = o.shuffle > 1 ? o.shuffle : t->burst;
	cap = 2 * chunk;
	if ((pkts = calloc(cap, sizeof(*pkts))) == NULL)
		die("out of memory");
	total = o.batches == 0 ? UINT64_MAX : o.batches * (uint64_t)l.ppb;
	if (o.batches != 0 && total / l.ppb != o.batches)
		die("--batches: too many");
	if (o.packets != 0 && o.packets < total)
		total = o.packets;
	if (!o.quiet) {
		fprintf(stderr, "daqiri-sim: %u packets of %u bytes per batch "
		    "(%llu bytes); ", l.ppb, l.dgram_len,
		    (unsigned long long)l.ppb * l.dgram_len);
		if (total == UINT64_MAX)
			fprintf(stderr, "sending until interrupted\n");
		else if (o.packets != 0 && total == o.packets)
			fprintf(stderr, "%llu packets (--packets): %llu bytes "
			    "to send\n", (unsigned long long)total,
			    (unsigned long long)total * l.dgram_len);
		else
			fprintf(stderr, "%llu batches: %llu packets, %llu "
			    "bytes to send\n", (unsigned long long)o.batches,
			    (unsigned long long)total,
			    (unsigned long long)total * l.dgram_len);
	}
	t->t0 = daqiri_mono_ns();
	while (g < total && !sim_stop) {
		n = 0;
		for (k = 0; k < chunk && g < total; k++, g++) {
			if (o.loss > 0 && sim_rand01(&rng) < o.loss) {
				uint32_t seq, batch;

				field_values(&l, g, &seq, &batch);
				t->tot.dropped++;
				if (!o.quiet)
					printf("dropped seq=%u batch=%u "
					    "slot=%llu\n", seq, batch,
					    (unsigned long long)(g % l.ppb));
				continue;
			}
			pkts[n].g = g;
			pkts[n++].dup = false;
			if (o.dup > 0 && sim_rand01(&rng) < o.dup) {
				pkts[n].g = g;
				pkts[n++].dup = true;
			}
		}
		shuffle(pkts, n, o.shuffle, &rng);
		tx_send(t, pkts, n);
	}
	t_end = daqiri_mono_ns();
	if (ctl.fd >= 0) {
		/* the decisions on the last tensors are still on their way */
		uint64_t lim = daqiri_mono_ns() + o.control_wait_ms * 1000000,
		    now;

		ctl_drain(&ctl);
		while (o.has_control_expect && ctl.applied < o.control_expect &&
		    !sim_stop && (now = daqiri_mono_ns()) < lim)
			ctl_wait(&ctl, lim - now);
		if (o.has_control_expect && ctl.applied < o.control_expect) {
			fprintf(stderr, "daqiri-sim: --control-expect %llu: %llu "
			    "control packets applied within %llu ms of the last "
			    "send\n", (unsigned long long)o.control_expect,
			    (unsigned long long)ctl.applied,
			    (unsigned long long)o.control_wait_ms);
			rc = 1;
		}
	}
	if (!o.quiet && o.loss > 0)
		printf("dropped total=%llu\n",
		    (unsigned long long)t->tot.dropped);
	if (sim_stop && !o.quiet)
		printf("interrupted\n");
	secs = (double)(t_end - t->t0) / 1e9;
	printf("sim sent=%llu unique=%llu dropped=%llu duplicates=%llu "
	    "batches=%llu bytes=%llu seconds=%.6f gbps=%.3f\n",
	    (unsigned long long)t->tot.sent,
	    (unsigned long long)t->tot.unique,
	    (unsigned long long)t->tot.dropped,
	    (unsigned long long)t->tot.duplicates,
	    (unsigned long long)((g + l.ppb - 1) / l.ppb),
	    (unsigned long long)t->tot.bytes, secs,
	    secs > 0 ? (double)t->tot.bytes * 8 / secs / 1e9 : 0.0);
	if (ctl.fd >= 0) {
		ctl_report(&ctl);
		if (ctl.log != NULL && fclose(ctl.log) != 0)
			die("--control-log %s: %s", o.control_log,
			    strerror(errno));
		close(ctl.fd);
		free(ctl.lat);
	}
	fflush(stdout);
	tx_fini(t);
	free(pkts);
	close(fd);
	return rc;
}
