/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The queue tap's record ring in shared memory (PROTOCOL.md "Tap ring
 * layout"): one sealed memfd the daemon's rx worker fills and a capture
 * process drains, so frames go from the worker's memcpy to the reader's
 * write with no message per frame. Both sides include this file.
 */
#ifndef DAQIRI_TAPRING_H
#define DAQIRI_TAPRING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define DAQIRI_TAPRING_MAGIC	0x50415452495144ull	/* "DQIRTAP" */
#define DAQIRI_TAPRING_VERSION	1u
/* Records in the ring: every frame of a bounded session fits (a reader
 * that never reads loses none of DAQIRI_TAP_COUNT_MAX). */
#define DAQIRI_TAPRING_RECORDS	4096u
#define DAQIRI_TAPRING_HDR_BYTES 4096u	/* the header page */
/* A record: struct daqiri_tapring_rec, then its data, rounded to 64 */
#define DAQIRI_TAPRING_REC_BYTES \
	((24u + DAQIRI_TAP_SNAP_MAX + 63u) & ~63u)
#define DAQIRI_TAPRING_BYTES	((size_t)DAQIRI_TAPRING_HDR_BYTES + \
	(size_t)DAQIRI_TAPRING_RECORDS * DAQIRI_TAPRING_REC_BYTES)
/* The accounting words: the session's generation << 40 | count */
#define DAQIRI_TAPRING_ACCT(gen, n)	((uint64_t)(gen) << 40 | (n))

/* The header page. Geometry: written once by the daemon before the fd
 * is sent. head, taken, full: the worker writes (release), the reader
 * reads (acquire). tail: the reader writes (release), the worker reads
 * (acquire) and trusts only as far as head - tail < records. */
struct daqiri_tapring_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t records;
	uint32_t rec_bytes;
	uint32_t data_max;
	uint64_t total_bytes;
	_Alignas(64) _Atomic uint64_t head;	/* records written */
	_Alignas(64) _Atomic uint64_t tail;	/* records read */
	_Alignas(64) _Atomic uint64_t taken;	/* DAQIRI_TAPRING_ACCT */
	_Atomic uint64_t full;			/* DAQIRI_TAPRING_ACCT */
};
_Static_assert(sizeof(struct daqiri_tapring_hdr) <= DAQIRI_TAPRING_HDR_BYTES,
    "tap ring header fits its page");

/* Record i % records starts at hdr + DAQIRI_TAPRING_HDR_BYTES +
 * (i % records) * rec_bytes. */
struct daqiri_tapring_rec {
	uint64_t ns;			/* arrival, CLOCK_MONOTONIC ns */
	uint32_t len;			/* the frame's bytes */
	uint32_t caplen;		/* of them in data */
	uint32_t gen;			/* the session that wrote it */
	uint32_t pad;
	uint8_t data[];			/* caplen bytes (up to data_max) */
};
_Static_assert(sizeof(struct daqiri_tapring_rec) == 24, "record header");

/* A mapped ring, either side. */
struct daqiri_tapring {
	struct daqiri_tapring_hdr *hdr;
	uint8_t *recs;
	uint32_t records, rec_bytes, data_max;
	size_t bytes;
};

/* Daemon: a sealed memfd of DAQIRI_TAPRING_BYTES (shrink and grow
 * sealed), mapped shared, its header written. 0 with *fd (O_CLOEXEC),
 * *r filled; or a negative errno with nothing left open. */
int daqiri_tapring_create(struct daqiri_tapring *r, int *fd);
/* Unmap (NULL-safe on a zeroed r). */
void daqiri_tapring_unmap(struct daqiri_tapring *r);

/* Reader: check the header of len mapped bytes at map (magic, version,
 * geometry consistent with len and with this file's constants) and fill
 * *r. 0 or -EPROTO. */
int daqiri_tapring_attach(struct daqiri_tapring *r, void *map, size_t len);

/* A reader's side of a session's ring: its own tail, published to the
 * header as records are given back. */
struct daqiri_tapring_reader {
	struct daqiri_tapring ring;
	uint32_t gen;			/* the session's; others are skipped */
	uint64_t tail;
	bool held;			/* the record at tail is the caller's */
};

/* Start reading session gen of an attached ring at the tail the daemon
 * set when it started the session. */
void daqiri_tapring_reader_init(struct daqiri_tapring_reader *rd,
				const struct daqiri_tapring *r, uint32_t gen);
/* Give back the held record (if any), then hold the next of the
 * session's: 1 with *rec and *caplen (clamped to data_max), 0 when
 * none, -EPROTO when head is not within a ring of the tail. */
int daqiri_tapring_next(struct daqiri_tapring_reader *rd,
			const struct daqiri_tapring_rec **rec,
			uint32_t *caplen);
/* Give back the held record now. */
void daqiri_tapring_release(struct daqiri_tapring_reader *rd);

/* Record i (any index: taken modulo records). */
static inline struct daqiri_tapring_rec *
daqiri_tapring_rec(const struct daqiri_tapring *r, uint64_t i)
{
	return (struct daqiri_tapring_rec *)(void *)(r->recs +
	    (size_t)(i % r->records) * r->rec_bytes);
}

/* The count of session gen in accounting word v (0 for another's). */
static inline uint64_t
daqiri_tapring_acct(uint64_t v, uint32_t gen)
{
	return v >> 40 == gen ? v & ((1ull << 40) - 1) : 0;
}

#endif
