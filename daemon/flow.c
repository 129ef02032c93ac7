/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Flows in software: compile an interface's rx flows into a table and
 * classify Ethernet frames against it, first match wins. Runs once per
 * packet on the RX worker, so it never allocates, locks or makes syscalls.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "flow.h"

#define FLOW_ETH_HLEN		14
#define FLOW_VLAN_HLEN		4
#define FLOW_MAX_VLAN_TAGS	2	/* 802.1ad outer + 802.1Q inner */
#define FLOW_ETHERTYPE_IPV4	0x0800
#define FLOW_ETHERTYPE_VLAN	0x8100
#define FLOW_ETHERTYPE_QINQ	0x88A8
#define FLOW_IPV4_HLEN		20
#define FLOW_IPPROTO_UDP	17
#define FLOW_IPV4_FRAG_OFFSET	0x1FFF
#define FLOW_UDP_HLEN		8

#define FLOW_IPV4_FIELDS	(FLOW_F_IPV4_LEN | FLOW_F_IPV4_SRC | \
				 FLOW_F_IPV4_DST)
#define FLOW_UDP_FIELDS		(FLOW_F_UDP_SRC | FLOW_F_UDP_DST)

/* What one frame offers to match on. */
struct flow_keys {
	unsigned have;			/* FLOW_F_* bits the frame has */
	uint16_t udp_src, udp_dst, ipv4_len;
	uint32_t ipv4_src, ipv4_dst;
};

static inline uint16_t
flow_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t
flow_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

static void
flow_parse(const uint8_t *f, uint32_t len, struct flow_keys *k)
{
	uint32_t off = FLOW_ETH_HLEN, ihl;
	uint16_t type;
	int tags;

	memset(k, 0, sizeof(*k));
	if (len < FLOW_ETH_HLEN)
		return;
	type = flow_be16(f + 12);
	for (tags = 0; tags < FLOW_MAX_VLAN_TAGS &&
	    (type == FLOW_ETHERTYPE_VLAN || type == FLOW_ETHERTYPE_QINQ);
	    tags++) {
		if (len < off + FLOW_VLAN_HLEN)
			return;
		type = flow_be16(f + off + 2);
		off += FLOW_VLAN_HLEN;
	}
	if (type != FLOW_ETHERTYPE_IPV4 || len < off + FLOW_IPV4_HLEN)
		return;
	ihl = (uint32_t)(f[off] & 0x0F) * 4;
	if (f[off] >> 4 != 4 || ihl < FLOW_IPV4_HLEN)
		return;
	k->have = FLOW_IPV4_FIELDS;
	k->ipv4_len = flow_be16(f + off + 2);
	k->ipv4_src = flow_be32(f + off + 12);
	k->ipv4_dst = flow_be32(f + off + 16);
	/* Only a datagram's first fragment carries the UDP header. */
	if (f[off + 9] != FLOW_IPPROTO_UDP ||
	    (flow_be16(f + off + 6) & FLOW_IPV4_FRAG_OFFSET) != 0)
		return;
	off += ihl;
	if (len < off + FLOW_UDP_HLEN)
		return;
	k->have |= FLOW_UDP_FIELDS;
	k->udp_src = flow_be16(f + off);
	k->udp_dst = flow_be16(f + off + 2);
}

static inline bool
flow_rule_match(const struct flow_rule *r, const struct flow_keys *k)
{
	unsigned want = r->fields;

	if ((want & k->have) != want)
		return false;
	if ((want & FLOW_F_UDP_SRC) &&
	    (k->udp_src < r->udp_src_lo || k->udp_src > r->udp_src_hi))
		return false;
	if ((want & FLOW_F_UDP_DST) &&
	    (k->udp_dst < r->udp_dst_lo || k->udp_dst > r->udp_dst_hi))
		return false;
	if ((want & FLOW_F_IPV4_LEN) && k->ipv4_len != r->ipv4_len)
		return false;
	if ((want & FLOW_F_IPV4_SRC) && k->ipv4_src != r->ipv4_src)
		return false;
	if ((want & FLOW_F_IPV4_DST) && k->ipv4_dst != r->ipv4_dst)
		return false;
	return true;
}

int
flow_classify(const struct flow_table *t, const uint8_t *frame, uint32_t len)
{
	struct flow_keys k;
	uint32_t i;

	if (t == NULL || t->nrules == 0)
		return FLOW_UNMATCHED;
	if (frame == NULL)
		len = 0;
	flow_parse(frame, len, &k);
	for (i = 0; i < t->nrules; i++)
		if (flow_rule_match(&t->rules[i], &k))
			return (int)i;
	return FLOW_UNMATCHED;
}

int
flow_route(const struct flow_table *t, struct flow_stats *s,
	   const uint8_t *frame, uint32_t len)
{
	int i = flow_classify(t, frame, len);

	if (i >= 0) {
		s->matched++;
		return i;
	}
	if (t != NULL && t->isolation) {
		s->unmatched++;
		return FLOW_ROUTE_DROP;
	}
	s->to_default++;
	return FLOW_ROUTE_DEFAULT;
}

void
flow_rule_from_cfg(struct flow_rule *r, const struct cfg_flow *f)
{
	const struct cfg_match *m = &f->match;
	int i;

	memset(r, 0, sizeof(*r));
	r->id = f->id;
	memcpy(r->name, f->name, sizeof(r->name));
	r->name[sizeof(r->name) - 1] = '\0';
	r->nqueue_ids = f->nqueue_ids;
	if (r->nqueue_ids < 0)
		r->nqueue_ids = 0;
	if (r->nqueue_ids > CFG_MAX_QUEUE_IDS)
		r->nqueue_ids = CFG_MAX_QUEUE_IDS;
	for (i = 0; i < r->nqueue_ids; i++)
		r->queue_ids[i] = f->queue_ids[i];
	if (!f->has_match)
		return;
	if (m->has_udp_src) {
		r->fields |= FLOW_F_UDP_SRC;
		r->udp_src_lo = m->udp_src_lo;
		r->udp_src_hi = m->udp_src_hi;
	}
	if (m->has_udp_dst) {
		r->fields |= FLOW_F_UDP_DST;
		r->udp_dst_lo = m->udp_dst_lo;
		r->udp_dst_hi = m->udp_dst_hi;
	}
	if (m->has_ipv4_len) {
		r->fields |= FLOW_F_IPV4_LEN;
		r->ipv4_len = m->ipv4_len;
	}
	if (m->has_ipv4_src) {
		r->fields |= FLOW_F_IPV4_SRC;
		r->ipv4_src = m->ipv4_src;
	}
	if (m->has_ipv4_dst) {
		r->fields |= FLOW_F_IPV4_DST;
		r->ipv4_dst = m->ipv4_dst;
	}
}

static struct flow_table *
flow_table_alloc(uint32_t cap)
{
	struct flow_table *t;

	if (cap > FLOW_MAX_RULES)
		cap = FLOW_MAX_RULES;
	t = calloc(1, sizeof(*t) + (size_t)cap * sizeof(t->rules[0]));
	if (t == NULL)
		return NULL;
	t->cap = cap;
	return t;
}

struct flow_table *
flow_table_create(const struct cfg_interface *ifc)
{
	const struct cfg_rx *rx = &ifc->rx;
	struct flow_table *t;
	uint64_t cap;
	int i;

	if (rx->nqueues <= 0 || rx->nflows < 0 || rx->nflows > CFG_MAX_FLOWS) {
		errno = EINVAL;
		return NULL;
	}
	cap = (uint64_t)rx->nflows + rx->dynamic_flow_capacity;
	if ((t = flow_table_alloc(cap > FLOW_MAX_RULES ? FLOW_MAX_RULES :
	    (uint32_t)cap)) == NULL)
		return NULL;
	t->isolation = rx->flow_isolation;
	t->default_queue_id = rx->queues[0].id;
	for (i = 1; i < rx->nqueues; i++)
		if (rx->queues[i].id < t->default_queue_id)
			t->default_queue_id = rx->queues[i].id;
	for (i = 0; i < rx->nflows; i++)
		flow_rule_from_cfg(&t->rules[t->nrules++], &rx->flows[i]);
	return t;
}

struct flow_table *
flow_table_clone(const struct flow_table *t, uint32_t extra)
{
	struct flow_table *n;
	uint64_t cap = (uint64_t)t->nrules + extra;

	if (cap < t->cap)
		cap = t->cap;
	if ((n = flow_table_alloc(cap > FLOW_MAX_RULES ? FLOW_MAX_RULES :
	    (uint32_t)cap)) == NULL)
		return NULL;
	n->isolation = t->isolation;
	n->default_queue_id = t->default_queue_id;
	n->nrules = t->nrules;
	memcpy(n->rules, t->rules, (size_t)t->nrules * sizeof(t->rules[0]));
	return n;
}

void
flow_table_free(struct flow_table *t)
{
	free(t);
}

int
flow_table_find(const struct flow_table *t, uint32_t id)
{
	uint32_t i;

	for (i = 0; i < t->nrules; i++)
		if (t->rules[i].id == id)
			return (int)i;
	return -1;
}

int
flow_table_add(struct flow_table *t, const struct cfg_flow *f)
{
	if (flow_table_find(t, f->id) >= 0)
		return -EEXIST;
	if (t->nrules >= t->cap)
		return -ENOSPC;
	flow_rule_from_cfg(&t->rules[t->nrules++], f);
	return 0;
}

int
flow_table_del(struct flow_table *t, uint32_t id)
{
	int i = flow_table_find(t, id);

	if (i < 0)
		return -ENOENT;
	memmove(&t->rules[i], &t->rules[i + 1],
	    (size_t)(t->nrules - (uint32_t)i - 1) * sizeof(t->rules[0]));
	t->nrules--;
	return 0;
}
