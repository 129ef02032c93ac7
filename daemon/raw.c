/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Raw bursts: frames copied whole (or their header parts only, when the
 * payloads are in device memory) into the slots of a burst tensor in
 * arrival order. One buffer is filled at a time; it is published when
 * full, at its deadline (timeout_us after its first frame) or at flush.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "raw.h"

const char *const raw_counter_names[RAW_NCOUNTERS] = {
	"packets_in", "placed", "oversize", "no_buffer",
	"bursts_full", "bursts_timeout", "bursts_flush",
};

_Static_assert(sizeof(struct raw_counters) == RAW_NCOUNTERS * sizeof(uint64_t),
	       "raw counter names match the struct");

struct raw_plan {
	struct reorder_owner owner;
	uint32_t ppb;
	uint64_t slot_bytes;
	uint64_t timeout_ns;
	uint32_t words;			/* bitmap words */
	bool hdr_only;			/* payload parts are device memory */
	bool open;			/* a buffer is being filled */
	struct reorder_buf buf;
	uint32_t n;			/* frames in it */
	uint64_t first_ns, last_ns, deadline;
	uint64_t bursts;		/* batch ids */
	uint64_t seq;
	struct raw_counters c;
};

uint32_t
raw_sidecar_bytes(uint32_t ppb)
{
	return (uint32_t)DAQIRI_RAW_SIDECAR_BYTES(ppb);
}

struct raw_plan *
raw_create(uint32_t ppb, uint64_t slot_bytes, uint32_t timeout_us,
	   bool hdr_only, const struct reorder_owner *owner)
{
	struct raw_plan *p;

	if (ppb == 0 || slot_bytes == 0) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	p->owner = *owner;
	p->ppb = ppb;
	p->slot_bytes = slot_bytes;
	p->timeout_ns = (uint64_t)timeout_us * 1000u;
	p->words = (ppb + 63) / 64;
	p->hdr_only = hdr_only;
	return p;
}

static void
publish(struct raw_plan *p, uint32_t flag, uint64_t now_ns)
{
	struct daqiri_desc d = {
		.buf_index = p->buf.index,
		.flags = flag,
		.seq = p->seq++,
		.batch_id = p->bursts++,
		.packets_expected = p->ppb,
		.packets_received = p->n,
		.bytes = (uint64_t)p->ppb * p->slot_bytes,
		.first_rx_ns = p->first_ns,
		.last_rx_ns = p->last_ns,
		.publish_ns = now_ns,
	};

	if (flag & DAQIRI_TENSOR_COMPLETE)
		p->c.bursts_full++;
	else if (flag & DAQIRI_TENSOR_TIMEOUT)
		p->c.bursts_timeout++;
	else
		p->c.bursts_flush++;
	p->open = false;
	p->owner.publish(p->owner.ctx, &d, &p->buf);
}

void
raw_burst(struct raw_plan *p, const struct rx_frame *pkts, unsigned n,
	  uint64_t now_ns)
{
	for (unsigned i = 0; i < n; i++) {
		const struct rx_frame *f = &pkts[i];
		/* the CPU must not read a payload in device memory */
		uint32_t plen = p->hdr_only ? 0 : f->payload_len;
		uint64_t len = (uint64_t)f->hdr_len + plen;
		uint32_t *lens;
		uint64_t *rx_ns;
		uint8_t *dst;

		p->c.packets_in++;
		if (len > p->slot_bytes) {
			p->c.oversize++;
			continue;
		}
		if (!p->open) {
			if (p->owner.get(p->owner.ctx, &p->buf) != 0) {
				p->c.no_buffer++;
				continue;
			}
			p->open = true;
			p->n = 0;
			p->first_ns = f->rx_ns;
			p->deadline = p->timeout_ns != 0 ?
			    f->rx_ns + p->timeout_ns : UINT64_MAX;
			memset(p->buf.bitmap, 0, raw_sidecar_bytes(p->ppb));
		}
		dst = (uint8_t *)p->buf.data + (uint64_t)p->n * p->slot_bytes;
		/* either part may be absent (NULL, 0) */
		if (f->hdr_len != 0)
			memcpy(dst, f->hdr, f->hdr_len);
		if (plen != 0)
			memcpy(dst + f->hdr_len, f->payload, plen);
		lens = (uint32_t *)(void *)((uint8_t *)p->buf.bitmap +
		    DAQIRI_RAW_LENGTHS_OFF(p->ppb));
		lens[p->n] = (uint32_t)len;
		rx_ns = (uint64_t *)(void *)((uint8_t *)p->buf.bitmap +
		    DAQIRI_RAW_RXNS_OFF(p->ppb));
		rx_ns[p->n] = f->rx_ns;
		p->buf.bitmap[p->n / 64] |= 1ull << (p->n % 64);
		p->last_ns = f->rx_ns;
		p->n++;
		p->c.placed++;
		if (p->n == p->ppb)
			publish(p, DAQIRI_TENSOR_COMPLETE, now_ns);
	}
}

void
raw_poll(struct raw_plan *p, uint64_t now_ns)
{
	if (p->open && p->timeout_ns != 0 && p->deadline <= now_ns)
		publish(p, DAQIRI_TENSOR_TIMEOUT | DAQIRI_TENSOR_HAS_GAPS, now_ns);
}

uint64_t
raw_next_deadline(const struct raw_plan *p)
{
	return p->open ? p->deadline : UINT64_MAX;
}

void
raw_flush(struct raw_plan *p, uint64_t now_ns)
{
	if (p->open)
		publish(p, DAQIRI_TENSOR_FLUSH | DAQIRI_TENSOR_HAS_GAPS, now_ns);
}

const struct raw_counters *
raw_counters(const struct raw_plan *p)
{
	return &p->c;
}

void
raw_destroy(struct raw_plan *p)
{
	if (p == NULL)
		return;
	if (p->open)
		p->owner.put(p->owner.ctx, &p->buf);
	free(p);
}
