/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DPDK engine's transmit side (DESIGN.md "TX"): one ethdev tx queue
 * per configured tx queue. Every frame is a header mbuf holding the
 * Ethernet/IPv4/UDP headers written from the queue's destination (the
 * configuration, never the consumer), chained to an external-buffer mbuf
 * that points at the payload in the consumer's channel pool: zero copy.
 * The payload's tag goes back through tx_done() when the PMD frees that
 * mbuf (the free callback of its shared info). A port that cannot send
 * multi-segment frames gets the payload copied behind the headers.
 *
 * A tx queue in device memory (its channels' pools are GPU memory,
 * daemon/tx.c) is staged, as on the socket engine: each burst's payloads
 * are copied from device memory into their frames' mbufs (one
 * cudaMemcpyAsync each on the queue's own stream, one wait per burst, on
 * the TX worker), the headers are written after the copy (the UDP
 * checksum reads the payload), and the frames go out as copied ones,
 * counted in staged. Zero-copy sending from GPU memory (GPUDirect:
 * external mbufs on a pool registered with rte_extmem_register and
 * rte_dev_dma_map at channel creation) is not built: only a NIC with
 * GPUDirect could test it.
 */
#define ALLOW_EXPERIMENTAL_API 1	/* rte_eth_tx_done_cleanup */

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "gpu.h"
#include "log.h"

#include "engine_dpdk_begin.h"

#ifdef DPDK_HAVE_HEADERS

#include <rte_config.h>
#include <rte_bus.h>
#include <rte_byteorder.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_udp.h>

#include "engine_dpdk_internal.h"

/* Frames one rte_eth_tx_burst() call takes. */
#define DPDK_TX_BURST		64u
/* Frames in flight per queue (slots, header mbufs): the queue's memory
 * region's buffers, within these bounds. */
#define DPDK_TX_MIN_SLOTS	256u
#define DPDK_TX_MAX_SLOTS	8192u
/* Tx descriptors, at most half the slots: a PMD that frees sent mbufs
 * only when it needs descriptors must not hold every slot. */
#define DPDK_TX_DESC		1024u
#define DPDK_TX_POOL_CACHE	256u
#define DPDK_CACHE_LINE		64
#define DPDK_TX_HDR_ROOM	64u	/* header mbuf data room past headroom */

struct dpdk_txq;

#define DPDK_TX_NIL		UINT32_MAX	/* end of a slot list */

/*
 * One payload in flight. The shared info is the external buffer's: the
 * PMD frees the payload mbuf, its refcount drops to 0, and the free
 * callback pushes the slot onto the done list (report) or straight back
 * onto the free stack (a frame the port did not take, freed by us).
 */
struct dpdk_tx_slot {
	struct rte_mbuf_ext_shared_info sh;
	struct dpdk_txq *q;
	uint64_t tag;
	uint32_t idx;
	uint32_t next;			/* done list */
	bool report;
	bool direct;			/* no payload mbuf: copied, or empty */
};

struct dpdk_txq {
	struct engine_txq base;
	uint16_t port;
	uint16_t qid;
	bool lcore_tried;
	bool copy;			/* payload copied behind the headers */
	bool ip_hw, udp_hw;		/* checksums offloaded to the port */
	bool cleanup_ok;		/* rte_eth_tx_done_cleanup works */
	bool stage_warned;		/* a failed staging copy was logged */
	uint16_t ip_id;
	uint8_t tmpl[ENGINE_SYNTH_HDR_LEN];	/* the headers, lengths 0 */
	struct rte_mempool *hdr_pool;	/* header (copy: whole frame) mbufs */
	struct rte_mempool *ext_pool;	/* payload mbufs (no data room) */

	struct dpdk_tx_slot *slots;
	uint32_t nslots;
	uint32_t *free_stk;		/* free slot indices (worker only) */
	uint32_t nfree;
	/* Slots whose payload the port let go of. Mostly the worker's own
	 * rte_eth_tx_burst frees them, but a PMD may free on another thread
	 * (a loopback vdev's receiver, rte_eth_dev_stop on main): pushed
	 * lock-free, taken whole by tx_done() into its own list. */
	_Atomic uint32_t done_push;
	uint32_t done_take;

	struct engine_tx_stats st;
	struct rte_mbuf *burst[DPDK_TX_BURST];
	uint32_t burst_slot[DPDK_TX_BURST];
	/* base.device: the stream of the staging copies and a burst's */
	void *stream;
	struct gpu_copy copies[DPDK_TX_BURST];
} __attribute__((aligned(DPDK_CACHE_LINE)));

struct dpdk_tx {
	int nq;
	struct dpdk_txq *q[CFG_MAX_QUEUES];
};

static bool dpdk_tx_copy_forced;

void
dpdk_tx_force_copy(bool on)
{
	dpdk_tx_copy_forced = on;
}

/* ---- slots ----------------------------------------------------------- */

static inline void
slot_free(struct dpdk_txq *q, uint32_t idx)
{
	q->free_stk[q->nfree++] = idx;
}

static inline void
slot_done(struct dpdk_txq *q, uint32_t idx)
{
	uint32_t head = atomic_load_explicit(&q->done_push,
	    memory_order_relaxed);

	do
		q->slots[idx].next = head;
	while (!atomic_compare_exchange_weak_explicit(&q->done_push, &head,
	    idx, memory_order_release, memory_order_relaxed));
}

/* The PMD (or we, for a frame it did not take) freed a payload mbuf; on
 * the thread that freed it (report is false only on the worker's). */
static void
dpdk_tx_ext_free(void *addr, void *opaque)
{
	struct dpdk_tx_slot *s = opaque;

	if (s->report)
		slot_done(s->q, s->idx);
	else
		slot_free(s->q, s->idx);
}

/* ---- headers --------------------------------------------------------- */

/* The UDP checksum over pseudo-header, UDP header and payload. */
static uint16_t
dpdk_tx_udp_cksum(const struct rte_ipv4_hdr *ip, const struct rte_udp_hdr *u,
		  const void *payload, uint32_t len)
{
	uint32_t s = rte_ipv4_phdr_cksum(ip, 0);
	uint16_t c;

	/* the header and the payload are two buffers: DPDK's raw sum over
	 * each (rte_ipv4_udptcp_cksum() wants them in one) */
	s = __rte_raw_cksum(u, sizeof(*u), s);
	s = __rte_raw_cksum(payload, len, s);
	c = (uint16_t)~__rte_raw_cksum_reduce(s);
	return c == 0 ? 0xffff : c;	/* 0 would mean "no checksum" */
}

/* Write the headers of a frame of payload len into h (42 bytes at its
 * data) and set the offload fields of m. */
static void
dpdk_tx_headers(struct dpdk_txq *q, struct rte_mbuf *m, uint8_t *h,
		const void *payload, uint32_t len)
{
	struct rte_ipv4_hdr *ip;
	struct rte_udp_hdr *u;

	memcpy(h, q->tmpl, ENGINE_SYNTH_HDR_LEN);
	ip = (struct rte_ipv4_hdr *)(h + RTE_ETHER_HDR_LEN);
	u = (struct rte_udp_hdr *)(ip + 1);
	ip->total_length = rte_cpu_to_be_16((uint16_t)(sizeof(*ip) +
	    sizeof(*u) + len));
	ip->packet_id = rte_cpu_to_be_16(q->ip_id++);
	u->dgram_len = rte_cpu_to_be_16((uint16_t)(sizeof(*u) + len));
	if (q->ip_hw || q->udp_hw) {
		m->l2_len = RTE_ETHER_HDR_LEN;
		m->l3_len = sizeof(*ip);
		m->l4_len = sizeof(*u);	/* some PMDs read it for UDP too */
		m->ol_flags |= RTE_MBUF_F_TX_IPV4;
	}
	if (q->ip_hw)
		m->ol_flags |= RTE_MBUF_F_TX_IP_CKSUM;
	else
		ip->hdr_checksum = rte_ipv4_cksum(ip);
	if (q->udp_hw) {
		m->ol_flags |= RTE_MBUF_F_TX_UDP_CKSUM;
		u->dgram_cksum = rte_ipv4_phdr_cksum(ip, m->ol_flags);
	} else
		u->dgram_cksum = dpdk_tx_udp_cksum(ip, u, payload, len);
}

/* ---- data path ------------------------------------------------------- */

/* Make the frame of p in q->burst[i] with slot idx; false when out of
 * mbufs. */
static bool
dpdk_tx_build(struct dpdk_txq *q, const struct engine_tx_pkt *p, unsigned i,
	      uint32_t idx)
{
	struct dpdk_tx_slot *s = &q->slots[idx];
	struct rte_mbuf *h, *x;
	uint8_t *b;

	if ((h = rte_pktmbuf_alloc(q->hdr_pool)) == NULL)
		return false;
	s->tag = p->tag;
	s->report = true;
	/* an empty payload is no segment (not every PMD takes one of 0
	 * bytes) */
	s->direct = q->copy || p->len == 0;
	if (s->direct) {
		b = (uint8_t *)rte_pktmbuf_append(h,
		    (uint16_t)(ENGINE_SYNTH_HDR_LEN + p->len));
		if (q->base.device) {
			/* staged by dpdk_tx_stage(), which writes the
			 * headers after the copy */
			q->copies[i].dst = b + ENGINE_SYNTH_HDR_LEN;
			q->copies[i].src = p->data;
			q->copies[i].len = p->len;
			q->burst[i] = h;
			q->burst_slot[i] = idx;
			return true;
		}
		if (p->len > 0) {
			memcpy(b + ENGINE_SYNTH_HDR_LEN, p->data, p->len);
			q->st.copied++;
		}
	} else {
		if ((x = rte_pktmbuf_alloc(q->ext_pool)) == NULL) {
			rte_pktmbuf_free(h);
			return false;
		}
		b = (uint8_t *)rte_pktmbuf_append(h, ENGINE_SYNTH_HDR_LEN);
		rte_mbuf_ext_refcnt_set(&s->sh, 1);
		/* The pool is mapped read-only here; the port only reads. With
		 * IOVA as VA (or a port that copies: a vdev) the address is
		 * the device's. */
		rte_pktmbuf_attach_extbuf(x, (void *)(uintptr_t)p->data,
		    (rte_iova_t)(uintptr_t)p->data, (uint16_t)p->len, &s->sh);
		x->data_len = (uint16_t)p->len;
		x->pkt_len = p->len;
		h->next = x;
		h->nb_segs = 2;
		h->pkt_len += p->len;
	}
	dpdk_tx_headers(q, h, b, p->data, p->len);
	q->burst[i] = h;
	q->burst_slot[i] = idx;
	return true;
}

/* A device queue's frames [0, n) of q->burst: their payloads copied from
 * device memory (q->copies), then their headers. 0, or the copy's
 * negative errno (the frames are the caller's to unbuild). */
static int
dpdk_tx_stage(struct dpdk_txq *q, unsigned n)
{
	int rc;

	if ((rc = gpu_copy_to_host(q->base.gpu, q->stream, q->copies, n)) < 0) {
		if (!q->stage_warned) {
			q->stage_warned = true;
			log_warnx("tx queue %u: copying payloads from device "
			    "memory: %s (counted in engine errors; not logged "
			    "again)", q->base.queue_id, gpu_last_error());
		}
		return rc;
	}
	for (unsigned i = 0; i < n; i++) {
		struct rte_mbuf *h = q->burst[i];
		uint8_t *b = rte_pktmbuf_mtod(h, uint8_t *);

		dpdk_tx_headers(q, h, b, b + ENGINE_SYNTH_HDR_LEN,
		    (uint32_t)q->copies[i].len);
	}
	return 0;
}

/* Free frames [from, to) of q->burst the port did not take; their tags
 * are not reported (the caller offers them again). */
static void
dpdk_tx_unbuild(struct dpdk_txq *q, unsigned from, unsigned to)
{
	for (unsigned i = from; i < to; i++) {
		uint32_t idx = q->burst_slot[i];

		q->slots[idx].report = false;
		rte_pktmbuf_free(q->burst[i]);
		if (q->slots[idx].direct)
			slot_free(q, idx);
	}
}

static void
dpdk_tx_reclaim(struct dpdk_txq *q)
{
	if (q->cleanup_ok && rte_eth_tx_done_cleanup(q->port, q->qid, 0) ==
	    -ENOTSUP)
		q->cleanup_ok = false;
}

/*
 * Build up to DPDK_TX_BURST frames of p[0..n) and hand them to the port.
 * Returns how many it took; *err as tx_burst() says when not all.
 */
static unsigned
dpdk_tx_step(struct dpdk_txq *q, const struct engine_tx_pkt *p, unsigned n,
	     int *err)
{
	unsigned k = 0, built = 0, sent;
	int berr = 0, rc;
	uint16_t ok;

	if (n > DPDK_TX_BURST)
		n = DPDK_TX_BURST;
	while (k < n && p[k].len <= q->base.max_payload)
		k++;
	if (k < n)
		berr = -EMSGSIZE;
	if (q->nfree < k)
		dpdk_tx_reclaim(q);
	if (q->nfree < k) {
		k = q->nfree;
		berr = -EAGAIN;
	}
	while (built < k) {
		uint32_t idx = q->free_stk[q->nfree - 1];

		if (!dpdk_tx_build(q, &p[built], built, idx)) {
			berr = -EAGAIN;
			break;
		}
		q->nfree--;
		built++;
	}
	if (built == 0) {
		*err = berr;
		return 0;
	}
	if (q->base.device && (rc = dpdk_tx_stage(q, built)) < 0) {
		/* p[0] failed (the caller drops it, counted engine_error);
		 * the rest is offered again */
		dpdk_tx_unbuild(q, 0, built);
		*err = rc;
		return 0;
	}
	ok = (uint16_t)built;
	if (q->ip_hw || q->udp_hw) {
		ok = rte_eth_tx_prepare(q->port, q->qid, q->burst,
		    (uint16_t)built);
		if (ok < built) {
			/* p[ok] itself cannot be sent as built */
			berr = rte_errno > 0 ? -rte_errno : -EINVAL;
			dpdk_tx_unbuild(q, ok, built);
			built = ok;
		}
	}
	sent = ok > 0 ? rte_eth_tx_burst(q->port, q->qid, q->burst, ok) : 0;
	q->st.calls += ok > 0;
	for (unsigned i = 0; i < sent; i++) {
		q->st.tx_bytes += p[i].len;
		if (q->base.device) {
			q->st.staged++;
			q->st.staged_bytes += p[i].len;
		}
		/* a copied payload is no longer read: done at once */
		if (q->slots[q->burst_slot[i]].direct)
			slot_done(q, q->burst_slot[i]);
	}
	q->st.tx_packets += sent;
	if (sent < built) {
		dpdk_tx_unbuild(q, sent, built);
		berr = -EAGAIN;
	}
	*err = sent < n ? berr : 0;
	return sent;
}

static int
dpdk_tx_burst(struct engine_txq *tq, const struct engine_tx_pkt *p,
	      unsigned n, int *err)
{
	struct dpdk_txq *q = (struct dpdk_txq *)tq;
	unsigned total = 0;

	*err = 0;
	if (!q->lcore_tried) {
		/* as the rx workers: an lcore id gives the mempool cache */
		q->lcore_tried = true;
		if (rte_lcore_id() == LCORE_ID_ANY &&
		    rte_thread_register() != 0)
			log_debug("tx queue %u: rte_thread_register: %s (no "
			    "mempool cache)", q->qid, rte_strerror(rte_errno));
	}
	while (total < n) {
		unsigned sent = dpdk_tx_step(q, p + total, n - total, err);

		total += sent;
		if (*err != 0)
			break;
	}
	if (*err == -EAGAIN)
		q->st.full++;
	else if (*err != 0)
		q->st.errors++;
	return (int)total;
}

static unsigned
dpdk_tx_done(struct engine_txq *tq, uint64_t *tags, unsigned max)
{
	struct dpdk_txq *q = (struct dpdk_txq *)tq;
	unsigned n = 0;

	if (q->done_take == DPDK_TX_NIL && atomic_load_explicit(&q->done_push,
	    memory_order_relaxed) == DPDK_TX_NIL && q->nfree < q->nslots)
		dpdk_tx_reclaim(q);
	while (n < max) {
		uint32_t idx = q->done_take;

		if (idx == DPDK_TX_NIL) {
			idx = atomic_exchange_explicit(&q->done_push,
			    DPDK_TX_NIL, memory_order_acquire);
			if (idx == DPDK_TX_NIL)
				break;
		}
		q->done_take = q->slots[idx].next;
		tags[n++] = q->slots[idx].tag;
		slot_free(q, idx);
	}
	return n;
}

static int
dpdk_tx_stats(struct engine_txq *tq, struct engine_tx_stats *out)
{
	*out = ((struct dpdk_txq *)tq)->st;
	return 0;
}

static struct engine_txq *
dpdk_txq(struct engine *e, int qi)
{
	struct dpdk_tx *t = dpdk_engine_tx(e);

	if (t == NULL || qi < 0 || qi >= t->nq)
		return NULL;
	return &t->q[qi]->base;
}

/* ---- set-up ---------------------------------------------------------- */

/* Checksums are the port's where it offers them; multi-segment frames
 * must be asked for. */
void
dpdk_tx_conf(const struct cfg_interface *ifc,
	     const struct rte_eth_dev_info *info, struct rte_eth_conf *conf)
{
	uint64_t want = RTE_ETH_TX_OFFLOAD_MULTI_SEGS |
	    RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_UDP_CKSUM;

	if (ifc->tx.nqueues > 0)
		conf->txmode.offloads |= info->tx_offload_capa & want;
}

/* The queue's destination, or a message naming what it lacks. */
static int
dpdk_tx_check_dest(const struct cfg_interface *ifc, const struct cfg_queue *cq,
		   char *err, size_t errlen)
{
	const struct cfg_tx_dest *d = &cq->dest;
	const char *missing = !d->has_eth_dst ? "eth_dst" :
	    !d->has_ipv4_src || d->ipv4_src == 0 ? "ipv4_src" :
	    !d->has_ipv4_dst ? "ipv4_dst" : !d->has_udp_dst ? "udp_dst" : NULL;

	if (missing == NULL)
		return 0;
	log_seterr(err, errlen, "interface '%s': tx queue '%s': destination "
	    "has no %s: the DPDK engine writes every header from it (give "
	    "destination: {eth_dst, ipv4_src, ipv4_dst, udp_dst})", ifc->name,
	    cq->name, missing);
	return -EINVAL;
}

/* The Ethernet/IPv4/UDP headers of every frame of q, lengths left 0;
 * the defaults are daqirid.yaml(5)'s: eth_src the port's MAC (also with
 * offloads: [tx_eth_src]), udp_src udp_dst, TTL 64, DSCP 0. */
static void
dpdk_tx_template(struct dpdk_txq *q, const struct cfg_interface *ifc,
		 const struct cfg_queue *cq)
{
	const struct cfg_tx_dest *d = &cq->dest;
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)q->tmpl;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	struct rte_udp_hdr *u = (struct rte_udp_hdr *)(ip + 1);
	struct rte_ether_addr mac;

	memset(q->tmpl, 0, sizeof(q->tmpl));
	memcpy(&eth->dst_addr, d->eth_dst, RTE_ETHER_ADDR_LEN);
	if (d->has_eth_src)
		memcpy(&eth->src_addr, d->eth_src, RTE_ETHER_ADDR_LEN);
	else if (rte_eth_macaddr_get(q->port, &mac) == 0)
		eth->src_addr = mac;
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->type_of_service = (uint8_t)((d->has_dscp ? d->dscp : 0) << 2);
	ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = d->has_ttl ? d->ttl : 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = rte_cpu_to_be_32(d->ipv4_src);
	ip->dst_addr = rte_cpu_to_be_32(d->ipv4_dst);
	u->src_port = rte_cpu_to_be_16(d->has_udp_src ? d->udp_src :
	    d->udp_dst);
	u->dst_port = rte_cpu_to_be_16(d->udp_dst);
}

static int
dpdk_txq_init(struct dpdk_tx *t, struct engine *e, uint16_t port,
	      const struct cfg *c, const struct cfg_interface *ifc, int qi,
	      const struct mem_region *regions,
	      const struct rte_eth_dev_info *info, char *err, size_t errlen)
{
	const struct cfg_queue *cq = &ifc->tx.queues[qi];
	const struct mem_region *r = NULL;
	struct rte_eth_txconf txconf = info->default_txconf;
	char pname[RTE_MEMPOOL_NAMESIZE];
	const struct cfg_region *dr = NULL;	/* device region: staged */
	const char *why = NULL;
	struct dpdk_txq *q;
	uint64_t maxp = ENGINE_UDP_MAX_PAYLOAD;
	uint32_t nslots, cache;
	uint16_t mtu = RTE_ETHER_MTU, nb_txd, room;
	int rc, socket = rte_eth_dev_socket_id(port);

	if (socket < 0)
		socket = SOCKET_ID_ANY;
	if ((rc = dpdk_tx_check_dest(ifc, cq, err, errlen)) < 0)
		return rc;
	if (cq->nregions > 0 && cq->region_idx[0] >= 0 &&
	    cq->region_idx[0] < c->nregions &&
	    c->regions[cq->region_idx[0]].kind == DAQIRI_MEM_DEVICE)
		dr = &c->regions[cq->region_idx[0]];
	if ((q = aligned_alloc(DPDK_CACHE_LINE, sizeof(*q))) == NULL)
		return -ENOMEM;
	memset(q, 0, sizeof(*q));
	t->q[qi] = q;
	t->nq = qi + 1;
	q->base.engine = e;
	q->base.qi = qi;
	q->base.queue_id = cq->id;
	q->port = port;
	q->qid = (uint16_t)qi;
	q->cleanup_ok = true;

	if (cq->nregions > 0 && regions != NULL) {
		int ri = cq->region_idx[cq->nregions - 1];

		if (ri >= 0 && ri < c->nregions)
			r = &regions[ri];
	}
	nslots = r != NULL ? r->nbufs : DPDK_TX_MIN_SLOTS;
	if (nslots < 2 * cq->batch_size)
		nslots = 2 * cq->batch_size;
	if (nslots < DPDK_TX_MIN_SLOTS)
		nslots = DPDK_TX_MIN_SLOTS;
	if (nslots > DPDK_TX_MAX_SLOTS)
		nslots = DPDK_TX_MAX_SLOTS;
	q->nslots = nslots;

	/* The largest payload: a region buffer (daqirid.yaml(5): the
	 * headers live in a mbuf of their own, as on the socket engine
	 * they are the kernel's), the port's MTU less IPv4 and UDP, one
	 * datagram. */
	(void)rte_eth_dev_get_mtu(port, &mtu);
	if (r != NULL && r->buf_size < maxp)
		maxp = r->buf_size;
	if ((uint64_t)mtu - sizeof(struct rte_ipv4_hdr) -
	    sizeof(struct rte_udp_hdr) < maxp)
		maxp = (uint64_t)mtu - sizeof(struct rte_ipv4_hdr) -
		    sizeof(struct rte_udp_hdr);
	q->base.max_payload = (uint32_t)maxp;

	if (dr != NULL) {
		q->base.device = true;
		q->base.gpu = dr->affinity;
		why = "";	/* staged: logged below */
		if ((rc = gpu_stream_create(dr->affinity, &q->stream)) < 0) {
			log_seterr(err, errlen, "interface '%s': tx queue '%s': "
			    "its region '%s' is device memory, which the DPDK "
			    "engine stages through host memory: %s", ifc->name,
			    cq->name, dr->name, gpu_last_error());
			return rc;
		}
	} else if (!(info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS))
		why = "the port does not send multi-segment frames";
	else if (rte_dev_bus(info->device) != NULL &&
	    strcmp(rte_bus_name(rte_dev_bus(info->device)), "pci") == 0)
		why = "a channel pool is not mapped for the NIC's DMA";
	else if (dpdk_tx_copy_forced)
		why = "forced (tests)";
	q->copy = why != NULL;
	/* a copied frame is one mbuf: its data room is 16 bits */
	if (q->copy && q->base.max_payload > UINT16_MAX -
	    RTE_PKTMBUF_HEADROOM - ENGINE_SYNTH_HDR_LEN)
		q->base.max_payload = UINT16_MAX - RTE_PKTMBUF_HEADROOM -
		    ENGINE_SYNTH_HDR_LEN;
	q->ip_hw = (info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) != 0;
	q->udp_hw = (info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM) != 0;
	dpdk_tx_template(q, ifc, cq);

	q->slots = calloc(nslots, sizeof(*q->slots));
	q->free_stk = calloc(nslots, sizeof(*q->free_stk));
	if (q->slots == NULL || q->free_stk == NULL)
		return -ENOMEM;
	atomic_init(&q->done_push, DPDK_TX_NIL);
	q->done_take = DPDK_TX_NIL;
	for (uint32_t i = 0; i < nslots; i++) {
		struct dpdk_tx_slot *s = &q->slots[i];

		s->q = q;
		s->idx = i;
		s->sh.free_cb = dpdk_tx_ext_free;
		s->sh.fcb_opaque = s;
		/* popped from the top: slot 0 first */
		q->free_stk[i] = nslots - 1 - i;
	}
	q->nfree = nslots;

	cache = nslots / 8 < DPDK_TX_POOL_CACHE ? nslots / 8 :
	    DPDK_TX_POOL_CACHE;
	room = (uint16_t)(RTE_PKTMBUF_HEADROOM + (q->copy ?
	    ENGINE_SYNTH_HDR_LEN + q->base.max_payload : DPDK_TX_HDR_ROOM));
	snprintf(pname, sizeof(pname), "dq%u_%d_th", port, qi);
	q->hdr_pool = rte_pktmbuf_pool_create(pname, nslots, cache, 0, room,
	    socket);
	if (q->hdr_pool != NULL && !q->copy) {
		snprintf(pname, sizeof(pname), "dq%u_%d_tx", port, qi);
		q->ext_pool = rte_pktmbuf_pool_create(pname, nslots, cache, 0,
		    0, socket);
	}
	if (q->hdr_pool == NULL || (!q->copy && q->ext_pool == NULL)) {
		log_seterr(err, errlen, "interface '%s': tx queue '%s': mbuf "
		    "pool of %u frames: %s", ifc->name, cq->name, nslots,
		    rte_strerror(rte_errno));
		return -ENOMEM;
	}

	nb_txd = DPDK_TX_DESC;
	while (nb_txd > nslots / 2 && nb_txd > 32)
		nb_txd /= 2;
	if ((rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, NULL, &nb_txd)) != 0) {
		log_seterr(err, errlen, "interface '%s': tx queue '%s': "
		    "descriptor count: %s", ifc->name, cq->name,
		    rte_strerror(-rc));
		return rc;
	}
	rc = rte_eth_tx_queue_setup(port, q->qid, nb_txd, (unsigned)socket,
	    &txconf);
	if (rc != 0) {
		log_seterr(err, errlen, "interface '%s': tx queue '%s': "
		    "rte_eth_tx_queue_setup (%u descriptors): %s", ifc->name,
		    cq->name, nb_txd, rte_strerror(-rc));
		return rc;
	}
	if (dr != NULL)
		log_info("interface '%s': tx queue '%s': payloads in device "
		    "memory (region '%s', GPU %d) are copied to host memory to "
		    "be sent, counted in staged (GPUDirect send is not built)",
		    ifc->name, cq->name, dr->name, dr->affinity);
	else if (q->copy)
		log_info("interface '%s': tx queue '%s': payloads copied "
		    "behind the headers (%s), counted in copied", ifc->name,
		    cq->name, why);
	log_info("interface '%s': tx queue '%s': port %u tx queue %u, %u "
	    "descriptors, %u frames in flight, max payload %u, checksums %s%s",
	    ifc->name, cq->name, port, q->qid, nb_txd, nslots,
	    q->base.max_payload, q->ip_hw ? "ip:port " : "ip:cpu ",
	    q->udp_hw ? "udp:port" : "udp:cpu");
	return 0;
}

int
dpdk_tx_init(struct dpdk_tx **out, struct engine *e, uint16_t port,
	     const struct cfg *c, const struct cfg_interface *ifc,
	     const struct mem_region *regions,
	     const struct rte_eth_dev_info *info, char *err, size_t errlen)
{
	struct dpdk_tx *t;
	int rc;

	*out = NULL;
	if (ifc->tx.nqueues <= 0)
		return 0;
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return -ENOMEM;
	*out = t;
	for (int qi = 0; qi < ifc->tx.nqueues; qi++)
		if ((rc = dpdk_txq_init(t, e, port, c, ifc, qi, regions, info,
		    err, errlen)) < 0)
			return rc;
	return 0;
}

void
dpdk_tx_fini(struct dpdk_tx *t)
{
	if (t == NULL)
		return;
	for (int i = 0; i < t->nq; i++) {
		struct dpdk_txq *q = t->q[i];

		if (q == NULL)
			continue;
		rte_mempool_free(q->hdr_pool);
		rte_mempool_free(q->ext_pool);
		gpu_stream_destroy(q->stream);
		free(q->slots);
		free(q->free_stk);
		free(q);
	}
	free(t);
}

#include "engine_dpdk_end.h"

#else /* !DPDK_HAVE_HEADERS */

static struct engine_txq *
dpdk_txq(struct engine *e, int qi)
{
	return NULL;
}

static int
dpdk_tx_burst(struct engine_txq *tq, const struct engine_tx_pkt *p,
	      unsigned n, int *err)
{
	*err = -ENOTSUP;
	return 0;
}

static unsigned
dpdk_tx_done(struct engine_txq *tq, uint64_t *tags, unsigned max)
{
	return 0;
}

static int
dpdk_tx_stats(struct engine_txq *tq, struct engine_tx_stats *out)
{
	return -ENOTSUP;
}

#endif /* DPDK_HAVE_HEADERS */

const struct engine_tx_ops engine_dpdk_tx_ops = {
	.txq = dpdk_txq,
	.tx_burst = dpdk_tx_burst,
	.tx_done = dpdk_tx_done,
	.tx_stats = dpdk_tx_stats,
};
