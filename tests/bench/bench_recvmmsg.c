/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_recvmmsg: the baselines of the end-to-end benchmark. It receives
 * UDP datagrams on 127.0.0.1:PORT the way the socket engine does (same
 * socket options, the same ring of read slots, recvmmsg with
 * MSG_WAITFORONE on a blocking socket) and only counts them, so the
 * daemon's rate can be put next to what the kernel alone delivers on one
 * core; with --convert it also converts every payload into its slot of a
 * tensor pool with the daemon's own kernel (cvt_slot_fast), the same work
 * as a reorder stream without the daemon around it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "convert.h"
#include "convert_cpu.h"

#ifndef SOL_UDP
#define SOL_UDP			17
#endif
#ifndef UDP_GRO
#define UDP_GRO			104
#endif
#ifndef SO_RXQ_OVFL
#define SO_RXQ_OVFL		40
#endif
#ifndef SO_MEMINFO
#define SO_MEMINFO		55
#endif
#define BR_MEMINFO_DROPS	8	/* SK_MEMINFO_DROPS (sock_diag.h) */
#define BR_MEMINFO_VARS		9

/* Defaults mirror etc/daqirid.yaml's rx queue and the socket engine:
 * 1024 region buffers of 9000 bytes, read 64 messages at a time; with
 * UDP_GRO a read slot is as many buffers as hold 42 + 65507 bytes. */
#define BR_HDR_LEN		42	/* the engine's synthetic header */
#define BR_UDP_MAX		65507
#define BR_DEFAULT_NBUFS	1024
#define BR_DEFAULT_BUF_SIZE	9000
#define BR_DEFAULT_BATCH	64
#define BR_MAX_BATCH		1024
#define BR_RCVBUF_MIN		(64u << 20)	/* ENGINE_RCVBUF_MIN */
#define BR_CMSG_SPACE		(CMSG_SPACE(sizeof(int)) + \
				 CMSG_SPACE(sizeof(uint32_t)))
#define BR_DEFAULT_IDLE_MS	500	/* end this long after the last datagram */
/* --convert defaults: etc/daqirid.yaml's reorder config and its tensors
 * region (128 packets of 8000 sample bytes per tensor, 32 tensors). */
#define BR_DEFAULT_PPB		128
#define BR_DEFAULT_TENSORS	32
#define BR_DEFAULT_PAYLOAD	8000
#define BR_SEQ_BYTES		4	/* big-endian packet counter */

/* How the receiver waits for data. */
enum br_wait {
	BR_WAIT_POLL,		/* like the engine's blocking mode: ppoll when
				 * the last read did not fill every message,
				 * then a non-blocking recvmmsg */
	BR_WAIT_RECV,		/* a blocking recvmmsg (MSG_WAITFORONE) */
	BR_WAIT_BUSY,		/* non-blocking recvmmsg in a spin */
	BR_WAIT_MAX
};
static const char *const br_wait_names[BR_WAIT_MAX] = {
	"poll", "recv", "busy"
};

struct br_opts {
	uint16_t port;
	bool gro;
	uint32_t nbufs, buf_size, batch;
	uint64_t rcvbuf;		/* 0 = like the engine */
	uint64_t expect;		/* stop after this many datagrams */
	uint32_t idle_ms;
	uint32_t payload_skip;		/* bytes of a datagram not counted as
					 * payload (the sensor's header) */
	enum br_wait wait;
	/* --convert: place every payload like a reorder stream */
	bool convert;
	enum daqiri_dtype in, out;
	uint32_t ppb, tensors, payload_bytes;
	uint32_t seq_offset;		/* UDP payload byte of the counter */
};

/* The tensor pool of --convert: tensors x ppb slots. */
struct br_place {
	uint8_t *mem;
	uint64_t slot_bytes, tensor_bytes;
	uint64_t placed, malformed;
};

struct br_count {
	uint64_t dgrams, bytes, payload_bytes, calls, gro_reads, truncated;
	uint32_t ovfl;			/* last SO_RXQ_OVFL value */
	uint64_t t_first, t_last;
};

static volatile sig_atomic_t br_stop;

static void
on_signal(int sig)
{
	(void)sig;
	br_stop = 1;
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double
cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	    (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static void __attribute__((noreturn))
usage(int rc)
{
	fprintf(rc ? stderr : stdout,
	    "usage: bench_recvmmsg -p PORT [--no-gro] [--nbufs N] "
	    "[--buf-size BYTES] [--batch N]\n"
	    "                      [--rcvbuf BYTES] [--expect DATAGRAMS] "
	    "[--idle-ms MS] [--payload-skip BYTES]\n"
	    "                      [--wait poll|recv|busy]\n"
	    "                      [--convert IN:OUT [--ppb N] [--tensors N] "
	    "[--payload-bytes N]\n"
	    "                       [--seq-offset BYTES]]\n"
	    "Binds udp://127.0.0.1:PORT, prints 'ready', counts datagrams "
	    "until --expect are in,\nor --idle-ms after the last one, or "
	    "SIGTERM; then prints one 'recvmmsg ...' line.\n"
	    "--convert (e.g. int4:fp16, raw:raw): each datagram's samples "
	    "(after --payload-skip)\nare converted by the daemon's kernel into "
	    "slot seq %% ppb of tensor (seq / ppb) %% N,\nseq the big-endian "
	    "32-bit counter at UDP payload byte --seq-offset; a datagram\n"
	    "without --payload-bytes of samples is counted as malformed.\n");
	exit(rc);
}

static uint64_t
parse_num(const char *opt, const char *s, uint64_t max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end != '\0' || v > max) {
		fprintf(stderr, "bench_recvmmsg: %s: bad value '%s'\n", opt, s);
		exit(2);
	}
	return v;
}

static enum daqiri_dtype
parse_dtype(const char *s, size_t n)
{
	for (int t = 0; t < DAQIRI_DTYPE_MAX; t++) {
		const char *name = daqiri_dtype_name((enum daqiri_dtype)t);

		if (name != NULL && strlen(name) == n && strncmp(s, name, n) == 0)
			return (enum daqiri_dtype)t;
	}
	return DAQIRI_DTYPE_MAX;
}

/* IN:OUT, a conversion the daemon's data_types allow (raw:raw copies). */
static void
parse_convert(const char *arg, struct br_opts *o)
{
	const char *colon = strchr(arg, ':');

	if (colon != NULL) {
		o->in = parse_dtype(arg, (size_t)(colon - arg));
		o->out = parse_dtype(colon + 1, strlen(colon + 1));
	}
	if (colon == NULL || o->in == DAQIRI_DTYPE_MAX ||
	    o->out == DAQIRI_DTYPE_MAX || cvt_in_elems(o->in, 8) == 0 ||
	    cvt_out_size(o->out) == 0 ||
	    ((o->in == DAQIRI_DTYPE_RAW) != (o->out == DAQIRI_DTYPE_RAW))) {
		fprintf(stderr, "bench_recvmmsg: --convert: '%s' is not IN:OUT "
		    "(e.g. int4:fp16, raw:raw)\n", arg);
		exit(2);
	}
	o->convert = true;
}

static void
parse_args(int argc, char **argv, struct br_opts *o)
{
	static const struct option lo[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "no-gro", no_argument, NULL, 'G' },
		{ "nbufs", required_argument, NULL, 'n' },
		{ "buf-size", required_argument, NULL, 'b' },
		{ "batch", required_argument, NULL, 'B' },
		{ "rcvbuf", required_argument, NULL, 'r' },
		{ "expect", required_argument, NULL, 'e' },
		{ "idle-ms", required_argument, NULL, 'i' },
		{ "payload-skip", required_argument, NULL, 'k' },
		{ "wait", required_argument, NULL, 'w' },
		{ "convert", required_argument, NULL, 'c' },
		{ "ppb", required_argument, NULL, 'P' },
		{ "tensors", required_argument, NULL, 't' },
		{ "payload-bytes", required_argument, NULL, 'l' },
		{ "seq-offset", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int ch;

	memset(o, 0, sizeof(*o));
	o->gro = true;
	o->nbufs = BR_DEFAULT_NBUFS;
	o->buf_size = BR_DEFAULT_BUF_SIZE;
	o->batch = BR_DEFAULT_BATCH;
	o->idle_ms = BR_DEFAULT_IDLE_MS;
	o->ppb = BR_DEFAULT_PPB;
	o->tensors = BR_DEFAULT_TENSORS;
	o->payload_bytes = BR_DEFAULT_PAYLOAD;
	while ((ch = getopt_long(argc, argv, "p:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'p':
			o->port = (uint16_t)parse_num("--port", optarg, 65535);
			break;
		case 'G':
			o->gro = false;
			break;
		case 'n':
			o->nbufs = (uint32_t)parse_num("--nbufs", optarg,
			    UINT32_MAX);
			break;
		case 'b':
			o->buf_size = (uint32_t)parse_num("--buf-size", optarg,
			    UINT32_MAX);
			break;
		case 'B':
			o->batch = (uint32_t)parse_num("--batch", optarg,
			    BR_MAX_BATCH);
			break;
		case 'r':
			o->rcvbuf = parse_num("--rcvbuf", optarg, INT_MAX / 2);
			break;
		case 'e':
			o->expect = parse_num("--expect", optarg, UINT64_MAX);
			break;
		case 'i':
			o->idle_ms = (uint32_t)parse_num("--idle-ms", optarg,
			    INT_MAX);
			break;
		case 'k':
			o->payload_skip = (uint32_t)parse_num("--payload-skip",
			    optarg, BR_UDP_MAX);
			break;
		case 'w':
			for (o->wait = 0; o->wait < BR_WAIT_MAX; o->wait++)
				if (strcmp(optarg, br_wait_names[o->wait]) == 0)
					break;
			if (o->wait == BR_WAIT_MAX) {
				fprintf(stderr, "bench_recvmmsg: --wait: '%s' is "
				    "not poll, recv or busy\n", optarg);
				exit(2);
			}
			break;
		case 'c':
			parse_convert(optarg, o);
			break;
		case 'P':
			o->ppb = (uint32_t)parse_num("--ppb", optarg, UINT32_MAX);
			break;
		case 't':
			o->tensors = (uint32_t)parse_num("--tensors", optarg,
			    UINT32_MAX);
			break;
		case 'l':
			o->payload_bytes = (uint32_t)parse_num("--payload-bytes",
			    optarg, BR_UDP_MAX);
			break;
		case 's':
			o->seq_offset = (uint32_t)parse_num("--seq-offset",
			    optarg, BR_UDP_MAX - BR_SEQ_BYTES);
			break;
		case 'h':
			usage(0);
		default:
			usage(2);
		}
	}
	if (o->convert && (o->ppb == 0 || o->tensors == 0 ||
	    o->seq_offset + BR_SEQ_BYTES > o->payload_skip ||
	    cvt_in_elems(o->in, o->payload_bytes) == 0)) {
		fprintf(stderr, "bench_recvmmsg: --convert needs ppb and tensors "
		    "> 0, the counter inside --payload-skip and --payload-bytes "
		    "a whole number of input elements\n");
		exit(2);
	}
	if (o->port == 0 || o->batch == 0 || o->nbufs == 0 ||
	    o->buf_size <= BR_HDR_LEN || optind != argc)
		usage(2);
}

/*
 * One receive call (or a wait and one call), the way o->wait says. Returns
 * recvmmsg()'s result; -1 with EAGAIN when nothing came within the idle
 * time (or, busy, at once).
 */
static int
br_recv(int fd, const struct br_opts *o, struct mmsghdr *msgs,
	unsigned vlen, bool last_full)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n;

	switch (o->wait) {
	case BR_WAIT_RECV:
		/* sleeps until one datagram is there, then takes what else
		 * is queued; SO_RCVTIMEO ends the wait */
		return recvmmsg(fd, msgs, vlen, MSG_WAITFORONE, NULL);
	case BR_WAIT_BUSY:
		return recvmmsg(fd, msgs, vlen, MSG_DONTWAIT, NULL);
	default:
		/* under load the socket is rarely empty: skip the poll */
		if (last_full) {
			n = recvmmsg(fd, msgs, vlen, MSG_DONTWAIT |
			    MSG_WAITFORONE, NULL);
			if (n > 0 || errno != EAGAIN)
				return n;
		}
		n = poll(&p, 1, (int)o->idle_ms);
		if (n <= 0) {
			if (n == 0)
				errno = EAGAIN;
			return -1;
		}
		return recvmmsg(fd, msgs, vlen, MSG_DONTWAIT | MSG_WAITFORONE,
		    NULL);
	}
}

/* Count one read of len bytes made of segments of seg bytes. */
static void
count_read(struct br_count *c, const struct br_opts *o, uint32_t len,
	   uint32_t seg)
{
	uint32_t n;

	if (seg == 0 || seg >= len)
		seg = len;
	n = seg == 0 ? 1 : (len + seg - 1) / seg;
	c->dgrams += n;
	c->bytes += len;
	/* every segment but a short last one has seg bytes */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t l = i + 1 < n ? seg : len - i * seg;

		c->payload_bytes += l > o->payload_skip ? l - o->payload_skip : 0;
	}
	if (n > 1)
		c->gro_reads++;
}

/*
 * --convert: the datagram at d (len bytes) goes to its slot, converted by
 * the kernel the daemon's CPU reorder uses. No window, bitmap or
 * publication: what the daemon does beyond this is what the ratio shows.
 */
static void
place_dgram(struct br_place *pl, const struct br_opts *o, const uint8_t *d,
	    uint32_t len)
{
	uint32_t seq;
	uint64_t slot, tensor;

	if (len != o->payload_skip + o->payload_bytes) {
		pl->malformed++;
		return;
	}
	seq = (uint32_t)d[o->seq_offset] << 24 |
	    (uint32_t)d[o->seq_offset + 1] << 16 |
	    (uint32_t)d[o->seq_offset + 2] << 8 | d[o->seq_offset + 3];
	slot = seq % o->ppb;
	tensor = (seq / o->ppb) % o->tensors;
	cvt_slot_fast(o->in, o->out, CFG_ENDIAN_HOST, d + o->payload_skip,
	    o->payload_bytes, pl->mem + tensor * pl->tensor_bytes +
	    slot * pl->slot_bytes);
	pl->placed++;
}

/* Place every segment of one read of len bytes (segments of seg bytes). */
static void
place_read(struct br_place *pl, const struct br_opts *o, const uint8_t *d,
	   uint32_t len, uint32_t seg)
{
	if (seg == 0 || seg >= len)
		seg = len;
	for (uint32_t off = 0; off < len; off += seg)
		place_dgram(pl, o, d + off, len - off < seg ? len - off : seg);
}

int
main(int argc, char **argv)
{
	struct br_opts o;
	struct br_count c;
	struct br_place pl;
	struct sockaddr_in sa;
	struct sigaction sig;
	struct timeval tv;
	struct mmsghdr *msgs;
	struct iovec *iov;
	uint8_t *arena, *cmsg;
	uint64_t slot_size, rcvbuf, need, per, head = 0, drops_mi = 0;
	uint32_t nslots, vlen, mi[BR_MEMINFO_VARS];
	socklen_t len;
	double cpu0, cpu1;
	int fd, one = 1, got = 0, v;
	bool last_full = false;

	parse_args(argc, argv, &o);
	memset(&sig, 0, sizeof(sig));
	sig.sa_handler = on_signal;
	sigaction(SIGTERM, &sig, NULL);
	sigaction(SIGINT, &sig, NULL);

	/* The engine's carving: with GRO a slot is the run of buffers that
	 * holds the largest coalesced read. */
	slot_size = o.buf_size;
	nslots = o.nbufs;
	need = BR_HDR_LEN + BR_UDP_MAX;
	per = (need + o.buf_size - 1) / o.buf_size;
	if (o.gro && o.nbufs / per >= 8) {
		slot_size = per * o.buf_size;
		nslots = (uint32_t)(o.nbufs / per);
	} else
		o.gro = false;
	vlen = o.batch < nslots ? o.batch : nslots;
	arena = mmap(NULL, slot_size * nslots, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	msgs = calloc(vlen, sizeof(*msgs));
	iov = calloc(vlen, sizeof(*iov));
	cmsg = calloc(vlen, BR_CMSG_SPACE);
	if (arena == MAP_FAILED || !msgs || !iov || !cmsg) {
		fprintf(stderr, "bench_recvmmsg: out of memory\n");
		return 1;
	}
	memset(arena, 0, slot_size * nslots);	/* fault it in, like a region */
	memset(&pl, 0, sizeof(pl));
	if (o.convert) {
		pl.slot_bytes = (uint64_t)cvt_in_elems(o.in, o.payload_bytes) *
		    cvt_out_size(o.out);
		pl.tensor_bytes = pl.slot_bytes * o.ppb;
		/* shared like the daemon's memfd region, faulted in */
		pl.mem = mmap(NULL, pl.tensor_bytes * o.tensors,
		    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (pl.mem == MAP_FAILED) {
			fprintf(stderr, "bench_recvmmsg: tensor pool: %s\n",
			    strerror(errno));
			return 1;
		}
		memset(pl.mem, 0, pl.tensor_bytes * o.tensors);
	}

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		perror("bench_recvmmsg: socket");
		return 1;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one)) == -1)
		perror("bench_recvmmsg: SO_RXQ_OVFL");
	if (o.gro && setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one)) == -1) {
		perror("bench_recvmmsg: UDP_GRO");
		o.gro = false;
	}
	rcvbuf = o.rcvbuf ? o.rcvbuf : slot_size * nslots;
	if (rcvbuf < BR_RCVBUF_MIN)
		rcvbuf = BR_RCVBUF_MIN;
	v = rcvbuf > INT_MAX / 2 ? INT_MAX / 2 : (int)rcvbuf;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)) == -1)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	len = sizeof(got);
	(void)getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &got, &len);
	tv.tv_sec = o.idle_ms / 1000;
	tv.tv_usec = (suseconds_t)(o.idle_ms % 1000) * 1000;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == -1)
		perror("bench_recvmmsg: SO_RCVTIMEO");
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons(o.port);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1) {
		perror("bench_recvmmsg: bind");
		return 1;
	}
	printf("ready wait=%s port=%u gro=%d slots=%u slot_bytes=%llu batch=%u "
	    "rcvbuf=%d\n", br_wait_names[o.wait], o.port, o.gro, nslots, (unsigned long long)slot_size,
	    vlen, got / 2);
	fflush(stdout);

	memset(&c, 0, sizeof(c));
	cpu0 = cpu_seconds();
	while (!br_stop && (o.expect == 0 || c.dgrams < o.expect)) {
		int n;

		for (uint32_t i = 0; i < vlen; i++) {
			struct msghdr *h = &msgs[i].msg_hdr;

			iov[i].iov_base = arena + ((head + i) % nslots) *
			    slot_size + BR_HDR_LEN;
			iov[i].iov_len = slot_size - BR_HDR_LEN;
			memset(h, 0, sizeof(*h));
			h->msg_iov = &iov[i];
			h->msg_iovlen = 1;
			h->msg_control = cmsg + (size_t)i * BR_CMSG_SPACE;
			h->msg_controllen = BR_CMSG_SPACE;
		}
		n = br_recv(fd, &o, msgs, vlen, last_full);
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR) {
				perror("bench_recvmmsg: recvmmsg");
				return 1;
			}
			if (c.dgrams > 0 && errno == EAGAIN &&
			    now_ns() - c.t_last >= o.idle_ms * 1000000ull)
				break;
			continue;
		}
		last_full = (uint32_t)n == vlen;
		c.t_last = now_ns();
		if (c.t_first == 0)
			c.t_first = c.t_last;
		c.calls++;
		for (int i = 0; i < n; i++) {
			struct msghdr *h = &msgs[i].msg_hdr;
			uint32_t seg = 0;

			for (struct cmsghdr *m = CMSG_FIRSTHDR(h); m != NULL;
			    m = CMSG_NXTHDR(h, m)) {
				if (m->cmsg_level == SOL_UDP &&
				    m->cmsg_type == UDP_GRO) {
					int s;

					memcpy(&s, CMSG_DATA(m), sizeof(s));
					seg = s > 0 ? (uint32_t)s : 0;
				} else if (m->cmsg_level == SOL_SOCKET &&
				    m->cmsg_type == SO_RXQ_OVFL)
					memcpy(&c.ovfl, CMSG_DATA(m),
					    sizeof(c.ovfl));
			}
			if (h->msg_flags & MSG_TRUNC) {
				c.truncated++;
				continue;
			}
			count_read(&c, &o, msgs[i].msg_len, seg);
			if (o.convert)
				place_read(&pl, &o, h->msg_iov->iov_base,
				    msgs[i].msg_len, seg);
		}
		/* the daemon's commit: fence the streamed stores once a burst */
		if (o.convert)
			cvt_fence();
		head = (head + (uint64_t)n) % nslots;
	}
	cpu1 = cpu_seconds();
	len = sizeof(mi);
	if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mi, &len) == 0 &&
	    len > BR_MEMINFO_DROPS * sizeof(uint32_t))
		drops_mi = mi[BR_MEMINFO_DROPS];
	{
		double secs = c.t_last > c.t_first ?
		    (double)(c.t_last - c.t_first) / 1e9 : 0;
		uint64_t drops = drops_mi > c.ovfl ? drops_mi : c.ovfl;

		printf("recvmmsg datagrams=%llu bytes=%llu payload_bytes=%llu "
		    "drops=%llu truncated=%llu calls=%llu gro_reads=%llu "
		    "seconds=%.6f gbytes_per_s=%.3f cpu_s=%.3f "
		    "cpu_s_per_gb=%.3f",
		    (unsigned long long)c.dgrams, (unsigned long long)c.bytes,
		    (unsigned long long)c.payload_bytes,
		    (unsigned long long)drops, (unsigned long long)c.truncated,
		    (unsigned long long)c.calls,
		    (unsigned long long)c.gro_reads, secs,
		    secs > 0 ? (double)c.payload_bytes / secs / 1e9 : 0,
		    cpu1 - cpu0, c.payload_bytes ?
		    (cpu1 - cpu0) / ((double)c.payload_bytes / 1e9) : 0);
		if (o.convert)
			printf(" convert=%s:%s impl=%s placed=%llu malformed=%llu "
			    "slot_bytes=%llu", daqiri_dtype_name(o.in),
			    daqiri_dtype_name(o.out), cvt_impl_name(),
			    (unsigned long long)pl.placed,
			    (unsigned long long)pl.malformed,
			    (unsigned long long)pl.slot_bytes);
		printf("\n");
	}
	close(fd);
	return 0;
}
