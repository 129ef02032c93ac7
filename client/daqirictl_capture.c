/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daqirictl capture: what an rx queue really receives, to a pcap file;
 * and daqirictl trigger, the moment a recorder keeps the seconds around.
 * A tap session until stopped, its ring mapped (daqiri_tap_open()):
 * each frame goes from the worker's copy in shared memory straight into
 * the file with its arrival time in nanoseconds, no message per frame;
 * the frames the worker could not copy because the ring was full are
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

#include "daqirictl.h"
#include "desc.h"
#include "pcap_out.h"
#include "proto.h"

/* Between looks at a ring that was empty (one that had frames is drained
 * at once): at 100k frames/s the 4096 records hold 40 ms of them. */
#define CAPTURE_IDLE_NS		1000000L
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

static bool
want_more(const struct capture *c)
{
	return c->count == 0 || c->frames < c->count;
}

/* Write what the ring holds (up to --count) into the file: the frames
 * written, or -1 (said). */
static int
drain(struct capture *c, struct daqiri_tap *tap, struct pcap_out *w)
{
	struct daqiri_tap_frame f = { .size = sizeof(f) };
	int n = 0, r;

	while (want_more(c) && (r = daqiri_tap_next(tap, &f)) != 0) {
		if (r == -ENOTCONN) {
			fprintf(stderr, "daqirictl: capture: the daemon went "
			    "away (control connection closed); the file holds "
			    "every frame the tap took before\n");
			return -1;
		}
		if (r < 0) {
			fprintf(stderr, "daqirictl: capture: the tap's ring is "
			    "not valid: %s\n", strerror(-r));
			return -1;
		}
		if (f.caplen > c->snap)
			f.caplen = c->snap;
		if (pcap_out_write_cut(w, f.data, f.caplen, f.len,
		    f.rx_ns) < 0) {
			fprintf(stderr, "daqirictl: capture: %s\n",
			    pcap_out_error(w));
			return -1;
		}
		c->frames++;
		c->bytes += f.caplen;
		if (f.caplen < f.len)
			c->cut++;
		n++;
	}
	daqiri_tap_release(tap);
	return n;
}

static int
run(struct capture *c, struct daqiri_tap *tap, struct pcap_out *w)
{
	uint64_t end = c->seconds > 0 ? daqiri_mono_ns() +
	    (uint64_t)(c->seconds * 1e9) : UINT64_MAX;
	int n = 0;

	fprintf(stderr, "daqirictl: capture: %s to %s, %u bytes of each "
	    "frame; Ctrl-C to stop\n", c->queue, c->file, c->snap);
	while (!stop && want_more(c) && daqiri_mono_ns() < end) {
		if ((n = drain(c, tap, w)) < 0)
			break;
		if (n == 0) {
			struct timespec ts = { 0, CAPTURE_IDLE_NS };

			nanosleep(&ts, NULL);
		}
	}
	/* Stopped: what the ring holds arrived before the stop, so it goes
	 * into the file too. */
	if (n >= 0)
		n = drain(c, tap, w);
	(void)daqiri_tap_counts(tap, NULL, &c->full);
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
	struct daqiri_tap *tap = NULL;
	char err[PATH_MAX + 160];
	struct sigaction sa;
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
	rc = daqiri_tap_open(*d, c.queue, c.count != 0 &&
	    c.count <= (uint64_t)DAQIRI_TAP_COUNT_MAX ? (uint32_t)c.count : 0,
	    c.snap, &tap);
	if (rc < 0) {
		const char *e = daqiri_last_error(*d);

		if (rc == -ENOTCONN)
			fprintf(stderr, "daqirictl: capture: the daemon closed "
			    "the connection\n");
		else
			fprintf(stderr, "daqirictl: capture: %s: %s\n", c.queue,
			    e != NULL && e[0] != '\0' ? e : strerror(-rc));
		return 1;
	}
	po.snaplen = c.snap;
	po.force = c.force;
	if (pcap_out_open(c.file, &po, &w, err, sizeof(err)) < 0) {
		fprintf(stderr, "daqirictl: capture: %s\n", err);
		(void)daqiri_tap_close(tap);
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: a wait ends at once */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	t0 = daqiri_mono_ns();
	rc = run(&c, tap, w);
	(void)daqiri_tap_close(tap);
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
