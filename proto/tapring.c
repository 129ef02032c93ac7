/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tap ring's memfd (tapring.h): made and described by the daemon,
 * checked by the reader before it trusts a byte of the geometry.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "proto_internal.h"
#include "tapring.h"

static void
fill(struct daqiri_tapring *r, void *map, size_t len)
{
	r->hdr = map;
	r->recs = (uint8_t *)map + DAQIRI_TAPRING_HDR_BYTES;
	r->records = DAQIRI_TAPRING_RECORDS;
	r->rec_bytes = DAQIRI_TAPRING_REC_BYTES;
	r->data_max = DAQIRI_TAP_SNAP_MAX;
	r->bytes = len;
}

int
daqiri_tapring_create(struct daqiri_tapring *r, int *fd)
{
	size_t n = DAQIRI_TAPRING_BYTES;
	struct daqiri_tapring_hdr *h;
	void *p;
	int f, e;

	memset(r, 0, sizeof(*r));
	/* sealed size: a reader's mapping never SIGBUSes, nor ours */
	e = proto_sealed_map("daqiri-tap", n, PROT_READ | PROT_WRITE, &f, &p);
	if (e < 0)
		return e;
	fill(r, p, n);
	h = r->hdr;
	h->magic = DAQIRI_TAPRING_MAGIC;
	h->version = DAQIRI_TAPRING_VERSION;
	h->records = r->records;
	h->rec_bytes = r->rec_bytes;
	h->data_max = r->data_max;
	h->total_bytes = n;
	*fd = f;
	return 0;
}

void
daqiri_tapring_unmap(struct daqiri_tapring *r)
{
	if (r->hdr != NULL)
		munmap(r->hdr, r->bytes);
	memset(r, 0, sizeof(*r));
}

int
daqiri_tapring_attach(struct daqiri_tapring *r, void *map, size_t len)
{
	const struct daqiri_tapring_hdr *h = map;

	memset(r, 0, sizeof(*r));
	if (map == NULL || len < DAQIRI_TAPRING_HDR_BYTES ||
	    h->magic != DAQIRI_TAPRING_MAGIC ||
	    h->version != DAQIRI_TAPRING_VERSION ||
	    h->records != DAQIRI_TAPRING_RECORDS ||
	    h->rec_bytes != DAQIRI_TAPRING_REC_BYTES ||
	    h->data_max != DAQIRI_TAP_SNAP_MAX ||
	    h->total_bytes != DAQIRI_TAPRING_BYTES ||
	    len != DAQIRI_TAPRING_BYTES)
		return -EPROTO;
	fill(r, map, len);
	return 0;
}

void
daqiri_tapring_reader_init(struct daqiri_tapring_reader *rd,
			   const struct daqiri_tapring *r, uint32_t gen)
{
	rd->ring = *r;
	rd->gen = gen;
	rd->tail = atomic_load_explicit(&r->hdr->tail, memory_order_acquire);
	rd->held = false;
}

void
daqiri_tapring_release(struct daqiri_tapring_reader *rd)
{
	if (!rd->held)
		return;
	rd->held = false;
	rd->tail++;
	atomic_store_explicit(&rd->ring.hdr->tail, rd->tail,
	    memory_order_release);
}

int
daqiri_tapring_next(struct daqiri_tapring_reader *rd,
		    const struct daqiri_tapring_rec **rec, uint32_t *caplen)
{
	uint64_t head;

	daqiri_tapring_release(rd);
	head = atomic_load_explicit(&rd->ring.hdr->head, memory_order_acquire);
	if (head - rd->tail > rd->ring.records)
		return -EPROTO;
	for (; rd->tail != head; rd->tail++) {
		const struct daqiri_tapring_rec *r =
		    daqiri_tapring_rec(&rd->ring, rd->tail);
		uint32_t n = r->caplen;

		/* a session that ended left these: not ours */
		if (r->gen != rd->gen)
			continue;
		*rec = r;
		*caplen = n < rd->ring.data_max ? n : rd->ring.data_max;
		rd->held = true;
		atomic_store_explicit(&rd->ring.hdr->tail, rd->tail,
		    memory_order_release);
		return 1;
	}
	atomic_store_explicit(&rd->ring.hdr->tail, rd->tail,
	    memory_order_release);
	return 0;
}
