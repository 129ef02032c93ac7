/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DPDK engine: EAL once per process, one ethdev port per interface (a
 * PCI address or a vdev such as net_pcap0), one RX queue per configured
 * queue whose mbufs are the buffers of the queue's memory region (external
 * memory), polled by the queue's worker and handed out as Ethernet frames.
 */
#define ALLOW_EXPERIMENTAL_API 1	/* extmem, extbuf pools, dma_map */

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "geometry.h"
#include "gpu.h"
#include "log.h"

#include "engine_dpdk_begin.h"

#ifdef DPDK_HAVE_HEADERS

#include <rte_config.h>
#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_memory.h>
#include <rte_mempool.h>
#include <rte_version.h>

#include "engine_dpdk_internal.h"

/* RX descriptors a queue gets by default at least (at most half its
 * buffers, always). */
#define DPDK_RX_DESC		1024u
/* The most descriptors a queue gets by default (four bursts). */
#define DPDK_RX_DESC_MAX	4096u
/* Data room of an af_xdp mbuf: the PMD's UMEM frames are pages. */
#define DPDK_XDP_ROOM		3072u
/* Descriptors of a tx queue set up only because the port pairs queues. */
#define DPDK_IDLE_TX_DESC	64u
/* Fewest buffers a queue may have (descriptors + a burst in hand). */
#define DPDK_MIN_BUFS		64u
/* Per-lcore mempool cache, at most an eighth of the pool. */
#define DPDK_POOL_CACHE		256u
/* Buffers of a queue that names no memory region (DPDK memory). */
#define DPDK_PRIVATE_NBUFS	8191u
/* Blocking mode: naps between empty polls, from the shortest, doubling
 * while the queue stays empty, to the longest (the wake fd ends a nap). */
#define DPDK_NAP_MIN_NS		20000u
#define DPDK_NAP_MAX_NS		500000u
/* Port counters (imissed, rx_nombuf, ierrors) are read at most this often:
 * on some PMDs the read is a system call. */
#define DPDK_PORT_STATS_NS	(10u * 1000u * 1000u)
/* Page size of CUDA device memory mapped for a NIC (GPUDirect). */
#define DPDK_GPU_PAGE		MEM_GPU_PAGE_SIZE

/* The config's buf_size is a buffer's frame bytes; this is in front. */
_Static_assert(RTE_PKTMBUF_HEADROOM == CFG_DPDK_MBUF_HEADROOM,
    "CFG_DPDK_MBUF_HEADROOM is not this DPDK's RTE_PKTMBUF_HEADROOM");

/* External memory registered by this process (regions). */
#define DPDK_MAX_EXTMEM		CFG_MAX_REGIONS
#define DPDK_CACHE_LINE		64

/* A queue; cache-aligned, touched only by its worker after start. */
struct dpdk_rxq {
	struct engine_rxq base;
	uint16_t port;
	uint16_t qid;
	int wake_fd;
	enum engine_rx_mode mode;
	bool lcore_tried;		/* rte_thread_register() attempted */
	bool port_counters;		/* reports the port-level counters */
	uint32_t nap_ns;		/* blocking mode: the next nap */
	struct rte_mempool *pool;	/* frames (the data region) */
	struct rte_mempool *hdr_pool;	/* headers (buffer split only) */
	void *ext_va;			/* region registered for pool */

	/* Frames handed out and not released, oldest first (a ring). */
	struct rte_mbuf **held;
	uint32_t cap;
	uint32_t oldest;
	uint32_t nheld;

	/* Port-level counters, read at most every DPDK_PORT_STATS_NS. */
	uint64_t port_ns;
	uint64_t port_drops;
	uint64_t port_errors;
	/* net_af_packet and net_af_xdp, which do not count every drop:
	 * their sockets (the PMD's, not ours to close), whose statistics we
	 * read (AF_PACKET's clear on reading: summed in pkt_drops; AF_XDP's
	 * do not: pkt_base holds them at start) */
	int pkt_fd[CFG_MAX_QUEUES];
	int npkt_fd;
	int pkt_domain;			/* AF_PACKET or AF_XDP */
	uint64_t pkt_drops;
	uint64_t pkt_base;
	struct rte_eth_stats base_stats;	/* at start() */

	/* Software loopback (cfg.loopback: sw): frames come from a tx
	 * queue's mbufs, and the worker lands each in the pool as a NIC's
	 * DMA would (dpdk_loop_land). */
	bool loopback;
	bool loop_dev;			/* the pool is device memory */
	bool loop_warned;		/* a failed copy was logged */
	int loop_gpu;			/* its GPU */
	void *loop_stream;		/* gpu_stream_create(), lazily */
	struct gpu_copy *loop_copies;	/* ENGINE_MAX_BURST */
	struct rte_mbuf **loop_from;	/* ENGINE_MAX_BURST: the sent mbufs */

	struct engine_stats st;
	struct rte_mbuf *burst[ENGINE_MAX_BURST];
} __attribute__((aligned(DPDK_CACHE_LINE)));

/* One region mapped for DMA by a port (undone in fini). */
struct dpdk_dma_map {
	void *va;
	size_t len;
};

struct dpdk_engine {
	struct engine base;
	char name[CFG_NAME_MAX];
	char address[CFG_NAME_MAX];
	uint16_t port;
	bool have_port;
	bool own_pool;			/* rx pools in DPDK memory (af_xdp) */
	int sock_domain;		/* af_packet, af_xdp: drops read from
					 * their sockets (AF_PACKET, AF_XDP) */
	bool started;
	bool eal_ref;			/* counted in dpdk_eal_users */
	struct rte_device *dev;
	int nq;
	struct dpdk_rxq *q[CFG_MAX_QUEUES];
	struct dpdk_tx *tx;		/* tx queues (engine_dpdk_tx.c) */
	int nmaps;
	struct dpdk_dma_map maps[CFG_MAX_REGIONS];
};

/* Regions registered as external memory, shared by the queues using them. */
static struct {
	void *va;
	size_t len;
	int refs;
} dpdk_extmem[DPDK_MAX_EXTMEM];

static void dpdk_fini(struct engine *e);

static inline uint64_t
dpdk_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- memory ---------------------------------------------------------- */

/* Register [va, va + len) as external memory (once per region). */
static int
dpdk_extmem_get(void *va, size_t len, size_t page, bool iova_va)
{
	rte_iova_t *iova = NULL;
	size_t npages = len / page;
	int free_slot = -1, rc;

	for (int i = 0; i < DPDK_MAX_EXTMEM; i++) {
		if (dpdk_extmem[i].refs > 0 && dpdk_extmem[i].va == va) {
			dpdk_extmem[i].refs++;
			return 0;
		}
		if (dpdk_extmem[i].refs == 0 && free_slot < 0)
			free_slot = i;
	}
	if (free_slot < 0)
		return -ENOSPC;
	/* With IOVA as VA the device addresses are the virtual ones. */
	if (iova_va) {
		if ((iova = calloc(npages, sizeof(*iova))) == NULL)
			return -ENOMEM;
		for (size_t p = 0; p < npages; p++)
			iova[p] = (rte_iova_t)(uintptr_t)va + p * page;
	}
	rc = rte_extmem_register(va, len, iova, iova ? (unsigned)npages : 0,
	    page);
	free(iova);
	if (rc != 0 && rte_errno != EEXIST)
		return -rte_errno;
	dpdk_extmem[free_slot].va = va;
	dpdk_extmem[free_slot].len = len;
	dpdk_extmem[free_slot].refs = 1;
	return 0;
}

static void
dpdk_extmem_put(void *va)
{
	for (int i = 0; i < DPDK_MAX_EXTMEM; i++)
		if (dpdk_extmem[i].refs > 0 && dpdk_extmem[i].va == va) {
			if (--dpdk_extmem[i].refs == 0)
				(void)rte_extmem_unregister(va,
				    dpdk_extmem[i].len);
			return;
		}
}

/*
 * The mbuf pool of a queue on region m: its share of the region's buffers
 * as pinned external buffers, so the NIC writes frames straight into the
 * region (host memory, or GPU memory for device regions). Host memory
 * falls back to a pool in DPDK's memory when IOVA is PA.
 */
static struct rte_mempool *
dpdk_region_pool(struct dpdk_engine *de, const struct cfg *c,
		 const struct cfg_interface *ifc, int qi, int ridx,
		 struct mem_region *m, const char *pname, void **ext_va,
		 char *err, size_t errlen)
{
	const struct cfg_queue *cq = &ifc->rx.queues[qi];
	bool dev = m->kind == DAQIRI_MEM_DEVICE;
	bool iova_va = rte_eal_iova_mode() != RTE_IOVA_PA;
	struct rte_pktmbuf_extmem *ext;
	struct rte_mempool *mp;
	uint32_t users, me, nbufs, cache;
	uint16_t room;
	uint8_t *va, *first;
	size_t page, len;
	int rc, socket = rte_eth_dev_socket_id(de->port);

	if (socket < 0)
		socket = SOCKET_ID_ANY;
	geom_region_share(c, ifc, qi, ridx, &users, &me);
	nbufs = m->nbufs / users;
	if (nbufs < DPDK_MIN_BUFS) {
		log_seterr(err, errlen, "interface '%s': queue '%s': %u "
		    "buffers of memory region '%s' (%u shared by %u queues); "
		    "DPDK needs at least %u per queue", ifc->name, cq->name,
		    nbufs, m->name, m->nbufs, users, DPDK_MIN_BUFS);
		return NULL;
	}
	/* m->buf_size is the stride: the config's buf_size behind the
	 * headroom (cfg_region.headroom) */
	if (m->buf_size <= RTE_PKTMBUF_HEADROOM + RTE_ETHER_MIN_LEN) {
		log_seterr(err, errlen, "interface '%s': queue '%s': memory "
		    "region '%s': buffers of %llu bytes; DPDK needs at least "
		    "%d (a minimal frame)", ifc->name, cq->name, m->name,
		    (unsigned long long)(m->buf_size - RTE_PKTMBUF_HEADROOM),
		    RTE_ETHER_MIN_LEN + 1);
		return NULL;
	}
	room = m->buf_size > UINT16_MAX ? UINT16_MAX : (uint16_t)m->buf_size;
	cache = nbufs / 8 < DPDK_POOL_CACHE ? nbufs / 8 : DPDK_POOL_CACHE;

	/* net_af_xdp makes its UMEM of the mbuf pool's own memory, which
	 * external buffers are not */
	if (!iova_va || de->own_pool) {
		const char *why = de->own_pool ? "its XDP socket's UMEM is the "
		    "mbuf pool itself" : "IOVA as PA";

		if (dev) {
			log_seterr(err, errlen, "interface '%s': queue '%s': "
			    "device region '%s' %s", ifc->name, cq->name,
			    m->name, de->own_pool ? "cannot be the UMEM of an "
			    "XDP socket (net_af_xdp receives into host memory)"
			    : "needs EAL's IOVA as VA (bind the NIC to "
			    "vfio-pci, or pass --iova-mode=va)");
			return NULL;
		}
		log_info("interface '%s': queue '%s': %s: packet buffers come "
		    "from DPDK's memory, not region '%s'", ifc->name,
		    cq->name, why, m->name);
		if (de->own_pool && room > DPDK_XDP_ROOM) {
			/* an XDP frame is a page, the mbuf's header in it */
			room = DPDK_XDP_ROOM;
			log_warnx("interface '%s': queue '%s': net_af_xdp takes "
			    "frames of up to %u bytes (one page each): region "
			    "'%s' asks for %llu", ifc->name, cq->name,
			    DPDK_XDP_ROOM - RTE_PKTMBUF_HEADROOM, m->name,
			    (unsigned long long)(m->buf_size -
			    RTE_PKTMBUF_HEADROOM));
		}
		mp = rte_pktmbuf_pool_create(pname, nbufs, cache, 0, room,
		    socket);
		if (mp == NULL)
			log_seterr(err, errlen, "interface '%s': queue '%s': "
			    "mbuf pool of %u x %u bytes: %s", ifc->name,
			    cq->name, nbufs, room, rte_strerror(rte_errno));
		return mp;
	}

	va = dev ? m->dev : m->base;
	if (dev) {
		page = DPDK_GPU_PAGE;
		len = m->size;
	} else {
		page = m->hugepages ? MEM_HUGE_PAGE_SIZE : MEM_PAGE_SIZE;
		len = m->size;
	}
	if (va == NULL || (uintptr_t)va % page != 0 || len % page != 0) {
		log_seterr(err, errlen, "interface '%s': queue '%s': memory "
		    "region '%s' (%zu bytes at %p) is not made of whole "
		    "%zu-byte pages%s", ifc->name, cq->name, m->name, len,
		    (void *)va, page, dev ? " (CUDA gave an address inside a "
		    "page)" : "");
		return NULL;
	}
	if ((rc = dpdk_extmem_get(va, len, page, true)) < 0) {
		log_seterr(err, errlen, "interface '%s': queue '%s': memory "
		    "region '%s': rte_extmem_register: %s", ifc->name,
		    cq->name, m->name, rte_strerror(-rc));
		return NULL;
	}
	/* The device (an IOMMU under vfio) must be able to reach it; a vdev
	 * that does no DMA says ENOTSUP. */
	if (de->nmaps < CFG_MAX_REGIONS) {
		bool mapped = false;

		for (int i = 0; i < de->nmaps; i++)
			mapped |= de->maps[i].va == va;
		if (!mapped) {
			de->maps[de->nmaps].va = va;
			de->maps[de->nmaps].len = len;
			de->nmaps++;
			if (rte_dev_dma_map(de->dev, va,
			    (uint64_t)(uintptr_t)va, len) != 0) {
				de->nmaps--;
				if (rte_errno != ENOTSUP && rte_errno != EEXIST) {
					log_seterr(err, errlen, "interface "
					    "'%s': memory region '%s': DMA "
					    "mapping for port '%s': %s",
					    ifc->name, m->name, de->address,
					    rte_strerror(rte_errno));
					dpdk_extmem_put(va);
					return NULL;
				}
			}
		}
	}

	/* One extmem element per region buffer: mbuf k owns buffer first + k
	 * whole, also when the buffer is longer than an mbuf can say. */
	first = va + (uint64_t)me * nbufs * m->buf_size;
	if ((ext = calloc(nbufs, sizeof(*ext))) == NULL) {
		dpdk_extmem_put(va);
		return NULL;
	}
	for (uint32_t k = 0; k < nbufs; k++) {
		ext[k].buf_ptr = first + (uint64_t)k * m->buf_size;
		ext[k].buf_iova = (rte_iova_t)(uintptr_t)ext[k].buf_ptr;
		ext[k].buf_len = room;
		ext[k].elt_size = room;
	}
	mp = rte_pktmbuf_pool_create_extbuf(pname, nbufs, cache, 0, room,
	    socket, ext, nbufs);
	free(ext);
	if (mp == NULL) {
		log_seterr(err, errlen, "interface '%s': queue '%s': mbuf pool "
		    "on memory region '%s' (%u buffers of %u bytes): %s",
		    ifc->name, cq->name, m->name, nbufs, room,
		    rte_strerror(rte_errno));
		dpdk_extmem_put(va);
		return NULL;
	}
	*ext_va = va;
	log_debug("interface '%s': queue '%s': %u buffers of region '%s' "
	    "(%s) as external mbufs", ifc->name, cq->name, nbufs, m->name,
	    daqiri_mem_kind_name(m->kind));
	return mp;
}

/* ---- queues and port ------------------------------------------------- */

static int
dpdk_queue_init(struct dpdk_engine *de, const struct cfg *c,
		const struct cfg_interface *ifc, int qi,
		struct mem_region *regions, const struct engine_opts *o,
		const struct rte_eth_dev_info *info, char *err, size_t errlen)
{
	const struct cfg_queue *cq = &ifc->rx.queues[qi];
	struct rte_eth_rxconf rxconf = info->default_rxconf;
	union rte_eth_rxseg seg[2];
	struct dpdk_rxq *q;
	struct mem_region *data = NULL, *hdr = NULL;
	char pname[RTE_MEMPOOL_NAMESIZE];
	uint16_t nb_rxd;
	uint32_t nbufs;
	int rc, socket = rte_eth_dev_socket_id(de->port);
	bool split = false;

	if (socket < 0)
		socket = SOCKET_ID_ANY;
	q = aligned_alloc(DPDK_CACHE_LINE, sizeof(*q));
	if (q == NULL)
		return -ENOMEM;
	memset(q, 0, sizeof(*q));
	q->base.engine = &de->base;
	q->base.qi = qi;
	q->base.queue_id = cq->id;
	q->port = de->port;
	q->qid = (uint16_t)qi;
	q->wake_fd = -1;
	q->mode = o->rx_mode;
	q->port_counters = qi == 0;
	q->nap_ns = DPDK_NAP_MIN_NS;
	de->q[qi] = q;
	de->nq = qi + 1;

	if (cq->nregions > 0) {
		int d = cq->region_idx[cq->nregions - 1];

		if (regions == NULL || d < 0 || d >= c->nregions) {
			log_seterr(err, errlen, "interface '%s': queue '%s': "
			    "no memory region %d", ifc->name, cq->name, d);
			return -EINVAL;
		}
		data = &regions[d];
		if (cq->nregions > 1) {
			int h = cq->region_idx[0];

			if (h < 0 || h >= c->nregions) {
				log_seterr(err, errlen, "interface '%s': queue "
				    "'%s': no memory region %d", ifc->name,
				    cq->name, h);
				return -EINVAL;
			}
			hdr = &regions[h];
		}
	}
	if (hdr != NULL) {
		split = (info->rx_offload_capa &
		    RTE_ETH_RX_OFFLOAD_BUFFER_SPLIT) != 0 &&
		    info->rx_seg_capa.max_nseg >= 2 &&
		    info->rx_seg_capa.multi_pools;
		if (!split)
			log_warnx("interface '%s': queue '%s': port '%s' "
			    "cannot split headers from data (no buffer split): "
			    "frames arrive whole in region '%s', region '%s' "
			    "is not used", ifc->name, cq->name, de->address,
			    data->name, hdr->name);
	}
	/* The CPU classifies frames and reads their sequence numbers: a
	 * frame's first part must be host memory, or the frame whole in
	 * device memory (one region), which the worker reads through its
	 * header shadow (geometry.h). A split the NIC cannot make would
	 * land whole frames where the config expects payloads only. */
	if (data != NULL && !mem_host_visible(data) && !split && hdr != NULL) {
		log_seterr(err, errlen, "interface '%s': queue '%s': frames in "
		    "device memory (region '%s') need header-data split (a "
		    "host region for the headers first, on a NIC that can "
		    "split), or the device region alone (whole frames): flows "
		    "and sequence numbers are read by the CPU",
		    ifc->name, cq->name, data->name);
		return -EINVAL;
	}

	snprintf(pname, sizeof(pname), "dq%u_%u_d", de->port, qi);
	if (data != NULL) {
		q->pool = dpdk_region_pool(de, c, ifc, qi,
		    cq->region_idx[cq->nregions - 1], data, pname, &q->ext_va,
		    err, errlen);
	} else {
		log_info("interface '%s': queue '%s': no memory region: %u "
		    "mbufs of DPDK's memory", ifc->name, cq->name,
		    DPDK_PRIVATE_NBUFS);
		q->pool = rte_pktmbuf_pool_create(pname, DPDK_PRIVATE_NBUFS,
		    DPDK_POOL_CACHE, 0, RTE_MBUF_DEFAULT_BUF_SIZE, socket);
		if (q->pool == NULL)
			log_seterr(err, errlen, "interface '%s': queue '%s': "
			    "mbuf pool: %s", ifc->name, cq->name,
			    rte_strerror(rte_errno));
	}
	if (q->pool == NULL)
		return -ENOMEM;
	nbufs = q->pool->size;
	if (split) {
		/* A header buffer also needs the mbuf headroom in front, which
		 * a region of header-sized buffers has no room for. */
		uint16_t hlen = hdr->buf_size > UINT16_MAX - RTE_PKTMBUF_HEADROOM ?
		    UINT16_MAX - RTE_PKTMBUF_HEADROOM : (uint16_t)hdr->buf_size;

		snprintf(pname, sizeof(pname), "dq%u_%u_h", de->port, qi);
		q->hdr_pool = rte_pktmbuf_pool_create(pname, nbufs,
		    nbufs / 8 < DPDK_POOL_CACHE ? nbufs / 8 : DPDK_POOL_CACHE,
		    0, (uint16_t)(RTE_PKTMBUF_HEADROOM + hlen), socket);
		if (q->hdr_pool == NULL) {
			log_seterr(err, errlen, "interface '%s': queue '%s': "
			    "header mbuf pool: %s", ifc->name, cq->name,
			    rte_strerror(rte_errno));
			return -ENOMEM;
		}
		log_info("interface '%s': queue '%s': header-data split at "
		    "byte %u: headers in DPDK memory (they need the mbuf "
		    "headroom), data in region '%s'", ifc->name, cq->name, hlen,
		    data->name);
		memset(seg, 0, sizeof(seg));
		seg[0].split.mp = q->hdr_pool;
		seg[0].split.length = hlen;
		seg[1].split.mp = q->pool;
		seg[1].split.length = 0;
		rxconf.rx_seg = seg;
		rxconf.rx_nseg = 2;
		rxconf.offloads |= RTE_ETH_RX_OFFLOAD_BUFFER_SPLIT;
	}

	q->cap = nbufs;
	q->held = calloc(q->cap, sizeof(*q->held));
	if (q->held == NULL)
		return -ENOMEM;
	if (c->loopback == CFG_LOOPBACK_SW) {
		q->loopback = true;
		q->loop_dev = data != NULL && data->kind == DAQIRI_MEM_DEVICE;
		q->loop_gpu = data != NULL ? data->affinity : 0;
		q->loop_copies = calloc(ENGINE_MAX_BURST,
		    sizeof(*q->loop_copies));
		q->loop_from = calloc(ENGINE_MAX_BURST, sizeof(*q->loop_from));
		if (q->loop_copies == NULL || q->loop_from == NULL)
			return -ENOMEM;
	}

	/* As asked, or four bursts (a power of two, DPDK_RX_DESC to
	 * DPDK_RX_DESC_MAX); at most half the buffers either way, the rest
	 * being in the worker's and the streams' hands. */
	if (cq->num_rx_desc != 0)
		nb_rxd = (uint16_t)(cq->num_rx_desc > UINT16_MAX ? UINT16_MAX :
		    cq->num_rx_desc);
	else
		for (nb_rxd = DPDK_RX_DESC; nb_rxd < 4 * cq->batch_size &&
		    nb_rxd < DPDK_RX_DESC_MAX; nb_rxd *= 2)
			;
	if (nb_rxd > nbufs / 2 && cq->num_rx_desc != 0)
		log_warnx("interface '%s': queue '%s': num_rx_desc %u is more "
		    "than half its %u buffers; fewer are used (give the "
		    "region more buffers)", ifc->name, cq->name,
		    cq->num_rx_desc, nbufs);
	while (nb_rxd > nbufs / 2 && nb_rxd > 32)
		nb_rxd /= 2;
	if ((rc = rte_eth_dev_adjust_nb_rx_tx_desc(de->port, &nb_rxd,
	    NULL)) != 0) {
		log_seterr(err, errlen, "interface '%s': queue '%s': "
		    "descriptor count: %s", ifc->name, cq->name,
		    rte_strerror(-rc));
		return rc;
	}
	rc = rte_eth_rx_queue_setup(de->port, q->qid, nb_rxd, (unsigned)socket,
	    &rxconf, split ? NULL : q->pool);
	if (rc != 0) {
		log_seterr(err, errlen, "interface '%s': queue '%s': "
		    "rte_eth_rx_queue_setup (%u descriptors, %u buffers): %s",
		    ifc->name, cq->name, nb_rxd, nbufs, rte_strerror(-rc));
		return rc;
	}
	log_debug("interface '%s': queue '%s': port %u rx queue %u, %u "
	    "descriptors, %u buffers, %s", ifc->name, cq->name, de->port,
	    q->qid, nb_rxd, nbufs,
	    q->mode == ENGINE_RX_BUSY_POLL ? "busy-poll" : "blocking");
	return 0;
}

/* The port of address: a device name as EAL knows it ("net_pcap0",
 * "0000:17:00.0"), or a short PCI address with domain 0. */
static int
dpdk_find_port(const char *address, uint16_t *port)
{
	char full[CFG_NAME_MAX + 8];

	if (rte_eth_dev_get_port_by_name(address, port) == 0)
		return 0;
	if (dpdk_is_pci(address)) {
		snprintf(full, sizeof(full), "0000:%s", address);
		if (rte_eth_dev_get_port_by_name(full, port) == 0)
			return 0;
	}
	return -ENODEV;
}

/* True when cfg.dpdk_args has a --vdev for device name. */
static bool
dpdk_vdev_given(const struct cfg *c, const char *name)
{
	size_t n = strlen(name);

	for (int i = 0; i < c->ndpdk_args; i++) {
		const char *a = c->dpdk_args[i];

		if (strncmp(a, "--vdev=", 7) == 0 && strncmp(a + 7, name,
		    n) == 0 && (a[7 + n] == ',' || a[7 + n] == '\0'))
			return true;
		if (strcmp(a, "--vdev") == 0 && i + 1 < c->ndpdk_args &&
		    strncmp(c->dpdk_args[i + 1], name, n) == 0 &&
		    (c->dpdk_args[i + 1][n] == ',' ||
		    c->dpdk_args[i + 1][n] == '\0'))
			return true;
	}
	return false;
}

static void
dpdk_port_names(char *out, size_t cap)
{
	char name[RTE_ETH_NAME_MAX_LEN];
	uint16_t p;
	size_t n = 0;

	out[0] = '\0';
	RTE_ETH_FOREACH_DEV(p) {
		if (rte_eth_dev_get_name_by_port(p, name) != 0 || n >= cap)
			continue;
		n += (size_t)snprintf(out + n, cap - n, "%s%s", n ? ", " : "",
		    name);
	}
	if (n == 0)
		snprintf(out, cap, "none");
}

/* flow_isolation: ask the port to deliver only what a flow rule takes
 * (the rules come at start: steer()); a port that cannot delivers all,
 * and the worker drops what no flow matches, counted unmatched. One line
 * either way. */
static void
dpdk_isolate(struct dpdk_engine *de, const struct cfg_interface *ifc)
{
	char why[256];

	if (!ifc->rx.flow_isolation)
		return;
	if (dpdk_flow_isolate(de->port, why, sizeof(why)) == 0)
		log_info("interface '%s': port '%s' isolated: it delivers only "
		    "the frames of the flows (flow_isolation)", ifc->name,
		    de->address);
	else
		log_info("interface '%s': port '%s' cannot isolate (%s): it "
		    "delivers every frame, and those no flow matches are "
		    "dropped by software, counted unmatched (flow_isolation)",
		    ifc->name, de->address, why);
}

/* Largest frame one queue's buffers take: the mtu to configure. */
static uint16_t
dpdk_mtu(const struct cfg *c, const struct cfg_interface *ifc,
	 const struct rte_eth_dev_info *info)
{
	uint64_t frame = RTE_ETHER_MAX_LEN, mtu;

	for (int q = 0; q < ifc->rx.nqueues; q++) {
		const struct cfg_queue *cq = &ifc->rx.queues[q];
		uint64_t f = 0;

		/* buf_size is what a buffer takes behind its headroom */
		for (int k = 0; k < cq->nregions; k++)
			f += c->regions[cq->region_idx[k]].buf_size;
		if (f > frame)
			frame = f;
	}
	if (frame > info->max_rx_pktlen)
		frame = info->max_rx_pktlen;
	mtu = frame > RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN ?
	    frame - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN : RTE_ETHER_MTU;
	if (mtu > info->max_mtu)
		mtu = info->max_mtu;
	if (mtu < info->min_mtu)
		mtu = info->min_mtu;
	return (uint16_t)mtu;
}

static int
dpdk_init(struct engine **out, const struct cfg *c,
	  const struct cfg_interface *ifc, struct mem_region *regions,
	  const struct engine_opts *opts, char *err, size_t errlen)
{
	static const struct engine_opts defaults;
	const struct engine_opts *o = opts != NULL ? opts : &defaults;
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	struct dpdk_engine *de;
	char names[256], lbname[32];
	int qi, rc, ntx;

	*out = NULL;
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (ifc->rx.nqueues < 0 || ifc->rx.nqueues > CFG_MAX_QUEUES ||
	    ifc->tx.nqueues < 0 || ifc->tx.nqueues > CFG_MAX_QUEUES ||
	    ifc->rx.nqueues + ifc->tx.nqueues == 0) {
		log_seterr(err, errlen, "interface '%s': no rx or tx queue",
		    ifc->name);
		return -EINVAL;
	}
	if (o->rx_mode >= ENGINE_RX_MODE_MAX) {
		log_seterr(err, errlen, "interface '%s': bad rx mode %d",
		    ifc->name, (int)o->rx_mode);
		return -EINVAL;
	}
	if (ifc->address[0] == '\0') {
		log_seterr(err, errlen, "interface '%s': no address (a PCI "
		    "address or a DPDK vdev name)", ifc->name);
		return -EINVAL;
	}
	if ((de = calloc(1, sizeof(*de))) == NULL)
		return -ENOMEM;
	de->base.ops = &engine_dpdk_ops;
	snprintf(de->name, sizeof(de->name), "%s", ifc->name);
	snprintf(de->address, sizeof(de->address), "%s",
	    dpdk_port_of(c, ifc, lbname, sizeof(lbname)));

	if ((rc = dpdk_eal_get(c, err, errlen)) < 0)
		goto fail;
	de->eal_ref = true;

	if (dpdk_find_port(de->address, &de->port) != 0) {
		dpdk_port_names(names, sizeof(names));
		if (c->loopback == CFG_LOOPBACK_SW)
			log_seterr(err, errlen, "interface '%s': no DPDK port "
			    "'%s' (ports: %s): the software loopback's ring "
			    "port did not start (the driver's messages above "
			    "say why; it is DPDK's ring PMD, librte_net_ring)",
			    ifc->name, de->address, names);
		else if (dpdk_vdev_given(c, ifc->address))
			log_seterr(err, errlen, "interface '%s': no DPDK port "
			    "'%s' (ports: %s): its --vdev in cfg.dpdk_args did "
			    "not start (the driver's messages above say why)",
			    ifc->name, ifc->address, names);
		else
			log_seterr(err, errlen, "interface '%s': no DPDK port "
			    "'%s' (ports: %s): for a virtual device add "
			    "\"--vdev=%s,...\" to cfg.dpdk_args; a NIC must be "
			    "bound to vfio-pci", ifc->name, ifc->address, names,
			    ifc->address);
		rc = -ENODEV;
		goto fail;
	}
	if ((rc = rte_eth_dev_info_get(de->port, &info)) != 0) {
		log_seterr(err, errlen, "interface '%s': port '%s': %s",
		    ifc->name, de->address, rte_strerror(-rc));
		goto fail;
	}
	de->dev = info.device;
	de->own_pool = info.driver_name != NULL &&
	    strcmp(info.driver_name, "net_af_xdp") == 0;
	if (info.driver_name != NULL &&
	    strcmp(info.driver_name, "net_af_packet") == 0)
		de->sock_domain = AF_PACKET;
	else if (de->own_pool)
		de->sock_domain = AF_XDP;
	if (ifc->rx.nqueues > info.max_rx_queues) {
		log_seterr(err, errlen, "interface '%s': port '%s' has %u rx "
		    "queue(s), the config %d%s", ifc->name, de->address,
		    info.max_rx_queues, ifc->rx.nqueues,
		    strncmp(de->address, "net_pcap", 8) == 0 ?
		    " (net_pcap: one rx_pcap= per queue)" : "");
		rc = -EINVAL;
		goto fail;
	}
	if (ifc->tx.nqueues > info.max_tx_queues) {
		log_seterr(err, errlen, "interface '%s': port '%s' has %u tx "
		    "queue(s), the config %d", ifc->name, de->address,
		    info.max_tx_queues, ifc->tx.nqueues);
		rc = -EINVAL;
		goto fail;
	}
	if (c->loopback == CFG_LOOPBACK_SW)
		log_info("interface '%s': software loopback (port '%s'): what "
		    "tx queue N sends, rx queue N receives, landed in its own "
		    "buffers as a NIC would; no wire, no NIC", ifc->name,
		    de->address);

	dpdk_isolate(de, ifc);
	memset(&conf, 0, sizeof(conf));
	conf.rxmode.mtu = dpdk_mtu(c, ifc, &info);
	if (ifc->rx.nqueues > 1 && info.flow_type_rss_offloads != 0) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf = (RTE_ETH_RSS_IP |
		    RTE_ETH_RSS_UDP) & info.flow_type_rss_offloads;
	}
	/* Frames longer than one buffer arrive as a chain where the port can
	 * (rx_burst hands out chains of two). */
	if (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER)
		conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
	dpdk_tx_conf(ifc, &info, &conf);
	ntx = ifc->tx.nqueues;
	rc = rte_eth_dev_configure(de->port, (uint16_t)ifc->rx.nqueues,
	    (uint16_t)ntx, &conf);
	if (rc == -EINVAL && ntx < ifc->rx.nqueues) {
		/* Some ports pair every rx queue with a tx queue (net_af_xdp:
		 * one XDP socket each); the extra ones stay idle. */
		ntx = ifc->rx.nqueues;
		rc = rte_eth_dev_configure(de->port,
		    (uint16_t)ifc->rx.nqueues, (uint16_t)ntx, &conf);
		if (rc == 0)
			log_debug("interface '%s': port '%s' pairs its queues: "
			    "%d idle tx queue(s)", ifc->name, de->address,
			    ntx - ifc->tx.nqueues);
	}
	if (rc != 0) {
		log_seterr(err, errlen, "interface '%s': port '%s': "
		    "rte_eth_dev_configure (%d rx, %d tx queues, mtu %u): %s",
		    ifc->name, de->address, ifc->rx.nqueues, ifc->tx.nqueues,
		    conf.rxmode.mtu, rte_strerror(-rc));
		goto fail;
	}
	de->have_port = true;
	for (qi = 0; qi < ifc->rx.nqueues; qi++) {
		rc = dpdk_queue_init(de, c, ifc, qi, regions, o, &info, err,
		    errlen);
		if (rc < 0)
			goto fail;
	}
	if ((rc = dpdk_tx_init(&de->tx, &de->base, de->port, c, ifc, regions,
	    &info, err, errlen)) < 0)
		goto fail;
	for (qi = ifc->tx.nqueues; qi < ntx; qi++) {
		rc = rte_eth_tx_queue_setup(de->port, (uint16_t)qi,
		    DPDK_IDLE_TX_DESC, (unsigned)SOCKET_ID_ANY, NULL);
		if (rc != 0) {
			log_seterr(err, errlen, "interface '%s': port '%s': "
			    "idle tx queue %d (the port pairs its queues): %s",
			    ifc->name, de->address, qi, rte_strerror(-rc));
			goto fail;
		}
	}
	log_info("interface '%s': DPDK port %u '%s' (%s), %d rx queue(s), %d "
	    "tx queue(s), mtu %u", ifc->name, de->port, de->address,
	    info.driver_name != NULL ? info.driver_name : "?",
	    ifc->rx.nqueues, ifc->tx.nqueues, conf.rxmode.mtu);
	*out = &de->base;
	return 0;
fail:
	if (rc == -ENOMEM && err != NULL && errlen > 0 && err[0] == '\0')
		log_seterr(err, errlen, "interface '%s': out of memory",
		    ifc->name);
	dpdk_fini(&de->base);
	return rc < 0 ? rc : -EINVAL;
}

static int
dpdk_start(struct engine *e)
{
	struct dpdk_engine *de = (struct dpdk_engine *)e;
	int rc;

	if ((rc = rte_eth_dev_start(de->port)) != 0) {
		log_warnx("interface '%s': port '%s': rte_eth_dev_start: %s",
		    de->name, de->address, rte_strerror(-rc));
		return rc;
	}
	de->started = true;
	/* Frames for other MACs too (a sensor need not know ours); not
	 * every port can. */
	(void)rte_eth_promiscuous_enable(de->port);
	for (int i = 0; i < de->nq; i++) {
		/* counters from here on: baseline, not reset (not every PMD
		 * resets) */
		if (!de->q[i]->port_counters)
			continue;
		(void)rte_eth_stats_get(de->port, &de->q[i]->base_stats);
		if (de->sock_domain != 0) {
			struct dpdk_rxq *q = de->q[i];

			q->npkt_fd = dpdk_vdev_sockets(de->dev, de->name,
			    de->address, de->sock_domain, q->pkt_fd,
			    CFG_MAX_QUEUES);
			q->pkt_domain = de->sock_domain;
			/* from now on */
			q->pkt_base = dpdk_vdev_drops(q->pkt_domain, q->pkt_fd,
			    q->npkt_fd);
		}
	}
	return 0;
}

static struct engine_rxq *
dpdk_rxq(struct engine *e, int qi)
{
	struct dpdk_engine *de = (struct dpdk_engine *)e;

	if (de == NULL || qi < 0 || qi >= de->nq)
		return NULL;
	return &de->q[qi]->base;
}

struct dpdk_tx *
dpdk_engine_tx(struct engine *e)
{
	return e != NULL ? ((struct dpdk_engine *)e)->tx : NULL;
}

/* ---- data path ------------------------------------------------------- */

/*
 * Software loopback: q->burst[0..n) are the mbufs a tx queue sent (a
 * header mbuf, perhaps chained to its payload's). Each is landed in a
 * mbuf of the queue's own pool, as a NIC's DMA would land it: one
 * contiguous frame, copied by the CPU into host memory or by
 * cudaMemcpyAsync into device memory (one wait per burst); then the sent
 * mbuf is freed, which gives its payload back to the sender. A frame
 * longer than a buffer is counted truncated; one that finds no free
 * buffer, kernel (the NIC's rx_nombuf). Returns the frames now in
 * q->burst.
 */
static unsigned
dpdk_loop_land(struct dpdk_rxq *q, unsigned n)
{
	unsigned out = 0, nc = 0, landed;
	uint16_t room = rte_pktmbuf_data_room_size(q->pool) -
	    RTE_PKTMBUF_HEADROOM;
	int rc;

	for (unsigned i = 0; i < n; i++) {
		struct rte_mbuf *m = q->burst[i], *d = NULL;
		uint8_t *dst;

		if (m->pkt_len > room)
			q->st.truncated++;
		else if ((d = rte_pktmbuf_alloc(q->pool)) == NULL)
			q->st.kernel++;
		if (d == NULL) {
			rte_pktmbuf_free(m);
			continue;
		}
		dst = (uint8_t *)rte_pktmbuf_append(d, (uint16_t)m->pkt_len);
		for (struct rte_mbuf *g = m; g != NULL; g = g->next) {
			const void *src = rte_pktmbuf_mtod(g, const void *);

			if (!q->loop_dev)
				memcpy(dst, src, g->data_len);
			else {
				q->loop_copies[nc].dst = dst;
				q->loop_copies[nc].src = src;
				q->loop_copies[nc].len = g->data_len;
				nc++;
			}
			dst += g->data_len;
		}
		q->loop_from[out] = m;
		q->burst[out++] = d;
	}
	landed = out;
	if (q->loop_dev && nc > 0) {
		rc = q->loop_stream != NULL ? 0 :
		    gpu_stream_create(q->loop_gpu, &q->loop_stream);
		if (rc == 0)
			rc = gpu_copy_to_device(q->loop_gpu, q->loop_stream,
			    q->loop_copies, nc);
		if (rc < 0) {
			if (!q->loop_warned) {
				q->loop_warned = true;
				log_warnx("queue %u: software loopback: copying "
				    "frames into device memory: %s (counted in "
				    "errors; not logged again)",
				    q->base.queue_id, gpu_last_error());
			}
			q->st.errors += out;
			for (unsigned i = 0; i < out; i++)
				rte_pktmbuf_free(q->burst[i]);
			out = 0;
		}
	}
	for (unsigned i = 0; i < landed; i++)
		rte_pktmbuf_free(q->loop_from[i]);
	return out;
}

/* One rte_eth_rx_burst: frames into f[], their mbufs onto the held ring. */
static unsigned
dpdk_poll(struct dpdk_rxq *q, struct rx_frame *f, unsigned max)
{
	uint16_t n = rte_eth_rx_burst(q->port, q->qid, q->burst,
	    (uint16_t)max);
	unsigned out = 0;
	uint64_t ns;

	if (n == 0)
		return 0;
	if (q->loopback && (n = (uint16_t)dpdk_loop_land(q, n)) == 0)
		return 0;
	ns = dpdk_now_ns();
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = q->burst[i];
		uint32_t slot;

		if (m->nb_segs > 2) {
			/* A frame is a header part and a payload part: a
			 * longer chain would have to be copied. */
			q->st.truncated++;
			rte_pktmbuf_free(m);
			continue;
		}
		f[out].hdr = rte_pktmbuf_mtod(m, const uint8_t *);
		f[out].hdr_len = m->data_len;
		if (m->nb_segs == 2) {
			f[out].payload = rte_pktmbuf_mtod(m->next,
			    const uint8_t *);
			f[out].payload_len = m->next->data_len;
		} else {
			f[out].payload = f[out].hdr + m->data_len;
			f[out].payload_len = 0;
		}
		f[out].rx_ns = ns;
		f[out].stash = NULL;
		f[out].flags = 0;	/* the worker shadows device frames */
		q->st.rx_bytes += m->pkt_len;
		slot = q->oldest + q->nheld;
		if (slot >= q->cap)
			slot -= q->cap;
		q->held[slot] = m;
		q->nheld++;
		out++;
	}
	q->st.rx_packets += out;
	q->st.bursts++;
	return out;
}

static bool
dpdk_woken(const struct dpdk_rxq *q)
{
	struct pollfd p = { .fd = q->wake_fd, .events = POLLIN };

	return q->wake_fd >= 0 && poll(&p, 1, 0) == 1;
}

/* Blocking mode between empty polls: sleep q->nap_ns (less when the
 * timeout ends sooner), on the wake fd when there is one, and make the
 * next nap longer. True when woken. */
static bool
dpdk_nap(struct dpdk_rxq *q, int64_t left)
{
	struct timespec ts = { 0, (long)q->nap_ns };
	struct pollfd p = { .fd = q->wake_fd, .events = POLLIN };

	if (left >= 0 && left < (int64_t)q->nap_ns)
		ts.tv_nsec = (long)left;
	if (q->nap_ns < DPDK_NAP_MAX_NS)
		q->nap_ns = q->nap_ns * 2 < DPDK_NAP_MAX_NS ? q->nap_ns * 2 :
		    DPDK_NAP_MAX_NS;
	if (q->wake_fd < 0) {
		nanosleep(&ts, NULL);
		return false;
	}
	return ppoll(&p, 1, &ts, NULL) == 1;
}

/*
 * DPDK is poll-mode: poll until a frame comes or the timeout ends. Busy
 * poll spins and looks at the wake fd every ENGINE_BUSY_WAKE_SPINS empty
 * polls. Blocking mode naps between empty polls in ppoll() on the wake
 * fd: 20 us after a frame, doubling up to 500 us while the queue stays
 * empty, so an idle queue costs ~2000 wake-ups a second rather than a
 * core. The port's descriptors (up to 1024) hold what arrives during a
 * nap; at rates that fill them within 500 us (~2 Mpps) use busy_poll.
 */
static int
dpdk_rx_burst(struct engine_rxq *rq, struct rx_frame *f, unsigned max,
	      int64_t timeout_ns)
{
	struct dpdk_rxq *q = (struct dpdk_rxq *)rq;
	uint64_t deadline, now;
	unsigned n, spins;

	if (max == 0)
		return 0;
	if (max > ENGINE_MAX_BURST)
		max = ENGINE_MAX_BURST;
	if (q->cap - q->nheld < max)
		max = q->cap - q->nheld;
	if (max == 0)
		return -ENOBUFS;
	if (!q->lcore_tried) {
		/* A worker is not an EAL thread: as a registered one it gets
		 * an lcore id and so the mempool's per-lcore cache. */
		q->lcore_tried = true;
		if (rte_lcore_id() == LCORE_ID_ANY &&
		    rte_thread_register() != 0)
			log_debug("queue %u: rte_thread_register: %s (no "
			    "mempool cache)", q->qid, rte_strerror(rte_errno));
	}
	if ((n = dpdk_poll(q, f, max)) > 0 || timeout_ns == 0) {
		if (n > 0)
			q->nap_ns = DPDK_NAP_MIN_NS;
		return (int)n;
	}
	now = dpdk_now_ns();
	deadline = timeout_ns < 0 ? UINT64_MAX : now + (uint64_t)timeout_ns;
	for (spins = 1;; spins++) {
		if (q->mode == ENGINE_RX_BLOCKING) {
			if (dpdk_nap(q, timeout_ns < 0 ? -1 :
			    (int64_t)(deadline - now)))
				return 0;
		} else if (spins % ENGINE_BUSY_WAKE_SPINS == 0 &&
		    dpdk_woken(q))
			return 0;
		if ((n = dpdk_poll(q, f, max)) > 0) {
			q->nap_ns = DPDK_NAP_MIN_NS;
			return (int)n;
		}
		now = dpdk_now_ns();
		if (now >= deadline)
			return 0;
	}
}

static void
dpdk_release(struct engine_rxq *rq, unsigned n)
{
	struct dpdk_rxq *q = (struct dpdk_rxq *)rq;

	if (n > q->nheld)
		n = q->nheld;
	while (n > 0) {
		uint32_t run = q->cap - q->oldest;

		if (run > n)
			run = n;
		rte_pktmbuf_free_bulk(&q->held[q->oldest], run);
		q->oldest += run;
		if (q->oldest == q->cap)
			q->oldest = 0;
		q->nheld -= run;
		n -= run;
	}
}

/*
 * The queue's own counters; the first queue also carries the port's:
 * frames the port missed (imissed: no free descriptor) and failed buffer
 * allocations (rx_nombuf) as kernel, receive errors (ierrors) as
 * errors. rx_nombuf loses the frame on most PMDs; net_pcap reads it
 * again later, so there it may over-count.
 */
static int
dpdk_stats(struct engine_rxq *rq, struct engine_stats *out)
{
	struct dpdk_rxq *q = (struct dpdk_rxq *)rq;

	*out = q->st;
	if (q->port_counters) {
		uint64_t now = dpdk_now_ns();
		struct rte_eth_stats s;

		if (now - q->port_ns >= DPDK_PORT_STATS_NS &&
		    rte_eth_stats_get(q->port, &s) == 0) {
			const struct rte_eth_stats *b = &q->base_stats;

			q->port_ns = now;
			if (q->pkt_domain == AF_PACKET)
				q->pkt_drops += dpdk_vdev_drops(AF_PACKET,
				    q->pkt_fd, q->npkt_fd);
			else if (q->pkt_domain == AF_XDP)
				q->pkt_drops = dpdk_vdev_drops(AF_XDP, q->pkt_fd,
				    q->npkt_fd) - q->pkt_base;
			q->port_drops = s.imissed - b->imissed +
			    s.rx_nombuf - b->rx_nombuf + q->pkt_drops;
			q->port_errors = s.ierrors - b->ierrors;
		}
		out->kernel += q->port_drops;
		out->errors += q->port_errors;
	}
	return 0;
}

static void
dpdk_set_wake_fd(struct engine_rxq *rq, int fd)
{
	((struct dpdk_rxq *)rq)->wake_fd = fd;
}

static int
dpdk_steer(struct engine *e, const struct flow_table *t, char *why,
	   size_t whylen)
{
	struct dpdk_engine *de = (struct dpdk_engine *)e;
	uint32_t ids[CFG_MAX_QUEUES];

	if (de->nq <= 1)
		return 0;
	for (int k = 0; k < de->nq; k++)
		ids[k] = de->q[k]->base.queue_id;
	return dpdk_flow_steer(de->port, ids, de->nq, t, why, whylen);
}

static void
dpdk_fini(struct engine *e)
{
	struct dpdk_engine *de = (struct dpdk_engine *)e;

	if (de == NULL)
		return;
	for (int i = 0; i < de->nq; i++)
		if (de->q[i] != NULL)
			dpdk_release(&de->q[i]->base, de->q[i]->nheld);
	if (de->started)
		(void)rte_eth_dev_stop(de->port);
	/* The queues hold mbufs of the pools until the port is closed. */
	if (de->have_port)
		(void)rte_eth_dev_close(de->port);
	/* after the close: the PMD may free sent frames until then */
	dpdk_tx_fini(de->tx);
	for (int i = 0; i < de->nq; i++) {
		struct dpdk_rxq *q = de->q[i];

		if (q == NULL)
			continue;
		rte_mempool_free(q->pool);
		rte_mempool_free(q->hdr_pool);
		free(q->held);
		free(q->loop_copies);
		free(q->loop_from);
		gpu_stream_destroy(q->loop_stream);
		q->held = NULL;
	}
	for (int i = 0; i < de->nmaps; i++)
		(void)rte_dev_dma_unmap(de->dev, de->maps[i].va,
		    (uint64_t)(uintptr_t)de->maps[i].va, de->maps[i].len);
	for (int i = 0; i < de->nq; i++)
		if (de->q[i] != NULL && de->q[i]->ext_va != NULL)
			dpdk_extmem_put(de->q[i]->ext_va);
	for (int i = 0; i < de->nq; i++)
		free(de->q[i]);
	if (de->eal_ref)
		dpdk_eal_put();
	free(de);
}

#include "engine_dpdk_end.h"

#else /* !DPDK_HAVE_HEADERS */

static int
dpdk_init(struct engine **out, const struct cfg *c,
	  const struct cfg_interface *ifc, struct mem_region *regions,
	  const struct engine_opts *opts, char *err, size_t errlen)
{
	*out = NULL;
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, "interface '%s': this daqirid was built "
		    "without DPDK's headers (Makefile: DPDK_CFLAGS for "
		    "engine_dpdk.c); use stream_type socket", ifc->name);
	return -ENOTSUP;
}

static int
dpdk_start(struct engine *e)
{
	return -ENOTSUP;
}

static struct engine_rxq *
dpdk_rxq(struct engine *e, int qi)
{
	return NULL;
}

static int
dpdk_rx_burst(struct engine_rxq *rq, struct rx_frame *f, unsigned max,
	      int64_t timeout_ns)
{
	return -ENOTSUP;
}

static void
dpdk_release(struct engine_rxq *rq, unsigned n)
{
}

static int
dpdk_stats(struct engine_rxq *rq, struct engine_stats *out)
{
	return -ENOTSUP;
}

static void
dpdk_set_wake_fd(struct engine_rxq *rq, int fd)
{
}

static int
dpdk_steer(struct engine *e, const struct flow_table *t, char *why,
	   size_t whylen)
{
	snprintf(why, whylen, "built without DPDK");
	return -EOPNOTSUPP;
}

static void
dpdk_fini(struct engine *e)
{
}

#endif /* DPDK_HAVE_HEADERS */

const struct engine_ops engine_dpdk_ops = {
	.name = "dpdk",
	.init = dpdk_init,
	.start = dpdk_start,
	.rxq = dpdk_rxq,
	.rx_burst = dpdk_rx_burst,
	.release = dpdk_release,
	.steer = dpdk_steer,
	.stats = dpdk_stats,
	.set_wake_fd = dpdk_set_wake_fd,
	.tx = &engine_dpdk_tx_ops,
	.fini = dpdk_fini,
};
