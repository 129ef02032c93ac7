/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DPDK engine's flow steering: an interface's flow table as rte_flow
 * rules on its port (dpdk_flow_steer()), main thread only. Only the
 * refusal of a port without flow rules runs in daqiri's tests: no NIC
 * with rte_flow was at hand.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "engine_dpdk_begin.h"

#ifdef DPDK_HAVE_HEADERS

#include <rte_config.h>
#include <rte_byteorder.h>
#include <rte_errno.h>
#include <rte_flow.h>

#include "engine_dpdk_internal.h"

/* rte_flow priorities the rules use: their place, up to this. */
#define DPDK_FLOW_PRIO_MAX	7u

/* The rte_flow pattern of rule r into it[] (ETH / IPV4 / UDP / END),
 * specs, lasts and masks in the caller's storage. */
struct dpdk_flow_pat {
	struct rte_flow_item it[4];
	struct rte_flow_item_ipv4 ip, ip_mask;
	struct rte_flow_item_udp udp, udp_last, udp_mask;
};

static void
dpdk_flow_pattern(const struct flow_rule *r, struct dpdk_flow_pat *p)
{
	memset(p, 0, sizeof(*p));
	p->it[0].type = RTE_FLOW_ITEM_TYPE_ETH;
	p->it[1].type = RTE_FLOW_ITEM_TYPE_IPV4;
	p->it[2].type = RTE_FLOW_ITEM_TYPE_UDP;
	p->it[3].type = RTE_FLOW_ITEM_TYPE_END;
	if (r->fields & FLOW_F_IPV4_SRC) {
		p->ip.hdr.src_addr = rte_cpu_to_be_32(r->ipv4_src);
		p->ip_mask.hdr.src_addr = UINT32_MAX;
	}
	if (r->fields & FLOW_F_IPV4_DST) {
		p->ip.hdr.dst_addr = rte_cpu_to_be_32(r->ipv4_dst);
		p->ip_mask.hdr.dst_addr = UINT32_MAX;
	}
	if (r->fields & FLOW_F_IPV4_LEN) {
		p->ip.hdr.total_length = rte_cpu_to_be_16(r->ipv4_len);
		p->ip_mask.hdr.total_length = UINT16_MAX;
	}
	p->udp_last = p->udp;
	if (r->fields & FLOW_F_UDP_SRC) {
		p->udp.hdr.src_port = rte_cpu_to_be_16(r->udp_src_lo);
		p->udp_last.hdr.src_port = rte_cpu_to_be_16(r->udp_src_hi);
		p->udp_mask.hdr.src_port = UINT16_MAX;
	}
	if (r->fields & FLOW_F_UDP_DST) {
		p->udp.hdr.dst_port = rte_cpu_to_be_16(r->udp_dst_lo);
		p->udp_last.hdr.dst_port = rte_cpu_to_be_16(r->udp_dst_hi);
		p->udp_mask.hdr.dst_port = UINT16_MAX;
	}
	p->it[1].spec = &p->ip;
	p->it[1].mask = &p->ip_mask;
	p->it[2].spec = &p->udp;
	p->it[2].mask = &p->udp_mask;
	/* a range only where one is given: not every NIC takes "last" */
	if (((r->fields & FLOW_F_UDP_SRC) && r->udp_src_lo != r->udp_src_hi) ||
	    ((r->fields & FLOW_F_UDP_DST) && r->udp_dst_lo != r->udp_dst_hi))
		p->it[2].last = &p->udp_last;
}

/*
 * NIC steering with rte_flow (engine_dpdk_internal.h): one rule per flow, ETH / IPV4 / UDP with
 * the flow's fields, to its queue (QUEUE), or over its queues by the
 * NIC's hash of addresses and ports (RSS) for a spread stream, in table order
 * (priority = place, capped at DPDK_FLOW_PRIO_MAX: the first match wins
 * as in flow_route()). Each rule is validated, then created; the first
 * the port refuses undoes them all (rte_flow_flush), says why, and
 * leaves the port spreading by RSS. The worker still classifies every
 * frame: the rules only pick its queue.
 */
int
dpdk_flow_steer(uint16_t port, const uint32_t *queue_ids, int nq,
		const struct flow_table *t, char *why, size_t whylen)
{
	struct rte_flow_error fe;
	struct dpdk_flow_pat pat;
	struct rte_flow_action_queue qa;
	struct rte_flow_action_rss ra;
	uint16_t rq[CFG_MAX_QUEUE_IDS];
	struct rte_flow_action act[2];
	struct rte_flow_attr attr;
	int rc = 0;

	memset(&fe, 0, sizeof(fe));
	(void)rte_flow_flush(port, &fe);
	for (uint32_t i = 0; i < t->nrules && rc == 0; i++) {
		const struct flow_rule *r = &t->rules[i];
		int nrq = 0;

		for (int j = 0; j < r->nqueue_ids; j++)
			for (int k = 0; k < nq; k++)
				if (queue_ids[k] == r->queue_ids[j]) {
					rq[nrq++] = (uint16_t)k;
					break;
				}
		if (nrq == 0)
			continue;
		memset(&attr, 0, sizeof(attr));
		attr.ingress = 1;
		attr.priority = i < DPDK_FLOW_PRIO_MAX ? i : DPDK_FLOW_PRIO_MAX;
		dpdk_flow_pattern(r, &pat);
		memset(act, 0, sizeof(act));
		if (nrq == 1) {
			qa.index = rq[0];
			act[0].type = RTE_FLOW_ACTION_TYPE_QUEUE;
			act[0].conf = &qa;
		} else {
			/* a spread stream: the NIC's hash of addresses and
			 * ports over the flow's queues */
			memset(&ra, 0, sizeof(ra));
			ra.func = RTE_ETH_HASH_FUNCTION_DEFAULT;
			ra.types = RTE_ETH_RSS_NONFRAG_IPV4_UDP;
			ra.queue_num = (uint32_t)nrq;
			ra.queue = rq;
			act[0].type = RTE_FLOW_ACTION_TYPE_RSS;
			act[0].conf = &ra;
		}
		act[1].type = RTE_FLOW_ACTION_TYPE_END;
		memset(&fe, 0, sizeof(fe));
		rc = rte_flow_validate(port, &attr, pat.it, act, &fe);
		if (rc == 0 && rte_flow_create(port, &attr, pat.it, act,
		    &fe) == NULL)
			rc = -rte_errno;
		if (rc != 0)
			snprintf(why, whylen, "rte_flow refused flow %u: %s%s%s",
			    r->id, rte_strerror(-rc), fe.message != NULL ?
			    ": " : "", fe.message != NULL ? fe.message : "");
	}
	if (rc != 0)
		(void)rte_flow_flush(port, &fe);
	return rc < 0 ? rc : rc > 0 ? -rc : 0;
}

int
dpdk_flow_isolate(uint16_t port, char *why, size_t whylen)
{
	struct rte_flow_error fe;
	int rc;

	memset(&fe, 0, sizeof(fe));
	rc = rte_flow_isolate(port, 1, &fe);
	if (rc != 0)
		snprintf(why, whylen, "rte_flow_isolate: %s%s%s",
		    rte_strerror(rc < 0 ? -rc : rc), fe.message != NULL ? ": " :
		    "", fe.message != NULL ? fe.message : "");
	return rc < 0 ? rc : rc > 0 ? -rc : 0;
}

#include "engine_dpdk_end.h"

#endif /* DPDK_HAVE_HEADERS */
