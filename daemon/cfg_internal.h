/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to the configuration loader (the cfg_*.c files): the parser's
 * state, maps of known keys, the limits of values, and the helpers the
 * files share. Nothing else includes it; config.h is the loader's
 * interface.
 */
#ifndef DAQIRI_CFG_INTERNAL_H
#define DAQIRI_CFG_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <yaml.h>

#include "config.h"

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
#define CFG_IPV4_LEN_MIN	20
#define CFG_MAP_KEYS_MAX	24		/* known keys of one map */
#define CFG_QUOTE_MAX		40		/* user text shown in messages */
#define CFG_SUGGEST_LEN_MAX	64		/* longer keys get no suggestion */
#define CFG_FLOW_DEPTH_MAX	64		/* nested [ and { */
#define CFG_ACCESS_NAMES	3		/* bits of enum cfg_access */
#define CFG_RDMA_NAMES_MAX	256		/* RDMA interfaces named */

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
/* A name table as the (names, count) arguments of cfg_get_enum(). */
#define KEYS(a) a, (int)NELEM(a)

/* A quoted user string in a message (cfg_quote()): short, printable. */
#define QBUF (CFG_QUOTE_MAX * 4 + 8)
/* A node described in a message (cfg_describe()). */
#define DBUF (QBUF + 24)

/* ---------------------------------------------------------------------
 * Names of the enums, as spelt in YAML (cfg_names.c). The parser reads
 * them, the printer writes them. cfg_names.c defines them without these
 * declarations, so that its _Static_asserts count what it wrote.
 */
#ifndef CFG_NAMES_DEFINE
extern const char *const cfg_stream_type_names[CFG_STREAM_MAX];
extern const char *const cfg_engine_names[CFG_ENGINE_MAX];
extern const char *const cfg_log_level_names[CFG_LOG_MAX];
extern const char *const cfg_loopback_names[CFG_LOOPBACK_MAX];
extern const char *const cfg_mem_kind_names[DAQIRI_MEM_MAX];
extern const char *const cfg_access_names[CFG_ACCESS_NAMES];
extern const char *const cfg_sock_mode_names[CFG_SOCK_MAX];
extern const char *const cfg_transport_names[CFG_TRANSPORT_MAX];
extern const char *const cfg_poll_mode_names[CFG_POLL_MAX];
extern const char *const cfg_reorder_type_names[CFG_REORDER_MAX];
extern const char *const cfg_method_names[CFG_METHOD_MAX];
extern const char *const cfg_endian_names[CFG_ENDIAN_MAX];
extern const char *const cfg_fill_names[DAQIRI_FILL_MAX];
extern const char *const cfg_rx_mode_names[CFG_RX_MODE_MAX];
extern const char *const cfg_missing_names[CFG_MISSING_MAX];
#endif

/* ---------------------------------------------------------------------
 * The parser's state: one per cfg_parse() call.
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
	/* Interfaces of the reference's RDMA engine (roce://, roce_config):
	 * not read, and one error for them all after the walk. */
	int nrdma;
	struct cfg_pos rdma_at;			/* the first one's first sign */
	char rdma_ifaces[CFG_RDMA_NAMES_MAX];	/* "'a', 'b' (line 9)" */
};

/* Maps: every key is checked against the keys that map knows, once. */
enum key_kind {
	KEY_OK,			/* read by the parser, as the reference does */
	KEY_DIFFERS,		/* read, with another meaning than the
				 * reference's (note: how) */
	KEY_OWN,		/* read; daqiri's own, unknown to the
				 * reference */
	KEY_QUIET,		/* read (checked) and ignored, without a
				 * warning: in every reference file */
	KEY_NO_EFFECT,		/* accepted with a warning */
	KEY_UNSUPPORTED,	/* a known feature daqiri does not have */
};

struct keydef {
	const char *name;
	enum key_kind kind;
	const char *note;	/* message for all kinds but KEY_OK */
};

/* The kinds the parser reads. */
static inline bool
key_read(enum key_kind k)
{
	return k == KEY_OK || k == KEY_DIFFERS || k == KEY_OWN ||
	    k == KEY_QUIET;
}

struct map {
	const char *what;
	const struct keydef *defs;
	int ndefs;
	yaml_node_t *node;
	yaml_node_t *key[CFG_MAP_KEYS_MAX];
	yaml_node_t *val[CFG_MAP_KEYS_MAX];
	bool suggested[CFG_MAP_KEYS_MAX];	/* by an unknown key */
};

/* The rx or tx queues a flow's action may name. */
struct queue_set {
	const char *dir;
	const struct cfg_queue *qs;
	int nq;
};

/* YAML 1.2 core schema: what a plain scalar resolves to. */
enum skind { SK_NULL, SK_BOOL, SK_INT, SK_FLOAT, SK_STR };

/* ---------------------------------------------------------------------
 * Diagnostics and YAML nodes (cfg_yaml.c). Every typed getter reports
 * its own problem as "key: what is wrong" at the value and returns
 * false (or -1); the caller keeps its default.
 */
void cfg_diag_vadd(struct cfg_diags *d, enum cfg_severity sev,
		   struct cfg_pos pos, const char *fmt, va_list ap);
/* Into file order; whole-file diagnostics (0:0) first; ties keep theirs. */
void cfg_diag_sort(struct cfg_diags *d);
/* --compat: put the report in file order and mark every key an error
 * stands on as refused, with the error's text (after cfg_diag_sort()). */
void cfg_compat_finish(struct cfg_diags *d);

/* s[0..len) for a message, into buf (QBUF bytes); returns buf. */
const char *cfg_quote(const char *s, size_t len, char *buf);
/* "a map", "a list", "an empty value" or the scalar itself, quoted, into
 * buf (DBUF bytes). */
const char *cfg_describe(const yaml_node_t *n, char *buf);
/* Every one of s[0..len) is in set (and len > 0). */
bool cfg_all_of(const char *s, size_t len, const char *set);

/*
 * An unsigned decimal integer in [min, max] (chrony's parse_int style).
 * Negative numbers and overflow are range errors with the range in the
 * message; hex and octal are refused where a decimal number is expected.
 * quoted_ok also takes a quoted string that holds one (cpu_core).
 */
bool cfg_get_uint_q(struct pctx *x, const char *key, const yaml_node_t *n,
		    uint64_t min, uint64_t max, bool quoted_ok, uint64_t *out);
bool cfg_get_u64(struct pctx *x, const char *key, const yaml_node_t *n,
		 uint64_t min, uint64_t max, uint64_t *out);
/* Remember that field (a pointer into x->c; anything else is ignored)
 * took the value at n, for cfg_pos_of(). The typed getters below do it
 * for their out pointer; enum callers do it themselves. */
void cfg_mark(struct pctx *x, const void *field, const yaml_node_t *n);
bool cfg_get_u32(struct pctx *x, const char *key, const yaml_node_t *n,
		 uint32_t min, uint32_t max, uint32_t *out);
bool cfg_get_int(struct pctx *x, const char *key, const yaml_node_t *n,
		 int min, int max, int *out);
bool cfg_get_bool(struct pctx *x, const char *key, const yaml_node_t *n,
		  bool *out);
/* A string into buf (size bytes, NUL included); an empty value is "". */
bool cfg_get_str(struct pctx *x, const char *key, const yaml_node_t *n,
		 char *buf, size_t size);
/* One of names[0..count); *out = its index. */
bool cfg_get_enum(struct pctx *x, const char *key, const yaml_node_t *n,
		  const char *const *names, size_t count, int *out);
/*
 * The items of a list, at most max of them (more is one error and the
 * rest is not read). Returns the number of items to read, or -1 after
 * an error (not a list; empty).
 */
int cfg_get_list(struct pctx *x, const char *key, const yaml_node_t *n,
		 int max, yaml_node_item_t **items);
/*
 * Check node n (the value of `label`) is a map of known keys. Unknown keys
 * are errors naming the closest known key, unless foreign_ok (the top
 * level beside daqiri:). Returns false when n is not a map at all.
 */
bool cfg_map_open(struct pctx *x, struct map *m, yaml_node_t *n,
		  const char *label, const char *what,
		  const struct keydef *defs, int ndefs, bool foreign_ok);

/* Names become stream names (<interface>/<name>) and appear in status
 * output: letters, digits, '_', '-' and '.' only. buf: CFG_NAME_MAX. */
bool cfg_get_name(struct pctx *x, const char *key, const yaml_node_t *n,
		  char *buf);
/* udp://IPV4:PORT or tcp://IPV4:PORT. */
bool cfg_get_endpoint(struct pctx *x, const char *key, const yaml_node_t *n,
		      struct cfg_endpoint *e);
/* A file mode in octal with a leading 0 (0660) or 0o (0o660). */
bool cfg_get_mode(struct pctx *x, const char *key, const yaml_node_t *n,
		  unsigned *out);
/* udp_src / udp_dst: a port, or "LO-HI" (inclusive). */
bool cfg_get_port_range(struct pctx *x, const char *key,
			const yaml_node_t *n, uint16_t *lo, uint16_t *hi);
bool cfg_get_ipv4(struct pctx *x, const char *key, const yaml_node_t *n,
		  uint32_t *out);
/* A MAC address: six hex pairs joined by ':' ("02:00:5e:10:00:01"). */
bool cfg_get_mac(struct pctx *x, const char *key, const yaml_node_t *n,
		 uint8_t out[6]);

/* Text, not nodes: a dotted quad (host byte order), a decimal port. */
bool cfg_parse_ipv4(const char *s, uint32_t *out);
bool cfg_parse_port_text(const char *s, size_t len, uint16_t *out);
void cfg_format_ipv4(uint32_t a, char *buf, size_t size);

/*
 * The smallest helpers, inline so that every file has them under their
 * short names without exporting err() and warn() (libc has those).
 */
static inline const char *
sval(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

static inline size_t
slen(const yaml_node_t *n)
{
	return n->data.scalar.length;
}

static inline bool
seq_eq(const char *s, size_t len, const char *word)
{
	return strlen(word) == len && memcmp(s, word, len) == 0;
}

static inline bool
scalar_is(const yaml_node_t *n, const char *word)
{
	return n->type == YAML_SCALAR_NODE && seq_eq(sval(n), slen(n), word);
}

static inline struct cfg_pos
pos_of(const yaml_node_t *n)
{
	struct cfg_pos p = { 0, 0 };

	if (n != NULL) {
		p.line = (int)n->start_mark.line + 1;
		p.col = (int)n->start_mark.column + 1;
	}
	return p;
}

static inline yaml_node_t *
node_at(struct pctx *x, int idx)
{
	return yaml_document_get_node(x->doc, idx);
}

static inline void __attribute__((format(printf, 4, 5)))
diag_add(struct cfg_diags *d, enum cfg_severity sev, struct cfg_pos pos,
	 const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cfg_diag_vadd(d, sev, pos, fmt, ap);
	va_end(ap);
}

static inline void __attribute__((format(printf, 3, 4)))
err(struct pctx *x, const yaml_node_t *n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cfg_diag_vadd(x->d, CFG_SEV_ERROR, pos_of(n), fmt, ap);
	va_end(ap);
}

static inline void __attribute__((format(printf, 3, 4)))
warn(struct pctx *x, const yaml_node_t *n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cfg_diag_vadd(x->d, CFG_SEV_WARNING, pos_of(n), fmt, ap);
	va_end(ap);
}

static inline void __attribute__((format(printf, 3, 4)))
warn_at(struct pctx *x, struct cfg_pos p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cfg_diag_vadd(x->d, CFG_SEV_WARNING, p, fmt, ap);
	va_end(ap);
}

static inline void __attribute__((format(printf, 3, 4)))
err_at(struct pctx *x, struct cfg_pos p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cfg_diag_vadd(x->d, CFG_SEV_ERROR, p, fmt, ap);
	va_end(ap);
}

static inline int
map_index(const struct map *m, const char *name)
{
	for (int i = 0; i < m->ndefs; i++)
		if (strcmp(m->defs[i].name, name) == 0)
			return i;
	return -1;
}

/* The value of a known key, whatever its kind; NULL when not given. */
static inline yaml_node_t *
mget(const struct map *m, const char *name)
{
	int i = map_index(m, name);

	return i < 0 ? NULL : m->val[i];
}

/* The key node itself, for a message about the key. */
static inline yaml_node_t *
mkey(const struct map *m, const char *name)
{
	int i = map_index(m, name);

	return i < 0 ? NULL : m->key[i];
}

/* The engine's traits once stream_type was read, else NULL: no rule of
 * an engine is checked against a guess (cfg_engine.c). */
static inline const struct cfg_engine_traits *
eng(const struct pctx *x)
{
	return x->stream_known ? cfg_engine_traits(x->c->engine) : NULL;
}

/* A key the parser reads (key_read()) and that was given. */
static inline yaml_node_t *
mval(const struct map *m, const char *name)
{
	int i = map_index(m, name);

	if (i < 0 || !key_read(m->defs[i].kind))
		return NULL;
	return m->val[i];
}

/* A key that must be given. Not reported again when an unknown key was
 * already taken for a misspelling of it. */
static inline bool
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
 * Cross-references (cfg_check.c), called by the schema walk where each
 * fact becomes known, so that diagnostics come in the order they did.
 */
/* A region name of a queue or reorder config: index, or -1 (reported). */
int cfg_find_region(struct pctx *x, const char *key, const yaml_node_t *n,
		    const char *name);
/* Region ri, entry `nth` of queue q's memory_regions (node e; q holds
 * the entries so far): who may receive into it, and whether its kind
 * serves the stream type and its place in the list. */
void cfg_check_queue_region(struct pctx *x, const yaml_node_t *e,
			    const struct cfg_queue *q, int ri, int nth,
			    bool tx, const char *name);
/* A flow action's target queue id exists in set. */
void cfg_check_queue_id(struct pctx *x, const char *key,
			const yaml_node_t *n, const struct queue_set *set,
			uint32_t id);
const struct cfg_flow *cfg_flow_by_id(const struct cfg_flow *fs, int nf,
				      uint32_t id);
/* The output region of reorder config r (named at node at): its own, and
 * of a kind the reorder type can write. */
void cfg_check_reorder_region(struct pctx *x, const yaml_node_t *at,
			      const struct cfg_reorder *r, bool type_ok);
/* window (capped to half the batch-id space), payload_bytes, slot and
 * tensor size against the output region; what r reads on the CPU against
 * the host part of its queue's frames, and a gpu r's conversion against
 * the kernel's (type_ok: r->type was parsed). */
void cfg_check_reorder_geometry(struct pctx *x,
				const struct cfg_interface *ifc,
				struct cfg_reorder *r, const struct map *m,
				bool type_ok, bool method_ok, bool offset_ok,
				bool flows_ok, bool pb_given);
/* An interface address (node n) that the stream type can open. */
void cfg_check_address(struct pctx *x, const yaml_node_t *n,
		       const struct cfg_interface *ifc);
/* TX (cfg_check.c). A tx queue's destination map (n, NULL when not
 * given) read into q->dest with the defaults the stream type allows;
 * off is the queue's offloads key (NULL when none). Then, after the tx
 * queues of interface ifc: what each needs to send with its engine
 * (the socket engine's defaults from socket_config, UDP only). */
void cfg_parse_tx_dest(struct pctx *x, yaml_node_t *n, struct cfg_queue *q,
		       const yaml_node_t *off);
void cfg_check_tx(struct pctx *x, struct cfg_interface *ifc);
void cfg_check_rx_headroom(struct pctx *x, const struct cfg_interface *ifc);
/* A socket interface's flows that can never match what it receives (a
 * udp_dst without its local_addr's port): a warning each. */
void cfg_check_flows_endpoint(struct pctx *x, const struct cfg_interface *ifc);
/* Destinations equal in what is sent (cfg_print.c, for cfg_equal() and
 * cfg_diff()). */
int cfg_tx_dest_equal(const struct cfg_tx_dest *a,
		      const struct cfg_tx_dest *b);
/* After the walk: regions nothing refers to. */
void cfg_check_regions_used(struct pctx *x);

/* The schema walk from the document's root (cfg_parse.c). */
void cfg_parse_root(struct pctx *x, yaml_node_t *root);
/* rx.reorder_configs (node n) of interface ifc, after its rx queues and
 * flows (cfg_reorder.c). */
void cfg_parse_reorders(struct pctx *x, yaml_node_t *n,
			struct cfg_interface *ifc);

#endif
