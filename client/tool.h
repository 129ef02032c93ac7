/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The consumer-loop helpers the client tools share (daqiri-consume,
 * daqiri-record): tensor flags as text, host bytes of a tensor, and the
 * daemon's counters that explain a stream that delivers nothing. Linked
 * into the tools, not into libdaqiri-client: it prints, the library never
 * does.
 */
#ifndef DAQIRI_TOOL_H
#define DAQIRI_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daqiri_client.h"

/* Room for every flag name of flags_str(), joined by '|'. */
#define TOOL_FLAGS_LEN	80

/* The names of the tensor flags set in f ("COMPLETE|HAS_GAPS"), "-" when
 * none, written into buf (cap bytes, truncated to fit). */
void tool_flags_str(uint32_t f, char *buf, size_t cap);

/* Whether slot s of t arrived (its presence bit). */
bool tool_slot_present(const struct daqiri_tensor *t, uint64_t s);

/*
 * Host bytes of a tensor: the mapping itself for host memory; for device
 * memory a copy into copy (t->bytes, the caller's) after the tensor's
 * event. NULL when device memory cannot be read (no CUDA in this build,
 * or a CUDA error).
 */
const uint8_t *tool_host_view(const struct daqiri_tensor *t, uint8_t *copy);

/* The daemon's reorder counters of a stream that explain a run without
 * tensors; all -1 when they cannot be had (no daemon answer, raw
 * stream), state and why "" when the daemon gave no verdict. */
struct tool_counts {
	long long packets_in, placed, late, malformed;
	long long no_buffer, batches_no_buffer;	/* raw streams: raw.no_buffer */
	char state[32];			/* daqirictl doctor's verdict */
	char why[512];
};

/* Read them now from the daemon's stats (one request). Never fails: a
 * count it could not read stays -1. */
void tool_counts(struct daqiri *d, const char *stream, struct tool_counts *c);

/* "PROG: N packets were dropped as malformed ..." on stderr. */
void tool_say_malformed(const char *prog, long long n);

/* Packets of the stream arrived between a and b but none was placed: say
 * so on stderr, naming the likely cause ("when" ends the first line).
 * Returns true when it printed. */
bool tool_explain_unplaced(const char *prog, const char *stream,
			   const struct tool_counts *a,
			   const struct tool_counts *b, const char *when);

/* The line for a failed daqiri_connect() (daqiri_connect_hint()) on
 * stderr, after "PROG: ". */
void tool_say_connect(const char *prog, int neg_errno, const char *path);

#endif
