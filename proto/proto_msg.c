/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The message codecs (proto.h): the validating decoder of every message,
 * the encoders, and the subscribe and tx_open replies' metadata (check,
 * encode, decode). Every value that comes off the wire is checked here, before
 * any handler sees it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "proto_internal.h"
#include "ring.h"
#include "tapring.h"
#include "txring.h"

/* Integers travel as JSON numbers (doubles): exact up to 2^53. */
#define PROTO_JSON_INT_MAX	9007199254740992.0

/* ---- field readers: 1 present and valid, 0 absent, -1 invalid (*err) */

static int
name_char_ok(unsigned char ch, bool slash)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.' ||
	    ch == ':' || ch == '@' || ch == '+' || (slash && ch == '/');
}

enum str_class { STR_NAME, STR_PATH_NAME, STR_TEXT };

/* Field key of o into *v: 1 present, 0 absent and optional, < 0 (err
 * set) absent and required. */
static int
get_field(const cJSON *o, const char *key, bool required, const cJSON **v,
	  struct daqiri_err *err)
{
	*v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (*v != NULL)
		return 1;
	if (required)
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "missing field \"%s\"", key);
	return 0;
}

/* The same for a string field: its text into *s. */
static int
get_string(const cJSON *o, const char *key, bool required, const char **s,
	   struct daqiri_err *err)
{
	const cJSON *v;
	int r = get_field(o, key, required, &v, err);

	if (r != 1)
		return r;
	if (!cJSON_IsString(v) || v->valuestring == NULL)
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "field \"%s\" must be a string", key);
	*s = v->valuestring;
	return 1;
}

static int
get_str(const cJSON *o, const char *key, bool required, size_t cap,
	enum str_class cls, char *out, struct daqiri_err *err)
{
	const unsigned char *p;
	const char *text;
	size_t n;
	int r = get_string(o, key, required, &text, err);

	if (r != 1)
		return r;
	n = strlen(text);
	if (n >= cap || (n == 0 && cls != STR_TEXT))
		return daqiri_err_set(err, DAQIRI_ST_OUT_OF_RANGE,
		    "field \"%s\": length %zu not in 1..%zu", key, n, cap - 1);
	for (p = (const unsigned char *)text; *p != '\0'; p++) {
		if (cls == STR_TEXT ? (*p < 0x20 || *p == 0x7f) :
		    !name_char_ok(*p, cls == STR_PATH_NAME))
			return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
			    "field \"%s\": character 0x%02x not allowed", key,
			    *p);
	}
	memcpy(out, text, n + 1);
	return 1;
}

static int
get_uint(const cJSON *o, const char *key, bool required, double min,
	 double max, uint64_t *out, struct daqiri_err *err)
{
	const cJSON *v;
	double d;
	int r = get_field(o, key, required, &v, err);

	if (r != 1)
		return r;
	if (!cJSON_IsNumber(v))
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "field \"%s\" must be a number", key);
	d = v->valuedouble;
	if (!isfinite(d) || d != floor(d))
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "field \"%s\" must be an integer", key);
	if (d < min || d > max)
		return daqiri_err_set(err, DAQIRI_ST_OUT_OF_RANGE,
		    "field \"%s\": %.0f not in %.0f..%.0f", key, d, min, max);
	*out = (uint64_t)d;
	return 1;
}

static int
get_u32(const cJSON *o, const char *key, bool required, uint32_t min,
	uint32_t max, uint32_t *out, struct daqiri_err *err)
{
	uint64_t v;
	int r = get_uint(o, key, required, min, max, &v, err);

	if (r == 1)
		*out = (uint32_t)v;
	return r;
}

static int
get_u64(const cJSON *o, const char *key, uint64_t *out, struct daqiri_err *err)
{
	return get_uint(o, key, true, 0, PROTO_JSON_INT_MAX, out, err);
}

/* A name of an enum, into *out; parse is its reverse lookup. */
static int
get_enum(const cJSON *o, const char *key, bool required,
	 int (*parse)(const char *name), int *out, struct daqiri_err *err)
{
	const char *text;
	int i, r = get_string(o, key, required, &text, err);

	if (r != 1)
		return r;
	i = parse(text);
	if (i < 0)
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "field \"%s\": unknown value \"%.40s\"", key, text);
	*out = i;
	return 1;
}

/*
 * Every key of o must be one of allowed (NULL-terminated) and appear once:
 * a misspelt field is an error, not silently ignored.
 */
static int
check_keys(const cJSON *o, const char *const *allowed, const char *where,
	   struct daqiri_err *err)
{
	const cJSON *c, *d;
	size_t i;

	for (c = o->child; c != NULL; c = c->next) {
		if (c->string == NULL)
			return daqiri_err_set(err, DAQIRI_ST_BAD_JSON,
			    "member without a name");
		for (i = 0; allowed[i] != NULL; i++)
			if (strcmp(allowed[i], c->string) == 0)
				break;
		if (allowed[i] == NULL)
			return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
			    "unknown field \"%.40s\" in %s", c->string, where);
		for (d = c->next; d != NULL; d = d->next)
			if (d->string != NULL && strcmp(d->string, c->string) == 0)
				return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
				    "duplicate field \"%.40s\" in %s",
				    c->string, where);
	}
	return 0;
}

/* Fields every request may carry, then each type's own. */
#define COMMON_KEYS "type", "id", "version"
static const char *const keys_hello[] = { COMMON_KEYS, "client", NULL };
static const char *const keys_none[] = { COMMON_KEYS, NULL };
static const char *const keys_subscribe[] = { COMMON_KEYS, "stream", "mode",
	"group", "depth", "max_held", "policy", NULL };
static const char *const keys_unsubscribe[] = { COMMON_KEYS, "sub", NULL };
static const char *const keys_flow_list[] = { COMMON_KEYS, "interface", NULL };
static const char *const keys_flow_add[] = { COMMON_KEYS, "interface",
	"flow_id", "name", "queue", "match", NULL };
static const char *const keys_flow_del[] = { COMMON_KEYS, "interface",
	"flow_id", NULL };
static const char *const keys_tx_open[] = { COMMON_KEYS, "queue", "nbufs",
	NULL };
static const char *const keys_tx_close[] = { COMMON_KEYS, "tx", NULL };
static const char *const keys_replay[] = { COMMON_KEYS, "action", NULL };
static const char *const keys_tap[] = { COMMON_KEYS, "queue", "action",
	"count", "snap", "map", NULL };
static const char *const keys_trigger[] = { COMMON_KEYS, "stream", NULL };
static const char *const keys_match[] = { "udp_src", "udp_dst", "ipv4_src",
	"ipv4_dst", "ipv4_len", NULL };

static int
depth_valid(uint32_t d)
{
	return d == 0 || daqiri_ring_size(d) != 0;
}

static int
decode_subscribe(const cJSON *o, struct daqiri_sub_req *s,
		 struct daqiri_err *err)
{
	int mode = DAQIRI_SUB_BROADCAST, policy = DAQIRI_POLICY_LATEST, r;

	if (get_str(o, "stream", true, sizeof(s->stream), STR_PATH_NAME,
	    s->stream, err) < 0)
		return -1;
	if (get_enum(o, "mode", false, proto_sub_mode_parse, &mode, err) < 0)
		return -1;
	s->mode = (enum daqiri_sub_mode)mode;
	r = get_str(o, "group", false, sizeof(s->group), STR_NAME, s->group,
	    err);
	if (r < 0)
		return -1;
	if (s->mode == DAQIRI_SUB_SHARED && r == 0)
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "shared mode needs a \"group\"");
	if (s->mode == DAQIRI_SUB_BROADCAST && r == 1)
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "\"group\" is only for shared mode");
	if (get_u32(o, "depth", false, 0, DAQIRI_RING_DEPTH_MAX, &s->depth,
	    err) < 0)
		return -1;
	if (!depth_valid(s->depth))
		return daqiri_err_set(err, DAQIRI_ST_OUT_OF_RANGE,
		    "field \"depth\": %u is not 0 or a power of two in %u..%u",
		    s->depth, DAQIRI_RING_DEPTH_MIN, DAQIRI_RING_DEPTH_MAX);
	if (get_u32(o, "max_held", false, 0, DAQIRI_MAX_HELD_MAX, &s->max_held,
	    err) < 0)
		return -1;
	if (get_enum(o, "policy", false, proto_sub_policy_parse, &policy,
	    err) < 0)
		return -1;
	s->policy = (enum daqiri_sub_policy)policy;
	/* Lossless holds the stream back for one subscriber; a group's
	 * point is that any member may take a tensor, so the two do not
	 * mix (PROTOCOL.md "subscribe"). */
	if (s->policy == DAQIRI_POLICY_LOSSLESS &&
	    s->mode != DAQIRI_SUB_BROADCAST)
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "policy \"lossless\" is for broadcast subscriptions only");
	return 0;
}

/* A port: number, or "lo-hi" with lo <= hi. */
static int
get_port_range(const cJSON *o, const char *key, bool *has, uint16_t *lo,
	       uint16_t *hi, struct daqiri_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	unsigned long a, b;
	char *end;
	uint64_t n;

	if (v == NULL)
		return 0;
	if (cJSON_IsNumber(v)) {
		if (get_uint(o, key, true, 0, 65535, &n, err) < 0)
			return -1;
		*lo = *hi = (uint16_t)n;
		*has = true;
		return 1;
	}
	if (!cJSON_IsString(v) || v->valuestring == NULL)
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "field \"%s\" must be a port or \"lo-hi\"", key);
	errno = 0;
	if (v->valuestring[0] < '0' || v->valuestring[0] > '9')
		goto bad;
	a = strtoul(v->valuestring, &end, 10);
	if (errno != 0 || *end != '-' || end[1] < '0' || end[1] > '9')
		goto bad;
	b = strtoul(end + 1, &end, 10);
	if (errno != 0 || *end != '\0')
		goto bad;
	if (a > 65535 || b > 65535 || a > b)
		return daqiri_err_set(err, DAQIRI_ST_OUT_OF_RANGE,
		    "field \"%s\": range \"%.20s\" not within 0..65535 in order",
		    key, v->valuestring);
	*lo = (uint16_t)a;
	*hi = (uint16_t)b;
	*has = true;
	return 1;
bad:
	return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
	    "field \"%s\": \"%.20s\" is not a port or \"lo-hi\"", key,
	    v->valuestring);
}

static int
get_ipv4(const cJSON *o, const char *key, bool *has, uint32_t *out,
	 struct daqiri_err *err)
{
	char s[INET_ADDRSTRLEN];
	struct in_addr a;
	int r = get_str(o, key, false, sizeof(s), STR_NAME, s, err);

	if (r <= 0)
		return r;
	if (inet_pton(AF_INET, s, &a) != 1)
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "field \"%s\": \"%s\" is not an IPv4 address", key, s);
	*out = ntohl(a.s_addr);
	*has = true;
	return 1;
}

static int
decode_flow(enum daqiri_msg_type t, const cJSON *o, struct daqiri_flow_req *f,
	    struct daqiri_err *err)
{
	const cJSON *q, *match, *e;
	uint64_t n;

	if (get_str(o, "interface", t != DAQIRI_MSG_FLOW_LIST, sizeof(f->iface),
	    STR_NAME, f->iface, err) < 0)
		return -1;
	if (t == DAQIRI_MSG_FLOW_LIST)
		return 0;
	if (get_u32(o, "flow_id", true, 0, UINT32_MAX, &f->id, err) < 0)
		return -1;
	if (t == DAQIRI_MSG_FLOW_DEL)
		return 0;
	if (get_str(o, "name", false, sizeof(f->name), STR_NAME, f->name,
	    err) < 0)
		return -1;
	q = cJSON_GetObjectItemCaseSensitive(o, "queue");
	if (q == NULL)
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "missing field \"queue\"");
	if (cJSON_IsNumber(q)) {
		if (get_uint(o, "queue", true, 0, UINT32_MAX, &n, err) < 0)
			return -1;
		f->queues[f->nqueues++] = (uint32_t)n;
	} else if (cJSON_IsArray(q)) {
		cJSON_ArrayForEach(e, q) {
			double d = cJSON_IsNumber(e) ? e->valuedouble : -1;

			if (f->nqueues == DAQIRI_FLOW_MAX_QUEUES)
				return daqiri_err_set(err,
				    DAQIRI_ST_OUT_OF_RANGE,
				    "field \"queue\": more than %d queues",
				    DAQIRI_FLOW_MAX_QUEUES);
			if (!isfinite(d) || d != floor(d) || d < 0 ||
			    d > UINT32_MAX)
				return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
				    "field \"queue\": entries must be queue ids");
			f->queues[f->nqueues++] = (uint32_t)d;
		}
		if (f->nqueues == 0)
			return daqiri_err_set(err, DAQIRI_ST_OUT_OF_RANGE,
			    "field \"queue\": empty");
	} else {
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "field \"queue\" must be a queue id or a list of them");
	}
	match = cJSON_GetObjectItemCaseSensitive(o, "match");
	if (match == NULL)
		return 0;
	if (!cJSON_IsObject(match))
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "field \"match\" must be an object");
	if (check_keys(match, keys_match, "\"match\"", err) < 0)
		return -1;
	if (get_port_range(match, "udp_src", &f->has_udp_src, &f->udp_src_lo,
	    &f->udp_src_hi, err) < 0 ||
	    get_port_range(match, "udp_dst", &f->has_udp_dst, &f->udp_dst_lo,
	    &f->udp_dst_hi, err) < 0 ||
	    get_ipv4(match, "ipv4_src", &f->has_ipv4_src, &f->ipv4_src,
	    err) < 0 ||
	    get_ipv4(match, "ipv4_dst", &f->has_ipv4_dst, &f->ipv4_dst,
	    err) < 0)
		return -1;
	switch (get_uint(match, "ipv4_len", false, 0, 65535, &n, err)) {
	case -1:
		return -1;
	case 1:
		f->has_ipv4_len = true;
		f->ipv4_len = (uint16_t)n;
		break;
	}
	return 0;
}

static int
decode_reply(const cJSON *o, struct daqiri_msg *m, struct daqiri_err *err)
{
	const cJSON *e, *msg;
	int re, st, code;

	/* "re" is absent when the request's type could not be read. */
	re = DAQIRI_MSG_MAX;
	if (get_enum(o, "re", false, daqiri_msg_type_parse, &re, err) < 0)
		return -1;
	if (re >= DAQIRI_MSG_REPLY && re != DAQIRI_MSG_MAX)
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "field \"re\": not a request type");
	if (get_enum(o, "status", true, daqiri_status_parse, &st, err) < 0)
		return -1;
	m->u.reply.re = (enum daqiri_msg_type)re;
	m->u.reply.status = (enum daqiri_status)st;
	m->u.reply.has_part = false;
	m->u.reply.part = 0;
	m->u.reply.more = false;
	e = cJSON_GetObjectItemCaseSensitive(o, "more");
	if (e != NULL && !cJSON_IsBool(e))
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "field \"more\" must be true or false");
	m->u.reply.more = cJSON_IsTrue(e);
	if (get_u32(o, "part", false, 0, DAQIRI_REPLY_PARTS_MAX - 1,
	    &m->u.reply.part, err) < 0)
		return -1;
	m->u.reply.has_part = cJSON_GetObjectItemCaseSensitive(o, "part") !=
	    NULL;
	/* A series is of successful replies only, and numbered. */
	if ((e != NULL || m->u.reply.has_part) &&
	    (e == NULL || !m->u.reply.has_part || st != DAQIRI_ST_OK))
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "\"part\" and \"more\" go together, in a successful "
		    "reply");
	e = cJSON_GetObjectItemCaseSensitive(o, "error");
	if (st == DAQIRI_ST_OK)
		return e == NULL ? 0 : daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "\"error\" in a successful reply");
	if (!cJSON_IsObject(e))
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "failed reply without an \"error\" object");
	if (get_enum(e, "code", true, daqiri_status_parse, &code, err) < 0)
		return -1;
	if (code != st)
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "\"error.code\" differs from \"status\"");
	msg = cJSON_GetObjectItemCaseSensitive(e, "message");
	if (!cJSON_IsString(msg) || msg->valuestring == NULL)
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "\"error.message\" must be a string");
	/* Truncation of a long human message is harmless. */
	snprintf(m->u.reply.message, sizeof(m->u.reply.message), "%s",
	    msg->valuestring);
	return 0;
}

static int
decode_sub_fd(const cJSON *o, struct daqiri_msg *m, struct daqiri_err *err)
{
	int k;

	if (get_u32(o, "sub", true, 1, UINT32_MAX, &m->u.sub_fd.sub_id,
	    err) < 0 ||
	    get_u32(o, "count", true, 1, DAQIRI_SUB_MAX_FDS,
	    &m->u.sub_fd.count, err) < 0 ||
	    get_u32(o, "index", true, 0, DAQIRI_SUB_MAX_FDS - 1,
	    &m->u.sub_fd.index, err) < 0 ||
	    get_enum(o, "kind", true, proto_fd_kind_parse, &k, err) < 0)
		return -1;
	if (m->u.sub_fd.index >= m->u.sub_fd.count)
		return daqiri_err_set(err, DAQIRI_ST_OUT_OF_RANGE,
		    "fd index %u of %u", m->u.sub_fd.index, m->u.sub_fd.count);
	m->u.sub_fd.kind = (enum daqiri_fd_kind)k;
	return 0;
}

static int
decode_event(const cJSON *o, struct daqiri_msg *m, struct daqiri_err *err)
{
	int k, st;

	if (get_enum(o, "event", true, proto_event_kind_parse, &k, err) < 0 ||
	    get_u32(o, "sub", true, 1, UINT32_MAX, &m->u.event.sub_id,
	    err) < 0 ||
	    get_enum(o, "status", true, daqiri_status_parse, &st, err) < 0 ||
	    get_str(o, "message", false, sizeof(m->u.event.message), STR_TEXT,
	    m->u.event.message, err) < 0)
		return -1;
	m->u.event.kind = (enum daqiri_event_kind)k;
	m->u.event.status = (enum daqiri_status)st;
	return 0;
}

static int tx_open_decode(const cJSON *o, struct daqiri_tx_req *t,
			  struct daqiri_err *err);

static int
tap_action_parse(const char *name)
{
	static const char *const names[] = { [DAQIRI_TAP_START] = "start",
		[DAQIRI_TAP_READ] = "read", [DAQIRI_TAP_STOP] = "stop" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(name, names[i]) == 0)
			return (int)i;
	return -1;
}

static int
decode_tap(const cJSON *o, struct daqiri_tap_req *t, struct daqiri_err *err)
{
	const cJSON *map;
	int action = -1;

	if (get_str(o, "queue", true, sizeof(t->queue), STR_PATH_NAME,
	    t->queue, err) < 0 ||
	    get_enum(o, "action", true, tap_action_parse, &action, err) < 0)
		return -1;
	t->action = (enum daqiri_tap_action)action;
	t->count = DAQIRI_TAP_COUNT_DEFAULT;
	t->snap = DAQIRI_TAP_SNAP_DEFAULT;
	map = cJSON_GetObjectItemCaseSensitive(o, "map");
	if (t->action != DAQIRI_TAP_START &&
	    (cJSON_GetObjectItemCaseSensitive(o, "count") != NULL ||
	    cJSON_GetObjectItemCaseSensitive(o, "snap") != NULL ||
	    map != NULL))
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "\"count\", \"snap\" and \"map\" are for action "
		    "\"start\"");
	if (map != NULL && !cJSON_IsBool(map))
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "field \"map\" must be true or false");
	t->map = cJSON_IsTrue(map);
	if (get_u32(o, "count", false, 0, DAQIRI_TAP_COUNT_MAX, &t->count,
	    err) < 0 ||
	    get_u32(o, "snap", false, 1, DAQIRI_TAP_SNAP_MAX, &t->snap,
	    err) < 0)
		return -1;
	return 0;
}

static int
replay_action_parse(const char *name)
{
	static const char *const names[] = { [DAQIRI_REPLAY_START] = "start",
		[DAQIRI_REPLAY_STATUS] = "status" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(name, names[i]) == 0)
			return (int)i;
	return -1;
}

static int
decode_fields(const cJSON *o, struct daqiri_msg *m, struct daqiri_err *err)
{
	static const char *const *const keys[DAQIRI_MSG_REPLY] = {
		[DAQIRI_MSG_HELLO] = keys_hello,
		[DAQIRI_MSG_STREAMS] = keys_none,
		[DAQIRI_MSG_SUBSCRIBE] = keys_subscribe,
		[DAQIRI_MSG_UNSUBSCRIBE] = keys_unsubscribe,
		[DAQIRI_MSG_STATUS] = keys_none,
		[DAQIRI_MSG_STATS] = keys_none,
		[DAQIRI_MSG_CONSUMERS] = keys_none,
		[DAQIRI_MSG_FLOW_LIST] = keys_flow_list,
		[DAQIRI_MSG_FLOW_ADD] = keys_flow_add,
		[DAQIRI_MSG_FLOW_DEL] = keys_flow_del,
		[DAQIRI_MSG_RELOAD] = keys_none,
		[DAQIRI_MSG_CONFIG] = keys_none,
		[DAQIRI_MSG_TX_OPEN] = keys_tx_open,
		[DAQIRI_MSG_TX_CLOSE] = keys_tx_close,
		[DAQIRI_MSG_TAP] = keys_tap,
		[DAQIRI_MSG_TRIGGER] = keys_trigger,
		[DAQIRI_MSG_REPLAY] = keys_replay,
	};

	/* Requests are strict; daemon messages may grow payload fields. */
	if (m->type < DAQIRI_MSG_REPLY &&
	    check_keys(o, keys[m->type], daqiri_msg_type_name(m->type),
	    err) < 0)
		return -1;
	switch (m->type) {
	case DAQIRI_MSG_HELLO:
		return get_str(o, "client", false, sizeof(m->u.hello.client),
		    STR_TEXT, m->u.hello.client, err) < 0 ? -1 : 0;
	case DAQIRI_MSG_SUBSCRIBE:
		return decode_subscribe(o, &m->u.sub, err);
	case DAQIRI_MSG_UNSUBSCRIBE:
		return get_u32(o, "sub", true, 1, UINT32_MAX,
		    &m->u.unsub.sub_id, err) < 0 ? -1 : 0;
	case DAQIRI_MSG_FLOW_LIST:
	case DAQIRI_MSG_FLOW_ADD:
	case DAQIRI_MSG_FLOW_DEL:
		return decode_flow(m->type, o, &m->u.flow, err);
	case DAQIRI_MSG_TX_OPEN:
		return tx_open_decode(o, &m->u.tx, err);
	case DAQIRI_MSG_TX_CLOSE:
		return get_u32(o, "tx", true, 1, UINT32_MAX,
		    &m->u.tx_close.tx_id, err) < 0 ? -1 : 0;
	case DAQIRI_MSG_TAP:
		return decode_tap(o, &m->u.tap, err);
	case DAQIRI_MSG_TRIGGER:
		return get_str(o, "stream", true, sizeof(m->u.trigger.stream),
		    STR_PATH_NAME, m->u.trigger.stream, err) < 0 ? -1 : 0;
	case DAQIRI_MSG_REPLAY: {
		int action = -1;

		if (get_enum(o, "action", true, replay_action_parse, &action,
		    err) < 0)
			return -1;
		m->u.replay.action = (enum daqiri_replay_action)action;
		return 0;
	}
	case DAQIRI_MSG_REPLY:
		return decode_reply(o, m, err);
	case DAQIRI_MSG_SUB_FD:
		return decode_sub_fd(o, m, err);
	case DAQIRI_MSG_EVENT:
		return decode_event(o, m, err);
	default:
		return 0;
	}
}

static bool
is_json_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* An escaped \u0000 anywhere (a backslash run of odd length, then u0000). */
static bool
has_nul_escape(const char *s, size_t len)
{
	size_t i, run = 0;

	for (i = 0; i < len; i++) {
		if (s[i] == '\\') {
			run++;
			continue;
		}
		if (run % 2 == 1 && s[i] == 'u' && i + 4 < len &&
		    s[i + 1] == '0' && s[i + 2] == '0' && s[i + 3] == '0' &&
		    s[i + 4] == '0')
			return true;
		run = 0;
	}
	return false;
}

int
daqiri_msg_decode(const char *buf, size_t len, struct daqiri_msg *out,
		  struct daqiri_err *err)
{
	const char *end = NULL;
	const cJSON *t, *v;
	cJSON *root;
	char *copy;
	uint64_t n;
	int ty;

	memset(out, 0, sizeof(*out));
	out->type = DAQIRI_MSG_MAX;
	err->status = DAQIRI_ST_OK;
	err->msg[0] = '\0';

	/* 1. size */
	if (len > DAQIRI_MSG_SIZE_MAX)
		return daqiri_err_set(err, DAQIRI_ST_TOO_BIG,
		    "message of %zu bytes, at most %d", len,
		    DAQIRI_MSG_SIZE_MAX);
	if (buf == NULL || len == 0)
		return daqiri_err_set(err, DAQIRI_ST_BAD_JSON, "empty message");

	/* 2. JSON: one object and nothing after it. A \u0000 escape would
	 * end a string early inside cJSON (names would compare equal to a
	 * prefix), so the protocol refuses it. cJSON gets a
	 * NUL-terminated copy so no reader can run past len. */
	copy = malloc(len + 1);
	if (copy == NULL)
		return daqiri_err_set(err, DAQIRI_ST_NO_RESOURCES,
		    "out of memory");
	memcpy(copy, buf, len);
	copy[len] = '\0';
	if (has_nul_escape(copy, len)) {
		free(copy);
		return daqiri_err_set(err, DAQIRI_ST_BAD_JSON,
		    "\\u0000 is not allowed in strings");
	}
	root = cJSON_ParseWithLengthOpts(copy, len, &end, 0);
	if (root == NULL) {
		size_t at = end != NULL && end >= copy && end <= copy + len ?
		    (size_t)(end - copy) : 0;

		free(copy);
		return daqiri_err_set(err, DAQIRI_ST_BAD_JSON,
		    "invalid JSON near byte %zu", at);
	}
	while (end != NULL && end < copy + len && is_json_space(*end))
		end++;
	if (end == NULL || end != copy + len) {
		cJSON_Delete(root);
		free(copy);
		return daqiri_err_set(err, DAQIRI_ST_BAD_JSON,
		    "data after the JSON object");
	}
	free(copy);
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return daqiri_err_set(err, DAQIRI_ST_BAD_JSON,
		    "message is not a JSON object");
	}
	/* The request id is read first so that even a rejection echoes it;
	 * a bad one is a field error below. */
	v = cJSON_GetObjectItemCaseSensitive(root, "id");
	if (v != NULL && cJSON_IsNumber(v) && isfinite(v->valuedouble) &&
	    v->valuedouble == floor(v->valuedouble) && v->valuedouble >= 0 &&
	    v->valuedouble <= UINT32_MAX) {
		out->has_id = true;
		out->id = (uint32_t)v->valuedouble;
	}

	/* 3. type */
	t = cJSON_GetObjectItemCaseSensitive(root, "type");
	if (t == NULL || !cJSON_IsString(t) || t->valuestring == NULL) {
		daqiri_err_set(err, DAQIRI_ST_UNKNOWN_TYPE,
		    "missing \"type\" string");
		goto fail;
	}
	ty = daqiri_msg_type_parse(t->valuestring);
	if (ty < 0) {
		daqiri_err_set(err, DAQIRI_ST_UNKNOWN_TYPE,
		    "unknown message type \"%.40s\"", t->valuestring);
		goto fail;
	}
	out->type = (enum daqiri_msg_type)ty;

	/* 4. version */
	v = cJSON_GetObjectItemCaseSensitive(root, "version");
	if (v == NULL && out->type == DAQIRI_MSG_HELLO) {
		daqiri_err_set(err, DAQIRI_ST_VERSION_MISMATCH,
		    "hello without \"version\" (this side speaks %d)",
		    DAQIRI_PROTO_VERSION);
		goto fail;
	}
	if (v != NULL && (!cJSON_IsNumber(v) ||
	    v->valuedouble != DAQIRI_PROTO_VERSION)) {
		if (cJSON_IsNumber(v))
			daqiri_err_set(err, DAQIRI_ST_VERSION_MISMATCH,
			    "protocol version %.0f, this side speaks %d",
			    isfinite(v->valuedouble) ? v->valuedouble : -1.0,
			    DAQIRI_PROTO_VERSION);
		else
			daqiri_err_set(err, DAQIRI_ST_VERSION_MISMATCH,
			    "\"version\" must be a number (this side speaks %d)",
			    DAQIRI_PROTO_VERSION);
		goto fail;
	}
	if (out->type == DAQIRI_MSG_HELLO)
		out->u.hello.version = DAQIRI_PROTO_VERSION;

	/* 5. fields and ranges */
	if (get_uint(root, "id", false, 0, UINT32_MAX, &n, err) < 0)
		goto fail;
	if (decode_fields(root, out, err) < 0)
		goto fail;
	out->json = root;
	return 0;
fail:
	cJSON_Delete(root);
	if (err->status == DAQIRI_ST_OK)
		err->status = DAQIRI_ST_INTERNAL;
	return -1;
}

void
daqiri_msg_free(struct daqiri_msg *m)
{
	if (m == NULL)
		return;
	cJSON_Delete(m->json);
	m->json = NULL;
}

/* ---- encoders */

cJSON *
daqiri_msg_new(enum daqiri_msg_type type)
{
	const char *name = daqiri_msg_type_name(type);
	cJSON *o;

	if (name == NULL)
		return NULL;
	o = cJSON_CreateObject();
	if (o == NULL)
		return NULL;
	if (cJSON_AddStringToObject(o, "type", name) == NULL ||
	    (type == DAQIRI_MSG_HELLO && cJSON_AddNumberToObject(o, "version",
	    DAQIRI_PROTO_VERSION) == NULL)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

cJSON *
daqiri_reply_new(enum daqiri_msg_type re, int64_t req_id,
		 enum daqiri_status st, const char *message)
{
	const char *rname = daqiri_msg_type_name(re);
	const char *sname = daqiri_status_name(st);
	cJSON *o, *e;

	if (sname == NULL || (re >= DAQIRI_MSG_REPLY && re != DAQIRI_MSG_MAX))
		return NULL;
	o = daqiri_msg_new(DAQIRI_MSG_REPLY);
	if (o == NULL)
		return NULL;
	if ((rname != NULL &&
	    cJSON_AddStringToObject(o, "re", rname) == NULL) ||
	    cJSON_AddStringToObject(o, "status", sname) == NULL ||
	    (req_id >= 0 && cJSON_AddNumberToObject(o, "id",
	    (double)req_id) == NULL))
		goto fail;
	if (st != DAQIRI_ST_OK) {
		e = cJSON_AddObjectToObject(o, "error");
		if (e == NULL ||
		    cJSON_AddStringToObject(e, "code", sname) == NULL ||
		    cJSON_AddStringToObject(e, "message",
		    message != NULL && message[0] != '\0' ? message : sname) ==
		    NULL)
			goto fail;
	}
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

cJSON *
daqiri_sub_fd_new(uint32_t sub_id, uint32_t index, uint32_t count,
		  enum daqiri_fd_kind kind)
{
	const char *k = daqiri_fd_kind_name(kind);
	cJSON *o;

	if (k == NULL)
		return NULL;
	o = daqiri_msg_new(DAQIRI_MSG_SUB_FD);
	if (o == NULL)
		return NULL;
	if (cJSON_AddNumberToObject(o, "sub", sub_id) == NULL ||
	    cJSON_AddNumberToObject(o, "index", index) == NULL ||
	    cJSON_AddNumberToObject(o, "count", count) == NULL ||
	    cJSON_AddStringToObject(o, "kind", k) == NULL) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

cJSON *
daqiri_event_new(enum daqiri_event_kind kind, uint32_t sub_id,
		 enum daqiri_status why, const char *message)
{
	const char *k = proto_event_kind_name(kind);
	const char *s = daqiri_status_name(why);
	char text[DAQIRI_ERR_MSG_MAX];
	size_t i;
	cJSON *o;

	if (k == NULL || s == NULL)
		return NULL;
	/* The decoder accepts printable text only: keep it so. */
	snprintf(text, sizeof(text), "%s", message != NULL ? message : "");
	for (i = 0; text[i] != '\0'; i++)
		if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f)
			text[i] = ' ';
	o = daqiri_msg_new(DAQIRI_MSG_EVENT);
	if (o == NULL)
		return NULL;
	if (cJSON_AddStringToObject(o, "event", k) == NULL ||
	    cJSON_AddNumberToObject(o, "sub", sub_id) == NULL ||
	    cJSON_AddStringToObject(o, "status", s) == NULL ||
	    cJSON_AddStringToObject(o, "message", text) == NULL) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

int
daqiri_sub_req_encode(const struct daqiri_sub_req *req, cJSON *obj)
{
	const char *mode = daqiri_sub_mode_name(req->mode);

	if (mode == NULL || daqiri_sub_policy_name(req->policy) == NULL)
		return -EINVAL;
	/* "policy" only when not the default, so that a latest subscribe
	 * still reaches a daemon that knows no policies */
	if (cJSON_AddStringToObject(obj, "stream", req->stream) == NULL ||
	    (req->policy != DAQIRI_POLICY_LATEST &&
	    cJSON_AddStringToObject(obj, "policy",
	    daqiri_sub_policy_name(req->policy)) == NULL) ||
	    cJSON_AddStringToObject(obj, "mode", mode) == NULL ||
	    (req->mode == DAQIRI_SUB_SHARED &&
	    cJSON_AddStringToObject(obj, "group", req->group) == NULL) ||
	    (req->depth != 0 &&
	    cJSON_AddNumberToObject(obj, "depth", req->depth) == NULL) ||
	    (req->max_held != 0 &&
	    cJSON_AddNumberToObject(obj, "max_held", req->max_held) == NULL))
		return -ENOMEM;
	return 0;
}

static int
add_port_range(cJSON *m, const char *key, uint16_t lo, uint16_t hi)
{
	char s[16];

	if (lo == hi)
		return cJSON_AddNumberToObject(m, key, lo) == NULL ? -ENOMEM : 0;
	snprintf(s, sizeof(s), "%u-%u", lo, hi);
	return cJSON_AddStringToObject(m, key, s) == NULL ? -ENOMEM : 0;
}

static int
add_ipv4(cJSON *m, const char *key, uint32_t a)
{
	char s[INET_ADDRSTRLEN];
	struct in_addr in = { .s_addr = htonl(a) };

	inet_ntop(AF_INET, &in, s, sizeof(s));
	return cJSON_AddStringToObject(m, key, s) == NULL ? -ENOMEM : 0;
}

int
daqiri_flow_req_encode(enum daqiri_msg_type t,
		       const struct daqiri_flow_req *req, cJSON *obj)
{
	cJSON *q, *match;
	int i;

	if (t != DAQIRI_MSG_FLOW_LIST && t != DAQIRI_MSG_FLOW_ADD &&
	    t != DAQIRI_MSG_FLOW_DEL)
		return -EINVAL;
	if (req->iface[0] != '\0' &&
	    cJSON_AddStringToObject(obj, "interface", req->iface) == NULL)
		return -ENOMEM;
	if (t == DAQIRI_MSG_FLOW_LIST)
		return 0;
	if (cJSON_AddNumberToObject(obj, "flow_id", req->id) == NULL)
		return -ENOMEM;
	if (t == DAQIRI_MSG_FLOW_DEL)
		return 0;
	if (req->nqueues < 1 || req->nqueues > DAQIRI_FLOW_MAX_QUEUES)
		return -EINVAL;
	if (req->name[0] != '\0' &&
	    cJSON_AddStringToObject(obj, "name", req->name) == NULL)
		return -ENOMEM;
	if (req->nqueues == 1) {
		if (cJSON_AddNumberToObject(obj, "queue",
		    req->queues[0]) == NULL)
			return -ENOMEM;
	} else {
		q = cJSON_AddArrayToObject(obj, "queue");
		if (q == NULL)
			return -ENOMEM;
		for (i = 0; i < req->nqueues; i++)
			if (!cJSON_AddItemToArray(q,
			    cJSON_CreateNumber(req->queues[i])))
				return -ENOMEM;
	}
	if (!(req->has_udp_src || req->has_udp_dst || req->has_ipv4_src ||
	    req->has_ipv4_dst || req->has_ipv4_len))
		return 0;
	match = cJSON_AddObjectToObject(obj, "match");
	if (match == NULL)
		return -ENOMEM;
	if ((req->has_udp_src && add_port_range(match, "udp_src",
	    req->udp_src_lo, req->udp_src_hi) < 0) ||
	    (req->has_udp_dst && add_port_range(match, "udp_dst",
	    req->udp_dst_lo, req->udp_dst_hi) < 0) ||
	    (req->has_ipv4_src &&
	    add_ipv4(match, "ipv4_src", req->ipv4_src) < 0) ||
	    (req->has_ipv4_dst &&
	    add_ipv4(match, "ipv4_dst", req->ipv4_dst) < 0) ||
	    (req->has_ipv4_len &&
	    cJSON_AddNumberToObject(match, "ipv4_len", req->ipv4_len) == NULL))
		return -ENOMEM;
	return 0;
}

/* ---- subscription metadata */

static int
str_ok(const char *s, size_t cap, bool slash)
{
	size_t i;

	for (i = 0; i < cap && s[i] != '\0'; i++)
		if (!name_char_ok((unsigned char)s[i], slash))
			return 0;
	return i > 0 && i < cap;
}

int
daqiri_sub_info_check(const struct daqiri_sub_info *s, struct daqiri_err *err)
{
	uint64_t bmw, need, last, end;
	bool dev;
	uint32_t i;

	if (s->sub_id == 0)
		return daqiri_err_set(err, DAQIRI_ST_OUT_OF_RANGE, "sub id 0");
	if (!str_ok(s->stream, sizeof(s->stream), true))
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "bad stream name");
	if ((unsigned)s->kind >= DAQIRI_STREAM_KIND_MAX ||
	    (unsigned)s->mode >= DAQIRI_SUB_MODE_MAX ||
	    (unsigned)s->policy >= DAQIRI_POLICY_MAX ||
	    (unsigned)s->mem_kind >= DAQIRI_MEM_MAX ||
	    (unsigned)s->dtype >= DAQIRI_DTYPE_MAX ||
	    (unsigned)s->fill >= DAQIRI_FILL_MAX)
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "enum value out of range");
	if (s->mode == DAQIRI_SUB_SHARED &&
	    !str_ok(s->group, sizeof(s->group), false))
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "shared subscription without a valid group");
	if (s->dtype == DAQIRI_DTYPE_INT4 ||
	    (s->kind == DAQIRI_STREAM_RAW && s->dtype != DAQIRI_DTYPE_RAW))
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "dtype %s not possible here",
		    daqiri_dtype_name(s->dtype));
	dev = s->mem_kind == DAQIRI_MEM_DEVICE;
	if (dev ? s->device < 0 : s->device != -1)
		return daqiri_err_set(err, DAQIRI_ST_OUT_OF_RANGE,
		    "device %d for %s memory", s->device,
		    daqiri_mem_kind_name(s->mem_kind));
	if (s->elem_bytes != daqiri_dtype_size(s->dtype))
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "elem_bytes %u for %s", s->elem_bytes,
		    daqiri_dtype_name(s->dtype));
	if (s->nbufs < 1 || s->nbufs > DAQIRI_NBUFS_MAX ||
	    s->ppb < 1 || s->ppb > DAQIRI_PPB_MAX)
		return daqiri_err_set(err, DAQIRI_ST_OUT_OF_RANGE,
		    "nbufs %u or ppb %u out of range", s->nbufs, s->ppb);
	if (s->slot_bytes == 0 || s->slot_bytes % s->elem_bytes != 0 ||
	    s->elems_per_slot != s->slot_bytes / s->elem_bytes)
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "slot of %llu bytes, %llu elements of %u bytes",
		    (unsigned long long)s->slot_bytes,
		    (unsigned long long)s->elems_per_slot, s->elem_bytes);
	if (__builtin_mul_overflow(s->slot_bytes, (uint64_t)s->ppb, &need) ||
	    need != s->tensor_bytes || need > (uint64_t)PROTO_JSON_INT_MAX)
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "tensor_bytes is not ppb x slot_bytes");
	if (s->buf_stride < s->tensor_bytes ||
	    __builtin_mul_overflow(s->buf_stride, (uint64_t)(s->nbufs - 1),
	    &last) ||
	    __builtin_add_overflow(last, s->buf_offset, &last) ||
	    __builtin_add_overflow(last, s->tensor_bytes, &end) ||
	    end > s->map_bytes || s->map_bytes > (uint64_t)PROTO_JSON_INT_MAX)
		return daqiri_err_set(err, DAQIRI_ST_OUT_OF_RANGE,
		    "buffers do not fit in map_bytes");
	bmw = ((uint64_t)s->ppb + 63) / 64 * 8;
	if (s->kind == DAQIRI_STREAM_RAW)
		bmw += (uint64_t)s->ppb * 4;
	if (s->bitmap_bytes % 8 != 0 || s->bitmap_bytes < bmw)
		return daqiri_err_set(err, DAQIRI_ST_OUT_OF_RANGE,
		    "bitmap_bytes %u, need a multiple of 8 >= %llu",
		    s->bitmap_bytes, (unsigned long long)bmw);
	if (daqiri_ring_size(s->ring_depth) == 0 || s->ring_depth < s->nbufs ||
	    s->ring_bytes != daqiri_ring_size(s->ring_depth))
		return daqiri_err_set(err, DAQIRI_ST_OUT_OF_RANGE,
		    "ring depth %u for %u buffers", s->ring_depth, s->nbufs);
	if (s->max_held < 1 || s->max_held > s->nbufs)
		return daqiri_err_set(err, DAQIRI_ST_OUT_OF_RANGE,
		    "max_held %u not in 1..%u", s->max_held, s->nbufs);
	if (s->nfds != DAQIRI_SUB_MAX_FDS)
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "%u fds, expected %d", s->nfds, DAQIRI_SUB_MAX_FDS);
	for (i = 0; i < s->nfds; i++) {
		static const enum daqiri_fd_kind order[] = {
			DAQIRI_FD_TENSOR, DAQIRI_FD_BITMAP, DAQIRI_FD_RING,
			DAQIRI_FD_WAKE
		};
		enum daqiri_fd_kind want = order[i];

		if (i == 0 && dev)
			want = DAQIRI_FD_IPC;
		if (s->fds[i] != want)
			return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
			    "fd %u must be \"%s\"", i,
			    daqiri_fd_kind_name(want));
	}
	return 0;
}

/* The "fds" list of a reply: the kinds of the fds that follow it. */
static int
fds_encode(cJSON *o, const enum daqiri_fd_kind *fds, uint32_t n)
{
	cJSON *a = cJSON_AddArrayToObject(o, "fds");

	if (a == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		if (!cJSON_AddItemToArray(a,
		    cJSON_CreateString(daqiri_fd_kind_name(fds[i]))))
			return -ENOMEM;
	return 0;
}

static int
fds_decode(const cJSON *o, enum daqiri_fd_kind *fds, uint32_t *n,
	   struct daqiri_err *err)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "fds"), *e;
	int k;

	if (!cJSON_IsArray(a))
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "field \"fds\" must be a list");
	cJSON_ArrayForEach(e, a) {
		if (*n == DAQIRI_SUB_MAX_FDS || !cJSON_IsString(e))
			return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
			    "field \"fds\": at most %d fd kind names",
			    DAQIRI_SUB_MAX_FDS);
		k = proto_fd_kind_parse(e->valuestring);
		if (k < 0)
			return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
			    "field \"fds\": unknown kind");
		fds[(*n)++] = (enum daqiri_fd_kind)k;
	}
	return 0;
}

int
daqiri_sub_info_encode(const struct daqiri_sub_info *s, cJSON *o)
{
	struct daqiri_err err;

	if (daqiri_sub_info_check(s, &err) < 0)
		return -EINVAL;
#define NUM(k, v) (cJSON_AddNumberToObject(o, (k), (double)(v)) == NULL)
#define STR(k, v) (cJSON_AddStringToObject(o, (k), (v)) == NULL)
	if (NUM("sub", s->sub_id) || STR("stream", s->stream) ||
	    STR("kind", daqiri_stream_kind_name(s->kind)) ||
	    STR("mode", daqiri_sub_mode_name(s->mode)) ||
	    (s->mode == DAQIRI_SUB_SHARED && STR("group", s->group)) ||
	    STR("policy", daqiri_sub_policy_name(s->policy)) ||
	    STR("memory", daqiri_mem_kind_name(s->mem_kind)) ||
	    NUM("device", s->device) ||
	    STR("dtype", daqiri_dtype_name(s->dtype)) ||
	    STR("fill", daqiri_fill_name(s->fill)) ||
	    NUM("elem_bytes", s->elem_bytes) || NUM("nbufs", s->nbufs) ||
	    NUM("ppb", s->ppb) || NUM("slot_bytes", s->slot_bytes) ||
	    NUM("elems_per_slot", s->elems_per_slot) ||
	    NUM("tensor_bytes", s->tensor_bytes) ||
	    NUM("buf_offset", s->buf_offset) ||
	    NUM("buf_stride", s->buf_stride) ||
	    NUM("map_bytes", s->map_bytes) ||
	    NUM("bitmap_bytes", s->bitmap_bytes) ||
	    NUM("ring_depth", s->ring_depth) ||
	    NUM("ring_bytes", s->ring_bytes) || NUM("max_held", s->max_held))
		return -ENOMEM;
#undef NUM
#undef STR
	return fds_encode(o, s->fds, s->nfds);
}

int
daqiri_sub_info_decode(const cJSON *o, struct daqiri_sub_info *s,
		       struct daqiri_err *err)
{
	const cJSON *e;
	uint64_t v;
	int k;

	memset(s, 0, sizeof(*s));
	if (!cJSON_IsObject(o))
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD, "not an object");
	if (get_u32(o, "sub", true, 1, UINT32_MAX, &s->sub_id, err) < 0 ||
	    get_str(o, "stream", true, sizeof(s->stream), STR_PATH_NAME,
	    s->stream, err) < 0)
		return -1;
	if (get_enum(o, "kind", true, proto_stream_kind_parse, &k, err) < 0)
		return -1;
	s->kind = (enum daqiri_stream_kind)k;
	if (get_enum(o, "mode", true, proto_sub_mode_parse, &k, err) < 0)
		return -1;
	s->mode = (enum daqiri_sub_mode)k;
	if (s->mode == DAQIRI_SUB_SHARED && get_str(o, "group", true,
	    sizeof(s->group), STR_NAME, s->group, err) < 0)
		return -1;
	k = DAQIRI_POLICY_LATEST;
	if (get_enum(o, "policy", false, proto_sub_policy_parse, &k, err) < 0)
		return -1;
	s->policy = (enum daqiri_sub_policy)k;
	if (get_enum(o, "memory", true, proto_mem_kind_parse, &k, err) < 0)
		return -1;
	s->mem_kind = (enum daqiri_mem_kind)k;
	if (get_enum(o, "dtype", true, proto_dtype_parse, &k, err) < 0)
		return -1;
	s->dtype = (enum daqiri_dtype)k;
	if (get_enum(o, "fill", true, proto_fill_parse, &k, err) < 0)
		return -1;
	s->fill = (enum daqiri_fill)k;
	e = cJSON_GetObjectItemCaseSensitive(o, "device");
	if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) ||
	    e->valuedouble < -1 || e->valuedouble > 1023)
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "field \"device\" must be -1..1023");
	s->device = (int32_t)e->valuedouble;
	if (get_u32(o, "elem_bytes", true, 0, 8, &s->elem_bytes, err) < 0 ||
	    get_u32(o, "nbufs", true, 1, DAQIRI_NBUFS_MAX, &s->nbufs, err) < 0 ||
	    get_u32(o, "ppb", true, 1, DAQIRI_PPB_MAX, &s->ppb, err) < 0 ||
	    get_u64(o, "slot_bytes", &s->slot_bytes, err) < 0 ||
	    get_u64(o, "elems_per_slot", &s->elems_per_slot, err) < 0 ||
	    get_u64(o, "tensor_bytes", &s->tensor_bytes, err) < 0 ||
	    get_u64(o, "buf_offset", &s->buf_offset, err) < 0 ||
	    get_u64(o, "buf_stride", &s->buf_stride, err) < 0 ||
	    get_u64(o, "map_bytes", &s->map_bytes, err) < 0 ||
	    get_u32(o, "bitmap_bytes", true, 8, UINT32_MAX, &s->bitmap_bytes,
	    err) < 0 ||
	    get_u32(o, "ring_depth", true, DAQIRI_RING_DEPTH_MIN,
	    DAQIRI_RING_DEPTH_MAX, &s->ring_depth, err) < 0 ||
	    get_u64(o, "ring_bytes", &v, err) < 0 ||
	    get_u32(o, "max_held", true, 1, DAQIRI_NBUFS_MAX, &s->max_held,
	    err) < 0)
		return -1;
	s->ring_bytes = v;
	if (fds_decode(o, s->fds, &s->nfds, err) < 0)
		return -1;
	return daqiri_sub_info_check(s, err);
}


/* ---- TX channels (PROTOCOL.md "TX channels") */

static int
tx_open_decode(const cJSON *o, struct daqiri_tx_req *t, struct daqiri_err *err)
{
	if (get_str(o, "queue", true, sizeof(t->queue), STR_PATH_NAME,
	    t->queue, err) < 0 ||
	    get_u32(o, "nbufs", false, 0, DAQIRI_TX_NBUFS_MAX, &t->nbufs,
	    err) < 0)
		return -1;
	return 0;
}

int
daqiri_tx_req_encode(const struct daqiri_tx_req *req, cJSON *obj)
{
	if (req == NULL || obj == NULL ||
	    !str_ok(req->queue, sizeof(req->queue), true) ||
	    req->nbufs > DAQIRI_TX_NBUFS_MAX)
		return -EINVAL;
	if (cJSON_AddStringToObject(obj, "queue", req->queue) == NULL ||
	    (req->nbufs != 0 && cJSON_AddNumberToObject(obj, "nbufs",
	    (double)req->nbufs) == NULL))
		return -ENOMEM;
	return 0;
}

int
daqiri_tx_info_check(const struct daqiri_tx_info *t, struct daqiri_err *err)
{
	enum daqiri_fd_kind want[] = {
		DAQIRI_FD_TX_RING, DAQIRI_FD_TX_POOL, DAQIRI_FD_WAKE,
	};
	uint32_t stride;
	uint64_t pool;

	if (t->tx_id == 0)
		return daqiri_err_set(err, DAQIRI_ST_OUT_OF_RANGE, "tx id 0");
	if (!str_ok(t->queue, sizeof(t->queue), true))
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "bad queue name");
	if (!daqiri_tx_pool_geometry(t->nbufs, t->buf_size, &stride, &pool) ||
	    t->buf_stride != stride || t->pool_bytes != pool)
		return daqiri_err_set(err, DAQIRI_ST_OUT_OF_RANGE,
		    "pool of %u buffers of %u bytes (stride %u, %llu bytes) "
		    "is not consistent", t->nbufs, t->buf_size,
		    t->buf_stride, (unsigned long long)t->pool_bytes);
	if (t->ring_depth != daqiri_txring_depth(t->nbufs) ||
	    t->ring_bytes != daqiri_txring_size(t->ring_depth))
		return daqiri_err_set(err, DAQIRI_ST_OUT_OF_RANGE,
		    "ring depth %u / %llu bytes for %u buffers", t->ring_depth,
		    (unsigned long long)t->ring_bytes, t->nbufs);
	/* A pool is a host memfd or one device allocation: nothing else. */
	if (t->mem_kind != DAQIRI_MEM_HOST && t->mem_kind != DAQIRI_MEM_DEVICE)
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "a TX pool in %s memory", (unsigned)t->mem_kind <
		    DAQIRI_MEM_MAX ? daqiri_mem_kind_name(t->mem_kind) :
		    "unknown");
	if (t->mem_kind == DAQIRI_MEM_DEVICE ? t->device < 0 ||
	    t->device > DAQIRI_TX_DEVICE_MAX : t->device != -1)
		return daqiri_err_set(err, DAQIRI_ST_OUT_OF_RANGE,
		    "device %d for a TX pool in %s memory", t->device,
		    daqiri_mem_kind_name(t->mem_kind));
	if (t->mem_kind == DAQIRI_MEM_DEVICE)
		want[1] = DAQIRI_FD_IPC;
	if (t->nfds != (sizeof(want) / sizeof(want[0])))
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "a channel has %u fds, not %u", t->nfds,
		    (unsigned)(sizeof(want) / sizeof(want[0])));
	for (uint32_t i = 0; i < t->nfds; i++)
		if (t->fds[i] != want[i])
			return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
			    "fd %u is %s, not %s", i,
			    daqiri_fd_kind_name(t->fds[i]),
			    daqiri_fd_kind_name(want[i]));
	return 0;
}

int
daqiri_tx_info_encode(const struct daqiri_tx_info *t, cJSON *o)
{
	struct daqiri_err err;

	if (daqiri_tx_info_check(t, &err) < 0)
		return -EINVAL;
#define NUM(k, v) (cJSON_AddNumberToObject(o, (k), (double)(v)) == NULL)
	if (NUM("tx", t->tx_id) ||
	    cJSON_AddStringToObject(o, "queue", t->queue) == NULL ||
	    NUM("nbufs", t->nbufs) || NUM("buf_size", t->buf_size) ||
	    NUM("buf_stride", t->buf_stride) ||
	    NUM("pool_bytes", t->pool_bytes) ||
	    NUM("ring_depth", t->ring_depth) ||
	    NUM("ring_bytes", t->ring_bytes) ||
	    cJSON_AddStringToObject(o, "memory",
		daqiri_mem_kind_name(t->mem_kind)) == NULL ||
	    (t->mem_kind == DAQIRI_MEM_DEVICE && NUM("device", t->device)))
		return -ENOMEM;
#undef NUM
	return fds_encode(o, t->fds, t->nfds);
}

int
daqiri_tap_info_encode(const struct daqiri_tap_info *t, cJSON *o)
{
	static const enum daqiri_fd_kind kinds[] = { DAQIRI_FD_TAP_RING };

#define NUM(k, v) (cJSON_AddNumberToObject(o, (k), (double)(v)) == NULL)
	if (NUM("gen", t->gen) || NUM("records", t->records) ||
	    NUM("record_bytes", t->record_bytes) ||
	    NUM("data_max", t->data_max) || NUM("ring_bytes", t->ring_bytes))
		return -ENOMEM;
#undef NUM
	return fds_encode(o, kinds, 1);
}

int
daqiri_tap_info_decode(const cJSON *o, struct daqiri_tap_info *t,
		       struct daqiri_err *err)
{
	enum daqiri_fd_kind kinds[DAQIRI_SUB_MAX_FDS];
	uint32_t n = 0;

	memset(t, 0, sizeof(*t));
	if (!cJSON_IsObject(o))
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD, "not an object");
	if (get_u32(o, "gen", true, 1, UINT16_MAX, &t->gen, err) < 0 ||
	    get_u32(o, "records", true, DAQIRI_TAPRING_RECORDS,
	    DAQIRI_TAPRING_RECORDS, &t->records, err) < 0 ||
	    get_u32(o, "record_bytes", true, DAQIRI_TAPRING_REC_BYTES,
	    DAQIRI_TAPRING_REC_BYTES, &t->record_bytes, err) < 0 ||
	    get_u32(o, "data_max", true, DAQIRI_TAP_SNAP_MAX,
	    DAQIRI_TAP_SNAP_MAX, &t->data_max, err) < 0 ||
	    get_u64(o, "ring_bytes", &t->ring_bytes, err) < 0 ||
	    fds_decode(o, kinds, &n, err) < 0)
		return -1;
	if (t->ring_bytes != DAQIRI_TAPRING_BYTES)
		return daqiri_err_set(err, DAQIRI_ST_OUT_OF_RANGE,
		    "field \"ring_bytes\": %llu, not %zu",
		    (unsigned long long)t->ring_bytes, DAQIRI_TAPRING_BYTES);
	if (n != 1 || kinds[0] != DAQIRI_FD_TAP_RING)
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "field \"fds\": a tap's is [\"tap_ring\"]");
	return 0;
}

int
daqiri_tx_info_decode(const cJSON *o, struct daqiri_tx_info *t,
		      struct daqiri_err *err)
{
	uint32_t dev = 0;
	int k;

	memset(t, 0, sizeof(*t));
	if (!cJSON_IsObject(o))
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD, "not an object");
	if (get_u32(o, "tx", true, 1, UINT32_MAX, &t->tx_id, err) < 0 ||
	    get_str(o, "queue", true, sizeof(t->queue), STR_PATH_NAME,
	    t->queue, err) < 0 ||
	    get_u32(o, "nbufs", true, 1, DAQIRI_TX_NBUFS_MAX, &t->nbufs,
	    err) < 0 ||
	    get_u32(o, "buf_size", true, 1, UINT32_MAX, &t->buf_size,
	    err) < 0 ||
	    get_u32(o, "buf_stride", true, 1, UINT32_MAX, &t->buf_stride,
	    err) < 0 ||
	    get_u64(o, "pool_bytes", &t->pool_bytes, err) < 0 ||
	    get_u32(o, "ring_depth", true, 2, DAQIRI_TX_NBUFS_MAX,
	    &t->ring_depth, err) < 0 ||
	    get_u64(o, "ring_bytes", &t->ring_bytes, err) < 0)
		return -1;
	/* "memory" absent: a daemon from before device pools, host */
	k = DAQIRI_MEM_HOST;
	if (get_enum(o, "memory", false, proto_mem_kind_parse, &k, err) < 0)
		return -1;
	t->mem_kind = (enum daqiri_mem_kind)k;
	t->device = -1;
	if (t->mem_kind == DAQIRI_MEM_DEVICE) {
		if (get_u32(o, "device", true, 0, DAQIRI_TX_DEVICE_MAX, &dev,
		    err) < 0)
			return -1;
		t->device = (int32_t)dev;
	}
	if (fds_decode(o, t->fds, &t->nfds, err) < 0)
		return -1;
	return daqiri_tx_info_check(t, err);
}

/* ---- printing */

int
daqiri_msg_print(const cJSON *obj, char *buf, size_t cap)
{
	char *s = cJSON_PrintUnformatted((cJSON *)obj);
	size_t n;

	if (s == NULL)
		return -ENOMEM;
	n = strlen(s);
	if (n >= cap || n > DAQIRI_MSG_SIZE_MAX) {
		cJSON_free(s);
		return -EMSGSIZE;
	}
	memcpy(buf, s, n + 1);
	cJSON_free(s);
	return (int)n;
}
