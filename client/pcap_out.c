/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pcap_out (pcap_out.h): frames to pcap files over libpcap's savefile
 * writer, with nanosecond timestamps and tcpdump's -C / -G rotation. We
 * open each file ourselves (no overwrite unless forced, close-on-exec, a
 * large stdio buffer) and hand it to pcap_dump_fopen().
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pcap/pcap.h>

#include "pcap_out.h"

/* Bytes of the file header and of each record's header. */
#define PCAP_FILE_HDR	24u
#define PCAP_REC_HDR	16u

struct pcap_out {
	pcap_t *pd;		/* a dead handle: link type and precision */
	pcap_dumper_t *dump;	/* the current file */
	FILE *fp;		/* its stream (the dumper's) */
	char *buf;		/* its stdio buffer */
	char base[PATH_MAX];	/* PATH as given */
	char path[PATH_MAX + 16];	/* the current file: base and a number */
	struct pcap_out_opts o;
	int64_t wall_off_ns;	/* CLOCK_REALTIME - CLOCK_MONOTONIC */
	uint64_t file_bytes;	/* of the current file */
	uint64_t file_first_ns;	/* its first frame's timestamp, 0 = none */
	uint64_t frames, bytes;
	uint32_t files;
	int failed;		/* sticky negative errno */
	char err[PATH_MAX + 160];
};

static int64_t
clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Remember a failure and its sentence; the errno given, negated. */
static int
fail(struct pcap_out *p, int e, const char *what)
{
	if (e == 0)
		e = EIO;
	if (e == ENOSPC || e == EDQUOT)
		snprintf(p->err, sizeof(p->err), "%s: %s: the disk is full "
		    "(%s)", p->path, what, strerror(e));
	else if (e == EEXIST)
		snprintf(p->err, sizeof(p->err), "%s exists: add --force to "
		    "replace it", p->path);
	else
		snprintf(p->err, sizeof(p->err), "%s: %s: %s", p->path, what,
		    strerror(e));
	p->failed = -e;
	return -e;
}

/* The dumper's stream flushed, then the file closed; a failure of either
 * (a full disk at the last buffer) is reported. */
static int
close_file(struct pcap_out *p)
{
	int r = 0;

	if (p->dump == NULL)
		return 0;
	if (pcap_dump_flush(p->dump) != 0 || ferror(p->fp))
		r = p->failed != 0 ? p->failed : fail(p, errno, "writing");
	pcap_dump_close(p->dump);	/* fclose()s p->fp */
	p->dump = NULL;
	p->fp = NULL;
	free(p->buf);
	p->buf = NULL;
	return r;
}

/* Create file number n (0 = PATH itself) and write its header. */
static int
open_file(struct pcap_out *p, uint32_t n)
{
	if (n >= PCAP_OUT_FILES_MAX) {
		snprintf(p->err, sizeof(p->err), "%s: %u files written: that "
		    "is the most one recording makes (raise -C or -G)",
		    p->base, n);
		return p->failed = -EMLINK;
	}
	if (n == 0)
		snprintf(p->path, sizeof(p->path), "%s", p->base);
	else
		snprintf(p->path, sizeof(p->path), "%s%u", p->base, n);
	/* "x": O_EXCL, so an existing file is never overwritten unasked */
	p->fp = fopen(p->path, p->o.force ? "we" : "wxe");
	if (p->fp == NULL)
		return fail(p, errno, "creating");
	p->buf = malloc(PCAP_OUT_BUF_BYTES);
	if (p->buf != NULL)
		setvbuf(p->fp, p->buf, _IOFBF, PCAP_OUT_BUF_BYTES);
	p->dump = pcap_dump_fopen(p->pd, p->fp);
	if (p->dump == NULL) {
		snprintf(p->err, sizeof(p->err), "%s: %s", p->path,
		    pcap_geterr(p->pd));
		fclose(p->fp);
		p->fp = NULL;
		return p->failed = -EIO;
	}
	p->files = n + 1;
	p->file_bytes = PCAP_FILE_HDR;
	p->bytes += PCAP_FILE_HDR;
	p->file_first_ns = 0;
	return 0;
}

int
pcap_out_open(const char *path, const struct pcap_out_opts *opts,
	      struct pcap_out **out, char *err, size_t errlen)
{
	struct pcap_out *p;
	int r;

	*out = NULL;
	if (strlen(path) + 8 >= PATH_MAX) {
		snprintf(err, errlen, "%s: the name is too long", path);
		return -ENAMETOOLONG;
	}
	p = calloc(1, sizeof(*p));
	if (p == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	if (opts != NULL)
		p->o = *opts;
	if (p->o.snaplen == 0)
		p->o.snaplen = PCAP_OUT_SNAPLEN_DEFAULT;
	snprintf(p->base, sizeof(p->base), "%s", path);
	snprintf(p->path, sizeof(p->path), "%s", path);
	p->pd = pcap_open_dead_with_tstamp_precision(DLT_EN10MB,
	    (int)p->o.snaplen, PCAP_TSTAMP_PRECISION_NANO);
	if (p->pd == NULL) {
		snprintf(err, errlen, "%s: libpcap: cannot make a handle for "
		    "writing (out of memory?)", path);
		free(p);
		return -ENOMEM;
	}
	p->wall_off_ns = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
	r = open_file(p, 0);
	if (r < 0) {
		snprintf(err, errlen, "%s", p->err);
		pcap_out_close(p, NULL, 0);
		return r;
	}
	*out = p;
	return 0;
}

int
pcap_out_write(struct pcap_out *p, const void *frame, uint32_t len,
	       uint64_t mono_ns)
{
	return pcap_out_write_cut(p, frame, len, len, mono_ns);
}

int
pcap_out_write_cut(struct pcap_out *p, const void *frame, uint32_t caplen,
		   uint32_t len, uint64_t mono_ns)
{
	struct pcap_pkthdr h;
	uint64_t wall;
	uint32_t cap = caplen < len ? caplen : len;
	int r;

	if (cap > p->o.snaplen)
		cap = p->o.snaplen;

	if (p->failed != 0)
		return p->failed;
	if (p->file_first_ns != 0 &&
	    ((p->o.rotate_bytes != 0 && p->file_bytes + PCAP_REC_HDR + cap >
	    p->o.rotate_bytes) ||
	    (p->o.rotate_ns != 0 && mono_ns >= p->file_first_ns +
	    p->o.rotate_ns))) {
		r = close_file(p);
		if (r == 0)
			r = open_file(p, p->files);
		if (r < 0)
			return r;
	}
	wall = (uint64_t)((int64_t)mono_ns + p->wall_off_ns);
	memset(&h, 0, sizeof(h));
	h.ts.tv_sec = (time_t)(wall / 1000000000u);
	/* nanoseconds: the handle's precision is PCAP_TSTAMP_PRECISION_NANO */
	h.ts.tv_usec = (suseconds_t)(wall % 1000000000u);
	h.caplen = cap;
	h.len = len;
	errno = 0;
	pcap_dump((u_char *)p->dump, &h, frame);
	/* pcap_dump() returns nothing: a failed write shows in the stream */
	if (ferror(p->fp))
		return fail(p, errno, "writing");
	if (p->file_first_ns == 0)
		p->file_first_ns = mono_ns != 0 ? mono_ns : 1;
	p->file_bytes += PCAP_REC_HDR + cap;
	p->bytes += PCAP_REC_HDR + cap;
	p->frames++;
	return 0;
}

int
pcap_out_flush(struct pcap_out *p)
{
	if (p->failed != 0)
		return p->failed;
	if (p->dump != NULL && pcap_dump_flush(p->dump) != 0)
		return fail(p, errno, "writing");
	return 0;
}

const char *
pcap_out_error(const struct pcap_out *p)
{
	return p->failed != 0 ? p->err : "";
}

void
pcap_out_stats(const struct pcap_out *p, struct pcap_out_stats *st)
{
	st->frames = p->frames;
	st->bytes = p->bytes;
	st->files = p->files;
	st->path = p->path;
}

int
pcap_out_close(struct pcap_out *p, char *err, size_t errlen)
{
	int r;

	if (p == NULL)
		return 0;
	r = close_file(p);
	if (r == 0)
		r = p->failed;
	if (r < 0 && err != NULL)
		snprintf(err, errlen, "%s", p->err);
	if (p->pd != NULL)
		pcap_close(p->pd);
	free(p);
	return r;
}
