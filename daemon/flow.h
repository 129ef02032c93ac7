/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Flows in software: a compiled table of an interface's rx flows and the
 * classifier that picks, for an Ethernet frame, the first flow (in table
 * order) whose match fields all hold. Every engine without hardware flow
 * steering uses it (the socket engine always, DPDK when rte_flow fails).
 * Tables are built and edited on the main thread; an RX worker classifies
 * with its own copy.
 */
#ifndef DAQIRI_FLOW_H
#define DAQIRI_FLOW_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

/* flow_classify(): no flow matched. */
#define FLOW_UNMATCHED		(-1)
/* flow_route() returns a rule index (>= 0) or one of these two; the worker
 * maps them to its own streams (worker.c, WS_ROUTE_*). */
/* flow_route(): the frame is dropped (no match, flow_isolation on). */
#define FLOW_ROUTE_DROP		(-1)
/* flow_route(): no match, isolation off: the frame goes to the raw stream
 * of the interface's lowest-id rx queue (flow_table.default_queue_id). */
#define FLOW_ROUTE_DEFAULT	(-2)
/* Most rules one table holds (config flows + dynamic_flow_capacity). */
#define FLOW_MAX_RULES		4096

/* Which match fields of a rule apply (bit mask). */
enum flow_field {
	FLOW_F_UDP_SRC = 1u << 0,
	FLOW_F_UDP_DST = 1u << 1,
	FLOW_F_IPV4_LEN = 1u << 2,
	FLOW_F_IPV4_SRC = 1u << 3,
	FLOW_F_IPV4_DST = 1u << 4,
};

/* One compiled flow. Values in host byte order; ranges inclusive. */
struct flow_rule {
	uint32_t id;			/* the flow's id (cfg_flow.id) */
	char name[CFG_NAME_MAX];
	int nqueue_ids;
	uint32_t queue_ids[CFG_MAX_QUEUE_IDS];
	unsigned fields;		/* enum flow_field bits; 0 = match all */
	uint16_t udp_src_lo, udp_src_hi;
	uint16_t udp_dst_lo, udp_dst_hi;
	uint16_t ipv4_len;		/* the IPv4 total-length field */
	uint32_t ipv4_src, ipv4_dst;
};

/*
 * A table is built once and not changed while a worker classifies with it.
 * To add or delete a flow at run time, the owner of the change (the main
 * thread) makes a copy with flow_table_clone(), edits the copy, and hands
 * it to the worker through its command queue; the worker swaps its pointer
 * between bursts and returns the old table to be freed. No locks, no RCU.
 */
struct flow_table {
	bool isolation;			/* rx.flow_isolation */
	uint32_t default_queue_id;	/* lowest rx queue id of the interface */
	uint32_t nrules;
	uint32_t cap;			/* rules[] has room for cap */
	struct flow_rule rules[];	/* first match wins */
};

/* Per-worker counters of flow_route(), owned by the worker. */
struct flow_stats {
	uint64_t matched;		/* frames that matched a flow */
	uint64_t unmatched;		/* no match, flow_isolation: dropped */
	uint64_t to_default;		/* no match, sent to the default queue */
};

/*
 * Compile the rx flows of ifc (in config order) into a new table with room
 * for ifc->rx.dynamic_flow_capacity more (capped at FLOW_MAX_RULES).
 * Returns NULL with errno set (ENOMEM; EINVAL when ifc has no rx queue).
 * Free with flow_table_free().
 */
struct flow_table *flow_table_create(const struct cfg_interface *ifc);

/* A copy of t with room for at least `extra` more rules than it holds.
 * NULL with errno ENOMEM. */
struct flow_table *flow_table_clone(const struct flow_table *t,
				    uint32_t extra);

/* NULL-safe. */
void flow_table_free(struct flow_table *t);

/*
 * Append flow f (a validated cfg_flow) as the last rule. Returns 0,
 * -EEXIST when a rule with f->id exists, -ENOSPC when the table is full
 * (clone with more room first).
 */
int flow_table_add(struct flow_table *t, const struct cfg_flow *f);

/* Delete the rule with id; later rules keep their order. 0 or -ENOENT. */
int flow_table_del(struct flow_table *t, uint32_t id);

/* Index of the rule with id, or -1. */
int flow_table_find(const struct flow_table *t, uint32_t id);

/* Fill rule r from flow f (exported for tests and engines that install
 * flows in hardware and want the same view). */
void flow_rule_from_cfg(struct flow_rule *r, const struct cfg_flow *f);

/*
 * Classify one Ethernet frame: frame points at its first byte, len is how
 * many bytes are readable there (the frame's header part is enough: the
 * socket engine's synthetic header is 42 bytes). Understands one 802.1Q or
 * 802.1ad VLAN tag, IPv4 options (IHL > 5) and fragments (only a first
 * fragment has UDP ports). A rule that needs a field the frame does not
 * have (not IPv4, not UDP, too short, bad IHL) does not match; a rule
 * without fields matches every frame, even a short one. Returns the index
 * of the first matching rule in t->rules, or FLOW_UNMATCHED. Reads nothing
 * beyond frame[len - 1]; never fails otherwise.
 */
int flow_classify(const struct flow_table *t, const uint8_t *frame,
		  uint32_t len);

/*
 * flow_classify() plus the flow_isolation decision, counted in *s:
 * returns the rule index (s->matched), FLOW_ROUTE_DEFAULT (isolation off,
 * s->to_default) or FLOW_ROUTE_DROP (isolation on, s->unmatched).
 */
int flow_route(const struct flow_table *t, struct flow_stats *s,
	       const uint8_t *frame, uint32_t len);

#endif
