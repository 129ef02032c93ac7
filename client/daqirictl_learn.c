/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daqirictl learn: tap an rx queue for a few thousand frames (the
 * daemon's "tap" request), infer the instrument's packet layout from
 * them (learn.c) and print it as a reorder_configs entry with how sure
 * each part is. Bring-up's hardest step: which bytes count packets.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "daqirictl.h"
#include "desc.h"
#include "learn.h"
#include "proto.h"

#define LEARN_POLL_NS	50000000ull	/* between reads of the tap */
#define LEARN_SECONDS	10.0
#define LEARN_TENSOR	(1u << 20)	/* suggested tensor bytes */
/* Bytes of each frame learn asks for: the daemon's default snap, which
 * holds any header a sequence field may be in. */
#define LEARN_SNAP	DAQIRI_TAP_SNAP_DEFAULT

struct frames {
	struct learn_frame *f;
	uint32_t n;
	uint8_t *bytes;			/* LEARN_SNAP per frame */
};

int
daqirictl_call(struct daqiri *d, cJSON *req, const char *cmd, const char *what,
	       cJSON **out)
{
	char *text = req != NULL ? cJSON_PrintUnformatted(req) : NULL;
	char *reply = NULL;
	const cJSON *e, *m;
	int r = -ENOMEM;
	cJSON *o;

	*out = NULL;
	cJSON_Delete(req);
	if (text != NULL)
		r = daqiri_request(d, text, &reply);
	free(text);
	if (reply == NULL) {
		fprintf(stderr, "daqirictl: %s: %s\n", cmd, r == -ENOTCONN ?
		    "the daemon closed the connection" : strerror(-r));
		return -1;
	}
	o = cJSON_Parse(reply);
	free(reply);
	e = cJSON_GetObjectItemCaseSensitive(o, "error");
	if (o == NULL || e != NULL) {
		m = cJSON_GetObjectItemCaseSensitive(e, "message");
		fprintf(stderr, "daqirictl: %s: %s: %s\n", cmd, what,
		    cJSON_IsString(m) ? m->valuestring : "bad reply");
		cJSON_Delete(o);
		return -1;
	}
	*out = o;
	return 0;
}

static int
tap_request(struct daqiri *d, const char *queue, const char *action,
	    uint32_t count, cJSON **out)
{
	cJSON *req = cJSON_CreateObject();

	if (req != NULL && (!cJSON_AddStringToObject(req, "type", "tap") ||
	    !cJSON_AddStringToObject(req, "queue", queue) ||
	    !cJSON_AddStringToObject(req, "action", action) ||
	    (count != 0 && !cJSON_AddNumberToObject(req, "count", count)))) {
		cJSON_Delete(req);
		req = NULL;
	}
	return daqirictl_call(d, req, "learn", queue, out);
}

/* Whether range text "LO-HI" (flow_list's form) holds port p; absent
 * holds every port. */
static bool
port_in(const cJSON *m, const char *key, unsigned p)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, key);
	unsigned lo, hi;

	if (v == NULL)
		return true;
	return cJSON_IsString(v) &&
	    sscanf(v->valuestring, "%u-%u", &lo, &hi) == 2 && lo <= p &&
	    p <= hi;
}

static bool
addr_is(const cJSON *m, const char *key, uint32_t a)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, key);
	char buf[16];

	if (v == NULL)
		return true;
	snprintf(buf, sizeof(buf), "%u.%u.%u.%u", a >> 24, (a >> 16) & 255,
	    (a >> 8) & 255, a & 255);
	return cJSON_IsString(v) && strcmp(v->valuestring, buf) == 0;
}

/* The id of the first flow of the interface that matches the learnt
 * flow's packets, or -1 (none, or the list could not be had). */
static long
matching_flow(struct daqiri *d, const char *queue, const struct learn_result *r)
{
	cJSON *req = cJSON_CreateObject(), *o;
	const cJSON *ifs, *fl, *e, *m, *id, *len;
	char iface[DAQIRI_NAME_MAX];
	long found = -1;

	snprintf(iface, sizeof(iface), "%.*s", (int)strcspn(queue, "/"),
	    queue);
	if (req != NULL && (!cJSON_AddStringToObject(req, "type", "flow_list") ||
	    !cJSON_AddStringToObject(req, "interface", iface))) {
		cJSON_Delete(req);
		req = NULL;
	}
	if (daqirictl_call(d, req, "learn", "flow list", &o) < 0)
		return -1;
	ifs = cJSON_GetObjectItemCaseSensitive(o, "interfaces");
	fl = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ifs, 0),
	    "flows");
	cJSON_ArrayForEach(e, fl) {
		m = cJSON_GetObjectItemCaseSensitive(e, "match");
		id = cJSON_GetObjectItemCaseSensitive(e, "id");
		len = cJSON_GetObjectItemCaseSensitive(m, "ipv4_len");
		if (cJSON_IsNumber(id) && port_in(m, "udp_src", r->udp_src) &&
		    port_in(m, "udp_dst", r->udp_dst) &&
		    addr_is(m, "ipv4_src", r->ipv4_src) &&
		    addr_is(m, "ipv4_dst", r->ipv4_dst) &&
		    (len == NULL || (cJSON_IsNumber(len) &&
		    len->valuedouble == (double)r->len - 14))) {
			found = (long)id->valuedouble;
			break;
		}
	}
	cJSON_Delete(o);
	return found;
}

/* The frames of one read reply, appended to fr. */
static int
take_frames(const cJSON *reply, struct frames *fr, uint32_t max)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(reply, "frames"), *e;

	cJSON_ArrayForEach(e, a) {
		const cJSON *ns = cJSON_GetObjectItemCaseSensitive(e, "ns");
		const cJSON *len = cJSON_GetObjectItemCaseSensitive(e, "len");
		const cJSON *h = cJSON_GetObjectItemCaseSensitive(e, "data");
		struct learn_frame *f = &fr->f[fr->n];
		uint8_t *b = fr->bytes + (size_t)fr->n * LEARN_SNAP;
		size_t n;

		if (fr->n == max)
			break;
		/* decoded in place (the reply is ours), then kept */
		if (!cJSON_IsNumber(ns) || !cJSON_IsNumber(len) ||
		    !cJSON_IsString(h) || (n = strlen(h->valuestring),
		    daqirictl_hex_decode(h->valuestring, &n) < 0) ||
		    n > LEARN_SNAP)
			return -1;
		memcpy(b, h->valuestring, n);
		f->data = b;
		f->caplen = (uint32_t)n;
		f->len = (uint32_t)len->valuedouble;
		f->ns = (uint64_t)ns->valuedouble;
		fr->n++;
	}
	return 0;
}

/* Tap queue until count frames came or seconds passed. */
static int
collect(struct daqiri *d, const char *queue, uint32_t count, double seconds,
	struct frames *fr, uint64_t *full)
{
	uint64_t end = daqiri_mono_ns() + (uint64_t)(seconds * 1e9);
	const cJSON *done, *fu;
	cJSON *o;
	int rc = 0;

	if (tap_request(d, queue, "start", count, &o) < 0)
		return -1;
	cJSON_Delete(o);
	for (;;) {
		struct timespec ts = { 0, LEARN_POLL_NS };

		if (tap_request(d, queue, "read", 0, &o) < 0)
			return -1;
		if (take_frames(o, fr, count) < 0) {
			fprintf(stderr, "daqirictl: learn: a frame of the "
			    "daemon's reply is not valid\n");
			rc = -1;
		}
		done = cJSON_GetObjectItemCaseSensitive(o, "done");
		fu = cJSON_GetObjectItemCaseSensitive(o, "full");
		*full = cJSON_IsNumber(fu) ? (uint64_t)fu->valuedouble : 0;
		cJSON_Delete(o);
		if (rc < 0 || cJSON_IsTrue(done) || fr->n >= count ||
		    daqiri_mono_ns() >= end)
			break;
		nanosleep(&ts, NULL);
	}
	if (tap_request(d, queue, "stop", 0, &o) == 0)
		cJSON_Delete(o);
	return rc;
}

static void
ip_text(uint32_t a, char *buf, size_t cap)
{
	snprintf(buf, cap, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255,
	    (a >> 8) & 255, a & 255);
}

/* Packets per batch to suggest without a batch field: a power of two
 * making about LEARN_TENSOR bytes of samples, within the counter. */
static uint32_t
suggest_ppb(const struct learn_result *r)
{
	uint32_t p = 1;

	while (p < 65536 && p < (1ull << (r->seq_bit_width - 1)) &&
	    (uint64_t)p * 2 * (r->payload_bytes > 0 ? r->payload_bytes : 1) <=
	    LEARN_TENSOR)
		p *= 2;
	return p;
}

static void
print_text(const char *queue, const struct learn_result *r, uint32_t n,
	   uint64_t full, double secs, long flow)
{
	char src[16], dst[16], fid[24];
	uint32_t ppb = r->has_batch ? r->ppb : suggest_ppb(r);
	uint32_t window = r->reorder_depth / ppb + 2;

	ip_text(r->ipv4_src, src, sizeof(src));
	ip_text(r->ipv4_dst, dst, sizeof(dst));
	printf("daqirictl learn %s: %u frames in %.2f s", queue, n, secs);
	if (r->pps > 0)
		printf(": %.0f packets/s, %.3f Gb/s", r->pps, r->gbps);
	printf("\n  flow:     udp %s:%u -> %s:%u (%u frames", src, r->udp_src,
	    dst, r->udp_dst, r->frames);
	if (r->sources_other > 0)
		printf(", %u of them from other sources", r->sources_other);
	printf("; %u to other destinations or not UDP/IPv4)\n", r->other);
	if (full > 0)
		printf("  (%llu frames were not copied: the tap was full; "
		    "what follows did not see them)\n",
		    (unsigned long long)full);
	printf("  frames:   %u bytes", r->len);
	if (r->len_other > 0)
		printf(" (%u frames of other lengths: one stream needs one "
		    "length)", r->len_other);
	printf("\n  sequence: bit_offset %u, bit_width %u (frame bytes "
	    "%u..%u), big-endian; %.1f%% of steps small; confidence %s\n",
	    r->seq_bit_offset, r->seq_bit_width, r->seq_bit_offset / 8,
	    (r->seq_bit_offset + r->seq_bit_width - 1) / 8,
	    100 * r->seq_small, learn_conf_name(r->seq_conf));
	if (r->seq_wrapped)
		printf("            it wrapped at 2^%u while tapped\n",
		    r->seq_bit_width);
	else if (r->seq_bit_width < 32 && r->seq_zero_above > 0)
		printf("            it did not wrap; the %u byte(s) before it "
		    "stayed 0: it may be wider\n", r->seq_zero_above);
	if (r->has_batch)
		printf("  batch:    a batch field at bit_offset %u, bit_width "
		    "%u is the counter's top bits: %u packets per batch\n",
		    r->batch_bit_offset, r->batch_bit_width, r->ppb);
	else
		printf("  batch:    no batch field: packets_per_batch is yours "
		    "to choose (a power of two up to 2^%u); %u makes %.2f MiB "
		    "tensors of samples, %.1f a second\n", r->seq_bit_width,
		    ppb, (double)ppb * r->payload_bytes / 1048576.0,
		    r->pps / ppb);
	printf("  samples:  frame bytes %u..%u (the first byte after the "
	    "fields that differs between packets): payload_byte_offset %u, "
	    "%u bytes; their type is not in the packets: set data_types\n",
	    r->payload_offset, r->len > 0 ? r->len - 1 : 0, r->payload_offset,
	    r->payload_bytes);
	printf("  seen:     %llu of %llu sequence numbers (%.2f%% lost), "
	    "%llu duplicates, reorder depth %u packets, %u jump(s) of the "
	    "counter (a sender restart or a long gap)\n",
	    (unsigned long long)r->unique, (unsigned long long)r->expected,
	    r->expected > 0 ? 100.0 * (double)(r->expected - r->unique) /
	    (double)r->expected : 0, (unsigned long long)r->duplicates,
	    r->reorder_depth, r->restarts);
	if (flow >= 0) {
		snprintf(fid, sizeof(fid), "%ld", flow);
		printf("\n# a reorder_configs entry for these packets (flow %ld "
		    "of the interface matches them; name an output region and "
		    "add data_types):\n", flow);
	} else {
		snprintf(fid, sizeof(fid), "FLOW_ID");
		printf("\n# a reorder_configs entry for these packets (no flow "
		    "of the interface matches them yet: add one with match: "
		    "{udp_dst: %u}; name an output region and add "
		    "data_types):\n", r->udp_dst);
	}
	printf("- name: learned\n"
	    "  reorder_type: cpu\n"
	    "  memory_region: REGION\n"
	    "  flow_ids: [%s]\n"
	    "  payload_byte_offset: %u\n"
	    "  payload_bytes: %u\n"
	    "  method:\n"
	    "    seq_packets_per_batch:\n"
	    "      sequence_number:\n"
	    "        bit_offset: %u\n"
	    "        bit_width: %u\n"
	    "      packets_per_batch: %u\n"
	    "  window: %u\n",
	    fid, r->payload_offset, r->payload_bytes, r->seq_bit_offset,
	    r->seq_bit_width, ppb, window < 4 ? 4 : window > 64 ? 64 : window);
}

static int
print_json(const char *queue, const struct learn_result *r, uint32_t n,
	   uint64_t full, long flow)
{
	cJSON *o = cJSON_CreateObject();
	char *text;

#define NUM(k, v) cJSON_AddNumberToObject(o, k, (double)(v))
	cJSON_AddStringToObject(o, "queue", queue);
	NUM("frames_tapped", n);
	NUM("tap_full", full);
	NUM("frames", r->frames);
	NUM("other", r->other);
	NUM("udp_src", r->udp_src);
	NUM("udp_dst", r->udp_dst);
	NUM("sources_other", r->sources_other);
	NUM("len", r->len);
	NUM("len_other", r->len_other);
	NUM("pps", r->pps);
	NUM("gbps", r->gbps);
	cJSON_AddStringToObject(o, "confidence", learn_conf_name(r->seq_conf));
	if (r->seq_conf != LEARN_NONE) {
		NUM("seq_bit_offset", r->seq_bit_offset);
		NUM("seq_bit_width", r->seq_bit_width);
		NUM("seq_small", r->seq_small);
		cJSON_AddBoolToObject(o, "seq_wrapped", r->seq_wrapped);
		if (r->has_batch) {
			NUM("batch_bit_offset", r->batch_bit_offset);
			NUM("batch_bit_width", r->batch_bit_width);
		}
		/* from the batch field, else suggested */
		NUM("packets_per_batch", r->has_batch ? r->ppb :
		    suggest_ppb(r));
		cJSON_AddBoolToObject(o, "packets_per_batch_suggested",
		    !r->has_batch);
		if (flow >= 0)
			NUM("flow_id", flow);
		NUM("payload_byte_offset", r->payload_offset);
		NUM("payload_bytes", r->payload_bytes);
		NUM("expected", r->expected);
		NUM("unique", r->unique);
		NUM("duplicates", r->duplicates);
		NUM("reorder_depth", r->reorder_depth);
		NUM("restarts", r->restarts);
	} else {
		cJSON_AddStringToObject(o, "why", r->why);
	}
#undef NUM
	if ((text = cJSON_Print(o)) == NULL) {
		cJSON_Delete(o);
		return -1;
	}
	printf("%s\n", text);
	free(text);
	cJSON_Delete(o);
	return 0;
}

int
daqirictl_learn(const char *sock, bool json, struct daqiri **d, int argc,
		char **argv)
{
	uint32_t count = DAQIRI_TAP_COUNT_DEFAULT;
	double seconds = LEARN_SECONDS;
	const char *queue = NULL;
	struct frames fr = { NULL, 0, NULL };
	struct learn_result r;
	uint64_t full = 0, t0;
	long flow;
	char *end;
	int rc = 1;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
			unsigned long v = strtoul(argv[++i], &end, 10);

			if (*end != '\0' || v < 16 || v > DAQIRI_TAP_COUNT_MAX)
				return fprintf(stderr, "daqirictl: learn: "
				    "--count: a number of frames, 16..%u; got "
				    "'%s'\n", DAQIRI_TAP_COUNT_MAX, argv[i]), 2;
			count = (uint32_t)v;
		} else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
			seconds = strtod(argv[++i], &end);
			if (*end != '\0' || !(seconds > 0) || seconds > 3600)
				return fprintf(stderr, "daqirictl: learn: "
				    "--seconds: 0 < S <= 3600; got '%s'\n",
				    argv[i]), 2;
		} else if (argv[i][0] == '-') {
			return fprintf(stderr, "daqirictl: learn: unknown "
			    "option '%s' (--count N, --seconds S)\n", argv[i]),
			    2;
		} else if (queue == NULL) {
			queue = argv[i];
		} else {
			return fprintf(stderr, "daqirictl: learn: '%s' is one "
			    "argument too many\n", argv[i]), 2;
		}
	}
	if (queue == NULL)
		return fprintf(stderr, "daqirictl: learn: needs IFACE/QUEUE "
		    "(the rx queue the instrument's packets reach; daqirictl "
		    "status lists them)\nusage: daqirictl learn %s\n",
		    DAQIRICTL_LEARN_USAGE), 2;
	if ((rc = daqiri_connect(sock, d)) < 0) {
		char hint[512];

		fprintf(stderr, "daqirictl: %s\n", daqiri_connect_hint(rc, sock,
		    hint, sizeof(hint)));
		return 1;
	}
	rc = 1;
	fr.f = calloc(count, sizeof(*fr.f));
	fr.bytes = malloc((size_t)count * LEARN_SNAP);
	if (fr.f == NULL || fr.bytes == NULL) {
		fprintf(stderr, "daqirictl: learn: out of memory\n");
		goto out;
	}
	t0 = daqiri_mono_ns();
	if (collect(*d, queue, count, seconds, &fr, &full) < 0)
		goto out;
	if (fr.n == 0) {
		fprintf(stderr, "daqirictl: learn: no frame reached %s in %.1f "
		    "s: is the instrument sending, and to this interface's "
		    "address and port? (daqirictl doctor tells what arrives "
		    "where)\n", queue, seconds);
		goto out;
	}
	learn_analyse(fr.f, fr.n, &r);
	flow = r.seq_conf != LEARN_NONE ? matching_flow(*d, queue, &r) : -1;
	if (json)
		rc = print_json(queue, &r, fr.n, full, flow) < 0;
	else if (r.seq_conf == LEARN_NONE)
		fprintf(stderr, "daqirictl: learn: %s: %u frames, %u of one UDP "
		    "flow: %s\n", queue, fr.n, r.frames, r.why);
	else
		print_text(queue, &r, fr.n, full,
		    (double)(daqiri_mono_ns() - t0) / 1e9, flow);
	if (r.seq_conf == LEARN_NONE || r.seq_conf == LEARN_LOW)
		rc = 1;
	else if (!json)
		rc = 0;
out:
	free(fr.f);
	free(fr.bytes);
	return rc;
}
