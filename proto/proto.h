/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control protocol both sides agree on: message types, the protocol
 * version, status codes, the validating decoder, the encoders and the fd
 * passing helpers (AF_UNIX SOCK_SEQPACKET, one JSON object per message,
 * at most one fd by SCM_RIGHTS). The catalogue is proto/PROTOCOL.md.
 * Implemented in proto_names.c (name tables, status codes), proto_msg.c
 * (decoder, encoders, subscribe and tx_open metadata), proto_parts.c (replies in
 * parts) and proto_wire.c (send, receive, fds). Depends on libc and cJSON
 * only (it is fuzzed alone).
 */
#ifndef DAQIRI_PROTO_H
#define DAQIRI_PROTO_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "daqiri_types.h"	/* the shared enums: dtype, mem kind, fill, mode */
#include "daqiri_limits.h"

/*
 * True when v is a JSON number that is a finite integer in [lo, hi], so
 * that casting it to an integer type holding that range is defined. A
 * reader of what a peer sent (a daemon, or an impostor on its socket)
 * asks this before every such cast: 1e400 or NaN cast to an integer is
 * undefined behaviour.
 */
static inline bool
daqiri_json_int_in(const cJSON *v, double lo, double hi)
{
	return cJSON_IsNumber(v) && isfinite(v->valuedouble) &&
	    v->valuedouble == floor(v->valuedouble) && v->valuedouble >= lo &&
	    v->valuedouble <= hi;
}

/* 2^64 as a double: the integers of [0, DAQIRI_JSON_U64_END) fit a
 * uint64_t (UINT64_MAX itself rounds up to this in a double). */
#define DAQIRI_JSON_U64_END	18446744073709551616.0

/*
 * Protocol version, sent in "hello"; the daemon answers any other value
 * with version_mismatch and closes the connection.
 *   1  first version: hello, streams, subscribe (+ sub_fd series),
 *      unsubscribe, status, stats, consumers, flow_list/add/del, event.
 *   2  the fourth subscription fd is "wake", an AF_UNIX datagram socket
 *      of the consumer's own (was "eventfd", a dup of the daemon's), and
 *      ring version 2 adds the need_wakeup word the daemon sends on;
 *      replies of any size: a reply over DAQIRI_MSG_SIZE_MAX comes as a
 *      series of parts ("part" 0.., "more" true on all but the last)
 *      whose top-level arrays the client concatenates; connection limits
 *      (hello deadline, per-uid cap, slots reserved for root and the
 *      admin group) answered with too_many_consumers or no_hello.
 *      Later, still 2: the reload and config requests (a daemon without
 *      them answers unknown_type, so no client has to be refused); the
 *      hello reply's "instance" (the daemon's generation; a client of a
 *      daemon without it reads 0).
 *      Later, still 2: subscribe's optional "policy" ("latest" |
 *      "lossless"), echoed in the reply and the consumers records; a
 *      client sends it only for lossless, and reads a reply without it
 *      as latest, so either side may be the older one.
 *      Later, still 2: TX channels (tx_open, tx_close, tx_closed; fd
 *      kinds tx_ring and tx_pool). Later, still 2: a device TX pool —
 *      the tx_open reply's "memory" ("host" | "device") and "device",
 *      and fds tx_ring, ipc, wake for a tx queue in device memory; a
 *      client reads a reply without "memory" as host, and an older
 *      client refuses a device channel's reply ("fd 1 is ipc, not
 *      tx_pool") and closes it, so no host channel changes.
 *      Later, still 2: the replay request (start, status) of a daqirid
 *      started with --replay; any other answers not_supported, an older
 *      one unknown_type, so no client has to be refused.
 */
#define DAQIRI_PROTO_VERSION	2

/* The hello reply's "instance": the daemon's 64-bit generation as this
 * many lowercase hex digits (a JSON number cannot hold 64 bits). */
#define DAQIRI_INSTANCE_HEX	16

/* Limits (PROTOCOL.md "Limits"). Those the config and the rings share
 * (message size, names, nbufs, max_held, ppb) are in daqiri_limits.h. */
#define DAQIRI_ERR_MSG_MAX	192	/* human error message, NUL included */
#define DAQIRI_SUB_MAX_FDS	4	/* fds following a subscribe reply */
#define DAQIRI_FLOW_MAX_QUEUES	8	/* target queues of one flow */
#define DAQIRI_IPC_HANDLE_BYTES	64	/* cudaIpcMemHandle_t / EventHandle_t */
#define DAQIRI_TX_DEVICE_MAX	1023	/* GPU ordinal a tx_open reply may name */
/* Parts of one reply (PROTOCOL.md "Replies in parts"): bounds what a
 * client reassembles, 256 x 64 KiB = 16 MiB; 4096 subscriptions list in
 * about 25. */
#define DAQIRI_REPLY_PARTS_MAX	256u
#define DAQIRI_REPLY_BYTES_MAX	((size_t)DAQIRI_REPLY_PARTS_MAX * DAQIRI_MSG_SIZE_MAX)
/* JSON values one reply may hold, all its parts together: a bound on what
 * a reader builds of it in memory (a value is a node of about 64 bytes;
 * small values packed into DAQIRI_REPLY_BYTES_MAX would make some 40
 * times its bytes). The largest reply the daemon makes, the consumers of
 * 4096 subscriptions, has about 280000: room for four times that. */
#define DAQIRI_REPLY_ITEMS_MAX	1048576u

/* Every message type, once. Requests, then daemon -> client messages. */
enum daqiri_msg_type {
	DAQIRI_MSG_HELLO,
	DAQIRI_MSG_STREAMS,
	DAQIRI_MSG_SUBSCRIBE,
	DAQIRI_MSG_UNSUBSCRIBE,
	DAQIRI_MSG_STATUS,
	DAQIRI_MSG_STATS,
	DAQIRI_MSG_CONSUMERS,
	DAQIRI_MSG_FLOW_LIST,
	DAQIRI_MSG_FLOW_ADD,
	DAQIRI_MSG_FLOW_DEL,
	DAQIRI_MSG_RELOAD,	/* re-read the config; apply all or nothing */
	DAQIRI_MSG_CONFIG,	/* the running config, normalised */
	DAQIRI_MSG_TX_OPEN,	/* open a TX channel on a tx queue */
	DAQIRI_MSG_TX_CLOSE,	/* close one */
	DAQIRI_MSG_TAP,		/* copies of a queue's frames as received */
	DAQIRI_MSG_TRIGGER,	/* mark a moment of a stream for its recorders */
	DAQIRI_MSG_REPLAY,	/* start a held replay, or ask how it goes */
	DAQIRI_MSG_REPLY,	/* daemon: the answer to one request */
	DAQIRI_MSG_SUB_FD,	/* daemon: one fd of a subscription, numbered */
	DAQIRI_MSG_EVENT,	/* daemon: unsolicited (subscription ended) */
	DAQIRI_MSG_MAX
};

/* Status codes, stable: the wire carries the name. */
enum daqiri_status {
	DAQIRI_ST_OK,
	DAQIRI_ST_BAD_REQUEST,		/* not a valid request (e.g. carried an fd) */
	DAQIRI_ST_TOO_BIG,		/* over DAQIRI_MSG_SIZE_MAX */
	DAQIRI_ST_BAD_JSON,		/* not one JSON object */
	DAQIRI_ST_UNKNOWN_TYPE,		/* "type" missing or unknown */
	DAQIRI_ST_VERSION_MISMATCH,
	DAQIRI_ST_NO_HELLO,		/* a request before hello */
	DAQIRI_ST_BAD_FIELD,		/* missing, unknown or mistyped field */
	DAQIRI_ST_OUT_OF_RANGE,		/* a number or length outside its range */
	DAQIRI_ST_PERMISSION_DENIED,
	DAQIRI_ST_NO_SUCH_STREAM,
	DAQIRI_ST_NO_SUCH_SUBSCRIPTION,
	DAQIRI_ST_NO_SUCH_INTERFACE,
	DAQIRI_ST_NO_SUCH_FLOW,
	DAQIRI_ST_EXISTS,
	DAQIRI_ST_TOO_MANY_CONSUMERS,
	DAQIRI_ST_NO_RESOURCES,		/* out of memory, fds, buffers */
	DAQIRI_ST_BUSY,
	DAQIRI_ST_NOT_SUPPORTED,
	DAQIRI_ST_INTERNAL,
	DAQIRI_ST_MAX
};

/* What each fd after a subscribe reply is. */
enum daqiri_fd_kind {
	DAQIRI_FD_TENSOR,	/* "tensor": host kinds, read-only memfd */
	DAQIRI_FD_IPC,		/* "ipc": device kind, memfd of CUDA IPC handles
				 * (a device stream's, or a device TX pool's) */
	DAQIRI_FD_BITMAP,	/* "bitmap": read-only sidecar memfd */
	DAQIRI_FD_RING,		/* "ring": the ring pair memfd (read-write) */
	DAQIRI_FD_WAKE,		/* "wake": socket the daemon wakes a sleeper on */
	DAQIRI_FD_TX_RING,	/* "tx_ring": a TX channel's ring pair memfd */
	DAQIRI_FD_TX_POOL,	/* "tx_pool": its payload pool (read-write) */
	DAQIRI_FD_TAP_RING,	/* "tap_ring": a tap's record ring (read-write;
				 * proto/tapring.h) */
	DAQIRI_FD_MAX
};

/* Unsolicited events. */
enum daqiri_event_kind {
	DAQIRI_EV_SUB_CLOSED,	/* "sub_closed": the daemon ended a subscription */
	DAQIRI_EV_TX_CLOSED,	/* "tx_closed": ... a TX channel ("sub" is its id) */
	DAQIRI_EV_MAX
};

/* A rejection: status and a human message. */
struct daqiri_err {
	enum daqiri_status status;
	char msg[DAQIRI_ERR_MSG_MAX];
};

/* subscribe request. */
struct daqiri_sub_req {
	char stream[DAQIRI_STREAM_NAME_MAX];
	enum daqiri_sub_mode mode;
	char group[DAQIRI_NAME_MAX];	/* shared mode only, else "" */
	uint32_t depth;			/* 0 = default, else power of two in ring range */
	uint32_t max_held;		/* 0 = default, else 1..DAQIRI_MAX_HELD_MAX */
	enum daqiri_sub_policy policy;	/* "policy", optional: latest */
};

/* tx_open request (PROTOCOL.md "TX channels"). */
struct daqiri_tx_req {
	char queue[DAQIRI_STREAM_NAME_MAX];	/* "<interface>/<tx queue>" */
	uint32_t nbufs;			/* 0 = default, else 1..DAQIRI_TX_NBUFS_MAX */
};

/*
 * The tx_open reply: a channel's geometry. Buffer i of the pool starts at
 * i * buf_stride in the tx_pool memfd and takes up to buf_size payload
 * bytes; the fds follow as sub_fd messages (their "sub" is tx_id) in the
 * order tx_ring, tx_pool, wake. A device pool (mem_kind DEVICE: the tx
 * queue's region is device memory) is one allocation on GPU device of
 * pool_bytes, the buffers at the same offsets, and its fd is "ipc"
 * instead of "tx_pool": a memfd of DAQIRI_TX_IPC_FILE_BYTES holding its
 * cudaIpcMemHandle_t.
 */
struct daqiri_tx_info {
	uint32_t tx_id;			/* >= 1, unique per connection, shared
					 * with subscription ids */
	char queue[DAQIRI_STREAM_NAME_MAX];
	uint32_t nbufs;			/* 1..DAQIRI_TX_NBUFS_MAX */
	uint32_t buf_size;		/* largest payload, >= 1 */
	uint32_t buf_stride;		/* daqiri_tx_pool_geometry() */
	uint64_t pool_bytes;
	uint32_t ring_depth;		/* daqiri_txring_depth(nbufs) */
	uint64_t ring_bytes;		/* daqiri_txring_size(ring_depth) */
	enum daqiri_mem_kind mem_kind;	/* "memory": HOST (absent: an older
					 * daemon's, host) or DEVICE */
	int32_t device;			/* "device": GPU ordinal of a DEVICE
					 * pool, else -1 */
	uint32_t nfds;			/* 3 */
	enum daqiri_fd_kind fds[DAQIRI_SUB_MAX_FDS];
};

/* Bytes of a device TX pool's DAQIRI_FD_IPC memfd: its
 * cudaIpcMemHandle_t, raw (no events: the owner synchronises before it
 * submits, PROTOCOL.md "TX channels"). */
#define DAQIRI_TX_IPC_FILE_BYTES	((uint64_t)DAQIRI_IPC_HANDLE_BYTES)

/* tap: copies of the first snap bytes of up to count frames of an rx
 * queue (0: until stopped), taken before classification (PROTOCOL.md
 * "tap"). */
#define DAQIRI_TAP_COUNT_MAX	4096u	/* frames of one bounded session */
#define DAQIRI_TAP_COUNT_DEFAULT 2048u
/* bytes kept of each frame: a jumbo frame (9216-byte MTU) whole, with
 * its Ethernet and VLAN headers */
#define DAQIRI_TAP_SNAP_MAX	9728u
#define DAQIRI_TAP_SNAP_DEFAULT	256u
#define DAQIRI_TAP_READ_MAX	1024u	/* frames in one read reply */
#define DAQIRI_TAP_READ_BYTES	(2u << 20)	/* and their bytes, at most */
enum daqiri_tap_action { DAQIRI_TAP_START, DAQIRI_TAP_READ, DAQIRI_TAP_STOP };
/* replay: "start" (admin) lets a --replay-hold replay begin; "status"
 * tells how it goes. */
enum daqiri_replay_action {
	DAQIRI_REPLAY_START,
	DAQIRI_REPLAY_STATUS,
	DAQIRI_REPLAY_MAX
};
struct daqiri_replay_req {
	enum daqiri_replay_action action;
};

struct daqiri_tap_req {
	char queue[DAQIRI_STREAM_NAME_MAX];	/* "<interface>/<rx queue>" */
	enum daqiri_tap_action action;
	uint32_t count;			/* start: 0..DAQIRI_TAP_COUNT_MAX,
					 * 0 = until stopped */
	uint32_t snap;			/* start: 1..DAQIRI_TAP_SNAP_MAX */
	bool map;			/* start: the ring's fd follows the reply */
};

/* The reply of a tap start with "map": the session and the ring's
 * geometry (proto/tapring.h), then one DAQIRI_FD_TAP_RING fd in a sub_fd
 * message whose id is gen. */
struct daqiri_tap_info {
	uint32_t gen;			/* 1..65535 */
	uint32_t records;
	uint32_t record_bytes;
	uint32_t data_max;		/* bytes of a record's data */
	uint64_t ring_bytes;		/* of the memfd */
};

/* flow_list (iface may be ""), flow_add, flow_del. Addresses, ports and
 * lengths in host byte order; fields as struct cfg_match. */
struct daqiri_flow_req {
	char iface[DAQIRI_NAME_MAX];
	char name[DAQIRI_NAME_MAX];	/* add: optional, "" = none */
	uint32_t id;			/* add, del */
	int nqueues;			/* add: 1..DAQIRI_FLOW_MAX_QUEUES */
	uint32_t queues[DAQIRI_FLOW_MAX_QUEUES];
	bool has_udp_src, has_udp_dst, has_ipv4_len, has_ipv4_src, has_ipv4_dst;
	uint16_t udp_src_lo, udp_src_hi;	/* inclusive */
	uint16_t udp_dst_lo, udp_dst_hi;
	uint16_t ipv4_len;
	uint32_t ipv4_src, ipv4_dst;
};

/*
 * The subscribe reply's metadata: everything a consumer needs to map and
 * read the tensors. Filled by the daemon, encoded by
 * daqiri_sub_info_encode(), decoded and checked by the client.
 * Tensor buffer i starts at buf_offset + i * buf_stride in the tensor
 * memfd (host kinds) or the IPC-opened allocation (device); its sidecar
 * (presence bitmap, ceil(ppb/64) uint64 words, then for raw streams ppb
 * uint32 packet lengths and, 8-aligned after them, ppb uint64 receive
 * times) at i * bitmap_bytes in the bitmap memfd.
 */
struct daqiri_sub_info {
	uint32_t sub_id;		/* >= 1, unique per connection */
	char stream[DAQIRI_STREAM_NAME_MAX];
	enum daqiri_stream_kind kind;
	enum daqiri_sub_mode mode;
	char group[DAQIRI_NAME_MAX];
	enum daqiri_mem_kind mem_kind;
	int32_t device;			/* -1 for host kinds, else GPU ordinal */
	enum daqiri_dtype dtype;	/* output element type */
	enum daqiri_fill fill;
	uint32_t elem_bytes;		/* daqiri_dtype_size(dtype) */
	uint32_t nbufs;			/* 1..DAQIRI_NBUFS_MAX */
	uint32_t ppb;			/* 1..DAQIRI_PPB_MAX */
	uint64_t slot_bytes;		/* > 0, multiple of elem_bytes */
	uint64_t elems_per_slot;	/* slot_bytes / elem_bytes */
	uint64_t tensor_bytes;		/* ppb * slot_bytes */
	uint64_t buf_offset;		/* of buffer 0 */
	uint64_t buf_stride;		/* >= tensor_bytes */
	uint64_t map_bytes;		/* bytes to map: >= buf_offset + nbufs * buf_stride */
	uint32_t bitmap_bytes;		/* sidecar bytes per buffer, multiple of 8 */
	uint32_t ring_depth;		/* >= nbufs, power of two */
	uint64_t ring_bytes;		/* daqiri_ring_size(ring_depth) */
	uint32_t max_held;		/* effective limit, 1..nbufs */
	enum daqiri_sub_policy policy;	/* "policy"; absent (older daemons):
					 * latest */
	uint32_t nfds;			/* fds that follow, in this order: */
	enum daqiri_fd_kind fds[DAQIRI_SUB_MAX_FDS];
};

/* A raw stream's sidecar (above): byte offsets of the lengths and of the
 * receive times (CLOCK_MONOTONIC ns, one per packet), and its bytes. A
 * daemon before the receive times sent bitmap_bytes = the offset of
 * theirs: a client looks for them only where bitmap_bytes holds them. */
#define DAQIRI_RAW_LENGTHS_OFF(ppb)	(((uint64_t)(ppb) + 63) / 64 * 8)
#define DAQIRI_RAW_RXNS_OFF(ppb) \
	((DAQIRI_RAW_LENGTHS_OFF(ppb) + (uint64_t)(ppb) * 4 + 7) / 8 * 8)
#define DAQIRI_RAW_SIDECAR_BYTES(ppb) \
	(DAQIRI_RAW_RXNS_OFF(ppb) + (uint64_t)(ppb) * 8)

/* Bytes of the DAQIRI_FD_IPC memfd: one cudaIpcMemHandle_t, then one
 * cudaIpcEventHandle_t per buffer (64 bytes each, raw). */
#define DAQIRI_IPC_FILE_BYTES(nbufs) \
	((uint64_t)DAQIRI_IPC_HANDLE_BYTES * (1u + (uint64_t)(nbufs)))

/* A decoded, validated message. */
struct daqiri_msg {
	enum daqiri_msg_type type;	/* DAQIRI_MSG_MAX while unknown */
	bool has_id;
	uint32_t id;			/* optional request id, echoed in the reply */
	cJSON *json;			/* the whole object; owned, see daqiri_msg_free */
	union {
		struct {
			uint32_t version;
			char client[DAQIRI_NAME_MAX];	/* "" when not given */
		} hello;
		struct daqiri_sub_req sub;
		struct daqiri_tx_req tx;
		struct {
			uint32_t tx_id;
		} tx_close;
		struct {
			uint32_t sub_id;
		} unsub;
		struct daqiri_flow_req flow;
		struct daqiri_tap_req tap;
		struct daqiri_replay_req replay;
		struct {
			char stream[DAQIRI_STREAM_NAME_MAX];
		} trigger;
		struct {
			enum daqiri_msg_type re;	/* what it answers; MAX: unknown */
			enum daqiri_status status;
			char message[DAQIRI_ERR_MSG_MAX];	/* error.message or "" */
			bool has_part;		/* "part" present: one of a series */
			uint32_t part;		/* 0..DAQIRI_REPLY_PARTS_MAX-1 */
			bool more;		/* more parts follow */
		} reply;
		struct {
			uint32_t sub_id;
			uint32_t index;		/* 0..count-1 */
			uint32_t count;
			enum daqiri_fd_kind kind;
		} sub_fd;
		struct {
			enum daqiri_event_kind kind;
			uint32_t sub_id;
			enum daqiri_status status;	/* why */
			char message[DAQIRI_ERR_MSG_MAX];
		} event;
	} u;
};

/* ---- proto_names.c */

/* Name tables (NULL for out-of-range values) and reverse lookups (-1 when
 * unknown). */
const char *daqiri_msg_type_name(enum daqiri_msg_type t);
int daqiri_msg_type_parse(const char *name);
const char *daqiri_status_name(enum daqiri_status s);
int daqiri_status_parse(const char *name);
const char *daqiri_fd_kind_name(enum daqiri_fd_kind k);
/* The names of the shared enums (daqiri_types.h) are defined in
 * proto_names.c. */

/* Whether a request type changes daemon state, reaches the instrument or
 * shows every flow's traffic (needs root or the admin group): flow_add,
 * flow_del, reload, tx_open, tap, trigger. */
bool daqiri_msg_is_mutating(enum daqiri_msg_type t);

/* Status <-> errno, for the client's return values and the daemon's
 * callbacks: negative errno in, status out, and back. */
enum daqiri_status daqiri_status_from_errno(int neg_errno);
int daqiri_status_to_errno(enum daqiri_status s);

/* Fill err (printf format); returns -1 for "return daqiri_err_set(...)". */
int daqiri_err_set(struct daqiri_err *err, enum daqiri_status s,
		   const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- proto_msg.c */

/*
 * Decode and validate one received message, in the fixed order: size
 * (len <= DAQIRI_MSG_SIZE_MAX) -> JSON (exactly one object, nothing after it)
 * -> type (known name) -> version ("version", when present, equals
 * DAQIRI_PROTO_VERSION; hello requires it) -> fields and ranges (every
 * required field present with its type, no unknown field in a request,
 * numbers integral and in range, strings within their limits).
 * buf need not be NUL-terminated. On success returns 0 and *out holds the
 * message (free with daqiri_msg_free). On rejection returns -1, *err
 * says why, out->type and out->id are set when they were read, and
 * out->json is NULL. Never reads past len.
 */
int daqiri_msg_decode(const char *buf, size_t len, struct daqiri_msg *out,
		      struct daqiri_err *err);

/* Free what daqiri_msg_decode() allocated; NULL-safe, idempotent. */
void daqiri_msg_free(struct daqiri_msg *m);

/*
 * Encoders. Each returns a new cJSON object (cJSON_Delete it) or NULL on
 * allocation failure.
 * daqiri_msg_new: {"type": name}; hello adds "version".
 * daqiri_reply_new: {"type":"reply","re":name,"status":...,"id"? ,
 *   "error":{"code","message"}?}; re DAQIRI_MSG_MAX = no "re" (the
 *   request's type was not readable); req_id < 0 = no id; message NULL
 *   on failure uses the status name.
 * daqiri_sub_fd_new / daqiri_event_new: the daemon's numbered fd message
 *   and the sub_closed event.
 */
cJSON *daqiri_msg_new(enum daqiri_msg_type type);
cJSON *daqiri_reply_new(enum daqiri_msg_type re, int64_t req_id,
			enum daqiri_status st, const char *message);
cJSON *daqiri_sub_fd_new(uint32_t sub_id, uint32_t index, uint32_t count,
			 enum daqiri_fd_kind kind);
cJSON *daqiri_event_new(enum daqiri_event_kind kind, uint32_t sub_id,
			enum daqiri_status why, const char *message);

/* Add the fields of a request to obj (made by daqiri_msg_new). Return 0
 * or -ENOMEM / -EINVAL. */
int daqiri_sub_req_encode(const struct daqiri_sub_req *req, cJSON *obj);
int daqiri_flow_req_encode(enum daqiri_msg_type t,
			   const struct daqiri_flow_req *req, cJSON *obj);

/*
 * Check a daqiri_sub_info for consistency (every rule in the struct's
 * comments, and fds matching the memory kind: host kinds tensor, bitmap,
 * ring, wake; device ipc, bitmap, ring, wake). Returns 0 or -1 with
 * *err (status bad_field / out_of_range).
 */
int daqiri_sub_info_check(const struct daqiri_sub_info *s,
			  struct daqiri_err *err);
/* Add the metadata to a reply object: 0, -ENOMEM, -EINVAL (not valid by
 * daqiri_sub_info_check). */
int daqiri_sub_info_encode(const struct daqiri_sub_info *s, cJSON *reply);
/* Read and check the metadata of a subscribe reply: 0 or -1 with *err. */
int daqiri_sub_info_decode(const cJSON *reply, struct daqiri_sub_info *s,
			   struct daqiri_err *err);

/* Print obj compactly into buf (NUL-terminated). Returns the length
 * without the NUL, or -EMSGSIZE when it does not fit in cap or in
 * DAQIRI_MSG_SIZE_MAX, -ENOMEM. */
int daqiri_msg_print(const cJSON *obj, char *buf, size_t cap);

/* ---- proto_msg.c: TX channels */

/* Add a tx_open request's fields to obj: 0, -ENOMEM or -EINVAL. */
int daqiri_tx_req_encode(const struct daqiri_tx_req *req, cJSON *obj);
/* Check a daqiri_tx_info (geometry as txring.h computes it, fds
 * tx_ring, tx_pool, wake): 0 or -1 with *err. */
int daqiri_tx_info_check(const struct daqiri_tx_info *t,
			 struct daqiri_err *err);
/* Add a mapped tap's session and geometry to a tap start reply: 0 or
 * -ENOMEM. */
int daqiri_tap_info_encode(const struct daqiri_tap_info *t, cJSON *reply);
/* Read and check them (fields present, in range, consistent with
 * proto/tapring.h): 0 or -1 with *err. */
int daqiri_tap_info_decode(const cJSON *reply, struct daqiri_tap_info *t,
			   struct daqiri_err *err);
/* Add the metadata to a tx_open reply: 0, -ENOMEM, -EINVAL. */
int daqiri_tx_info_encode(const struct daqiri_tx_info *t, cJSON *reply);
/* Read and check a tx_open reply's metadata: 0 or -1 with *err. */
int daqiri_tx_info_decode(const cJSON *reply, struct daqiri_tx_info *t,
			  struct daqiri_err *err);

/* ---- proto_parts.c */

/*
 * Replies of any size. daqiri_reply_split prints reply (a complete,
 * successful reply object) as one message when it fits in max bytes
 * (max <= DAQIRI_MSG_SIZE_MAX), else as a series of parts: part 0 has
 * every member that is not an array, "part":0, "more":true and an
 * opening run of every top-level array (possibly empty); each later part
 * has only "type", "re", "id", "status", "part", "more" and further runs
 * of those arrays, in order; the last has "more":false. Returns the
 * number of messages (>= 1) with *out a malloc'd array of malloc'd,
 * NUL-terminated texts (free with daqiri_parts_free), -EMSGSIZE when an
 * array element or the members that are not arrays do not fit in one
 * message, or the series would pass DAQIRI_REPLY_PARTS_MAX parts,
 * -ENOMEM, -EINVAL (not an object, or two members of one name).
 */
struct daqiri_part {
	char *text;
	size_t len;
};
int daqiri_reply_split(const cJSON *reply, size_t max,
		       struct daqiri_part **out);
void daqiri_parts_free(struct daqiri_part *p, int n);

/* The JSON values of v, itself and all below it (NULL: 0). */
size_t daqiri_json_items(const cJSON *v);

/*
 * Reassembly: add the decoded part m (a reply with has_part) to *acc.
 * With *acc NULL, m must be part 0: *acc takes m->json (m->json becomes
 * NULL). Later parts must carry the next index, the same "re" and "id",
 * status ok, no member outside the envelope that is not an array, and
 * arrays that part 0 had; their elements are moved to the end of *acc's.
 * *total counts the bytes received so far (the caller adds each part's
 * length before calling) and is checked against DAQIRI_REPLY_BYTES_MAX.
 * When m->u.reply.more is false, "part" and "more" are removed from *acc
 * and it is the whole reply. Returns 0 or -1 with *err (bad_field,
 * out_of_range, too_big).
 */
int daqiri_reply_merge(cJSON **acc, struct daqiri_msg *m, size_t total,
		       struct daqiri_err *err);

/* ---- proto_wire.c */

/*
 * Send one message with at most one fd (fd < 0: none). Non-blocking when
 * the socket is; MSG_NOSIGNAL. Returns 0, -EAGAIN (socket full: nothing
 * was sent), -EMSGSIZE (len > DAQIRI_MSG_SIZE_MAX), or another negative errno
 * (-EPIPE: peer gone).
 */
int daqiri_send_msg(int sock, const char *json, size_t len, int fd);

/*
 * Receive one message into buf (cap bytes; a NUL is added after the data
 * when it fits). recvmsg(MSG_CMSG_CLOEXEC). fd_out NULL: the caller
 * accepts no fd. Returns the length (> 0) with *fd_out = the fd or -1;
 * 0 when the peer closed; -EAGAIN when nothing is waiting on a
 * non-blocking socket; -EMSGSIZE when the message did not fit (MSG_TRUNC;
 * the rest is discarded); -EBADMSG when it carried an fd the caller did
 * not accept, more than one fd, or the control data was truncated
 * (MSG_CTRUNC). Every fd received with a failed message is closed.
 */
ssize_t daqiri_recv_msg(int sock, char *buf, size_t cap, int *fd_out);

#endif
