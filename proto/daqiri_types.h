/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The vocabulary daemon and consumers agree on, stated once: element
 * types, memory kinds, fills, subscription modes, stream kinds and tensor
 * flags. The values are the protocol's (their names are the wire names in
 * PROTOCOL.md), the daemon's config uses the same enums, and the public
 * daqiri_client.h includes this header, so it is installed beside it. C
 * only, no dependencies.
 */
#ifndef DAQIRI_TYPES_H
#define DAQIRI_TYPES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element type of a stream's tensors (wire names in parentheses). */
enum daqiri_dtype {
	DAQIRI_DTYPE_RAW,	/* "raw": bytes as received, no conversion */
	DAQIRI_DTYPE_INT4,	/* "int4" (input only) */
	DAQIRI_DTYPE_INT8,	/* "int8" */
	DAQIRI_DTYPE_INT16,	/* "int16" */
	DAQIRI_DTYPE_INT32,	/* "int32" */
	DAQIRI_DTYPE_FP16,	/* "fp16" */
	DAQIRI_DTYPE_BF16,	/* "bf16" */
	DAQIRI_DTYPE_FP32,	/* "fp32" */
	DAQIRI_DTYPE_FP64,	/* "fp64" */
	DAQIRI_DTYPE_MAX
};

/* Where the tensor memory lives. */
enum daqiri_mem_kind {
	DAQIRI_MEM_HUGE,	/* "huge" */
	DAQIRI_MEM_DEVICE,	/* "device": GPU memory, CUDA IPC */
	DAQIRI_MEM_HOST_PINNED,	/* "host_pinned" */
	DAQIRI_MEM_HOST,	/* "host" */
	DAQIRI_MEM_MAX
};

/* What a missing slot holds. */
enum daqiri_fill {
	DAQIRI_FILL_ZERO,	/* "zero": all zero bytes */
	DAQIRI_FILL_NAN,	/* "nan": the type's quiet NaN */
	DAQIRI_FILL_KEEP,	/* "keep": whatever was there */
	DAQIRI_FILL_MAX
};

enum daqiri_sub_mode {
	DAQIRI_SUB_BROADCAST,	/* "broadcast": every tensor to every subscriber */
	DAQIRI_SUB_SHARED,	/* "shared": each tensor to one member of a group */
	DAQIRI_SUB_MODE_MAX
};

/* Delivery policy of a subscription (DESIGN.md "Delivery policies"). */
enum daqiri_sub_policy {
	DAQIRI_POLICY_LATEST,	/* "latest": never waited on; a full ring or
				 * max_held is an overrun for it alone */
	DAQIRI_POLICY_LOSSLESS,	/* "lossless": never skipped; when it falls
				 * behind, the stream runs out of buffers
				 * (no_buffer drops, blocked_by); root or
				 * the admin group, broadcast mode only */
	DAQIRI_POLICY_MAX
};

/* What a stream is the output of. */
enum daqiri_stream_kind {
	DAQIRI_STREAM_REORDER,	/* "reorder": one slot per sequence number */
	DAQIRI_STREAM_RAW,	/* "raw": packets of a queue, with a length table */
	DAQIRI_STREAM_KIND_MAX
};

/* Tensor flags: the descriptor's flags word (desc.h) and a tensor's. */
enum daqiri_tensor_flag {
	DAQIRI_TENSOR_COMPLETE = 1u << 0,	/* every slot arrived */
	DAQIRI_TENSOR_TIMEOUT = 1u << 1,	/* published at its deadline */
	DAQIRI_TENSOR_EVICTED = 1u << 2,	/* pushed out by newer batches */
	DAQIRI_TENSOR_HAS_GAPS = 1u << 3,	/* some slot missing: see bitmap */
	DAQIRI_TENSOR_RESYNC = 1u << 4,		/* first of a new epoch: the
						 * sender restarted */
	DAQIRI_TENSOR_FLUSH = 1u << 5,		/* published at stream stop */
	/* Made by the client library, never sent by the daemon: the first
	 * tensor of a reconnecting subscription after the daemon restarted
	 * (DAQIRI_SUB_RECONNECT). */
	DAQIRI_TENSOR_RESTART = 1u << 6,
};

/* Static names (wire names; NULL for a value out of range). Defined in
 * proto/proto_names.c. */
const char *daqiri_dtype_name(enum daqiri_dtype t);
const char *daqiri_mem_kind_name(enum daqiri_mem_kind k);
const char *daqiri_fill_name(enum daqiri_fill f);
/* Bytes of one element of t (int4: 0; raw: 1). */
uint32_t daqiri_dtype_size(enum daqiri_dtype t);
const char *daqiri_sub_mode_name(enum daqiri_sub_mode m);
const char *daqiri_sub_policy_name(enum daqiri_sub_policy p);
const char *daqiri_stream_kind_name(enum daqiri_stream_kind k);

#ifdef __cplusplus
}
#endif

#endif
