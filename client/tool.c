/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The consumer-loop helpers of the client tools (tool.h): flag names,
 * host views of tensors, and the daemon's own account of a stream that
 * delivers nothing. One home, so daqiri-consume and daqiri-record say the
 * same things the same way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef DAQIRI_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include <cjson/cJSON.h>

#include "proto.h"
#include "tool.h"

void
tool_flags_str(uint32_t f, char *buf, size_t cap)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} names[] = {
		{ DAQIRI_TENSOR_COMPLETE, "COMPLETE" },
		{ DAQIRI_TENSOR_TIMEOUT, "TIMEOUT" },
		{ DAQIRI_TENSOR_EVICTED, "EVICTED" },
		{ DAQIRI_TENSOR_HAS_GAPS, "HAS_GAPS" },
		{ DAQIRI_TENSOR_RESYNC, "RESYNC" },
		{ DAQIRI_TENSOR_FLUSH, "FLUSH" },
		{ DAQIRI_TENSOR_RESTART, "RESTART" },
	};
	size_t i, n = 0;

	if (cap == 0)
		return;
	buf[0] = '\0';
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (f & names[i].bit)
			n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0,
			    "%s%s", n ? "|" : "", names[i].name);
	if (n == 0)
		snprintf(buf, cap, "-");
}

bool
tool_slot_present(const struct daqiri_tensor *t, uint64_t s)
{
	return (t->bitmap[s / 64] >> (s % 64)) & 1;
}

const uint8_t *
tool_host_view(const struct daqiri_tensor *t, uint8_t *copy)
{
	if (t->device < 0)
		return t->data;
#ifdef DAQIRI_HAVE_CUDA
	if ((t->event != NULL &&
	    cudaEventSynchronize((cudaEvent_t)t->event) != cudaSuccess) ||
	    cudaMemcpy(copy, t->data, t->bytes, cudaMemcpyDeviceToHost) !=
	    cudaSuccess) {
		cudaGetLastError();
		return NULL;
	}
	return copy;
#else
	(void)copy;
	return NULL;
#endif
}

/* A count as the daemon sent it, if it is one; -1 otherwise. */
static long long
count_of(const cJSON *o, const char *key)
{
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, key);

	if (daqiri_json_int_in(n, 0, 9007199254740992.0))
		return (long long)n->valuedouble;
	return -1;
}

void
tool_counts(struct daqiri *d, const char *stream, struct tool_counts *c)
{
	cJSON *o, *ss, *st, *ro = NULL, *raw = NULL, *n;
	char *reply = NULL;

	c->packets_in = c->placed = c->late = c->malformed = -1;
	c->no_buffer = c->batches_no_buffer = -1;
	c->state[0] = c->why[0] = '\0';
	if (daqiri_request(d, "{\"type\":\"stats\"}", &reply) < 0 ||
	    (o = cJSON_Parse(reply)) == NULL) {
		free(reply);
		return;
	}
	ss = cJSON_GetObjectItemCaseSensitive(o, "streams");
	cJSON_ArrayForEach(st, ss) {
		n = cJSON_GetObjectItemCaseSensitive(st, "name");
		if (cJSON_IsString(n) && strcmp(n->valuestring, stream) == 0) {
			const cJSON *vd = cJSON_GetObjectItemCaseSensitive(st,
			    "verdict");
			const cJSON *vs = cJSON_GetObjectItemCaseSensitive(vd,
			    "state");
			const cJSON *vw = cJSON_GetObjectItemCaseSensitive(vd,
			    "why");

			ro = cJSON_GetObjectItemCaseSensitive(st, "reorder");
			raw = cJSON_GetObjectItemCaseSensitive(st, "raw");
			if (cJSON_IsString(vs) && cJSON_IsString(vw)) {
				snprintf(c->state, sizeof(c->state), "%s",
				    vs->valuestring);
				snprintf(c->why, sizeof(c->why), "%s",
				    vw->valuestring);
			}
			break;
		}
	}
	/* The placement counters explain reorder streams only (a raw stream
	 * places whatever arrives); no_buffer means the same for both. */
	if (ro != NULL) {
		c->packets_in = count_of(ro, "packets_in");
		c->placed = count_of(ro, "placed");
		c->late = count_of(ro, "late");
		c->malformed = count_of(ro, "malformed");
		c->no_buffer = count_of(ro, "no_buffer");
		c->batches_no_buffer = count_of(ro, "batches_no_buffer");
	} else if (raw != NULL) {
		c->no_buffer = count_of(raw, "no_buffer");
	}
	cJSON_Delete(o);
	free(reply);
}

void
tool_say_malformed(const char *prog, long long n)
{
	fprintf(stderr, "%s: %lld packets were dropped as malformed "
	    "by the daemon: their length does not match payload_bytes of the "
	    "stream's config (or is too short for its sequence or batch "
	    "field); check the sender's layout\n", prog, n);
}

bool
tool_explain_unplaced(const char *prog, const char *stream,
		      const struct tool_counts *a, const struct tool_counts *b,
		      const char *when)
{
	long long in = b->packets_in - a->packets_in;
	long long late = b->late - a->late;
	long long bad = b->malformed - a->malformed;

	if (a->packets_in < 0 || b->packets_in < 0 || in <= 0 ||
	    b->placed != a->placed)
		return false;
	fprintf(stderr, "%s: %s: %lld packets arrived %s but "
	    "none was placed\n", prog, stream, in, when);
	if (late > 0)
		fprintf(stderr, "%s: %lld packets were dropped as "
		    "late, for batches the daemon had published: did the sender "
		    "restart its counter close behind where it was? The daemon "
		    "starts a new epoch after a batch's worth of late packets "
		    "in a row, or for a batch published longer ago than the "
		    "stream's resync_after_us (daqirid.yaml(5); daqirid(8) "
		    "RESYNC)\n", prog, late);
	if (bad > 0)
		tool_say_malformed(prog, bad);
	return true;
}

void
tool_say_connect(const char *prog, int neg_errno, const char *path)
{
	char hint[512];

	fprintf(stderr, "%s: %s\n", prog, daqiri_connect_hint(neg_errno, path,
	    hint, sizeof(hint)));
}
