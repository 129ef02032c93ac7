/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to the proto sources: the reverse name lookups the codecs
 * (proto_msg.c) need from the tables in proto_names.c. Not part of the
 * protocol's interface (proto.h has the lookups both sides use) and
 * hidden from the client library's dynamic symbol table.
 */
#ifndef DAQIRI_PROTO_INTERNAL_H
#define DAQIRI_PROTO_INTERNAL_H

#include "proto.h"

#define PROTO_HIDDEN	__attribute__((visibility("hidden")))

/* The enum value of a wire name, or -1 when it is unknown or NULL. */
PROTO_HIDDEN int proto_fd_kind_parse(const char *name);
PROTO_HIDDEN int proto_event_kind_parse(const char *name);
PROTO_HIDDEN int proto_dtype_parse(const char *name);
PROTO_HIDDEN int proto_mem_kind_parse(const char *name);
PROTO_HIDDEN int proto_fill_parse(const char *name);
PROTO_HIDDEN int proto_sub_mode_parse(const char *name);
PROTO_HIDDEN int proto_sub_policy_parse(const char *name);
PROTO_HIDDEN int proto_stream_kind_parse(const char *name);

/* The wire name of an event kind, NULL when out of range. */
PROTO_HIDDEN const char *proto_event_kind_name(enum daqiri_event_kind k);

#endif
