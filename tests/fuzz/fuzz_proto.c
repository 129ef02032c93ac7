/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for what the daemon and the client read from the
 * other side: the message decoder and validator, the subscribe-reply,
 * tx_open-reply and mapped tap-reply metadata, replies in parts (split and joined again;
 * a hostile part merged), and the subscription and TX ring operations on
 * hostile ring images. Built from the proto sources alone (libc and
 * cJSON).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "ring.h"
#include "txring.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Re-encode what decoded and decode it again: it must still pass. */
static void
roundtrip(const struct daqiri_msg *m)
{
	struct daqiri_msg m2;
	struct daqiri_err err;
	char *buf;
	cJSON *o = NULL;
	int n;

	switch (m->type) {
	case DAQIRI_MSG_SUBSCRIBE:
		o = daqiri_msg_new(m->type);
		if (o != NULL && daqiri_sub_req_encode(&m->u.sub, o) < 0)
			abort();
		break;
	case DAQIRI_MSG_FLOW_LIST:
	case DAQIRI_MSG_FLOW_ADD:
	case DAQIRI_MSG_FLOW_DEL:
		o = daqiri_msg_new(m->type);
		if (o != NULL && daqiri_flow_req_encode(m->type, &m->u.flow,
		    o) < 0)
			abort();
		break;
	case DAQIRI_MSG_TX_OPEN:
		o = daqiri_msg_new(m->type);
		if (o != NULL && daqiri_tx_req_encode(&m->u.tx, o) < 0)
			abort();
		break;
	case DAQIRI_MSG_REPLY:
		o = daqiri_reply_new(m->u.reply.re, m->has_id ? m->id : -1,
		    m->u.reply.status, m->u.reply.message);
		break;
	default:
		return;
	}
	if (o == NULL)
		return;
	buf = malloc(DAQIRI_MSG_SIZE_MAX + 1);
	n = buf != NULL ? daqiri_msg_print(o, buf, DAQIRI_MSG_SIZE_MAX + 1) :
	    -1;
	cJSON_Delete(o);
	if (n >= 0) {
		if (daqiri_msg_decode(buf, (size_t)n, &m2, &err) != 0)
			abort();
		if (m2.type != m->type)
			abort();
		if (m->type == DAQIRI_MSG_SUBSCRIBE &&
		    memcmp(&m2.u.sub, &m->u.sub, sizeof(m->u.sub)) != 0)
			abort();
		if (m->type == DAQIRI_MSG_TX_OPEN &&
		    memcmp(&m2.u.tx, &m->u.tx, sizeof(m->u.tx)) != 0)
			abort();
		if (m->type != DAQIRI_MSG_REPLY && m->type !=
		    DAQIRI_MSG_SUBSCRIBE && m->type != DAQIRI_MSG_TX_OPEN &&
		    memcmp(&m2.u.flow, &m->u.flow, sizeof(m->u.flow)) != 0)
			abort();
		daqiri_msg_free(&m2);
	}
	free(buf);
}

/* A decoded ok reply: split small and joined again it must be itself;
 * a part merges after a fixed part 0 or is refused, never crashes. */
static void
reply_parts(struct daqiri_msg *m)
{
	static const char p0[] = "{\"type\":\"reply\",\"re\":\"consumers\","
	    "\"status\":\"ok\",\"part\":0,\"more\":true,\"consumers\":[1],"
	    "\"streams\":[]}";
	struct daqiri_part *parts;
	struct daqiri_msg m0, pm;
	struct daqiri_err err;
	cJSON *acc = NULL;
	int n, i;

	if (m->type != DAQIRI_MSG_REPLY || m->u.reply.status != DAQIRI_ST_OK)
		return;
	if (m->u.reply.has_part) {
		if (daqiri_msg_decode(p0, sizeof(p0) - 1, &m0, &err) != 0 ||
		    daqiri_reply_merge(&acc, &m0, sizeof(p0), &err) != 0)
			abort();
		(void)daqiri_reply_merge(&acc, m, 2 * sizeof(p0), &err);
		cJSON_Delete(acc);
		daqiri_msg_free(&m0);
		return;
	}
	n = daqiri_reply_split(m->json, 1024, &parts);
	if (n < 0)
		return;
	for (i = 0; i < n; i++) {
		if (parts[i].len > 1024 ||
		    daqiri_msg_decode(parts[i].text, parts[i].len, &pm, &err) != 0)
			abort();
		if (n == 1) {
			acc = pm.json;
			pm.json = NULL;
		} else if (daqiri_reply_merge(&acc, &pm, 0, &err) != 0) {
			abort();
		}
		daqiri_msg_free(&pm);
	}
	/* Compared as printed, member by member: cJSON_Compare calls
	 * objects with a repeated name (inside elements) different. */
	if (acc == NULL || cJSON_GetArraySize(acc) != cJSON_GetArraySize(m->json))
		abort();
	for (const cJSON *x = m->json->child; x != NULL; x = x->next) {
		const cJSON *y = cJSON_GetObjectItemCaseSensitive(acc, x->string);
		char *a = cJSON_PrintUnformatted(x);
		char *b = y != NULL ? cJSON_PrintUnformatted(y) : NULL;

		/* every member of the reply is in the joined one, equal */
		if (y == NULL || (a != NULL && b != NULL && strcmp(a, b) != 0))
			abort();
		cJSON_free(a);
		cJSON_free(b);
	}
	cJSON_Delete(acc);
	daqiri_parts_free(parts, n);
}

/* The input as a ring image, with a daemon handle made before the
 * "consumer" scribbled over the shared part. */
static void
ring_ops(const uint8_t *data, size_t size)
{
	static _Alignas(64) uint8_t mem[8192];
	struct daqiri_ring d, c;
	struct daqiri_desc desc;
	uint32_t idx;
	size_t i;
	int k;

	if (daqiri_ring_init(&d, mem, sizeof(mem), 8, 4) != 0)
		abort();
	memcpy(mem, data, size < sizeof(mem) ? size : sizeof(mem));
	memset(&desc, 0x5a, sizeof(desc));
	for (k = 0; k < 20; k++) {
		if (daqiri_comp_push(&d, &desc) < -200)
			abort();
		if (daqiri_rel_pop(&d, &idx) < -200)
			abort();
		if (daqiri_comp_pending(&d) > d.depth)
			abort();
	}
	/* The consumer side on the image as it is. */
	if (daqiri_ring_attach(&c, mem, sizeof(mem)) == 0) {
		for (i = 0; i < 20; i++) {
			if (daqiri_comp_pop(&c, &desc) < 0)
				break;
			daqiri_rel_push(&c, (uint32_t)i);
		}
	}
}

/* The same for a TX ring: the daemon's handle made first, then the
 * "consumer" wrote the image; each side's operations on it stay in
 * bounds and report impossible positions. */
static void
txring_ops(const uint8_t *data, size_t size)
{
	static _Alignas(64) uint8_t mem[8192];
	struct daqiri_txring d, c;
	struct daqiri_tx_sub sub;
	struct daqiri_tx_comp comp;
	int k;

	if (daqiri_txring_init(&d, mem, sizeof(mem), 8, 1500) != 0)
		abort();
	memcpy(mem, data, size < sizeof(mem) ? size : sizeof(mem));
	for (k = 0; k < 20; k++) {
		int r = daqiri_tx_sub_pop(&d, &sub);
		int p = daqiri_tx_comp_push(&d, (uint32_t)k, DAQIRI_TX_SENT);
		int a;

		/* the only answers each may give */
		if ((r != 1 && r != 0 && r != -EPROTO) ||
		    (p != 0 && p != -ENOSPC && p != -EPROTO))
			abort();
		if (daqiri_tx_sub_pending(&d) > d.depth)
			abort();
		(void)daqiri_txring_wake_wanted(&d);
		a = daqiri_txring_arm_kick(&d);
		if (a != 0 && a != 1 && a != -EPROTO)
			abort();
	}
	if (daqiri_txring_attach(&c, mem, sizeof(mem)) == 0) {
		if (c.depth > 512 || c.nbufs > c.depth)
			abort();
		for (k = 0; k < 20; k++) {
			if (daqiri_tx_comp_pop(&c, &comp) < 0)
				break;
			(void)daqiri_tx_sub_push(&c, (uint32_t)k, 1);
		}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct daqiri_tap_info pinfo, pinfo2;
	struct daqiri_tx_info tinfo;
	struct daqiri_sub_info info;
	struct daqiri_msg m;
	struct daqiri_err err;

	if (daqiri_msg_decode((const char *)data, size, &m, &err) == 0) {
		if (m.type == DAQIRI_MSG_REPLY &&
		    daqiri_sub_info_decode(m.json, &info, &err) == 0) {
			cJSON *o = cJSON_CreateObject();

			if (daqiri_sub_info_check(&info, &err) != 0)
				abort();
			if (o != NULL && daqiri_sub_info_encode(&info, o) == -EINVAL)
				abort();
			cJSON_Delete(o);
		}
		if (m.type == DAQIRI_MSG_REPLY &&
		    daqiri_tx_info_decode(m.json, &tinfo, &err) == 0) {
			cJSON *o = cJSON_CreateObject();

			if (daqiri_tx_info_check(&tinfo, &err) != 0)
				abort();
			if (o != NULL && daqiri_tx_info_encode(&tinfo, o) == -EINVAL)
				abort();
			cJSON_Delete(o);
		}
		if (m.type == DAQIRI_MSG_REPLY &&
		    daqiri_tap_info_decode(m.json, &pinfo, &err) == 0) {
			cJSON *o = cJSON_CreateObject();

			/* what decodes encodes, and decodes the same */
			if (o != NULL && (daqiri_tap_info_encode(&pinfo, o) != 0 ||
			    daqiri_tap_info_decode(o, &pinfo2, &err) != 0 ||
			    memcmp(&pinfo, &pinfo2, sizeof(pinfo)) != 0))
				abort();
			cJSON_Delete(o);
		}
		roundtrip(&m);
		reply_parts(&m);
		daqiri_msg_free(&m);
	} else {
		if (err.status == DAQIRI_ST_OK || m.json != NULL)
			abort();
	}
	ring_ops(data, size);
	txring_ops(data, size);
	return 0;
}
