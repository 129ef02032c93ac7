/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Who receives what (DESIGN.md "Threads"): the rx queue whose worker runs
 * each reorder config's stream, stated once. The config checker turns an
 * answer other than RX_OWNER_OK into its errors; the workers take the
 * streams it gives their queue; the reload's diff and the status reports
 * ask it too. Pure, like geometry.c.
 *
 * The rule: a reorder config is fed by one rx queue, its flows' queue.
 * Every flow it names must exist and act on exactly that one queue (a
 * flow that spreads over several queues, or two flows on two queues, are
 * refused: a stream's window lives on one worker).
 */
#include <stddef.h>

#include "config.h"

void
cfg_rx_owner(const struct cfg_interface *ifc, const struct cfg_reorder *r,
	     struct cfg_owner *out)
{
	const struct cfg_rx *rx = &ifc->rx;

	out->status = CFG_OWNER_OK;
	out->queue = -1;
	out->flow = out->other_flow = 0;
	out->nspread = 0;
	for (int i = 0; i < r->nflow_ids; i++) {
		const struct cfg_flow *f = NULL;
		int q = -1;

		for (int k = 0; k < rx->nflows && f == NULL; k++)
			if (rx->flows[k].id == r->flow_ids[i])
				f = &rx->flows[k];
		if (f != NULL && f->nqueue_ids == 1)
			for (int k = 0; k < rx->nqueues && q < 0; k++)
				if (rx->queues[k].id == f->queue_ids[0])
					q = k;
		if (f == NULL || f->nqueue_ids == 0 || (f->nqueue_ids == 1 &&
		    q < 0)) {
			out->status = CFG_OWNER_NO_FLOW;
			out->queue = -1;
			out->flow = r->flow_ids[i];
			return;
		}
		if (f->nqueue_ids > 1) {
			out->status = CFG_OWNER_SPREAD;
			out->queue = -1;
			out->flow = f->id;
			out->nspread = f->nqueue_ids;
			return;
		}
		if (out->queue >= 0 && q != out->queue) {
			out->status = CFG_OWNER_SPLIT;
			out->other_flow = f->id;
			out->other_queue = q;
			return;
		}
		if (out->queue < 0) {
			out->queue = q;
			out->flow = f->id;
		}
	}
	if (out->queue < 0)
		out->status = CFG_OWNER_NO_FLOW;
}

int
cfg_rx_owner_queue(const struct cfg_interface *ifc,
		   const struct cfg_reorder *r)
{
	struct cfg_owner o;

	cfg_rx_owner(ifc, r, &o);
	return o.status == CFG_OWNER_OK ? o.queue : -1;
}
