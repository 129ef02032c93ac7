/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pcap_out: write Ethernet frames to pcap files (libpcap's savefile
 * format, nanosecond timestamps), with tcpdump's rotation by size or
 * time. Used by daqiri-record for raw streams; meant for any tool that
 * writes frames (a queue tap). Single-threaded; it prints nothing: a
 * failure is a negative errno and a sentence from pcap_out_error().
 */
#ifndef DAQIRI_PCAP_OUT_H
#define DAQIRI_PCAP_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest frame kept whole by default (bytes); longer ones are cut. */
#define PCAP_OUT_SNAPLEN_DEFAULT	65535u
/* Numbered files at most (FILE, FILE1 ... FILE<max-1>), so a run with a
 * tiny -C cannot fill a directory with millions of files. */
#define PCAP_OUT_FILES_MAX		100000u
/* stdio buffer of each file: large writes, few system calls. */
#define PCAP_OUT_BUF_BYTES		(1u << 20)

struct pcap_out;

/* Options of pcap_out_open(); zero fields take the defaults. */
struct pcap_out_opts {
	uint32_t snaplen;	/* 0 = PCAP_OUT_SNAPLEN_DEFAULT */
	bool force;		/* replace existing files; else -EEXIST */
	/* Rotation, as tcpdump's -C and -G: a new file when the current
	 * one holds rotate_bytes (0 = never), or when a frame's timestamp
	 * is rotate_ns or more after the first frame of the current file
	 * (0 = never). The first file is PATH, then PATH1, PATH2, ... */
	uint64_t rotate_bytes;
	uint64_t rotate_ns;
};

/*
 * Create PATH and write the pcap file header (link type Ethernet,
 * nanosecond precision). The offset from CLOCK_MONOTONIC to wall time
 * (CLOCK_REALTIME - CLOCK_MONOTONIC) is taken once, here: every frame's
 * timestamp is converted with it, so the frames of one recording keep
 * their monotonic spacing even when the wall clock steps.
 * Returns 0 with *out set, or a negative errno: -EEXIST (PATH exists
 * and opts->force is false), -ENOSPC, -EACCES, -ENOMEM, ...; on failure
 * err (errlen bytes) holds the sentence, naming the file.
 */
int pcap_out_open(const char *path, const struct pcap_out_opts *opts,
		  struct pcap_out **out, char *err, size_t errlen);

/*
 * Append one frame: len bytes at frame (at most snaplen of them are
 * kept; the record says len), taken at mono_ns (CLOCK_MONOTONIC, ns).
 * Rotates first when the options say so. Returns 0, or a negative errno
 * (-ENOSPC: the disk is full) with pcap_out_error() naming the file;
 * after a failure the file is not written again (close it).
 */
int pcap_out_write(struct pcap_out *p, const void *frame, uint32_t len,
		   uint64_t mono_ns);

/*
 * The same for a frame of which only the first caplen bytes are at frame
 * (a tap that kept the first bytes of a longer frame): the record keeps
 * min(caplen, len, snaplen) of them and says len.
 */
int pcap_out_write_cut(struct pcap_out *p, const void *frame, uint32_t caplen,
		       uint32_t len, uint64_t mono_ns);

/* Push buffered frames to the kernel (the file is then valid up to the
 * last frame written). 0 or a negative errno, as pcap_out_write(). */
int pcap_out_flush(struct pcap_out *p);

/* The sentence for the last failure ("" if none). */
const char *pcap_out_error(const struct pcap_out *p);

/* Counters of the whole recording, every file. */
struct pcap_out_stats {
	uint64_t frames;	/* records written */
	uint64_t bytes;		/* bytes of all files, headers included */
	uint32_t files;		/* files created */
	const char *path;	/* the file being written now */
};
void pcap_out_stats(const struct pcap_out *p, struct pcap_out_stats *st);

/* Flush and close the current file and free p. NULL-safe. 0, or the
 * negative errno of a failed last write (pcap_out_error() no longer
 * exists then: errbuf, when not NULL, receives the sentence). */
int pcap_out_close(struct pcap_out *p, char *err, size_t errlen);

#endif
