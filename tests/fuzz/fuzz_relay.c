/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for what daqiri-relay and a remote consumer read from
 * each other (client/relay_wire.c): control payloads (handshake messages
 * and, through them, the control protocol's), tensor headers against a
 * subscription's geometry, and credit headers. Built from relay_wire.c
 * and the proto sources (libc, cJSON, libcrypto).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "relay_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Re-encode a handshake message that decoded and decode it again: it
 * must still pass, with the same content. */
static void
roundtrip(const struct relay_ctrl *c)
{
	struct relay_ctrl c2;
	struct daqiri_err err;
	cJSON *o = NULL;
	char *t;

	switch (c->type) {
	case RELAY_CTRL_CHALLENGE:
		o = relay_challenge_new(c->u.challenge.nonce,
		    c->u.challenge.auth, c->u.challenge.instance);
		break;
	case RELAY_CTRL_AUTH:
		o = relay_auth_new(c->u.auth.has_mac ? c->u.auth.mac : NULL,
		    c->u.auth.client);
		break;
	case RELAY_CTRL_AUTH_REPLY:
		o = relay_auth_reply_new(c->u.auth_reply.status,
		    c->u.auth_reply.message);
		break;
	default:
		return;
	}
	if (o == NULL)
		return;
	t = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (t == NULL)
		return;
	if (relay_ctrl_decode(t, strlen(t), &c2, &err) < 0 ||
	    c2.type != c->type)
		abort();
	if (c->type == RELAY_CTRL_CHALLENGE &&
	    (memcmp(c2.u.challenge.nonce, c->u.challenge.nonce,
	     RELAY_NONCE_BYTES) != 0 ||
	     c2.u.challenge.instance != c->u.challenge.instance))
		abort();
	if (c->type == RELAY_CTRL_AUTH &&
	    (c2.u.auth.has_mac != c->u.auth.has_mac ||
	     strcmp(c2.u.auth.client, c->u.auth.client) != 0))
		abort();
	relay_ctrl_free(&c2);
	free(t);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct relay_tensor_hdr th;
	struct relay_credit cr;
	struct relay_ctrl c;
	struct daqiri_err err;
	uint32_t ppb;
	uint64_t tb;

	/* the whole input as a control payload */
	if (relay_ctrl_decode((const char *)data, size, &c, &err) == 0)
		roundtrip(&c);
	relay_ctrl_free(&c);

	/* a tensor header: its bytes, then a payload length and the
	 * subscription's geometry taken from what follows */
	if (size >= sizeof(th) + 16) {
		uint64_t len;

		memcpy(&len, data + sizeof(th), 8);
		memcpy(&ppb, data + sizeof(th) + 8, 4);
		ppb %= DAQIRI_PPB_MAX + 2;
		tb = (uint64_t)(data[sizeof(th) + 12] | data[sizeof(th) + 13]
		    << 8) * (ppb != 0 ? ppb : 1);
		if (relay_tensor_check(data, sizeof(th), len, ppb,
		    (enum daqiri_stream_kind)(data[sizeof(th) + 14] & 1), tb,
		    &th) == 0 &&
		    (th.packets_received > th.packets_expected ||
		     th.packets_expected > ppb ||
		     len != ((th.relay_flags & RELAY_TENSOR_META_IN_HDR) ?
		     0 : (uint64_t)th.meta_bytes) + tb))
			abort();
	}
	if (size >= 1)
		(void)relay_tensor_check(data, size - 1, data[size - 1], 1,
		    DAQIRI_STREAM_RAW, 1, &th);

	/* a credit header of any length */
	if (relay_credit_check(data, size, 0, &cr) == 0 &&
	    (cr.count == 0 || cr.count > RELAY_SLOTS_MAX || size != sizeof(cr)))
		abort();
	return 0;
}
