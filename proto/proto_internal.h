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

/* A memfd of n bytes, sealed against shrink, grow and further seals (so
 * a mapping of the other side's can never SIGBUS), mapped shared with
 * prot: 0 with *fd and *mem, or a negative errno and nothing left open
 * (ring.c; the rings and the tap's ring are made with it). */
PROTO_HIDDEN int proto_sealed_map(const char *name, size_t n, int prot,
				  int *fd, void **mem);

/* The wire name of an event kind, NULL when out of range. */
PROTO_HIDDEN const char *proto_event_kind_name(enum daqiri_event_kind k);

#endif
