/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What daqiri-relay and a remote consumer (daqiri_connect("ucx://..."))
 * agree on, over UCP active messages (AMs) on one endpoint:
 *
 *   RELAY_AM_CTRL    both ways, payload = one JSON object, sent eager
 *                    (UCP_AM_SEND_FLAG_EAGER), at most DAQIRI_MSG_SIZE_MAX
 *                    bytes. After the relay's "challenge" and the
 *                    consumer's "auth", the control protocol's own
 *                    messages (proto.h): streams, subscribe, unsubscribe,
 *                    their replies (a long streams reply in parts) and
 *                    the sub_closed event, decoded by daqiri_msg_decode().
 *   RELAY_AM_TENSOR  relay -> consumer: header struct relay_tensor_hdr
 *                    and, when it fits the worker's largest AM header
 *                    (RELAY_TENSOR_META_IN_HDR), the tensor's meta
 *                    (bitmap, and for raw streams lengths and receive
 *                    times, relay_meta_bytes()) right after it; payload =
 *                    the data, tensor_bytes, one contiguous buffer (UCX
 *                    1.13 sends an IOV rendezvous about 3 times slower
 *                    over TCP). Otherwise the payload is meta then data.
 *                    Eager or rendezvous as UCX picks. Sent only against
 *                    a credit.
 *   RELAY_AM_CREDIT  consumer -> relay: header struct relay_credit, no
 *                    payload: "count more receive buffers of sub are free".
 *
 * Handshake: on connect the relay sends "challenge" {"version",
 * "nonce" (RELAY_NONCE_BYTES, hex), "auth" (whether a secret is
 * required), "instance" (the relay's generation, 16 hex digits)}; the
 * consumer answers "auth" {"version", "mac" (hex HMAC-SHA256 of
 * RELAY_MAC_LABEL || nonce under the shared secret; "" without one),
 * "client" (its name)}; the relay answers "auth_reply" {"status",
 * "message"} and, on anything but ok, closes the endpoint. Requests
 * before a good auth are refused (no_hello).
 *
 * Both ends are little-endian (x86-64, aarch64): the binary headers are
 * in host order and carry a magic that a big-endian or foreign peer
 * fails. Everything here is pure (libc, cJSON, OpenSSL's HMAC) and is
 * fuzzed alone (tests/fuzz/fuzz_relay.c).
 */
#ifndef DAQIRI_RELAY_WIRE_H
#define DAQIRI_RELAY_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "proto.h"

/* The relay protocol's version, in challenge and auth.
 *   1  first version: challenge/auth, the control protocol's streams,
 *      subscribe, unsubscribe and sub_closed, tensors against credits. */
#define RELAY_WIRE_VERSION	1

#define RELAY_DEFAULT_PORT	7250	/* ucx://HOST without :PORT */
#define RELAY_URL_PREFIX	"ucx://"

/* Active message ids. */
enum relay_am_id {
	RELAY_AM_CTRL = 1,
	RELAY_AM_TENSOR = 2,
	RELAY_AM_CREDIT = 3,
};

#define RELAY_NONCE_BYTES	32
#define RELAY_MAC_BYTES		32	/* HMAC-SHA256 */
#define RELAY_MAC_LABEL		"daqiri-relay auth v1"
#define RELAY_SECRET_MAX	4096	/* bytes of a secret file */
#define RELAY_SECRET_MIN	16	/* shorter is refused: guessable */

#define RELAY_TENSOR_MAGIC	0x44515431u	/* "DQT1" */
#define RELAY_CREDIT_MAGIC	0x44514331u	/* "DQC1" */

/* Flags of relay_tensor_hdr.relay_flags. */
enum relay_tensor_flag {
	/* the relay copied the device tensor into host memory to send it
	 * (no CUDA transport in its UCX): the data is host memory */
	RELAY_TENSOR_STAGED = 1u << 0,
	/* the meta follows the header in the AM header; the payload is the
	 * data alone */
	RELAY_TENSOR_META_IN_HDR = 1u << 1,
};
#define RELAY_TENSOR_FLAGS_ALL \
	((uint32_t)(RELAY_TENSOR_STAGED | RELAY_TENSOR_META_IN_HDR))

/* The header of a RELAY_AM_TENSOR: one published tensor's descriptor.
 * Fields as in struct daqiri_tensor; the meta and the data follow in the
 * payload. */
struct relay_tensor_hdr {
	uint32_t magic;			/* RELAY_TENSOR_MAGIC */
	uint32_t sub;			/* the consumer's subscription id */
	uint64_t seq;
	uint64_t batch_id;
	uint32_t flags;			/* enum daqiri_tensor_flag, as published
					 * (RESTART when the relay's daemon
					 * restarted) */
	uint32_t packets_expected;
	uint32_t packets_received;
	uint32_t buf_index;		/* the daemon's buffer index */
	uint64_t first_rx_ns;		/* the relay host's CLOCK_MONOTONIC */
	uint64_t last_rx_ns;
	uint64_t publish_ns;
	uint64_t instance;		/* the daemon's generation */
	uint64_t trig_count;		/* daqiri_sub_trigger() at send */
	uint64_t trig_ns;
	uint32_t relay_flags;		/* enum relay_tensor_flag */
	uint32_t meta_bytes;		/* relay_meta_bytes() of the stream */
	uint64_t data_bytes;		/* tensor_bytes of the stream */
};
_Static_assert(sizeof(struct relay_tensor_hdr) == 104,
	       "relay_tensor_hdr: fixed wire size");

/* A RELAY_AM_CREDIT header. */
struct relay_credit {
	uint32_t magic;			/* RELAY_CREDIT_MAGIC */
	uint32_t sub;
	uint32_t count;			/* 1..RELAY_SLOTS_MAX */
	uint32_t reserved;		/* 0 */
};

/* Receive buffers a remote subscription may have: bounds the relay's
 * credit count per subscription. */
#define RELAY_SLOTS_MAX		256u

/*
 * A tensor's meta, at the start of its payload: the presence bitmap
 * (ceil(ppb/64) uint64 words), then for raw streams ppb uint32 lengths
 * and, 8-aligned, ppb uint64 receive times (the daemon's sidecar layout,
 * DAQIRI_RAW_*_OFF), the whole rounded up to 64 bytes so the data that
 * follows it is aligned. 0 for ppb 0 or over DAQIRI_PPB_MAX.
 */
uint32_t relay_meta_bytes(uint32_t ppb, enum daqiri_stream_kind kind);

/*
 * Check a received tensor header against the subscription it names:
 * hlen the AM header's length, len the payload's. ppb, kind and
 * tensor_bytes are the subscription's. 0 with *out (the header's first
 * sizeof(*out) bytes; with RELAY_TENSOR_META_IN_HDR the meta is the rest
 * of the header), or -EBADMSG (wrong size or magic, header and payload
 * not laid out as the flags say, counts over ppb, received over
 * expected, an unknown flag).
 */
int relay_tensor_check(const void *hdr, size_t hlen, size_t len,
		       uint32_t ppb, enum daqiri_stream_kind kind,
		       uint64_t tensor_bytes, struct relay_tensor_hdr *out);

/* Check a received credit header: 0 with *out, or -EBADMSG. */
int relay_credit_check(const void *hdr, size_t hlen, size_t len,
		       struct relay_credit *out);

/* The relay's handshake messages (the rest is proto.h's). */
enum relay_ctrl_type {
	RELAY_CTRL_CHALLENGE,
	RELAY_CTRL_AUTH,
	RELAY_CTRL_AUTH_REPLY,
	RELAY_CTRL_PROTO,		/* a control protocol message: m.proto */
	RELAY_CTRL_MAX
};

struct relay_ctrl {
	enum relay_ctrl_type type;
	union {
		struct {
			uint8_t nonce[RELAY_NONCE_BYTES];
			bool auth;
			uint64_t instance;
		} challenge;
		struct {
			bool has_mac;
			uint8_t mac[RELAY_MAC_BYTES];
			char client[DAQIRI_NAME_MAX];
		} auth;
		struct {
			enum daqiri_status status;
			char message[DAQIRI_ERR_MSG_MAX];
		} auth_reply;
	} u;
	struct daqiri_msg proto;	/* RELAY_CTRL_PROTO; free with
					 * relay_ctrl_free() */
};

/*
 * Decode one RELAY_AM_CTRL payload (len <= DAQIRI_MSG_SIZE_MAX, not
 * NUL-terminated): challenge, auth and auth_reply here, in the control
 * protocol's order (size, JSON, type, version, fields), anything else by
 * daqiri_msg_decode(). 0 with *out, or -1 with *err; never reads past
 * len. Free with relay_ctrl_free().
 */
int relay_ctrl_decode(const char *buf, size_t len, struct relay_ctrl *out,
		      struct daqiri_err *err);
void relay_ctrl_free(struct relay_ctrl *m);

/* Encoders (cJSON_Delete the result; NULL: out of memory). mac NULL:
 * "mac":"" (no secret). */
cJSON *relay_challenge_new(const uint8_t nonce[RELAY_NONCE_BYTES], bool auth,
			   uint64_t instance);
cJSON *relay_auth_new(const uint8_t *mac, const char *client);
cJSON *relay_auth_reply_new(enum daqiri_status st, const char *message);

/*
 * A shared secret file: its bytes, a trailing newline dropped. 0 with
 * secret[0 .. *len), or a negative errno with err (len errlen) saying
 * what to do: -ENOENT/-EACCES (cannot read it), -EPERM (group or others
 * may read it: chmod 600), -EINVAL (shorter than RELAY_SECRET_MIN or
 * longer than RELAY_SECRET_MAX).
 */
int relay_secret_load(const char *path, uint8_t *secret, size_t *len,
		      char *err, size_t errlen);

/* HMAC-SHA256 of RELAY_MAC_LABEL || nonce under the secret: 0 or -EIO. */
int relay_mac(const uint8_t *secret, size_t slen,
	      const uint8_t nonce[RELAY_NONCE_BYTES],
	      uint8_t mac[RELAY_MAC_BYTES]);

/* Whether two MACs match, in constant time. */
bool relay_mac_equal(const uint8_t a[RELAY_MAC_BYTES],
		     const uint8_t b[RELAY_MAC_BYTES]);

/*
 * Parse "ucx://HOST[:PORT]" (HOST a name, an IPv4 address or an IPv6
 * one in brackets; PORT 1..65535, default RELAY_DEFAULT_PORT) into host
 * (hostlen bytes) and *port. 1 when url is a ucx:// URL and parsed, 0
 * when it is not one (a socket path), -EINVAL when it is one and is
 * malformed.
 */
int relay_url_parse(const char *url, char *host, size_t hostlen,
		    uint16_t *port);

#endif
