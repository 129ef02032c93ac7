/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The replay engine: one pcap file per rx queue (libpcap, nanosecond
 * timestamps), its frames copied into the queue's own buffers and handed
 * to the worker as whole Ethernet frames, on the capture's clock.
 * init/start/fini and the control requests run on main, the rest on the
 * queue's worker.
 *
 * The clock. Each queue keeps a virtual clock, vnow, which its worker
 * takes as "now" (engine_ops.now_ns). rx_burst(timeout): with T the next
 * frame's timestamp, when T <= vnow + timeout (or the timeout is
 * negative) vnow becomes max(vnow, T) and the call returns the run of
 * consecutive frames stamped T (up to max): a live read's frames share
 * one rx_ns, so bursts replay as they were received. Otherwise the
 * timeout fired on the capture's clock: vnow advances by it and the call
 * returns 0. A frame's rx_ns is its timestamp (vnow when a file goes back
 * in time: the clock never does). After the end of the file vnow still
 * advances by each timeout, so batches still open time out as they would
 * have, but each call also sleeps up to REPLAY_NAP_NS of wall time (on
 * the wake fd), so the worker does not spin; a negative timeout waits on
 * the wake fd alone. With a speed, every step of vnow is also paced so
 * that capture time / speed follows wall time (no frame is ever
 * skipped). While the replay is held (--replay-hold) every call sleeps
 * and vnow stands still. Nothing here depends on when a call is made,
 * only on the timeouts the worker passes, which it computes from vnow:
 * so the worker's whole run is a function of the files.
 *
 * Buffers are carved as the engines carve them: the queue's share of its
 * region (one region: whole frames, the header part up to the UDP
 * payload, the payload part the rest; two: the first holds the first
 * buf_size bytes, the second the rest, as header-data split does), or
 * private memory for a queue without one. A device region is written by
 * cudaMemcpy (one wait per frame), then the frame is handed as the DPDK
 * engine hands frames whole in device memory; the worker shadows their
 * headers. A frame longer than its buffer, or captured shorter than it
 * was on the wire, is counted truncated and not handed out.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <pcap/pcap.h>

#include "engine_replay.h"
#include "geometry.h"
#include "gpu.h"
#include "log.h"

/* A queue without a memory region gets this much private memory. */
#define REPLAY_PRIVATE_NBUFS	256
#define REPLAY_CACHE_LINE	64

struct rp_engine;

/* A queue; cache-aligned, touched only by its worker after start, except
 * the pub_* fields (relaxed atomics main reads for status). */
struct rp_rxq {
	struct engine_rxq base;
	struct rp_engine *re;
	char name[REPLAY_QUEUE_NAME_MAX];
	const char *path;		/* NULL: no file, nothing arrives */
	pcap_t *pc;
	int wake_fd;

	/* the next frame, read ahead (valid until the next read) */
	bool have_next;
	struct pcap_pkthdr *nh;
	const uint8_t *nd;
	uint64_t next_ns;
	bool read_warned;

	uint64_t vnow;			/* the virtual clock */
	bool paced;			/* wall0/virt0 set */
	uint64_t wall0, virt0;

	/* Buffers: slot i's header part at hdr_base + i * hdr_stride, its
	 * payload part (split) at data_base + i * data_stride. Slots are
	 * handed out and released in ring order from tail. */
	uint8_t *hdr_base;
	uint64_t hdr_stride;
	uint32_t hdr_cap;		/* bytes a header part (or frame) holds */
	uint8_t *data_base;		/* split only */
	uint64_t data_stride;
	uint32_t data_cap;
	bool split;
	bool dev;			/* the frame (or its payload part) goes
					 * to device memory */
	bool dev_warned;
	int gpu;
	void *stream;			/* gpu_stream_create(), lazily */
	uint32_t nslots, tail, nout;
	void *private_mem;
	size_t private_len;

	struct engine_stats st;
	_Atomic uint64_t pub_frames;
	_Atomic uint64_t pub_vnow;
	_Atomic bool pub_done;
} __attribute__((aligned(REPLAY_CACHE_LINE)));

struct rp_engine {
	struct engine base;
	char name[CFG_NAME_MAX];
	double speed;			/* 0 = max */
	_Atomic bool running;		/* not held (main stores, workers load) */
	int nq;
	struct rp_rxq *q[CFG_MAX_QUEUES];
};

static void rp_fini(struct engine *e);

static uint64_t
rp_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- options and checks ------------------------------------------------- */

int
replay_cfg_add(struct replay_cfg *rc, const char *arg, char *err,
	       size_t errlen)
{
	const char *eq = strchr(arg, '='), *slash = strchr(arg, '/');
	size_t qlen;

	if (eq == NULL || slash == NULL || slash > eq || slash == arg ||
	    slash + 1 == eq || eq[1] == '\0') {
		snprintf(err, errlen, "--replay '%s': expected "
		    "INTERFACE/QUEUE=FILE.pcap (queue names as in the config, "
		    "e.g. sensor0/q0=capture.pcap)", arg);
		return -1;
	}
	qlen = (size_t)(eq - arg);
	if (qlen >= REPLAY_QUEUE_NAME_MAX) {
		snprintf(err, errlen, "--replay '%s': queue name too long",
		    arg);
		return -1;
	}
	for (int i = 0; i < rc->nfiles; i++)
		if (strlen(rc->files[i].queue) == qlen &&
		    strncmp(rc->files[i].queue, arg, qlen) == 0) {
			snprintf(err, errlen, "--replay: queue '%.*s' is given "
			    "twice (one file per rx queue)", (int)qlen, arg);
			return -1;
		}
	if (rc->nfiles >= REPLAY_MAX_FILES) {
		snprintf(err, errlen, "--replay: more than %d files",
		    REPLAY_MAX_FILES);
		return -1;
	}
	memcpy(rc->files[rc->nfiles].queue, arg, qlen);
	rc->files[rc->nfiles].queue[qlen] = '\0';
	rc->files[rc->nfiles].path = eq + 1;
	rc->nfiles++;
	return 0;
}

int
replay_cfg_speed(struct replay_cfg *rc, const char *arg, char *err,
		 size_t errlen)
{
	char *end;
	double v;

	if (strcmp(arg, "max") == 0) {
		rc->speed = 0;
		return 0;
	}
	errno = 0;
	v = strtod(arg, &end);
	if (end == arg || *end != '\0' || errno != 0 || !isfinite(v) ||
	    v <= 0 || v > REPLAY_SPEED_MAX) {
		snprintf(err, errlen, "--replay-speed '%s': expected a real-time "
		    "multiple above 0 and at most %g (1 = as captured, 2 = "
		    "twice as fast), or max (as fast as possible)", arg,
		    REPLAY_SPEED_MAX);
		return -1;
	}
	rc->speed = v;
	return 0;
}

/* Open path as a nanosecond capture (fd O_CLOEXEC); NULL with the
 * reason in err, saying what to do. */
static pcap_t *
rp_open(const char *path, char *err, size_t errlen)
{
	char pe[PCAP_ERRBUF_SIZE] = "";
	pcap_t *pc;
	FILE *fp;
	int dlt;

	if ((fp = fopen(path, "rbe")) == NULL) {
		snprintf(err, errlen, "replay file '%s': %s (give the path of "
		    "a pcap capture, e.g. from daqirictl capture or tcpdump "
		    "-w)", path, strerror(errno));
		return NULL;
	}
	pc = pcap_fopen_offline_with_tstamp_precision(fp,
	    PCAP_TSTAMP_PRECISION_NANO, pe);
	if (pc == NULL) {
		fclose(fp);
		snprintf(err, errlen, "replay file '%s': not a capture libpcap "
		    "reads: %s (write pcap, e.g. tcpdump -w, or convert with "
		    "editcap -F pcap)", path, pe);
		return NULL;
	}
	if ((dlt = pcap_datalink(pc)) != DLT_EN10MB) {
		const char *n = pcap_datalink_val_to_name(dlt);

		snprintf(err, errlen, "replay file '%s': link type %s (%d), "
		    "not Ethernet (EN10MB): daqirid replays Ethernet frames; "
		    "capture on an Ethernet interface (not 'any', which "
		    "writes LINUX_SLL)", path, n != NULL ? n : "?", dlt);
		pcap_close(pc);
		return NULL;
	}
	return pc;
}

/* The rx queue "iface/queue" of c: 0 with *ii and *qi, or -1. */
static int
rp_find_queue(const struct cfg *c, const char *name, int *ii, int *qi)
{
	for (int i = 0; i < c->ninterfaces; i++) {
		const struct cfg_interface *ifc = &c->interfaces[i];
		size_t n = strlen(ifc->name);

		if (strncmp(name, ifc->name, n) != 0 || name[n] != '/')
			continue;
		for (int q = 0; q < ifc->rx.nqueues; q++)
			if (strcmp(name + n + 1, ifc->rx.queues[q].name) == 0) {
				*ii = i;
				*qi = q;
				return 0;
			}
	}
	return -1;
}

int
replay_check(const struct cfg *c, const struct replay_cfg *rc, FILE *out)
{
	char err[512];
	int bad = 0;

	for (int k = 0; k < rc->nfiles; k++) {
		const struct replay_file *f = &rc->files[k];
		pcap_t *pc;
		int ii, qi;

		if (rp_find_queue(c, f->queue, &ii, &qi) != 0) {
			char names[512] = "";
			size_t at = 0;

			for (int i = 0; i < c->ninterfaces; i++)
				for (int q = 0; q < c->interfaces[i].rx.nqueues &&
				    at < sizeof(names); q++)
					at += (size_t)snprintf(names + at,
					    sizeof(names) - at, "%s%s/%s",
					    at > 0 ? ", " : "",
					    c->interfaces[i].name,
					    c->interfaces[i].rx.queues[q].name);
			fprintf(out, "daqirid: --replay %s: no rx queue '%s' in "
			    "the configuration (its rx queues: %s)\n", f->queue,
			    f->queue, names[0] != '\0' ? names : "none");
			bad++;
		}
		if ((pc = rp_open(f->path, err, sizeof(err))) == NULL) {
			fprintf(out, "daqirid: --replay %s: %s\n", f->queue, err);
			bad++;
		} else
			pcap_close(pc);
	}
	return bad;
}

/* ---- frames ------------------------------------------------------------- */

uint32_t
replay_hdr_len(const uint8_t *p, uint32_t len)
{
	uint32_t off = 14, ihl;
	uint16_t et;

	if (len < off)
		return len;
	et = (uint16_t)(p[12] << 8 | p[13]);
	while ((et == 0x8100 || et == 0x88a8) && len >= off + 4) {
		et = (uint16_t)(p[off + 2] << 8 | p[off + 3]);
		off += 4;
	}
	if (et != 0x0800 || len < off + 20 || p[off] >> 4 != 4)
		return len;
	ihl = (uint32_t)(p[off] & 0x0f) * 4;
	/* UDP, and not a fragment after the first (no UDP header there) */
	if (ihl < 20 || p[off + 9] != 17 ||
	    ((p[off + 6] & 0x1f) << 8 | p[off + 7]) != 0)
		return len;
	off += ihl + 8;
	return off <= len ? off : len;
}

/* Read the next frame ahead; at the end (or an error) the file is done. */
static void
rp_read_next(struct rp_rxq *q)
{
	int r;

	q->have_next = false;
	if (q->pc == NULL)
		return;
	r = pcap_next_ex(q->pc, &q->nh, &q->nd);
	if (r == 1) {
		q->have_next = true;
		q->next_ns = (uint64_t)q->nh->ts.tv_sec * 1000000000u +
		    (uint64_t)q->nh->ts.tv_usec;	/* ns: nano precision */
		return;
	}
	if (r != PCAP_ERROR_BREAK && !q->read_warned) {
		q->st.errors++;
		log_warnx("queue '%s': replay file '%s': %s; the queue stops "
		    "receiving here", q->name, q->path, pcap_geterr(q->pc));
		q->read_warned = true;
	}
	atomic_store_explicit(&q->pub_done, true, memory_order_relaxed);
}

/* Copy len bytes from src to device memory dst (one wait). */
static int
rp_to_device(struct rp_rxq *q, void *dst, const void *src, size_t len)
{
	struct gpu_copy c = { .dst = dst, .src = src, .len = len };
	int rc = q->stream != NULL ? 0 : gpu_stream_create(q->gpu, &q->stream);

	if (rc == 0)
		rc = gpu_copy_to_device(q->gpu, q->stream, &c, 1);
	if (rc < 0 && !q->dev_warned) {
		log_warnx("queue '%s': copying replayed frames into device "
		    "memory: %s (counted in errors; not logged again)",
		    q->name, gpu_last_error());
		q->dev_warned = true;
	}
	return rc;
}

/* Land the frame read ahead in the next slot as f. false when it is not
 * handed out (truncated, a failed copy: counted). */
static bool
rp_land(struct rp_rxq *q, struct rx_frame *f)
{
	uint32_t len = q->nh->caplen, slot, h;
	uint8_t *hp, *dp;

	if (q->nh->caplen < q->nh->len || (!q->split && len > q->hdr_cap) ||
	    (q->split && len > q->hdr_cap + (uint64_t)q->data_cap)) {
		q->st.truncated++;
		return false;
	}
	slot = (q->tail + q->nout) % q->nslots;
	hp = q->hdr_base + (uint64_t)slot * q->hdr_stride;
	f->stash = NULL;
	f->flags = 0;
	if (!q->split) {
		if (q->dev) {
			if (rp_to_device(q, hp, q->nd, len) < 0) {
				q->st.errors++;
				return false;
			}
			/* whole in device memory: the worker shadows it */
			h = len;
		} else {
			memcpy(hp, q->nd, len);
			h = replay_hdr_len(hp, len);
		}
		f->hdr = hp;
		f->hdr_len = h;
		f->payload = hp + h;
		f->payload_len = len - h;
	} else {
		h = len < q->hdr_cap ? len : q->hdr_cap;
		dp = q->data_base + (uint64_t)slot * q->data_stride;
		memcpy(hp, q->nd, h);
		if (len > h) {
			if (q->dev) {
				if (rp_to_device(q, dp, q->nd + h, len - h) < 0) {
					q->st.errors++;
					return false;
				}
			} else
				memcpy(dp, q->nd + h, len - h);
		}
		f->hdr = hp;
		f->hdr_len = h;
		f->payload = dp;
		f->payload_len = len - h;
	}
	q->st.rx_bytes += len;
	q->nout++;
	return true;
}

/* Sleep up to ns of wall time (< 0: until woken), waking for the wake
 * fd. true when woken. */
static bool
rp_nap(struct rp_rxq *q, int64_t ns)
{
	struct pollfd p = { .fd = q->wake_fd, .events = POLLIN };
	struct timespec ts;

	if (ns == 0)
		return false;
	if (ns > 0) {
		ts.tv_sec = (time_t)(ns / 1000000000);
		ts.tv_nsec = (long)(ns % 1000000000);
	}
	if (q->wake_fd < 0) {
		if (ns < 0)
			ns = (int64_t)REPLAY_NAP_NS;
		ts.tv_sec = (time_t)(ns / 1000000000);
		ts.tv_nsec = (long)(ns % 1000000000);
		nanosleep(&ts, NULL);
		return false;
	}
	return ppoll(&p, 1, ns < 0 ? NULL : &ts, NULL) > 0;
}

/* With a speed: sleep until the wall time of virtual time v. true when
 * woken first (the caller then returns 0 with its clock unmoved). */
static bool
rp_pace(struct rp_rxq *q, uint64_t v)
{
	double speed = q->re->speed;
	uint64_t at, now;

	if (speed <= 0)
		return false;
	if (!q->paced) {
		q->paced = true;
		q->wall0 = rp_wall_ns();
		q->virt0 = q->vnow;
	}
	if (v <= q->virt0)
		return false;
	at = q->wall0 + (uint64_t)((double)(v - q->virt0) / speed);
	now = rp_wall_ns();
	return at > now && rp_nap(q, (int64_t)(at - now));
}

static int
rp_rx_burst(struct engine_rxq *rq, struct rx_frame *f, unsigned max,
	    int64_t timeout_ns)
{
	struct rp_rxq *q = (struct rp_rxq *)rq;
	unsigned n = 0;
	uint64_t t;

	if (!atomic_load_explicit(&q->re->running, memory_order_acquire)) {
		(void)rp_nap(q, timeout_ns >= 0 &&
		    (uint64_t)timeout_ns < REPLAY_NAP_NS ? timeout_ns :
		    (int64_t)REPLAY_NAP_NS);
		return 0;
	}
	if (!q->have_next) {
		/* the end: deadlines still come, in wall time too */
		if (timeout_ns < 0) {
			(void)rp_nap(q, -1);
			return 0;
		}
		if (q->re->speed > 0 ? rp_pace(q, q->vnow +
		    (uint64_t)timeout_ns) : rp_nap(q,
		    (uint64_t)timeout_ns < REPLAY_NAP_NS ? timeout_ns :
		    (int64_t)REPLAY_NAP_NS))
			return 0;
		q->vnow += (uint64_t)timeout_ns;
		atomic_store_explicit(&q->pub_vnow, q->vnow,
		    memory_order_relaxed);
		return 0;
	}
	t = q->next_ns;
	if (timeout_ns >= 0 && t > q->vnow + (uint64_t)timeout_ns) {
		/* a timeout fired on the capture's clock */
		if (rp_pace(q, q->vnow + (uint64_t)timeout_ns))
			return 0;
		q->vnow += (uint64_t)timeout_ns;
		atomic_store_explicit(&q->pub_vnow, q->vnow,
		    memory_order_relaxed);
		return 0;
	}
	if (t > q->vnow && rp_pace(q, t))
		return 0;
	if (q->nout == q->nslots)
		return -ENOBUFS;
	if (t > q->vnow)
		q->vnow = t;
	if (max > ENGINE_MAX_BURST)
		max = ENGINE_MAX_BURST;
	/* the run stamped t; a frame back in time takes the clock's now */
	while (n < max && q->have_next && q->nout < q->nslots &&
	    (q->next_ns == t || q->next_ns < q->vnow)) {
		if (rp_land(q, &f[n])) {
			f[n].rx_ns = q->vnow;
			n++;
		}
		rp_read_next(q);
	}
	q->st.rx_packets += n;
	if (n > 0)
		q->st.bursts++;
	atomic_store_explicit(&q->pub_frames, q->st.rx_packets,
	    memory_order_relaxed);
	atomic_store_explicit(&q->pub_vnow, q->vnow, memory_order_relaxed);
	return (int)n;
}

static uint64_t
rp_now_ns(struct engine_rxq *rq)
{
	return ((struct rp_rxq *)rq)->vnow;
}

static void
rp_release(struct engine_rxq *rq, unsigned n)
{
	struct rp_rxq *q = (struct rp_rxq *)rq;

	if (n > q->nout)
		n = q->nout;
	q->nout -= n;
	q->tail = (q->tail + n) % q->nslots;
}

static int
rp_stats(struct engine_rxq *rq, struct engine_stats *out)
{
	*out = ((struct rp_rxq *)rq)->st;
	return 0;
}

static void
rp_set_wake_fd(struct engine_rxq *rq, int fd)
{
	((struct rp_rxq *)rq)->wake_fd = fd;
}

static struct engine_rxq *
rp_rxq(struct engine *e, int qi)
{
	struct rp_engine *re = (struct rp_engine *)e;

	if (re == NULL || qi < 0 || qi >= re->nq)
		return NULL;
	return &re->q[qi]->base;
}

static int
rp_start(struct engine *e)
{
	return 0;
}

/* The files decide which queue a frame arrives at, as the capture
 * recorded it: there is nothing to steer (a frame of another queue's
 * flow is counted misrouted by the worker, as live). */
static int
rp_steer(struct engine *e, const struct flow_table *t, char *why,
	 size_t whylen)
{
	return 0;
}

/* ---- set-up ------------------------------------------------------------- */

/* Region ridx's share for queue qi (geom_region_share(), as the DPDK
 * engine shares it): its first buffer's frame bytes
 * (host or device view, past the headroom), stride, bytes and count. */
static int
rp_region(struct rp_rxq *q, const struct cfg *c,
	  const struct cfg_interface *ifc, int qi, struct mem_region *regions,
	  int ridx, uint8_t **base, uint64_t *stride, uint32_t *cap,
	  uint32_t *nbufs, char *err, size_t errlen)
{
	const struct cfg_region *cr = &c->regions[ridx];
	struct mem_region *m = &regions[ridx];
	uint32_t users, me;
	uint8_t *b;

	geom_region_share(c, ifc, qi, ridx, &users, &me);
	*nbufs = m->nbufs / users;
	b = mem_host_visible(m) ? mem_buf(m, me * *nbufs) :
	    mem_dev_buf(m, me * *nbufs);
	if (b == NULL || *nbufs == 0) {
		log_seterr(err, errlen, "interface '%s': queue '%s': memory "
		    "region '%s' has no buffer for it (%u buffers, %u queues)",
		    ifc->name, ifc->rx.queues[qi].name, m->name, m->nbufs,
		    users);
		return -EINVAL;
	}
	*base = b + cr->headroom;
	*stride = m->buf_size;
	*cap = cr->buf_size > UINT32_MAX ? UINT32_MAX : (uint32_t)cr->buf_size;
	return 0;
}

static int
rp_carve(struct rp_rxq *q, const struct cfg *c,
	 const struct cfg_interface *ifc, int qi, struct mem_region *regions,
	 char *err, size_t errlen)
{
	const struct cfg_queue *cq = &ifc->rx.queues[qi];
	uint32_t n0, n1;
	int rc, r0, r1;

	if (cq->nregions == 0) {
		uint64_t bs = ENGINE_SYNTH_HDR_LEN +
		    (ifc->socket.max_payload_size ?
		    ifc->socket.max_payload_size : ENGINE_UDP_MAX_PAYLOAD);

		bs = (bs + REPLAY_CACHE_LINE - 1) / REPLAY_CACHE_LINE *
		    REPLAY_CACHE_LINE;
		q->private_len = (size_t)(bs * REPLAY_PRIVATE_NBUFS);
		q->private_mem = mmap(NULL, q->private_len,
		    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (q->private_mem == MAP_FAILED) {
			q->private_mem = NULL;
			log_seterr(err, errlen, "interface '%s': queue '%s': "
			    "%zu bytes of buffers: %s", ifc->name, cq->name,
			    q->private_len, strerror(errno));
			return -ENOMEM;
		}
		q->hdr_base = q->private_mem;
		q->hdr_stride = bs;
		q->hdr_cap = (uint32_t)bs;
		q->nslots = REPLAY_PRIVATE_NBUFS;
		return 0;
	}
	r0 = cq->region_idx[0];
	if ((rc = rp_region(q, c, ifc, qi, regions, r0, &q->hdr_base,
	    &q->hdr_stride, &q->hdr_cap, &n0, err, errlen)) != 0)
		return rc;
	q->nslots = n0;
	if (cq->nregions == 1) {
		q->dev = !mem_host_visible(&regions[r0]);
		q->gpu = regions[r0].affinity;
		return 0;
	}
	r1 = cq->region_idx[cq->nregions - 1];
	if (!mem_host_visible(&regions[r0])) {
		log_seterr(err, errlen, "interface '%s': queue '%s': its first "
		    "region '%s' (the headers) must be host memory",
		    ifc->name, cq->name, regions[r0].name);
		return -EINVAL;
	}
	if ((rc = rp_region(q, c, ifc, qi, regions, r1, &q->data_base,
	    &q->data_stride, &q->data_cap, &n1, err, errlen)) != 0)
		return rc;
	q->split = true;
	q->dev = !mem_host_visible(&regions[r1]);
	q->gpu = regions[r1].affinity;
	if (n1 < q->nslots)
		q->nslots = n1;
	return 0;
}

static int
rp_queue_init(struct rp_engine *re, const struct cfg *c,
	      const struct cfg_interface *ifc, int qi,
	      struct mem_region *regions, const struct replay_cfg *rcfg,
	      char *err, size_t errlen)
{
	const struct cfg_queue *cq = &ifc->rx.queues[qi];
	struct rp_rxq *q;
	int rc;

	q = aligned_alloc(REPLAY_CACHE_LINE, sizeof(*q));
	if (q == NULL)
		return -ENOMEM;
	memset(q, 0, sizeof(*q));
	q->base.engine = &re->base;
	q->base.qi = qi;
	q->base.queue_id = cq->id;
	q->re = re;
	q->wake_fd = -1;
	snprintf(q->name, sizeof(q->name), "%s/%s", ifc->name, cq->name);
	re->q[qi] = q;
	re->nq = qi + 1;
	if ((rc = rp_carve(q, c, ifc, qi, regions, err, errlen)) != 0)
		return rc;
	for (int k = 0; k < rcfg->nfiles; k++)
		if (strcmp(rcfg->files[k].queue, q->name) == 0)
			q->path = rcfg->files[k].path;
	if (q->path == NULL) {
		atomic_store_explicit(&q->pub_done, true, memory_order_relaxed);
		log_info("queue '%s': no replay file: it receives nothing",
		    q->name);
		return 0;
	}
	if ((q->pc = rp_open(q->path, err, errlen)) == NULL)
		return -EINVAL;
	rp_read_next(q);
	/* the clock starts at the first frame */
	q->vnow = q->have_next ? q->next_ns : 0;
	atomic_store_explicit(&q->pub_vnow, q->vnow, memory_order_relaxed);
	log_info("queue '%s': replays '%s' (%u buffers of %u bytes%s%s)",
	    q->name, q->path, q->nslots, q->hdr_cap, q->split ?
	    ", split" : "", q->dev ? ", device memory" : "");
	return 0;
}

static int
rp_init(struct engine **out, const struct cfg *c,
	const struct cfg_interface *ifc, struct mem_region *regions,
	const struct engine_opts *opts, char *err, size_t errlen)
{
	static const struct replay_cfg none;
	const struct replay_cfg *rcfg = opts != NULL && opts->replay != NULL ?
	    opts->replay : &none;
	struct rp_engine *re;
	int rc;

	*out = NULL;
	if (ifc->rx.nqueues < 0 || ifc->rx.nqueues > CFG_MAX_QUEUES) {
		log_seterr(err, errlen, "interface '%s': bad rx queue count",
		    ifc->name);
		return -EINVAL;
	}
	if ((re = calloc(1, sizeof(*re))) == NULL)
		return -ENOMEM;
	re->base.ops = &engine_replay_ops;
	snprintf(re->name, sizeof(re->name), "%s", ifc->name);
	re->speed = rcfg->speed;
	atomic_store_explicit(&re->running, !rcfg->hold, memory_order_relaxed);
	for (int qi = 0; qi < ifc->rx.nqueues; qi++) {
		rc = rp_queue_init(re, c, ifc, qi, regions, rcfg, err, errlen);
		if (rc != 0) {
			if (rc == -ENOMEM && err != NULL && errlen > 0 &&
			    err[0] == '\0')
				log_seterr(err, errlen, "interface '%s': out "
				    "of memory", ifc->name);
			rp_fini(&re->base);
			return rc;
		}
	}
	*out = &re->base;
	return 0;
}

static void
rp_fini(struct engine *e)
{
	struct rp_engine *re = (struct rp_engine *)e;

	if (re == NULL)
		return;
	for (int i = 0; i < re->nq; i++) {
		struct rp_rxq *q = re->q[i];

		if (q == NULL)
			continue;
		if (q->pc != NULL)
			pcap_close(q->pc);
		if (q->private_mem != NULL)
			munmap(q->private_mem, q->private_len);
		gpu_stream_destroy(q->stream);
		free(q);
	}
	free(re);
}

/* ---- main thread -------------------------------------------------------- */

int
engine_replay_release(struct engine *e)
{
	struct rp_engine *re = (struct rp_engine *)e;

	if (atomic_exchange_explicit(&re->running, true, memory_order_release))
		return -EALREADY;
	/* the workers nap on their wake fds while held */
	for (int i = 0; i < re->nq; i++)
		if (re->q[i]->wake_fd >= 0)
			(void)!write(re->q[i]->wake_fd, &(uint64_t){ 1 },
			    sizeof(uint64_t));
	return 0;
}

bool
engine_replay_running(const struct engine *e)
{
	struct rp_engine *re = (struct rp_engine *)e;

	return atomic_load_explicit(&re->running, memory_order_relaxed);
}

int
engine_replay_json(const struct engine *e, cJSON *arr)
{
	const struct rp_engine *re = (const struct rp_engine *)e;

	for (int i = 0; i < re->nq; i++) {
		struct rp_rxq *q = re->q[i];
		cJSON *o = cJSON_CreateObject();

		if (o == NULL || !cJSON_AddItemToArray(arr, o))
			return cJSON_Delete(o), -ENOMEM;
		if (cJSON_AddStringToObject(o, "queue", q->name) == NULL ||
		    (q->path != NULL ?
		    cJSON_AddStringToObject(o, "file", q->path) :
		    cJSON_AddNullToObject(o, "file")) == NULL ||
		    cJSON_AddNumberToObject(o, "frames", (double)
		    atomic_load_explicit(&q->pub_frames,
		    memory_order_relaxed)) == NULL ||
		    cJSON_AddBoolToObject(o, "done",
		    atomic_load_explicit(&q->pub_done,
		    memory_order_relaxed)) == NULL ||
		    cJSON_AddNumberToObject(o, "clock_ns", (double)
		    atomic_load_explicit(&q->pub_vnow,
		    memory_order_relaxed)) == NULL)
			return -ENOMEM;
	}
	return 0;
}

const struct engine_ops engine_replay_ops = {
	.name = "replay",
	.init = rp_init,
	.start = rp_start,
	.rxq = rp_rxq,
	.rx_burst = rp_rx_burst,
	.release = rp_release,
	.steer = rp_steer,
	.stats = rp_stats,
	.set_wake_fd = rp_set_wake_fd,
	.now_ns = rp_now_ns,
	.fini = rp_fini,
};
