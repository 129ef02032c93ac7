/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Flow steering for the socket engine: an interface's flow table compiled
 * into a classic BPF program for its SO_REUSEPORT group (the rx queues'
 * sockets, bound in queue order, so socket i is rx queue i). The kernel
 * runs it on every datagram, before any queue sees it, and delivers the
 * datagram to the socket of the first flow that matches, as flow_route()
 * would pick it; what no flow matches gets the kernel's own hash. Pure.
 *
 * A flow whose action lists several queues (a stream spread over them:
 * cfg_owner.c) sends a datagram to the one at its UDP source port modulo
 * their count, in the action's order: a sender spreads a stream by
 * sending from several source ports, as a NIC's RSS spreads by the hash
 * of the addresses and ports. Queues of the list this engine has not are
 * left out.
 *
 * The kernel runs a reuseport program with the packet's data at the UDP
 * payload, so the headers are read below it, relative to the IPv4 header
 * (SKF_NET_OFF). An IPv4 header with options (IHL > 5) puts the UDP header
 * elsewhere: such datagrams are left to the hash (the worker's classifier
 * still gets them right, or counts them misrouted).
 */
#include <errno.h>
#include <linux/filter.h>
#include <stdint.h>

#include "steer_cbpf.h"

/* What the program returns for "no flow": an index past every socket,
 * which makes the kernel fall back to its hash. */
#define STEER_HASH		0xffffffffu
/* Offsets from the IPv4 header of a datagram without IP options. */
#define OFF_IP_VHL		0
#define OFF_IP_LEN		2
#define OFF_IP_SRC		12
#define OFF_IP_DST		16
#define OFF_UDP_SRC		20
#define OFF_UDP_DST		22

struct prog {
	struct sock_filter *f;
	int n, cap;
	bool full;
};

static int
emit(struct prog *p, uint16_t code, uint8_t jt, uint8_t jf, uint32_t k)
{
	if (p->n >= p->cap) {
		p->full = true;
		return p->n;
	}
	p->f[p->n] = (struct sock_filter){ code, jt, jf, k };
	return p->n++;
}

/* A load of the field at off (bytes 1, 2 or 4) of the IPv4 header. */
static void
load(struct prog *p, uint32_t off, int bytes)
{
	uint16_t size = bytes == 1 ? BPF_B : bytes == 2 ? BPF_H : BPF_W;

	emit(p, BPF_LD | size | BPF_ABS, 0, 0, (uint32_t)SKF_NET_OFF + off);
}

/*
 * The jumps of one rule that go to "the next rule", patched once its
 * length is known: a jump's jt or jf (which one in *on_true).
 */
struct fixups {
	int at[16];
	bool on_true[16];
	int n;
};

static void
jump_next(struct prog *p, struct fixups *fx, uint16_t op, uint32_t k,
	  bool next_if_true)
{
	int i = emit(p, BPF_JMP | op | BPF_K, 0, 0, k);

	if (fx->n < (int)(sizeof(fx->at) / sizeof(fx->at[0]))) {
		fx->at[fx->n] = i;
		fx->on_true[fx->n] = next_if_true;
		fx->n++;
	}
}

/* x in [lo, hi]: else the next rule. */
static void
range(struct prog *p, struct fixups *fx, uint32_t off, int bytes, uint32_t lo,
      uint32_t hi)
{
	load(p, off, bytes);
	if (lo == hi) {
		jump_next(p, fx, BPF_JEQ, lo, false);
		return;
	}
	if (lo > 0)
		jump_next(p, fx, BPF_JGE, lo, false);
	jump_next(p, fx, BPF_JGT, hi, true);
}

int
steer_cbpf_build(const struct flow_table *t, const uint32_t *queue_ids,
		 int nqueues, struct sock_filter *out, int cap)
{
	struct prog p = { .f = out, .cap = cap };

	/* no IP options, or the UDP header is not where we read it */
	load(&p, OFF_IP_VHL, 1);
	emit(&p, BPF_ALU | BPF_AND | BPF_K, 0, 0, 0x0f);
	emit(&p, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 5);
	emit(&p, BPF_RET | BPF_K, 0, 0, STEER_HASH);

	for (uint32_t r = 0; r < t->nrules; r++) {
		const struct flow_rule *fr = &t->rules[r];
		struct fixups fx = { .n = 0 };
		uint32_t qis[CFG_MAX_QUEUE_IDS];
		int nq = 0, next;

		for (int k = 0; k < fr->nqueue_ids; k++)
			for (int i = 0; i < nqueues; i++)
				if (queue_ids[i] == fr->queue_ids[k]) {
					qis[nq++] = (uint32_t)i;
					break;
				}
		if (nq == 0)
			continue;	/* no queue this engine has: hash */
		if (fr->fields & FLOW_F_UDP_SRC)
			range(&p, &fx, OFF_UDP_SRC, 2, fr->udp_src_lo,
			    fr->udp_src_hi);
		if (fr->fields & FLOW_F_UDP_DST)
			range(&p, &fx, OFF_UDP_DST, 2, fr->udp_dst_lo,
			    fr->udp_dst_hi);
		if (fr->fields & FLOW_F_IPV4_LEN)
			range(&p, &fx, OFF_IP_LEN, 2, fr->ipv4_len,
			    fr->ipv4_len);
		if (fr->fields & FLOW_F_IPV4_SRC)
			range(&p, &fx, OFF_IP_SRC, 4, fr->ipv4_src,
			    fr->ipv4_src);
		if (fr->fields & FLOW_F_IPV4_DST)
			range(&p, &fx, OFF_IP_DST, 4, fr->ipv4_dst,
			    fr->ipv4_dst);
		if (nq > 1) {
			/* the source port picks one of the list */
			load(&p, OFF_UDP_SRC, 2);
			emit(&p, BPF_ALU | BPF_MOD | BPF_K, 0, 0, (uint32_t)nq);
			for (int k = 0; k + 1 < nq; k++) {
				emit(&p, BPF_JMP | BPF_JEQ | BPF_K, 0, 1,
				    (uint32_t)k);
				emit(&p, BPF_RET | BPF_K, 0, 0, qis[k]);
			}
		}
		emit(&p, BPF_RET | BPF_K, 0, 0, qis[nq - 1]);
		next = p.n;
		for (int i = 0; i < fx.n && !p.full; i++) {
			struct sock_filter *j = &p.f[fx.at[i]];

			/* a rule is a few instructions: within 8 bits */
			if (fx.on_true[i])
				j->jt = (uint8_t)(next - fx.at[i] - 1);
			else
				j->jf = (uint8_t)(next - fx.at[i] - 1);
		}
	}
	emit(&p, BPF_RET | BPF_K, 0, 0, STEER_HASH);
	return p.full ? -E2BIG : p.n;
}
