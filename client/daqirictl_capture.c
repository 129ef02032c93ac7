/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daqirictl capture: what an rx queue really receives, to a pcap file;
 * and daqirictl trigger, the moment a recorder keeps the seconds around.
 * A tap session until stopped (the daemon's "tap" request), drained back
 * to back and written with each frame's arrival time in nanoseconds; the
 * frames the worker could not copy because the tap's ring was full are
 * counted (tap_full) and said at the end. How an operator sees what an
 * instrument sends when a stream looks wrong, and the input of a replay
 * (daqirid --replay).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "daqirictl.h"
#include "desc.h"
#include "pcap_out.h"
#include "proto.h"

/* Between reads of a tap that had nothing (a read that had frames is
 * followed by the next at once). */
#define CAPTURE_IDLE_NS		10000000L
#define CAPTURE_SNAP_DEFAULT	DAQIRI_TAP_SNAP_MAX

static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct capture {
	const char *queue, *file;
	uint64_t count;			/* 0: until stopped */
	double seconds;			/* 0: until stopped */
	uint32_t snap;
	bool force;
	/* what happened */
	uint64_t frames, bytes, full, cut;
};

/* One tap request (queue, action[, count, snap]); the reply (status ok)
 * in *out, else a message on stderr and -1. */
static int
tap_call(struct daqiri *d, const struct capture *c, const char *action,
	 uint32_t count, cJSON **out)
{
	cJSON *req = cJSON_CreateObject();

	if (req != NULL && (!cJSON_AddStringToObject(req, "type", "tap") ||
	    !cJSON_AddStringToObject(req, "queue", c->queue) ||
	    !cJSON_AddStringToObject(req, "action", action) ||
	    (strcmp(action, "start") == 0 &&
	    (!cJSON_AddNumberToObject(req, "count", count) ||
	    !cJSON_AddNumberToObject(req, "snap", c->snap))))) {
		cJSON_Delete(req);
		req = NULL;
	}
	return daqirictl_call(d, req, "capture", c->queue, out);
}

/* Write the frames of one read reply; how many, or -1 (said). */
static int
write_frames(struct capture *c, struct pcap_out *w, const cJSON *reply)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(reply, "frames"), *e;
	int n = 0;

	cJSON_ArrayForEach(e, a) {
		const cJSON *ns = cJSON_GetObjectItemCaseSensitive(e, "ns");
		const cJSON *len = cJSON_GetObjectItemCaseSensitive(e, "len");
		const cJSON *h = cJSON_GetObjectItemCaseSensitive(e, "data");
		size_t caplen;

		if (c->count != 0 && c->frames >= c->count)
			break;
		/* decoded in place: the reply is ours */
		if (!cJSON_IsNumber(ns) || !cJSON_IsNumber(len) ||
		    !cJSON_IsString(h) || (caplen = strlen(h->valuestring),
		    daqirictl_hex_decode(h->valuestring, &caplen) < 0) ||
		    caplen > c->snap || len->valuedouble < (double)caplen ||
		    len->valuedouble > (double)UINT32_MAX) {
			fprintf(stderr, "daqirictl: capture: a frame of the "
			    "daemon's reply is not valid\n");
			return -1;
		}
		if (pcap_out_write_cut(w, h->valuestring, (uint32_t)caplen,
		    (uint32_t)len->valuedouble, (uint64_t)ns->valuedouble) < 0) {
			fprintf(stderr, "daqirictl: capture: %s\n",
			    pcap_out_error(w));
			return -1;
		}
		c->frames++;
		c->bytes += caplen;
		if (caplen < (size_t)len->valuedouble)
			c->cut++;
		n++;
	}
	return n;
}

/* One read of the tap into the file: the frames written, or -1 (said);
 * *done when the daemon says a bounded session has given all. */
static int
read_once(struct daqiri *d, struct capture *c, struct pcap_out *w, bool *done)
{
	const cJSON *v;
	cJSON *o;
	int n;

	if (tap_call(d, c, "read", 0, &o) < 0)
		return -1;
	n = write_frames(c, w, o);
	v = cJSON_GetObjectItemCaseSensitive(o, "full");
	if (cJSON_IsNumber(v))
		c->full = (uint64_t)v->valuedouble;
	*done = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "done"));
	cJSON_Delete(o);
	return n;
}

static bool
want_more(const struct capture *c)
{
	return c->count == 0 || c->frames < c->count;
}

static int
run(struct daqiri *d, struct capture *c, struct pcap_out *w)
{
	uint64_t end = c->seconds > 0 ? daqiri_mono_ns() +
	    (uint64_t)(c->seconds * 1e9) : UINT64_MAX;
	bool done = false;
	cJSON *o;
	int n = 0;

	fprintf(stderr, "daqirictl: capture: %s to %s, %u bytes of each "
	    "frame; Ctrl-C to stop\n", c->queue, c->file, c->snap);
	while (!stop && !done && want_more(c) && daqiri_mono_ns() < end) {
		if ((n = read_once(d, c, w, &done)) < 0)
			break;
		if (n == 0) {
			struct timespec ts = { 0, CAPTURE_IDLE_NS };

			nanosleep(&ts, NULL);
		}
	}
	/* Stopped: what the ring holds arrived before the stop, so it goes
	 * into the file too, until a read finds it empty. */
	if (n >= 0)
		do
			n = read_once(d, c, w, &done);
		while (n > 0 && want_more(c));
	if (tap_call(d, c, "stop", 0, &o) == 0)
		cJSON_Delete(o);
	return n < 0 ? -1 : 0;
}

static int
parse(struct capture *c, int argc, char **argv)
{
	char *end;

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--count") == 0 && i + 1 < argc) {
			errno = 0;
			c->count = strtoull(argv[++i], &end, 10);
			if (errno != 0 || *end != '\0' || argv[i][0] == '-' ||
			    c->count == 0)
				return fprintf(stderr, "daqirictl: capture: "
				    "--count: a positive number of frames; got "
				    "'%s'\n", argv[i]), -1;
		} else if (strcmp(a, "--seconds") == 0 && i + 1 < argc) {
			c->seconds = strtod(argv[++i], &end);
			if (*end != '\0' || !(c->seconds > 0) ||
			    c->seconds > 86400 * 365.0)
				return fprintf(stderr, "daqirictl: capture: "
				    "--seconds: 0 < S; got '%s'\n", argv[i]),
				    -1;
		} else if (strcmp(a, "--snap") == 0 && i + 1 < argc) {
			unsigned long v = strtoul(argv[++i], &end, 10);

			if (*end != '\0' || v < 64 || v > DAQIRI_TAP_SNAP_MAX)
				return fprintf(stderr, "daqirictl: capture: "
				    "--snap: bytes of each frame, 64..%u; got "
				    "'%s'\n", DAQIRI_TAP_SNAP_MAX, argv[i]), -1;
			c->snap = (uint32_t)v;
		} else if (strcmp(a, "--force") == 0) {
			c->force = true;
		} else if (a[0] == '-' && a[1] != '\0') {
			return fprintf(stderr, "daqirictl: capture: unknown "
			    "option '%s' (--count N, --seconds S, --snap B, "
			    "--force)\n", a), -1;
		} else if (c->queue == NULL) {
			c->queue = a;
		} else if (c->file == NULL) {
			c->file = a;
		} else {
			return fprintf(stderr, "daqirictl: capture: '%s' is one "
			    "argument too many\n", a), -1;
		}
	}
	if (c->file == NULL)
		return fprintf(stderr, "daqirictl: capture: needs IFACE/QUEUE "
		    "and FILE (an rx queue, as daqirictl status lists them, "
		    "and the pcap file to write)\nusage: daqirictl capture "
		    "%s\n", DAQIRICTL_CAPTURE_USAGE), -1;
	return 0;
}

int
daqirictl_capture(const char *sock, struct daqiri **d, int argc, char **argv)
{
	struct capture c = { .snap = CAPTURE_SNAP_DEFAULT };
	struct pcap_out_opts po = { .snaplen = 0 };
	struct pcap_out *w = NULL;
	struct sigaction sa;
	char err[PATH_MAX + 160];
	cJSON *o;
	uint64_t t0;
	double dt;
	int rc;

	if (parse(&c, argc, argv) < 0)
		return 2;
	if ((rc = daqiri_connect(sock, d)) < 0) {
		char hint[512];

		fprintf(stderr, "daqirictl: %s\n", daqiri_connect_hint(rc, sock,
		    hint, sizeof(hint)));
		return 1;
	}
	/* A bounded session when it fits one: no frame taken past count.
	 * The file is made once the daemon agreed: a refusal leaves none. */
	if (tap_call(*d, &c, "start", c.count != 0 &&
	    c.count <= (uint64_t)DAQIRI_TAP_COUNT_MAX ? (uint32_t)c.count : 0,
	    &o) < 0)
		return 1;
	cJSON_Delete(o);
	po.snaplen = c.snap;
	po.force = c.force;
	if (pcap_out_open(c.file, &po, &w, err, sizeof(err)) < 0) {
		fprintf(stderr, "daqirictl: capture: %s\n", err);
		if (tap_call(*d, &c, "stop", 0, &o) == 0)
			cJSON_Delete(o);
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: a wait ends at once */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	t0 = daqiri_mono_ns();
	rc = run(*d, &c, w);
	if (pcap_out_close(w, err, sizeof(err)) < 0 && rc == 0) {
		fprintf(stderr, "daqirictl: capture: %s\n", err);
		rc = -1;
	}
	dt = (double)(daqiri_mono_ns() - t0) / 1e9;
	fprintf(stderr, "daqirictl: capture: %s: %llu frames, %llu bytes in "
	    "%.1f s to %s\n", c.queue, (unsigned long long)c.frames,
	    (unsigned long long)c.bytes, dt, c.file);
	if (c.cut > 0)
		fprintf(stderr, "daqirictl: capture: %llu frames were longer "
		    "than --snap %u: the file has their first bytes and their "
		    "length\n", (unsigned long long)c.cut, c.snap);
	if (c.full > 0)
		fprintf(stderr, "daqirictl: capture: %llu frames were not "
		    "captured: the tap's ring was full (tap_full); the streams "
		    "lost nothing; a smaller --snap lets it keep up with "
		    "more\n", (unsigned long long)c.full);
	if (c.frames == 0 && rc == 0)
		fprintf(stderr, "daqirictl: capture: no frame reached %s: is "
		    "the instrument sending, and to this interface's address "
		    "and port? (daqirictl doctor tells what arrives where)\n",
		    c.queue);
	return rc < 0 ? 1 : 0;
}

/* The daemon's count of STREAM's triggers and its clock at this one. */
int
daqirictl_trigger(const char *sock, bool json, struct daqiri **d,
		  const char *stream)
{
	cJSON *req = cJSON_CreateObject(), *o;
	const cJSON *n, *ns;
	char *text;
	int r;

	if (*d == NULL && (r = daqiri_connect(sock, d)) < 0) {
		char hint[512];

		cJSON_Delete(req);
		fprintf(stderr, "daqirictl: %s\n", daqiri_connect_hint(r, sock,
		    hint, sizeof(hint)));
		return 1;
	}
	if (req != NULL && (!cJSON_AddStringToObject(req, "type", "trigger") ||
	    !cJSON_AddStringToObject(req, "stream", stream))) {
		cJSON_Delete(req);
		req = NULL;
	}
	if (daqirictl_call(*d, req, "trigger", stream, &o) < 0)
		return 1;
	n = cJSON_GetObjectItemCaseSensitive(o, "count");
	ns = cJSON_GetObjectItemCaseSensitive(o, "ns");
	if (json) {
		text = cJSON_PrintUnformatted(o);
		if (text != NULL)
			printf("%s\n", text);
		free(text);
	} else if (cJSON_IsNumber(n) && cJSON_IsNumber(ns)) {
		printf("%s: trigger %.0f at %.0f ns (CLOCK_MONOTONIC)\n",
		    stream, n->valuedouble, ns->valuedouble);
	}
	cJSON_Delete(o);
	return fflush(stdout) != 0 ? 1 : 0;
}
