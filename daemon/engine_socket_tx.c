/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The socket engine's transmit half: one connected, non-blocking UDP
 * socket per tx queue, bound to socket_config.local_addr's address (port
 * destination.udp_src, else one the kernel picks) and connected to the
 * queue's destination (ipv4_dst:udp_dst, else socket_config.remote_addr),
 * so the kernel writes every header and a payload can go nowhere else.
 * tx_burst() is one sendmmsg(); a run of payloads of one length goes as
 * one message with UDP_SEGMENT (GSO: the kernel cuts it into datagrams),
 * unless DAQIRID_TX_NO_GSO is set (to anything but "" or "0").
 * sendmmsg copies, so every accepted payload's tag is done at once.
 *
 * A reply_peer queue (a server's queue with no destination, cfg_tx_dest)
 * sends from the interface's first rx socket itself (a duplicate of its
 * fd), so replies come from local_addr's port, as a peer that connected
 * its own socket to that port expects; each message is addressed to the
 * peer the rx workers recorded last (sock_engine.peer), loaded once per
 * burst. Before any datagram arrived a burst fails its first payload
 * with -EDESTADDRREQ (the TX worker counts it no_peer).
 *
 * A queue whose region is device memory (its channels' pools are GPU
 * memory, daemon/tx.c) cannot hand the kernel those bytes: tx_burst()
 * first copies the payloads it may send to a host staging buffer
 * (cudaMemcpyAsync device to host on a stream of the queue's own, then
 * one wait, on the TX worker), and sends from there; payloads sent that
 * way are counted as staged. The copy is done when the call returns, so
 * the tags are done at once here too.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "engine.h"
#include "engine_socket_internal.h"
#include "gpu.h"
#include "log.h"

#ifndef SOL_UDP
#define SOL_UDP			17
#endif
#ifndef UDP_SEGMENT
#define UDP_SEGMENT		103
#endif
/* Test and bench switch: no UDP_SEGMENT, one message per payload. */
#define SOCK_TX_NO_GSO_ENV	"DAQIRID_TX_NO_GSO"
/* The kernel's UDP_MAX_SEGMENTS (64 before Linux 6.x raised it). */
#define SOCK_GSO_MAX_SEGS	64
/* IPv4 total length less its header and UDP's. */
#define SOCK_GSO_MAX_BYTES	(65535u - 20u - 8u)
#define SOCK_SNDBUF		(8u << 20)
#define SOCK_DONE_MAX		(4 * ENGINE_MAX_BURST)
/* A device queue's host staging buffer: payloads of one tx_burst(), at
 * most this many bytes (64 of the largest UDP payload) and
 * ENGINE_MAX_BURST payloads; each at a 64-byte aligned stride. */
#define SOCK_STAGE_BYTES	(4u << 20)
#define SOCK_STAGE_ALIGN	64u

struct sock_txq {
	struct engine_txq base;
	int fd;
	bool gso;
	bool reply;			/* reply_peer: sendmmsg to peer */
	struct sockaddr_in peer;	/* this burst's peer (reply only) */
	uint32_t mtu_payload;		/* largest payload of one datagram on
					 * the route (GSO segments fit it) */
	struct mmsghdr msgs[ENGINE_MAX_BURST];
	struct iovec iov[ENGINE_MAX_BURST];
	uint16_t msg_first[ENGINE_MAX_BURST];	/* first payload of msg i */
	uint16_t msg_n[ENGINE_MAX_BURST];	/* payloads of msg i */
	union {
		char buf[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} cm[ENGINE_MAX_BURST];
	uint64_t done[SOCK_DONE_MAX];	/* tags sent, not yet returned */
	uint32_t ndone;
	struct engine_tx_stats st;
	/* device queues only: the staging buffer and its copies */
	uint8_t *stage;
	size_t stage_len;
	bool stage_pinned;		/* registered with CUDA */
	uint32_t stage_stride;
	uint32_t stage_max;		/* payloads it holds */
	void *stream;			/* gpu_stream_create() */
	bool stage_warned;		/* a failed copy was logged */
	struct gpu_copy *copies;	/* stage_max */
	struct engine_tx_pkt *spk;	/* stage_max: the staged payloads */
};

static const char *
ip_text(uint32_t host, char *buf, size_t cap)
{
	struct in_addr a = { .s_addr = htonl(host) };

	return inet_ntop(AF_INET, &a, buf, (socklen_t)cap);
}

/*
 * A reply_peer queue: the first rx socket, duplicated (the rx half
 * closes its own fd), unconnected; the route's MTU is not known until
 * a peer is, so UDP_SEGMENT runs are cut for a 1500-byte MTU.
 */
static int
sock_txq_reply_init(struct sock_engine *se, struct sock_txq *q,
		    const struct cfg_queue *cq, uint32_t maxp, char *err,
		    size_t errlen)
{
	const char *nogso;
	int v, rc;

	errno = EBADF;
	q->fd = sock_rx_fd(se, 0);
	if (q->fd >= 0)
		q->fd = fcntl(q->fd, F_DUPFD_CLOEXEC, 0);
	if (q->fd < 0) {
		rc = -errno;
		log_seterr(err, errlen, "interface '%s': tx queue '%s': "
		    "duplicating the rx socket: %s", se->name, cq->name,
		    strerror(errno));
		return rc;
	}
	v = SOCK_SNDBUF;
	if (setsockopt(q->fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)) < 0)
		(void)setsockopt(q->fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
	q->mtu_payload = 1500 - 28;
	nogso = getenv(SOCK_TX_NO_GSO_ENV);
	q->gso = nogso == NULL || nogso[0] == '\0' || strcmp(nogso, "0") == 0;
	se->want_peer = true;
	log_debug("interface '%s': tx queue '%s': from udp port %u to the "
	    "peer that sent last, payloads up to %u bytes%s", se->name,
	    cq->name, se->port, maxp, q->gso ? ", UDP_SEGMENT" : "");
	return 0;
}

/* A device queue: the staging buffer (pinned where CUDA allows, which
 * only speeds the copies) and the stream of its copies. */
static int
sock_stage_init(struct sock_txq *q, const struct cfg_interface *ifc,
		const struct cfg_queue *cq, const struct cfg_region *r,
		char *err, size_t errlen)
{
	uint32_t stride = (q->base.max_payload + SOCK_STAGE_ALIGN - 1) /
	    SOCK_STAGE_ALIGN * SOCK_STAGE_ALIGN;
	int rc;

	q->base.device = true;
	q->base.gpu = r->affinity;
	q->stage_stride = stride;
	q->stage_max = SOCK_STAGE_BYTES / stride;
	if (q->stage_max > ENGINE_MAX_BURST)
		q->stage_max = ENGINE_MAX_BURST;
	if (q->stage_max == 0)
		q->stage_max = 1;
	q->stage_len = (size_t)q->stage_max * stride;
	q->copies = calloc(q->stage_max, sizeof(*q->copies));
	q->spk = calloc(q->stage_max, sizeof(*q->spk));
	if (q->copies == NULL || q->spk == NULL ||
	    posix_memalign((void **)&q->stage, 4096, q->stage_len) != 0) {
		q->stage = NULL;
		return -ENOMEM;
	}
	memset(q->stage, 0, q->stage_len);
	if ((rc = gpu_stream_create(r->affinity, &q->stream)) < 0) {
		log_seterr(err, errlen, "interface '%s': tx queue '%s': its "
		    "region '%s' is device memory, which the socket engine "
		    "stages through host memory: %s", ifc->name, cq->name,
		    r->name, gpu_last_error());
		return rc;
	}
	q->stage_pinned = gpu_host_register(q->stage, q->stage_len) == 0;
	if (!q->stage_pinned)
		log_debug("interface '%s': tx queue '%s': staging buffer not "
		    "pinned (%s): plain host memory", ifc->name, cq->name,
		    gpu_last_error());
	log_info("interface '%s': tx queue '%s': payloads in device memory "
	    "(region '%s', GPU %d) are copied to host memory to be sent, "
	    "counted in staged", ifc->name, cq->name, r->name, r->affinity);
	return 0;
}

static int
sock_txq_init(struct sock_engine *se, const struct cfg *c,
	      const struct cfg_interface *ifc, int qi, char *err, size_t errlen)
{
	const struct cfg_queue *cq = &ifc->tx.queues[qi];
	const struct cfg_tx_dest *d = &cq->dest;
	const struct cfg_socket *s = &ifc->socket;
	struct sockaddr_in sa;
	struct sock_txq *q;
	uint32_t dst, maxp, mtu = 0;
	uint16_t dport;
	socklen_t len;
	char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
	const char *nogso;
	int v, rc;

	if ((q = calloc(1, sizeof(*q))) == NULL)
		return -ENOMEM;
	q->base.engine = &se->base;
	q->base.qi = qi;
	q->base.queue_id = cq->id;
	q->fd = -1;
	se->txq[qi] = q;
	se->ntxq = qi + 1;

	dst = d->has_ipv4_dst ? d->ipv4_dst : s->remote.addr;
	dport = d->has_udp_dst ? d->udp_dst : s->remote.port;
	q->reply = d->reply_peer;
	if (q->reply && (se->nq < 1 || se->q[0] == NULL)) {
		log_seterr(err, errlen, "interface '%s': tx queue '%s': it "
		    "replies to the peer that sent last, and the interface "
		    "has no rx socket", se->name, cq->name);
		return -EDESTADDRREQ;
	}
	if (!q->reply && ((!d->has_ipv4_dst && !s->remote.set) ||
	    dst == INADDR_ANY || dport == 0)) {
		log_seterr(err, errlen, "interface '%s': tx queue '%s': no "
		    "destination: give it destination.ipv4_dst and udp_dst, or "
		    "socket_config.remote_addr", se->name, cq->name);
		return -EDESTADDRREQ;
	}
	maxp = s->max_payload_size != 0 ? s->max_payload_size :
	    ENGINE_UDP_MAX_PAYLOAD;
	if (cq->nregions > 0 && cq->region_idx[0] >= 0 &&
	    cq->region_idx[0] < c->nregions &&
	    c->regions[cq->region_idx[0]].buf_size < maxp)
		maxp = (uint32_t)c->regions[cq->region_idx[0]].buf_size;
	q->base.max_payload = maxp;
	if (cq->nregions > 0 && cq->region_idx[0] >= 0 &&
	    cq->region_idx[0] < c->nregions &&
	    c->regions[cq->region_idx[0]].kind == DAQIRI_MEM_DEVICE &&
	    (rc = sock_stage_init(q, ifc, cq,
	    &c->regions[cq->region_idx[0]], err, errlen)) < 0)
		return rc;

	if (q->reply)
		return sock_txq_reply_init(se, q, cq, maxp, err, errlen);
	q->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (q->fd < 0) {
		rc = -errno;
		log_seterr(err, errlen, "interface '%s': tx queue '%s': "
		    "socket: %s", se->name, cq->name, strerror(errno));
		return rc;
	}
	v = SOCK_SNDBUF;
	if (setsockopt(q->fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)) < 0)
		(void)setsockopt(q->fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
	if (d->has_ttl) {
		v = d->ttl;
		if (setsockopt(q->fd, IPPROTO_IP, IP_TTL, &v, sizeof(v)) < 0)
			log_warn("interface '%s': tx queue '%s': IP_TTL %d",
			    se->name, cq->name, v);
	}
	if (d->has_dscp) {
		v = d->dscp << 2;
		if (setsockopt(q->fd, IPPROTO_IP, IP_TOS, &v, sizeof(v)) < 0)
			log_warn("interface '%s': tx queue '%s': IP_TOS %d",
			    se->name, cq->name, v);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(se->addr);
	sa.sin_port = htons(d->has_udp_src ? d->udp_src : 0);
	if (bind(q->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		log_seterr(err, errlen, "interface '%s': tx queue '%s': bind "
		    "udp://%s:%u: %s%s", se->name, cq->name,
		    ip_text(se->addr, a, sizeof(a)), ntohs(sa.sin_port),
		    strerror(errno), rc == -EADDRINUSE ? " (udp_src is taken, "
		    "perhaps by this interface's own rx socket: choose another)" :
		    "");
		return rc;
	}
	sa.sin_addr.s_addr = htonl(dst);
	sa.sin_port = htons(dport);
	if (connect(q->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		log_seterr(err, errlen, "interface '%s': tx queue '%s': "
		    "connect udp://%s:%u: %s", se->name, cq->name,
		    ip_text(dst, b, sizeof(b)), dport, strerror(errno));
		return rc;
	}
	len = sizeof(mtu);
	if (getsockopt(q->fd, IPPROTO_IP, IP_MTU, &mtu, &len) < 0 || mtu < 29)
		mtu = 1500;
	q->mtu_payload = mtu - 28;
	nogso = getenv(SOCK_TX_NO_GSO_ENV);
	q->gso = nogso == NULL || nogso[0] == '\0' || strcmp(nogso, "0") == 0;
	if (q->gso) {
		/* probe: an old kernel refuses the option */
		v = 0;
		if (setsockopt(q->fd, SOL_UDP, UDP_SEGMENT, &v, sizeof(v)) < 0) {
			log_info("interface '%s': tx queue '%s': no UDP_SEGMENT "
			    "(%s): one message per payload", se->name, cq->name,
			    strerror(errno));
			q->gso = false;
		}
	}
	len = sizeof(sa);
	(void)getsockname(q->fd, (struct sockaddr *)&sa, &len);
	log_debug("interface '%s': tx queue '%s': udp://%s:%u -> udp://%s:%u, "
	    "payloads up to %u bytes%s", se->name, cq->name,
	    ip_text(ntohl(sa.sin_addr.s_addr), a, sizeof(a)),
	    ntohs(sa.sin_port), ip_text(dst, b, sizeof(b)), dport, maxp,
	    q->gso ? ", UDP_SEGMENT" : "");
	return 0;
}

int
sock_tx_init(struct sock_engine *se, const struct cfg *c,
	     const struct cfg_interface *ifc, char *err, size_t errlen)
{
	if (ifc->tx.nqueues < 0 || ifc->tx.nqueues > CFG_MAX_QUEUES)
		return -EINVAL;
	for (int qi = 0; qi < ifc->tx.nqueues; qi++) {
		int rc = sock_txq_init(se, c, ifc, qi, err, errlen);

		if (rc < 0)
			return rc;
	}
	return 0;
}

void
sock_tx_fini(struct sock_engine *se)
{
	for (int i = 0; i < se->ntxq; i++) {
		struct sock_txq *q = se->txq[i];

		if (q == NULL)
			continue;
		if (q->fd >= 0)
			close(q->fd);
		gpu_stream_destroy(q->stream);
		if (q->stage_pinned)
			gpu_host_unregister(q->stage);
		free(q->stage);
		free(q->copies);
		free(q->spk);
		free(q);
		se->txq[i] = NULL;
	}
	se->ntxq = 0;
}

static struct engine_txq *
sock_txq(struct engine *e, int qi)
{
	struct sock_engine *se = (struct sock_engine *)e;

	if (se == NULL || qi < 0 || qi >= se->ntxq || se->txq[qi] == NULL)
		return NULL;
	return &se->txq[qi]->base;
}

/* Lay p[0..n) out as messages: runs of one length (GSO) or one each. */
static unsigned
sock_tx_build(struct sock_txq *q, const struct engine_tx_pkt *p, unsigned n)
{
	unsigned m = 0, i = 0;

	while (i < n) {
		struct msghdr *h = &q->msgs[m].msg_hdr;
		unsigned k = 1;
		uint32_t bytes = p[i].len;

		q->iov[i].iov_base = (void *)(uintptr_t)p[i].data;
		q->iov[i].iov_len = p[i].len;
		if (q->gso && p[i].len > 0 && p[i].len <= q->mtu_payload) {
			while (i + k < n && k < SOCK_GSO_MAX_SEGS &&
			    p[i + k].len == p[i].len &&
			    bytes + p[i].len <= SOCK_GSO_MAX_BYTES) {
				q->iov[i + k].iov_base =
				    (void *)(uintptr_t)p[i + k].data;
				q->iov[i + k].iov_len = p[i + k].len;
				bytes += p[i].len;
				k++;
			}
		}
		memset(h, 0, sizeof(*h));
		h->msg_iov = &q->iov[i];
		h->msg_iovlen = k;
		if (q->reply) {
			h->msg_name = &q->peer;
			h->msg_namelen = sizeof(q->peer);
		}
		if (k > 1) {
			struct cmsghdr *cm;
			uint16_t seg = (uint16_t)p[i].len;

			h->msg_control = q->cm[m].buf;
			h->msg_controllen = sizeof(q->cm[m].buf);
			cm = CMSG_FIRSTHDR(h);
			cm->cmsg_level = SOL_UDP;
			cm->cmsg_type = UDP_SEGMENT;
			cm->cmsg_len = CMSG_LEN(sizeof(seg));
			memcpy(CMSG_DATA(cm), &seg, sizeof(seg));
		}
		q->msg_first[m] = (uint16_t)i;
		q->msg_n[m] = (uint16_t)k;
		m++;
		i += k;
	}
	return m;
}

static int
sock_tx_send(struct sock_txq *q, const struct engine_tx_pkt *p,
	     unsigned n, int *err)
{
	unsigned m, sent = 0, room = SOCK_DONE_MAX - q->ndone;
	int r, tries = 0;

	*err = 0;
	if (n > ENGINE_MAX_BURST)
		n = ENGINE_MAX_BURST;
	if (n > room) {
		n = room;
		*err = -EAGAIN;
	}
	if (n == 0)
		return 0;
	if (q->reply) {
		struct sock_engine *se = (struct sock_engine *)q->base.engine;
		uint64_t pk = atomic_load_explicit(&se->peer,
		    memory_order_relaxed);

		if (pk == 0) {
			/* nobody sent yet: p[0] fails, counted no_peer */
			*err = -EDESTADDRREQ;
			return 0;
		}
		memset(&q->peer, 0, sizeof(q->peer));
		q->peer.sin_family = AF_INET;
		q->peer.sin_addr.s_addr = htonl(SOCK_PEER_ADDR(pk));
		q->peer.sin_port = htons(SOCK_PEER_PORT(pk));
	}
again:
	m = sock_tx_build(q, p + sent, n - sent);
	q->st.calls++;
	r = sendmmsg(q->fd, q->msgs, m, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (r > 0) {
		for (int i = 0; i < r; i++) {
			unsigned f = q->msg_first[i], k = q->msg_n[i];

			for (unsigned j = 0; j < k; j++) {
				q->done[q->ndone++] = p[sent + f + j].tag;
				q->st.tx_bytes += p[sent + f + j].len;
			}
			q->st.tx_packets += k;
			if (k > 1)
				q->st.gso_sends++;
		}
		sent += q->msg_first[r - 1] + q->msg_n[r - 1];
		if (sent == n)
			return (int)sent;
		/* the next message's fate shows in the next call */
		tries = 0;
		goto again;
	}
	switch (r < 0 ? errno : EAGAIN) {
	case EAGAIN:
	case ENOBUFS:
	case ENOMEM:
		q->st.full++;
		*err = -EAGAIN;
		return (int)sent;
	case EINTR:
		goto again;
	case ECONNREFUSED:
		/* an earlier datagram's ICMP port unreachable, reported
		 * now: this one was not sent; once more */
		if (tries++ < 1)
			goto again;
		break;
	case EINVAL:
	case EIO:
		/* the route cannot segment (no checksum offload, xfrm):
		 * one message per payload from now on */
		if (q->gso && q->msg_n[0] > 1) {
			q->gso = false;
			log_warnx("tx queue %u: UDP_SEGMENT refused (%s); one "
			    "message per payload", q->base.queue_id,
			    strerror(errno));
			goto again;
		}
		break;
	default:
		break;
	}
	/* the first payload of the failed message is dropped */
	r = errno;
	q->st.errors++;
	*err = -r;
	return (int)sent;
}

/*
 * A device queue's burst: copy payloads to host memory, as many at a
 * time as the staging buffer and the room for tags allow, and send
 * each chunk; returns and sets *err as tx_burst(). A failed copy fails
 * the chunk's first payload (engine_error; the caller goes on with the
 * next) and is logged once per queue. A payload sent again after a full
 * socket is copied again but counted staged once, when it is sent.
 */
static int
sock_tx_staged(struct sock_txq *q, const struct engine_tx_pkt *p,
	       unsigned n, int *err)
{
	unsigned done = 0, m, i;
	int r;

	*err = 0;
	if (n > ENGINE_MAX_BURST)
		n = ENGINE_MAX_BURST;
	while (done < n) {
		m = n - done;
		if (m > q->stage_max)
			m = q->stage_max;
		if (m > SOCK_DONE_MAX - q->ndone)
			m = SOCK_DONE_MAX - q->ndone;
		if (m == 0) {
			*err = -EAGAIN;
			break;
		}
		for (i = 0; i < m; i++) {
			q->copies[i].dst = q->stage + (size_t)i *
			    q->stage_stride;
			q->copies[i].src = p[done + i].data;
			q->copies[i].len = p[done + i].len;
			q->spk[i].data = q->copies[i].dst;
			q->spk[i].len = p[done + i].len;
			q->spk[i].tag = p[done + i].tag;
		}
		if ((r = gpu_copy_to_host(q->base.gpu, q->stream, q->copies,
		    m)) < 0) {
			if (!q->stage_warned) {
				q->stage_warned = true;
				log_warnx("tx queue %u: copying payloads from "
				    "device memory: %s (counted in engine "
				    "errors; not logged again)",
				    q->base.queue_id, gpu_last_error());
			}
			q->st.errors++;
			*err = r;
			break;
		}
		r = sock_tx_send(q, q->spk, m, err);
		for (i = 0; r > 0 && i < (unsigned)r; i++) {
			q->st.staged++;
			q->st.staged_bytes += p[done + i].len;
		}
		done += r > 0 ? (unsigned)r : 0;
		if (r < 0 || (unsigned)r < m)
			break;
	}
	return (int)done;
}

static int
sock_tx_burst(struct engine_txq *tq, const struct engine_tx_pkt *p,
	      unsigned n, int *err)
{
	struct sock_txq *q = (struct sock_txq *)tq;

	if (q->base.device)
		return sock_tx_staged(q, p, n, err);
	return sock_tx_send(q, p, n, err);
}

static unsigned
sock_tx_done(struct engine_txq *tq, uint64_t *tags, unsigned max)
{
	struct sock_txq *q = (struct sock_txq *)tq;
	unsigned n = q->ndone < max ? q->ndone : max;

	memcpy(tags, q->done + (q->ndone - n), n * sizeof(*tags));
	q->ndone -= n;
	return n;
}

static int
sock_tx_stats(struct engine_txq *tq, struct engine_tx_stats *out)
{
	*out = ((struct sock_txq *)tq)->st;
	return 0;
}

const struct engine_tx_ops engine_socket_tx_ops = {
	.txq = sock_txq,
	.tx_burst = sock_tx_burst,
	.tx_done = sock_tx_done,
	.tx_stats = sock_tx_stats,
};
