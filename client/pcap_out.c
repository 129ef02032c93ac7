/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pcap_out.h over libpcap: a "dead" handle gives the file header
 * (DLT_EN10MB, nanosecond precision), pcap_dump() the records. The file
 * is opened here, O_EXCL unless forced, so an existing capture is never
 * overwritten by accident; write errors are read back from the stream
 * (libpcap's pcap_dump() returns nothing).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pcap/pcap.h>

#include "pcap_out.h"

struct pcap_out {
	pcap_t *dead;
	pcap_dumper_t *dump;
	FILE *fp;
	char *path;
	int64_t wall_off;		/* CLOCK_REALTIME - CLOCK_MONOTONIC, ns */
	uint64_t bytes;
	bool failed;			/* said once */
};

#define PCAP_FILE_HDR	24u
#define PCAP_REC_HDR	16u

static int64_t
ts_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
say_write_error(struct pcap_out *w, int err)
{
	if (w->failed)
		return;
	w->failed = true;
	if (err == ENOSPC || err == EDQUOT)
		fprintf(stderr, "%s: the disk is full (%s): the file holds "
		    "the frames before this one; free space or write "
		    "elsewhere\n", w->path, strerror(err));
	else
		fprintf(stderr, "%s: writing: %s\n", w->path, strerror(err));
}

int
pcap_out_open(struct pcap_out **out, const char *path, uint32_t snap,
	      bool force)
{
	struct pcap_out *w = calloc(1, sizeof(*w));
	int fd = -1;

	*out = NULL;
	if (w == NULL || (w->path = strdup(path)) == NULL) {
		fprintf(stderr, "%s: out of memory\n", path);
		goto fail;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC |
	    (force ? O_TRUNC : O_EXCL), 0644);
	if (fd < 0) {
		if (errno == EEXIST)
			fprintf(stderr, "%s exists; add --force to overwrite "
			    "it\n", path);
		else
			fprintf(stderr, "%s: %s\n", path, strerror(errno));
		goto fail;
	}
	if ((w->fp = fdopen(fd, "w")) == NULL) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		goto fail;
	}
	fd = -1;
	w->dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, (int)snap,
	    PCAP_TSTAMP_PRECISION_NANO);
	if (w->dead == NULL ||
	    (w->dump = pcap_dump_fopen(w->dead, w->fp)) == NULL) {
		fprintf(stderr, "%s: %s\n", path, w->dead != NULL ?
		    pcap_geterr(w->dead) : "libpcap: out of memory");
		goto fail;
	}
	w->wall_off = ts_ns(CLOCK_REALTIME) - ts_ns(CLOCK_MONOTONIC);
	w->bytes = PCAP_FILE_HDR;
	*out = w;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	if (w != NULL) {
		if (w->dump != NULL)
			pcap_dump_close(w->dump);	/* closes fp */
		else if (w->fp != NULL)
			fclose(w->fp);
		if (w->dead != NULL)
			pcap_close(w->dead);
		free(w->path);
		free(w);
	}
	return -1;
}

int
pcap_out_write(struct pcap_out *w, const void *data, uint32_t caplen,
	       uint32_t len, uint64_t mono_ns)
{
	int64_t t = (int64_t)mono_ns + w->wall_off;
	struct pcap_pkthdr h;

	if (w->failed)
		return -1;
	/* with nanosecond precision, tv_usec holds nanoseconds */
	h.ts.tv_sec = (time_t)(t / 1000000000);
	h.ts.tv_usec = (suseconds_t)(t % 1000000000);
	h.caplen = caplen;
	h.len = len;
	pcap_dump((u_char *)w->dump, &h, data);
	if (ferror(w->fp)) {
		say_write_error(w, errno);
		return -1;
	}
	w->bytes += PCAP_REC_HDR + caplen;
	return 0;
}

uint64_t
pcap_out_bytes(const struct pcap_out *w)
{
	return w->bytes;
}

int
pcap_out_close(struct pcap_out *w)
{
	int rc = 0;

	if (w == NULL)
		return 0;
	if (pcap_dump_flush(w->dump) != 0 && !w->failed) {
		say_write_error(w, errno);
		rc = -1;
	}
	if (w->failed)
		rc = -1;
	pcap_dump_close(w->dump);
	pcap_close(w->dead);
	free(w->path);
	free(w);
	return rc;
}
