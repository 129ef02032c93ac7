/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of software flows: every match field, port ranges, first match
 * in table order, flow_isolation routing, VLAN tags, IP options and
 * fragments, short and malformed frames, run-time add/del on a copy, and
 * random frames checked against a plain reference matcher.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flow.h"

#define IP(a, b, c, d)	((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | \
			 (uint32_t)(c) << 8 | (uint32_t)(d))
#define FRAME_MAX	128

/* Frame under construction. */
struct pkt {
	uint16_t vlan[2];		/* TPIDs of up to two tags, 0 = none */
	uint16_t ethertype;
	uint8_t version;		/* 4 */
	uint8_t ihl;			/* 5.. */
	uint8_t proto;
	uint16_t frag;			/* flags + offset field */
	uint16_t ipv4_len;
	uint32_t src, dst;
	uint16_t sport, dport;
};

static struct pkt
udp_pkt(uint32_t src, uint16_t sport, uint32_t dst, uint16_t dport)
{
	struct pkt p;

	memset(&p, 0, sizeof(p));
	p.ethertype = 0x0800;
	p.version = 4;
	p.ihl = 5;
	p.proto = 17;
	p.ipv4_len = 1028;
	p.src = src;
	p.dst = dst;
	p.sport = sport;
	p.dport = dport;
	return p;
}

static void
put16(uint8_t *b, uint16_t v)
{
	b[0] = v >> 8;
	b[1] = v & 0xFF;
}

static void
put32(uint8_t *b, uint32_t v)
{
	put16(b, v >> 16);
	put16(b + 2, v & 0xFFFF);
}

/* Serialise p into b; returns the length of the headers written. */
static uint32_t
build(const struct pkt *p, uint8_t *b)
{
	uint32_t off = 12;
	int i;

	memset(b, 0, FRAME_MAX);
	memset(b, 0x02, 12);			/* MACs */
	for (i = 0; i < 2 && p->vlan[i]; i++) {
		put16(b + off, p->vlan[i]);
		put16(b + off + 2, 100 + i);	/* TCI */
		off += 4;
	}
	put16(b + off, p->ethertype);
	off += 2;
	b[off] = (uint8_t)(p->version << 4 | (p->ihl & 0x0F));
	put16(b + off + 2, p->ipv4_len);
	put16(b + off + 6, p->frag);
	b[off + 8] = 64;
	b[off + 9] = p->proto;
	put32(b + off + 12, p->src);
	put32(b + off + 16, p->dst);
	off += p->ihl * 4u;
	put16(b + off, p->sport);
	put16(b + off + 2, p->dport);
	put16(b + off + 4, 1008);
	return off + 8;
}

/* Classify an exact-size heap copy, so reading past len trips ASan. */
static int
classify_len(const struct flow_table *t, const uint8_t *b, uint32_t len)
{
	uint8_t *copy = malloc(len ? len : 1);
	int r;

	ck_assert_ptr_nonnull(copy);
	memcpy(copy, b, len);
	r = flow_classify(t, copy, len);
	free(copy);
	return r;
}

static int
classify(const struct flow_table *t, const struct pkt *p)
{
	uint8_t b[FRAME_MAX];

	return classify_len(t, b, build(p, b));
}

static struct cfg_flow
flow(uint32_t id, uint32_t queue)
{
	struct cfg_flow f;

	memset(&f, 0, sizeof(f));
	snprintf(f.name, sizeof(f.name), "flow%u", id);
	f.id = id;
	f.nqueue_ids = 1;
	f.queue_ids[0] = queue;
	f.has_match = true;
	return f;
}

static struct cfg_interface ifc;

/* An interface with queues ids 5, 2, 7 and the given flows. */
static struct flow_table *
table(const struct cfg_flow *flows, int n, bool isolation, uint32_t dyn)
{
	struct flow_table *t;
	int i;

	memset(&ifc, 0, sizeof(ifc));
	snprintf(ifc.name, sizeof(ifc.name), "eth");
	ifc.has_rx = true;
	ifc.rx.nqueues = 3;
	ifc.rx.queues[0].id = 5;
	ifc.rx.queues[1].id = 2;
	ifc.rx.queues[2].id = 7;
	ifc.rx.flow_isolation = isolation;
	ifc.rx.dynamic_flow_capacity = dyn;
	ifc.rx.nflows = n;
	for (i = 0; i < n; i++)
		ifc.rx.flows[i] = flows[i];
	t = flow_table_create(&ifc);
	ck_assert_ptr_nonnull(t);
	return t;
}

START_TEST(test_udp_ports)
{
	struct cfg_flow f[2] = { flow(10, 0), flow(11, 1) };
	struct flow_table *t;
	struct pkt p;

	f[0].match.has_udp_dst = true;
	f[0].match.udp_dst_lo = f[0].match.udp_dst_hi = 5005;
	f[1].match.has_udp_src = true;
	f[1].match.udp_src_lo = f[1].match.udp_src_hi = 4000;
	t = table(f, 2, true, 0);
	ck_assert_uint_eq(t->nrules, 2);
	ck_assert_uint_eq(t->rules[0].id, 10);
	p = udp_pkt(IP(10, 0, 0, 1), 1234, IP(10, 0, 0, 2), 5005);
	ck_assert_int_eq(classify(t, &p), 0);
	p.dport = 5006;
	ck_assert_int_eq(classify(t, &p), FLOW_UNMATCHED);
	p.sport = 4000;
	ck_assert_int_eq(classify(t, &p), 1);
	p.dport = 5005;			/* both: first wins */
	ck_assert_int_eq(classify(t, &p), 0);
	flow_table_free(t);
}
END_TEST

START_TEST(test_port_ranges)
{
	struct cfg_flow f[2] = { flow(1, 0), flow(2, 0) };
	struct flow_table *t;
	struct pkt p = udp_pkt(IP(1, 2, 3, 4), 0, IP(5, 6, 7, 8), 0);

	f[0].match.has_udp_dst = true;
	f[0].match.udp_dst_lo = 1000;
	f[0].match.udp_dst_hi = 1010;
	f[1].match.has_udp_src = true;
	f[1].match.udp_src_lo = 0;
	f[1].match.udp_src_hi = 65535;
	f[1].match.has_udp_dst = true;
	f[1].match.udp_dst_lo = 65000;
	f[1].match.udp_dst_hi = 65535;
	t = table(f, 2, true, 0);
	p.dport = 999;
	ck_assert_int_eq(classify(t, &p), FLOW_UNMATCHED);
	p.dport = 1000;
	ck_assert_int_eq(classify(t, &p), 0);
	p.dport = 1005;
	ck_assert_int_eq(classify(t, &p), 0);
	p.dport = 1010;
	ck_assert_int_eq(classify(t, &p), 0);
	p.dport = 1011;
	ck_assert_int_eq(classify(t, &p), FLOW_UNMATCHED);
	p.dport = 64999;
	ck_assert_int_eq(classify(t, &p), FLOW_UNMATCHED);
	p.dport = 65000;
	ck_assert_int_eq(classify(t, &p), 1);
	p.dport = 65535;
	p.sport = 65535;
	ck_assert_int_eq(classify(t, &p), 1);
	flow_table_free(t);
}
END_TEST

START_TEST(test_ipv4_fields)
{
	struct cfg_flow f[4] = { flow(1, 0), flow(2, 0), flow(3, 0),
	    flow(4, 0) };
	struct flow_table *t;
	struct pkt p = udp_pkt(IP(9, 9, 9, 9), 1, IP(9, 9, 9, 9), 1);

	f[0].match.has_ipv4_src = true;
	f[0].match.ipv4_src = IP(192, 168, 1, 10);
	f[1].match.has_ipv4_dst = true;
	f[1].match.ipv4_dst = IP(239, 1, 2, 3);
	f[2].match.has_ipv4_len = true;
	f[2].match.ipv4_len = 8078;
	/* all fields together */
	f[3].match.has_ipv4_src = f[3].match.has_ipv4_dst = true;
	f[3].match.has_ipv4_len = f[3].match.has_udp_src = true;
	f[3].match.has_udp_dst = true;
	f[3].match.ipv4_src = IP(10, 1, 1, 1);
	f[3].match.ipv4_dst = IP(10, 2, 2, 2);
	f[3].match.ipv4_len = 100;
	f[3].match.udp_src_lo = f[3].match.udp_src_hi = 7;
	f[3].match.udp_dst_lo = 8;
	f[3].match.udp_dst_hi = 9;
	t = table(f, 4, true, 0);
	ck_assert_int_eq(classify(t, &p), FLOW_UNMATCHED);
	p.src = IP(192, 168, 1, 10);
	ck_assert_int_eq(classify(t, &p), 0);
	p.src = IP(192, 168, 1, 11);
	p.dst = IP(239, 1, 2, 3);
	ck_assert_int_eq(classify(t, &p), 1);
	p.dst = IP(239, 1, 2, 4);
	p.ipv4_len = 8078;
	ck_assert_int_eq(classify(t, &p), 2);
	p.ipv4_len = 8077;
	ck_assert_int_eq(classify(t, &p), FLOW_UNMATCHED);
	p = udp_pkt(IP(10, 1, 1, 1), 7, IP(10, 2, 2, 2), 9);
	p.ipv4_len = 100;
	ck_assert_int_eq(classify(t, &p), 3);
	/* each field alone failing breaks the match */
	p.sport = 6;
	ck_assert_int_eq(classify(t, &p), FLOW_UNMATCHED);
	p.sport = 7;
	p.dport = 10;
	ck_assert_int_eq(classify(t, &p), FLOW_UNMATCHED);
	p.dport = 8;
	p.ipv4_len = 101;
	ck_assert_int_eq(classify(t, &p), FLOW_UNMATCHED);
	p.ipv4_len = 100;
	p.dst = IP(10, 2, 2, 3);
	ck_assert_int_eq(classify(t, &p), FLOW_UNMATCHED);
	p.dst = IP(10, 2, 2, 2);
	p.src = IP(10, 1, 1, 2);
	ck_assert_int_eq(classify(t, &p), FLOW_UNMATCHED);
	p.src = IP(10, 1, 1, 1);
	ck_assert_int_eq(classify(t, &p), 3);
	flow_table_free(t);
}
END_TEST

/* A flow without match takes everything, even frames that are not IP or
 * too short to be Ethernet; it also shadows later flows. */
START_TEST(test_match_all)
{
	struct cfg_flow f[2] = { flow(1, 0), flow(2, 0) };
	struct flow_table *t;
	struct pkt p = udp_pkt(1, 2, 3, 4);
	uint8_t b[FRAME_MAX];

	f[0].has_match = true;
	f[0].match.has_udp_dst = true;
	f[0].match.udp_dst_lo = f[0].match.udp_dst_hi = 4;
	f[1].has_match = false;
	t = table(f, 2, true, 0);
	ck_assert_uint_eq(t->rules[1].fields, 0);
	ck_assert_int_eq(classify(t, &p), 0);
	p.dport = 5;
	ck_assert_int_eq(classify(t, &p), 1);
	p.ethertype = 0x0806;
	ck_assert_int_eq(classify(t, &p), 1);
	build(&p, b);
	ck_assert_int_eq(classify_len(t, b, 3), 1);
	ck_assert_int_eq(flow_classify(t, NULL, 0), 1);
	flow_table_free(t);
}
END_TEST

START_TEST(test_not_udp_ipv4)
{
	struct cfg_flow f[2] = { flow(1, 0), flow(2, 0) };
	struct flow_table *t;
	struct pkt p = udp_pkt(IP(10, 0, 0, 1), 53, IP(10, 0, 0, 2), 53);

	f[0].match.has_udp_dst = true;
	f[0].match.udp_dst_lo = 0;
	f[0].match.udp_dst_hi = 65535;
	f[1].match.has_ipv4_src = true;
	f[1].match.ipv4_src = IP(10, 0, 0, 1);
	t = table(f, 2, true, 0);
	ck_assert_int_eq(classify(t, &p), 0);
	p.proto = 6;			/* TCP: ports do not apply, IPv4 do */
	ck_assert_int_eq(classify(t, &p), 1);
	p.proto = 17;
	p.ethertype = 0x86DD;		/* IPv6 ethertype */
	ck_assert_int_eq(classify(t, &p), FLOW_UNMATCHED);
	p.ethertype = 0x0806;		/* ARP */
	ck_assert_int_eq(classify(t, &p), FLOW_UNMATCHED);
	p.ethertype = 0x0800;
	p.version = 6;			/* IPv4 ethertype, bad version */
	ck_assert_int_eq(classify(t, &p), FLOW_UNMATCHED);
	p.version = 4;
	p.ihl = 4;			/* bad IHL */
	ck_assert_int_eq(classify(t, &p), FLOW_UNMATCHED);
	flow_table_free(t);
}
END_TEST

START_TEST(test_ip_options_and_fragments)
{
	struct cfg_flow f[1] = { flow(1, 0) };
	struct flow_table *t;
	struct pkt p = udp_pkt(1, 1111, 2, 2222);
	uint8_t b[FRAME_MAX];
	uint32_t len;

	f[0].match.has_udp_src = f[0].match.has_udp_dst = true;
	f[0].match.udp_src_lo = f[0].match.udp_src_hi = 1111;
	f[0].match.udp_dst_lo = f[0].match.udp_dst_hi = 2222;
	t = table(f, 1, true, 0);
	for (p.ihl = 5; p.ihl <= 15; p.ihl++)
		ck_assert_int_eq(classify(t, &p), 0);
	p.ihl = 6;
	len = build(&p, b);
	ck_assert_int_eq(classify_len(t, b, len), 0);
	/* the whole UDP header must be there, behind the options */
	ck_assert_uint_eq(len, 46);
	ck_assert_int_eq(classify_len(t, b, len - 1), FLOW_UNMATCHED);
	p.ihl = 5;
	p.frag = 0x2000;		/* MF, offset 0: first fragment */
	ck_assert_int_eq(classify(t, &p), 0);
	p.frag = 0x2000 | 185;		/* later fragment: no UDP header */
	ck_assert_int_eq(classify(t, &p), FLOW_UNMATCHED);
	p.frag = 0x4000;		/* DF */
	ck_assert_int_eq(classify(t, &p), 0);
	flow_table_free(t);
}
END_TEST

START_TEST(test_vlan)
{
	struct cfg_flow f[1] = { flow(1, 0) };
	struct flow_table *t;
	struct pkt p = udp_pkt(IP(10, 0, 0, 1), 1, IP(10, 0, 0, 2), 5005);

	f[0].match.has_udp_dst = f[0].match.has_ipv4_dst = true;
	f[0].match.udp_dst_lo = f[0].match.udp_dst_hi = 5005;
	f[0].match.ipv4_dst = IP(10, 0, 0, 2);
	t = table(f, 1, true, 0);
	p.vlan[0] = 0x8100;
	ck_assert_int_eq(classify(t, &p), 0);
	p.vlan[0] = 0x88A8;
	p.vlan[1] = 0x8100;
	ck_assert_int_eq(classify(t, &p), 0);
	p.vlan[0] = 0x9100;		/* not a tag we know */
	p.vlan[1] = 0;
	ck_assert_int_eq(classify(t, &p), FLOW_UNMATCHED);
	flow_table_free(t);
}
END_TEST

/* Every truncation of a frame: never reads beyond len (ASan copy), and a
 * port rule matches only when the ports are inside. */
START_TEST(test_short_frames)
{
	struct cfg_flow f[2] = { flow(1, 0), flow(2, 0) };
	struct flow_table *t;
	struct pkt p = udp_pkt(IP(10, 0, 0, 1), 1, IP(10, 0, 0, 2), 5005);
	uint8_t b[FRAME_MAX];
	uint32_t len, n;

	f[0].match.has_udp_dst = true;
	f[0].match.udp_dst_lo = f[0].match.udp_dst_hi = 5005;
	f[1].match.has_ipv4_dst = true;
	f[1].match.ipv4_dst = IP(10, 0, 0, 2);
	t = table(f, 2, true, 0);
	len = build(&p, b);
	ck_assert_uint_eq(len, 42);
	for (n = 0; n <= len; n++) {
		int r = classify_len(t, b, n);

		if (n >= 42)
			ck_assert_int_eq(r, 0);
		else if (n >= 34)
			ck_assert_int_eq(r, 1);
		else
			ck_assert_int_eq(r, FLOW_UNMATCHED);
	}
	flow_table_free(t);
}
END_TEST

START_TEST(test_isolation_routing)
{
	struct cfg_flow f[1] = { flow(1, 7) };
	struct flow_table *t;
	struct flow_stats s;
	struct pkt p = udp_pkt(1, 1, 2, 100);
	uint8_t b[FRAME_MAX];
	uint32_t len;

	f[0].match.has_udp_dst = true;
	f[0].match.udp_dst_lo = f[0].match.udp_dst_hi = 100;
	t = table(f, 1, true, 0);
	ck_assert(t->isolation);
	ck_assert_uint_eq(t->default_queue_id, 2);	/* lowest id */
	memset(&s, 0, sizeof(s));
	len = build(&p, b);
	ck_assert_int_eq(flow_route(t, &s, b, len), 0);
	p.dport = 101;
	len = build(&p, b);
	ck_assert_int_eq(flow_route(t, &s, b, len), FLOW_ROUTE_DROP);
	ck_assert_int_eq(flow_route(t, &s, b, 5), FLOW_ROUTE_DROP);
	ck_assert_uint_eq(s.matched, 1);
	ck_assert_uint_eq(s.unmatched, 2);
	ck_assert_uint_eq(s.to_default, 0);
	flow_table_free(t);

	t = table(f, 1, false, 0);
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(flow_route(t, &s, b, len), FLOW_ROUTE_DEFAULT);
	ck_assert_uint_eq(s.to_default, 1);
	ck_assert_uint_eq(s.unmatched, 0);
	flow_table_free(t);

	/* no flows at all: everything to the default queue */
	t = table(f, 0, false, 0);
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(flow_route(t, &s, b, len), FLOW_ROUTE_DEFAULT);
	ck_assert_uint_eq(s.to_default, 1);
	flow_table_free(t);
}
END_TEST

START_TEST(test_runtime_edit)
{
	struct cfg_flow f[2] = { flow(1, 0), flow(2, 1) };
	struct cfg_flow extra = flow(3, 2), dup = flow(1, 0);
	struct flow_table *t, *c;
	struct pkt p = udp_pkt(1, 1, 2, 100);

	f[0].match.has_udp_dst = true;
	f[0].match.udp_dst_lo = f[0].match.udp_dst_hi = 100;
	f[1].match.has_udp_dst = true;
	f[1].match.udp_dst_lo = 50;
	f[1].match.udp_dst_hi = 150;
	extra.match.has_udp_dst = true;
	extra.match.udp_dst_lo = extra.match.udp_dst_hi = 200;
	t = table(f, 2, true, 1);
	ck_assert_uint_eq(t->cap, 3);
	ck_assert_uint_eq(t->rules[1].queue_ids[0], 1);
	ck_assert_int_eq(flow_table_add(t, &dup), -EEXIST);
	ck_assert_int_eq(flow_table_add(t, &extra), 0);
	ck_assert_int_eq(flow_table_add(t, &dup), -EEXIST);
	dup.id = 9;
	ck_assert_int_eq(flow_table_add(t, &dup), -ENOSPC);

	/* edit a copy; the original classifies as before */
	c = flow_table_clone(t, 4);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_ge(c->cap, 7);
	ck_assert_int_eq(flow_table_del(c, 1), 0);
	ck_assert_int_eq(flow_table_del(c, 1), -ENOENT);
	ck_assert_int_eq(classify(t, &p), 0);
	ck_assert_int_eq(classify(c, &p), 0);	/* now flow 2, at index 0 */
	ck_assert_uint_eq(c->rules[0].id, 2);
	ck_assert_int_eq(flow_table_find(c, 3), 1);
	ck_assert_int_eq(flow_table_find(c, 1), -1);
	p.dport = 200;
	ck_assert_int_eq(classify(c, &p), 1);
	ck_assert_int_eq(flow_table_add(c, &dup), 0);
	ck_assert_uint_eq(c->nrules, 3);
	ck_assert_uint_eq(t->nrules, 3);
	ck_assert_uint_eq(t->rules[0].id, 1);
	flow_table_free(t);
	flow_table_free(c);
	flow_table_free(NULL);
}
END_TEST

START_TEST(test_create_errors)
{
	struct cfg_interface empty;

	memset(&empty, 0, sizeof(empty));
	errno = 0;
	ck_assert_ptr_null(flow_table_create(&empty));
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

/* The slow, obvious matcher the table must agree with. */
static int
reference(const struct flow_table *t, const uint8_t *b, uint32_t len)
{
	uint32_t i, l3 = 14, l4;
	int tags = 0, ip = 0, udp = 0;
	uint16_t type = 0;

	if (len >= 14) {
		type = (uint16_t)(b[12] << 8 | b[13]);
		while ((type == 0x8100 || type == 0x88A8) && tags < 2 &&
		    len >= l3 + 4) {
			type = (uint16_t)(b[l3 + 2] << 8 | b[l3 + 3]);
			l3 += 4;
			tags++;
		}
		if ((type == 0x8100 || type == 0x88A8) && tags < 2)
			type = 0;	/* truncated tag */
	}
	if (type == 0x0800 && len >= l3 + 20 && (b[l3] >> 4) == 4 &&
	    (b[l3] & 15) >= 5) {
		ip = 1;
		l4 = l3 + (b[l3] & 15u) * 4;
		if (b[l3 + 9] == 17 && ((b[l3 + 6] << 8 | b[l3 + 7]) & 0x1FFF)
		    == 0 && len >= l4 + 8)
			udp = 1;
	}
	for (i = 0; i < t->nrules; i++) {
		const struct flow_rule *r = &t->rules[i];
		unsigned sp = 0, dp = 0, il = 0, s = 0, d = 0;

		if (ip) {
			il = (unsigned)(b[l3 + 2] << 8 | b[l3 + 3]);
			s = (unsigned)b[l3 + 12] << 24 | b[l3 + 13] << 16 |
			    b[l3 + 14] << 8 | b[l3 + 15];
			d = (unsigned)b[l3 + 16] << 24 | b[l3 + 17] << 16 |
			    b[l3 + 18] << 8 | b[l3 + 19];
		}
		if (udp) {
			l4 = l3 + (b[l3] & 15u) * 4;
			sp = (unsigned)(b[l4] << 8 | b[l4 + 1]);
			dp = (unsigned)(b[l4 + 2] << 8 | b[l4 + 3]);
		}
		if ((r->fields & (FLOW_F_UDP_SRC | FLOW_F_UDP_DST)) && !udp)
			continue;
		if ((r->fields & (FLOW_F_IPV4_LEN | FLOW_F_IPV4_SRC |
		    FLOW_F_IPV4_DST)) && !ip)
			continue;
		if ((r->fields & FLOW_F_UDP_SRC) &&
		    (sp < r->udp_src_lo || sp > r->udp_src_hi))
			continue;
		if ((r->fields & FLOW_F_UDP_DST) &&
		    (dp < r->udp_dst_lo || dp > r->udp_dst_hi))
			continue;
		if ((r->fields & FLOW_F_IPV4_LEN) && il != r->ipv4_len)
			continue;
		if ((r->fields & FLOW_F_IPV4_SRC) && s != r->ipv4_src)
			continue;
		if ((r->fields & FLOW_F_IPV4_DST) && d != r->ipv4_dst)
			continue;
		return (int)i;
	}
	return FLOW_UNMATCHED;
}

/* Random frames from a small value alphabet (so rules do match) plus
 * random noise; the table must agree with the reference every time. */
START_TEST(test_random_frames)
{
	static const uint16_t types[] = { 0x0800, 0x8100, 0x88A8, 0x0806,
	    0x86DD };
	struct cfg_flow f[6];
	struct flow_table *t;
	uint8_t b[FRAME_MAX];
	unsigned seed = 12345, i, hits = 0, misses = 0;
	int k;

	for (k = 0; k < 6; k++)
		f[k] = flow((uint32_t)k + 1, 0);
	f[0].match.has_udp_dst = true;
	f[0].match.udp_dst_lo = 2;
	f[0].match.udp_dst_hi = 3;
	f[1].match.has_ipv4_src = f[1].match.has_udp_src = true;
	f[1].match.ipv4_src = IP(1, 1, 1, 1);
	f[1].match.udp_src_lo = 0;
	f[1].match.udp_src_hi = 1;
	f[2].match.has_ipv4_len = true;
	f[2].match.ipv4_len = 3;
	f[3].match.has_ipv4_dst = true;
	f[3].match.ipv4_dst = IP(2, 2, 2, 2);
	f[4].match.has_udp_src = true;
	f[4].match.udp_src_lo = 3;
	f[4].match.udp_src_hi = 3;
	f[5].match.has_udp_dst = f[5].match.has_ipv4_len = true;
	f[5].match.udp_dst_lo = 0;
	f[5].match.udp_dst_hi = 0;
	f[5].match.ipv4_len = 0;
	t = table(f, 6, true, 0);
	for (i = 0; i < 200000; i++) {
		struct pkt p;
		uint32_t len, j;
		int r;

		memset(&p, 0, sizeof(p));
		p.vlan[0] = rand_r(&seed) % 4 == 0 ? types[rand_r(&seed) % 3] : 0;
		p.vlan[1] = p.vlan[0] && rand_r(&seed) % 2 ?
		    types[rand_r(&seed) % 3] : 0;
		p.ethertype = types[rand_r(&seed) % 5];
		if (rand_r(&seed) % 2)
			p.ethertype = 0x0800;
		p.version = rand_r(&seed) % 8 ? 4 : (uint8_t)(rand_r(&seed) % 16);
		p.ihl = rand_r(&seed) % 4 ? 5 : (uint8_t)(rand_r(&seed) % 16);
		p.proto = rand_r(&seed) % 4 ? 17 : (uint8_t)(rand_r(&seed) % 256);
		p.frag = rand_r(&seed) % 4 ? 0 : (uint16_t)rand_r(&seed);
		p.ipv4_len = (uint16_t)(rand_r(&seed) % 4);
		p.src = rand_r(&seed) % 2 ? IP(1, 1, 1, 1) : IP(2, 2, 2, 2);
		p.dst = rand_r(&seed) % 2 ? IP(1, 1, 1, 1) : IP(2, 2, 2, 2);
		p.sport = (uint16_t)(rand_r(&seed) % 5);
		p.dport = (uint16_t)(rand_r(&seed) % 5);
		len = build(&p, b);
		if (rand_r(&seed) % 3 == 0)
			len = (uint32_t)rand_r(&seed) % (len + 1);
		if (rand_r(&seed) % 16 == 0) {
			len = (uint32_t)rand_r(&seed) % FRAME_MAX;
			for (j = 0; j < len; j++)
				b[j] = (uint8_t)rand_r(&seed);
		}
		r = classify_len(t, b, len);
		ck_assert_int_eq(r, reference(t, b, len));
		if (r >= 0)
			hits++;
		else
			misses++;
	}
	/* the alphabet makes both outcomes common */
	ck_assert_uint_gt(hits, 20000);
	ck_assert_uint_gt(misses, 20000);
	flow_table_free(t);
}
END_TEST

static Suite *
flow_suite(void)
{
	Suite *s = suite_create("flow");
	TCase *tc = tcase_create("classify");

	tcase_add_test(tc, test_udp_ports);
	tcase_add_test(tc, test_port_ranges);
	tcase_add_test(tc, test_ipv4_fields);
	tcase_add_test(tc, test_match_all);
	tcase_add_test(tc, test_not_udp_ipv4);
	tcase_add_test(tc, test_ip_options_and_fragments);
	tcase_add_test(tc, test_vlan);
	tcase_add_test(tc, test_short_frames);
	tcase_add_test(tc, test_isolation_routing);
	tcase_add_test(tc, test_runtime_edit);
	tcase_add_test(tc, test_create_errors);
	tcase_add_test(tc, test_random_frames);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(flow_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
