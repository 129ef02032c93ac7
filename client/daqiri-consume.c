/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daqiri-consume: subscribe to a stream and receive its tensors; print,
 * verify them against the simulator's pattern, save them as NumPy .npy
 * files. The reference consumer, and the end of the chain in the demo
 * and the system tests.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "convert.h"
#include "daqiri_client.h"
#include "desc.h"
#include "proto.h"
#include "tool.h"

#define PROG			"daqiri-consume"
/* How often a waiting consumer looks at its signal flag. */
#define CONSUME_WAIT_MS		250
#define CONSUME_ERRORS_SHOWN	10	/* verification errors printed */
/* A wait without a tensor this long asks the daemon whether the stream's
 * packets arrive but are not placed (and says why, once per stall). */
#define CONSUME_STALL_NS	2000000000ull
#define NPY_ALIGN		64

struct opts {
	const char *sock;
	const char *stream;
	const char *save_dir;
	const char *group;
	unsigned long long count;	/* 0 = until interrupted */
	long timeout_s;			/* 0 = wait forever */
	long delay_ms;			/* per tensor, before releasing it */
	bool verify, busy, quiet, reconnect, lossless;
};

struct summary {
	uint64_t tensors, complete, partial, missing_slots;
	uint64_t verified, errors, seq_gaps, saved;
	uint64_t first_seq, last_seq;
	uint64_t restarts, held_rechecked;
	double lat_sum_us, lat_max_us;
};

static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void __attribute__((noreturn))
usage(FILE *fp, int code)
{
	fprintf(fp, "usage: daqiri-consume [-s SOCKET] [--verify] [--save DIR] "
	    "[--count N]\n"
	    "                      [--busy-poll] [--quiet] [--group NAME] "
	    "[--timeout SEC]\n"
	    "                      [--reconnect] [--lossless] [--delay-ms MS] STREAM\n"
	    "       daqiri-consume -h | --help | -V | --version\n\n"
	    "  -s, --socket SOCKET  control socket (default $%s or %s)\n"
	    "  --verify             check every element against the "
	    "simulator pattern\n"
	    "  --save DIR           write each tensor as "
	    "DIR/<iface>_<name>-<seq, 12 digits>.npy\n"
	    "                       and which slots arrived beside it, "
	    "<...>.present.npy\n"
	    "  --count N            stop after N tensors\n"
	    "  --busy-poll          spin on the ring instead of sleeping\n"
	    "  --quiet              no line per tensor, only the summary\n"
	    "  --group NAME         shared subscription in group NAME\n"
	    "  --timeout SEC        stop when no tensor came for SEC seconds\n"
	    "  --reconnect          survive daemon restarts; hold one tensor "
	    "across each\n"
	    "                       and check it again after the restart\n"
	    "  --lossless           subscribe lossless (root or the admin "
	    "group)\n"
	    "  --delay-ms MS        hold each tensor MS milliseconds before "
	    "releasing it\n"
	    "Exit status: 0 all well, 1 a failure (said on stderr), 2 usage.\n",
	    DAQIRI_SOCKET_ENV, DAQIRI_DEFAULT_SOCKET);
	exit(code);
}

/* The simulator's pattern (REFERENCE.md), exact in every output type. */
static int32_t
pattern(uint64_t slot, uint64_t e)
{
	return (int32_t)((3 * slot + e) % 15) - 7;
}

/*
 * Expected bytes: 3 slot mod 15 repeats every 5 slots, so five slot
 * images hold every present slot's expected content; one more holds a
 * missing slot's fill.
 */
#define PATTERN_PERIOD 5

struct expect {
	uint8_t *slot[PATTERN_PERIOD];
	uint8_t *fill;
};

static int
expect_init(struct expect *x, const struct daqiri_stream_info *in)
{
	enum daqiri_dtype out = (enum daqiri_dtype)in->dtype;
	uint64_t e;
	int k;

	memset(x, 0, sizeof(*x));
	for (k = 0; k < PATTERN_PERIOD; k++) {
		x->slot[k] = malloc(in->slot_bytes);
		if (x->slot[k] == NULL)
			return -1;
		for (e = 0; e < in->elems_per_slot; e++)
			cvt_write(out, pattern((uint64_t)k, e), x->slot[k],
			    (uint32_t)e);
	}
	x->fill = malloc(in->slot_bytes);
	if (x->fill == NULL)
		return -1;
	cvt_fill_slot(out, in->fill == DAQIRI_FILL_KEEP ? DAQIRI_FILL_ZERO :
	    (enum daqiri_fill)in->fill, x->fill, in->slot_bytes);
	return 0;
}

static void
expect_fini(struct expect *x)
{
	int k;

	for (k = 0; k < PATTERN_PERIOD; k++)
		free(x->slot[k]);
	free(x->fill);
}

/*
 * Check a tensor in host memory: every element of a present slot against
 * the pattern converted to the output type, every missing slot against
 * the fill. Elements of a reorder stream without conversion are taken as
 * int8 samples.
 */
static void
verify(const struct daqiri_tensor *t, const struct daqiri_stream_info *in,
       const uint8_t *data, const struct expect *x, struct summary *sm)
{
	uint64_t s, e, bad;
	uint32_t es = t->elem_bytes;
	const uint8_t *slot, *want;

	for (s = 0; s < t->shape[0]; s++) {
		slot = data + s * t->slot_bytes;
		if (!tool_slot_present(t, s)) {
			if (in->fill == DAQIRI_FILL_KEEP ||
			    memcmp(slot, x->fill, t->slot_bytes) == 0)
				continue;
			if (sm->errors < CONSUME_ERRORS_SHOWN)
				fprintf(stderr, "seq %llu: missing slot %llu is "
				    "not %s-filled\n",
				    (unsigned long long)t->seq,
				    (unsigned long long)s,
				    daqiri_fill_name(in->fill));
			sm->errors++;
			continue;
		}
		want = x->slot[s % PATTERN_PERIOD];
		if (memcmp(slot, want, t->slot_bytes) == 0) {
			sm->verified += t->shape[1];
			continue;
		}
		for (e = 0, bad = 0; e < t->shape[1]; e++) {
			if (memcmp(slot + e * es, want + e * es, es) == 0) {
				sm->verified++;
				continue;
			}
			if (sm->errors + bad < CONSUME_ERRORS_SHOWN)
				fprintf(stderr, "seq %llu slot %llu element "
				    "%llu: wrong value (expected %d as %s)\n",
				    (unsigned long long)t->seq,
				    (unsigned long long)s,
				    (unsigned long long)e, pattern(s, e),
				    t->dtype_name);
			bad++;
		}
		sm->errors += bad;
	}
}

static const char *
npy_descr(enum daqiri_dtype t)
{
	switch (t) {
	case DAQIRI_DTYPE_INT8:		return "|i1";
	case DAQIRI_DTYPE_INT16:	return "<i2";
	case DAQIRI_DTYPE_INT32:	return "<i4";
	case DAQIRI_DTYPE_FP16:		return "<f2";
	case DAQIRI_DTYPE_BF16:		return "<u2";	/* bf16 bits: NumPy has none */
	case DAQIRI_DTYPE_FP32:		return "<f4";
	case DAQIRI_DTYPE_FP64:		return "<f8";
	default:			return "|u1";
	}
}

/* NumPy format 1.0: magic, version, header length, a dict padded with
 * spaces to a multiple of 64 bytes ending in '\n', then the data; shape
 * is the text between the dict's parentheses. */
static int
write_npy(const char *path, const char *descr, const char *shape,
	  const void *data, size_t bytes)
{
	char hdr[256];
	unsigned char pre[10] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0 };
	size_t hl, total;
	FILE *fp;
	int ok;

	hl = (size_t)snprintf(hdr, sizeof(hdr), "{'descr': '%s', "
	    "'fortran_order': False, 'shape': (%s), }", descr, shape);
	total = (sizeof(pre) + hl + 1 + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
	while (sizeof(pre) + hl < total - 1)
		hdr[hl++] = ' ';
	hdr[hl++] = '\n';
	pre[8] = (unsigned char)(hl & 0xff);
	pre[9] = (unsigned char)(hl >> 8);
	fp = fopen(path, "we");
	if (fp == NULL) {
		fprintf(stderr, "daqiri-consume: %s: %s\n", path,
		    strerror(errno));
		return -1;
	}
	ok = fwrite(pre, sizeof(pre), 1, fp) == 1 &&
	    fwrite(hdr, hl, 1, fp) == 1 &&
	    (bytes == 0 || fwrite(data, bytes, 1, fp) == 1);
	if (fclose(fp) != 0 || !ok) {
		fprintf(stderr, "daqiri-consume: writing %s: %s\n", path,
		    strerror(errno));
		return -1;
	}
	return 0;
}

/* The tensor as DIR/<iface>_<name>-<seq>.npy, and beside it which slots
 * arrived as <...>.present.npy (ppb booleans): a zero-filled missing row
 * cannot be told from real zeros without it. */
static int
save_npy(const char *dir, const struct daqiri_tensor *t, const char *stream,
	 const uint8_t *data)
{
	char path[PATH_MAX], name[160], shape[64];
	uint64_t n = t->shape[0];
	uint8_t *present;
	size_t i;
	int r;

	snprintf(name, sizeof(name), "%s", stream);
	for (i = 0; name[i] != '\0'; i++)
		if (name[i] == '/')
			name[i] = '_';
	snprintf(path, sizeof(path), "%s/%s-%012llu.npy", dir, name,
	    (unsigned long long)t->seq);
	snprintf(shape, sizeof(shape), "%llu, %llu",
	    (unsigned long long)t->shape[0], (unsigned long long)t->shape[1]);
	if (write_npy(path, npy_descr(t->dtype), shape, data, t->bytes) < 0)
		return -1;
	if (t->bitmap == NULL || n > t->bitmap_bits ||
	    (present = malloc(n > 0 ? n : 1)) == NULL)
		return t->bitmap == NULL ? 0 : -1;
	for (i = 0; i < n; i++)
		present[i] = (uint8_t)((t->bitmap[i / 64] >> (i % 64)) & 1);
	snprintf(path, sizeof(path), "%s/%s-%012llu.present.npy", dir, name,
	    (unsigned long long)t->seq);
	snprintf(shape, sizeof(shape), "%llu,", (unsigned long long)n);
	r = write_npy(path, "|b1", shape, present, (size_t)n);
	free(present);
	return r;
}

/* A tensor held across a daemon restart: its memory must still read
 * what it read before (the mapping outlived the daemon). */
static void
recheck_held(const struct daqiri_tensor *t,
	     const struct daqiri_stream_info *in, const struct expect *x,
	     uint8_t *copy, const struct opts *o, struct summary *sm)
{
	const uint8_t *data;
	uint64_t e0 = sm->errors, v0 = sm->verified;

	sm->held_rechecked++;
	if (!o->verify)
		return;
	data = tool_host_view(t, copy);
	if (data == NULL) {
		sm->errors++;
		return;
	}
	verify(t, in, data, x, sm);
	/* counted once, when it came */
	sm->verified = v0;
	if (sm->errors > e0)
		fprintf(stderr, "daqiri-consume: seq %llu, held across the "
		    "restart, reads differently now\n",
		    (unsigned long long)t->seq);
}

static void
print_summary(const struct summary *sm, const struct opts *o)
{
	/* In a shared group the sequence numbers this member skips went to
	 * the other members: not a loss. */
	fprintf(stderr, "daqiri-consume: %s: tensors %llu, complete %llu, "
	    "partial %llu, missing slots %llu, %s %llu",
	    o->stream, (unsigned long long)sm->tensors,
	    (unsigned long long)sm->complete, (unsigned long long)sm->partial,
	    (unsigned long long)sm->missing_slots,
	    o->group != NULL ? "seq skipped (other group members)" :
	    "seq gaps", (unsigned long long)sm->seq_gaps);
	if (o->verify)
		fprintf(stderr, ", verified elements %llu, errors %llu",
		    (unsigned long long)sm->verified,
		    (unsigned long long)sm->errors);
	if (o->save_dir != NULL)
		fprintf(stderr, ", saved %llu", (unsigned long long)sm->saved);
	if (o->reconnect)
		fprintf(stderr, ", restarts %llu, held across a restart and "
		    "checked again %llu", (unsigned long long)sm->restarts,
		    (unsigned long long)sm->held_rechecked);
	if (sm->tensors > 0)
		fprintf(stderr, ", latency avg %.1f us max %.1f us",
		    sm->lat_sum_us / (double)sm->tensors, sm->lat_max_us);
	fputc('\n', stderr);
}

static void
parse_args(int argc, char **argv, struct opts *o)
{
	enum { O_VERIFY = 256, O_SAVE, O_COUNT, O_BUSY, O_QUIET, O_GROUP,
	    O_TIMEOUT, O_RECONNECT, O_LOSSLESS, O_DELAY };
	static const struct option lo[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "verify", no_argument, NULL, O_VERIFY },
		{ "save", required_argument, NULL, O_SAVE },
		{ "count", required_argument, NULL, O_COUNT },
		{ "busy-poll", no_argument, NULL, O_BUSY },
		{ "quiet", no_argument, NULL, O_QUIET },
		{ "group", required_argument, NULL, O_GROUP },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "reconnect", no_argument, NULL, O_RECONNECT },
		{ "lossless", no_argument, NULL, O_LOSSLESS },
		{ "delay-ms", required_argument, NULL, O_DELAY },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int ch;

	while ((ch = getopt_long(argc, argv, "s:hV", lo, NULL)) != -1) {
		switch (ch) {
		case 's':
			o->sock = optarg;
			break;
		case O_VERIFY:
			o->verify = true;
			break;
		case O_SAVE:
			o->save_dir = optarg;
			break;
		case O_COUNT:
			errno = 0;
			o->count = strtoull(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || optarg[0] == '-' ||
			    o->count == 0) {
				fprintf(stderr, "daqiri-consume: --count: \"%s\" "
				    "is not a positive number\n", optarg);
				exit(2);
			}
			break;
		case O_BUSY:
			o->busy = true;
			break;
		case O_QUIET:
			o->quiet = true;
			break;
		case O_GROUP:
			o->group = optarg;
			break;
		case O_RECONNECT:
			o->reconnect = true;
			break;
		case O_TIMEOUT:
			o->timeout_s = strtol(optarg, &end, 10);
			if (*end != '\0' || o->timeout_s <= 0 ||
			    o->timeout_s > 86400) {
				fprintf(stderr, "daqiri-consume: --timeout: "
				    "\"%s\" is not 1..86400 seconds\n", optarg);
				exit(2);
			}
			break;
		case O_LOSSLESS:
			o->lossless = true;
			break;
		case O_DELAY:
			o->delay_ms = strtol(optarg, &end, 10);
			if (*end != '\0' || optarg[0] == '\0' ||
			    o->delay_ms < 0 || o->delay_ms > 60000) {
				fprintf(stderr, "daqiri-consume: --delay-ms: "
				    "\"%s\" is not 0..60000 milliseconds\n",
				    optarg);
				exit(2);
			}
			break;
		case 'h':
			usage(stdout, 0);
		case 'V':
			printf("daqiri-consume %s\n", DAQIRI_VERSION);
			exit(0);
		default:
			usage(stderr, 2);
		}
	}
	if (optind != argc - 1)
		usage(stderr, 2);
	o->stream = argv[optind];
}

int
main(int argc, char **argv)
{
	struct opts o = { .sock = NULL };
	struct summary sm;
	struct daqiri *d = NULL;
	struct daqiri_sub *sub = NULL;
	struct daqiri_sub_opts so = { .size = sizeof(so) };
	struct daqiri_stream_info in = { .size = sizeof(in) };
	struct daqiri_tensor t = { .size = sizeof(t) };
	struct daqiri_tensor held = { .size = sizeof(held) };
	bool have_held = false;
	struct sigaction sa;
	struct expect x;
	uint8_t *copy = NULL;
	const uint8_t *data;
	uint64_t idle_since, lat, s;
	char fl[TOOL_FLAGS_LEN];
	int r, rc = 0;
	bool have_seq = false, stall_said = false, said_ever = false;
	struct tool_counts c0, cs, cn;
	uint64_t stall_check;

	memset(&sm, 0, sizeof(sm));
	parse_args(argc, argv, &o);
	if (o.save_dir != NULL) {
		struct stat st;

		if (stat(o.save_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
			fprintf(stderr, "daqiri-consume: --save: \"%s\" is not a "
			    "directory\n", o.save_dir);
			return 2;
		}
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: waits end with EINTR */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	r = daqiri_connect(o.sock, &d);
	if (r < 0) {
		tool_say_connect(PROG, r, o.sock);
		return 1;
	}
	so.flags = (o.busy ? DAQIRI_SUB_BUSY_POLL : 0) |
	    (o.reconnect ? DAQIRI_SUB_RECONNECT : 0);
	so.policy = o.lossless ? DAQIRI_POLICY_LOSSLESS : DAQIRI_POLICY_LATEST;
	if (o.group != NULL) {
		so.mode = DAQIRI_SUB_SHARED;
		so.group = o.group;
	}
	r = daqiri_subscribe(d, o.stream, &so, &sub);
	if (r < 0) {
		fprintf(stderr, "daqiri-consume: subscribe \"%s\": %s\n",
		    o.stream, daqiri_last_error(d)[0] != '\0' ?
		    daqiri_last_error(d) : strerror(-r));
		daqiri_disconnect(d);
		return 1;
	}
	daqiri_sub_info(sub, &in);
	/* To explain a run that got nothing: see whether the daemon dropped
	 * the stream's packets meanwhile (at the end, and at every stall). */
	tool_counts(d, in.name, &c0);
	cs = c0;
	if (!o.quiet)
		fprintf(stderr, "daqiri-consume: %s: %u x %llu %s (%llu bytes "
		    "per slot), %u buffers, %s memory, ring %u, %s\n",
		    in.name, in.ppb, (unsigned long long)in.elems_per_slot,
		    in.dtype_name, (unsigned long long)in.slot_bytes, in.nbufs,
		    daqiri_mem_kind_name(in.mem_kind), in.ring_depth,
		    daqiri_sub_policy_name(in.policy));
	if (o.verify && in.kind == DAQIRI_STREAM_RAW) {
		fprintf(stderr, "daqiri-consume: %s is a raw queue stream: "
		    "packets are not verified\n", in.name);
		o.verify = false;
	}
	memset(&x, 0, sizeof(x));
	if (in.device >= 0)
		copy = malloc(in.tensor_bytes);
	if ((o.verify && expect_init(&x, &in) < 0) ||
	    (in.device >= 0 && copy == NULL)) {
		fprintf(stderr, "daqiri-consume: out of memory\n");
		return 1;
	}

	idle_since = daqiri_mono_ns();
	stall_check = idle_since + CONSUME_STALL_NS;
	while (!stop && (o.count == 0 || sm.tensors < o.count)) {
		r = daqiri_next(sub, &t, CONSUME_WAIT_MS);
		if (r == 0 || r == -EINTR) {
			/* no tensor for a while: do packets arrive unplaced? */
			if (cs.packets_in >= 0 && daqiri_mono_ns() >= stall_check) {
				tool_counts(d, in.name, &cn);
				if (!stall_said && tool_explain_unplaced(PROG,
				    in.name, &cs, &cn, "in the last seconds"))
					stall_said = said_ever = true;
				cs = cn;
				stall_check = daqiri_mono_ns() + CONSUME_STALL_NS;
			}
			if (o.timeout_s > 0 && daqiri_mono_ns() - idle_since >
			    (uint64_t)o.timeout_s * 1000000000ull) {
				if (o.count != 0) {
					fprintf(stderr, "daqiri-consume: "
					    "timeout: no tensor for %ld s: "
					    "received %llu of %llu tensors\n",
					    o.timeout_s,
					    (unsigned long long)sm.tensors,
					    o.count);
					rc = 1;
				} else {
					fprintf(stderr, "daqiri-consume: "
					    "no tensor for %ld s: received "
					    "%llu tensors\n", o.timeout_s,
					    (unsigned long long)sm.tensors);
				}
				/* why, as the daemon sees it (doctor) */
				tool_counts(d, in.name, &cn);
				if (cn.state[0] != '\0' &&
				    strcmp(cn.state, "ok") != 0)
					fprintf(stderr, "daqiri-consume: the "
					    "daemon on %s: %s: %s\n", in.name,
					    cn.state, cn.why);
				break;
			}
			continue;
		}
		if (r < 0) {
			if (r == -ENOTCONN)
				fprintf(stderr, "daqiri-consume: the daemon went "
				    "away (control connection closed)\n");
			else if (r == -ESTALE)
				fprintf(stderr, "daqiri-consume: reconnecting: "
				    "%s\n", daqiri_last_error(d));
			else if (r == -ESHUTDOWN)
				fprintf(stderr, "daqiri-consume: the daemon ended "
				    "the subscription: %s\n",
				    daqiri_last_error(d));
			else
				fprintf(stderr, "daqiri-consume: receiving: %s\n",
				    strerror(-r));
			rc = 1;
			break;
		}
		idle_since = daqiri_mono_ns();
		/* a tensor: a new stall is measured (and told) from here; the
		 * next check's baseline differs in placed, so it only resets */
		stall_said = false;
		stall_check = idle_since + CONSUME_STALL_NS;
		/* publish_ns is the daemon's CLOCK_MONOTONIC, like ours. */
		lat = t.publish_ns != 0 && idle_since > t.publish_ns ?
		    idle_since - t.publish_ns : 0;
		sm.lat_sum_us += (double)lat / 1e3;
		if ((double)lat / 1e3 > sm.lat_max_us)
			sm.lat_max_us = (double)lat / 1e3;
		if (t.flags & DAQIRI_TENSOR_RESTART) {
			/* A new daemon numbers its tensors afresh. */
			sm.restarts++;
			have_seq = false;
			fprintf(stderr, "daqiri-consume: the daemon restarted "
			    "(instance %016llx), seq %llu\n",
			    (unsigned long long)t.instance,
			    (unsigned long long)t.seq);
			if (have_held) {
				recheck_held(&held, &in, &x, copy, &o, &sm);
				if (daqiri_release(sub, &held) < 0) {
					fprintf(stderr, "daqiri-consume: release "
					    "of a tensor of the old daemon "
					    "failed\n");
					sm.errors++;
				}
				have_held = false;
			}
		}
		if (have_seq && t.seq != sm.last_seq + 1)
			sm.seq_gaps += t.seq > sm.last_seq ?
			    t.seq - sm.last_seq - 1 : 1;
		if (!have_seq)
			sm.first_seq = t.seq;
		have_seq = true;
		sm.last_seq = t.seq;
		sm.tensors++;
		if (t.flags & DAQIRI_TENSOR_COMPLETE)
			sm.complete++;
		else
			sm.partial++;
		for (s = 0; s < t.shape[0]; s++)
			if (!tool_slot_present(&t, s))
				sm.missing_slots++;
		if (!o.quiet) {
			tool_flags_str(t.flags, fl, sizeof(fl));
			printf("seq %llu batch %llu flags %s received %u/%u "
			    "latency %.1f us\n", (unsigned long long)t.seq,
			    (unsigned long long)t.batch_id, fl,
			    t.packets_received, t.packets_expected,
			    (double)lat / 1e3);
		}
		if (o.verify || o.save_dir != NULL) {
			data = tool_host_view(&t, copy);
			if (data == NULL) {
				fprintf(stderr, "daqiri-consume: seq %llu: "
				    "cannot read device memory\n",
				    (unsigned long long)t.seq);
				sm.errors++;
			} else {
				if (o.verify)
					verify(&t, &in, data, &x, &sm);
				if (o.save_dir != NULL) {
					if (save_npy(o.save_dir, &t, in.name,
					    data) < 0)
						sm.errors++;
					else
						sm.saved++;
				}
			}
		}
		/* A slow consumer on purpose (tests, trying lossless): a
		 * signal ends the sleep early, and the loop then stops. */
		if (o.delay_ms > 0) {
			struct timespec ts = { o.delay_ms / 1000,
			    (o.delay_ms % 1000) * 1000000L };

			(void)nanosleep(&ts, NULL);
		}
		if (o.reconnect && !have_held) {
			/* Kept until the next restart, then read again. */
			held = t;
			have_held = true;
			continue;
		}
		r = daqiri_release(sub, &t);
		if (r < 0) {
			fprintf(stderr, "daqiri-consume: release: %s\n",
			    strerror(-r));
			rc = 1;
			break;
		}
	}
	if (have_held)
		daqiri_release(sub, &held);
	fflush(stdout);
	print_summary(&sm, &o);
	if (sm.errors > 0)
		rc = 1;
	if (sm.tensors == 0) {
		if (c0.packets_in >= 0) {
			/* said at a stall already: not twice */
			tool_counts(d, in.name, &cn);
			if (said_ever || tool_explain_unplaced(PROG,
			    in.name, &c0, &cn, "while it waited")) {
				rc = 1;
			} else if (cn.malformed > c0.malformed) {
				tool_say_malformed(PROG,
				    cn.malformed - c0.malformed);
				rc = 1;
			}
		}
		if (o.verify) {
			fprintf(stderr, "daqiri-consume: --verify: no tensor "
			    "arrived, nothing was verified\n");
			rc = 1;
		}
	}
	expect_fini(&x);
	free(copy);
	daqiri_unsubscribe(sub);
	daqiri_disconnect(d);
	return rc;
}
