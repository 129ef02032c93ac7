/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Replies in parts (proto.h, PROTOCOL.md "Replies in parts"): a reply too
 * big for one message split into a numbered series, and the series joined
 * again on the receiving side.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

/* A growing text buffer; on allocation failure it stays failed. */
struct sbuf {
	char *p;
	size_t len, cap;
	bool failed;
};

static void
sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap != 0 ? b->cap : 256;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (p == NULL) {
			b->failed = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void
sb_str(struct sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

void
daqiri_parts_free(struct daqiri_part *p, int n)
{
	int i;

	if (p == NULL)
		return;
	for (i = 0; i < n; i++)
		free(p[i].text);
	free(p);
}

static bool
is_envelope(const char *key)
{
	return strcmp(key, "type") == 0 || strcmp(key, "re") == 0 ||
	    strcmp(key, "id") == 0 || strcmp(key, "status") == 0;
}

/* The members of o (all, or the envelope only) printed without braces:
 * "\"a\":1,\"b\":2", malloc'd; NULL on failure. */
static char *
members_text(const cJSON *o, bool envelope_only, bool skip_arrays)
{
	cJSON *x = cJSON_CreateObject(), *c;
	const cJSON *m;
	char *s, *inner;
	size_t n;

	if (x == NULL)
		return NULL;
	cJSON_ArrayForEach(m, o) {
		if (m->string == NULL || (skip_arrays && cJSON_IsArray(m)) ||
		    (envelope_only && !is_envelope(m->string)))
			continue;
		c = cJSON_Duplicate(m, true);
		/* (adding copies the name: it can fail too) */
		if (c == NULL || !cJSON_AddItemToObject(x, m->string, c)) {
			cJSON_Delete(c);
			cJSON_Delete(x);
			return NULL;
		}
	}
	s = cJSON_PrintUnformatted(x);
	cJSON_Delete(x);
	if (s == NULL)
		return NULL;
	n = strlen(s);
	inner = malloc(n);
	if (inner != NULL) {
		/* strip "{" and "}" */
		memcpy(inner, s + 1, n - 2);
		inner[n - 2] = '\0';
	}
	cJSON_free(s);
	return inner;
}

/* One top-level array of the reply, its key printed and its elements. */
struct split_arr {
	char *key;		/* "\"name\"" */
	int n;
	char **el;
	size_t *len;
};

/* Longest ,"part":N,"more":false and "}" */
#define SPLIT_TAIL_MAX	40

int
daqiri_reply_split(const cJSON *reply, size_t max, struct daqiri_part **out)
{
	struct split_arr *arr = NULL;
	struct daqiri_part *parts = NULL;
	char *whole, *head0 = NULL, *headn = NULL;
	const cJSON *m, *e;
	int narr = 0, nparts = 0, r = -ENOMEM, k, j;
	int *from = NULL, *to = NULL;
	size_t base0, basen;

	*out = NULL;
	if (!cJSON_IsObject(reply) || max > DAQIRI_MSG_SIZE_MAX)
		return -EINVAL;
	/* Parts are joined by member name: each must be one member. */
	cJSON_ArrayForEach(m, reply)
		for (e = reply->child; e != m; e = e->next)
			if (m->string == NULL || e->string == NULL ||
			    strcmp(m->string, e->string) == 0)
				return -EINVAL;
	whole = cJSON_PrintUnformatted((cJSON *)reply);
	if (whole == NULL)
		return -ENOMEM;
	if (strlen(whole) <= max) {
		parts = calloc(1, sizeof(*parts));
		if (parts == NULL || (parts[0].text = strdup(whole)) == NULL) {
			free(parts);
			cJSON_free(whole);
			return -ENOMEM;
		}
		parts[0].len = strlen(whole);
		cJSON_free(whole);
		*out = parts;
		return 1;
	}
	cJSON_free(whole);

	cJSON_ArrayForEach(m, reply)
		if (cJSON_IsArray(m))
			narr++;
	arr = calloc((size_t)narr + 1, sizeof(*arr));
	if (arr == NULL)
		return -ENOMEM;
	k = 0;
	cJSON_ArrayForEach(m, reply) {
		cJSON *ks;

		if (!cJSON_IsArray(m) || m->string == NULL)
			continue;
		ks = cJSON_CreateString(m->string);
		arr[k].key = ks != NULL ? cJSON_PrintUnformatted(ks) : NULL;
		cJSON_Delete(ks);
		arr[k].n = cJSON_GetArraySize(m);
		arr[k].el = calloc((size_t)arr[k].n + 1, sizeof(char *));
		arr[k].len = calloc((size_t)arr[k].n + 1, sizeof(size_t));
		if (arr[k].key == NULL || arr[k].el == NULL ||
		    arr[k].len == NULL)
			goto out;
		j = 0;
		cJSON_ArrayForEach(e, m) {
			arr[k].el[j] = cJSON_PrintUnformatted((cJSON *)e);
			if (arr[k].el[j] == NULL)
				goto out;
			arr[k].len[j] = strlen(arr[k].el[j]);
			j++;
		}
		k++;
	}
	narr = k;
	head0 = members_text(reply, false, true);
	headn = members_text(reply, true, true);
	if (head0 == NULL || headn == NULL)
		goto out;
	base0 = 1 + strlen(head0) + SPLIT_TAIL_MAX;
	basen = 1 + strlen(headn) + SPLIT_TAIL_MAX;
	/* Part 0 names every array, so empty ones survive the trip. */
	for (k = 0; k < narr; k++)
		base0 += strlen(arr[k].key) + 4;
	r = -EMSGSIZE;
	if (base0 > max)
		goto out;
	parts = calloc(DAQIRI_REPLY_PARTS_MAX, sizeof(*parts));
	if (parts == NULL) {
		r = -ENOMEM;
		goto out;
	}
	from = calloc((size_t)narr + 1, sizeof(int));
	to = calloc((size_t)narr + 1, sizeof(int));
	if (from == NULL || to == NULL) {
		r = -ENOMEM;
		goto out;
	}
	k = 0;
	j = 0;
	for (;;) {
		struct sbuf b = { NULL, 0, 0, false };
		size_t used = nparts == 0 ? base0 : basen;
		char tail[SPLIT_TAIL_MAX + 1];
		bool any = false;

		for (int kk = 0; kk < narr; kk++)
			from[kk] = to[kk] = -1;
		/* Take elements in order while they fit. */
		while (k < narr) {
			size_t need;

			if (j == arr[k].n) {
				k++;
				j = 0;
				continue;
			}
			need = arr[k].len[j] + 1;
			/* part 0 named every array already */
			if (nparts > 0 && from[k] < 0)
				need += strlen(arr[k].key) + 4;
			if (used + need > max)
				break;
			used += need;
			if (from[k] < 0)
				from[k] = j;
			to[k] = ++j;
			any = true;
		}
		if (!any && k < narr) {
			r = -EMSGSIZE;	/* one element alone is too big */
			goto out;
		}
		while (k < narr && j == arr[k].n) {
			k++;
			j = 0;
		}
		if (nparts == DAQIRI_REPLY_PARTS_MAX) {
			r = -EMSGSIZE;
			goto out;
		}
		sb_str(&b, "{");
		sb_str(&b, nparts == 0 ? head0 : headn);
		snprintf(tail, sizeof(tail), ",\"part\":%d,\"more\":%s", nparts,
		    k < narr ? "true" : "false");
		sb_str(&b, tail);
		for (int kk = 0; kk < narr; kk++) {
			if (nparts > 0 && from[kk] < 0)
				continue;
			sb_str(&b, ",");
			sb_str(&b, arr[kk].key);
			sb_str(&b, ":[");
			for (int x = from[kk]; from[kk] >= 0 && x < to[kk]; x++) {
				if (x > from[kk])
					sb_str(&b, ",");
				sb_add(&b, arr[kk].el[x], arr[kk].len[x]);
			}
			sb_str(&b, "]");
		}
		sb_str(&b, "}");
		if (b.failed || b.len > max) {
			free(b.p);
			r = b.failed ? -ENOMEM : -EMSGSIZE;
			goto out;
		}
		parts[nparts].text = b.p;
		parts[nparts++].len = b.len;
		if (k >= narr)
			break;
	}
	*out = parts;
	parts = NULL;
	r = nparts;
out:
	if (r < 0)
		daqiri_parts_free(parts, nparts);
	for (k = 0; k < narr; k++) {
		for (j = 0; arr[k].el != NULL && j < arr[k].n; j++)
			cJSON_free(arr[k].el[j]);
		cJSON_free(arr[k].key);
		free(arr[k].el);
		free(arr[k].len);
	}
	free(arr);
	free(from);
	free(to);
	free(head0);
	free(headn);
	return r;
}

/* The values of the list from c on, and all below them: siblings
 * iteratively, children by recursion (cJSON's parser bounds the depth). */
static size_t
json_list_items(const cJSON *c)
{
	size_t n = 0;

	for (; c != NULL; c = c->next)
		n += 1 + json_list_items(c->child);
	return n;
}

size_t
daqiri_json_items(const cJSON *v)
{
	return v != NULL ? 1 + json_list_items(v->child) : 0;
}

int
daqiri_reply_merge(cJSON **acc, struct daqiri_msg *m, size_t total,
		   struct daqiri_err *err)
{
	const cJSON *p, *q, *re0, *re1, *id0, *id1;
	cJSON *x, *dst;

	if (m->type != DAQIRI_MSG_REPLY || !m->u.reply.has_part ||
	    m->json == NULL)
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "not a part of a reply");
	if (total > DAQIRI_REPLY_BYTES_MAX)
		return daqiri_err_set(err, DAQIRI_ST_TOO_BIG,
		    "reply over %zu bytes", DAQIRI_REPLY_BYTES_MAX);
	if (*acc == NULL) {
		if (m->u.reply.part != 0)
			return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
			    "reply part %u without part 0", m->u.reply.part);
		*acc = m->json;
		m->json = NULL;
		goto done;
	}
	p = cJSON_GetObjectItemCaseSensitive(*acc, "part");
	if (!daqiri_json_int_in(p, 0, UINT32_MAX - 1) ||
	    m->u.reply.part != (uint32_t)p->valuedouble + 1)
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "reply part %u out of order", m->u.reply.part);
	re0 = cJSON_GetObjectItemCaseSensitive(*acc, "re");
	re1 = cJSON_GetObjectItemCaseSensitive(m->json, "re");
	id0 = cJSON_GetObjectItemCaseSensitive(*acc, "id");
	id1 = cJSON_GetObjectItemCaseSensitive(m->json, "id");
	/* (cJSON_Compare calls two absent members different) */
	if ((re0 == NULL) != (re1 == NULL) || (id0 == NULL) != (id1 == NULL) ||
	    (re0 != NULL && !cJSON_Compare(re0, re1, true)) ||
	    (id0 != NULL && !cJSON_Compare(id0, id1, true)))
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "reply part %u answers another request", m->u.reply.part);
	/* Check everything before moving anything. */
	cJSON_ArrayForEach(q, m->json) {
		if (is_envelope(q->string) || strcmp(q->string, "part") == 0 ||
		    strcmp(q->string, "more") == 0)
			continue;
		dst = cJSON_GetObjectItemCaseSensitive(*acc, q->string);
		if (!cJSON_IsArray(q) || !cJSON_IsArray(dst))
			return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
			    "reply part %u: member \"%.40s\" is not an array "
			    "of part 0", m->u.reply.part, q->string);
	}
	for (q = m->json->child; q != NULL; q = q->next) {
		if (!cJSON_IsArray(q) || is_envelope(q->string))
			continue;
		dst = cJSON_GetObjectItemCaseSensitive(*acc, q->string);
		while ((x = cJSON_DetachItemFromArray((cJSON *)q, 0)) != NULL)
			cJSON_AddItemToArray(dst, x);
	}
	cJSON_ReplaceItemInObjectCaseSensitive(*acc, "part",
	    cJSON_CreateNumber(m->u.reply.part));
	cJSON_ReplaceItemInObjectCaseSensitive(*acc, "more",
	    cJSON_CreateBool(m->u.reply.more));
done:
	if (!m->u.reply.more) {
		cJSON_DeleteItemFromObjectCaseSensitive(*acc, "part");
		cJSON_DeleteItemFromObjectCaseSensitive(*acc, "more");
	}
	return 0;
}
