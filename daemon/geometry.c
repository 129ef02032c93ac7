/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tensor geometry (geometry.h): frame, slot, id-space, window and tensor
 * sizes from a struct cfg, each derived once, in the same element
 * arithmetic the conversion kernels run (convert.h).
 */
#include <string.h>

#include "convert.h"
#include "engine.h"
#include "geometry.h"

_Static_assert(GEOM_ETH_IP_UDP_HDR == ENGINE_SYNTH_HDR_LEN,
    "the socket engine's synthetic header");
_Static_assert(GEOM_UDP_PAYLOAD_MAX == ENGINE_UDP_MAX_PAYLOAD,
    "the largest datagram the engines read");

uint64_t
geom_queue_frame_bytes(const struct cfg *c, const struct cfg_interface *ifc,
		       const struct cfg_queue *q)
{
	uint64_t sum = 0, datagram = GEOM_UDP_PAYLOAD_MAX;

	for (int i = 0; i < q->nregions; i++) {
		if (q->region_idx[i] < 0)
			return 0;
		sum += c->regions[q->region_idx[i]].buf_size;
	}
	/* Frames are UDP datagrams behind their headers: no longer than the
	 * largest IPv4 one, nor, on a socket stream, than max_payload_size
	 * says its datagrams are (0 = the largest). */
	if (ifc->socket.present && ifc->socket.max_payload_size != 0)
		datagram = ifc->socket.max_payload_size;
	if (sum > GEOM_ETH_IP_UDP_HDR + datagram)
		sum = GEOM_ETH_IP_UDP_HDR + datagram;
	return sum;
}

int
geom_queue_device_part(const struct cfg *c, const struct cfg_queue *q)
{
	for (int i = 0; i < q->nregions; i++)
		if (q->region_idx[i] < 0)
			return -1;
	if (q->nregions == 1 &&
	    c->regions[q->region_idx[0]].kind == DAQIRI_MEM_DEVICE)
		return 0;	/* whole frames in device memory */
	/* device first, then more: no split (refused apart) */
	if (q->nregions < 2 ||
	    c->regions[q->region_idx[0]].kind == DAQIRI_MEM_DEVICE)
		return -1;
	for (int i = 1; i < q->nregions; i++)
		if (c->regions[q->region_idx[i]].kind == DAQIRI_MEM_DEVICE)
			return i;
	return -1;
}

uint64_t
geom_queue_host_bytes(const struct cfg *c, const struct cfg_interface *ifc,
		      const struct cfg_queue *q)
{
	uint64_t frame = geom_queue_frame_bytes(c, ifc, q), hdr;
	int dp;

	if (frame == 0)
		return 0;
	dp = geom_queue_device_part(c, q);
	if (dp < 0)
		return c->regions[q->region_idx[0]].kind == DAQIRI_MEM_DEVICE ?
		    0 : frame;
	hdr = dp == 0 ? GEOM_SHADOW_BYTES :
	    c->regions[q->region_idx[0]].buf_size;
	return hdr < frame ? hdr : frame;
}

void
geom_region_share(const struct cfg *c, const struct cfg_interface *ifc,
		  int qi, int ridx, uint32_t *users, uint32_t *me)
{
	*users = 0;
	*me = 0;
	for (int i = 0; i < c->ninterfaces; i++) {
		const struct cfg_rx *rx = &c->interfaces[i].rx;

		for (int q = 0; q < rx->nqueues; q++)
			for (int k = 0; k < rx->queues[q].nregions; k++)
				if (rx->queues[q].region_idx[k] == ridx) {
					if (&c->interfaces[i] == ifc && q == qi)
						*me = *users;
					(*users)++;
				}
	}
	if (*users == 0)
		*users = 1;
}

uint64_t
geom_slot_bytes(const struct cfg_reorder *r, uint64_t n)
{
	enum daqiri_dtype in = r->has_data_types ? r->input_type :
	    DAQIRI_DTYPE_RAW;
	enum daqiri_dtype out = r->has_data_types ? r->output_type :
	    DAQIRI_DTYPE_RAW;
	uint32_t elems, osz;

	if (n == 0 || n > UINT32_MAX)
		return 0;
	if (in == DAQIRI_DTYPE_RAW)
		return n;
	elems = cvt_in_elems(in, (uint32_t)n);
	osz = cvt_out_size(out);
	/* raw and int4 are input types only: no kernel writes them */
	if (elems == 0 || osz == 0 || out == DAQIRI_DTYPE_RAW ||
	    out == DAQIRI_DTYPE_INT4)
		return 0;
	return (uint64_t)elems * osz;
}

uint64_t
geom_id_space(const struct cfg_reorder *r)
{
	if (r->method == CFG_METHOD_SEQ_BATCH_NUMBER)
		return 1ull << r->batch.bit_width;
	if (r->packets_per_batch == 0)
		return 0;
	return (1ull << r->seq.bit_width) / r->packets_per_batch;
}

uint32_t
geom_window(uint32_t window, uint64_t id_space)
{
	/* ids compare as serial numbers: a window of more than half the
	 * space could not tell a late batch from an early one */
	uint64_t half = id_space / 2 > 0 ? id_space / 2 : 1;
	uint32_t w = window != 0 ? window : CFG_WINDOW_DEFAULT;

	return w > half ? (uint32_t)half : w;
}

uint64_t
geom_tensor_bytes(uint32_t ppb, uint64_t slot_bytes)
{
	if (ppb != 0 && slot_bytes > UINT64_MAX / ppb)
		return 0;
	return slot_bytes * ppb;
}

static int
ilog2_exact(uint64_t v)
{
	int k = 0;

	if (v == 0 || (v & (v - 1)) != 0)
		return -1;
	while ((1ull << k) != v)
		k++;
	return k;
}

bool
geom_reorder(const struct cfg_reorder *r, struct reorder_geom *g)
{
	uint32_t sb = r->seq.bit_width, bb = r->batch.bit_width;
	int k;

	memset(g, 0, sizeof(*g));
	if (sb < 1 || sb > 32 || r->payload_bytes == 0 ||
	    (unsigned)r->fill >= DAQIRI_FILL_MAX ||
	    (unsigned)r->endianness >= CFG_ENDIAN_MAX ||
	    r->window > CFG_WINDOW_MAX)
		goto bad;
	k = ilog2_exact(r->packets_per_batch);
	if (k < 0 || (uint32_t)k > sb)
		goto bad;
	switch (r->method) {
	case CFG_METHOD_SEQ_BATCH_NUMBER:
		/* the batch field must count exactly the sequence's batches */
		if (bb < 1 || bb > 32 || bb > sb || (uint32_t)k != sb - bb)
			goto bad;
		break;
	case CFG_METHOD_SEQ_PACKETS_PER_BATCH:
		break;
	default:
		goto bad;
	}
	g->ppb = r->packets_per_batch;
	g->ppb_shift = (uint32_t)k;
	g->id_space = geom_id_space(r);
	g->in_bytes = r->payload_bytes;
	g->slot_bytes = geom_slot_bytes(r, r->payload_bytes);
	if (g->slot_bytes == 0)
		goto bad;
	/* a config's derived slot_bytes is what the plan will write */
	if (r->slot_bytes != 0 && r->slot_bytes != g->slot_bytes)
		goto bad;
	g->tensor_bytes = geom_tensor_bytes(g->ppb, g->slot_bytes);
	if (g->tensor_bytes == 0)
		goto bad;
	g->window = geom_window(r->window, g->id_space);
	return true;
bad:
	memset(g, 0, sizeof(*g));
	return false;
}

void
geom_raw(const struct cfg_queue *q, uint64_t frame_bytes,
	 struct reorder_geom *g)
{
	memset(g, 0, sizeof(*g));
	g->ppb = q->batch_size > 0 ? q->batch_size : 1;
	g->in_bytes = (uint32_t)frame_bytes;
	g->slot_bytes = frame_bytes;
	g->tensor_bytes = (uint64_t)g->ppb * frame_bytes;
	g->window = 1;
}
