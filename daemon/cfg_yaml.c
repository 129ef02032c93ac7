/* SPDX-License-Identifier: Apache-2.0 */
/*
 * YAML nodes to typed values, and the diagnostics of the whole loader.
 * Every number goes through a getter with its range, every word through
 * one with its valid choices and a "did you mean"; each reports its own
 * problem at the node ("file:line:col: key: what is wrong").
 */
#include <arpa/inet.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cfg_internal.h"

/* ---------------------------------------------------------------------
 * Positions of the values, for a reload's list of changes.
 */
void
cfg_mark(struct pctx *x, const void *field, const yaml_node_t *n)
{
	const char *b = (const char *)x->c, *f = field;
	struct cfg *c = x->c;

	if (c == NULL || n == NULL || f < b || f >= b + sizeof(*c) ||
	    c->nmarks >= CFG_MAX_MARKS)
		return;
	c->marks[c->nmarks].off = (uint32_t)(f - b);
	c->marks[c->nmarks].pos = pos_of(n);
	c->nmarks++;
}

struct cfg_pos
cfg_pos_of(const struct cfg *c, const void *field, struct cfg_pos fallback)
{
	const char *b = (const char *)c, *f = field;

	if (f < b || f >= b + sizeof(*c))
		return fallback;
	/* the last one wins: a value read twice was read last there */
	for (int i = c->nmarks; i-- > 0;)
		if (c->marks[i].off == (uint32_t)(f - b))
			return c->marks[i].pos;
	return fallback;
}

/* ---------------------------------------------------------------------
 * Diagnostics.
 */
void
cfg_diag_vadd(struct cfg_diags *d, enum cfg_severity sev, struct cfg_pos pos,
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

void
cfg_diag_sort(struct cfg_diags *d)
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
 * Scalars: text, quoting and what a plain scalar resolves to.
 */
const char *
cfg_quote(const char *s, size_t len, char *buf)
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

static bool
is_plain(const yaml_node_t *n)
{
	return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ||
	    n->data.scalar.style == YAML_ANY_SCALAR_STYLE;
}

bool
cfg_all_of(const char *s, size_t len, const char *set)
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
	if (cfg_all_of(s + (s[0] == '-' || s[0] == '+'),
		       len - (s[0] == '-' || s[0] == '+'), "0123456789"))
		return SK_INT;
	if (len > 2 && s[0] == '0' && s[1] == 'x' &&
	    cfg_all_of(s + 2, len - 2, "0123456789abcdefABCDEF"))
		return SK_INT;
	if (len > 2 && s[0] == '0' && s[1] == 'o' &&
	    cfg_all_of(s + 2, len - 2, "01234567"))
		return SK_INT;
	if (is_float_text(s, len))
		return SK_FLOAT;
	return SK_STR;
}

/* "a map", "a list", "an empty value" or the scalar itself, quoted. */
const char *
cfg_describe(const yaml_node_t *n, char *buf)
{
	char qb[QBUF];

	switch (n->type) {
	case YAML_MAPPING_NODE:
		return "a map";
	case YAML_SEQUENCE_NODE:
		return "a list";
	case YAML_SCALAR_NODE:
		if (scalar_kind(n) == SK_NULL)
			return "an empty value";
		snprintf(buf, QBUF + 16, "%s'%s'", is_plain(n) ? "" :
			 "the quoted string ", cfg_quote(sval(n), slen(n), qb));
		return buf;
	default:
		return "nothing";
	}
}

/* ---------------------------------------------------------------------
 * Typed values.
 */

/*
 * An unsigned decimal integer in [min, max] (chrony's parse_int style).
 * Negative numbers and overflow are range errors with the range in the
 * message; hex and octal are refused where a decimal number is expected.
 * quoted_ok also takes a quoted string that holds one (cpu_core).
 */
bool
cfg_get_uint_q(struct pctx *x, const char *key, const yaml_node_t *n,
	       uint64_t min, uint64_t max, bool quoted_ok, uint64_t *out)
{
	char db[DBUF];
	const char *s;
	size_t len, i = 0;
	uint64_t v = 0;
	bool neg = false, big = false;

	if (n->type != YAML_SCALAR_NODE || scalar_kind(n) == SK_NULL) {
		err(x, n, "%s: expected an integer, got %s", key,
		    cfg_describe(n, db));
		return false;
	}
	s = sval(n);
	len = slen(n);
	if (!is_plain(n) &&
	    !(quoted_ok && cfg_all_of(s, len, "+-0123456789"))) {
		err(x, n, "%s: expected an integer, got %s", key,
		    cfg_describe(n, db));
		return false;
	}
	if (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-';
		i = 1;
	}
	if (!cfg_all_of(s + i, len - i, "0123456789")) {
		enum skind k = is_plain(n) ? scalar_kind(n) : SK_STR;

		if (k == SK_INT)
			err(x, n, "%s: expected a decimal integer, got %s",
			    key, cfg_describe(n, db));
		else if (k == SK_FLOAT)
			err(x, n, "%s: expected an integer, got the "
			    "fraction %s", key, cfg_describe(n, db));
		else
			err(x, n, "%s: expected an integer, got %s", key,
			    cfg_describe(n, db));
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
		char qb[QBUF];

		err(x, n, "%s: must be between %llu and %llu, got %s", key,
		    (unsigned long long)min, (unsigned long long)max,
		    cfg_quote(s, len, qb));
		return false;
	}
	*out = v;
	return true;
}

bool
cfg_get_u64(struct pctx *x, const char *key, const yaml_node_t *n, uint64_t min,
	    uint64_t max, uint64_t *out)
{
	cfg_mark(x, out, n);
	return cfg_get_uint_q(x, key, n, min, max, false, out);
}

bool
cfg_get_u32(struct pctx *x, const char *key, const yaml_node_t *n, uint32_t min,
	    uint32_t max, uint32_t *out)
{
	uint64_t v;

	cfg_mark(x, out, n);
	if (!cfg_get_uint_q(x, key, n, min, max, false, &v))
		return false;
	*out = (uint32_t)v;
	return true;
}

bool
cfg_get_int(struct pctx *x, const char *key, const yaml_node_t *n, int min,
	    int max, int *out)
{
	uint64_t v;

	cfg_mark(x, out, n);
	if (!cfg_get_uint_q(x, key, n, (uint64_t)min, (uint64_t)max, false, &v))
		return false;
	*out = (int)v;
	return true;
}

bool
cfg_get_bool(struct pctx *x, const char *key, const yaml_node_t *n, bool *out)
{
	char db[DBUF];

	cfg_mark(x, out, n);
	if (n->type == YAML_SCALAR_NODE && scalar_kind(n) == SK_BOOL) {
		*out = sval(n)[0] == 't' || sval(n)[0] == 'T';
		return true;
	}
	err(x, n, "%s: expected true or false, got %s", key,
	    cfg_describe(n, db));
	return false;
}

/* A string into buf (size bytes, NUL included); an empty value is "". */
bool
cfg_get_str(struct pctx *x, const char *key, const yaml_node_t *n, char *buf,
	    size_t size)
{
	char db[DBUF];

	cfg_mark(x, buf, n);
	if (n->type != YAML_SCALAR_NODE) {
		err(x, n, "%s: expected a string, got %s", key,
		    cfg_describe(n, db));
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
const char *
cfg_closest(const char *s, size_t len, const char *const *names, size_t n)
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
bool
cfg_get_enum(struct pctx *x, const char *key, const yaml_node_t *n,
	     const char *const *names, size_t count, int *out)
{
	char db[DBUF], list[160], qb[QBUF];
	const char *s, *near;
	size_t len;

	if (n->type != YAML_SCALAR_NODE) {
		err(x, n, "%s: expected a string, got %s", key,
		    cfg_describe(n, db));
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
	near = cfg_closest(s, len, names, count);
	if (near != NULL)
		err(x, n, "%s: unknown value '%s'; did you mean '%s'? "
		    "(valid: %s)", key, cfg_quote(s, len, qb), near, list);
	else
		err(x, n, "%s: unknown value '%s' (valid: %s)", key,
		    cfg_quote(s, len, qb), list);
	return false;
}

/*
 * The items of a list, at most max of them (more is one error and the
 * rest is not read). Returns the number of items to read, or -1 after
 * an error (not a list; empty).
 */
int
cfg_get_list(struct pctx *x, const char *key, const yaml_node_t *n, int max,
	     yaml_node_item_t **items)
{
	char db[DBUF];
	long cnt;

	if (n->type != YAML_SEQUENCE_NODE) {
		err(x, n, "%s: expected a list, got %s", key,
		    cfg_describe(n, db));
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

/*
 * Check node n (the value of `label`) is a map of known keys. Unknown keys
 * are errors naming the closest known key, unless foreign_ok (the top
 * level beside daqiri:). Returns false when n is not a map at all.
 */
/* --compat: what daqiri makes of a key the map knows (key_kind). */
static void
compat_note(struct pctx *x, const struct map *m, const struct keydef *def,
	    const yaml_node_t *k)
{
	static const enum cfg_compat_class cls[] = {
		[KEY_OK] = CFG_COMPAT_SAME,
		[KEY_DIFFERS] = CFG_COMPAT_DIFFERS,
		[KEY_OWN] = CFG_COMPAT_OWN,
		[KEY_QUIET] = CFG_COMPAT_IGNORED,
		[KEY_NO_EFFECT] = CFG_COMPAT_IGNORED,
		[KEY_UNSUPPORTED] = CFG_COMPAT_REFUSED,
	};
	struct cfg_compat *c = x->d->compat;
	struct cfg_compat_entry *e;

	if (c == NULL)
		return;
	if (c->n == CFG_COMPAT_KEYS_MAX) {
		c->more++;
		return;
	}
	e = &c->e[c->n++];
	e->pos = pos_of(k);
	e->cls = cls[def->kind];
	snprintf(e->key, sizeof(e->key), "%s: %s", m->what, def->name);
	e->note = def->note;
}

static int
compat_cmp(const void *a, const void *b)
{
	const struct cfg_compat_entry *x = a, *y = b;

	if (x->pos.line != y->pos.line)
		return x->pos.line < y->pos.line ? -1 : 1;
	return (x->pos.col > y->pos.col) - (x->pos.col < y->pos.col);
}

/* A key is refused when an error stands on it or in its value: each error
 * goes to the last key that starts at or before it (the first error of a
 * key is its reason). */
void
cfg_compat_finish(struct cfg_diags *d)
{
	struct cfg_compat *c = d->compat;

	if (c == NULL)
		return;
	qsort(c->e, (size_t)c->n, sizeof(c->e[0]), compat_cmp);
	for (int i = 0; i < d->ndiags; i++) {
		const struct cfg_diag *g = &d->diags[i];
		struct cfg_compat_entry at = { g->pos, CFG_COMPAT_SAME, "", NULL };
		int k = c->n - 1;

		if (g->severity != CFG_SEV_ERROR || g->pos.line == 0)
			continue;
		while (k >= 0 && compat_cmp(&c->e[k], &at) > 0)
			k--;
		if (k >= 0 && c->e[k].cls != CFG_COMPAT_REFUSED) {
			c->e[k].cls = CFG_COMPAT_REFUSED;
			c->e[k].note = g->msg;
		}
	}
}

const char *const cfg_compat_names[CFG_COMPAT_MAX] = {
	"as the reference means it",
	"accepted, with another meaning",
	"accepted and ignored",
	"refused",
	"daqiri's own (the reference does not read it)",
};

void
cfg_compat_print(const struct cfg_diags *d, FILE *fp)
{
	const struct cfg_compat *c = d->compat;
	int tally[CFG_COMPAT_MAX] = { 0 };

	if (c == NULL)
		return;
	for (int i = 0; i < c->n; i++) {
		const struct cfg_compat_entry *e = &c->e[i];

		tally[e->cls]++;
		fprintf(fp, "%s:%d:%d: %s: %s%s%s\n", d->file, e->pos.line,
		    e->pos.col, e->key, cfg_compat_names[e->cls],
		    e->note != NULL ? ": " : "", e->note != NULL ? e->note : "");
	}
	fprintf(fp, "%s: compat: %d keys: %d as the reference means them, %d "
	    "with another meaning, %d ignored, %d refused, %d daqiri's own",
	    d->file, c->n + c->more, tally[CFG_COMPAT_SAME],
	    tally[CFG_COMPAT_DIFFERS], tally[CFG_COMPAT_IGNORED],
	    tally[CFG_COMPAT_REFUSED], tally[CFG_COMPAT_OWN]);
	if (c->more > 0)
		fprintf(fp, " (%d more not listed)", c->more);
	fputc('\n', fp);
}

bool
cfg_map_open(struct pctx *x, struct map *m, yaml_node_t *n, const char *label,
	     const char *what, const struct keydef *defs, int ndefs,
	     bool foreign_ok)
{
	const char *names[CFG_MAP_KEYS_MAX];
	char db[DBUF], qb[QBUF];

	memset(m, 0, sizeof(*m));
	m->what = what;
	m->defs = defs;
	m->ndefs = ndefs;
	m->node = n;
	if (n->type != YAML_MAPPING_NODE) {
		err(x, n, "%s: expected a map, got %s", label,
		    cfg_describe(n, db));
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
			    what, cfg_describe(k, db));
			continue;
		}
		for (i = 0; i < ndefs; i++)
			if (seq_eq(sval(k), slen(k), defs[i].name))
				break;
		if (i == ndefs) {
			if (foreign_ok)
				continue;
			if (seq_eq(sval(k), slen(k), "<<")) {
				err(x, k, "'<<': not supported by daqiri: YAML "
				    "merge keys (write each key out)");
				continue;
			}
			/* a message past the kept ones needs no hint */
			near = NULL;
			if (x->d->ndiags < CFG_MAX_DIAGS)
				near = cfg_closest(sval(k), slen(k), names,
						   (size_t)ndefs);
			if (near != NULL) {
				err(x, k, "unknown key '%s' in %s; did you mean "
				    "'%s'?", cfg_quote(sval(k), slen(k), qb),
				    what, near);
				m->suggested[map_index(m, near)] = true;
			} else
				err(x, k, "unknown key '%s' in %s",
				    cfg_quote(sval(k), slen(k), qb), what);
			continue;
		}
		if (m->val[i] != NULL) {
			err(x, k, "duplicate key '%s' in %s (first at line %d)",
			    defs[i].name, what, pos_of(m->key[i]).line);
			continue;
		}
		m->key[i] = k;
		m->val[i] = v;
		compat_note(x, m, &defs[i], k);
		if (defs[i].kind == KEY_NO_EFFECT)
			warn(x, k, "%s: %s", defs[i].name, defs[i].note);
		else if (defs[i].kind == KEY_UNSUPPORTED)
			err(x, k, "%s: %s", defs[i].name, defs[i].note);
	}
	return true;
}

/* ---------------------------------------------------------------------
 * Words, names and addresses.
 */

/* Names become stream names (<interface>/<name>) and appear in status
 * output: letters, digits, '_', '-' and '.' only. */
bool
cfg_get_name(struct pctx *x, const char *key, const yaml_node_t *n, char *buf)
{
	char qb[QBUF];

	if (!cfg_get_str(x, key, n, buf, CFG_NAME_MAX))
		return false;
	if (buf[0] == '\0') {
		err(x, n, "%s: must not be empty", key);
		return false;
	}
	if (!cfg_all_of(buf, strlen(buf), "abcdefghijklmnopqrstuvwxyz"
			"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")) {
		err(x, n, "%s: '%s' may hold only letters, digits, '_', '-' "
		    "and '.'", key, cfg_quote(buf, strlen(buf), qb));
		buf[0] = '\0';
		return false;
	}
	return true;
}

bool
cfg_parse_ipv4(const char *s, uint32_t *out)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return false;
	*out = ntohl(a.s_addr);
	return true;
}

/* A decimal port 0..65535 written as text (inside a URI or a range). */
bool
cfg_parse_port_text(const char *s, size_t len, uint16_t *out)
{
	unsigned v = 0;

	if (len == 0 || len > 5 || !cfg_all_of(s, len, "0123456789"))
		return false;
	for (size_t i = 0; i < len; i++)
		v = v * 10 + (unsigned)(s[i] - '0');
	if (v > UINT16_MAX)
		return false;
	*out = (uint16_t)v;
	return true;
}

void
cfg_format_ipv4(uint32_t a, char *buf, size_t size)
{
	snprintf(buf, size, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255,
		 (a >> 8) & 255, a & 255);
}

/* udp://IPV4:PORT or tcp://IPV4:PORT. */
bool
cfg_get_endpoint(struct pctx *x, const char *key, const yaml_node_t *n,
		 struct cfg_endpoint *e)
{
	char buf[CFG_NAME_MAX], qb[QBUF];
	char *sep, *host, *colon;
	uint32_t addr;
	uint16_t port;

	cfg_mark(x, e, n);
	if (!cfg_get_str(x, key, n, buf, sizeof(buf)))
		return false;
	sep = strstr(buf, "://");
	if (sep == NULL) {
		err(x, n, "%s: expected udp://IPV4:PORT or tcp://IPV4:PORT, "
		    "got '%s'", key, cfg_quote(buf, strlen(buf), qb));
		return false;
	}
	*sep = '\0';
	if (strcmp(buf, "udp") == 0) {
		e->transport = CFG_TRANSPORT_UDP;
	} else if (strcmp(buf, "tcp") == 0) {
		e->transport = CFG_TRANSPORT_TCP;
	} else if (strcmp(buf, "roce") == 0 || strcmp(buf, "rdma") == 0) {
		err(x, n, "%s: not supported by daqiri: RDMA (%s://)", key,
		    buf);
		return false;
	} else {
		err(x, n, "%s: unknown scheme '%s' (valid: udp, tcp)", key,
		    cfg_quote(buf, strlen(buf), qb));
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
	if (!cfg_parse_ipv4(host, &addr)) {
		err(x, n, "%s: '%s' is not an IPv4 address", key,
		    cfg_quote(host, strlen(host), qb));
		return false;
	}
	if (!cfg_parse_port_text(colon + 1, strlen(colon + 1), &port)) {
		err(x, n, "%s: '%s' is not a port (0..65535)", key,
		    cfg_quote(colon + 1, strlen(colon + 1), qb));
		return false;
	}
	e->set = true;
	e->addr = addr;
	e->port = port;
	return true;
}

/* A file mode in octal with a leading 0 (0660) or 0o (0o660). */
bool
cfg_get_mode(struct pctx *x, const char *key, const yaml_node_t *n,
	     unsigned *out)
{
	char db[DBUF];
	const char *s;
	size_t len, i;
	unsigned v = 0;

	cfg_mark(x, out, n);
	if (n->type != YAML_SCALAR_NODE || scalar_kind(n) == SK_NULL) {
		err(x, n, "%s: expected an octal mode such as 0660, got %s",
		    key, cfg_describe(n, db));
		return false;
	}
	s = sval(n);
	len = slen(n);
	i = len > 1 && s[0] == '0' && s[1] == 'o' ? 2 : 1;
	if (len == 0 || s[0] != '0' || len - i > 4 ||
	    (len > i && !cfg_all_of(s + i, len - i, "01234567"))) {
		err(x, n, "%s: expected an octal mode with a leading 0 such as "
		    "0660, got %s", key, cfg_describe(n, db));
		return false;
	}
	for (; i < len; i++)
		v = v * 8 + (unsigned)(s[i] - '0');
	if (v > 0777) {
		err(x, n, "%s: must be between 0 and 0777, got %s", key,
		    cfg_describe(n, db));
		return false;
	}
	*out = v;
	return true;
}

/* udp_src / udp_dst: a port, or "LO-HI" (inclusive). */
bool
cfg_get_port_range(struct pctx *x, const char *key, const yaml_node_t *n,
		   uint16_t *lo, uint16_t *hi)
{
	char db[DBUF];
	const char *s, *dash;
	size_t len;
	uint16_t a, b;
	uint32_t v;

	cfg_mark(x, lo, n);
	if (n->type == YAML_SCALAR_NODE && is_plain(n) &&
	    scalar_kind(n) == SK_INT) {
		if (!cfg_get_u32(x, key, n, 1, UINT16_MAX, &v))
			return false;
		*lo = *hi = (uint16_t)v;
		return true;
	}
	if (n->type != YAML_SCALAR_NODE || scalar_kind(n) == SK_NULL) {
		err(x, n, "%s: expected a port or a range \"LO-HI\", got %s",
		    key, cfg_describe(n, db));
		return false;
	}
	s = sval(n);
	len = slen(n);
	dash = memchr(s, '-', len);
	if (dash == NULL) {
		a = b = 0;
		if (!cfg_parse_port_text(s, len, &a))
			goto bad;
		b = a;
	} else if (!cfg_parse_port_text(s, (size_t)(dash - s), &a) ||
		   !cfg_parse_port_text(dash + 1, len - (size_t)(dash - s) - 1,
					&b)) {
		goto bad;
	}
	if (a == 0 || b == 0) {
		err(x, n, "%s: ports are 1..65535, got %s", key,
		    cfg_describe(n, db));
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
	    key, cfg_describe(n, db));
	return false;
}

bool
cfg_get_ipv4(struct pctx *x, const char *key, const yaml_node_t *n,
	     uint32_t *out)
{
	char buf[CFG_NAME_MAX], qb[QBUF];

	cfg_mark(x, out, n);
	if (!cfg_get_str(x, key, n, buf, sizeof(buf)))
		return false;
	if (!cfg_parse_ipv4(buf, out)) {
		err(x, n, "%s: '%s' is not an IPv4 address", key,
		    cfg_quote(buf, strlen(buf), qb));
		return false;
	}
	return true;
}

/* A hex digit's value, or -1. */
static int
hex_digit(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

bool
cfg_get_mac(struct pctx *x, const char *key, const yaml_node_t *n,
	    uint8_t out[6])
{
	char buf[CFG_NAME_MAX], qb[QBUF];
	bool ok;

	cfg_mark(x, out, n);
	if (!cfg_get_str(x, key, n, buf, sizeof(buf)))
		return false;
	ok = strlen(buf) == 17;
	for (int i = 0; ok && i < 6; i++) {
		int hi = hex_digit(buf[3 * i]), lo = hex_digit(buf[3 * i + 1]);

		ok = hi >= 0 && lo >= 0 && (i == 5 || buf[3 * i + 2] == ':');
		if (ok)
			out[i] = (uint8_t)(hi << 4 | lo);
	}
	if (!ok)
		err(x, n, "%s: '%s' is not a MAC address (six hex pairs "
		    "joined by ':', as 02:00:5e:10:00:01)", key,
		    cfg_quote(buf, strlen(buf), qb));
	return ok;
}
