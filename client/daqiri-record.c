/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daqiri-record: a lossless consumer that writes a stream to a file:
 * reorder streams to HDF5 (h5_out.c), raw streams to pcap (pcap_out.c).
 * With --pre-trigger it keeps the last seconds of tensors in its own
 * memory and writes only around a trigger (SIGUSR1).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "daqiri_client.h"
#include "desc.h"
#include "h5_out.h"
#include "pcap_out.h"
#include "tool.h"

#define PROG			"daqiri-record"
/* How often a waiting recorder looks at its signal flags. */
#define RECORD_WAIT_MS		100
/* --flush-ms default: 0, a flush after every tensor, so a crash loses
 * nothing that was released. Measured with 4 MB tensors on tmpfs, its
 * cost is inside the run-to-run noise (the time goes to the kernel's
 * write path); small tensors at high rates may want 100. */
#define RECORD_FLUSH_MS_DEFAULT	0
#define RECORD_FLUSH_MS_MAX	60000
#define RECORD_SECONDS_MAX	(365.0 * 86400)
/* --pre-trigger and --post: at most an hour each. */
#define RECORD_WINDOW_S_MAX	3600.0
/* --memory default and the share of the machine's memory it may take. */
#define RECORD_MEMORY_MB_DEFAULT 1024u
#define RECORD_MEMORY_SHARE	2	/* at most 1/2 of physical memory */
/* After T+P with no tensor that began later, the stream is taken as
 * quiet and the recording ends. */
#define RECORD_POST_GRACE_NS	2000000000ull
#define RECORD_MB		1000000.0

enum rec_format { FMT_H5, FMT_PCAP };

struct opts {
	const char *sock, *stream, *file;
	enum rec_format fmt;
	unsigned long long count;	/* 0 = no limit */
	double seconds;			/* 0 = no limit */
	bool force, quiet;
	uint64_t rotate_bytes, rotate_ns;	/* pcap: -C, -G */
	int deflate;			/* --compress */
	long flush_ms;
	double pre_s, post_s;		/* --pre-trigger, --post; pre_s < 0 = off */
	unsigned long memory_mb;
};

/* A tensor copied out of the daemon's buffer (pre-trigger memory). */
struct kept {
	struct daqiri_tensor t;		/* bitmap and lengths point below */
	uint8_t *data;
	uint64_t *bitmap;
	uint32_t *lengths;
	uint64_t *rx_ns;
};

/* The last seconds of tensors, oldest first, in a ring of copies. */
struct pretrig {
	struct kept *k;
	uint32_t cap, head, n;		/* slots, oldest, used */
	uint64_t dropped_memory;	/* left out for want of memory */
};

/* Where tensors go: one of the two writers, opened at the first
 * tensor to write. */
struct sink {
	struct h5_out *h5;
	struct pcap_out *pcap;
	bool open;
	bool said;			/* its failure is on stderr already */
	uint64_t tensors, bytes, frames;
	uint64_t write_ns;		/* time spent in the writers */
};

struct rec {
	struct opts o;
	struct daqiri *d;
	struct daqiri_sub *sub;
	struct daqiri_stream_info in;
	struct sink sk;
	struct pretrig pt;
	char daemon_version[64];
	char *stream_record;		/* the streams entry, JSON */
	char *config_excerpt;		/* the stream's reorder config */
	const char *config_note;	/* why there is none */
	uint64_t trigger_ns;		/* 0 = not triggered */
	uint64_t trig_seen;		/* the stream's trigger count at the
					 * start (daqirictl trigger) */
	uint64_t seq_gaps, last_seq, restarts;
	bool have_seq;
};

static volatile sig_atomic_t stop;
static volatile sig_atomic_t usr1;
static volatile uint64_t usr1_ns;	/* written before usr1 is set */

static void
on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static void
on_usr1(int sig)
{
	(void)sig;
	if (!usr1) {
		usr1_ns = daqiri_mono_ns();	/* clock_gettime: signal-safe */
		usr1 = 1;
	}
}

static void __attribute__((noreturn))
usage(FILE *fp, int code)
{
	fprintf(fp, "usage: daqiri-record [-s SOCKET] [--count N] [--seconds S] "
	    "[--force] [-C MB] [-G S]\n"
	    "                     [--compress N] [--flush-ms MS] [--quiet]\n"
	    "                     [--pre-trigger S --post S [--memory MB]] "
	    "STREAM FILE\n"
	    "       daqiri-record -h | --help | -V | --version\n\n"
	    "  FILE ending .h5 or .hdf5: a reorder stream to HDF5; "
	    ".pcap: a raw stream to pcap\n"
	    "  -s, --socket SOCKET  control socket (default $%s or %s)\n"
	    "  --count N            stop after N tensors\n"
	    "  --seconds S          stop after S seconds\n"
	    "  --force              replace FILE (and its rotated files) if "
	    "it exists\n"
	    "  -C MB                pcap: a new file every MB megabytes "
	    "(FILE, FILE1, FILE2, ...)\n"
	    "  -G S                 pcap: a new file every S seconds of "
	    "capture (same names)\n"
	    "  --compress N         HDF5: shuffle + deflate at level N (1-9); "
	    "default none\n"
	    "  --flush-ms MS        HDF5: make the file readable after a crash "
	    "every MS ms\n"
	    "                       (default %d: after every tensor)\n"
	    "  --pre-trigger S      keep the last S seconds in memory, write "
	    "nothing until a\n"
	    "                       trigger (daqirictl trigger STREAM, or "
	    "SIGUSR1), then\n"
	    "                       those and --post S seconds more, and "
	    "exit\n"
	    "  --memory MB          the most memory --pre-trigger keeps "
	    "(default %u)\n"
	    "  --quiet              no start line, only the summary\n"
	    "Exit status: 0 all well, 1 a failure (said on stderr), 2 usage.\n",
	    DAQIRI_SOCKET_ENV, DAQIRI_DEFAULT_SOCKET, RECORD_FLUSH_MS_DEFAULT,
	    RECORD_MEMORY_MB_DEFAULT);
	exit(code);
}

static void __attribute__((noreturn))
bad_value(const char *opt, const char *v, const char *want)
{
	fprintf(stderr, "%s: %s: \"%s\" is not %s\n", PROG, opt, v, want);
	exit(2);
}

/* A number in [lo, hi] (decimals allowed), else a usage error. */
static double
num_arg(const char *opt, const char *v, double lo, double hi,
	const char *want)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(v, &end);
	if (errno != 0 || end == v || *end != '\0' || !isfinite(x) ||
	    x < lo || x > hi)
		bad_value(opt, v, want);
	return x;
}

static enum rec_format
format_of(const char *file)
{
	const char *dot = strrchr(file, '.');

	if (dot != NULL && strchr(dot, '/') == NULL) {
		if (strcasecmp(dot, ".h5") == 0 || strcasecmp(dot, ".hdf5") == 0)
			return FMT_H5;
		if (strcasecmp(dot, ".pcap") == 0)
			return FMT_PCAP;
	}
	fprintf(stderr, "%s: %s: the format comes from the name's ending: "
	    ".h5 or .hdf5 (HDF5, for reorder streams) or .pcap (pcap, for raw "
	    "streams)\n", PROG, file);
	exit(2);
}

static void
parse_args(int argc, char **argv, struct opts *o)
{
	enum { O_COUNT = 256, O_SECONDS, O_FORCE, O_COMPRESS, O_FLUSH,
	    O_PRE, O_POST, O_MEMORY, O_QUIET };
	static const struct option lo[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "count", required_argument, NULL, O_COUNT },
		{ "seconds", required_argument, NULL, O_SECONDS },
		{ "force", no_argument, NULL, O_FORCE },
		{ "compress", required_argument, NULL, O_COMPRESS },
		{ "flush-ms", required_argument, NULL, O_FLUSH },
		{ "pre-trigger", required_argument, NULL, O_PRE },
		{ "post", required_argument, NULL, O_POST },
		{ "memory", required_argument, NULL, O_MEMORY },
		{ "quiet", no_argument, NULL, O_QUIET },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_post = false, have_c = false, have_g = false;
	bool have_compress = false, have_flush = false, have_memory = false;
	int ch;

	o->pre_s = -1;
	o->flush_ms = RECORD_FLUSH_MS_DEFAULT;
	o->memory_mb = RECORD_MEMORY_MB_DEFAULT;
	while ((ch = getopt_long(argc, argv, "s:C:G:hV", lo, NULL)) != -1) {
		switch (ch) {
		case 's':
			o->sock = optarg;
			break;
		case O_COUNT:
			o->count = (unsigned long long)num_arg("--count", optarg,
			    1, 1e15, "a positive whole number");
			if ((double)o->count != strtod(optarg, NULL))
				bad_value("--count", optarg,
				    "a positive whole number");
			break;
		case O_SECONDS:
			o->seconds = num_arg("--seconds", optarg, 0.001,
			    RECORD_SECONDS_MAX, "a number of seconds above 0");
			break;
		case O_FORCE:
			o->force = true;
			break;
		case 'C':
			o->rotate_bytes = (uint64_t)(num_arg("-C", optarg, 1,
			    1e9, "1 or more megabytes") * RECORD_MB);
			have_c = true;
			break;
		case 'G':
			o->rotate_ns = (uint64_t)(num_arg("-G", optarg, 1,
			    RECORD_SECONDS_MAX, "1 or more seconds") * 1e9);
			have_g = true;
			break;
		case O_COMPRESS:
			o->deflate = (int)num_arg("--compress", optarg, 0,
			    H5_OUT_DEFLATE_MAX, "a deflate level 0..9");
			have_compress = true;
			break;
		case O_FLUSH:
			o->flush_ms = (long)num_arg("--flush-ms", optarg, 0,
			    RECORD_FLUSH_MS_MAX, "0..60000 milliseconds");
			have_flush = true;
			break;
		case O_PRE:
			o->pre_s = num_arg("--pre-trigger", optarg, 0,
			    RECORD_WINDOW_S_MAX, "0..3600 seconds");
			break;
		case O_POST:
			o->post_s = num_arg("--post", optarg, 0,
			    RECORD_WINDOW_S_MAX, "0..3600 seconds");
			have_post = true;
			break;
		case O_MEMORY:
			o->memory_mb = (unsigned long)num_arg("--memory", optarg,
			    1, 1e9, "1 or more megabytes");
			have_memory = true;
			break;
		case O_QUIET:
			o->quiet = true;
			break;
		case 'h':
			usage(stdout, 0);
		case 'V':
			printf("daqiri-record %s\n", DAQIRI_VERSION);
			exit(0);
		default:
			usage(stderr, 2);
		}
	}
	if (optind != argc - 2)
		usage(stderr, 2);
	o->stream = argv[optind];
	o->file = argv[optind + 1];
	o->fmt = format_of(o->file);
	if ((o->pre_s >= 0) != have_post || (have_memory && o->pre_s < 0)) {
		fprintf(stderr, "%s: --pre-trigger S and --post S go together "
		    "(--memory only with them)\n", PROG);
		exit(2);
	}
	if (o->pre_s >= 0 && (o->count != 0 || o->seconds > 0)) {
		fprintf(stderr, "%s: --pre-trigger records from S seconds "
		    "before the trigger to --post seconds after it: --count "
		    "and --seconds do not apply\n", PROG);
		exit(2);
	}
	if (o->fmt == FMT_H5 && (have_c || have_g)) {
		fprintf(stderr, "%s: -C and -G rotate pcap files; %s is HDF5\n",
		    PROG, o->file);
		exit(2);
	}
	if (o->fmt == FMT_PCAP && (have_compress || have_flush)) {
		fprintf(stderr, "%s: --compress and --flush-ms are for HDF5; "
		    "%s is pcap\n", PROG, o->file);
		exit(2);
	}
}

/* ---- what the daemon says about the stream ----------------------------- */

/* One request's reply as parsed JSON, or NULL. */
static cJSON *
ask(struct daqiri *d, const char *req)
{
	char *reply = NULL;
	cJSON *o;

	if (daqiri_request(d, req, &reply) < 0) {
		free(reply);
		return NULL;
	}
	o = cJSON_Parse(reply);
	free(reply);
	return o;
}

/* Whether YAML value v (after "name: ", quoted or not) is name (n bytes). */
static bool
name_is(const char *v, const char *name, size_t n)
{
	if (v[0] == '"')
		return strncmp(v + 1, name, n) == 0 && v[1 + n] == '"' &&
		    v[2 + n] == '\0';
	return strncmp(v, name, n) == 0 && v[n] == '\0';
}

/* Append line s and a newline to the growing text *out. */
static int
append_line(char **out, size_t *len, size_t *cap, const char *s)
{
	size_t n = strlen(s);
	char *m;

	if (*len + n + 2 > *cap) {
		*cap = (*len + n + 2) * 2;
		m = realloc(*out, *cap);
		if (m == NULL)
			return -1;
		*out = m;
	}
	memcpy(*out + *len, s, n);
	*len += n;
	(*out)[(*len)++] = '\n';
	(*out)[*len] = '\0';
	return 0;
}

/*
 * The running config's lines (request "config", as daqirid -n -v prints
 * them) of the stream's entry: under the interface's reorder_configs
 * (rx queues, for a raw stream), from "- name: NAME" to the next entry
 * at the same indentation or less. NULL when not found.
 */
static char *
config_excerpt(const cJSON *lines, const char *stream, bool raw)
{
	const char *slash = strchr(stream, '/');
	const char *section = raw ? "queues:" : "reorder_configs:";
	const cJSON *l;
	size_t len = 0, cap = 0, ind, iface_ind = 0, sec_ind = 0, ent_ind = 0;
	char *out = NULL;
	enum { OUTSIDE, IFACE, SECTION, ENTRY } at = OUTSIDE;

	if (slash == NULL)
		return NULL;
	cJSON_ArrayForEach(l, lines) {
		const char *s = cJSON_GetStringValue(l), *p;

		if (s == NULL)
			continue;
		for (p = s; *p == ' '; p++)
			;
		ind = (size_t)(p - s);
		if (at == ENTRY && (ind < ent_ind || (ind == ent_ind &&
		    p[0] == '-')))
			break;
		/* a section's list items may sit at the key's indentation */
		if (at == SECTION && (ind < sec_ind || (ind == sec_ind &&
		    p[0] != '-')))
			at = IFACE;
		if (at == IFACE && ind <= iface_ind)
			at = OUTSIDE;
		if (at == OUTSIDE && strncmp(p, "- name: ", 8) == 0 &&
		    name_is(p + 8, stream, (size_t)(slash - stream))) {
			at = IFACE;
			iface_ind = ind;
		} else if (at == IFACE && strcmp(p, section) == 0) {
			at = SECTION;
			sec_ind = ind;
		} else if (at == SECTION && strncmp(p, "- name: ", 8) == 0 &&
		    name_is(p + 8, slash + 1, strlen(slash + 1))) {
			at = ENTRY;
			ent_ind = ind;
		}
		if (at == ENTRY && append_line(&out, &len, &cap, s) < 0) {
			free(out);
			return NULL;
		}
	}
	return out;
}

/* The daemon's version, the stream's record and its config entry, for
 * the file's attributes; what cannot be had is said in config_note. */
static void
describe_stream(struct rec *r)
{
	cJSON *o, *v, *ss, *st;

	snprintf(r->daemon_version, sizeof(r->daemon_version), "unknown");
	if ((o = ask(r->d, "{\"type\":\"status\"}")) != NULL) {
		v = cJSON_GetObjectItemCaseSensitive(o, "daemon_version");
		if (cJSON_IsString(v))
			snprintf(r->daemon_version, sizeof(r->daemon_version),
			    "%s", v->valuestring);
		cJSON_Delete(o);
	}
	if ((o = ask(r->d, "{\"type\":\"streams\"}")) != NULL) {
		ss = cJSON_GetObjectItemCaseSensitive(o, "streams");
		cJSON_ArrayForEach(st, ss) {
			v = cJSON_GetObjectItemCaseSensitive(st, "name");
			if (cJSON_IsString(v) &&
			    strcmp(v->valuestring, r->in.name) == 0) {
				r->stream_record = cJSON_PrintUnformatted(st);
				break;
			}
		}
		cJSON_Delete(o);
	}
	r->config_note = "the daemon did not answer the config request";
	if ((o = ask(r->d, "{\"type\":\"config\"}")) != NULL) {
		r->config_excerpt = config_excerpt(
		    cJSON_GetObjectItemCaseSensitive(o, "lines"), r->in.name,
		    r->in.kind == DAQIRI_STREAM_RAW);
		r->config_note = r->config_excerpt != NULL ? "" :
		    "the stream's entry was not found in the daemon's config";
		cJSON_Delete(o);
	}
}

/* ---- the writers -------------------------------------------------------- */

static int
sink_open(struct rec *r)
{
	struct opts *o = &r->o;
	char err[PATH_MAX + 256];
	int e;

	if (o->fmt == FMT_PCAP) {
		struct pcap_out_opts po = {
			.snaplen = (uint32_t)r->in.slot_bytes,
			.force = o->force,
			.rotate_bytes = o->rotate_bytes,
			.rotate_ns = o->rotate_ns,
		};

		e = pcap_out_open(o->file, &po, &r->sk.pcap, err, sizeof(err));
	} else {
		struct h5_out_opts ho = {
			.force = o->force,
			.deflate = o->deflate,
			.flush_ns = (uint64_t)o->flush_ms * 1000000u,
		};
		struct h5_out *h;
		struct timespec now;

		e = h5_out_open(o->file, &r->in, &ho, &r->sk.h5, err,
		    sizeof(err));
		h = r->sk.h5;
		if (e == 0) {
			clock_gettime(CLOCK_REALTIME, &now);
			/* one check at the end: attributes fail alike */
			h5_out_attr_str(h, "stream", r->in.name);
			h5_out_attr_str(h, "dtype", r->in.dtype_name);
			h5_out_attr_u64(h, "packets_per_batch", r->in.ppb);
			h5_out_attr_u64(h, "elems_per_slot", r->in.elems_per_slot);
			h5_out_attr_u64(h, "slot_bytes", r->in.slot_bytes);
			h5_out_attr_u64(h, "elem_bytes", r->in.elem_bytes);
			h5_out_attr_str(h, "fill", daqiri_fill_name(r->in.fill));
			h5_out_attr_str(h, "daemon_version", r->daemon_version);
			h5_out_attr_str(h, "recorder", "daqiri-record "
			    DAQIRI_VERSION);
			h5_out_attr_u64(h, "created_unix_ns",
			    (uint64_t)now.tv_sec * 1000000000u +
			    (uint64_t)now.tv_nsec);
			/* *_ns datasets are CLOCK_MONOTONIC; this + them =
			 * wall time (UNIX ns) */
			h5_out_attr_u64(h, "monotonic_to_unix_ns",
			    (uint64_t)now.tv_sec * 1000000000u +
			    (uint64_t)now.tv_nsec - daqiri_mono_ns());
			h5_out_attr_str(h, "stream_record", r->stream_record !=
			    NULL ? r->stream_record : "");
			h5_out_attr_str(h, "config", r->config_excerpt != NULL ?
			    r->config_excerpt : "");
			if (r->config_excerpt == NULL)
				h5_out_attr_str(h, "config_note", r->config_note);
			if (r->in.dtype == DAQIRI_DTYPE_BF16)
				h5_out_attr_str(h, "dtype_note", "bf16: a 16-bit "
				    "IEEE-style float (sign 15, exponent 7..14, "
				    "mantissa 0..6, bias 127); h5py reads it "
				    "as float32, exactly");
			if (r->trigger_ns != 0) {
				h5_out_attr_u64(h, "trigger_ns", r->trigger_ns);
				h5_out_attr_u64(h, "pre_trigger_ns",
				    (uint64_t)(o->pre_s * 1e9));
				h5_out_attr_u64(h, "post_ns",
				    (uint64_t)(o->post_s * 1e9));
			}
			if (h5_out_error(h)[0] != '\0') {
				snprintf(err, sizeof(err), "%s", h5_out_error(h));
				e = -EIO;
			}
		}
	}
	if (e < 0) {
		fprintf(stderr, "%s: %s\n", PROG, err);
		return -1;
	}
	r->sk.open = true;
	return 0;
}

/* One tensor (host bytes data) to the file. */
static int
sink_write(struct rec *r, const struct daqiri_tensor *t, const uint8_t *data)
{
	uint64_t s, t0;
	int e = 0;

	if (!r->sk.open && sink_open(r) < 0)
		return -1;
	t0 = daqiri_mono_ns();
	if (r->sk.h5 != NULL) {
		e = h5_out_write(r->sk.h5, t, data);
		if (e < 0) {
			fprintf(stderr, "%s: %s\n", PROG, h5_out_error(r->sk.h5));
			r->sk.said = true;
			return -1;
		}
		r->sk.bytes += t->bytes;
	} else {
		/* each slot of a burst is one frame, in arrival order, with
		 * its receive time (a daemon too old to send them: the
		 * burst's first) */
		for (s = 0; s < t->shape[0] && e == 0; s++) {
			if (t->lengths == NULL || t->lengths[s] == 0 ||
			    !tool_slot_present(t, s))
				continue;
			e = pcap_out_write(r->sk.pcap, data + s * t->slot_bytes,
			    t->lengths[s], t->rx_ns != NULL ? t->rx_ns[s] :
			    t->first_rx_ns);
			r->sk.frames++;
			r->sk.bytes += t->lengths[s];
		}
		if (e < 0) {
			fprintf(stderr, "%s: %s\n", PROG,
			    pcap_out_error(r->sk.pcap));
			r->sk.said = true;
			return -1;
		}
	}
	r->sk.tensors++;
	r->sk.write_ns += daqiri_mono_ns() - t0;
	return 0;
}

static int
sink_close(struct rec *r)
{
	char err[PATH_MAX + 256];
	int e;

	if (r->sk.h5 != NULL)
		e = h5_out_close(r->sk.h5, err, sizeof(err));
	else
		e = pcap_out_close(r->sk.pcap, err, sizeof(err));
	r->sk.h5 = NULL;
	r->sk.pcap = NULL;
	r->sk.open = false;
	if (e < 0 && !r->sk.said) {
		fprintf(stderr, "%s: %s\n", PROG, err);
		return -1;
	}
	return 0;
}

/* ---- pre-trigger memory -------------------------------------------------- */

static int
pretrig_init(struct rec *r)
{
	struct pretrig *p = &r->pt;
	uint64_t per = r->in.tensor_bytes + (r->in.ppb + 63) / 64 * 8 +
	    (uint64_t)r->in.ppb * 4;
	uint64_t want = (uint64_t)r->o.memory_mb * 1000000u;
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	uint64_t phys = pages > 0 && psz > 0 ? (uint64_t)pages *
	    (uint64_t)psz : 0;

	if (phys != 0 && want > phys / RECORD_MEMORY_SHARE) {
		fprintf(stderr, "%s: --memory %lu MB is more than half of this "
		    "machine's %llu MB: give less\n", PROG, r->o.memory_mb,
		    (unsigned long long)(phys / 1000000u));
		return -1;
	}
	if (want / per < 1 || want / per > UINT32_MAX) {
		fprintf(stderr, "%s: --memory %lu MB does not hold one tensor "
		    "of %s (%llu bytes): give at least %llu\n", PROG,
		    r->o.memory_mb, r->in.name,
		    (unsigned long long)per,
		    (unsigned long long)(per / 1000000u + 1));
		return -1;
	}
	p->cap = (uint32_t)(want / per);
	p->k = calloc(p->cap, sizeof(*p->k));
	if (p->k == NULL) {
		fprintf(stderr, "%s: out of memory\n", PROG);
		return -1;
	}
	if (!r->o.quiet)
		fprintf(stderr, "%s: pre-trigger: keeping the last %g s of %s "
		    "in memory, at most %u tensors (%llu MB); trigger with "
		    "daqirictl trigger %s or kill -USR1 %ld\n", PROG,
		    r->o.pre_s, r->in.name, p->cap,
		    (unsigned long long)((uint64_t)p->cap * per / 1000000u),
		    r->in.name, (long)getpid());
	return 0;
}

static void
pretrig_fini(struct pretrig *p)
{
	uint32_t i;

	for (i = 0; p->k != NULL && i < p->cap; i++) {
		free(p->k[i].data);
		free(p->k[i].bitmap);
		free(p->k[i].lengths);
		free(p->k[i].rx_ns);
	}
	free(p->k);
}

/* Forget the oldest copy. */
static void
pretrig_pop(struct pretrig *p)
{
	p->head = (p->head + 1) % p->cap;
	p->n--;
}

/* The trigger, from either source: SIGUSR1 here (the recorder's clock
 * when it came), or daqirictl trigger (the daemon's, the same
 * CLOCK_MONOTONIC), whichever came first. */
static bool
triggered(const struct rec *r, uint64_t *t_ns)
{
	uint64_t n, ns;

	if (usr1) {
		*t_ns = usr1_ns;
		return true;
	}
	if (daqiri_sub_trigger(r->sub, &n, &ns) == 0 && n != r->trig_seen) {
		*t_ns = ns;
		return true;
	}
	return false;
}

/* Keep a copy of t (its bytes at data); copies older than S seconds
 * before now go first, then the oldest when memory is full. */
static int
pretrig_keep(struct rec *r, const struct daqiri_tensor *t,
	     const uint8_t *data)
{
	struct pretrig *p = &r->pt;
	/* measured from the trigger when one came meanwhile: what began
	 * within S before it must stay */
	uint64_t now;
	uint64_t win = (uint64_t)(r->o.pre_s * 1e9);
	uint32_t words = (r->in.ppb + 63) / 64;
	struct kept *k;

	if (!triggered(r, &now))
		now = daqiri_mono_ns();
	while (p->n > 0 && p->k[p->head].t.first_rx_ns + win < now)
		pretrig_pop(p);
	if (p->n == p->cap) {
		if (p->dropped_memory++ == 0)
			fprintf(stderr, "%s: --memory holds only %u tensors: "
			    "less than %g s of %s; the oldest are left out "
			    "(give more --memory)\n", PROG, p->cap,
			    r->o.pre_s, r->in.name);
		pretrig_pop(p);
	}
	k = &p->k[(p->head + p->n) % p->cap];
	if (k->data == NULL) {
		k->data = malloc(r->in.tensor_bytes);
		k->bitmap = malloc(words * sizeof(uint64_t));
		k->lengths = malloc((size_t)r->in.ppb * sizeof(uint32_t));
		k->rx_ns = malloc((size_t)r->in.ppb * sizeof(uint64_t));
		if (k->data == NULL || k->bitmap == NULL || k->lengths == NULL ||
		    k->rx_ns == NULL) {
			fprintf(stderr, "%s: out of memory for the pre-trigger "
			    "copies\n", PROG);
			return -1;
		}
	}
	memcpy(k->data, data, t->bytes);
	memcpy(k->bitmap, t->bitmap, words * sizeof(uint64_t));
	k->t = *t;
	k->t.data = k->data;
	k->t.device = -1;
	k->t.event = NULL;
	k->t.bitmap = k->bitmap;
	k->t.lengths = NULL;
	if (t->lengths != NULL) {
		memcpy(k->lengths, t->lengths, (size_t)r->in.ppb *
		    sizeof(uint32_t));
		k->t.lengths = k->lengths;
	}
	k->t.rx_ns = NULL;
	if (t->rx_ns != NULL) {
		memcpy(k->rx_ns, t->rx_ns, (size_t)r->in.ppb *
		    sizeof(uint64_t));
		k->t.rx_ns = k->rx_ns;
	}
	p->n++;
	return 0;
}

/* Whether a tensor belongs to the triggered recording: it began within
 * [T - pre, T + post]. */
static bool
in_window(const struct rec *r, uint64_t first_rx_ns)
{
	uint64_t pre = (uint64_t)(r->o.pre_s * 1e9);
	uint64_t lo = r->trigger_ns > pre ? r->trigger_ns - pre : 0;

	return first_rx_ns >= lo &&
	    first_rx_ns <= r->trigger_ns + (uint64_t)(r->o.post_s * 1e9);
}

/* Triggered: the copies that began within the window go to the file,
 * oldest first. */
static int
pretrig_flush(struct rec *r)
{
	struct pretrig *p = &r->pt;
	struct kept *k;

	if (!r->o.quiet)
		fprintf(stderr, "%s: triggered: writing %s from %g s before "
		    "to %g s after\n", PROG, r->o.file, r->o.pre_s,
		    r->o.post_s);
	if (!r->sk.open && sink_open(r) < 0)
		return -1;
	while (p->n > 0) {
		k = &p->k[p->head];
		if (in_window(r, k->t.first_rx_ns) &&
		    sink_write(r, &k->t, k->data) < 0)
			return -1;
		pretrig_pop(p);
	}
	return 0;
}

/* ---- the loop ------------------------------------------------------------ */

static int
subscribe(struct rec *r)
{
	struct daqiri_sub_opts so = { .size = sizeof(so) };
	uint64_t ns;
	int e;

	so.policy = DAQIRI_POLICY_LOSSLESS;
	e = daqiri_subscribe(r->d, r->o.stream, &so, &r->sub);
	if (e == -EACCES) {
		fprintf(stderr, "%s: subscribe \"%s\": %s\n%s: a recording "
		    "must not miss a tensor, so it subscribes lossless: run it "
		    "as root or as a member of the daemon's admin_group "
		    "(daqirid.yaml(5))\n", PROG, r->o.stream,
		    daqiri_last_error(r->d)[0] != '\0' ?
		    daqiri_last_error(r->d) : strerror(-e), PROG);
		return -1;
	}
	if (e < 0) {
		fprintf(stderr, "%s: subscribe \"%s\": %s\n", PROG, r->o.stream,
		    daqiri_last_error(r->d)[0] != '\0' ?
		    daqiri_last_error(r->d) : strerror(-e));
		return -1;
	}
	daqiri_sub_info(r->sub, &r->in);
	/* triggers before this recorder started are not its own */
	if (daqiri_sub_trigger(r->sub, &r->trig_seen, &ns) < 0)
		r->trig_seen = 0;
	if (r->in.kind == DAQIRI_STREAM_RAW && r->o.fmt != FMT_PCAP) {
		fprintf(stderr, "%s: %s is a raw stream (packets as they "
		    "came): record it to a .pcap file\n", PROG, r->in.name);
		return -1;
	}
	if (r->in.kind != DAQIRI_STREAM_RAW && r->o.fmt != FMT_H5) {
		fprintf(stderr, "%s: %s is a reorder stream (tensors): record "
		    "it to a .h5 file\n", PROG, r->in.name);
		return -1;
	}
	return 0;
}

/* Tensors the recording lacks: seq gaps, and batches the daemon dropped
 * at ingest for want of a buffer while we recorded (they never got a
 * seq: a lossless subscriber that falls behind holds the stream back);
 * the reason said on stderr. */
static uint64_t
missed(struct rec *r, const struct tool_counts *c0)
{
	struct tool_counts c1;
	long long nb;

	tool_counts(r->d, r->in.name, &c1);
	if (r->seq_gaps > 0)
		fprintf(stderr, "%s: %llu tensors missed (gaps in seq)%s\n",
		    PROG, (unsigned long long)r->seq_gaps, r->restarts > 0 ?
		    ": the daemon restarted" : "");
	if (r->in.kind == DAQIRI_STREAM_RAW) {
		nb = c0->no_buffer >= 0 && c1.no_buffer > c0->no_buffer ?
		    c1.no_buffer - c0->no_buffer : 0;
		if (nb > 0)
			fprintf(stderr, "%s: the daemon dropped %lld packets "
			    "of %s for want of a buffer (no_buffer) while "
			    "recording: this recorder (lossless) or another "
			    "lossless consumer fell behind\n", PROG, nb,
			    r->in.name);
		return r->seq_gaps;
	}
	nb = c0->batches_no_buffer >= 0 && c1.batches_no_buffer >
	    c0->batches_no_buffer ? c1.batches_no_buffer -
	    c0->batches_no_buffer : 0;
	if (nb > 0)
		fprintf(stderr, "%s: the daemon dropped %lld batches of %s "
		    "for want of a buffer (no_buffer) while recording: this "
		    "recorder (lossless), or another lossless consumer, fell "
		    "behind and held the stream's buffers (daqirictl stats: "
		    "handoff.blocked_by); a faster disk, no --compress or "
		    "fewer consumers help\n", PROG, nb, r->in.name);
	return r->seq_gaps + (uint64_t)nb;
}

static void
print_summary(struct rec *r, double secs, uint64_t miss, bool ok)
{
	double mb = (double)r->sk.bytes / RECORD_MB;
	double ws = (double)r->sk.write_ns / 1e9;

	/* writing: the time in the writers alone, what the disk and the
	 * file format cost, apart from waiting for the stream */
	fprintf(stderr, "%s: %s -> %s: tensors %llu, bytes %llu, %.3f s, "
	    "%.1f MB/s, writing %.3f s (%.1f MB/s)", PROG, r->in.name,
	    r->o.file, (unsigned long long)r->sk.tensors,
	    (unsigned long long)r->sk.bytes, secs,
	    secs > 0 ? mb / secs : 0.0, ws, ws > 0 ? mb / ws : 0.0);
	if (r->sk.pcap != NULL) {
		struct pcap_out_stats st;

		pcap_out_stats(r->sk.pcap, &st);
		fprintf(stderr, ", frames %llu, files %u",
		    (unsigned long long)st.frames, st.files);
	}
	if (r->trigger_ns != 0)
		fprintf(stderr, ", trigger_ns %llu",
		    (unsigned long long)r->trigger_ns);
	fprintf(stderr, ", tensors missed %llu%s\n",
	    (unsigned long long)miss, ok ? "" : " (stopped by an error)");
}

int
main(int argc, char **argv)
{
	struct rec r;
	struct daqiri_tensor t = { .size = sizeof(t) };
	struct tool_counts c0;
	struct sigaction sa;
	uint8_t *copy = NULL;
	const uint8_t *data;
	uint64_t start = 0, deadline = 0, post_end = 0, miss;
	int e, rc = 0;
	bool done = false, failed = false;

	memset(&r, 0, sizeof(r));
	r.in.size = sizeof(r.in);
	parse_args(argc, argv, &r.o);
	/* a missing --force is said before anything else happens */
	if (!r.o.force && access(r.o.file, F_OK) == 0) {
		fprintf(stderr, "%s: %s exists: add --force to replace it\n",
		    PROG, r.o.file);
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;	/* no SA_RESTART: waits end with EINTR */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = r.o.pre_s >= 0 ? on_usr1 : SIG_IGN;
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	e = daqiri_connect(r.o.sock, &r.d);
	if (e < 0) {
		tool_say_connect(PROG, e, r.o.sock);
		return 1;
	}
	if (subscribe(&r) < 0) {
		daqiri_disconnect(r.d);
		return 1;
	}
	describe_stream(&r);
	tool_counts(r.d, r.in.name, &c0);
	if (r.in.device >= 0 && (copy = malloc(r.in.tensor_bytes)) == NULL) {
		fprintf(stderr, "%s: out of memory\n", PROG);
		rc = 1;
		goto out;
	}
	if (r.o.pre_s >= 0 && pretrig_init(&r) < 0) {
		rc = 1;
		goto out;
	}
	if (!r.o.quiet)
		fprintf(stderr, "%s: %s: %u x %llu %s (%llu bytes per tensor), "
		    "%s, lossless -> %s\n", PROG, r.in.name, r.in.ppb,
		    (unsigned long long)r.in.elems_per_slot, r.in.dtype_name,
		    (unsigned long long)r.in.tensor_bytes,
		    daqiri_mem_kind_name(r.in.mem_kind), r.o.file);
	/* Without a trigger the file is made now, so a bad path or a full
	 * disk shows at once. */
	if (r.o.pre_s < 0 && sink_open(&r) < 0) {
		rc = 1;
		goto out;
	}
	start = daqiri_mono_ns();
	if (r.o.seconds > 0)
		deadline = start + (uint64_t)(r.o.seconds * 1e9);
	while (!stop && !done) {
		if (r.o.pre_s >= 0 && r.trigger_ns == 0 &&
		    triggered(&r, &r.trigger_ns)) {
			post_end = r.trigger_ns + (uint64_t)(r.o.post_s * 1e9);
			if (pretrig_flush(&r) < 0) {
				failed = true;
				break;
			}
		}
		if (deadline != 0 && daqiri_mono_ns() >= deadline)
			break;
		if (post_end != 0 && daqiri_mono_ns() >= post_end +
		    RECORD_POST_GRACE_NS)
			break;
		e = daqiri_next(r.sub, &t, RECORD_WAIT_MS);
		if (e == 0 || e == -EINTR)
			continue;
		if (e < 0) {
			if (e == -ENOTCONN)
				fprintf(stderr, "%s: the daemon went away "
				    "(control connection closed)\n", PROG);
			else if (e == -ESHUTDOWN)
				fprintf(stderr, "%s: the daemon ended the "
				    "subscription: %s\n", PROG,
				    daqiri_last_error(r.d));
			else
				fprintf(stderr, "%s: receiving: %s\n", PROG,
				    strerror(-e));
			failed = true;
			break;
		}
		if (r.have_seq && t.seq != r.last_seq + 1)
			r.seq_gaps += t.seq > r.last_seq ?
			    t.seq - r.last_seq - 1 : 0;
		r.have_seq = true;
		r.last_seq = t.seq;
		data = tool_host_view(&t, copy);
		if (data == NULL) {
			fprintf(stderr, "%s: seq %llu: cannot read device "
			    "memory\n", PROG, (unsigned long long)t.seq);
			failed = true;
		} else if (r.o.pre_s < 0) {
			failed = sink_write(&r, &t, data) < 0;
			done = r.o.count != 0 && r.sk.tensors >= r.o.count;
		} else if (r.trigger_ns == 0) {
			failed = pretrig_keep(&r, &t, data) < 0;
		} else if (t.first_rx_ns > post_end) {
			done = true;	/* began after T + post: the end */
		} else if (in_window(&r, t.first_rx_ns)) {
			failed = sink_write(&r, &t, data) < 0;
		}
		e = daqiri_release(r.sub, &t);
		if (failed)
			break;
		if (e < 0) {
			fprintf(stderr, "%s: release: %s\n", PROG, strerror(-e));
			failed = true;
			break;
		}
	}
	if (r.o.pre_s >= 0 && r.trigger_ns == 0 && !failed)
		fprintf(stderr, "%s: stopped before any trigger: nothing "
		    "written, %s not created\n", PROG, r.o.file);
	miss = missed(&r, &c0);
	print_summary(&r, (double)(daqiri_mono_ns() - start) / 1e9, miss,
	    !failed);
	if (sink_close(&r) < 0)
		failed = true;
	if (failed)
		rc = 1;
out:
	pretrig_fini(&r.pt);
	free(copy);
	free(r.stream_record);
	free(r.config_excerpt);
	sink_close(&r);
	daqiri_unsubscribe(r.sub);
	daqiri_disconnect(r.d);
	return rc;
}
