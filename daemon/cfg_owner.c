/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Who receives what (DESIGN.md "Threads"): the rx queues whose workers
 * feed each reorder config's stream, stated once. The config checker
 * turns an answer other than CFG_OWNER_OK into its errors; the workers
 * take the streams it gives their queue; the reload's diff and the
 * status reports ask it too. Pure, like geometry.c.
 *
 * The rule: a reorder config is fed by the union of its flows' queues
 * (the reference's way to spread a stream: a flow whose action lists
 * several queues; two flows on two queues are the same thing). Every flow
 * it names must exist and act on queues the interface has. One queue:
 * the stream's plan runs on that worker alone. Several: every worker of
 * them places the stream's packets into its shared buffers (reorder.c
 * "Shared plans"); the lowest queue is the stream's home.
 */
#include <stddef.h>

#include "config.h"

/* The index of rx queue id qid, or -1. */
static int
queue_index(const struct cfg_rx *rx, uint32_t qid)
{
	for (int k = 0; k < rx->nqueues; k++)
		if (rx->queues[k].id == qid)
			return k;
	return -1;
}

void
cfg_rx_owner(const struct cfg_interface *ifc, const struct cfg_reorder *r,
	     struct cfg_owner *out)
{
	const struct cfg_rx *rx = &ifc->rx;

	out->status = CFG_OWNER_OK;
	out->queue = -1;
	out->queues = 0;
	out->nqueues = 0;
	out->flow = 0;
	for (int i = 0; i < r->nflow_ids; i++) {
		const struct cfg_flow *f = NULL;

		for (int k = 0; k < rx->nflows && f == NULL; k++)
			if (rx->flows[k].id == r->flow_ids[i])
				f = &rx->flows[k];
		if (f == NULL || f->nqueue_ids == 0) {
			out->status = CFG_OWNER_NO_FLOW;
			out->flow = r->flow_ids[i];
			break;
		}
		for (int j = 0; j < f->nqueue_ids; j++) {
			int q = queue_index(rx, f->queue_ids[j]);

			if (q < 0) {
				out->status = CFG_OWNER_NO_FLOW;
				out->flow = f->id;
				break;
			}
			out->queues |= 1u << q;
		}
		if (out->status != CFG_OWNER_OK)
			break;
		if (i == 0)
			out->flow = f->id;
	}
	if (out->status != CFG_OWNER_OK || out->queues == 0) {
		out->status = CFG_OWNER_NO_FLOW;
		out->queues = 0;
		return;
	}
	for (int q = 0; q < CFG_MAX_QUEUES; q++)
		if (out->queues & (1u << q)) {
			if (out->queue < 0)
				out->queue = q;
			out->nqueues++;
		}
}

int
cfg_rx_owner_queue(const struct cfg_interface *ifc,
		   const struct cfg_reorder *r)
{
	struct cfg_owner o;

	cfg_rx_owner(ifc, r, &o);
	return o.status == CFG_OWNER_OK ? o.queue : -1;
}

uint32_t
cfg_rx_owner_queues(const struct cfg_interface *ifc,
		    const struct cfg_reorder *r)
{
	struct cfg_owner o;

	cfg_rx_owner(ifc, r, &o);
	return o.status == CFG_OWNER_OK ? o.queues : 0;
}
