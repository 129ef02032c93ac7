/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daqirictl send: payloads out of a tx queue through a TX channel of
 * libdaqiri-client, used as any program would use it (the daemon writes
 * every header from its configuration; the input gives payloads only).
 * The input is read and checked whole before anything goes, so a line
 * too long for the channel is an error naming it, never cut short.
 * Called from daqirictl.c's command table.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "daqirictl.h"

#define SEND_WAIT_MS	30000	/* longest wait for a completion */

/* One payload of the input: len bytes at off of the text (hex lines
 * decoded in place), from line `line`. */
struct payload {
	size_t off;
	size_t len;
	unsigned long line;
};

int
daqirictl_hex_decode(char *p, size_t *len)
{
	size_t i = 0, o = 0;
	char two[3] = "";

	while (i < *len) {
		if (p[i] == ' ' || p[i] == '\t' || p[i] == '\r') {
			i++;
			continue;
		}
		if (!isxdigit((unsigned char)p[i]) || i + 1 >= *len ||
		    !isxdigit((unsigned char)p[i + 1])) {
			/* 1-based: the digit without its pair, or the
			 * character that is no digit */
			*len = isxdigit((unsigned char)p[i]) && i + 1 < *len ?
			    i + 2 : i + 1;
			return -1;
		}
		memcpy(two, p + i, 2);
		p[o++] = (char)strtoul(two, NULL, 16);
		i += 2;
	}
	*len = o;
	return 0;
}

/* The whole of fp into *buf (malloc'd): its length, or -1 with errno. */
static ssize_t
slurp(FILE *fp, char **buf)
{
	size_t cap = 0, n = 0, k;
	char *p = NULL, *q;

	do {
		if (n == cap) {
			cap = cap != 0 ? cap * 2 : 65536;
			if ((q = realloc(p, cap)) == NULL) {
				free(p);
				errno = ENOMEM;
				return -1;
			}
			p = q;
		}
		n += k = fread(p + n, 1, cap - n, fp);
	} while (k > 0);
	if (ferror(fp)) {
		free(p);
		return -1;
	}
	*buf = p;
	return (ssize_t)n;
}

/* Split text into payloads: one per line, or the whole (raw). -1 after
 * saying why (a bad hex line). */
static ssize_t
split_payloads(char *text, size_t n, bool hex, bool raw, const char *name,
	       struct payload **out)
{
	size_t i = 0, e, np = 1, len;
	struct payload *v;
	const char *q;

	for (q = text; !raw && (q = memchr(q, '\n', n - (size_t)(q - text)))
	    != NULL; q++)
		np++;
	v = malloc(np * sizeof(*v));
	np = 0;
	*out = v;
	if (v == NULL)
		return -1;
	if (raw) {
		v[0] = (struct payload){ 0, n, 1 };
		return 1;
	}
	while (i < n) {
		for (e = i; e < n && text[e] != '\n'; e++)
			;
		len = e - i;
		if (hex && daqirictl_hex_decode(text + i, &len) < 0) {
			fprintf(stderr, "daqirictl: send: %s:%zu: not hex at "
			    "column %zu (--hex lines are pairs of hex "
			    "digits)\n", name, np + 1, len);
			return -1;
		}
		v[np] = (struct payload){ i, len, np + 1 };
		np++;
		i = e + 1;
	}
	return (ssize_t)np;
}

/* After the payloads went: what failed, and why. 0 or 1. */
static int
send_report(bool json, const struct daqiri_tx_stats *st, size_t n,
	    bool count)
{
	if (json)
		printf("{\"queue\":\"%s\",\"payloads\":%zu,\"sent\":%llu,"
		    "\"failed\":%llu,\"too_big\":%llu,\"engine_error\":%llu,"
		    "\"stopped\":%llu,\"ring_full\":%llu}\n", st->queue, n,
		    (unsigned long long)st->sent,
		    (unsigned long long)st->failed,
		    (unsigned long long)st->too_big,
		    (unsigned long long)st->engine_error,
		    (unsigned long long)st->stopped,
		    (unsigned long long)st->ring_full);
	else if (count)
		printf("%llu\n", (unsigned long long)st->sent);
	if (st->failed == 0)
		return 0;
	fprintf(stderr, "daqirictl: send: %llu of %zu payloads failed on %s:",
	    (unsigned long long)st->failed, n, st->queue);
	if (st->too_big)
		fprintf(stderr, " %llu too big (the queue's largest payload "
		    "is %u bytes)", (unsigned long long)st->too_big,
		    st->buf_size);
	if (st->engine_error)
		fprintf(stderr, "%s %llu refused by the engine (daqirid's "
		    "log says why)", st->too_big ? "," : "",
		    (unsigned long long)st->engine_error);
	if (st->stopped)
		fprintf(stderr, "%s %llu not sent: the queue stopped",
		    st->too_big || st->engine_error ? "," : "",
		    (unsigned long long)st->stopped);
	fputc('\n', stderr);
	return 1;
}

/* Take a buffer, copy p in and submit it; waits while none is free. */
static int
send_one(struct daqiri_tx *tx, const char *p, size_t len)
{
	struct daqiri_tx_buf b;
	int r;

	while ((r = daqiri_tx_buf(tx, &b)) == -EAGAIN)
		if ((r = daqiri_tx_wait(tx, SEND_WAIT_MS)) < 0)
			return r;
	if (r < 0)
		return r;
	memcpy(b.data, p, len);
	b.len = (uint32_t)len;
	r = daqiri_tx_send(tx, &b, 1);
	return r == 1 ? 0 : r < 0 ? r : -EAGAIN;
}

int
daqirictl_send(const char *sock, bool json, struct daqiri **d, int argc,
	       char **argv)
{
	struct daqiri_tx_stats st = { .size = sizeof(st) };
	const char *pos[2], *name;
	struct daqiri_tx *tx = NULL;
	struct payload *pl = NULL;
	bool hex = false, raw = false, count = false;
	char *text = NULL;
	ssize_t n, np = 0, i;
	int npos = 0, r, rc = 1;
	FILE *fp;

	for (i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--hex") == 0)
			hex = true;
		else if (strcmp(argv[i], "--raw") == 0)
			raw = true;
		else if (strcmp(argv[i], "--count") == 0)
			count = true;
		else if (argv[i][0] == '-' && argv[i][1] != '\0')
			return fprintf(stderr, "daqirictl: send: unknown "
			    "option '%s' (--hex, --raw, --count)\n",
			    argv[i]), 2;
		else if (npos < 2)
			pos[npos++] = argv[i];
		else
			return fprintf(stderr, "daqirictl: send: '%s' is one "
			    "argument too many\n", argv[i]), 2;
	}
	if (npos != 2 || (hex && raw))
		return fprintf(stderr, "daqirictl: send: %s\nusage: daqirictl "
		    "send %s\n", npos != 2 ? "needs IFACE/TXQ and FILE" :
		    "--hex and --raw exclude each other",
		    DAQIRICTL_SEND_USAGE), 2;
	name = strcmp(pos[1], "-") == 0 ? "stdin" : pos[1];
	fp = strcmp(pos[1], "-") == 0 ? stdin : fopen(pos[1], "rb");
	if (fp == NULL || (errno = 0, n = slurp(fp, &text)) < 0) {
		fprintf(stderr, "daqirictl: send: %s: %s\n", name,
		    strerror(errno));
		goto out;
	}
	if (fp != stdin)
		fclose(fp);
	fp = NULL;
	np = split_payloads(text, (size_t)n, hex, raw, name, &pl);
	if (np < 0)
		goto out;
	if ((r = daqiri_connect(sock, d)) < 0) {
		char hint[512];

		fprintf(stderr, "daqirictl: %s\n", daqiri_connect_hint(r,
		    sock, hint, sizeof(hint)));
		goto out;
	}
	r = daqiri_tx_open(*d, pos[0], NULL, &tx);
	if (r < 0) {
		const char *why = daqiri_last_error(*d);

		/* a refusal names who may (the daemon's admin_group) */
		fprintf(stderr, "daqirictl: send: %s: %s\n", pos[0],
		    why[0] != '\0' ? why : strerror(-r));
		goto out;
	}
	daqiri_tx_stats(tx, &st);
	/* Nothing goes unless everything fits: no payload is cut short. */
	for (i = 0; i < np; i++)
		if (pl[i].len > st.buf_size) {
			fprintf(stderr, "daqirictl: send: %s:%lu: %s of %zu "
			    "bytes is longer than the largest payload of %s "
			    "(%u bytes)\n", name, pl[i].line, raw ? "input" :
			    "line", pl[i].len, pos[0], st.buf_size);
			goto out;
		}
	for (i = 0; i < np; i++)
		if ((r = send_one(tx, text + pl[i].off, pl[i].len)) < 0)
			break;
	if (r >= 0)
		r = daqiri_tx_flush(tx, SEND_WAIT_MS);
	if (r < 0) {
		fprintf(stderr, "daqirictl: send: %s: %s\n", pos[0],
		    r == -ETIMEDOUT ? "the payloads did not complete within "
		    "30 s: is daqirid's tx worker stuck?" :
		    daqiri_last_error(*d)[0] ?
		    daqiri_last_error(*d) : strerror(-r));
		goto out;
	}
	daqiri_tx_stats(tx, &st);
	rc = send_report(json, &st, (size_t)np, count);
out:
	if (fp != NULL && fp != stdin)
		fclose(fp);
	daqiri_tx_close(tx);
	free(pl);
	free(text);
	return rc;
}
