/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The configuration loader: YAML text in (libyaml document API), a
 * validated struct cfg and every diagnostic, with its line and column, out.
 * Also the printer of the normalised config, which parses back to an
 * equal struct. Pure: it never exits, prints (but where asked) or logs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

#include "config.h"
#include "convert.h"

/* Limits of values and inputs; all checked, never assumed. */
#define CFG_FILE_MAX		(4u << 20)	/* bytes of a config file */
#define CFG_CORE_MAX		4095		/* highest CPU core number */
#define CFG_AFFINITY_MAX	1023		/* GPU ordinal or NUMA node */
#define CFG_BUF_SIZE_MAX	(1ull << 40)
#define CFG_FRAME_MAX		65535u		/* bytes of one frame */
#define CFG_BIT_OFFSET_MAX	(CFG_FRAME_MAX * 8u)
#define CFG_BIT_WIDTH_MAX	32
#define CFG_RETRY_MAX_S		3600
#define CFG_CONSUMERS_MAX	4096
#define CFG_STATS_MS_MIN	10
#define CFG_STATS_MS_MAX	3600000u
#define CFG_HOLD_MS_MAX		3600000u
#define CFG_HELLO_MS_MIN	10
#define CFG_HELLO_MS_MAX	600000u
#define CFG_RESERVED_MAX	1024
#define CFG_SUN_PATH_MAX	108		/* sizeof(sun_path) */
#define CFG_ETH_IP_UDP_HDR	42		/* synthetic socket frame header */
#define CFG_IPV4_LEN_MIN	20
#define CFG_MAP_KEYS_MAX	24		/* known keys of one map */
#define CFG_QUOTE_MAX		40		/* user text shown in messages */
#define CFG_SUGGEST_LEN_MAX	64		/* longer keys get no suggestion */
#define CFG_FLOW_DEPTH_MAX	64		/* nested [ and { */

/* ---------------------------------------------------------------------
 * Names of the enums, as spelt in YAML.
 */
static const char *const stream_type_names[] = { "raw", "socket" };
static const char *const engine_names[] = { "dpdk", "socket" };
static const char *const log_level_names[] = {
	"trace", "debug", "info", "warn", "error", "critical", "off",
};
static const char *const loopback_names[] = { "", "sw" };
static const char *const mem_kind_names[] = {
	"huge", "device", "host_pinned", "host",
};
static const char *const access_names[] = {
	"local", "rdma_read", "rdma_write",
};
static const char *const sock_mode_names[] = { "client", "server" };
static const char *const transport_names[] = { "udp", "tcp" };
static const char *const poll_mode_names[] = { "indirect" };
static const char *const reorder_type_names[] = { "cpu", "gpu" };
static const char *const method_names[] = {
	"seq_batch_number", "seq_packets_per_batch",
};
static const char *const endian_names[] = { "host", "network" };
static const char *const fill_names[] = { "zero", "nan", "keep" };
static const char *const rx_mode_names[] = { "blocking", "busy_poll" };

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
_Static_assert(NELEM(stream_type_names) == CFG_STREAM_MAX, "stream names");
_Static_assert(NELEM(rx_mode_names) == CFG_RX_MODE_MAX, "rx mode names");
_Static_assert(NELEM(engine_names) == CFG_ENGINE_MAX, "engine names");
_Static_assert(NELEM(log_level_names) == CFG_LOG_MAX, "log level names");
_Static_assert(NELEM(loopback_names) == CFG_LOOPBACK_MAX, "loopback names");
_Static_assert(NELEM(mem_kind_names) == DAQIRI_MEM_MAX, "memory kind names");
_Static_assert(NELEM(sock_mode_names) == CFG_SOCK_MAX, "socket mode names");
_Static_assert(NELEM(transport_names) == CFG_TRANSPORT_MAX, "transports");
_Static_assert(NELEM(poll_mode_names) == CFG_POLL_MAX, "poll mode names");
_Static_assert(NELEM(reorder_type_names) == CFG_REORDER_MAX, "reorder types");
_Static_assert(NELEM(method_names) == CFG_METHOD_MAX, "method names");
_Static_assert(NELEM(endian_names) == CFG_ENDIAN_MAX, "endian names");
_Static_assert(NELEM(fill_names) == DAQIRI_FILL_MAX, "fill names");

/* Input and output element types the reorder stage converts. */
static const char *const input_type_names[] = {
	"int4", "int8", "int16", "int32",
};
static const enum daqiri_dtype input_types[] = {
	DAQIRI_DTYPE_INT4, DAQIRI_DTYPE_INT8, DAQIRI_DTYPE_INT16, DAQIRI_DTYPE_INT32,
};
static const char *const output_type_names[] = {
	"fp16", "bf16", "fp32", "fp64", "int32", "int8",
};
static const enum daqiri_dtype output_types[] = {
	DAQIRI_DTYPE_FP16, DAQIRI_DTYPE_BF16, DAQIRI_DTYPE_FP32, DAQIRI_DTYPE_FP64,
	DAQIRI_DTYPE_INT32, DAQIRI_DTYPE_INT8,
};

const char *
cfg_log_level_name(enum cfg_log_level l)
{
	return (unsigned)l < CFG_LOG_MAX ? log_level_names[l] : "?";
}

unsigned
cfg_dtype_bits(enum daqiri_dtype t)
{
	switch (t) {
	case DAQIRI_DTYPE_INT4:
		return 4;
	case DAQIRI_DTYPE_RAW:
	case DAQIRI_DTYPE_INT8:
		return 8;
	case DAQIRI_DTYPE_INT16:
	case DAQIRI_DTYPE_FP16:
	case DAQIRI_DTYPE_BF16:
		return 16;
	case DAQIRI_DTYPE_INT32:
	case DAQIRI_DTYPE_FP32:
		return 32;
	case DAQIRI_DTYPE_FP64:
		return 64;
	default:
		return 0;
	}
}

uint64_t
cfg_reorder_slot_bytes(const struct cfg_reorder *r, uint64_t n)
{
	enum daqiri_dtype in = r->has_data_types ? r->input_type : DAQIRI_DTYPE_RAW;
	enum daqiri_dtype out = r->has_data_types ? r->output_type : DAQIRI_DTYPE_RAW;

	if (n == 0 || n > UINT32_MAX)
		return 0;
	/* the same element arithmetic the reorder stage runs */
	return (uint64_t)cvt_in_elems(in, (uint32_t)n) * cvt_out_size(out);
}

void
cfg_defaults(struct cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->stream_type = CFG_STREAM_RAW;
	c->engine = CFG_ENGINE_DPDK;
	c->log_level = CFG_LOG_WARN;
	c->loopback = CFG_LOOPBACK_NONE;
	c->tx_meta_buffers = 256;
	c->rx_meta_buffers = 256;
	snprintf(c->daemon.control_socket, sizeof(c->daemon.control_socket),
		 "%s", "/run/daqiri/daqirid.sock");
	c->daemon.socket_mode = 0660;
	c->daemon.max_consumers = 64;
	c->daemon.stats_interval_ms = 1000;
	c->daemon.hold_timeout_ms = 10000;
	c->daemon.hello_timeout_ms = 1000;
	c->daemon.max_subscriptions_per_connection = 16;
	c->daemon.max_connections_per_uid = 16;
	c->daemon.reserved_admin_connections = 8;
}

const struct cfg_interface *
cfg_interface_find(const struct cfg *c, const char *name)
{
	for (int i = 0; i < c->ninterfaces; i++)
		if (strcmp(c->interfaces[i].name, name) == 0)
			return &c->interfaces[i];
	return NULL;
}

int
cfg_region_find(const struct cfg *c, const char *name)
{
	for (int i = 0; i < c->nregions; i++)
		if (strcmp(c->regions[i].name, name) == 0)
			return i;
	return -1;
}

/* ---------------------------------------------------------------------
 * Diagnostics.
 */
static void
diag_vadd(struct cfg_diags *d, enum cfg_severity sev, struct cfg_pos pos,
	  const char *fmt, va_list ap)
{
	struct cfg_diag *g;

	if (sev == CFG_SEV_ERROR)
		d->nerrors++;
	else
		d->nwarnings++;
	if (d->ndiags >= CFG_MAX_DIAGS)
		return;
	g = &d->diags[d->ndiags++];
	g->severity = sev;
	g->pos = pos;
	vsnprintf(g->msg, sizeof(g->msg), fmt, ap);
}

static void __attribute__((format(printf, 4, 5)))
diag_add(struct cfg_diags *d, enum cfg_severity sev, struct cfg_pos pos,
	 const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diag_vadd(d, sev, pos, fmt, ap);
	va_end(ap);
}

/* File order; whole-file diagnostics (0:0) first; ties keep their order. */
static int
diag_cmp(const void *a, const void *b)
{
	const struct cfg_diag *x = a, *y = b;

	if (x->pos.line != y->pos.line)
		return x->pos.line < y->pos.line ? -1 : 1;
	if (x->pos.col != y->pos.col)
		return x->pos.col < y->pos.col ? -1 : 1;
	return 0;
}

static void
diag_sort(struct cfg_diags *d)
{
	/* insertion sort: stable, and the list is short and nearly sorted */
	for (int i = 1; i < d->ndiags; i++) {
		struct cfg_diag t = d->diags[i];
		int j = i;

		while (j > 0 && diag_cmp(&d->diags[j - 1], &t) > 0) {
			d->diags[j] = d->diags[j - 1];
			j--;
		}
		d->diags[j] = t;
	}
}

void
cfg_diags_print(const struct cfg_diags *d, FILE *fp)
{
	for (int i = 0; i < d->ndiags; i++) {
		const struct cfg_diag *g = &d->diags[i];
		const char *sev = g->severity == CFG_SEV_ERROR ? "error" :
		    "warning";

		if (g->pos.line > 0)
			fprintf(fp, "%s:%d:%d: %s: %s\n", d->file, g->pos.line,
				g->pos.col, sev, g->msg);
		else
			fprintf(fp, "%s: %s: %s\n", d->file, sev, g->msg);
	}
}

/* ---------------------------------------------------------------------
 * The parser's state and node helpers.
 */
struct pctx {
	yaml_document_t *doc;
	struct cfg *c;
	struct cfg_diags *d;
	bool stream_known;		/* stream_type was given and valid */
	bool region_used[CFG_MAX_REGIONS];
	bool region_unresolved;		/* a reference named no region */
	/* Who owns a region: a region is the output of one reorder config
	 * and nothing else, and receives for the queues of one interface. */
	int cur_iface;
	int rx_iface_of[CFG_MAX_REGIONS];	/* interface index + 1, 0 none */
	int reorder_line_of[CFG_MAX_REGIONS];	/* its reorder's line, 0 none */
	char reorder_of[CFG_MAX_REGIONS][CFG_NAME_MAX];
	struct cfg_pos num_bufs_at[CFG_MAX_REGIONS];	/* line 0: not given */
};

/* A quoted user string in a message: short, printable. */
#define QBUF (CFG_QUOTE_MAX * 4 + 8)

static const char *
quote(const char *s, size_t len, char *buf)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, o = 0;

	for (i = 0; i < len && i < CFG_QUOTE_MAX; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch >= 0x20 && ch < 0x7f) {
			buf[o++] = (char)ch;
		} else {
			buf[o++] = '\\';
			buf[o++] = 'x';
			buf[o++] = hex[ch >> 4];
			buf[o++] = hex[ch & 15];
		}
	}
	if (i < len) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

static struct cfg_pos
pos_of(const yaml_node_t *n)
{
	struct cfg_pos p = { 0, 0 };

	if (n != NULL) {
		p.line = (int)n->start_mark.line + 1;
		p.col = (int)n->start_mark.column + 1;
	}
	return p;
}

static void __attribute__((format(printf, 3, 4)))
err(struct pctx *x, const yaml_node_t *n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diag_vadd(x->d, CFG_SEV_ERROR, pos_of(n), fmt, ap);
	va_end(ap);
}

static void __attribute__((format(printf, 3, 4)))
warn(struct pctx *x, const yaml_node_t *n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diag_vadd(x->d, CFG_SEV_WARNING, pos_of(n), fmt, ap);
	va_end(ap);
}

static void __attribute__((format(printf, 3, 4)))
err_at(struct pctx *x, struct cfg_pos p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diag_vadd(x->d, CFG_SEV_ERROR, p, fmt, ap);
	va_end(ap);
}

static yaml_node_t *
node_at(struct pctx *x, int idx)
{
	return yaml_document_get_node(x->doc, idx);
}

static const char *
sval(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

static size_t
slen(const yaml_node_t *n)
{
	return n->data.scalar.length;
}

static bool
is_plain(const yaml_node_t *n)
{
	return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ||
	    n->data.scalar.style == YAML_ANY_SCALAR_STYLE;
}

static bool
seq_eq(const char *s, size_t len, const char *word)
{
	return strlen(word) == len && memcmp(s, word, len) == 0;
}

static bool
scalar_is(const yaml_node_t *n, const char *word)
{
	return n->type == YAML_SCALAR_NODE && seq_eq(sval(n), slen(n), word);
}

/* YAML 1.2 core schema: what a plain scalar resolves to. */
enum skind { SK_NULL, SK_BOOL, SK_INT, SK_FLOAT, SK_STR };

static bool
all_of(const char *s, size_t len, const char *set)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] == '\0' || strchr(set, s[i]) == NULL)
			return false;
	return true;
}

static bool
is_float_text(const char *s, size_t len)
{
	size_t i = 0, digits = 0;

	if (i < len && (s[i] == '-' || s[i] == '+'))
		i++;
	if (len - i == 4 && s[i] == '.' &&
	    (memcmp(s + i, ".inf", 4) == 0 || memcmp(s + i, ".Inf", 4) == 0 ||
	     memcmp(s + i, ".INF", 4) == 0))
		return true;
	if (seq_eq(s, len, ".nan") || seq_eq(s, len, ".NaN") ||
	    seq_eq(s, len, ".NAN"))
		return true;
	while (i < len && s[i] >= '0' && s[i] <= '9') {
		i++;
		digits++;
	}
	if (i < len && s[i] == '.') {
		i++;
		while (i < len && s[i] >= '0' && s[i] <= '9') {
			i++;
			digits++;
		}
	}
	if (digits == 0)
		return false;
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < len && (s[i] == '-' || s[i] == '+'))
			i++;
		if (i >= len)
			return false;
		while (i < len && s[i] >= '0' && s[i] <= '9')
			i++;
	}
	return i == len;
}

static enum skind
scalar_kind(const yaml_node_t *n)
{
	const char *s = sval(n);
	size_t len = slen(n);

	if (!is_plain(n))
		return SK_STR;
	if (len == 0 || seq_eq(s, len, "~") || seq_eq(s, len, "null") ||
	    seq_eq(s, len, "Null") || seq_eq(s, len, "NULL"))
		return SK_NULL;
	if (seq_eq(s, len, "true") || seq_eq(s, len, "True") ||
	    seq_eq(s, len, "TRUE") || seq_eq(s, len, "false") ||
	    seq_eq(s, len, "False") || seq_eq(s, len, "FALSE"))
		return SK_BOOL;
	if (all_of(s + (s[0] == '-' || s[0] == '+'),
		   len - (s[0] == '-' || s[0] == '+'), "0123456789"))
		return SK_INT;
	if (len > 2 && s[0] == '0' && s[1] == 'x' &&
	    all_of(s + 2, len - 2, "0123456789abcdefABCDEF"))
		return SK_INT;
	if (len > 2 && s[0] == '0' && s[1] == 'o' &&
	    all_of(s + 2, len - 2, "01234567"))
		return SK_INT;
	if (is_float_text(s, len))
		return SK_FLOAT;
	return SK_STR;
}

/* "a map", "a list", "an empty value" or the scalar itself, quoted. */
static const char *
describe(const yaml_node_t *n, char *buf)
{
	char q[QBUF];

	switch (n->type) {
	case YAML_MAPPING_NODE:
		return "a map";
	case YAML_SEQUENCE_NODE:
		return "a list";
	case YAML_SCALAR_NODE:
		if (scalar_kind(n) == SK_NULL)
			return "an empty value";
		snprintf(buf, QBUF + 16, "%s'%s'", is_plain(n) ? "" :
			 "the quoted string ", quote(sval(n), slen(n), q));
		return buf;
	default:
		return "nothing";
	}
}

#define DBUF (QBUF + 24)

/* ---------------------------------------------------------------------
 * Typed values. Each reports its own problem as "key: what is wrong"
 * at the value and returns false; the caller keeps its default.
 */

/*
 * An unsigned decimal integer in [min, max] (chrony's parse_int style).
 * Negative numbers and overflow are range errors with the range in the
 * message; hex and octal are refused where a decimal number is expected.
 * quoted_ok also takes a quoted string that holds one (cpu_core).
 */
static bool
get_uint_q(struct pctx *x, const char *key, const yaml_node_t *n,
	   uint64_t min, uint64_t max, bool quoted_ok, uint64_t *out)
{
	char db[DBUF];
	const char *s;
	size_t len, i = 0;
	uint64_t v = 0;
	bool neg = false, big = false;

	if (n->type != YAML_SCALAR_NODE || scalar_kind(n) == SK_NULL) {
		err(x, n, "%s: expected an integer, got %s", key,
		    describe(n, db));
		return false;
	}
	s = sval(n);
	len = slen(n);
	if (!is_plain(n) && !(quoted_ok && all_of(s, len, "+-0123456789"))) {
		err(x, n, "%s: expected an integer, got %s", key,
		    describe(n, db));
		return false;
	}
	if (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-';
		i = 1;
	}
	if (!all_of(s + i, len - i, "0123456789")) {
		enum skind k = is_plain(n) ? scalar_kind(n) : SK_STR;

		if (k == SK_INT)
			err(x, n, "%s: expected a decimal integer, got %s",
			    key, describe(n, db));
		else if (k == SK_FLOAT)
			err(x, n, "%s: expected an integer, got the "
			    "fraction %s", key, describe(n, db));
		else
			err(x, n, "%s: expected an integer, got %s", key,
			    describe(n, db));
		return false;
	}
	for (; i < len; i++) {
		unsigned dgt = (unsigned)(s[i] - '0');

		if (v > (UINT64_MAX - dgt) / 10)
			big = true;
		else
			v = v * 10 + dgt;
	}
	if (big || (neg && v != 0) || v < min || v > max) {
		char q[QBUF];

		err(x, n, "%s: must be between %llu and %llu, got %s", key,
		    (unsigned long long)min, (unsigned long long)max,
		    quote(s, len, q));
		return false;
	}
	*out = v;
	return true;
}

static bool
get_u64(struct pctx *x, const char *key, const yaml_node_t *n, uint64_t min,
	uint64_t max, uint64_t *out)
{
	return get_uint_q(x, key, n, min, max, false, out);
}

static bool
get_u32(struct pctx *x, const char *key, const yaml_node_t *n, uint32_t min,
	uint32_t max, uint32_t *out)
{
	uint64_t v;

	if (!get_uint_q(x, key, n, min, max, false, &v))
		return false;
	*out = (uint32_t)v;
	return true;
}

static bool
get_int(struct pctx *x, const char *key, const yaml_node_t *n, int min,
	int max, int *out)
{
	uint64_t v;

	if (!get_uint_q(x, key, n, (uint64_t)min, (uint64_t)max, false, &v))
		return false;
	*out = (int)v;
	return true;
}

static bool
get_bool(struct pctx *x, const char *key, const yaml_node_t *n, bool *out)
{
	char db[DBUF];

	if (n->type == YAML_SCALAR_NODE && scalar_kind(n) == SK_BOOL) {
		*out = sval(n)[0] == 't' || sval(n)[0] == 'T';
		return true;
	}
	err(x, n, "%s: expected true or false, got %s", key, describe(n, db));
	return false;
}

/* A string into buf (size bytes, NUL included); an empty value is "". */
static bool
get_str(struct pctx *x, const char *key, const yaml_node_t *n, char *buf,
	size_t size)
{
	char db[DBUF];

	if (n->type != YAML_SCALAR_NODE) {
		err(x, n, "%s: expected a string, got %s", key,
		    describe(n, db));
		return false;
	}
	if (scalar_kind(n) == SK_NULL) {
		buf[0] = '\0';
		return true;
	}
	if (memchr(sval(n), '\0', slen(n)) != NULL) {
		err(x, n, "%s: contains a NUL character", key);
		return false;
	}
	if (slen(n) >= size) {
		err(x, n, "%s: too long (%zu bytes, at most %zu)", key,
		    slen(n), size - 1);
		return false;
	}
	memcpy(buf, sval(n), slen(n));
	buf[slen(n)] = '\0';
	return true;
}

/* Damerau-Levenshtein (optimal string alignment) distance, capped. */
static int
edit_distance(const char *a, size_t la, const char *b, size_t lb)
{
	int d[CFG_SUGGEST_LEN_MAX + 1][CFG_SUGGEST_LEN_MAX + 1];

	if (la > CFG_SUGGEST_LEN_MAX || lb > CFG_SUGGEST_LEN_MAX)
		return INT_MAX;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = (int)i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			int cost = a[i - 1] != b[j - 1];
			int v = d[i - 1][j] + 1;

			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < v)
				v = d[i - 1][j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	}
	return d[la][lb];
}

/*
 * The closest of names[0..n) to s, or NULL when none is close: an edit
 * distance of at most 2, or at most a third of the longer word, or one
 * word the start of the other ("warning" for "warn").
 */
static const char *
closest(const char *s, size_t len, const char *const *names, size_t n)
{
	const char *best = NULL;
	int bestd = INT_MAX;

	for (size_t i = 0; i < n; i++) {
		size_t ln = strlen(names[i]);
		int dist, lim;

		if (ln == 0)
			continue;
		dist = edit_distance(s, len, names[i], ln);
		lim = (int)(ln > len ? ln : len) / 3;
		if (lim < 2)
			lim = 2;
		if (len >= 3 && ln >= 3 &&
		    memcmp(s, names[i], len < ln ? len : ln) == 0)
			lim = INT_MAX - 1;
		if (dist <= lim && dist < bestd) {
			best = names[i];
			bestd = dist;
		}
	}
	return best;
}

static void
join_names(const char *const *names, size_t n, char *buf, size_t size)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && o < size; i++) {
		int k = snprintf(buf + o, size - o, "%s%s", i ? ", " : "",
				 names[i][0] ? names[i] : "\"\"");

		if (k < 0)
			break;
		o += (size_t)k;
	}
}

/* One of names[0..n); *out = its index. */
static bool
get_enum(struct pctx *x, const char *key, const yaml_node_t *n,
	 const char *const *names, size_t count, int *out)
{
	char db[DBUF], list[160], q[QBUF];
	const char *s, *near;
	size_t len;

	if (n->type != YAML_SCALAR_NODE) {
		err(x, n, "%s: expected a string, got %s", key,
		    describe(n, db));
		return false;
	}
	s = scalar_kind(n) == SK_NULL ? "" : sval(n);
	len = scalar_kind(n) == SK_NULL ? 0 : slen(n);
	for (size_t i = 0; i < count; i++) {
		if (seq_eq(s, len, names[i])) {
			*out = (int)i;
			return true;
		}
	}
	join_names(names, count, list, sizeof(list));
	near = closest(s, len, names, count);
	if (near != NULL)
		err(x, n, "%s: unknown value '%s'; did you mean '%s'? "
		    "(valid: %s)", key, quote(s, len, q), near, list);
	else
		err(x, n, "%s: unknown value '%s' (valid: %s)", key,
		    quote(s, len, q), list);
	return false;
}

/*
 * The items of a list, at most max of them (more is one error and the
 * rest is not read). Returns the number of items to read, or -1 after
 * an error (not a list; empty).
 */
static int
get_list(struct pctx *x, const char *key, const yaml_node_t *n, int max,
	 yaml_node_item_t **items)
{
	char db[DBUF];
	long cnt;

	if (n->type != YAML_SEQUENCE_NODE) {
		err(x, n, "%s: expected a list, got %s", key, describe(n, db));
		return -1;
	}
	cnt = n->data.sequence.items.top - n->data.sequence.items.start;
	if (cnt == 0) {
		err(x, n, "%s: must not be an empty list", key);
		return -1;
	}
	if (cnt > max) {
		err(x, n, "%s: too many entries (%ld, at most %d)", key, cnt,
		    max);
		cnt = max;
	}
	*items = n->data.sequence.items.start;
	return (int)cnt;
}

/* ---------------------------------------------------------------------
 * Maps: every key is checked against the keys that map knows, once.
 */
enum key_kind {
	KEY_OK,			/* read by the parser */
	KEY_NO_EFFECT,		/* accepted with a warning */
	KEY_UNSUPPORTED,	/* a known feature daqiri does not have */
};

struct keydef {
	const char *name;
	enum key_kind kind;
	const char *note;	/* message for the last two kinds */
};

struct map {
	const char *what;
	const struct keydef *defs;
	int ndefs;
	yaml_node_t *node;
	yaml_node_t *key[CFG_MAP_KEYS_MAX];
	yaml_node_t *val[CFG_MAP_KEYS_MAX];
	bool suggested[CFG_MAP_KEYS_MAX];	/* by an unknown key */
};

static int
map_index(const struct map *m, const char *name)
{
	for (int i = 0; i < m->ndefs; i++)
		if (strcmp(m->defs[i].name, name) == 0)
			return i;
	return -1;
}

static yaml_node_t *
mget(const struct map *m, const char *name)
{
	int i = map_index(m, name);

	return i < 0 ? NULL : m->val[i];
}

static yaml_node_t *
mkey(const struct map *m, const char *name)
{
	int i = map_index(m, name);

	return i < 0 ? NULL : m->key[i];
}

/*
 * Check node n (the value of `label`) is a map of known keys. Unknown keys
 * are errors naming the closest known key, unless foreign_ok (the top
 * level beside daqiri:). Returns false when n is not a map at all.
 */
static bool
map_open(struct pctx *x, struct map *m, yaml_node_t *n, const char *label,
	 const char *what, const struct keydef *defs, int ndefs,
	 bool foreign_ok)
{
	const char *names[CFG_MAP_KEYS_MAX];
	char db[DBUF], q[QBUF];

	memset(m, 0, sizeof(*m));
	m->what = what;
	m->defs = defs;
	m->ndefs = ndefs;
	m->node = n;
	if (n->type != YAML_MAPPING_NODE) {
		err(x, n, "%s: expected a map, got %s", label, describe(n, db));
		return false;
	}
	for (int i = 0; i < ndefs; i++)
		names[i] = defs[i].name;
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
	     p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node_at(x, p->key), *v = node_at(x, p->value);
		const char *near;
		int i;

		if (k == NULL || v == NULL)
			continue;
		if (k->type != YAML_SCALAR_NODE) {
			err(x, k, "keys in %s must be plain words, got %s",
			    what, describe(k, db));
			continue;
		}
		for (i = 0; i < ndefs; i++)
			if (seq_eq(sval(k), slen(k), defs[i].name))
				break;
		if (i == ndefs) {
			if (foreign_ok)
				continue;
			if (seq_eq(sval(k), slen(k), "<<")) {
				err(x, k, "merge keys ('<<') are not supported");
				continue;
			}
			/* a message past the kept ones needs no hint */
			near = x->d->ndiags < CFG_MAX_DIAGS ?
			    closest(sval(k), slen(k), names, (size_t)ndefs) :
			    NULL;
			if (near != NULL) {
				err(x, k, "unknown key '%s' in %s; did you mean "
				    "'%s'?", quote(sval(k), slen(k), q), what,
				    near);
				m->suggested[map_index(m, near)] = true;
			} else
				err(x, k, "unknown key '%s' in %s",
				    quote(sval(k), slen(k), q), what);
			continue;
		}
		if (m->val[i] != NULL) {
			err(x, k, "duplicate key '%s' in %s (first at line %d)",
			    defs[i].name, what, pos_of(m->key[i]).line);
			continue;
		}
		m->key[i] = k;
		m->val[i] = v;
		if (defs[i].kind == KEY_NO_EFFECT)
			warn(x, k, "%s: %s", defs[i].name, defs[i].note);
		else if (defs[i].kind == KEY_UNSUPPORTED)
			err(x, k, "%s: %s", defs[i].name, defs[i].note);
	}
	return true;
}

/* A key the parser reads (KEY_OK) and that was given. */
static yaml_node_t *
mval(const struct map *m, const char *name)
{
	int i = map_index(m, name);

	if (i < 0 || m->defs[i].kind != KEY_OK)
		return NULL;
	return m->val[i];
}

/* A key that must be given. Not reported again when an unknown key was
 * already taken for a misspelling of it. */
static bool
require(struct pctx *x, const struct map *m, const char *name)
{
	int i = map_index(m, name);

	if (i < 0 || m->val[i] != NULL)
		return i >= 0;
	if (!m->suggested[i])
		err(x, m->node, "missing required key '%s' in %s", name,
		    m->what);
	return false;
}

/* ---------------------------------------------------------------------
 * Words, names and addresses.
 */

/* Names become stream names (<interface>/<name>) and appear in status
 * output: letters, digits, '_', '-' and '.' only. */
static bool
get_name(struct pctx *x, const char *key, const yaml_node_t *n, char *buf)
{
	char q[QBUF];

	if (!get_str(x, key, n, buf, CFG_NAME_MAX))
		return false;
	if (buf[0] == '\0') {
		err(x, n, "%s: must not be empty", key);
		return false;
	}
	if (!all_of(buf, strlen(buf), "abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")) {
		err(x, n, "%s: '%s' may hold only letters, digits, '_', '-' "
		    "and '.'", key, quote(buf, strlen(buf), q));
		buf[0] = '\0';
		return false;
	}
	return true;
}

static bool
parse_ipv4(const char *s, uint32_t *out)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return false;
	*out = ntohl(a.s_addr);
	return true;
}

/* A decimal port 0..65535 written as text (inside a URI or a range). */
static bool
parse_port_text(const char *s, size_t len, uint16_t *out)
{
	unsigned v = 0;

	if (len == 0 || len > 5 || !all_of(s, len, "0123456789"))
		return false;
	for (size_t i = 0; i < len; i++)
		v = v * 10 + (unsigned)(s[i] - '0');
	if (v > UINT16_MAX)
		return false;
	*out = (uint16_t)v;
	return true;
}

static void
format_ipv4(uint32_t a, char *buf, size_t size)
{
	snprintf(buf, size, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255,
		 (a >> 8) & 255, a & 255);
}

/* udp://IPV4:PORT or tcp://IPV4:PORT. */
static bool
get_endpoint(struct pctx *x, const char *key, const yaml_node_t *n,
	     struct cfg_endpoint *e)
{
	char buf[CFG_NAME_MAX], q[QBUF];
	char *sep, *host, *colon;
	uint32_t addr;
	uint16_t port;

	if (!get_str(x, key, n, buf, sizeof(buf)))
		return false;
	sep = strstr(buf, "://");
	if (sep == NULL) {
		err(x, n, "%s: expected udp://IPV4:PORT or tcp://IPV4:PORT, "
		    "got '%s'", key, quote(buf, strlen(buf), q));
		return false;
	}
	*sep = '\0';
	if (strcmp(buf, "udp") == 0) {
		e->transport = CFG_TRANSPORT_UDP;
	} else if (strcmp(buf, "tcp") == 0) {
		e->transport = CFG_TRANSPORT_TCP;
	} else if (strcmp(buf, "roce") == 0 || strcmp(buf, "rdma") == 0) {
		err(x, n, "%s: RoCE endpoints (%s://) are not supported by "
		    "daqiri", key, buf);
		return false;
	} else {
		err(x, n, "%s: unknown scheme '%s' (valid: udp, tcp)", key,
		    quote(buf, strlen(buf), q));
		return false;
	}
	host = sep + 3;
	colon = strrchr(host, ':');
	if (colon == NULL) {
		err(x, n, "%s: missing the port (expected %s://IPV4:PORT)", key,
		    buf);
		return false;
	}
	*colon = '\0';
	if (!parse_ipv4(host, &addr)) {
		err(x, n, "%s: '%s' is not an IPv4 address", key,
		    quote(host, strlen(host), q));
		return false;
	}
	if (!parse_port_text(colon + 1, strlen(colon + 1), &port)) {
		err(x, n, "%s: '%s' is not a port (0..65535)", key,
		    quote(colon + 1, strlen(colon + 1), q));
		return false;
	}
	e->set = true;
	e->addr = addr;
	e->port = port;
	return true;
}

/* A PCI address dddd:bb:dd.f (hex digits, function 0..7). */
static bool
is_pci_address(const char *s)
{
	static const char shape[] = "xxxx:xx:xx.f";

	if (strlen(s) != sizeof(shape) - 1)
		return false;
	for (size_t i = 0; shape[i] != '\0'; i++) {
		if (shape[i] == 'x' && strchr("0123456789abcdefABCDEF", s[i]) ==
		    NULL)
			return false;
		if (shape[i] == 'f' && (s[i] < '0' || s[i] > '7'))
			return false;
		if ((shape[i] == ':' || shape[i] == '.') && s[i] != shape[i])
			return false;
	}
	return true;
}

/* A DPDK virtual device name: net_ followed by [A-Za-z0-9_]. */
static bool
is_vdev_name(const char *s)
{
	return strncmp(s, "net_", 4) == 0 &&
	    all_of(s + 4, strlen(s + 4), "abcdefghijklmnopqrstuvwxyz"
		   "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
}

/* A vdev address is created by a --vdev=<name>[,...] of dpdk_args. */
static bool
vdev_declared(const struct cfg *c, const char *name)
{
	size_t len = strlen(name);

	for (int i = 0; i < c->ndpdk_args; i++) {
		const char *a = c->dpdk_args[i];

		if (strncmp(a, "--vdev=", 7) == 0)
			a += 7;
		else if (strncmp(a, "--vdev", 6) == 0 && a[6] == '\0' &&
			 i + 1 < c->ndpdk_args)
			a = c->dpdk_args[++i];
		else
			continue;
		if (strncmp(a, name, len) == 0 &&
		    (a[len] == '\0' || a[len] == ','))
			return true;
	}
	return false;
}

static bool
is_group_name(const char *s)
{
	size_t len = strlen(s);

	return len > 0 && len <= 32 && !(s[0] >= '0' && s[0] <= '9') &&
	    s[0] != '-' && all_of(s, len, "abcdefghijklmnopqrstuvwxyz"
				  "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-");
}

/* ---------------------------------------------------------------------
 * The daemon: section.
 */
#define KEYS(a) a, (int)NELEM(a)

static const struct keydef daemon_keys[] = {
	{ "control_socket", KEY_OK, NULL },
	{ "socket_mode", KEY_OK, NULL },
	{ "socket_group", KEY_OK, NULL },
	{ "admin_group", KEY_OK, NULL },
	{ "max_consumers", KEY_OK, NULL },
	{ "stats_interval_ms", KEY_OK, NULL },
	{ "metrics_listen", KEY_OK, NULL },
	{ "rx_mode", KEY_OK, NULL },
	{ "hold_timeout_ms", KEY_OK, NULL },
	{ "hello_timeout_ms", KEY_OK, NULL },
	{ "max_subscriptions_per_connection", KEY_OK, NULL },
	{ "max_connections_per_uid", KEY_OK, NULL },
	{ "reserved_admin_connections", KEY_OK, NULL },
};

/* A file mode in octal with a leading 0 (0660) or 0o (0o660). */
static bool
get_mode(struct pctx *x, const char *key, const yaml_node_t *n, unsigned *out)
{
	char db[DBUF];
	const char *s;
	size_t len, i;
	unsigned v = 0;

	if (n->type != YAML_SCALAR_NODE || scalar_kind(n) == SK_NULL) {
		err(x, n, "%s: expected an octal mode such as 0660, got %s",
		    key, describe(n, db));
		return false;
	}
	s = sval(n);
	len = slen(n);
	i = len > 1 && s[0] == '0' && s[1] == 'o' ? 2 : 1;
	if (len == 0 || s[0] != '0' || len - i > 4 ||
	    (len > i && !all_of(s + i, len - i, "01234567"))) {
		err(x, n, "%s: expected an octal mode with a leading 0 such as "
		    "0660, got %s", key, describe(n, db));
		return false;
	}
	for (; i < len; i++)
		v = v * 8 + (unsigned)(s[i] - '0');
	if (v > 0777) {
		err(x, n, "%s: must be between 0 and 0777, got %s", key,
		    describe(n, db));
		return false;
	}
	*out = v;
	return true;
}

static void
parse_daemon(struct pctx *x, yaml_node_t *n)
{
	struct cfg_daemon *dm = &x->c->daemon;
	struct map m;
	yaml_node_t *v;
	char q[QBUF];

	if (!map_open(x, &m, n, "daemon", "daemon", KEYS(daemon_keys), false))
		return;
	v = mval(&m, "control_socket");
	if (v != NULL && get_str(x, "control_socket", v, dm->control_socket,
				 sizeof(dm->control_socket))) {
		size_t len = strlen(dm->control_socket);

		if (dm->control_socket[0] != '/')
			err(x, v, "control_socket: must be an absolute path, "
			    "got '%s'", quote(dm->control_socket, len, q));
		else if (len >= CFG_SUN_PATH_MAX)
			err(x, v, "control_socket: too long for a unix socket "
			    "(%zu bytes, at most %d)", len,
			    CFG_SUN_PATH_MAX - 1);
	}
	if ((v = mval(&m, "socket_mode")) != NULL)
		get_mode(x, "socket_mode", v, &dm->socket_mode);
	v = mval(&m, "socket_group");
	if (v != NULL && get_str(x, "socket_group", v, dm->socket_group,
				 sizeof(dm->socket_group)) &&
	    dm->socket_group[0] != '\0' && !is_group_name(dm->socket_group))
		err(x, v, "socket_group: '%s' is not a group name",
		    quote(dm->socket_group, strlen(dm->socket_group), q));
	v = mval(&m, "admin_group");
	if (v != NULL && get_str(x, "admin_group", v, dm->admin_group,
				 sizeof(dm->admin_group)) &&
	    dm->admin_group[0] != '\0' && !is_group_name(dm->admin_group))
		err(x, v, "admin_group: '%s' is not a group name",
		    quote(dm->admin_group, strlen(dm->admin_group), q));
	if ((v = mval(&m, "max_consumers")) != NULL)
		get_u32(x, "max_consumers", v, 1, CFG_CONSUMERS_MAX,
			&dm->max_consumers);
	if ((v = mval(&m, "stats_interval_ms")) != NULL)
		get_u32(x, "stats_interval_ms", v, CFG_STATS_MS_MIN,
			CFG_STATS_MS_MAX, &dm->stats_interval_ms);
	if ((v = mval(&m, "hold_timeout_ms")) != NULL)
		get_u32(x, "hold_timeout_ms", v, 0, CFG_HOLD_MS_MAX,
			&dm->hold_timeout_ms);
	if ((v = mval(&m, "hello_timeout_ms")) != NULL)
		get_u32(x, "hello_timeout_ms", v, CFG_HELLO_MS_MIN,
			CFG_HELLO_MS_MAX, &dm->hello_timeout_ms);
	if ((v = mval(&m, "max_subscriptions_per_connection")) != NULL)
		get_u32(x, "max_subscriptions_per_connection", v, 1,
			CFG_CONSUMERS_MAX, &dm->max_subscriptions_per_connection);
	if ((v = mval(&m, "max_connections_per_uid")) != NULL)
		get_u32(x, "max_connections_per_uid", v, 1, CFG_CONSUMERS_MAX,
			&dm->max_connections_per_uid);
	if ((v = mval(&m, "reserved_admin_connections")) != NULL)
		get_u32(x, "reserved_admin_connections", v, 0,
			CFG_RESERVED_MAX, &dm->reserved_admin_connections);
	if ((v = mval(&m, "rx_mode")) != NULL) {
		int k;

		if (get_enum(x, "rx_mode", v, KEYS(rx_mode_names), &k))
			dm->rx_mode = (enum cfg_rx_mode)k;
	}
	v = mval(&m, "metrics_listen");
	if (v != NULL && get_str(x, "metrics_listen", v, dm->metrics_listen,
				 sizeof(dm->metrics_listen)) &&
	    dm->metrics_listen[0] != '\0') {
		char buf[CFG_NAME_MAX];
		char *colon;
		uint32_t a;
		uint16_t port;

		memcpy(buf, dm->metrics_listen, sizeof(buf));
		colon = strrchr(buf, ':');
		if (colon != NULL)
			*colon = '\0';
		if (colon == NULL || !parse_ipv4(buf, &a) ||
		    !parse_port_text(colon + 1, strlen(colon + 1), &port) ||
		    port == 0)
			err(x, v, "metrics_listen: expected IPV4:PORT such as "
			    "127.0.0.1:9464, got '%s'",
			    quote(dm->metrics_listen,
				  strlen(dm->metrics_listen), q));
	}
}

/* ---------------------------------------------------------------------
 * memory_regions[]
 */
static const struct keydef region_keys[] = {
	{ "name", KEY_OK, NULL },
	{ "kind", KEY_OK, NULL },
	{ "affinity", KEY_OK, NULL },
	{ "num_bufs", KEY_OK, NULL },
	{ "buf_size", KEY_OK, NULL },
	{ "access", KEY_OK, NULL },
	{ "owned", KEY_OK, NULL },
};

static void
parse_region(struct pctx *x, yaml_node_t *n, struct cfg_region *r, int idx)
{
	struct cfg *c = x->c;
	struct map m;
	yaml_node_t *v;
	int k;

	r->pos = pos_of(n);
	if (!map_open(x, &m, n, "memory_regions entry", "memory region",
		      KEYS(region_keys), false))
		return;
	require(x, &m, "name");
	require(x, &m, "kind");
	require(x, &m, "num_bufs");
	require(x, &m, "buf_size");
	v = mval(&m, "name");
	if (v != NULL && get_name(x, "name", v, r->name)) {
		for (int i = 0; i < idx; i++) {
			if (strcmp(c->regions[i].name, r->name) == 0) {
				err(x, v, "name: memory region '%s' is already "
				    "defined at line %d", r->name,
				    c->regions[i].pos.line);
				/* references find the first one */
				r->name[0] = '\0';
				break;
			}
		}
	}
	if ((v = mval(&m, "kind")) != NULL &&
	    get_enum(x, "kind", v, KEYS(mem_kind_names), &k))
		r->kind = (enum daqiri_mem_kind)k;
	if ((v = mval(&m, "affinity")) != NULL)
		get_int(x, "affinity", v, 0, CFG_AFFINITY_MAX, &r->affinity);
	if ((v = mval(&m, "num_bufs")) != NULL &&
	    get_u32(x, "num_bufs", v, 1, UINT32_MAX, &r->num_bufs) &&
	    idx >= 0 && idx < CFG_MAX_REGIONS)
		/* a reorder output checks it against DAQIRI_NBUFS_MAX */
		x->num_bufs_at[idx] = pos_of(v);
	if ((v = mval(&m, "buf_size")) != NULL)
		get_u64(x, "buf_size", v, 1, CFG_BUF_SIZE_MAX, &r->buf_size);
	if ((v = mval(&m, "access")) != NULL) {
		yaml_node_item_t *it;
		int cnt = get_list(x, "access", v, 8, &it);

		for (int i = 0; i < cnt; i++) {
			yaml_node_t *e = node_at(x, it[i]);

			if (e != NULL &&
			    get_enum(x, "access", e, KEYS(access_names), &k))
				r->access |= 1u << k;
		}
	}
	if ((v = mval(&m, "owned")) != NULL) {
		bool owned = true;

		if (get_bool(x, "owned", v, &owned) && !owned)
			err(x, v, "owned: memory the application provides "
			    "(owned: false) is not supported by daqiri");
	}
}

static void
parse_regions(struct pctx *x, yaml_node_t *n)
{
	struct cfg *c = x->c;
	yaml_node_item_t *it;
	int cnt = get_list(x, "memory_regions", n, CFG_MAX_REGIONS, &it);

	for (int i = 0; i < cnt; i++) {
		yaml_node_t *e = node_at(x, it[i]);

		if (e == NULL)
			continue;
		parse_region(x, e, &c->regions[c->nregions], c->nregions);
		c->nregions++;
	}
}

/* A region name of a queue or reorder config: index, or -1 (reported). */
static int
find_region(struct pctx *x, const char *key, const yaml_node_t *n,
	    const char *name)
{
	const char *names[CFG_MAX_REGIONS];
	const char *near;
	char q[QBUF];
	int i = cfg_region_find(x->c, name);

	if (i >= 0) {
		x->region_used[i] = true;
		return i;
	}
	x->region_unresolved = true;
	for (int j = 0; j < x->c->nregions; j++)
		names[j] = x->c->regions[j].name;
	near = closest(name, strlen(name), names, (size_t)x->c->nregions);
	if (near != NULL)
		err(x, n, "%s: no memory region named '%s'; did you mean "
		    "'%s'?", key, quote(name, strlen(name), q), near);
	else
		err(x, n, "%s: no memory region named '%s'", key,
		    quote(name, strlen(name), q));
	return -1;
}

/* ---------------------------------------------------------------------
 * Queues (rx and tx).
 */
static const struct keydef rx_queue_keys[] = {
	{ "name", KEY_OK, NULL },
	{ "id", KEY_OK, NULL },
	{ "cpu_core", KEY_OK, NULL },
	{ "batch_size", KEY_OK, NULL },
	{ "timeout_us", KEY_OK, NULL },
	{ "memory_regions", KEY_OK, NULL },
	{ "poll_mode", KEY_OK, NULL },
};

static const struct keydef tx_queue_keys[] = {
	{ "name", KEY_OK, NULL },
	{ "id", KEY_OK, NULL },
	{ "cpu_core", KEY_OK, NULL },
	{ "batch_size", KEY_OK, NULL },
	{ "timeout_us", KEY_NO_EFFECT, "has no effect on a tx queue" },
	{ "memory_regions", KEY_OK, NULL },
	{ "poll_mode", KEY_OK, NULL },
	{ "offloads", KEY_OK, NULL },
	{ "pacing_mbps", KEY_OK, NULL },
};

/* A receive region must not be a reorder output, nor receive for
 * another interface (each engine carves the buffers of its own). */
static void
claim_rx_region(struct pctx *x, yaml_node_t *e, int ri, const char *name)
{
	char qb[QBUF];

	if (x->reorder_line_of[ri] != 0)
		err(x, e, "memory_regions: '%s' is the output of reorder config "
		    "'%s' (line %d); a queue needs a region of its own",
		    quote(name, strlen(name), qb), x->reorder_of[ri],
		    x->reorder_line_of[ri]);
	else if (x->rx_iface_of[ri] != 0 && x->rx_iface_of[ri] !=
	    x->cur_iface + 1)
		err(x, e, "memory_regions: '%s' already receives for interface "
		    "'%s'; each interface needs regions of its own",
		    quote(name, strlen(name), qb),
		    x->c->interfaces[x->rx_iface_of[ri] - 1].name);
	else
		x->rx_iface_of[ri] = x->cur_iface + 1;
}

static void
parse_queue_regions(struct pctx *x, yaml_node_t *n, struct cfg_queue *q,
		    bool tx)
{
	yaml_node_item_t *it;
	int cnt = get_list(x, "memory_regions", n, CFG_MAX_QUEUE_REGIONS, &it);

	for (int i = 0; i < cnt; i++) {
		yaml_node_t *e = node_at(x, it[i]);
		char *name = q->region_names[q->nregions];
		int ri;

		if (e == NULL || !get_str(x, "memory_regions", e, name,
					  CFG_NAME_MAX))
			continue;
		for (int j = 0; j < q->nregions; j++) {
			if (strcmp(q->region_names[j], name) == 0) {
				char qb[QBUF];

				err(x, e, "memory_regions: '%s' is listed "
				    "twice", quote(name, strlen(name), qb));
				name[0] = '\0';
			}
		}
		if (name[0] == '\0')
			continue;
		ri = find_region(x, "memory_regions", e, name);
		q->region_idx[q->nregions++] = ri;
		if (ri >= 0 && !tx)
			claim_rx_region(x, e, ri, name);
		/* The CPU reads flows and sequence numbers from a frame's
		 * first part (socket streams get their own message below). */
		if (ri >= 0 && !tx && i == 0 && x->stream_known &&
		    x->c->stream_type == CFG_STREAM_RAW &&
		    x->c->regions[ri].kind == DAQIRI_MEM_DEVICE)
			err(x, e, "memory_regions: '%s' is a device region, but "
			    "the CPU reads each frame's headers from the first "
			    "region; list a host region first (header-data "
			    "split: [headers, %s])", name, name);
		if (ri >= 0 && x->stream_known &&
		    x->c->stream_type == CFG_STREAM_SOCKET &&
		    x->c->regions[ri].kind == DAQIRI_MEM_DEVICE)
			err(x, e, "memory_regions: socket streams receive "
			    "into host memory; '%s' is a device region", name);
	}
	if (q->nregions == 2 && x->stream_known &&
	    x->c->stream_type == CFG_STREAM_SOCKET)
		err(x, n, "memory_regions: header-data split (two regions) "
		    "needs stream_type raw");
}

/*
 * One queue; tx selects the tx keys. Returns whether id is valid; *pacing
 * is the pacing_mbps value node of a tx queue (NULL when absent).
 */
static bool
parse_queue(struct pctx *x, yaml_node_t *n, struct cfg_queue *q, bool tx,
	    yaml_node_t **pacing)
{
	const char *dir = tx ? "tx queue" : "rx queue";
	struct map m;
	yaml_node_t *v;
	bool id_ok = false;
	uint64_t u;
	int k;

	q->cpu_core = -1;
	q->pos = pos_of(n);
	*pacing = NULL;
	if (!map_open(x, &m, n, "queues entry", dir,
		      tx ? tx_queue_keys : rx_queue_keys,
		      tx ? (int)NELEM(tx_queue_keys) :
		      (int)NELEM(rx_queue_keys), false))
		return false;
	require(x, &m, "name");
	require(x, &m, "id");
	require(x, &m, "batch_size");
	require(x, &m, "memory_regions");
	if ((v = mval(&m, "name")) != NULL)
		get_name(x, "name", v, q->name);
	if ((v = mval(&m, "id")) != NULL)
		id_ok = get_u32(x, "id", v, 0, UINT16_MAX, &q->id);
	if ((v = mval(&m, "cpu_core")) != NULL &&
	    get_uint_q(x, "cpu_core", v, 0, CFG_CORE_MAX, true, &u))
		q->cpu_core = (int)u;
	if ((v = mval(&m, "batch_size")) != NULL)
		get_u32(x, "batch_size", v, 1, UINT16_MAX, &q->batch_size);
	if ((v = mval(&m, "timeout_us")) != NULL)
		get_u32(x, "timeout_us", v, 0, UINT32_MAX, &q->timeout_us);
	if ((v = mval(&m, "memory_regions")) != NULL)
		parse_queue_regions(x, v, q, tx);
	if ((v = mval(&m, "poll_mode")) != NULL) {
		if (scalar_is(v, "direct"))
			err(x, v, "poll_mode: direct polling is not supported "
			    "by daqiri (use indirect)");
		else if (get_enum(x, "poll_mode", v, KEYS(poll_mode_names), &k))
			q->poll_mode = (enum cfg_poll_mode)k;
	}
	if ((v = mval(&m, "offloads")) != NULL) {
		static const char *const offload_names[] = { "tx_eth_src" };
		yaml_node_item_t *it;
		int cnt = get_list(x, "offloads", v, 4, &it);

		for (int i = 0; i < cnt; i++) {
			yaml_node_t *e = node_at(x, it[i]);

			if (e != NULL && get_enum(x, "offloads", e,
						  KEYS(offload_names), &k))
				q->offload_tx_eth_src = true;
		}
	}
	*pacing = mval(&m, "pacing_mbps");
	return id_ok;
}

static void
parse_queues(struct pctx *x, yaml_node_t *n, struct cfg_queue *qs, int *nq,
	     bool tx, uint32_t *pacing)
{
	const char *dir = tx ? "tx" : "rx";
	yaml_node_item_t *it;
	int cnt = get_list(x, "queues", n, CFG_MAX_QUEUES, &it);
	bool id_ok[CFG_MAX_QUEUES];
	int pacing_line = 0;

	for (int i = 0; i < cnt; i++) {
		yaml_node_t *e = node_at(x, it[i]), *pv;
		struct cfg_queue *q = &qs[*nq];
		uint32_t rate;

		if (e == NULL)
			continue;
		id_ok[*nq] = parse_queue(x, e, q, tx, &pv);
		for (int j = 0; j < *nq; j++) {
			if (q->name[0] != '\0' &&
			    strcmp(qs[j].name, q->name) == 0)
				err_at(x, q->pos, "%s queue name '%s' is already "
				       "used at line %d", dir, q->name,
				       qs[j].pos.line);
			if (id_ok[*nq] && id_ok[j] && qs[j].id == q->id)
				err_at(x, q->pos, "%s queue id %u is already used "
				       "by queue '%s' at line %d", dir, q->id,
				       qs[j].name, qs[j].pos.line);
		}
		(*nq)++;
		/* struct cfg_tx keeps one pacing rate per interface */
		if (pv == NULL ||
		    !get_u32(x, "pacing_mbps", pv, 0, UINT32_MAX, &rate))
			continue;
		if (pacing_line != 0 && rate != *pacing) {
			err(x, pv, "pacing_mbps: daqiri paces all tx queues of "
			    "an interface at one rate; line %d gives %u",
			    pacing_line, *pacing);
		} else {
			*pacing = rate;
			pacing_line = pos_of(pv).line;
		}
	}
}

static const struct cfg_queue *
queue_by_id(const struct cfg_queue *qs, int nq, uint32_t id)
{
	for (int i = 0; i < nq; i++)
		if (qs[i].id == id)
			return &qs[i];
	return NULL;
}

/* ---------------------------------------------------------------------
 * Flows: match and the queue action.
 */
static const struct keydef flow_keys[] = {
	{ "name", KEY_OK, NULL },
	{ "id", KEY_OK, NULL },
	{ "action", KEY_OK, NULL },
	{ "actions", KEY_OK, NULL },
	{ "match", KEY_OK, NULL },
};

static const struct keydef action_keys[] = {
	{ "type", KEY_OK, NULL },
	{ "id", KEY_OK, NULL },
	{ "ids", KEY_OK, NULL },
};

static const struct keydef match_keys[] = {
	{ "udp_src", KEY_OK, NULL },
	{ "udp_dst", KEY_OK, NULL },
	{ "ipv4_len", KEY_OK, NULL },
	{ "ipv4_src", KEY_OK, NULL },
	{ "ipv4_dst", KEY_OK, NULL },
	{ "flex_item_id", KEY_UNSUPPORTED,
	  "flex-item matching is not supported by daqiri" },
	{ "val", KEY_UNSUPPORTED,
	  "flex-item matching is not supported by daqiri" },
	{ "mask", KEY_UNSUPPORTED,
	  "flex-item matching is not supported by daqiri" },
	{ "ecpri", KEY_UNSUPPORTED, "eCPRI matching is not supported by daqiri" },
	{ "ethernet", KEY_UNSUPPORTED,
	  "Ethernet address matching is not supported by daqiri" },
};

static const char *const action_type_names[] = {
	"queue", "vlan_push", "vlan_pop", "tunnel_encap", "tunnel_decap",
};

/* The rx or tx queues a flow's action may name. */
struct queue_set {
	const char *dir;
	const struct cfg_queue *qs;
	int nq;
};

static void
check_queue_id(struct pctx *x, const char *key, const yaml_node_t *n,
	       const struct queue_set *set, uint32_t id)
{
	if (queue_by_id(set->qs, set->nq, id) == NULL)
		err(x, n, "%s: no %s queue has id %u", key, set->dir, id);
}

/*
 * One action map. Returns 1 for a queue action (targets stored in f),
 * 0 for an action daqiri does not have (reported), -1 on other errors.
 */
static int
parse_action(struct pctx *x, yaml_node_t *n, struct cfg_flow *f,
	     const struct queue_set *set)
{
	yaml_node_t *type = NULL, *v;
	struct map m;
	char db[DBUF];
	int k;

	if (n->type != YAML_MAPPING_NODE) {
		err(x, n, "action: expected a map, got %s", describe(n, db));
		return -1;
	}
	/* the type decides which keys the map may hold */
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
	     p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = node_at(x, p->key);

		if (kn != NULL && scalar_is(kn, "type")) {
			type = node_at(x, p->value);
			break;
		}
	}
	if (type == NULL) {
		err(x, n, "missing required key 'type' in flow action");
		return -1;
	}
	if (!get_enum(x, "type", type, KEYS(action_type_names), &k))
		return -1;
	if (k != 0) {
		err(x, type, "type: the %s action is not supported by daqiri",
		    action_type_names[k]);
		return 0;
	}
	if (!map_open(x, &m, n, "action", "flow action", KEYS(action_keys),
		      false))
		return -1;
	f->nqueue_ids = 0;
	if (mget(&m, "id") != NULL && mget(&m, "ids") != NULL) {
		err(x, mkey(&m, "ids"), "flow action: give 'id' or 'ids', not "
		    "both");
		return -1;
	}
	if ((v = mval(&m, "id")) != NULL) {
		if (!get_u32(x, "id", v, 0, UINT16_MAX, &f->queue_ids[0]))
			return -1;
		check_queue_id(x, "id", v, set, f->queue_ids[0]);
		f->nqueue_ids = 1;
	} else if ((v = mval(&m, "ids")) != NULL) {
		yaml_node_item_t *it;
		int cnt = get_list(x, "ids", v, CFG_MAX_QUEUE_IDS, &it);

		for (int i = 0; i < cnt; i++) {
			yaml_node_t *e = node_at(x, it[i]);
			uint32_t id;

			if (e == NULL || !get_u32(x, "ids", e, 0, UINT16_MAX,
						  &id))
				continue;
			check_queue_id(x, "ids", e, set, id);
			for (int j = 0; j < f->nqueue_ids; j++)
				if (f->queue_ids[j] == id)
					err(x, e, "ids: queue %u is listed "
					    "twice", id);
			f->queue_ids[f->nqueue_ids++] = id;
		}
	} else {
		err(x, n, "missing required key 'id' in flow action");
		return -1;
	}
	return f->nqueue_ids > 0 ? 1 : -1;
}

/* udp_src / udp_dst: a port, or "LO-HI" (inclusive). */
static bool
get_port_range(struct pctx *x, const char *key, const yaml_node_t *n,
	       uint16_t *lo, uint16_t *hi)
{
	char db[DBUF];
	const char *s, *dash;
	size_t len;
	uint16_t a, b;
	uint32_t v;

	if (n->type == YAML_SCALAR_NODE && is_plain(n) &&
	    scalar_kind(n) == SK_INT) {
		if (!get_u32(x, key, n, 1, UINT16_MAX, &v))
			return false;
		*lo = *hi = (uint16_t)v;
		return true;
	}
	if (n->type != YAML_SCALAR_NODE || scalar_kind(n) == SK_NULL) {
		err(x, n, "%s: expected a port or a range \"LO-HI\", got %s",
		    key, describe(n, db));
		return false;
	}
	s = sval(n);
	len = slen(n);
	dash = memchr(s, '-', len);
	if (dash == NULL) {
		a = b = 0;
		if (!parse_port_text(s, len, &a))
			goto bad;
		b = a;
	} else if (!parse_port_text(s, (size_t)(dash - s), &a) ||
		   !parse_port_text(dash + 1, len - (size_t)(dash - s) - 1,
				    &b)) {
		goto bad;
	}
	if (a == 0 || b == 0) {
		err(x, n, "%s: ports are 1..65535, got %s", key,
		    describe(n, db));
		return false;
	}
	if (a > b) {
		err(x, n, "%s: the range %u-%u is empty (the first port must "
		    "not be above the second)", key, a, b);
		return false;
	}
	*lo = a;
	*hi = b;
	return true;
bad:
	err(x, n, "%s: expected a decimal port or a range \"LO-HI\", got %s",
	    key, describe(n, db));
	return false;
}

static bool
get_ipv4(struct pctx *x, const char *key, const yaml_node_t *n,
	 uint32_t *out)
{
	char buf[CFG_NAME_MAX], q[QBUF];

	if (!get_str(x, key, n, buf, sizeof(buf)))
		return false;
	if (!parse_ipv4(buf, out)) {
		err(x, n, "%s: '%s' is not an IPv4 address", key,
		    quote(buf, strlen(buf), q));
		return false;
	}
	return true;
}

static void
parse_match(struct pctx *x, yaml_node_t *n, struct cfg_flow *f)
{
	struct cfg_match *mt = &f->match;
	struct map m;
	yaml_node_t *v;
	uint32_t len;

	if (!map_open(x, &m, n, "match", "match", KEYS(match_keys), false))
		return;
	if (n->data.mapping.pairs.top == n->data.mapping.pairs.start) {
		err(x, n, "match: empty; leave 'match' out to match every "
		    "packet");
		return;
	}
	f->has_match = true;
	if ((v = mval(&m, "udp_src")) != NULL)
		mt->has_udp_src = get_port_range(x, "udp_src", v,
						 &mt->udp_src_lo,
						 &mt->udp_src_hi);
	if ((v = mval(&m, "udp_dst")) != NULL)
		mt->has_udp_dst = get_port_range(x, "udp_dst", v,
						 &mt->udp_dst_lo,
						 &mt->udp_dst_hi);
	if ((v = mval(&m, "ipv4_len")) != NULL &&
	    get_u32(x, "ipv4_len", v, CFG_IPV4_LEN_MIN, UINT16_MAX, &len)) {
		mt->has_ipv4_len = true;
		mt->ipv4_len = (uint16_t)len;
	}
	if ((v = mval(&m, "ipv4_src")) != NULL)
		mt->has_ipv4_src = get_ipv4(x, "ipv4_src", v, &mt->ipv4_src);
	if ((v = mval(&m, "ipv4_dst")) != NULL)
		mt->has_ipv4_dst = get_ipv4(x, "ipv4_dst", v, &mt->ipv4_dst);
}

/* One flow. Returns whether its id is valid. */
static bool
parse_flow(struct pctx *x, yaml_node_t *n, struct cfg_flow *f,
	   const struct queue_set *set)
{
	struct map m;
	yaml_node_t *v;
	bool id_ok = false;

	f->pos = pos_of(n);
	if (!map_open(x, &m, n, "flows entry", "flow", KEYS(flow_keys),
		      false))
		return false;
	require(x, &m, "name");
	require(x, &m, "id");
	if ((v = mval(&m, "name")) != NULL)
		get_name(x, "name", v, f->name);
	if ((v = mval(&m, "id")) != NULL)
		id_ok = get_u32(x, "id", v, 0, UINT32_MAX, &f->id);
	if (mget(&m, "action") != NULL && mget(&m, "actions") != NULL) {
		err(x, mkey(&m, "actions"), "flow: give 'action' or "
		    "'actions', not both");
	} else if ((v = mval(&m, "action")) != NULL) {
		parse_action(x, v, f, set);
	} else if ((v = mval(&m, "actions")) != NULL) {
		yaml_node_item_t *it;
		int cnt = get_list(x, "actions", v, 8, &it);

		for (int i = 0; i < cnt; i++) {
			yaml_node_t *e = node_at(x, it[i]);
			int rc;

			if (e == NULL)
				continue;
			rc = parse_action(x, e, f, set);
			if (rc == 1 && i != cnt - 1)
				err(x, e, "actions: the queue action must be "
				    "the last one");
		}
	} else {
		err(x, n, "missing required key 'action' in flow");
	}
	if ((v = mval(&m, "match")) != NULL)
		parse_match(x, v, f);
	return id_ok;
}

static void
parse_flows(struct pctx *x, yaml_node_t *n, struct cfg_flow *fs, int *nf,
	    const struct queue_set *set)
{
	yaml_node_item_t *it;
	int cnt = get_list(x, "flows", n, CFG_MAX_FLOWS, &it);
	bool id_ok[CFG_MAX_FLOWS];

	for (int i = 0; i < cnt; i++) {
		yaml_node_t *e = node_at(x, it[i]);
		struct cfg_flow *f = &fs[*nf];

		if (e == NULL)
			continue;
		id_ok[*nf] = parse_flow(x, e, f, set);
		for (int j = 0; j < *nf; j++) {
			if (f->name[0] != '\0' &&
			    strcmp(fs[j].name, f->name) == 0)
				err_at(x, f->pos, "%s flow name '%s' is already "
				       "used at line %d", set->dir, f->name,
				       fs[j].pos.line);
			if (id_ok[*nf] && id_ok[j] && fs[j].id == f->id)
				err_at(x, f->pos, "%s flow id %u is already used "
				       "by flow '%s' at line %d", set->dir,
				       f->id, fs[j].name, fs[j].pos.line);
		}
		(*nf)++;
	}
}

static const struct cfg_flow *
flow_by_id(const struct cfg_flow *fs, int nf, uint32_t id)
{
	for (int i = 0; i < nf; i++)
		if (fs[i].id == id)
			return &fs[i];
	return NULL;
}

/* ---------------------------------------------------------------------
 * rx.reorder_configs[]
 */
static const struct keydef reorder_keys[] = {
	{ "name", KEY_OK, NULL },
	{ "reorder_type", KEY_OK, NULL },
	{ "memory_region", KEY_OK, NULL },
	{ "payload_byte_offset", KEY_OK, NULL },
	{ "payload_bytes", KEY_OK, NULL },
	{ "flow_ids", KEY_OK, NULL },
	{ "method", KEY_OK, NULL },
	{ "data_types", KEY_OK, NULL },
	{ "window", KEY_OK, NULL },
	{ "fill", KEY_OK, NULL },
	{ "timeout_us", KEY_OK, NULL },
};

static const struct keydef method_keys[] = {
	{ "seq_batch_number", KEY_OK, NULL },
	{ "seq_packets_per_batch", KEY_OK, NULL },
};

static const struct keydef sbn_keys[] = {
	{ "sequence_number", KEY_OK, NULL },
	{ "batch_number", KEY_OK, NULL },
};

static const struct keydef sppb_keys[] = {
	{ "sequence_number", KEY_OK, NULL },
	{ "packets_per_batch", KEY_OK, NULL },
};

static const struct keydef bitfield_keys[] = {
	{ "bit_offset", KEY_OK, NULL },
	{ "bit_width", KEY_OK, NULL },
};

/* input/output/input_endianness are the reference library's aliases. */
static const struct keydef dtypes_keys[] = {
	{ "input_type", KEY_OK, NULL },
	{ "output_type", KEY_OK, NULL },
	{ "endianness", KEY_OK, NULL },
	{ "input", KEY_OK, NULL },
	{ "output", KEY_OK, NULL },
	{ "input_endianness", KEY_OK, NULL },
};

static bool
parse_bitfield(struct pctx *x, const char *key, yaml_node_t *n,
	       struct cfg_bitfield *b)
{
	struct map m;
	yaml_node_t *v;
	bool ok = true;

	if (!map_open(x, &m, n, key, key, KEYS(bitfield_keys), false))
		return false;
	ok &= require(x, &m, "bit_offset");
	ok &= require(x, &m, "bit_width");
	if ((v = mval(&m, "bit_offset")) != NULL)
		ok &= get_u32(x, "bit_offset", v, 0, CFG_BIT_OFFSET_MAX,
			      &b->bit_offset);
	if ((v = mval(&m, "bit_width")) != NULL)
		ok &= get_u32(x, "bit_width", v, 1, CFG_BIT_WIDTH_MAX,
			      &b->bit_width);
	return ok;
}

/* Sets method, the bit fields and packets_per_batch; false when they are
 * not all valid (reported). */
static bool
parse_method(struct pctx *x, yaml_node_t *n, struct cfg_reorder *r)
{
	struct map m, s;
	yaml_node_t *sbn, *sppb, *v;
	bool ok = true;
	uint64_t space;

	if (!map_open(x, &m, n, "method", "method", KEYS(method_keys), false))
		return false;
	sbn = mval(&m, "seq_batch_number");
	sppb = mval(&m, "seq_packets_per_batch");
	if (sbn != NULL && sppb != NULL) {
		const yaml_node_t *k1 = mkey(&m, "seq_batch_number");
		const yaml_node_t *k2 = mkey(&m, "seq_packets_per_batch");

		err(x, k1->start_mark.index > k2->start_mark.index ? k1 : k2,
		    "method: give one of seq_batch_number and "
		    "seq_packets_per_batch, not both");
		return false;
	}
	if (sbn != NULL) {
		r->method = CFG_METHOD_SEQ_BATCH_NUMBER;
		if (!map_open(x, &s, sbn, "seq_batch_number",
			      "seq_batch_number", KEYS(sbn_keys), false))
			return false;
		ok &= require(x, &s, "sequence_number");
		ok &= require(x, &s, "batch_number");
		if ((v = mval(&s, "sequence_number")) != NULL)
			ok &= parse_bitfield(x, "sequence_number", v, &r->seq);
		if ((v = mval(&s, "batch_number")) != NULL)
			ok &= parse_bitfield(x, "batch_number", v, &r->batch);
		if (!ok)
			return false;
		if (r->batch.bit_width > r->seq.bit_width) {
			err(x, v, "batch_number: bit_width %u is wider than "
			    "the sequence_number's %u (packets_per_batch = "
			    "2^seq_bits / 2^batch_bits)", r->batch.bit_width,
			    r->seq.bit_width);
			return false;
		}
		if (r->seq.bit_width - r->batch.bit_width > DAQIRI_PPB_LOG2) {
			err(x, v, "batch_number: bit_width %u leaves 2^%u "
			    "packets per batch (sequence_number bit_width %u "
			    "- %u); a tensor holds at most 2^%u = %u packets "
			    "(DAQIRI_PPB_MAX)", r->batch.bit_width,
			    r->seq.bit_width - r->batch.bit_width,
			    r->seq.bit_width, r->batch.bit_width,
			    DAQIRI_PPB_LOG2, DAQIRI_PPB_MAX);
			return false;
		}
		r->packets_per_batch = 1u << (r->seq.bit_width -
					       r->batch.bit_width);
		return true;
	}
	if (sppb != NULL) {
		r->method = CFG_METHOD_SEQ_PACKETS_PER_BATCH;
		if (!map_open(x, &s, sppb, "seq_packets_per_batch",
			      "seq_packets_per_batch", KEYS(sppb_keys), false))
			return false;
		ok &= require(x, &s, "sequence_number");
		ok &= require(x, &s, "packets_per_batch");
		if ((v = mval(&s, "sequence_number")) != NULL)
			ok &= parse_bitfield(x, "sequence_number", v, &r->seq);
		if ((v = mval(&s, "packets_per_batch")) != NULL)
			ok &= get_u32(x, "packets_per_batch", v, 1, UINT32_MAX,
				      &r->packets_per_batch);
		if (!ok)
			return false;
		/* a tensor's slots: the descriptor and the bitmap count them */
		if (r->packets_per_batch > DAQIRI_PPB_MAX) {
			err(x, v, "packets_per_batch: %u is more than a tensor "
			    "holds: at most 2^%u = %u packets (DAQIRI_PPB_MAX)",
			    r->packets_per_batch, DAQIRI_PPB_LOG2,
			    DAQIRI_PPB_MAX);
			return false;
		}
		space = 1ull << r->seq.bit_width;
		if (space % r->packets_per_batch != 0) {
			err(x, v, "packets_per_batch: %u does not divide the "
			    "2^%u sequence numbers; use a power of two up to "
			    "%llu", r->packets_per_batch, r->seq.bit_width,
			    (unsigned long long)(space < DAQIRI_PPB_MAX ?
			    space : DAQIRI_PPB_MAX));
			return false;
		}
		return true;
	}
	err(x, n, "method: needs seq_batch_number or seq_packets_per_batch");
	return false;
}

/* The value of a key or of its alias; both given is an error. */
static yaml_node_t *
alias_val(struct pctx *x, const struct map *m, const char *key,
	  const char *alias)
{
	yaml_node_t *a = mval(m, key), *b = mval(m, alias);

	if (a != NULL && b != NULL) {
		const yaml_node_t *ka = mkey(m, key), *kb = mkey(m, alias);

		err(x, ka->start_mark.index > kb->start_mark.index ? ka : kb,
		    "data_types: '%s' and '%s' are the same key; give one",
		    key, alias);
	}
	return a != NULL ? a : b;
}

static void
parse_data_types(struct pctx *x, yaml_node_t *n, struct cfg_reorder *r)
{
	struct map m;
	yaml_node_t *in, *out, *en;
	bool ok = true;
	int k;

	if (!map_open(x, &m, n, "data_types", "data_types", KEYS(dtypes_keys),
		      false))
		return;
	in = alias_val(x, &m, "input_type", "input");
	out = alias_val(x, &m, "output_type", "output");
	en = alias_val(x, &m, "endianness", "input_endianness");
	if (in == NULL) {
		err(x, n, "missing required key 'input_type' in data_types");
		ok = false;
	} else if (get_enum(x, "input_type", in, KEYS(input_type_names), &k)) {
		r->input_type = input_types[k];
	} else {
		ok = false;
	}
	if (out == NULL) {
		err(x, n, "missing required key 'output_type' in data_types");
		ok = false;
	} else if (get_enum(x, "output_type", out, KEYS(output_type_names),
			    &k)) {
		r->output_type = output_types[k];
	} else {
		ok = false;
	}
	if (en != NULL && get_enum(x, "endianness", en, KEYS(endian_names), &k))
		r->endianness = (enum cfg_endian)k;
	r->has_data_types = ok;
	if (!ok)
		r->input_type = r->output_type = DAQIRI_DTYPE_RAW;
}

static bool
dtype_is_float(enum daqiri_dtype t)
{
	return t == DAQIRI_DTYPE_FP16 || t == DAQIRI_DTYPE_BF16 ||
	    t == DAQIRI_DTYPE_FP32 || t == DAQIRI_DTYPE_FP64;
}

/*
 * The flows of a reorder config must all reach one rx queue: its plan
 * lives on that queue's worker. Returns the queue, or NULL (reported,
 * or a flow already known to be bad).
 */
static const struct cfg_queue *
reorder_queue(struct pctx *x, const struct cfg_interface *ifc,
	      const struct cfg_reorder *r, const yaml_node_t *at)
{
	const struct cfg_queue *q = NULL;
	uint32_t first = 0;

	for (int i = 0; i < r->nflow_ids; i++) {
		const struct cfg_flow *f = flow_by_id(ifc->rx.flows,
						      ifc->rx.nflows,
						      r->flow_ids[i]);
		const struct cfg_queue *fq;

		if (f == NULL || f->nqueue_ids == 0)
			return NULL;
		if (f->nqueue_ids > 1) {
			err(x, at, "flow_ids: flow %u spreads over %d queues; "
			    "a reorder config is fed by one rx queue", f->id,
			    f->nqueue_ids);
			return NULL;
		}
		fq = queue_by_id(ifc->rx.queues, ifc->rx.nqueues,
				 f->queue_ids[0]);
		if (fq == NULL)
			return NULL;
		if (q != NULL && fq != q) {
			err(x, at, "flow_ids: flow %u goes to rx queue %u but "
			    "flow %u to rx queue %u; a reorder config is fed "
			    "by one rx queue", first, q->id, f->id, fq->id);
			return NULL;
		}
		if (q == NULL) {
			q = fq;
			first = f->id;
		}
	}
	return q;
}

/* Largest frame a queue's buffers hold (the regions of a header-data
 * split add up); 0 when a region is unknown. */
static uint64_t
queue_frame_max(const struct pctx *x, const struct cfg_interface *ifc,
		const struct cfg_queue *q)
{
	uint64_t sum = 0;

	for (int i = 0; i < q->nregions; i++) {
		if (q->region_idx[i] < 0)
			return 0;
		sum += x->c->regions[q->region_idx[i]].buf_size;
	}
	if (ifc->socket.present && ifc->socket.max_payload_size != 0 &&
	    sum > CFG_ETH_IP_UDP_HDR + (uint64_t)ifc->socket.max_payload_size)
		sum = CFG_ETH_IP_UDP_HDR + (uint64_t)ifc->socket.max_payload_size;
	return sum;
}

/* window (capped to half the batch-id space), payload_bytes, slot and
 * tensor size against the output region. */
static void
check_reorder_geometry(struct pctx *x, const struct cfg_interface *ifc,
		       struct cfg_reorder *r, const struct map *m,
		       bool method_ok, bool offset_ok, bool flows_ok,
		       bool pb_given)
{
	const struct cfg_queue *q = NULL;
	yaml_node_t *at;
	uint64_t space, half, frame = 0, slot, need;

	if (method_ok) {
		space = r->method == CFG_METHOD_SEQ_BATCH_NUMBER ?
		    1ull << r->batch.bit_width :
		    (1ull << r->seq.bit_width) / r->packets_per_batch;
		half = space / 2 > 0 ? space / 2 : 1;
		if (r->window > half) {
			at = mkey(m, "window");
			if (at == NULL)
				at = mkey(m, "method");
			warn(x, at, "window: %u%s capped to %llu: the batch-id "
			     "space has only %llu id%s", r->window,
			     mkey(m, "window") ? "" : " (the default)",
			     (unsigned long long)half,
			     (unsigned long long)space, space == 1 ? "" : "s");
			r->window = (uint32_t)half;
		}
	}
	if (flows_ok)
		q = reorder_queue(x, ifc, r, mkey(m, "flow_ids"));
	if (q != NULL)
		frame = queue_frame_max(x, ifc, q);
	if (!pb_given) {
		if (q == NULL || frame == 0 || !offset_ok)
			return;
		if (frame <= r->payload_byte_offset) {
			err_at(x, r->pos, "payload_bytes: cannot be derived: "
			       "frames of rx queue '%s' hold at most %llu "
			       "bytes, not more than payload_byte_offset %u; "
			       "set payload_bytes", q->name,
			       (unsigned long long)frame,
			       r->payload_byte_offset);
			return;
		}
		if (frame - r->payload_byte_offset > CFG_FRAME_MAX) {
			err_at(x, r->pos, "payload_bytes: the derived %llu "
			       "bytes exceed %u; set payload_bytes",
			       (unsigned long long)(frame -
						    r->payload_byte_offset),
			       CFG_FRAME_MAX);
			return;
		}
		r->payload_bytes = (uint32_t)(frame - r->payload_byte_offset);
	} else if (q != NULL && frame != 0 && offset_ok &&
		   (uint64_t)r->payload_byte_offset + r->payload_bytes >
		   frame) {
		err(x, mget(m, "payload_bytes"), "payload_bytes: "
		    "payload_byte_offset %u + payload_bytes %u = %llu bytes "
		    "do not fit the %llu-byte frames of rx queue '%s'",
		    r->payload_byte_offset, r->payload_bytes,
		    (unsigned long long)r->payload_byte_offset +
		    r->payload_bytes, (unsigned long long)frame, q->name);
		return;
	}
	if (r->payload_bytes == 0)
		return;
	slot = cfg_reorder_slot_bytes(r, r->payload_bytes);
	if (slot == 0) {
		at = mget(m, "payload_bytes");
		if (at != NULL)
			err(x, at, "payload_bytes: %u is not a whole number of "
			    "%s elements (%u bits each)", r->payload_bytes,
			    daqiri_dtype_name(r->input_type),
			    cfg_dtype_bits(r->input_type));
		else
			err_at(x, r->pos, "payload_bytes: the derived %u is not "
			       "a whole number of %s elements (%u bits each); "
			       "set payload_bytes", r->payload_bytes,
			       daqiri_dtype_name(r->input_type),
			       cfg_dtype_bits(r->input_type));
		return;
	}
	r->slot_bytes = slot;
	if (!method_ok || r->region_idx < 0)
		return;
	if (x->c->regions[r->region_idx].num_bufs > DAQIRI_NBUFS_MAX) {
		const struct cfg_region *g = &x->c->regions[r->region_idx];
		struct cfg_pos nb = x->num_bufs_at[r->region_idx];

		/* reported where the number is, not where it is used */
		err_at(x, nb.line != 0 ? nb : g->pos, "num_bufs: %u tensor "
		    "buffers in region '%s', the output of reorder config "
		    "'%s'; a stream has at most %u (DAQIRI_NBUFS_MAX: every "
		    "buffer must fit a subscription's release ring)",
		    g->num_bufs, g->name, r->name, DAQIRI_NBUFS_MAX);
		return;
	}
	need = (uint64_t)r->packets_per_batch * slot;
	if (x->c->regions[r->region_idx].buf_size < need)
		err(x, mget(m, "memory_region"), "memory_region: buf_size %llu "
		    "of '%s' is smaller than one tensor: packets_per_batch %u "
		    "x slot bytes %llu = %llu",
		    (unsigned long long)x->c->regions[r->region_idx].buf_size,
		    r->region_name, r->packets_per_batch,
		    (unsigned long long)slot, (unsigned long long)need);
}

static void
parse_reorder_flow_ids(struct pctx *x, yaml_node_t *n,
		       struct cfg_interface *ifc, struct cfg_reorder *r,
		       int ri, bool *ok)
{
	yaml_node_item_t *it;
	int cnt = get_list(x, "flow_ids", n, CFG_MAX_FLOW_IDS, &it);

	*ok = cnt > 0;
	for (int i = 0; i < cnt; i++) {
		yaml_node_t *e = node_at(x, it[i]);
		uint32_t id;
		bool dup = false;

		if (e == NULL || !get_u32(x, "flow_ids", e, 0, UINT32_MAX,
					  &id)) {
			*ok = false;
			continue;
		}
		if (flow_by_id(ifc->rx.flows, ifc->rx.nflows, id) == NULL) {
			err(x, e, "flow_ids: no rx flow has id %u", id);
			*ok = false;
			continue;
		}
		for (int j = 0; j < r->nflow_ids; j++)
			if (r->flow_ids[j] == id)
				dup = true;
		if (dup) {
			err(x, e, "flow_ids: flow %u is listed twice", id);
			continue;
		}
		for (int j = 0; j < ri; j++) {
			const struct cfg_reorder *o = &ifc->rx.reorders[j];

			for (int k = 0; k < o->nflow_ids; k++) {
				if (o->flow_ids[k] == id) {
					err(x, e, "flow_ids: flow %u already "
					    "belongs to reorder config '%s' "
					    "(line %d)", id, o->name,
					    o->pos.line);
					*ok = false;
				}
			}
		}
		r->flow_ids[r->nflow_ids++] = id;
	}
}

static void
parse_reorder(struct pctx *x, yaml_node_t *n, struct cfg_interface *ifc,
	      int ri)
{
	struct cfg_reorder *r = &ifc->rx.reorders[ri];
	struct map m;
	yaml_node_t *v;
	bool type_ok = false, method_ok = false, offset_ok = false;
	bool flows_ok = false;
	int k;

	r->region_idx = -1;
	r->window = CFG_WINDOW_DEFAULT;
	r->fill = DAQIRI_FILL_ZERO;
	r->timeout_us = CFG_REORDER_TIMEOUT_US_DEFAULT;
	r->pos = pos_of(n);
	if (!map_open(x, &m, n, "reorder_configs entry", "reorder config",
		      KEYS(reorder_keys), false))
		return;
	require(x, &m, "name");
	require(x, &m, "reorder_type");
	require(x, &m, "memory_region");
	require(x, &m, "payload_byte_offset");
	require(x, &m, "flow_ids");
	require(x, &m, "method");
	if ((v = mval(&m, "name")) != NULL && get_name(x, "name", v, r->name)) {
		for (int j = 0; j < ri; j++)
			if (strcmp(ifc->rx.reorders[j].name, r->name) == 0)
				err(x, v, "name: reorder config '%s' is already "
				    "defined at line %d", r->name,
				    ifc->rx.reorders[j].pos.line);
		for (int j = 0; j < ifc->rx.nqueues; j++)
			if (strcmp(ifc->rx.queues[j].name, r->name) == 0)
				err(x, v, "name: '%s' is also an rx queue's "
				    "name (line %d); stream names "
				    "<interface>/<name> must be unique",
				    r->name, ifc->rx.queues[j].pos.line);
	}
	if ((v = mval(&m, "reorder_type")) != NULL &&
	    get_enum(x, "reorder_type", v, KEYS(reorder_type_names), &k)) {
		r->type = (enum cfg_reorder_type)k;
		type_ok = true;
	}
	if ((v = mval(&m, "memory_region")) != NULL &&
	    get_str(x, "memory_region", v, r->region_name, CFG_NAME_MAX))
		r->region_idx = find_region(x, "memory_region", v,
					    r->region_name);
	if (r->region_idx >= 0) {
		int reg = r->region_idx;
		char qb[QBUF];

		if (x->reorder_line_of[reg] != 0)
			err(x, v, "memory_region: '%s' is already the output of "
			    "reorder config '%s' (line %d); each reorder config "
			    "needs a region of its own",
			    quote(r->region_name, strlen(r->region_name), qb),
			    x->reorder_of[reg], x->reorder_line_of[reg]);
		else if (x->rx_iface_of[reg] != 0)
			err(x, v, "memory_region: '%s' receives packets for "
			    "interface '%s'; a reorder config needs a region of "
			    "its own",
			    quote(r->region_name, strlen(r->region_name), qb),
			    x->c->interfaces[x->rx_iface_of[reg] - 1].name);
		else {
			x->reorder_line_of[reg] = pos_of(v).line;
			memcpy(x->reorder_of[reg], r->name, CFG_NAME_MAX);
		}
	}
	if (r->region_idx >= 0 && type_ok) {
		enum daqiri_mem_kind kind = x->c->regions[r->region_idx].kind;
		bool fits = r->type == CFG_REORDER_GPU ?
		    kind == DAQIRI_MEM_DEVICE || kind == DAQIRI_MEM_HOST_PINNED :
		    kind != DAQIRI_MEM_DEVICE;

		if (!fits)
			err(x, v, "memory_region: a %s reorder cannot write "
			    "to '%s', a %s region (use %s)",
			    reorder_type_names[r->type], r->region_name,
			    daqiri_mem_kind_name(kind),
			    r->type == CFG_REORDER_GPU ? "device or "
			    "host_pinned" : "host, huge or host_pinned");
	}
	if ((v = mval(&m, "payload_byte_offset")) != NULL)
		offset_ok = get_u32(x, "payload_byte_offset", v, 0,
				    CFG_FRAME_MAX - 1,
				    &r->payload_byte_offset);
	if ((v = mval(&m, "flow_ids")) != NULL)
		parse_reorder_flow_ids(x, v, ifc, r, ri, &flows_ok);
	if ((v = mval(&m, "method")) != NULL)
		method_ok = parse_method(x, v, r);
	if ((v = mval(&m, "data_types")) != NULL)
		parse_data_types(x, v, r);
	if ((v = mval(&m, "window")) != NULL)
		get_u32(x, "window", v, 1, CFG_WINDOW_MAX, &r->window);
	if ((v = mval(&m, "fill")) != NULL &&
	    get_enum(x, "fill", v, KEYS(fill_names), &k)) {
		r->fill = (enum daqiri_fill)k;
		if (r->fill == DAQIRI_FILL_NAN && !(r->has_data_types &&
		    dtype_is_float(r->output_type)))
			err(x, v, "fill: nan needs a floating-point "
			    "output_type (fp16, bf16, fp32 or fp64)");
	}
	if ((v = mval(&m, "timeout_us")) != NULL)
		get_u32(x, "timeout_us", v, 0, UINT32_MAX, &r->timeout_us);
	if ((v = mval(&m, "payload_bytes")) != NULL &&
	    !get_u32(x, "payload_bytes", v, 1, CFG_FRAME_MAX,
		     &r->payload_bytes))
		return;
	check_reorder_geometry(x, ifc, r, &m, method_ok, offset_ok, flows_ok,
			       v != NULL);
}

static void
parse_reorders(struct pctx *x, yaml_node_t *n, struct cfg_interface *ifc)
{
	yaml_node_item_t *it;
	int cnt = get_list(x, "reorder_configs", n, CFG_MAX_REORDERS, &it);

	for (int i = 0; i < cnt; i++) {
		yaml_node_t *e = node_at(x, it[i]);

		if (e == NULL)
			continue;
		parse_reorder(x, e, ifc, ifc->rx.nreorders);
		ifc->rx.nreorders++;
	}
}

/* ---------------------------------------------------------------------
 * interfaces[]: socket_config, rx, tx.
 */
static const struct keydef interface_keys[] = {
	{ "name", KEY_OK, NULL },
	{ "address", KEY_OK, NULL },
	{ "socket_config", KEY_OK, NULL },
	{ "rx", KEY_OK, NULL },
	{ "tx", KEY_OK, NULL },
	{ "roce_config", KEY_UNSUPPORTED, "RoCE is not supported by daqiri" },
	{ "rdma_config", KEY_UNSUPPORTED,
	  "RDMA is not supported by daqiri" },
};

static const struct keydef socket_keys[] = {
	{ "mode", KEY_OK, NULL },
	{ "local_addr", KEY_OK, NULL },
	{ "remote_addr", KEY_OK, NULL },
	{ "max_payload_size", KEY_OK, NULL },
	{ "retry_connect_s", KEY_OK, NULL },
	{ "min_ipg_ns", KEY_NO_EFFECT,
	  "has no effect in daqiri (no inter-packet gap control)" },
	{ "max_burst_interval_ms", KEY_NO_EFFECT, "has no effect in daqiri" },
	{ "local_ip", KEY_UNSUPPORTED, "the legacy form is not supported by "
	  "daqiri; use local_addr: udp://IPV4:PORT" },
	{ "local_port", KEY_UNSUPPORTED, "the legacy form is not supported by "
	  "daqiri; use local_addr: udp://IPV4:PORT" },
	{ "remote_ip", KEY_UNSUPPORTED, "the legacy form is not supported by "
	  "daqiri; use remote_addr: udp://IPV4:PORT" },
	{ "remote_port", KEY_UNSUPPORTED, "the legacy form is not supported "
	  "by daqiri; use remote_addr: udp://IPV4:PORT" },
};

static const struct keydef rx_keys[] = {
	{ "queues", KEY_OK, NULL },
	{ "flows", KEY_OK, NULL },
	{ "flow_isolation", KEY_OK, NULL },
	{ "dynamic_flow_capacity", KEY_OK, NULL },
	{ "hardware_timestamps", KEY_OK, NULL },
	{ "reorder_configs", KEY_OK, NULL },
	{ "flex_items", KEY_UNSUPPORTED, "flex items are not supported by "
	  "daqiri" },
};

static const struct keydef tx_keys[] = {
	{ "queues", KEY_OK, NULL },
	{ "flows", KEY_OK, NULL },
	{ "accurate_send", KEY_OK, NULL },
};

static void
parse_socket(struct pctx *x, yaml_node_t *n, struct cfg_socket *s)
{
	struct map m;
	yaml_node_t *v, *lv, *rv;
	bool mode_ok = false;
	uint32_t u;
	int k;

	s->retry_connect_s = 1;
	if (!map_open(x, &m, n, "socket_config", "socket_config",
		      KEYS(socket_keys), false))
		return;
	s->present = true;
	require(x, &m, "mode");
	if ((v = mval(&m, "mode")) != NULL &&
	    get_enum(x, "mode", v, KEYS(sock_mode_names), &k)) {
		s->mode = (enum cfg_sock_mode)k;
		mode_ok = true;
	}
	if ((lv = mval(&m, "local_addr")) != NULL)
		get_endpoint(x, "local_addr", lv, &s->local);
	if ((rv = mval(&m, "remote_addr")) != NULL)
		get_endpoint(x, "remote_addr", rv, &s->remote);
	if (s->local.set && s->remote.set &&
	    s->local.transport != s->remote.transport)
		err(x, rv, "remote_addr: %s:// does not match local_addr's "
		    "%s://", transport_names[s->remote.transport],
		    transport_names[s->local.transport]);
	/* the legacy local_ip/remote_ip keys are reported already */
	if (mget(&m, "local_ip") != NULL || mget(&m, "local_port") != NULL ||
	    mget(&m, "remote_ip") != NULL || mget(&m, "remote_port") != NULL)
		mode_ok = false;
	if (mode_ok && s->mode == CFG_SOCK_SERVER) {
		if (lv == NULL)
			err(x, n, "socket_config: server mode needs local_addr");
		else if (s->local.set && s->local.port == 0)
			err(x, lv, "local_addr: a server needs a port other "
			    "than 0");
	}
	if (mode_ok && s->mode == CFG_SOCK_CLIENT) {
		if (rv == NULL)
			err(x, n, "socket_config: client mode needs "
			    "remote_addr");
		else if (s->remote.set && s->remote.port == 0)
			err(x, rv, "remote_addr: a client needs a port other "
			    "than 0");
	}
	if ((v = mval(&m, "max_payload_size")) != NULL &&
	    get_u32(x, "max_payload_size", v, 0, UINT16_MAX, &u))
		s->max_payload_size = (uint16_t)u;
	if ((v = mval(&m, "retry_connect_s")) != NULL)
		get_int(x, "retry_connect_s", v, 0, CFG_RETRY_MAX_S,
			&s->retry_connect_s);
}

static void
parse_rx(struct pctx *x, yaml_node_t *n, struct cfg_interface *ifc)
{
	struct cfg_rx *rx = &ifc->rx;
	struct queue_set set;
	struct map m;
	yaml_node_t *v;

	if (!map_open(x, &m, n, "rx", "rx", KEYS(rx_keys), false))
		return;
	ifc->has_rx = true;
	require(x, &m, "queues");
	/* queues first: flows name them, reorder configs name flows */
	if ((v = mval(&m, "queues")) != NULL)
		parse_queues(x, v, rx->queues, &rx->nqueues, false, NULL);
	set.dir = "rx";
	set.qs = rx->queues;
	set.nq = rx->nqueues;
	if ((v = mval(&m, "flows")) != NULL)
		parse_flows(x, v, rx->flows, &rx->nflows, &set);
	if ((v = mval(&m, "flow_isolation")) != NULL)
		get_bool(x, "flow_isolation", v, &rx->flow_isolation);
	if ((v = mval(&m, "dynamic_flow_capacity")) != NULL)
		get_u32(x, "dynamic_flow_capacity", v, 0, UINT32_MAX,
			&rx->dynamic_flow_capacity);
	if ((v = mval(&m, "hardware_timestamps")) != NULL)
		get_bool(x, "hardware_timestamps", v, &rx->hardware_timestamps);
	if ((v = mval(&m, "reorder_configs")) != NULL)
		parse_reorders(x, v, ifc);
}

static void
parse_tx(struct pctx *x, yaml_node_t *n, struct cfg_interface *ifc)
{
	struct cfg_tx *tx = &ifc->tx;
	struct queue_set set;
	struct map m;
	yaml_node_t *v;

	if (!map_open(x, &m, n, "tx", "tx", KEYS(tx_keys), false))
		return;
	ifc->has_tx = true;
	require(x, &m, "queues");
	if ((v = mval(&m, "queues")) != NULL)
		parse_queues(x, v, tx->queues, &tx->nqueues, true,
			     &tx->pacing_mbps);
	set.dir = "tx";
	set.qs = tx->queues;
	set.nq = tx->nqueues;
	if ((v = mval(&m, "flows")) != NULL)
		parse_flows(x, v, tx->flows, &tx->nflows, &set);
	if ((v = mval(&m, "accurate_send")) != NULL)
		get_bool(x, "accurate_send", v, &tx->accurate_send);
}

static void
check_address(struct pctx *x, const yaml_node_t *n,
	      const struct cfg_interface *ifc)
{
	const char *a = ifc->address;
	char q[QBUF];
	uint32_t ip;

	if (!x->stream_known)
		return;
	if (x->c->stream_type == CFG_STREAM_SOCKET) {
		if (!parse_ipv4(a, &ip))
			err(x, n, "address: a socket stream needs an IPv4 "
			    "address, got '%s'", quote(a, strlen(a), q));
		return;
	}
	if (is_vdev_name(a)) {
		if (!vdev_declared(x->c, a))
			warn(x, n, "address: no --vdev=%s in dpdk_args creates "
			     "this device", a);
		return;
	}
	if (!is_pci_address(a))
		err(x, n, "address: expected a PCI address (dddd:bb:dd.f) or "
		    "a DPDK vdev name (net_...), got '%s'",
		    quote(a, strlen(a), q));
}

static void
parse_interface(struct pctx *x, yaml_node_t *n, int idx)
{
	struct cfg_interface *ifc = &x->c->interfaces[idx];
	struct map m;
	yaml_node_t *v;

	x->cur_iface = idx;
	ifc->pos = pos_of(n);
	ifc->socket.retry_connect_s = 1;
	if (!map_open(x, &m, n, "interfaces entry", "interface",
		      KEYS(interface_keys), false))
		return;
	require(x, &m, "name");
	require(x, &m, "address");
	if ((v = mval(&m, "name")) != NULL &&
	    get_name(x, "name", v, ifc->name)) {
		for (int j = 0; j < idx; j++)
			if (strcmp(x->c->interfaces[j].name, ifc->name) == 0)
				err(x, v, "name: interface '%s' is already "
				    "defined at line %d", ifc->name,
				    x->c->interfaces[j].pos.line);
	}
	if ((v = mval(&m, "address")) != NULL &&
	    get_str(x, "address", v, ifc->address, sizeof(ifc->address))) {
		if (ifc->address[0] == '\0')
			err(x, v, "address: must not be empty");
		else
			check_address(x, v, ifc);
	}
	if ((v = mval(&m, "socket_config")) != NULL) {
		if (x->stream_known &&
		    x->c->stream_type != CFG_STREAM_SOCKET)
			err(x, mkey(&m, "socket_config"), "socket_config: "
			    "only for stream_type socket");
		else
			parse_socket(x, v, &ifc->socket);
	} else if (x->stream_known && x->c->stream_type == CFG_STREAM_SOCKET) {
		err(x, n, "missing required key 'socket_config' in interface "
		    "(stream_type is socket)");
	}
	if ((v = mval(&m, "rx")) != NULL)
		parse_rx(x, v, ifc);
	if ((v = mval(&m, "tx")) != NULL)
		parse_tx(x, v, ifc);
	if (mget(&m, "rx") == NULL && mget(&m, "tx") == NULL)
		warn(x, n, "interface '%s' has neither rx nor tx", ifc->name);
}

/* ---------------------------------------------------------------------
 * cfg: and the document root.
 */
static const struct keydef cfg_keys[] = {
	{ "version", KEY_OK, NULL },
	{ "debug", KEY_OK, NULL },
	{ "master_core", KEY_OK, NULL },
	{ "stream_type", KEY_OK, NULL },
	{ "engine", KEY_OK, NULL },
	{ "log_level", KEY_OK, NULL },
	{ "loopback", KEY_OK, NULL },
	{ "tx_meta_buffers", KEY_OK, NULL },
	{ "rx_meta_buffers", KEY_OK, NULL },
	{ "dpdk_args", KEY_OK, NULL },
	{ "memory_regions", KEY_OK, NULL },
	{ "interfaces", KEY_OK, NULL },
	{ "daemon", KEY_OK, NULL },
	{ "manager", KEY_UNSUPPORTED, "the legacy key is not supported by "
	  "daqiri; use stream_type and engine" },
	{ "protocol", KEY_UNSUPPORTED, "the legacy key is not supported by "
	  "daqiri; give the transport in the socket_config URIs (udp://)" },
};

static const struct keydef daqiri_keys[] = {
	{ "cfg", KEY_OK, NULL },
	{ "daemon", KEY_OK, NULL },
};

static void
parse_engine(struct pctx *x, yaml_node_t *n)
{
	static const char *const names[] = { "dpdk", "socket", "ibverbs" };
	struct cfg *c = x->c;
	int k;

	if (!get_enum(x, "engine", n, KEYS(names), &k))
		return;
	if (k == 2) {
		err(x, n, "engine: ibverbs is not supported by daqiri");
		return;
	}
	if (x->stream_known && (enum cfg_engine)k != c->engine)
		err(x, n, "engine: %s does not serve stream_type %s (use %s)",
		    engine_names[k], stream_type_names[c->stream_type],
		    engine_names[c->engine]);
}

static void
parse_dpdk_args(struct pctx *x, yaml_node_t *n)
{
	struct cfg *c = x->c;
	yaml_node_item_t *it;
	int cnt = get_list(x, "dpdk_args", n, CFG_MAX_DPDK_ARGS, &it);

	for (int i = 0; i < cnt; i++) {
		yaml_node_t *e = node_at(x, it[i]);
		char *a = c->dpdk_args[c->ndpdk_args];

		if (e == NULL || !get_str(x, "dpdk_args", e, a, CFG_PATH_MAX))
			continue;
		if (a[0] == '\0') {
			err(x, e, "dpdk_args: an argument must not be empty");
			continue;
		}
		c->ndpdk_args++;
	}
}

static void
parse_cfg(struct pctx *x, yaml_node_t *n, bool nested)
{
	struct cfg *c = x->c;
	struct map m;
	yaml_node_t *v;
	int k;

	if (!map_open(x, &m, n, "cfg", "cfg", KEYS(cfg_keys), false))
		return;
	require(x, &m, "version");
	require(x, &m, "master_core");
	require(x, &m, "stream_type");
	require(x, &m, "memory_regions");
	require(x, &m, "interfaces");
	if ((v = mval(&m, "version")) != NULL &&
	    get_int(x, "version", v, 0, INT_MAX, &c->version) &&
	    c->version != 1)
		err(x, v, "version: must be 1, got %d", c->version);
	if ((v = mval(&m, "debug")) != NULL)
		get_bool(x, "debug", v, &c->debug);
	if ((v = mval(&m, "master_core")) != NULL)
		get_int(x, "master_core", v, 0, CFG_CORE_MAX, &c->master_core);
	if ((v = mval(&m, "stream_type")) != NULL &&
	    get_enum(x, "stream_type", v, KEYS(stream_type_names), &k)) {
		c->stream_type = (enum cfg_stream_type)k;
		c->engine = c->stream_type == CFG_STREAM_SOCKET ?
		    CFG_ENGINE_SOCKET : CFG_ENGINE_DPDK;
		x->stream_known = true;
	}
	if ((v = mval(&m, "engine")) != NULL)
		parse_engine(x, v);
	if ((v = mval(&m, "log_level")) != NULL &&
	    get_enum(x, "log_level", v, KEYS(log_level_names), &k))
		c->log_level = (enum cfg_log_level)k;
	if ((v = mval(&m, "loopback")) != NULL) {
		if (scalar_is(v, "hw"))
			err(x, v, "loopback: hardware loopback (hw) is not "
			    "supported by daqiri");
		else if (get_enum(x, "loopback", v, KEYS(loopback_names), &k))
			c->loopback = (enum cfg_loopback)k;
	}
	if ((v = mval(&m, "tx_meta_buffers")) != NULL)
		get_u32(x, "tx_meta_buffers", v, 1, UINT32_MAX,
			&c->tx_meta_buffers);
	if ((v = mval(&m, "rx_meta_buffers")) != NULL)
		get_u32(x, "rx_meta_buffers", v, 1, UINT32_MAX,
			&c->rx_meta_buffers);
	if ((v = mval(&m, "dpdk_args")) != NULL) {
		parse_dpdk_args(x, v);
		if (x->stream_known && c->stream_type == CFG_STREAM_SOCKET)
			warn(x, mkey(&m, "dpdk_args"), "dpdk_args: has no "
			     "effect with stream_type socket");
	}
	/* regions before interfaces: queues and reorder configs name them */
	if ((v = mval(&m, "memory_regions")) != NULL)
		parse_regions(x, v);
	if ((v = mval(&m, "interfaces")) != NULL) {
		yaml_node_item_t *it;
		int cnt = get_list(x, "interfaces", v, CFG_MAX_INTERFACES, &it);

		for (int i = 0; i < cnt; i++) {
			yaml_node_t *e = node_at(x, it[i]);

			if (e == NULL)
				continue;
			parse_interface(x, e, c->ninterfaces);
			c->ninterfaces++;
		}
	}
	if ((v = mval(&m, "daemon")) != NULL) {
		if (nested)
			err(x, mkey(&m, "daemon"), "daemon: goes beside cfg "
			    "under daqiri, not inside cfg");
		else
			parse_daemon(x, v);
	}
	/* a misspelt reference would make its region look unused */
	for (int i = 0; i < c->nregions && !x->region_unresolved; i++)
		if (!x->region_used[i] && c->regions[i].name[0] != '\0')
			diag_add(x->d, CFG_SEV_WARNING, c->regions[i].pos,
				 "memory region '%s' is used by no queue and no "
				 "reorder config", c->regions[i].name);
}

static void
parse_root(struct pctx *x, yaml_node_t *root)
{
	yaml_node_t *daqiri = NULL, *dkey = NULL, *v;
	struct map m;
	char db[DBUF];

	if (root->type != YAML_MAPPING_NODE) {
		err(x, root, "the top level must be a map (daqiri: {cfg: "
		    "...}), got %s", describe(root, db));
		return;
	}
	/* other top-level keys belong to applications sharing the file */
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
	     p < root->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node_at(x, p->key);

		if (k == NULL || !scalar_is(k, "daqiri"))
			continue;
		if (daqiri != NULL) {
			err(x, k, "duplicate key 'daqiri' at the top level "
			    "(first at line %d)", pos_of(dkey).line);
			continue;
		}
		dkey = k;
		daqiri = node_at(x, p->value);
	}
	if (daqiri == NULL) {
		/* no daqiri: the root is the engine config itself */
		for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
		     p < root->data.mapping.pairs.top; p++) {
			yaml_node_t *k = node_at(x, p->key);

			for (size_t i = 0; k != NULL && i < NELEM(cfg_keys);
			     i++) {
				if (scalar_is(k, cfg_keys[i].name)) {
					parse_cfg(x, root, false);
					return;
				}
			}
		}
		err(x, root, "no daqiri configuration here: expected "
		    "'daqiri: {cfg: ...}' at the top level");
		return;
	}
	if (!map_open(x, &m, daqiri, "daqiri", "daqiri", KEYS(daqiri_keys),
		      false))
		return;
	if (require(x, &m, "cfg"))
		parse_cfg(x, mval(&m, "cfg"), true);
	if ((v = mval(&m, "daemon")) != NULL)
		parse_daemon(x, v);
}

/*
 * Offset of the first byte that makes text no YAML text file: a NUL, a
 * C0 control other than tab, LF and CR, or invalid UTF-8. len = none.
 */
static size_t
binary_offset(const unsigned char *s, size_t len, const char **why)
{
	size_t i = 0;

	while (i < len) {
		unsigned char ch = s[i];
		uint32_t cp;
		size_t n, k;

		if (ch < 0x80) {
			if (ch == 0) {
				*why = "a NUL byte";
				return i;
			}
			if (ch < 0x20 && ch != '\t' && ch != '\n' &&
			    ch != '\r') {
				*why = "a control character";
				return i;
			}
			i++;
			continue;
		}
		if (ch >= 0xc2 && ch <= 0xdf) {
			n = 1;
			cp = ch & 0x1f;
		} else if (ch >= 0xe0 && ch <= 0xef) {
			n = 2;
			cp = ch & 0x0f;
		} else if (ch >= 0xf0 && ch <= 0xf4) {
			n = 3;
			cp = ch & 0x07;
		} else {
			*why = "invalid UTF-8";
			return i;
		}
		if (i + n >= len) {
			*why = "invalid UTF-8";
			return i;
		}
		for (k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80) {
				*why = "invalid UTF-8";
				return i;
			}
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
			*why = "invalid UTF-8";
			return i;
		}
		i += n + 1;
	}
	return len;
}

/*
 * libyaml's scanner costs O(depth) per token in nested flow collections,
 * so "[[[[..." would take quadratic time. No config nests deeper than a
 * few levels: find where brackets (counted anywhere, quoted or not, which
 * only overestimates) first go deeper than the limit; len = nowhere.
 */
static size_t
flow_depth_offset(const char *s, size_t len)
{
	int depth = 0;

	for (size_t i = 0; i < len; i++) {
		if (s[i] == '[' || s[i] == '{') {
			if (++depth > CFG_FLOW_DEPTH_MAX)
				return i;
		} else if ((s[i] == ']' || s[i] == '}') && depth > 0) {
			depth--;
		}
	}
	return len;
}

int
cfg_parse(const char *text, size_t len, const char *file, struct cfg *out,
	  struct cfg_diags *d)
{
	static const struct cfg_pos whole = { 0, 0 };
	yaml_parser_t parser;
	yaml_document_t doc, extra;
	yaml_node_t *root;
	struct pctx x;
	const char *why = NULL;
	size_t bad;

	memset(d, 0, sizeof(*d));
	snprintf(d->file, sizeof(d->file), "%s", file != NULL ? file :
		 "<config>");
	cfg_defaults(out);
	if (len == 0) {
		diag_add(d, CFG_SEV_ERROR, whole, "file is empty");
		return -1;
	}
	bad = binary_offset((const unsigned char *)text, len, &why);
	if (bad < len) {
		diag_add(d, CFG_SEV_ERROR, whole, "not a text file (%s at "
			 "offset %zu)", why, bad);
		return -1;
	}
	bad = flow_depth_offset(text, len);
	if (bad < len) {
		struct cfg_pos p = { 1, 1 };

		for (size_t i = 0; i < bad; i++) {
			if (text[i] == '\n') {
				p.line++;
				p.col = 1;
			} else if (((unsigned char)text[i] & 0xc0) != 0x80) {
				p.col++;
			}
		}
		diag_add(d, CFG_SEV_ERROR, p, "brackets nested more than %d "
			 "levels deep", CFG_FLOW_DEPTH_MAX);
		return -1;
	}
	if (!yaml_parser_initialize(&parser)) {
		diag_add(d, CFG_SEV_ERROR, whole, "out of memory");
		return -1;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text,
				     len);
	if (!yaml_parser_load(&parser, &doc)) {
		struct cfg_pos p = {
			(int)parser.problem_mark.line + 1,
			(int)parser.problem_mark.column + 1,
		};

		if (parser.error == YAML_MEMORY_ERROR)
			diag_add(d, CFG_SEV_ERROR, whole, "out of memory");
		else if (parser.context != NULL)
			diag_add(d, CFG_SEV_ERROR, p, "YAML syntax error: %s "
				 "%s", parser.problem ? parser.problem : "?",
				 parser.context);
		else
			diag_add(d, CFG_SEV_ERROR, p, "YAML syntax error: %s",
				 parser.problem ? parser.problem : "?");
		yaml_parser_delete(&parser);
		return -1;
	}
	root = yaml_document_get_root_node(&doc);
	if (root == NULL) {
		diag_add(d, CFG_SEV_ERROR, whole, "no YAML document in the file "
			 "(only comments or blank lines)");
	} else {
		memset(&x, 0, sizeof(x));
		x.doc = &doc;
		x.c = out;
		x.d = d;
		parse_root(&x, root);
		if (!yaml_parser_load(&parser, &extra)) {
			struct cfg_pos p = {
				(int)parser.problem_mark.line + 1,
				(int)parser.problem_mark.column + 1,
			};

			diag_add(d, CFG_SEV_ERROR, p, "YAML syntax error: %s",
				 parser.problem ? parser.problem : "?");
		} else {
			yaml_node_t *r2 = yaml_document_get_root_node(&extra);

			if (r2 != NULL)
				diag_add(d, CFG_SEV_ERROR, pos_of(r2), "a second "
					 "YAML document; a config file holds "
					 "one");
			yaml_document_delete(&extra);
		}
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	diag_sort(d);
	return d->nerrors > 0 ? -1 : 0;
}

int
cfg_load(const char *file, struct cfg *out, struct cfg_diags *d)
{
	static const struct cfg_pos whole = { 0, 0 };
	char *buf;
	size_t len = 0;
	ssize_t n;
	int fd, rc;

	memset(d, 0, sizeof(*d));
	snprintf(d->file, sizeof(d->file), "%s", file);
	cfg_defaults(out);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		diag_add(d, CFG_SEV_ERROR, whole, "cannot read: %s",
			 strerror(errno));
		return -1;
	}
	buf = malloc(CFG_FILE_MAX + 1);
	if (buf == NULL) {
		close(fd);
		diag_add(d, CFG_SEV_ERROR, whole, "out of memory");
		return -1;
	}
	/* read at most one byte past the limit: a device never ends */
	while (len <= CFG_FILE_MAX) {
		n = read(fd, buf + len, CFG_FILE_MAX + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			diag_add(d, CFG_SEV_ERROR, whole, "cannot read: %s",
				 strerror(errno));
			free(buf);
			close(fd);
			return -1;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (len > CFG_FILE_MAX) {
		diag_add(d, CFG_SEV_ERROR, whole, "file too large (more than "
			 "%u bytes)", CFG_FILE_MAX);
		free(buf);
		return -1;
	}
	rc = cfg_parse(buf, len, file, out, d);
	free(buf);
	return rc;
}

/* ---------------------------------------------------------------------
 * The normalised config, printed as YAML (bgpd's printconf).
 */

/* A double-quoted YAML string: always parses back to the same bytes. */
static void
print_str(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(fp, "\\%c", ch);
		else if (ch < 0x20 || ch == 0x7f)
			fprintf(fp, "\\x%02x", ch);
		else
			fputc(ch, fp);
	}
	fputc('"', fp);
}

static void
print_kv_str(FILE *fp, int ind, const char *key, const char *val)
{
	fprintf(fp, "%*s%s: ", ind, "", key);
	print_str(fp, val);
	fputc('\n', fp);
}

static void
print_endpoint(FILE *fp, int ind, const char *key,
	       const struct cfg_endpoint *e)
{
	char ip[16];

	if (!e->set)
		return;
	format_ipv4(e->addr, ip, sizeof(ip));
	fprintf(fp, "%*s%s: \"%s://%s:%u\"\n", ind, "", key,
		transport_names[e->transport], ip, e->port);
}

static void
print_queue(FILE *fp, const struct cfg_queue *q, bool tx, uint32_t pacing)
{
	fprintf(fp, "        - name: ");
	print_str(fp, q->name);
	fprintf(fp, "\n          id: %u\n", q->id);
	if (q->cpu_core >= 0)
		fprintf(fp, "          cpu_core: %d\n", q->cpu_core);
	fprintf(fp, "          batch_size: %u\n", q->batch_size);
	if (!tx)
		fprintf(fp, "          timeout_us: %u\n", q->timeout_us);
	fprintf(fp, "          poll_mode: %s\n", poll_mode_names[q->poll_mode]);
	fprintf(fp, "          memory_regions: [");
	for (int i = 0; i < q->nregions; i++) {
		fputs(i ? ", " : "", fp);
		print_str(fp, q->region_names[i]);
	}
	fprintf(fp, "]\n");
	if (tx && q->offload_tx_eth_src)
		fprintf(fp, "          offloads: [tx_eth_src]\n");
	if (tx && pacing != 0)
		fprintf(fp, "          pacing_mbps: %u\n", pacing);
}

static void
print_port_range(FILE *fp, const char *key, uint16_t lo, uint16_t hi)
{
	if (lo == hi)
		fprintf(fp, "            %s: %u\n", key, lo);
	else
		fprintf(fp, "            %s: \"%u-%u\"\n", key, lo, hi);
}

static void
print_flow(FILE *fp, const struct cfg_flow *f)
{
	const struct cfg_match *mt = &f->match;
	char ip[16];

	fprintf(fp, "        - name: ");
	print_str(fp, f->name);
	fprintf(fp, "\n          id: %u\n", f->id);
	if (f->nqueue_ids == 1) {
		fprintf(fp, "          action: {type: queue, id: %u}\n",
			f->queue_ids[0]);
	} else {
		fprintf(fp, "          action: {type: queue, ids: [");
		for (int i = 0; i < f->nqueue_ids; i++)
			fprintf(fp, "%s%u", i ? ", " : "", f->queue_ids[i]);
		fprintf(fp, "]}\n");
	}
	if (!f->has_match)
		return;
	fprintf(fp, "          match:\n");
	if (mt->has_udp_src)
		print_port_range(fp, "udp_src", mt->udp_src_lo, mt->udp_src_hi);
	if (mt->has_udp_dst)
		print_port_range(fp, "udp_dst", mt->udp_dst_lo, mt->udp_dst_hi);
	if (mt->has_ipv4_len)
		fprintf(fp, "            ipv4_len: %u\n", mt->ipv4_len);
	if (mt->has_ipv4_src) {
		format_ipv4(mt->ipv4_src, ip, sizeof(ip));
		fprintf(fp, "            ipv4_src: \"%s\"\n", ip);
	}
	if (mt->has_ipv4_dst) {
		format_ipv4(mt->ipv4_dst, ip, sizeof(ip));
		fprintf(fp, "            ipv4_dst: \"%s\"\n", ip);
	}
}

static void
print_bitfield(FILE *fp, const char *key, const struct cfg_bitfield *b)
{
	fprintf(fp, "              %s: {bit_offset: %u, bit_width: %u}\n",
		key, b->bit_offset, b->bit_width);
}

static void
print_reorder(FILE *fp, const struct cfg_reorder *r)
{
	fprintf(fp, "        - name: ");
	print_str(fp, r->name);
	fprintf(fp, "\n          reorder_type: %s\n",
		reorder_type_names[r->type]);
	print_kv_str(fp, 10, "memory_region", r->region_name);
	fprintf(fp, "          payload_byte_offset: %u\n",
		r->payload_byte_offset);
	fprintf(fp, "          payload_bytes: %u\n", r->payload_bytes);
	fprintf(fp, "          flow_ids: [");
	for (int i = 0; i < r->nflow_ids; i++)
		fprintf(fp, "%s%u", i ? ", " : "", r->flow_ids[i]);
	fprintf(fp, "]\n          method:\n            %s:\n",
		method_names[r->method]);
	print_bitfield(fp, "sequence_number", &r->seq);
	if (r->method == CFG_METHOD_SEQ_BATCH_NUMBER)
		print_bitfield(fp, "batch_number", &r->batch);
	else
		fprintf(fp, "              packets_per_batch: %u\n",
			r->packets_per_batch);
	if (r->has_data_types)
		fprintf(fp, "          data_types: {input_type: %s, "
			"output_type: %s, endianness: %s}\n",
			daqiri_dtype_name(r->input_type),
			daqiri_dtype_name(r->output_type),
			endian_names[r->endianness]);
	fprintf(fp, "          window: %u\n", r->window);
	fprintf(fp, "          fill: %s\n", fill_names[r->fill]);
	fprintf(fp, "          timeout_us: %u\n", r->timeout_us);
}

static void
print_interface(FILE *fp, const struct cfg_interface *ifc)
{
	const struct cfg_socket *s = &ifc->socket;

	fprintf(fp, "    - name: ");
	print_str(fp, ifc->name);
	fputc('\n', fp);
	print_kv_str(fp, 6, "address", ifc->address);
	if (s->present) {
		fprintf(fp, "      socket_config:\n");
		fprintf(fp, "        mode: %s\n", sock_mode_names[s->mode]);
		print_endpoint(fp, 8, "local_addr", &s->local);
		print_endpoint(fp, 8, "remote_addr", &s->remote);
		fprintf(fp, "        max_payload_size: %u\n",
			s->max_payload_size);
		fprintf(fp, "        retry_connect_s: %d\n", s->retry_connect_s);
	}
	if (ifc->has_rx) {
		const struct cfg_rx *rx = &ifc->rx;

		fprintf(fp, "      rx:\n");
		fprintf(fp, "        flow_isolation: %s\n",
			rx->flow_isolation ? "true" : "false");
		fprintf(fp, "        dynamic_flow_capacity: %u\n",
			rx->dynamic_flow_capacity);
		fprintf(fp, "        hardware_timestamps: %s\n",
			rx->hardware_timestamps ? "true" : "false");
		fprintf(fp, "        queues:\n");
		for (int i = 0; i < rx->nqueues; i++)
			print_queue(fp, &rx->queues[i], false, 0);
		if (rx->nflows > 0)
			fprintf(fp, "        flows:\n");
		for (int i = 0; i < rx->nflows; i++)
			print_flow(fp, &rx->flows[i]);
		if (rx->nreorders > 0)
			fprintf(fp, "        reorder_configs:\n");
		for (int i = 0; i < rx->nreorders; i++)
			print_reorder(fp, &rx->reorders[i]);
	}
	if (ifc->has_tx) {
		const struct cfg_tx *tx = &ifc->tx;

		fprintf(fp, "      tx:\n");
		fprintf(fp, "        accurate_send: %s\n",
			tx->accurate_send ? "true" : "false");
		fprintf(fp, "        queues:\n");
		for (int i = 0; i < tx->nqueues; i++)
			print_queue(fp, &tx->queues[i], true, tx->pacing_mbps);
		if (tx->nflows > 0)
			fprintf(fp, "        flows:\n");
		for (int i = 0; i < tx->nflows; i++)
			print_flow(fp, &tx->flows[i]);
	}
}

int
cfg_print(const struct cfg *c, FILE *fp)
{
	const struct cfg_daemon *dm = &c->daemon;

	fprintf(fp, "%%YAML 1.2\n---\n# normalised by daqirid -n -v: every "
		"default filled in\ndaqiri:\n  cfg:\n");
	fprintf(fp, "    version: %d\n", c->version);
	fprintf(fp, "    debug: %s\n", c->debug ? "true" : "false");
	fprintf(fp, "    master_core: %d\n", c->master_core);
	fprintf(fp, "    stream_type: %s\n", stream_type_names[c->stream_type]);
	fprintf(fp, "    engine: %s\n", engine_names[c->engine]);
	fprintf(fp, "    log_level: %s\n", log_level_names[c->log_level]);
	fprintf(fp, "    loopback: \"%s\"\n", loopback_names[c->loopback]);
	fprintf(fp, "    tx_meta_buffers: %u\n", c->tx_meta_buffers);
	fprintf(fp, "    rx_meta_buffers: %u\n", c->rx_meta_buffers);
	if (c->ndpdk_args > 0)
		fprintf(fp, "    dpdk_args:\n");
	for (int i = 0; i < c->ndpdk_args; i++) {
		fprintf(fp, "    - ");
		print_str(fp, c->dpdk_args[i]);
		fputc('\n', fp);
	}
	fprintf(fp, "    memory_regions:\n");
	for (int i = 0; i < c->nregions; i++) {
		const struct cfg_region *r = &c->regions[i];
		bool first = true;

		fprintf(fp, "    - name: ");
		print_str(fp, r->name);
		fprintf(fp, "\n      kind: %s\n", daqiri_mem_kind_name(r->kind));
		fprintf(fp, "      affinity: %d\n", r->affinity);
		fprintf(fp, "      num_bufs: %u\n", r->num_bufs);
		fprintf(fp, "      buf_size: %llu\n",
			(unsigned long long)r->buf_size);
		if (r->access == 0)
			continue;
		fprintf(fp, "      access: [");
		for (size_t k = 0; k < NELEM(access_names); k++) {
			if (r->access & (1u << k)) {
				fprintf(fp, "%s%s", first ? "" : ", ",
					access_names[k]);
				first = false;
			}
		}
		fprintf(fp, "]\n");
	}
	fprintf(fp, "    interfaces:\n");
	for (int i = 0; i < c->ninterfaces; i++)
		print_interface(fp, &c->interfaces[i]);
	fprintf(fp, "  daemon:\n");
	print_kv_str(fp, 4, "control_socket", dm->control_socket);
	fprintf(fp, "    socket_mode: 0%03o\n", dm->socket_mode);
	print_kv_str(fp, 4, "socket_group", dm->socket_group);
	print_kv_str(fp, 4, "admin_group", dm->admin_group);
	fprintf(fp, "    max_consumers: %u\n", dm->max_consumers);
	fprintf(fp, "    stats_interval_ms: %u\n", dm->stats_interval_ms);
	print_kv_str(fp, 4, "metrics_listen", dm->metrics_listen);
	fprintf(fp, "    rx_mode: %s\n", rx_mode_names[dm->rx_mode]);
	fprintf(fp, "    hold_timeout_ms: %u\n", dm->hold_timeout_ms);
	fprintf(fp, "    hello_timeout_ms: %u\n", dm->hello_timeout_ms);
	fprintf(fp, "    max_subscriptions_per_connection: %u\n",
		dm->max_subscriptions_per_connection);
	fprintf(fp, "    max_connections_per_uid: %u\n",
		dm->max_connections_per_uid);
	fprintf(fp, "    reserved_admin_connections: %u\n",
		dm->reserved_admin_connections);
	return ferror(fp) ? -1 : 0;
}

/* ---------------------------------------------------------------------
 * Equality, field by field (positions and derived indexes aside).
 */
#define EQ(f) if (a->f != b->f) return 0
#define STREQ(f) if (strcmp(a->f, b->f) != 0) return 0

static int
endpoint_equal(const struct cfg_endpoint *a, const struct cfg_endpoint *b)
{
	EQ(set);
	if (!a->set)
		return 1;
	EQ(transport);
	EQ(addr);
	EQ(port);
	return 1;
}

static int
queue_equal(const struct cfg_queue *a, const struct cfg_queue *b)
{
	STREQ(name);
	EQ(id);
	EQ(cpu_core);
	EQ(batch_size);
	EQ(timeout_us);
	EQ(nregions);
	for (int i = 0; i < a->nregions; i++) {
		STREQ(region_names[i]);
		EQ(region_idx[i]);
	}
	EQ(poll_mode);
	EQ(offload_tx_eth_src);
	return 1;
}

static int
flow_equal(const struct cfg_flow *a, const struct cfg_flow *b)
{
	STREQ(name);
	EQ(id);
	EQ(nqueue_ids);
	for (int i = 0; i < a->nqueue_ids; i++)
		EQ(queue_ids[i]);
	EQ(has_match);
	EQ(match.has_udp_src);
	EQ(match.has_udp_dst);
	EQ(match.has_ipv4_len);
	EQ(match.has_ipv4_src);
	EQ(match.has_ipv4_dst);
	if (a->match.has_udp_src) {
		EQ(match.udp_src_lo);
		EQ(match.udp_src_hi);
	}
	if (a->match.has_udp_dst) {
		EQ(match.udp_dst_lo);
		EQ(match.udp_dst_hi);
	}
	if (a->match.has_ipv4_len)
		EQ(match.ipv4_len);
	if (a->match.has_ipv4_src)
		EQ(match.ipv4_src);
	if (a->match.has_ipv4_dst)
		EQ(match.ipv4_dst);
	return 1;
}

static int
reorder_equal(const struct cfg_reorder *a, const struct cfg_reorder *b)
{
	STREQ(name);
	EQ(type);
	STREQ(region_name);
	EQ(region_idx);
	EQ(payload_byte_offset);
	EQ(payload_bytes);
	EQ(slot_bytes);
	EQ(nflow_ids);
	for (int i = 0; i < a->nflow_ids; i++)
		EQ(flow_ids[i]);
	EQ(method);
	EQ(seq.bit_offset);
	EQ(seq.bit_width);
	if (a->method == CFG_METHOD_SEQ_BATCH_NUMBER) {
		EQ(batch.bit_offset);
		EQ(batch.bit_width);
	}
	EQ(packets_per_batch);
	EQ(has_data_types);
	EQ(input_type);
	EQ(output_type);
	EQ(endianness);
	EQ(window);
	EQ(fill);
	EQ(timeout_us);
	return 1;
}

static int
interface_equal(const struct cfg_interface *a, const struct cfg_interface *b)
{
	STREQ(name);
	STREQ(address);
	EQ(socket.present);
	if (a->socket.present) {
		EQ(socket.mode);
		if (!endpoint_equal(&a->socket.local, &b->socket.local) ||
		    !endpoint_equal(&a->socket.remote, &b->socket.remote))
			return 0;
		EQ(socket.max_payload_size);
		EQ(socket.retry_connect_s);
	}
	EQ(has_rx);
	EQ(has_tx);
	EQ(rx.nqueues);
	EQ(rx.nflows);
	EQ(rx.nreorders);
	EQ(rx.flow_isolation);
	EQ(rx.dynamic_flow_capacity);
	EQ(rx.hardware_timestamps);
	for (int i = 0; i < a->rx.nqueues; i++)
		if (!queue_equal(&a->rx.queues[i], &b->rx.queues[i]))
			return 0;
	for (int i = 0; i < a->rx.nflows; i++)
		if (!flow_equal(&a->rx.flows[i], &b->rx.flows[i]))
			return 0;
	for (int i = 0; i < a->rx.nreorders; i++)
		if (!reorder_equal(&a->rx.reorders[i], &b->rx.reorders[i]))
			return 0;
	EQ(tx.nqueues);
	EQ(tx.nflows);
	EQ(tx.accurate_send);
	EQ(tx.pacing_mbps);
	for (int i = 0; i < a->tx.nqueues; i++)
		if (!queue_equal(&a->tx.queues[i], &b->tx.queues[i]))
			return 0;
	for (int i = 0; i < a->tx.nflows; i++)
		if (!flow_equal(&a->tx.flows[i], &b->tx.flows[i]))
			return 0;
	return 1;
}

int
cfg_equal(const struct cfg *a, const struct cfg *b)
{
	EQ(version);
	EQ(debug);
	EQ(master_core);
	EQ(stream_type);
	EQ(engine);
	EQ(log_level);
	EQ(loopback);
	EQ(tx_meta_buffers);
	EQ(rx_meta_buffers);
	EQ(ndpdk_args);
	for (int i = 0; i < a->ndpdk_args; i++)
		STREQ(dpdk_args[i]);
	EQ(nregions);
	for (int i = 0; i < a->nregions; i++) {
		STREQ(regions[i].name);
		EQ(regions[i].kind);
		EQ(regions[i].affinity);
		EQ(regions[i].num_bufs);
		EQ(regions[i].buf_size);
		EQ(regions[i].access);
	}
	EQ(ninterfaces);
	for (int i = 0; i < a->ninterfaces; i++)
		if (!interface_equal(&a->interfaces[i], &b->interfaces[i]))
			return 0;
	STREQ(daemon.control_socket);
	EQ(daemon.socket_mode);
	STREQ(daemon.socket_group);
	STREQ(daemon.admin_group);
	EQ(daemon.max_consumers);
	EQ(daemon.stats_interval_ms);
	STREQ(daemon.metrics_listen);
	EQ(daemon.rx_mode);
	EQ(daemon.hold_timeout_ms);
	EQ(daemon.hello_timeout_ms);
	EQ(daemon.max_subscriptions_per_connection);
	EQ(daemon.max_connections_per_uid);
	EQ(daemon.reserved_admin_connections);
	return 1;
}
