/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one vocabulary of drop reasons (DESIGN.md "Metrics and drop
 * reasons") and the one generator of the Prometheus text: the daemon's
 * HTTP endpoint and `daqirictl metrics` both render the stats and
 * consumers replies through daqiri_metrics_render(), so they serve the
 * same names. Implemented in metrics.c.
 */
#ifndef DAQIRI_METRICS_H
#define DAQIRI_METRICS_H

#include <stddef.h>

#include <cjson/cJSON.h>

/*
 * Every reason a packet is dropped, once. The name is the stats JSON key
 * that counts it (in the object of its scope), the `reason` label of
 * daqiri_packets_dropped_total and the word daqirid(8) lists. A new
 * reason is added here, to its counter, and to the accounting identity
 * in the same change.
 */
enum daqiri_drop {
	DAQIRI_DROP_DUPLICATE,		/* reorder: slot already filled */
	DAQIRI_DROP_LATE,		/* reorder: batch already published */
	DAQIRI_DROP_MALFORMED,		/* reorder: does not fit the layout */
	DAQIRI_DROP_OVERSIZE,		/* raw: frame longer than a slot */
	DAQIRI_DROP_NO_BUFFER,		/* reorder, raw: no free tensor buffer */
	DAQIRI_DROP_BACKEND_ERROR,	/* reorder: the backend's write failed */
	DAQIRI_DROP_UNMATCHED,		/* queue: no flow, flow_isolation on */
	DAQIRI_DROP_NO_STREAM,		/* queue: raw stream wanted, none */
	DAQIRI_DROP_MISROUTED,		/* queue: stream of another worker */
	DAQIRI_DROP_KERNEL,		/* engine: before daqirid read it */
	DAQIRI_DROP_TRUNCATED,		/* engine: datagram over a buffer */
	DAQIRI_DROP_INCOMPLETE,		/* reorder: placed, batch incomplete and
					 * missing_action drop */
	DAQIRI_DROP_MAX
};

/* Where a reason is counted, which decides the identity it is part of. */
enum daqiri_drop_scope {
	/* a stream's "reorder" or "raw" object: packets_in = placed + the
	 * stream reasons */
	DAQIRI_DROP_AT_STREAM,
	/* a queue's object: rx_packets = streams_packets_in + these */
	DAQIRI_DROP_AT_QUEUE,
	/* a queue's object, counted before rx_packets (never received) */
	DAQIRI_DROP_AT_ENGINE,
	/* a stream's "reorder" object, of packets placed and then dropped
	 * with their tensor: a part of placed, not a term beside it
	 * (packets in published tensors = placed - these - open ones) */
	DAQIRI_DROP_AT_TENSOR,
	DAQIRI_DROP_SCOPE_MAX
};

const char *daqiri_drop_name(enum daqiri_drop r);
enum daqiri_drop_scope daqiri_drop_scope(enum daqiri_drop r);
/* One sentence, as daqirid(8) DROP REASONS says it. */
const char *daqiri_drop_help(enum daqiri_drop r);
/* The reason of that name, or -1. */
int daqiri_drop_parse(const char *name);

/*
 * Render the Prometheus text format (version 0.0.4) of a `stats` reply
 * (its "interfaces", "streams", "control", "http" and "daemon" members)
 * and optionally a `consumers` reply (NULL: no consumer families). Each
 * family once, with HELP and TYPE; counters end in _total, times are in
 * seconds. Any member of a stream or consumer object shaped
 * {"le_ns": [...], "buckets": [...], "count": N, "sum_ns": S} (buckets
 * per bound, not cumulative, one more for +Inf) becomes the histogram
 * daqiri_stream_<key less _ns>_seconds (daqiri_consumer_..._seconds).
 * Consumers are labelled by their shared group's name, else their pid;
 * subscriptions with the same labels are summed. Returns 0 and a
 * malloc'ed NUL-terminated *text (its length in *len), or -ENOMEM.
 */
int daqiri_metrics_render(const cJSON *stats, const cJSON *consumers,
			  char **text, size_t *len);

/* The content type of that text. */
#define DAQIRI_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

#endif
