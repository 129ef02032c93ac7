/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The protocol's vocabulary (proto.h, daqiri_types.h): the name table of
 * every enum on the wire with its lookups, element sizes, and status codes
 * with their errno mapping and the error helper.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "proto.h"
#include "proto_internal.h"

static const char *const msg_type_names[] = {
	[DAQIRI_MSG_HELLO] = "hello",
	[DAQIRI_MSG_STREAMS] = "streams",
	[DAQIRI_MSG_SUBSCRIBE] = "subscribe",
	[DAQIRI_MSG_UNSUBSCRIBE] = "unsubscribe",
	[DAQIRI_MSG_STATUS] = "status",
	[DAQIRI_MSG_STATS] = "stats",
	[DAQIRI_MSG_CONSUMERS] = "consumers",
	[DAQIRI_MSG_FLOW_LIST] = "flow_list",
	[DAQIRI_MSG_FLOW_ADD] = "flow_add",
	[DAQIRI_MSG_FLOW_DEL] = "flow_del",
	[DAQIRI_MSG_RELOAD] = "reload",
	[DAQIRI_MSG_CONFIG] = "config",
	[DAQIRI_MSG_TX_OPEN] = "tx_open",
	[DAQIRI_MSG_TX_CLOSE] = "tx_close",
	[DAQIRI_MSG_TAP] = "tap",
	[DAQIRI_MSG_TRIGGER] = "trigger",
	[DAQIRI_MSG_REPLAY] = "replay",
	[DAQIRI_MSG_REPLY] = "reply",
	[DAQIRI_MSG_SUB_FD] = "sub_fd",
	[DAQIRI_MSG_EVENT] = "event",
};
_Static_assert(sizeof(msg_type_names) / sizeof(msg_type_names[0]) ==
    DAQIRI_MSG_MAX, "message type name table");

static const char *const status_names[] = {
	[DAQIRI_ST_OK] = "ok",
	[DAQIRI_ST_BAD_REQUEST] = "bad_request",
	[DAQIRI_ST_TOO_BIG] = "too_big",
	[DAQIRI_ST_BAD_JSON] = "bad_json",
	[DAQIRI_ST_UNKNOWN_TYPE] = "unknown_type",
	[DAQIRI_ST_VERSION_MISMATCH] = "version_mismatch",
	[DAQIRI_ST_NO_HELLO] = "no_hello",
	[DAQIRI_ST_BAD_FIELD] = "bad_field",
	[DAQIRI_ST_OUT_OF_RANGE] = "out_of_range",
	[DAQIRI_ST_PERMISSION_DENIED] = "permission_denied",
	[DAQIRI_ST_NO_SUCH_STREAM] = "no_such_stream",
	[DAQIRI_ST_NO_SUCH_SUBSCRIPTION] = "no_such_subscription",
	[DAQIRI_ST_NO_SUCH_INTERFACE] = "no_such_interface",
	[DAQIRI_ST_NO_SUCH_FLOW] = "no_such_flow",
	[DAQIRI_ST_EXISTS] = "exists",
	[DAQIRI_ST_TOO_MANY_CONSUMERS] = "too_many_consumers",
	[DAQIRI_ST_NO_RESOURCES] = "no_resources",
	[DAQIRI_ST_BUSY] = "busy",
	[DAQIRI_ST_NOT_SUPPORTED] = "not_supported",
	[DAQIRI_ST_INTERNAL] = "internal",
};
_Static_assert(sizeof(status_names) / sizeof(status_names[0]) ==
    DAQIRI_ST_MAX, "status name table");

static const char *const fd_kind_names[] = {
	[DAQIRI_FD_TENSOR] = "tensor",
	[DAQIRI_FD_IPC] = "ipc",
	[DAQIRI_FD_BITMAP] = "bitmap",
	[DAQIRI_FD_RING] = "ring",
	[DAQIRI_FD_WAKE] = "wake",
	[DAQIRI_FD_TX_RING] = "tx_ring",
	[DAQIRI_FD_TX_POOL] = "tx_pool",
	[DAQIRI_FD_TAP_RING] = "tap_ring",
};
_Static_assert(sizeof(fd_kind_names) / sizeof(fd_kind_names[0]) ==
    DAQIRI_FD_MAX, "fd kind name table");

static const char *const event_names[] = {
	[DAQIRI_EV_SUB_CLOSED] = "sub_closed",
	[DAQIRI_EV_TX_CLOSED] = "tx_closed",
};
_Static_assert(sizeof(event_names) / sizeof(event_names[0]) == DAQIRI_EV_MAX,
    "event name table");

static const char *const dtype_names[] = {
	[DAQIRI_DTYPE_RAW] = "raw",
	[DAQIRI_DTYPE_INT4] = "int4",
	[DAQIRI_DTYPE_INT8] = "int8",
	[DAQIRI_DTYPE_INT16] = "int16",
	[DAQIRI_DTYPE_INT32] = "int32",
	[DAQIRI_DTYPE_FP16] = "fp16",
	[DAQIRI_DTYPE_BF16] = "bf16",
	[DAQIRI_DTYPE_FP32] = "fp32",
	[DAQIRI_DTYPE_FP64] = "fp64",
};
_Static_assert(sizeof(dtype_names) / sizeof(dtype_names[0]) ==
    DAQIRI_DTYPE_MAX, "dtype name table");

static const uint32_t dtype_sizes[] = {
	[DAQIRI_DTYPE_RAW] = 1, [DAQIRI_DTYPE_INT4] = 0,
	[DAQIRI_DTYPE_INT8] = 1, [DAQIRI_DTYPE_INT16] = 2,
	[DAQIRI_DTYPE_INT32] = 4, [DAQIRI_DTYPE_FP16] = 2,
	[DAQIRI_DTYPE_BF16] = 2, [DAQIRI_DTYPE_FP32] = 4,
	[DAQIRI_DTYPE_FP64] = 8,
};
_Static_assert(sizeof(dtype_sizes) / sizeof(dtype_sizes[0]) ==
    DAQIRI_DTYPE_MAX, "dtype size table");

static const char *const mem_kind_names[] = {
	[DAQIRI_MEM_HUGE] = "huge",
	[DAQIRI_MEM_DEVICE] = "device",
	[DAQIRI_MEM_HOST_PINNED] = "host_pinned",
	[DAQIRI_MEM_HOST] = "host",
};
_Static_assert(sizeof(mem_kind_names) / sizeof(mem_kind_names[0]) ==
    DAQIRI_MEM_MAX, "memory kind name table");

static const char *const fill_names[] = {
	[DAQIRI_FILL_ZERO] = "zero",
	[DAQIRI_FILL_NAN] = "nan",
	[DAQIRI_FILL_KEEP] = "keep",
};
_Static_assert(sizeof(fill_names) / sizeof(fill_names[0]) == DAQIRI_FILL_MAX,
    "fill name table");

static const char *const sub_mode_names[] = {
	[DAQIRI_SUB_BROADCAST] = "broadcast",
	[DAQIRI_SUB_SHARED] = "shared",
};
_Static_assert(sizeof(sub_mode_names) / sizeof(sub_mode_names[0]) ==
    DAQIRI_SUB_MODE_MAX, "subscription mode name table");

static const char *const sub_policy_names[] = {
	[DAQIRI_POLICY_LATEST] = "latest",
	[DAQIRI_POLICY_LOSSLESS] = "lossless",
};
_Static_assert(sizeof(sub_policy_names) / sizeof(sub_policy_names[0]) ==
    DAQIRI_POLICY_MAX, "subscription policy name table");

static const char *const stream_kind_names[] = {
	[DAQIRI_STREAM_REORDER] = "reorder",
	[DAQIRI_STREAM_RAW] = "raw",
};
_Static_assert(sizeof(stream_kind_names) / sizeof(stream_kind_names[0]) ==
    DAQIRI_STREAM_KIND_MAX, "stream kind name table");

#define TABLE_NAME(tab, v) \
	((unsigned)(v) < sizeof(tab) / sizeof((tab)[0]) ? (tab)[(v)] : NULL)

static int
table_parse(const char *const *tab, size_t n, const char *name)
{
	size_t i;

	if (name == NULL)
		return -1;
	for (i = 0; i < n; i++)
		if (tab[i] != NULL && strcmp(tab[i], name) == 0)
			return (int)i;
	return -1;
}
#define TABLE_PARSE(tab, name) \
	table_parse((tab), sizeof(tab) / sizeof((tab)[0]), (name))

const char *
daqiri_msg_type_name(enum daqiri_msg_type t)
{
	return TABLE_NAME(msg_type_names, t);
}

int
daqiri_msg_type_parse(const char *name)
{
	return TABLE_PARSE(msg_type_names, name);
}

const char *
daqiri_status_name(enum daqiri_status s)
{
	return TABLE_NAME(status_names, s);
}

int
daqiri_status_parse(const char *name)
{
	return TABLE_PARSE(status_names, name);
}

const char *
daqiri_fd_kind_name(enum daqiri_fd_kind k)
{
	return TABLE_NAME(fd_kind_names, k);
}

const char *
daqiri_sub_mode_name(enum daqiri_sub_mode m)
{
	return TABLE_NAME(sub_mode_names, m);
}

const char *
daqiri_sub_policy_name(enum daqiri_sub_policy p)
{
	return TABLE_NAME(sub_policy_names, p);
}

const char *
daqiri_stream_kind_name(enum daqiri_stream_kind k)
{
	return TABLE_NAME(stream_kind_names, k);
}

const char *
daqiri_dtype_name(enum daqiri_dtype t)
{
	return TABLE_NAME(dtype_names, t);
}

const char *
daqiri_mem_kind_name(enum daqiri_mem_kind k)
{
	return TABLE_NAME(mem_kind_names, k);
}

const char *
daqiri_fill_name(enum daqiri_fill f)
{
	return TABLE_NAME(fill_names, f);
}

uint32_t
daqiri_dtype_size(enum daqiri_dtype t)
{
	return (unsigned)t < DAQIRI_DTYPE_MAX ? dtype_sizes[t] : 0;
}


/* The reverse lookups only the codecs need (proto_internal.h). */

int
proto_fd_kind_parse(const char *name)
{
	return TABLE_PARSE(fd_kind_names, name);
}

const char *
proto_event_kind_name(enum daqiri_event_kind k)
{
	return TABLE_NAME(event_names, k);
}

int
proto_event_kind_parse(const char *name)
{
	return TABLE_PARSE(event_names, name);
}

int
proto_dtype_parse(const char *name)
{
	return TABLE_PARSE(dtype_names, name);
}

int
proto_mem_kind_parse(const char *name)
{
	return TABLE_PARSE(mem_kind_names, name);
}

int
proto_fill_parse(const char *name)
{
	return TABLE_PARSE(fill_names, name);
}

int
proto_sub_mode_parse(const char *name)
{
	return TABLE_PARSE(sub_mode_names, name);
}

int
proto_sub_policy_parse(const char *name)
{
	return TABLE_PARSE(sub_policy_names, name);
}

int
proto_stream_kind_parse(const char *name)
{
	return TABLE_PARSE(stream_kind_names, name);
}

bool
daqiri_msg_is_mutating(enum daqiri_msg_type t)
{
	return t == DAQIRI_MSG_FLOW_ADD || t == DAQIRI_MSG_FLOW_DEL ||
	    t == DAQIRI_MSG_RELOAD || t == DAQIRI_MSG_TX_OPEN ||
	    t == DAQIRI_MSG_TAP || t == DAQIRI_MSG_TRIGGER;
}

enum daqiri_status
daqiri_status_from_errno(int neg_errno)
{
	switch (-neg_errno) {
	case 0:
		return DAQIRI_ST_OK;
	case EINVAL:
		return DAQIRI_ST_BAD_FIELD;
	case ERANGE:
	case EDOM:
		return DAQIRI_ST_OUT_OF_RANGE;
	case EPERM:
	case EACCES:
		return DAQIRI_ST_PERMISSION_DENIED;
	case ENOENT:
		return DAQIRI_ST_NO_SUCH_STREAM;
	case ESRCH:
		return DAQIRI_ST_NO_SUCH_SUBSCRIPTION;
	case ENODEV:
		return DAQIRI_ST_NO_SUCH_INTERFACE;
	case EEXIST:
		return DAQIRI_ST_EXISTS;
	case EUSERS:
		return DAQIRI_ST_TOO_MANY_CONSUMERS;
	case ENOMEM:
	case ENOBUFS:
	case EMFILE:
	case ENFILE:
	case ENOSPC:
		return DAQIRI_ST_NO_RESOURCES;
	case EBUSY:
	case EAGAIN:
		return DAQIRI_ST_BUSY;
	case ENOTSUP:
	case ENOSYS:
		return DAQIRI_ST_NOT_SUPPORTED;
	case EMSGSIZE:
		return DAQIRI_ST_TOO_BIG;
	case EPROTONOSUPPORT:
		return DAQIRI_ST_VERSION_MISMATCH;
	default:
		return DAQIRI_ST_INTERNAL;
	}
}

int
daqiri_status_to_errno(enum daqiri_status s)
{
	switch (s) {
	case DAQIRI_ST_OK:
		return 0;
	case DAQIRI_ST_BAD_REQUEST:
	case DAQIRI_ST_BAD_JSON:
	case DAQIRI_ST_UNKNOWN_TYPE:
	case DAQIRI_ST_NO_HELLO:
	case DAQIRI_ST_BAD_FIELD:
		return -EINVAL;
	case DAQIRI_ST_TOO_BIG:
		return -EMSGSIZE;
	case DAQIRI_ST_OUT_OF_RANGE:
		return -ERANGE;
	case DAQIRI_ST_VERSION_MISMATCH:
		return -EPROTONOSUPPORT;
	case DAQIRI_ST_PERMISSION_DENIED:
		return -EACCES;
	case DAQIRI_ST_NO_SUCH_STREAM:
		return -ENOENT;
	case DAQIRI_ST_NO_SUCH_SUBSCRIPTION:
		return -ESRCH;
	case DAQIRI_ST_NO_SUCH_INTERFACE:
		return -ENODEV;
	case DAQIRI_ST_NO_SUCH_FLOW:
		return -ENOENT;
	case DAQIRI_ST_EXISTS:
		return -EEXIST;
	case DAQIRI_ST_TOO_MANY_CONSUMERS:
		return -EUSERS;
	case DAQIRI_ST_NO_RESOURCES:
		return -ENOMEM;
	case DAQIRI_ST_BUSY:
		return -EBUSY;
	case DAQIRI_ST_NOT_SUPPORTED:
		return -ENOTSUP;
	default:
		return -EIO;
	}
}

int
daqiri_err_set(struct daqiri_err *err, enum daqiri_status s, const char *fmt,
	       ...)
{
	va_list ap;

	if (err == NULL)
		return -1;
	err->status = s;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -1;
}
