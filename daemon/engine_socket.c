/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The socket engine: kernel UDP sockets, one per rx queue, read with
 * recvmmsg() straight into the queue's memory region and handed out as
 * Ethernet frames (a synthetic Ethernet/IPv4/UDP header + the datagram),
 * UDP_GRO reads split by segment size, kernel drops counted. The
 * transmit half is engine_socket_tx.c.
 *
 * Direct placement (engine_ops.set_place). When the worker hints where
 * the next payloads go, a message gets a scatter list that puts each
 * datagram's header (the bytes before the payload) into a side buffer
 * and its payload straight into the next destination: [hdr 0][dst 0]
 * [hdr 1][dst 1] ... then the message's own slot for whatever is longer.
 * How many datagrams a message holds is known only once it is read, so
 * while reads hold one datagram each, one recvmmsg takes a pair per
 * message; once a read held more (UDP_GRO), messages are read one per
 * call, each with every pair one read can hold, the next from the
 * destination after the last one filled, until ENGINE_SP_SINGLE_RUN reads
 * in a row held one datagram each. A datagram of another length,
 * or a short last one, lands scattered: it is gathered back into the
 * slot and handed out as always. Every direct frame is handed out by the
 * call that read it; one that would have to wait for a later call is
 * copied into its stash first (the worker may reuse its destination).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "engine_socket_internal.h"
#include "log.h"
#include "steer_cbpf.h"

#ifndef SO_DETACH_REUSEPORT_BPF
#define SO_DETACH_REUSEPORT_BPF	68	/* Linux 5.8 */
#endif
#ifndef SOL_UDP
#define SOL_UDP			17
#endif
#ifndef UDP_GRO
#define UDP_GRO			104
#endif
#ifndef SO_RXQ_OVFL
#define SO_RXQ_OVFL		40
#endif
#ifndef SO_MEMINFO
#define SO_MEMINFO		55
#endif
#define ENGINE_SK_MEMINFO_DROPS	8	/* index in SO_MEMINFO (sock_diag.h) */
#define ENGINE_SK_MEMINFO_VARS	9

/* A queue without a memory region gets this much private memory. */
#define ENGINE_PRIVATE_NBUFS	256
/* Fewest read slots a queue must have for UDP_GRO to be turned on. */
#define ENGINE_GRO_MIN_SLOTS	8
/* Control data one datagram may carry: UDP_GRO, SO_RXQ_OVFL, IP_PKTINFO. */
#define ENGINE_CMSG_SPACE	(CMSG_SPACE(sizeof(int)) + \
				 CMSG_SPACE(sizeof(uint32_t)) + \
				 CMSG_SPACE(sizeof(struct in_pktinfo)))
#define ENGINE_CACHE_LINE	64
/* Direct placement: the largest frame offset of the payload it takes
 * (the synthetic header and the instrument's header together), and the
 * most datagrams one UDP_GRO read holds (UDP_GRO_CNT_MAX). */
#define ENGINE_SP_HDR_MAX	256
#define ENGINE_SP_SEGS_MAX	64
/* After this many reads of one datagram in a row, messages are read many
 * per call again (a sender that stopped segmenting). */
#define ENGINE_SP_SINGLE_RUN	64

/* One datagram (possibly GRO-coalesced) of the last read: nspec
 * datagrams received as header + payload pairs (direct placement; the
 * first ndirect still in their destinations, the rest copied to their
 * stash), then nsegs of seg bytes in the slot, len bytes in all there. */
struct sock_read {
	uint32_t slot;
	uint32_t len;			/* bytes received into the slot */
	uint32_t seg;			/* segment size (len when not GRO) */
	uint32_t nsegs;
	uint32_t hint;			/* the first pair's destination */
	uint32_t nspec;
	uint32_t ndirect;
};

/* A queue; cache-aligned, touched only by its worker after start. */
struct sock_rxq {
	struct engine_rxq base;
	int fd;
	int wake_fd;
	enum engine_rx_mode mode;
	bool gro;
	bool pktinfo;			/* bound to INADDR_ANY: dst per datagram */
	bool last_full;			/* last read filled every message */
	uint32_t laddr;			/* bound address/port, host order */
	uint16_t lport;

	/* Read slots: a slot is one region buffer, or with GRO a run of
	 * buffers big enough for the largest coalesced read. Slots are used
	 * and freed in ring order. */
	uint8_t *arena;
	uint64_t slot_size;
	uint32_t nslots;
	uint32_t head;			/* next slot to read into */
	uint32_t tail;			/* oldest slot in use */
	uint32_t nheld;			/* slots in use */
	uint32_t *slot_frames;		/* frames of a slot not yet released */
	uint8_t (*side_hdr)[ENGINE_SYNTH_HDR_LEN]; /* a slot's short last
					 * GRO segment's header */
	void *private_mem;		/* arena when the queue has no region */
	size_t private_len;

	/* The last read: rd[rd_next..rd_n) still has frames to hand out,
	 * starting at segment rd_seg of rd[rd_next]. */
	struct sock_read *rd;
	uint32_t rd_n, rd_next, rd_seg;
	uint64_t rd_ns;
	uint32_t nout;			/* frames handed out, not released */

	uint32_t vmax;			/* size of the arrays below */
	struct mmsghdr *msgs;
	struct iovec *iov;
	struct sockaddr_in *peer;
	uint8_t *cmsg;			/* vmax x ENGINE_CMSG_SPACE */

	/* Direct placement: this call's hint (NULL = none), the shape of
	 * the last read's pairs, whether reads hold several datagrams, and
	 * per destination a side buffer (synthetic header, then the
	 * datagram's header) and two iovecs. */
	const struct rx_place *pl;
	uint32_t rd_hlen, rd_plen;
	bool sp_multi;
	uint32_t sp_single;		/* one-datagram reads in a row */
	uint32_t sp_est;		/* most datagrams a read of the last
					 * call held */
	uint8_t *sp_side;		/* ENGINE_MAX_BURST x HDR_MAX */
	struct iovec *sp_iov;		/* 2 x ENGINE_MAX_BURST + vmax */

	uint32_t ovfl_last;		/* last SO_RXQ_OVFL / SK_MEMINFO value */
	struct engine_stats st;
} __attribute__((aligned(ENGINE_CACHE_LINE)));

static void sock_fini(struct engine *e);

static inline void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void
put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

void
engine_synth_hdr(uint8_t *h, uint32_t src_addr, uint16_t src_port,
		 uint32_t dst_addr, uint16_t dst_port, uint32_t payload_len)
{
	uint8_t *ip = h + 14, *udp = h + 34;
	uint32_t sum = 0;
	int i;

	memset(h, 0, 12);			/* MACs */
	put16(h + 12, 0x0800);
	ip[0] = 0x45;
	ip[1] = 0;
	put16(ip + 2, (uint16_t)(20 + 8 + payload_len));
	put16(ip + 4, 0);			/* id */
	put16(ip + 6, 0x4000);			/* DF */
	ip[8] = 64;
	ip[9] = 17;
	put16(ip + 10, 0);
	put32(ip + 12, src_addr);
	put32(ip + 16, dst_addr);
	for (i = 0; i < 20; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	put16(ip + 10, (uint16_t)~sum);
	put16(udp, src_port);
	put16(udp + 2, dst_port);
	put16(udp + 4, (uint16_t)(8 + payload_len));
	put16(udp + 6, 0);
}

static inline uint64_t
sock_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Fold an absolute kernel drop count (32 bits, wraps) into the counter. */
static inline void
sock_drops_seen(struct sock_rxq *q, uint32_t v)
{
	int32_t d = (int32_t)(v - q->ovfl_last);

	if (d > 0) {
		q->st.kernel += (uint32_t)d;
		q->ovfl_last = v;
	}
}

static uint8_t *
sock_slot(const struct sock_rxq *q, uint32_t s)
{
	return q->arena + (uint64_t)s * q->slot_size;
}

/* Free slots at the tail that hold no unreleased frame. */
static void
sock_reclaim(struct sock_rxq *q)
{
	while (q->nheld > 0 && q->slot_frames[q->tail] == 0) {
		q->tail = (q->tail + 1) % q->nslots;
		q->nheld--;
	}
}

static uint8_t *
sock_side(const struct sock_rxq *q, uint32_t hint)
{
	return q->sp_side + (size_t)hint * ENGINE_SP_HDR_MAX;
}

/* The stash of pair k of read r: in its slot, after what the slot got. */
static uint8_t *
sock_stash(const struct sock_rxq *q, const struct sock_read *r, uint32_t k)
{
	return sock_slot(q, r->slot) + ENGINE_SYNTH_HDR_LEN + r->len +
	    (uint64_t)k * q->rd_plen;
}

/* The most pairs one message can take from this call's hint (0 = no
 * direct placement): the hint must fit a slot and nothing may be out. */
static uint32_t
sock_pairs_max(const struct sock_rxq *q)
{
	const struct rx_place *pl = q->pl;
	uint64_t dgram, g;

	if (pl == NULL || pl->n == 0 || q->nout != 0 || pl->payload_len == 0 ||
	    pl->payload_off < ENGINE_SYNTH_HDR_LEN ||
	    pl->payload_off > ENGINE_SP_HDR_MAX || pl->n > ENGINE_MAX_BURST)
		return 0;
	dgram = (uint64_t)pl->payload_off - ENGINE_SYNTH_HDR_LEN +
	    pl->payload_len;
	g = (q->slot_size - ENGINE_SYNTH_HDR_LEN) / dgram;
	return g < ENGINE_SP_SEGS_MAX ? (uint32_t)g : ENGINE_SP_SEGS_MAX;
}

/* Message i into slot s: its scatter list (pairs header + payload pairs
 * from hint h on, then the slot for the rest) and the rest of its
 * header. */
static void
sock_msg_init(struct sock_rxq *q, uint32_t i, uint32_t s, uint32_t pairs,
	      uint32_t h, uint32_t *iov_used)
{
	const struct rx_place *pl = q->pl;
	struct msghdr *m = &q->msgs[i].msg_hdr;
	uint32_t k;
	struct iovec *v;

	m->msg_name = &q->peer[i];
	m->msg_namelen = sizeof(q->peer[i]);
	m->msg_control = q->cmsg + (size_t)i * ENGINE_CMSG_SPACE;
	m->msg_controllen = ENGINE_CMSG_SPACE;
	m->msg_flags = 0;
	if (pairs == 0) {
		q->iov[i].iov_base = sock_slot(q, s) + ENGINE_SYNTH_HDR_LEN;
		q->iov[i].iov_len = q->slot_size - ENGINE_SYNTH_HDR_LEN;
		m->msg_iov = &q->iov[i];
		m->msg_iovlen = 1;
		return;
	}
	v = m->msg_iov = q->sp_iov + *iov_used;
	for (k = 0; k < pairs; k++) {
		if (q->rd_hlen > 0) {
			v->iov_base = sock_side(q, h + k) +
			    ENGINE_SYNTH_HDR_LEN;
			v->iov_len = q->rd_hlen;
			v++;
		}
		v->iov_base = pl->dst[h + k];
		v->iov_len = q->rd_plen;
		v++;
	}
	v->iov_base = sock_slot(q, s) + ENGINE_SYNTH_HDR_LEN;
	v->iov_len = q->slot_size - ENGINE_SYNTH_HDR_LEN -
	    (uint64_t)pairs * (q->rd_hlen + q->rd_plen);
	v++;
	m->msg_iovlen = (size_t)(v - m->msg_iov);
	*iov_used += (uint32_t)m->msg_iovlen;
}

/* A message that did not have the hinted shape: put its len bytes back
 * together in its slot, where a read without a hint would have put
 * them. */
static void
sock_gather(struct sock_rxq *q, uint32_t s, uint32_t len, uint32_t h,
	    uint32_t pairs)
{
	uint8_t *d = sock_slot(q, s) + ENGINE_SYNTH_HDR_LEN;
	uint32_t hlen = q->rd_hlen, dgram = hlen + q->rd_plen, k, off, c;

	if (len > pairs * dgram)
		memmove(d + pairs * dgram, d, len - pairs * dgram);
	for (k = 0; k < pairs && k * dgram < len; k++) {
		off = k * dgram;
		c = len - off < hlen ? len - off : hlen;
		memcpy(d + off, sock_side(q, h + k) + ENGINE_SYNTH_HDR_LEN, c);
		if (len - off <= hlen)
			break;
		c = len - off - hlen;
		if (c > q->rd_plen)
			c = q->rd_plen;
		memcpy(d + off + hlen, q->pl->dst[h + k], c);
	}
}

/*
 * Message of len bytes, GRO segment seg (0 = none), in slot s, received
 * with `pairs` pairs from hint h: fill in r. The pairs are kept when every
 * one that got data holds a whole datagram of the hinted shape; otherwise
 * the message is gathered into its slot.
 */
static void
sock_msg_done(struct sock_rxq *q, struct sock_read *r, uint32_t s,
	      uint32_t len, uint32_t seg, uint32_t pairs, uint32_t h)
{
	uint32_t dgram = q->rd_hlen + q->rd_plen, total;

	r->slot = s;
	r->hint = h;
	r->nspec = r->ndirect = 0;
	if (seg == 0 || seg >= len)
		seg = len;
	if (pairs > 0) {
		total = len == 0 ? 0 : (len + seg - 1) / seg;
		/* several a read: from now on; one a read: after a run */
		if (total > q->sp_est)
			q->sp_est = total;
		if (total > 1) {
			q->sp_multi = true;
			q->sp_single = 0;
		} else if (q->sp_multi &&
		    ++q->sp_single >= ENGINE_SP_SINGLE_RUN) {
			q->sp_multi = false;
		}
		if (len > 0 && seg == dgram &&
		    (total > pairs || len % seg == 0)) {
			r->nspec = total < pairs ? total : pairs;
			len -= r->nspec * dgram;
			if (seg >= len)
				seg = len;
		} else {
			sock_gather(q, s, len, h, pairs);
		}
	}
	r->len = len;
	r->seg = seg;
	/* an empty datagram is a frame too (malformed for a stream) */
	if (len == 0)
		r->nsegs = r->nspec == 0 ? 1 : 0;
	else
		r->nsegs = (len + seg - 1) / seg;
}

/*
 * Take message i of the last receive into the next slot: its control
 * data, its frames in rd[], the headers they are handed out with. *nfr
 * counts the read's frames: a direct one past max is copied to its stash
 * now. Returns the pairs it filled.
 */
static uint32_t
sock_take(struct sock_rxq *q, uint32_t i, uint32_t pairs, uint32_t h,
	  uint32_t *nfr, unsigned max)
{
	struct msghdr *m = &q->msgs[i].msg_hdr;
	struct sock_read *r = &q->rd[q->rd_n];
	uint32_t dst = q->laddr, len = q->msgs[i].msg_len, seg = 0, k, s;
	uint32_t src = ntohl(q->peer[i].sin_addr.s_addr);
	uint16_t sport = ntohs(q->peer[i].sin_port);
	struct sock_engine *se = (struct sock_engine *)q->base.engine;
	struct cmsghdr *c;
	uint8_t *base;

	if (se->want_peer) {
		uint64_t pk = SOCK_PEER_PACK(src, sport);

		/* a load of a line the tx workers only read: stored (and
		 * the line moved) only when the sender changed */
		if (atomic_load_explicit(&se->peer, memory_order_relaxed) !=
		    pk)
			atomic_store_explicit(&se->peer, pk,
			    memory_order_relaxed);
	}
	s = q->head;
	q->head = (q->head + 1) % q->nslots;
	q->nheld++;
	q->slot_frames[s] = 0;
	for (c = CMSG_FIRSTHDR(m); c != NULL; c = CMSG_NXTHDR(m, c)) {
		if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
			int v;

			memcpy(&v, CMSG_DATA(c), sizeof(v));
			seg = v > 0 ? (uint32_t)v : 0;
		} else if (c->cmsg_level == SOL_SOCKET &&
		    c->cmsg_type == SO_RXQ_OVFL) {
			uint32_t v;

			memcpy(&v, CMSG_DATA(c), sizeof(v));
			sock_drops_seen(q, v);
		} else if (c->cmsg_level == IPPROTO_IP &&
		    c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			dst = ntohl(pi.ipi_addr.s_addr);
		}
	}
	if (m->msg_flags & MSG_TRUNC) {
		/* Longer than the slot: malformed, never placed. The slot
		 * holds no frame and is freed in ring order. */
		q->st.truncated++;
		return 0;
	}
	sock_msg_done(q, r, s, len, seg, pairs, h);
	if (r->nspec + r->nsegs > 1)
		q->st.gro_reads++;
	q->slot_frames[s] = r->nspec + r->nsegs;
	/* The pairs' headers; every direct frame goes out in this call, or
	 * is copied to its stash now. */
	for (k = 0; k < r->nspec; k++) {
		uint8_t *sh = sock_side(q, h + k);

		if (k == 0)
			engine_synth_hdr(sh, src, sport, dst, q->lport,
			    q->rd_hlen + q->rd_plen);
		else
			memcpy(sh, sock_side(q, h), ENGINE_SYNTH_HDR_LEN);
		if (*nfr + k < max)
			r->ndirect++;
		else
			memcpy(sock_stash(q, r, k), q->pl->dst[h + k],
			    q->rd_plen);
	}
	q->st.direct += r->ndirect;
	*nfr += r->nspec + r->nsegs;
	/* The full-size segments in the slot share the header written in
	 * front of them; a shorter last one gets the slot's side one. */
	base = sock_slot(q, s);
	if (r->nsegs > 0)
		engine_synth_hdr(base, src, sport, dst, q->lport, r->seg);
	if (r->nsegs > 1 && r->len % r->seg != 0)
		engine_synth_hdr(q->side_hdr[s], src, sport, dst, q->lport,
		    r->len % r->seg);
	q->rd_n++;
	return r->nspec;
}

/* recvmmsg without waiting: messages, 0 when none was waiting, or a
 * negative errno. */
static int
sock_recv(struct sock_rxq *q, struct mmsghdr *msgs, uint32_t vlen)
{
	int n = recvmmsg(q->fd, msgs, vlen, MSG_DONTWAIT | MSG_WAITFORONE,
	    NULL);

	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return 0;
		q->st.errors++;
		return -errno;
	}
	return n;
}

/*
 * Non-blocking receive into the free slots: one recvmmsg, or with
 * direct placement of multi-datagram reads one message per call while
 * the hint lasts. Returns the number of messages (0 when none was
 * waiting) or a negative errno; fills rd[].
 */
static int
sock_read(struct sock_rxq *q, unsigned max)
{
	uint32_t i, vlen, free_slots, g, pairs, h = 0, iov_used = 0, nfr = 0;
	uint32_t est;
	int n = 0, rc;

	free_slots = q->nslots - q->nheld;
	vlen = free_slots < q->vmax ? free_slots : q->vmax;
	if (vlen > max)
		vlen = max;
	if (vlen == 0)
		return -ENOBUFS;
	q->rd_n = 0;
	q->rd_next = 0;
	q->rd_seg = 0;
	if ((g = sock_pairs_max(q)) > 0) {
		q->rd_hlen = q->pl->payload_off - ENGINE_SYNTH_HDR_LEN;
		q->rd_plen = q->pl->payload_len;
	}
	i = 0;
	if (g > 1 && q->sp_multi) {
		/* After the first message, only one whose read (as large as
		 * the largest of the last call) fits both the hint and the
		 * call: the datagrams of one that does not would land out
		 * of place, and wait in the socket instead. */
		est = q->sp_est < g ? q->sp_est : g;
		q->sp_est = 1;
		for (; i < vlen && h < q->pl->n && nfr < max &&
		    (i == 0 || (h + est <= q->pl->n && nfr + est <= max));
		    i++) {
			pairs = q->pl->n - h < g ? q->pl->n - h : g;
			iov_used = 0;
			sock_msg_init(q, i, q->head, pairs, h, &iov_used);
			if ((rc = sock_recv(q, &q->msgs[i], 1)) <= 0) {
				q->last_full = false;
				if (i == 0)
					return rc;
				goto out;
			}
			h += sock_take(q, i, pairs, h, &nfr, max);
			n++;
		}
		if (h < q->pl->n || i == vlen || nfr >= max) {
			q->last_full = true;
			goto out;
		}
		g = 0;		/* hint used up: the rest as ever */
	}
	/* one call: a pair per message while the hint lasts (from i on:
	 * what the loop above left) */
	for (uint32_t m = i; m < vlen; m++)
		sock_msg_init(q, m, (q->head + m - i) % q->nslots,
		    g > 0 && m < q->pl->n ? 1 : 0, m, &iov_used);
	if ((rc = sock_recv(q, q->msgs + i, vlen - i)) <= 0) {
		if (n == 0)
			return rc;
		q->last_full = false;
		goto out;
	}
	q->last_full = (uint32_t)rc == vlen - i;
	for (uint32_t m = i; m < i + (uint32_t)rc; m++)
		(void)sock_take(q, m, g > 0 && m < q->pl->n ? 1 : 0, m, &nfr,
		    max);
	n += rc;
out:
	q->rd_ns = sock_now_ns();
	if (q->rd_n > 0)
		q->st.bursts++;
	sock_reclaim(q);
	return n;
}

/* Hand out up to max frames of the last read. */
static unsigned
sock_emit(struct sock_rxq *q, struct rx_frame *f, unsigned max)
{
	unsigned n = 0;

	while (n < max && q->rd_next < q->rd_n) {
		const struct sock_read *r = &q->rd[q->rd_next];
		const uint8_t *base = sock_slot(q, r->slot);
		uint32_t e = q->rd_seg, off, len;

		if (e < r->nspec) {
			f[n].hdr = sock_side(q, r->hint + e);
			f[n].hdr_len = ENGINE_SYNTH_HDR_LEN + q->rd_hlen;
			f[n].payload_len = q->rd_plen;
			if (e < r->ndirect) {
				f[n].payload = q->pl->dst[r->hint + e];
				f[n].stash = sock_stash(q, r, e);
			} else {
				f[n].payload = sock_stash(q, r, e);
				f[n].stash = NULL;
			}
			len = q->rd_hlen + q->rd_plen;
		} else {
			off = (e - r->nspec) * r->seg;
			len = r->len - off < r->seg ? r->len - off : r->seg;
			f[n].hdr = len == r->seg ? base : q->side_hdr[r->slot];
			f[n].hdr_len = ENGINE_SYNTH_HDR_LEN;
			f[n].payload = base + ENGINE_SYNTH_HDR_LEN + off;
			f[n].payload_len = len;
			f[n].stash = NULL;
		}
		f[n].rx_ns = q->rd_ns;
		f[n].flags = 0;
		q->st.rx_bytes += ENGINE_SYNTH_HDR_LEN + len;
		n++;
		if (++q->rd_seg >= r->nspec + r->nsegs) {
			q->rd_seg = 0;
			q->rd_next++;
		}
	}
	q->st.rx_packets += n;
	q->nout += n;
	return n;
}

/* Sleep until the socket or the wake fd is readable or the timeout ends:
 * 1 = socket readable, 0 = not (timeout, wake-up, signal), < 0 = error. */
static int
sock_wait(struct sock_rxq *q, int64_t timeout_ns)
{
	struct pollfd pfd[2];
	struct timespec ts;
	nfds_t n = 1;
	int r;

	pfd[0].fd = q->fd;
	pfd[0].events = POLLIN;
	pfd[0].revents = 0;
	if (q->wake_fd >= 0) {
		pfd[1].fd = q->wake_fd;
		pfd[1].events = POLLIN;
		pfd[1].revents = 0;
		n = 2;
	}
	ts.tv_sec = timeout_ns / 1000000000;
	ts.tv_nsec = timeout_ns % 1000000000;
	r = ppoll(pfd, n, timeout_ns < 0 ? NULL : &ts, NULL);
	if (r < 0) {
		if (errno == EINTR)
			return 0;
		q->st.errors++;
		return -errno;
	}
	return (pfd[0].revents & (POLLIN | POLLERR)) != 0;
}

static bool
sock_woken(const struct sock_rxq *q)
{
	struct pollfd p = { .fd = q->wake_fd, .events = POLLIN };

	return q->wake_fd >= 0 && poll(&p, 1, 0) == 1;
}

static int
sock_rx_wait_burst(struct sock_rxq *q, struct rx_frame *f, unsigned max,
		   int64_t timeout_ns)
{
	uint64_t deadline;
	unsigned spins;
	int r;

	if (max == 0)
		return 0;
	if (max > ENGINE_MAX_BURST)
		max = ENGINE_MAX_BURST;
	if (q->rd_next < q->rd_n)
		return (int)sock_emit(q, f, max);
	sock_reclaim(q);
	if (q->nheld == q->nslots)
		return -ENOBUFS;

	if (q->mode == ENGINE_RX_BUSY_POLL) {
		deadline = timeout_ns < 0 ? UINT64_MAX :
		    sock_now_ns() + (uint64_t)timeout_ns;
		for (spins = 1;; spins++) {
			/* a read of nothing but truncated datagrams: go on */
			if ((r = sock_read(q, max)) < 0 || q->rd_n > 0)
				break;
			if (timeout_ns == 0 || sock_now_ns() >= deadline)
				return 0;
			if (spins % ENGINE_BUSY_WAKE_SPINS == 0 && sock_woken(q))
				return 0;
		}
	} else {
		deadline = timeout_ns <= 0 ? 0 :
		    sock_now_ns() + (uint64_t)timeout_ns;
		/* Under load the socket is rarely empty: skip the poll. */
		if (q->last_full || timeout_ns == 0) {
			r = sock_read(q, max);
			if (r < 0 || q->rd_n > 0 || timeout_ns == 0)
				goto out;
		}
		for (;;) {
			int64_t left = -1;

			if (timeout_ns > 0) {
				uint64_t now = sock_now_ns();

				if (now >= deadline)
					return 0;
				left = (int64_t)(deadline - now);
			}
			if ((r = sock_wait(q, left)) <= 0)
				return r;
			/* a read of nothing but truncated datagrams: go on */
			if ((r = sock_read(q, max)) < 0 || q->rd_n > 0)
				break;
		}
	}
out:
	if (r < 0)
		return r;
	return (int)sock_emit(q, f, max);
}

static int
sock_rx_burst(struct engine_rxq *rq, struct rx_frame *f, unsigned max,
	      int64_t timeout_ns)
{
	struct sock_rxq *q = (struct sock_rxq *)rq;
	int n = sock_rx_wait_burst(q, f, max, timeout_ns);

	q->pl = NULL;		/* a hint is for one call */
	return n;
}

static void
sock_set_place(struct engine_rxq *rq, const struct rx_place *pl)
{
	((struct sock_rxq *)rq)->pl = pl;
}

static void
sock_release(struct engine_rxq *rq, unsigned n)
{
	struct sock_rxq *q = (struct sock_rxq *)rq;
	uint32_t take;

	if (n > q->nout)
		n = q->nout;
	q->nout -= n;
	while (n > 0 && q->nheld > 0) {
		uint32_t *c = &q->slot_frames[q->tail];

		take = *c < n ? *c : n;
		*c -= take;
		n -= take;
		sock_reclaim(q);
	}
}

static int
sock_stats(struct engine_rxq *rq, struct engine_stats *out)
{
	struct sock_rxq *q = (struct sock_rxq *)rq;
	uint32_t mi[ENGINE_SK_MEMINFO_VARS];
	socklen_t len = sizeof(mi);

	/* SO_RXQ_OVFL only tells with the next datagram; the socket's own
	 * drop counter is current. */
	if (getsockopt(q->fd, SOL_SOCKET, SO_MEMINFO, mi, &len) == 0 &&
	    len > ENGINE_SK_MEMINFO_DROPS * sizeof(uint32_t))
		sock_drops_seen(q, mi[ENGINE_SK_MEMINFO_DROPS]);
	*out = q->st;
	return 0;
}

static void
sock_set_wake_fd(struct engine_rxq *rq, int fd)
{
	((struct sock_rxq *)rq)->wake_fd = fd;
}

/* Readable when a read would find datagrams (a GRO read's rest is
 * emitted first: then none, it must not sleep); busy-poll spins. */
static int
sock_rxq_fd(struct engine_rxq *rq)
{
	struct sock_rxq *q = (struct sock_rxq *)rq;

	if (q->mode == ENGINE_RX_BUSY_POLL || q->rd_next < q->rd_n)
		return -1;
	return q->fd;
}

static struct engine_rxq *
sock_rxq(struct engine *e, int qi)
{
	struct sock_engine *se = (struct sock_engine *)e;

	if (se == NULL || qi < 0 || qi >= se->nq)
		return NULL;
	return &se->q[qi]->base;
}

static int
sock_start(struct engine *e)
{
	/* The sockets were bound in init and the kernel queues datagrams
	 * from then on; nothing to switch on. */
	return 0;
}

/*
 * Several queues share one address through SO_REUSEPORT, and the kernel
 * would spread the datagrams by hash: the flows' program (steer_cbpf.c)
 * on the group picks each one's queue instead. Socket i of the group is
 * rx queue i (bound in that order in init).
 */
static int
sock_steer(struct engine *e, const struct flow_table *t, char *why,
	   size_t whylen)
{
	struct sock_engine *se = (struct sock_engine *)e;
	static struct sock_filter prog[STEER_CBPF_MAX];	/* main thread */
	uint32_t ids[CFG_MAX_QUEUES];
	struct sock_fprog fp;
	int n;

	if (se->nq <= 1)
		return 0;
	for (int i = 0; i < se->nq; i++)
		ids[i] = se->q[i]->base.queue_id;
	n = steer_cbpf_build(t, ids, se->nq, prog, STEER_CBPF_MAX);
	if (n < 0) {
		/* the program of the old table must not steer the new one */
		(void)setsockopt(se->q[0]->fd, SOL_SOCKET,
		    SO_DETACH_REUSEPORT_BPF, &n, sizeof(n));
		snprintf(why, whylen, "its %u flows make a program longer "
		    "than the kernel's %d instructions", t->nrules,
		    STEER_CBPF_MAX);
		return n;
	}
	fp.len = (unsigned short)n;
	fp.filter = prog;
	if (setsockopt(se->q[0]->fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &fp,
	    sizeof(fp)) != 0) {
		int rc = -errno;

		snprintf(why, whylen, "SO_ATTACH_REUSEPORT_CBPF: %s",
		    strerror(errno));
		return rc;
	}
	return 0;
}

/*
 * Size the receive buffer; warn once per engine when the kernel gives less
 * than asked (SO_RCVBUFFORCE needs CAP_NET_ADMIN).
 */
static void
sock_rcvbuf(struct sock_engine *se, int fd, uint64_t want, bool *warned)
{
	int v = want > INT_MAX / 2 ? INT_MAX / 2 : (int)want, got = 0;
	socklen_t len = sizeof(got);

	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)) == -1)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &got, &len) == -1)
		return;
	/* the kernel reports twice what it accounts against the limit */
	if ((uint64_t)got / 2 < (uint64_t)v && !*warned) {
		log_warnx("interface '%s': socket receive buffer is %d bytes, "
		    "asked for %d: the kernel caps it at net.core.rmem_max "
		    "(raise it with 'sysctl -w net.core.rmem_max=%d')",
		    se->name, got / 2, v, v);
		*warned = true;
	}
}

static int
sock_setopt(int fd, int level, int name, int v)
{
	return setsockopt(fd, level, name, &v, sizeof(v));
}

/* Give queue qi its slots: its share of its data region, or private
 * memory. */
static int
sock_carve(struct sock_engine *se, struct sock_rxq *q, const struct cfg *c,
	   const struct cfg_interface *ifc, int qi, struct mem_region *regions,
	   const struct engine_opts *o, char *err, size_t errlen)
{
	const struct cfg_queue *cq = &ifc->rx.queues[qi];
	uint64_t buf_size, need, per;
	uint32_t nbufs, first = 0;
	uint8_t *base;
	int i, ridx, users = 0, me = 0;

	if (cq->nregions > 0) {
		const struct mem_region *m;

		ridx = cq->region_idx[cq->nregions - 1];
		if (regions == NULL || ridx < 0 || ridx >= c->nregions) {
			log_seterr(err, errlen, "interface '%s': queue '%s': "
			    "no memory region %d", se->name, cq->name, ridx);
			return -EINVAL;
		}
		m = &regions[ridx];
		if (!mem_host_visible(m)) {
			log_seterr(err, errlen, "interface '%s': queue '%s': "
			    "memory region '%s' is not host memory; the socket "
			    "engine needs host, huge or host_pinned", se->name,
			    cq->name, m->name);
			return -EINVAL;
		}
		/* Queues of this interface sharing a region split it. */
		for (i = 0; i < ifc->rx.nqueues; i++) {
			const struct cfg_queue *o2 = &ifc->rx.queues[i];

			if (o2->nregions > 0 &&
			    o2->region_idx[o2->nregions - 1] == ridx) {
				if (i == qi)
					me = users;
				users++;
			}
		}
		nbufs = m->nbufs / (uint32_t)users;
		first = (uint32_t)me * nbufs;
		buf_size = m->buf_size;
		base = mem_buf(m, first);
	} else {
		buf_size = ENGINE_SYNTH_HDR_LEN + (ifc->socket.max_payload_size ?
		    ifc->socket.max_payload_size : ENGINE_UDP_MAX_PAYLOAD);
		buf_size = (buf_size + ENGINE_CACHE_LINE - 1) /
		    ENGINE_CACHE_LINE * ENGINE_CACHE_LINE;
		nbufs = ENGINE_PRIVATE_NBUFS;
		q->private_len = (size_t)(buf_size * nbufs);
		q->private_mem = mmap(NULL, q->private_len,
		    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (q->private_mem == MAP_FAILED) {
			q->private_mem = NULL;
			log_seterr(err, errlen, "interface '%s': queue '%s': "
			    "%zu bytes of buffers: %s", se->name, cq->name,
			    q->private_len, strerror(errno));
			return -ENOMEM;
		}
		base = q->private_mem;
	}
	if (nbufs == 0 || buf_size <= ENGINE_SYNTH_HDR_LEN) {
		log_seterr(err, errlen, "interface '%s': queue '%s': needs "
		    "buffers of more than %d bytes (the synthetic header) and "
		    "at least one per queue", se->name, cq->name,
		    ENGINE_SYNTH_HDR_LEN);
		return -EINVAL;
	}
	q->arena = base;
	q->slot_size = buf_size;
	q->nslots = nbufs;
	need = ENGINE_SYNTH_HDR_LEN + ENGINE_UDP_MAX_PAYLOAD;
	per = (need + buf_size - 1) / buf_size;
	if (!o->no_gro) {
		if (nbufs / per >= ENGINE_GRO_MIN_SLOTS) {
			q->gro = true;
			q->slot_size = per * buf_size;
			q->nslots = (uint32_t)(nbufs / per);
		} else
			log_info("interface '%s': queue '%s': UDP_GRO off: %u "
			    "buffers of %llu bytes make fewer than %d reads of "
			    "%llu bytes", se->name, cq->name, nbufs,
			    (unsigned long long)buf_size, ENGINE_GRO_MIN_SLOTS,
			    (unsigned long long)need);
	}
	if (ifc->socket.max_payload_size > q->slot_size - ENGINE_SYNTH_HDR_LEN)
		log_warnx("interface '%s': queue '%s': buffers of %llu bytes "
		    "hold datagrams of up to %llu bytes, max_payload_size is "
		    "%u: longer ones are dropped as truncated", se->name,
		    cq->name, (unsigned long long)buf_size,
		    (unsigned long long)(q->slot_size - ENGINE_SYNTH_HDR_LEN),
		    ifc->socket.max_payload_size);
	return 0;
}

/* What to do about a failed bind of the receive socket. */
static const char *
bind_hint(int neg_errno)
{
	switch (neg_errno) {
	case -EADDRINUSE:
		return " (another process receives on it, perhaps another "
		    "daqirid: 'ss -ulpn' names it; stop it, or change "
		    "socket_config.local_addr)";
	case -EADDRNOTAVAIL:
		return " (no interface of this machine has that address: "
		    "'ip -br addr' lists them; change socket_config.local_addr)";
	case -EACCES:
		return " (ports below 1024 need CAP_NET_BIND_SERVICE; use a "
		    "higher port)";
	default:
		return "";
	}
}

static int
sock_queue_init(struct sock_engine *se, const struct cfg *c,
		const struct cfg_interface *ifc, int qi, struct mem_region *regions,
		const struct engine_opts *o, bool *rcvbuf_warned, char *err,
		size_t errlen)
{
	const struct cfg_queue *cq = &ifc->rx.queues[qi];
	struct sock_rxq *q;
	struct sockaddr_in sa;
	socklen_t salen = sizeof(sa);
	uint64_t rcvbuf;
	int rc;

	q = aligned_alloc(ENGINE_CACHE_LINE, sizeof(*q));
	if (q == NULL)
		return -ENOMEM;
	memset(q, 0, sizeof(*q));
	q->base.engine = &se->base;
	q->base.qi = qi;
	q->base.queue_id = cq->id;
	q->fd = -1;
	q->wake_fd = -1;
	q->mode = o->rx_mode;
	se->q[qi] = q;
	se->nq = qi + 1;

	if ((rc = sock_carve(se, q, c, ifc, qi, regions, o, err, errlen)) < 0)
		return rc;
	q->vmax = q->nslots < ENGINE_MAX_BURST ? q->nslots : ENGINE_MAX_BURST;
	q->slot_frames = calloc(q->nslots, sizeof(*q->slot_frames));
	q->side_hdr = calloc(q->nslots, sizeof(*q->side_hdr));
	q->rd = calloc(q->vmax, sizeof(*q->rd));
	q->msgs = calloc(q->vmax, sizeof(*q->msgs));
	q->iov = calloc(q->vmax, sizeof(*q->iov));
	q->peer = calloc(q->vmax, sizeof(*q->peer));
	q->cmsg = calloc(q->vmax, ENGINE_CMSG_SPACE);
	q->sp_side = malloc((size_t)ENGINE_MAX_BURST * ENGINE_SP_HDR_MAX);
	q->sp_iov = calloc(2 * ENGINE_MAX_BURST + q->vmax, sizeof(*q->sp_iov));
	q->sp_est = 1;
	if (!q->slot_frames || !q->side_hdr || !q->rd || !q->msgs || !q->iov ||
	    !q->peer || !q->cmsg || !q->sp_side || !q->sp_iov)
		return -ENOMEM;

	q->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (q->fd == -1) {
		rc = -errno;
		log_seterr(err, errlen, "interface '%s': queue '%s': "
		    "socket: %s", se->name, cq->name, strerror(errno));
		return rc;
	}
	/* Several queues on one address: the kernel spreads the flows. */
	if (ifc->rx.nqueues > 1 && sock_setopt(q->fd, SOL_SOCKET,
	    SO_REUSEPORT, 1) == -1)
		log_warn("interface '%s': SO_REUSEPORT", se->name);
	if (sock_setopt(q->fd, SOL_SOCKET, SO_RXQ_OVFL, 1) == -1)
		log_warn("interface '%s': SO_RXQ_OVFL (drops for reason "
		    "'kernel' go uncounted)",
		    se->name);
	if (q->gro && sock_setopt(q->fd, SOL_UDP, UDP_GRO, 1) == -1) {
		log_warn("interface '%s': UDP_GRO", se->name);
		q->gro = false;
	}
	if (se->addr == INADDR_ANY) {
		q->pktinfo = sock_setopt(q->fd, IPPROTO_IP, IP_PKTINFO, 1) == 0;
		if (!q->pktinfo)
			log_warn("interface '%s': IP_PKTINFO", se->name);
	}
	rcvbuf = o->rcvbuf_bytes;
	if (rcvbuf == 0) {
		rcvbuf = q->slot_size * q->nslots;
		if (rcvbuf < ENGINE_RCVBUF_MIN)
			rcvbuf = ENGINE_RCVBUF_MIN;
	}
	sock_rcvbuf(se, q->fd, rcvbuf, rcvbuf_warned);

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(se->addr);
	sa.sin_port = htons(se->port);
	if (bind(q->fd, (struct sockaddr *)&sa, sizeof(sa)) == -1) {
		rc = -errno;
		log_seterr(err, errlen, "interface '%s': queue '%s': bind "
		    "udp://%s:%u: %s%s", se->name, cq->name,
		    inet_ntoa(sa.sin_addr), se->port, strerror(errno),
		    bind_hint(rc));
		return rc;
	}
	if (getsockname(q->fd, (struct sockaddr *)&sa, &salen) == 0)
		se->port = ntohs(sa.sin_port);	/* the rest bind the same */
	q->laddr = se->addr;
	q->lport = se->port;
	log_debug("interface '%s': queue '%s': udp://%s:%u, %u reads of %llu "
	    "bytes%s, %s", se->name, cq->name, inet_ntoa(sa.sin_addr),
	    se->port, q->nslots, (unsigned long long)q->slot_size,
	    q->gro ? " (UDP_GRO)" : "",
	    q->mode == ENGINE_RX_BUSY_POLL ? "busy-poll" : "blocking");
	return 0;
}

static int
sock_init(struct engine **out, const struct cfg *c,
	  const struct cfg_interface *ifc, struct mem_region *regions,
	  const struct engine_opts *opts, char *err, size_t errlen)
{
	static const struct engine_opts defaults;
	const struct engine_opts *o = opts != NULL ? opts : &defaults;
	struct sock_engine *se;
	bool warned = false;
	int qi, rc;

	*out = NULL;
	if (!ifc->socket.present || !ifc->socket.local.set) {
		log_seterr(err, errlen, "interface '%s': the socket engine "
		    "needs socket_config.local_addr to receive", ifc->name);
		return -EINVAL;
	}
	if (ifc->socket.local.transport != CFG_TRANSPORT_UDP) {
		log_seterr(err, errlen, "interface '%s': the socket engine "
		    "receives udp:// only", ifc->name);
		return -ENOTSUP;
	}
	if (ifc->rx.nqueues < 0 || ifc->rx.nqueues > CFG_MAX_QUEUES ||
	    (ifc->rx.nqueues == 0 && (!ifc->has_tx || ifc->tx.nqueues <= 0))) {
		log_seterr(err, errlen, "interface '%s': no rx or tx queue",
		    ifc->name);
		return -EINVAL;
	}
	if (o->rx_mode >= ENGINE_RX_MODE_MAX) {
		log_seterr(err, errlen, "interface '%s': bad rx mode %d",
		    ifc->name, (int)o->rx_mode);
		return -EINVAL;
	}
	if ((se = calloc(1, sizeof(*se))) == NULL)
		return -ENOMEM;
	se->base.ops = &engine_socket_ops;
	snprintf(se->name, sizeof(se->name), "%s", ifc->name);
	se->addr = ifc->socket.local.addr;
	se->port = ifc->socket.local.port;
	for (qi = 0; qi < ifc->rx.nqueues; qi++) {
		rc = sock_queue_init(se, c, ifc, qi, regions, o, &warned, err,
		    errlen);
		if (rc < 0) {
			if (rc == -ENOMEM && err != NULL && errlen > 0 &&
			    err[0] == '\0')
				log_seterr(err, errlen, "interface '%s': out "
				    "of memory", ifc->name);
			sock_fini(&se->base);
			return rc;
		}
	}
	if (ifc->has_tx && (rc = sock_tx_init(se, c, ifc, err, errlen)) < 0) {
		sock_fini(&se->base);
		return rc;
	}
	*out = &se->base;
	return 0;
}

static void
sock_fini(struct engine *e)
{
	struct sock_engine *se = (struct sock_engine *)e;
	int i;

	if (se == NULL)
		return;
	for (i = 0; i < se->nq; i++) {
		struct sock_rxq *q = se->q[i];

		if (q == NULL)
			continue;
		if (q->fd >= 0)
			close(q->fd);
		if (q->private_mem != NULL)
			munmap(q->private_mem, q->private_len);
		free(q->slot_frames);
		free(q->side_hdr);
		free(q->rd);
		free(q->msgs);
		free(q->iov);
		free(q->peer);
		free(q->cmsg);
		free(q->sp_side);
		free(q->sp_iov);
		free(q);
	}
	sock_tx_fini(se);
	free(se);
}

int
sock_rx_fd(const struct sock_engine *se, int qi)
{
	if (qi < 0 || qi >= se->nq || se->q[qi] == NULL)
		return -1;
	return se->q[qi]->fd;
}

int
engine_socket_bound(const struct engine *e, uint32_t *addr, uint16_t *port)
{
	const struct sock_engine *se = (const struct sock_engine *)e;

	if (e == NULL || e->ops != &engine_socket_ops)
		return -EINVAL;
	*addr = se->addr;
	*port = se->port;
	return 0;
}

const struct engine_ops engine_socket_ops = {
	.name = "socket",
	.init = sock_init,
	.start = sock_start,
	.rxq = sock_rxq,
	.rx_burst = sock_rx_burst,
	.release = sock_release,
	.steer = sock_steer,
	.stats = sock_stats,
	.set_wake_fd = sock_set_wake_fd,
	.rx_fd = sock_rxq_fd,
	.set_place = sock_set_place,
	.tx = &engine_socket_tx_ops,
	.fini = sock_fini,
};
