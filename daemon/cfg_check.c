/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cross-references of a configuration: names that must resolve (regions,
 * queues, flows), things with one owner (a region receives for one
 * interface, or is the output of one reorder config), interface addresses
 * against the stream type, and a reorder config's geometry against the
 * frames of its queue and its output region; a tx queue's destination
 * map against its engine (what the DPDK engine needs, what the socket
 * engine takes from socket_config). The schema walk calls these where
 * each fact becomes known, so that diagnostics keep their order.
 * Also the one parser of a listen address (daemon.metrics_listen), which
 * the checker and the HTTP endpoint share.
 */
#include <arpa/inet.h>
#include <string.h>
#include <sys/un.h>

#include "cfg_internal.h"
#include "geometry.h"
#include "reorder_kernel.h"

/* ---------------------------------------------------------------------
 * Regions, queues and flows named by others.
 */
/* A region name of a queue or reorder config: index, or -1 (reported). */
int
cfg_find_region(struct pctx *x, const char *key, const yaml_node_t *n,
		const char *name)
{
	const char *names[CFG_MAX_REGIONS];
	const char *near;
	char qb[QBUF];
	int i = cfg_region_find(x->c, name);

	if (i >= 0) {
		x->region_used[i] = true;
		return i;
	}
	x->region_unresolved = true;
	for (int j = 0; j < x->c->nregions; j++)
		names[j] = x->c->regions[j].name;
	near = cfg_closest(name, strlen(name), names, (size_t)x->c->nregions);
	if (near != NULL)
		err(x, n, "%s: no memory region named '%s'; did you mean "
		    "'%s'?", key, cfg_quote(name, strlen(name), qb), near);
	else
		err(x, n, "%s: no memory region named '%s'", key,
		    cfg_quote(name, strlen(name), qb));
	return -1;
}

/* A receive region must not be a reorder output, nor receive for
 * another interface (each engine carves the buffers of its own). */
static void
claim_rx_region(struct pctx *x, const yaml_node_t *e, int ri,
		const char *name)
{
	char qb[QBUF];

	if (x->reorder_line_of[ri] != 0)
		err(x, e, "memory_regions: '%s' is the output of reorder config "
		    "'%s' (line %d); a queue needs a region of its own",
		    cfg_quote(name, strlen(name), qb), x->reorder_of[ri],
		    x->reorder_line_of[ri]);
	else if (x->rx_iface_of[ri] != 0 && x->rx_iface_of[ri] !=
	    x->cur_iface + 1)
		err(x, e, "memory_regions: '%s' already receives for interface "
		    "'%s'; each interface needs regions of its own",
		    cfg_quote(name, strlen(name), qb),
		    x->c->interfaces[x->rx_iface_of[ri] - 1].name);
	else
		x->rx_iface_of[ri] = x->cur_iface + 1;
}

void
cfg_check_queue_region(struct pctx *x, const yaml_node_t *e,
		       const struct cfg_queue *q, int ri, int nth, bool tx,
		       const char *name)
{
	if (!tx)
		claim_rx_region(x, e, ri, name);
	/* The CPU reads flows and sequence numbers from a frame's
	 * first part, or from the header shadow of a frame that landed
	 * whole in device memory (geometry.h); a device region first and
	 * more after it is neither (socket streams get their own message
	 * below). */
	if (!tx && nth == 1 && eng(x) != NULL && eng(x)->rx_device &&
	    q->region_idx[0] >= 0 &&
	    x->c->regions[q->region_idx[0]].kind == DAQIRI_MEM_DEVICE)
		err(x, e, "memory_regions: the first region is a device region "
		    "and '%s' follows it, but the CPU reads each frame's "
		    "headers from the first; list a host region first "
		    "(header-data split: [headers, payloads]), or give the "
		    "device region alone (whole frames in GPU memory)", name);
	if (!tx && eng(x) != NULL && !eng(x)->rx_device &&
	    x->c->regions[ri].kind == DAQIRI_MEM_DEVICE)
		err(x, e, "memory_regions: %s streams receive "
		    "into host memory; '%s' is a device region",
		    eng(x)->stream_type, name);
}

static const struct cfg_queue *
queue_by_id(const struct cfg_queue *qs, int nq, uint32_t id)
{
	for (int i = 0; i < nq; i++)
		if (qs[i].id == id)
			return &qs[i];
	return NULL;
}

void
cfg_check_queue_id(struct pctx *x, const char *key, const yaml_node_t *n,
		   const struct queue_set *set, uint32_t id)
{
	if (queue_by_id(set->qs, set->nq, id) == NULL)
		err(x, n, "%s: no %s queue has id %u", key, set->dir, id);
}

const struct cfg_flow *
cfg_flow_by_id(const struct cfg_flow *fs, int nf, uint32_t id)
{
	for (int i = 0; i < nf; i++)
		if (fs[i].id == id)
			return &fs[i];
	return NULL;
}

/* ---------------------------------------------------------------------
 * Reorder configs: their output region and their geometry.
 */
void
cfg_check_reorder_region(struct pctx *x, const yaml_node_t *v,
			 const struct cfg_reorder *r, bool type_ok)
{
	int reg = r->region_idx;
	char qb[QBUF];
	enum daqiri_mem_kind kind;
	bool fits;

	if (x->reorder_line_of[reg] != 0)
		err(x, v, "memory_region: '%s' is already the output of "
		    "reorder config '%s' (line %d); each reorder config "
		    "needs a region of its own",
		    cfg_quote(r->region_name, strlen(r->region_name), qb),
		    x->reorder_of[reg], x->reorder_line_of[reg]);
	else if (x->rx_iface_of[reg] != 0)
		err(x, v, "memory_region: '%s' receives packets for "
		    "interface '%s'; a reorder config needs a region of "
		    "its own",
		    cfg_quote(r->region_name, strlen(r->region_name), qb),
		    x->c->interfaces[x->rx_iface_of[reg] - 1].name);
	else {
		x->reorder_line_of[reg] = pos_of(v).line;
		memcpy(x->reorder_of[reg], r->name, CFG_NAME_MAX);
	}
	if (!type_ok)
		return;
	kind = x->c->regions[reg].kind;
	fits = r->type == CFG_REORDER_GPU ?
	    kind == DAQIRI_MEM_DEVICE || kind == DAQIRI_MEM_HOST_PINNED :
	    kind != DAQIRI_MEM_DEVICE;
	if (!fits)
		err(x, v, "memory_region: a %s reorder cannot write "
		    "to '%s', a %s region (use %s)",
		    cfg_reorder_type_names[r->type], r->region_name,
		    daqiri_mem_kind_name(kind),
		    r->type == CFG_REORDER_GPU ? "device or "
		    "host_pinned" : "host, huge or host_pinned");
}

/*
 * The home rx queue of reorder config r (cfg_rx_owner()), or NULL: a flow
 * already known to be bad. A stream fed by several queues is placed by
 * the CPU of each of their workers (reorder.c "Shared plans"): a gpu
 * reorder, whose kernels one worker's CUDA stream orders, is refused.
 * *queues gets the queue set.
 */
static const struct cfg_queue *
reorder_queue(struct pctx *x, const struct cfg_interface *ifc,
	      const struct cfg_reorder *r, const yaml_node_t *at,
	      uint32_t *queues)
{
	struct cfg_owner o;

	cfg_rx_owner(ifc, r, &o);
	*queues = o.queues;
	if (o.status != CFG_OWNER_OK)
		return NULL;
	if (o.nqueues > 1 && r->type == CFG_REORDER_GPU)
		err(x, at, "flow_ids: its flows reach %d rx queues, and a gpu "
		    "reorder is fed by one (its kernels run in one worker's "
		    "order): give its flows one queue, or use reorder_type: "
		    "cpu with a host region", o.nqueues);
	return &ifc->rx.queues[o.queue];
}

/* A bit field of a gpu reorder config, which the CPU reads, must lie in
 * the host bytes of its queue's frames. */
static void
check_field_host(struct pctx *x, const struct cfg_reorder *r,
		 const struct cfg_bitfield *b, const char *key,
		 const struct cfg_queue *q, int dp, uint64_t host)
{
	uint64_t end = ((uint64_t)b->bit_offset + b->bit_width + 7) / 8;

	if (end <= host)
		return;
	if (dp == 0) {
		err_at(x, cfg_pos_of(x->c, &b->bit_offset, r->pos), "%s: ends "
		       "in byte %llu, but the frames of rx queue '%s' land "
		       "whole in '%s', a device region, and the CPU reads "
		       "only the copy of their first %llu bytes: move the "
		       "field into them", key, (unsigned long long)end,
		       q->name, q->region_names[0], (unsigned long long)host);
		return;
	}
	err_at(x, cfg_pos_of(x->c, &b->bit_offset, r->pos), "%s: ends in "
	       "byte %llu, past the %llu bytes of each frame of rx queue "
	       "'%s' in host memory ('%s'); the rest is in '%s', a device "
	       "region, which the CPU cannot read: move the field into the "
	       "first %llu bytes", key, (unsigned long long)end,
	       (unsigned long long)host, q->name, q->region_names[0],
	       q->region_names[dp], (unsigned long long)host);
}

/*
 * The CPU reads only the host part of a frame of q (geometry.h): a cpu
 * reorder config converts the whole payload, a gpu one reads its bit
 * fields, and a payload that starts in the headers, on the CPU.
 */
static void
check_reorder_host_part(struct pctx *x, const struct cfg_reorder *r,
			const struct map *m, const struct cfg_queue *q,
			uint64_t host, bool method_ok, bool offset_ok,
			bool pb_given)
{
	int dp = geom_queue_device_part(x->c, q);

	/* an engine that takes no device region refuses it apart */
	if (dp < 0 || host == 0 || (eng(x) != NULL && !eng(x)->rx_device))
		return;
	if (r->type == CFG_REORDER_CPU) {
		err(x, mget(m, "reorder_type"), "reorder_type: a cpu reorder "
		    "reads payloads with the CPU, but rx queue '%s' puts "
		    "them in '%s', a device region (%s); use "
		    "reorder_type: gpu, or a host, huge or host_pinned region "
		    "for the payloads", q->name, q->region_names[dp],
		    dp == 0 ? "whole frames" : "header-data split");
		return;
	}
	if (method_ok) {
		check_field_host(x, r, &r->seq, "sequence_number", q, dp, host);
		if (r->method == CFG_METHOD_SEQ_BATCH_NUMBER)
			check_field_host(x, r, &r->batch, "batch_number", q,
					 dp, host);
	}
	/* a whole frame's payload is all in device memory, where the GPU
	 * reads it; a split one's must not begin in the headers */
	if (dp > 0 && offset_ok && r->payload_byte_offset < host && (!pb_given ||
	    (uint64_t)r->payload_byte_offset + r->payload_bytes > host))
		err(x, mget(m, "payload_byte_offset"), "payload_byte_offset: "
		    "%u starts the payload in the %llu header bytes of rx "
		    "queue '%s' ('%s') and it goes on in '%s', a device "
		    "region, which the CPU cannot read to join the two; "
		    "start it at byte %llu", r->payload_byte_offset,
		    (unsigned long long)host, q->name, q->region_names[0],
		    q->region_names[dp], (unsigned long long)host);
}

/* window (capped to half the batch-id space), payload_bytes, slot and
 * tensor size against the output region; the queue's host part. */
void
cfg_check_reorder_geometry(struct pctx *x, const struct cfg_interface *ifc,
			   struct cfg_reorder *r, const struct map *m,
			   bool type_ok, bool method_ok, bool offset_ok,
			   bool flows_ok, bool pb_given)
{
	const struct cfg_queue *q = NULL;
	const struct cfg_region *out;
	yaml_node_t *at;
	uint64_t space, frame = 0, slot, need;
	uint32_t window, queues = 0;

	if (method_ok) {
		/* the printed config carries the window the plan will run */
		space = geom_id_space(r);
		window = geom_window(r->window, space);
		if (window < r->window) {
			at = mkey(m, "window");
			if (at == NULL)
				at = mkey(m, "method");
			warn(x, at, "window: %u%s capped to %u: the batch-id "
			     "space has only %llu id%s", r->window,
			     mkey(m, "window") ? "" : " (the default)",
			     window, (unsigned long long)space,
			     space == 1 ? "" : "s");
			r->window = window;
		}
	}
	if (flows_ok)
		q = reorder_queue(x, ifc, r, mkey(m, "flow_ids"), &queues);
	if (q != NULL)
		frame = geom_queue_frame_bytes(x->c, ifc, q);
	/* the other queues of a spread stream: the same frames */
	for (int k = 0; q != NULL && k < ifc->rx.nqueues; k++) {
		const struct cfg_queue *o = &ifc->rx.queues[k];

		if (!(queues & (1u << k)) || o == q)
			continue;
		if (type_ok)
			check_reorder_host_part(x, r, m, o,
			    geom_queue_host_bytes(x->c, ifc, o), method_ok,
			    offset_ok, pb_given);
		if (!pb_given && geom_queue_frame_bytes(x->c, ifc, o) != frame)
			err_at(x, r->pos, "payload_bytes: cannot be derived: "
			       "rx queues '%s' and '%s', which both feed it, "
			       "hold frames of %llu and %llu bytes; set "
			       "payload_bytes", q->name, o->name,
			       (unsigned long long)frame,
			       (unsigned long long)geom_queue_frame_bytes(x->c,
			       ifc, o));
	}
	/* the conversions the CUDA kernel makes (reorder_kernel.h) */
	if (type_ok && r->type == CFG_REORDER_GPU && r->has_data_types &&
	    !rk_conversion_ok(r->input_type, r->output_type))
		err(x, mget(m, "data_types"), "data_types: output_type %s: a "
		    "gpu reorder writes " RK_OUTPUTS " (use one of those, or "
		    "reorder_type: cpu)", daqiri_dtype_name(r->output_type));
	if (q != NULL && type_ok)
		check_reorder_host_part(x, r, m, q,
					geom_queue_host_bytes(x->c, ifc, q),
					method_ok, offset_ok, pb_given);
	if (!pb_given) {
		if (q == NULL || frame == 0 || !offset_ok)
			return;
		if (frame <= r->payload_byte_offset) {
			err_at(x, r->pos, "payload_bytes: cannot be derived: "
			       "frames of rx queue '%s' hold at most %llu "
			       "bytes, not more than payload_byte_offset %u; "
			       "set payload_bytes", q->name,
			       (unsigned long long)frame,
			       r->payload_byte_offset);
			return;
		}
		if (frame - r->payload_byte_offset > CFG_FRAME_MAX) {
			err_at(x, r->pos, "payload_bytes: the derived %llu "
			       "bytes exceed %u; set payload_bytes",
			       (unsigned long long)(frame -
						    r->payload_byte_offset),
			       CFG_FRAME_MAX);
			return;
		}
		r->payload_bytes = (uint32_t)(frame - r->payload_byte_offset);
	} else if (q != NULL && frame != 0 && offset_ok &&
		   (uint64_t)r->payload_byte_offset + r->payload_bytes >
		   frame) {
		err(x, mget(m, "payload_bytes"), "payload_bytes: "
		    "payload_byte_offset %u + payload_bytes %u = %llu bytes "
		    "do not fit the %llu-byte frames of rx queue '%s'",
		    r->payload_byte_offset, r->payload_bytes,
		    (unsigned long long)r->payload_byte_offset +
		    r->payload_bytes, (unsigned long long)frame, q->name);
		return;
	}
	if (r->payload_bytes == 0)
		return;
	slot = geom_slot_bytes(r, r->payload_bytes);
	if (slot == 0) {
		at = mget(m, "payload_bytes");
		if (at != NULL)
			err(x, at, "payload_bytes: %u is not a whole number of "
			    "%s elements (%u bits each)", r->payload_bytes,
			    daqiri_dtype_name(r->input_type),
			    cfg_dtype_bits(r->input_type));
		else
			err_at(x, r->pos, "payload_bytes: the derived %u is not "
			       "a whole number of %s elements (%u bits each); "
			       "set payload_bytes", r->payload_bytes,
			       daqiri_dtype_name(r->input_type),
			       cfg_dtype_bits(r->input_type));
		return;
	}
	r->slot_bytes = slot;
	if (!method_ok || r->region_idx < 0)
		return;
	out = &x->c->regions[r->region_idx];
	if (out->num_bufs > DAQIRI_NBUFS_MAX) {
		struct cfg_pos nb = x->num_bufs_at[r->region_idx];

		/* reported where the number is, not where it is used */
		err_at(x, nb.line != 0 ? nb : out->pos, "num_bufs: %u tensor "
		    "buffers in region '%s', the output of reorder config "
		    "'%s'; a stream has at most %u (DAQIRI_NBUFS_MAX: every "
		    "buffer must fit a subscription's release ring)",
		    out->num_bufs, out->name, r->name, DAQIRI_NBUFS_MAX);
		return;
	}
	/* ppb <= DAQIRI_PPB_MAX, slot <= 16 x CFG_FRAME_MAX: no overflow */
	need = geom_tensor_bytes(r->packets_per_batch, slot);
	if (out->buf_size < need)
		err(x, mget(m, "memory_region"), "memory_region: buf_size %llu "
		    "of '%s' is smaller than one tensor: packets_per_batch %u "
		    "x slot bytes %llu = %llu",
		    (unsigned long long)out->buf_size, r->region_name,
		    r->packets_per_batch, (unsigned long long)slot,
		    (unsigned long long)need);
}

unsigned
cfg_dtype_bits(enum daqiri_dtype t)
{
	switch (t) {
	case DAQIRI_DTYPE_INT4:
		return 4;
	case DAQIRI_DTYPE_RAW:
	case DAQIRI_DTYPE_INT8:
		return 8;
	case DAQIRI_DTYPE_INT16:
	case DAQIRI_DTYPE_FP16:
	case DAQIRI_DTYPE_BF16:
		return 16;
	case DAQIRI_DTYPE_INT32:
	case DAQIRI_DTYPE_FP32:
		return 32;
	case DAQIRI_DTYPE_FP64:
		return 64;
	default:
		return 0;
	}
}

/* The public name of geom_slot_bytes(), for config.h's users. */
uint64_t
cfg_reorder_slot_bytes(const struct cfg_reorder *r, uint64_t n)
{
	return geom_slot_bytes(r, n);
}

/* ---------------------------------------------------------------------
 * TX: a tx queue's destination map, and what its engine needs to send.
 * The daemon writes every header itself (DESIGN.md "TX"), so the map is
 * all a consumer's payload can reach.
 */
static const struct keydef dest_keys[] = {
	{ "eth_dst", KEY_OK, NULL },
	{ "eth_src", KEY_OK, NULL },
	{ "ipv4_src", KEY_OK, NULL },
	{ "ipv4_dst", KEY_OK, NULL },
	{ "udp_src", KEY_OK, NULL },
	{ "udp_dst", KEY_OK, NULL },
	{ "ttl", KEY_OK, NULL },
	{ "dscp", KEY_OK, NULL },
};

#define TX_TTL_DEFAULT	64
#define TX_DSCP_MAX	63
#define TX_BUF_MIN	64	/* bytes of a tx queue's payload buffers */

static bool
mac_is_zero(const uint8_t m[6])
{
	static const uint8_t zero[6];

	return memcmp(m, zero, sizeof(zero)) == 0;
}

/* A port 1..65535 into *out (and its mark). */
static bool
get_port(struct pctx *x, const char *key, const yaml_node_t *n,
	 uint16_t *out)
{
	uint32_t u;

	if (!cfg_get_u32(x, key, n, 1, UINT16_MAX, &u))
		return false;
	*out = (uint16_t)u;
	cfg_mark(x, out, n);
	return true;
}

static void
dest_fields(struct pctx *x, const struct map *m, struct cfg_tx_dest *d)
{
	yaml_node_t *v;
	uint32_t u;

	if ((v = mval(m, "eth_dst")) != NULL &&
	    cfg_get_mac(x, "eth_dst", v, d->eth_dst)) {
		if (mac_is_zero(d->eth_dst))
			err(x, v, "eth_dst: 00:00:00:00:00:00 is not a "
			    "destination");
		else
			d->has_eth_dst = true;
	}
	if ((v = mval(m, "eth_src")) != NULL &&
	    cfg_get_mac(x, "eth_src", v, d->eth_src)) {
		if (mac_is_zero(d->eth_src) || (d->eth_src[0] & 1))
			err(x, v, "eth_src: a source MAC address must be "
			    "unicast and not all zeros");
		else
			d->has_eth_src = true;
	}
	if ((v = mval(m, "ipv4_src")) != NULL)
		d->has_ipv4_src = cfg_get_ipv4(x, "ipv4_src", v, &d->ipv4_src);
	if ((v = mval(m, "ipv4_dst")) != NULL &&
	    cfg_get_ipv4(x, "ipv4_dst", v, &d->ipv4_dst)) {
		if (d->ipv4_dst == 0)
			err(x, v, "ipv4_dst: 0.0.0.0 is not a destination");
		else
			d->has_ipv4_dst = true;
	}
	if ((v = mval(m, "udp_src")) != NULL)
		d->has_udp_src = get_port(x, "udp_src", v, &d->udp_src);
	if ((v = mval(m, "udp_dst")) != NULL)
		d->has_udp_dst = get_port(x, "udp_dst", v, &d->udp_dst);
	if ((v = mval(m, "ttl")) != NULL &&
	    cfg_get_u32(x, "ttl", v, 1, UINT8_MAX, &u)) {
		d->ttl = (uint8_t)u;
		d->has_ttl = true;
		cfg_mark(x, &d->ttl, v);
	}
	if ((v = mval(m, "dscp")) != NULL &&
	    cfg_get_u32(x, "dscp", v, 0, TX_DSCP_MAX, &u)) {
		d->dscp = (uint8_t)u;
		d->has_dscp = true;
		cfg_mark(x, &d->dscp, v);
	}
}

void
cfg_parse_tx_dest(struct pctx *x, yaml_node_t *n, struct cfg_queue *q,
		  const yaml_node_t *off)
{
	static const char *const eth_keys[] = { "eth_dst", "eth_src" };
	static const char *const need[] = {
		"eth_dst", "ipv4_src", "ipv4_dst", "udp_dst"
	};
	struct cfg_tx_dest *d = &q->dest;
	const struct cfg_engine_traits *t = eng(x);
	/* the engine writes Ethernet headers (dpdk), or the kernel does */
	bool raw = t != NULL && t->tx_l2, sock = t != NULL && !t->tx_l2;
	struct map m;

	d->ttl = TX_TTL_DEFAULT;
	if (sock && off != NULL) {
		warn(x, off, "offloads: has no effect with the socket engine "
		     "(the kernel writes Ethernet headers)");
		q->offload_tx_eth_src = false;	/* not printed again */
	}
	if (n == NULL) {
		/* the socket engine may take it from socket_config */
		if (raw)
			err_at(x, q->pos, "tx queue '%s' has no destination: "
			       "not supported by daqiri: frames built by the "
			       "sender (daqiri writes every header itself, so "
			       "a consumer reaches only configured "
			       "destinations; give destination with eth_dst, "
			       "ipv4_src, ipv4_dst and udp_dst)", q->name);
		return;
	}
	d->pos = pos_of(n);
	cfg_mark(x, d, n);
	if (!cfg_map_open(x, &m, n, "destination", "tx destination",
			  KEYS(dest_keys), false))
		return;
	dest_fields(x, &m, d);
	if (raw) {
		for (size_t i = 0; i < NELEM(need); i++)
			require(x, &m, need[i]);
		if (d->has_ipv4_src && d->ipv4_src == 0)
			err(x, mget(&m, "ipv4_src"), "ipv4_src: 0.0.0.0 is not "
			    "a source address");
		if (d->has_eth_src && q->offload_tx_eth_src)
			err(x, mkey(&m, "eth_src"), "eth_src: the queue's "
			    "offloads: [tx_eth_src] leaves the source MAC to "
			    "the NIC; give one or the other");
		if (d->has_udp_dst && !d->has_udp_src) {
			d->udp_src = d->udp_dst;
			d->has_udp_src = true;
		}
	}
	if (!sock)
		return;
	for (size_t i = 0; i < NELEM(eth_keys); i++)
		if (mget(&m, eth_keys[i]) != NULL)
			warn(x, mkey(&m, eth_keys[i]), "%s: has no effect with "
			     "the socket engine (the kernel writes Ethernet "
			     "headers)", eth_keys[i]);
	d->has_eth_dst = d->has_eth_src = false;	/* not printed again */
}

/* A socket engine's tx queue: its destination defaults to remote_addr;
 * it sends from local_addr's address. A server's queue with neither
 * replies to the peer that sent last (reply_peer), as the reference
 * does: daqirid.yaml(5) and daqirid(8) SECURITY say what that opens. */
static void
check_socket_txq(struct pctx *x, const struct cfg_interface *ifc,
		 struct cfg_queue *q)
{
	const struct cfg_socket *s = &ifc->socket;
	struct cfg_tx_dest *d = &q->dest;
	char a[16], b[16];

	/* a client without remote_addr (or a mode not given): reported */
	if (s->mode == CFG_SOCK_CLIENT && !s->remote.set && d->pos.line == 0)
		return;
	if (s->remote.set && !d->has_ipv4_dst) {
		d->ipv4_dst = s->remote.addr;
		d->has_ipv4_dst = true;
	}
	if (s->remote.set && s->remote.port != 0 && !d->has_udp_dst) {
		d->udp_dst = s->remote.port;
		d->has_udp_dst = true;
	}
	if (!d->has_ipv4_dst && !d->has_udp_dst && d->pos.line == 0 &&
	    s->mode == CFG_SOCK_SERVER && !s->remote.set) {
		if (ifc->rx.nqueues > 0)
			d->reply_peer = true;
		else
			err_at(x, q->pos, "tx queue '%s' has no destination: "
			       "a server's tx queue replies to the peer that "
			       "sent last, and interface '%s' has no rx queue "
			       "to hear one; set destination", q->name,
			       ifc->name);
	} else if (!d->has_ipv4_dst && !d->has_udp_dst && d->pos.line == 0)
		err_at(x, q->pos, "tx queue '%s' has no destination: set "
		       "socket_config.remote_addr or destination", q->name);
	else if (!d->has_ipv4_dst || !d->has_udp_dst)
		err_at(x, d->pos.line != 0 ? d->pos : q->pos, "tx queue '%s' "
		       "has no %s: set socket_config.remote_addr or "
		       "destination.%s", q->name, d->has_ipv4_dst ?
		       "udp_dst" : "ipv4_dst", d->has_ipv4_dst ? "udp_dst" :
		       "ipv4_dst");
	if (d->has_ipv4_src && s->local.set && s->local.addr != 0 &&
	    d->ipv4_src != s->local.addr) {
		cfg_format_ipv4(d->ipv4_src, a, sizeof(a));
		cfg_format_ipv4(s->local.addr, b, sizeof(b));
		err_at(x, cfg_pos_of(x->c, &d->ipv4_src, d->pos), "ipv4_src: "
		       "%s is not local_addr's address %s; the socket engine "
		       "sends from local_addr", a, b);
	}
}

/* A tx queue's first region gives its payload buffers' size (the
 * largest payload), how many a channel may have, and where they live:
 * a device region gives each channel a device pool (the socket engine
 * and the DPDK engine stage it through host memory). */
static void
check_tx_region(struct pctx *x, const struct cfg_queue *q)
{
	const struct cfg_region *r;
	struct cfg_pos at;

	if (q->nregions < 1 || q->region_idx[0] < 0)
		return;
	r = &x->c->regions[q->region_idx[0]];
	at = cfg_pos_of(x->c, q->region_names[0], q->pos);
	if (r->kind == DAQIRI_MEM_DEVICE && eng(x) != NULL &&
	    !eng(x)->tx_device)
		err_at(x, at, "memory_regions: '%s' is a device region: not "
		       "supported by daqiri yet: a tx queue in device memory "
		       "on the %s engine (GPUDirect send); the socket engine "
		       "sends it through host memory", r->name, eng(x)->name);
	if (r->buf_size < TX_BUF_MIN)
		err_at(x, at, "memory_regions: buf_size %llu of '%s' is less "
		       "than the %u bytes a tx queue's buffers need at least",
		       (unsigned long long)r->buf_size, r->name, TX_BUF_MIN);
}

/* The engine's headroom in front of each buffer of the interface's rx
 * regions (DPDK's mbuf headroom: buf_size stays the frame bytes a buffer
 * takes, as in the reference). */
void
cfg_check_rx_headroom(struct pctx *x, const struct cfg_interface *ifc)
{
	uint32_t h = eng(x) != NULL ? eng(x)->rx_headroom : 0;

	for (int q = 0; q < ifc->rx.nqueues; q++)
		for (int k = 0; k < ifc->rx.queues[q].nregions; k++) {
			int ri = ifc->rx.queues[q].region_idx[k];

			if (ri >= 0 && ri < x->c->nregions)
				x->c->regions[ri].headroom = h;
		}
}

/*
 * The socket engine receives only what is sent to local_addr: a flow
 * whose udp_dst leaves out its port (or whose ipv4_dst is another
 * address than a bound one) never matches, and what was meant for it
 * goes to the raw stream or, isolated, is dropped unmatched -- silently,
 * the most likely slip when the port changes in one place only.
 */
void
cfg_check_flows_endpoint(struct pctx *x, const struct cfg_interface *ifc)
{
	const struct cfg_endpoint *l = &ifc->socket.local;

	if (!ifc->socket.present || !l->set || l->port == 0)
		return;
	for (int i = 0; i < ifc->rx.nflows; i++) {
		const struct cfg_flow *f = &ifc->rx.flows[i];
		const struct cfg_match *mt = &f->match;

		char ports[16];

		if (mt->udp_dst_lo == mt->udp_dst_hi)
			snprintf(ports, sizeof(ports), "%u", mt->udp_dst_lo);
		else
			snprintf(ports, sizeof(ports), "%u-%u", mt->udp_dst_lo,
			    mt->udp_dst_hi);
		if (f->has_match && mt->has_udp_dst &&
		    (l->port < mt->udp_dst_lo || l->port > mt->udp_dst_hi))
			warn_at(x, cfg_pos_of(x->c, &mt->udp_dst_lo, f->pos),
			    "flow '%s': udp_dst %s never matches: interface "
			    "'%s' receives on port %u (socket_config.local_addr); "
			    "change one so that they agree", f->name, ports,
			    ifc->name, l->port);
		else if (f->has_match && mt->has_ipv4_dst && l->addr != 0 &&
		    mt->ipv4_dst != l->addr)
			warn_at(x, cfg_pos_of(x->c, &mt->ipv4_dst, f->pos),
			    "flow '%s': ipv4_dst never matches: interface '%s' "
			    "receives on another address "
			    "(socket_config.local_addr); change one so that "
			    "they agree", f->name, ifc->name);
	}
}

void
cfg_check_tx(struct pctx *x, struct cfg_interface *ifc)
{
	const struct cfg_socket *s = &ifc->socket;
	bool sock = eng(x) != NULL && eng(x)->socket_config;

	for (int i = 0; i < ifc->tx.nqueues; i++)
		check_tx_region(x, &ifc->tx.queues[i]);
	if (x->c->loopback == CFG_LOOPBACK_SW && eng(x) != NULL &&
	    eng(x)->sw_loopback)
		for (int i = ifc->rx.nqueues; i < ifc->tx.nqueues; i++)
			err_at(x, ifc->tx.queues[i].pos, "tx queue '%s': "
			       "software loopback sends the N-th tx queue to "
			       "the N-th rx queue, and interface '%s' has %d rx "
			       "queue%s: add one, or remove this tx queue",
			       ifc->tx.queues[i].name, ifc->name,
			       ifc->rx.nqueues, ifc->rx.nqueues == 1 ? "" : "s");
	/* no socket_config: reported already */
	if (!sock || !s->present || ifc->tx.nqueues == 0)
		return;
	/* tcp:// is refused, once, by the parser */
	if ((s->local.set && s->local.transport == CFG_TRANSPORT_TCP) ||
	    (s->remote.set && s->remote.transport == CFG_TRANSPORT_TCP))
		return;
	for (int i = 0; i < ifc->tx.nqueues; i++)
		check_socket_txq(x, ifc, &ifc->tx.queues[i]);
}

/* ---------------------------------------------------------------------
 * Interface addresses, and what nothing refers to.
 */
/* A PCI address dddd:bb:dd.f (hex digits, function 0..7). */
static bool
is_pci_address(const char *s)
{
	static const char shape[] = "xxxx:xx:xx.f";

	if (strlen(s) != sizeof(shape) - 1)
		return false;
	for (size_t i = 0; shape[i] != '\0'; i++) {
		if (shape[i] == 'x' && strchr("0123456789abcdefABCDEF", s[i]) ==
		    NULL)
			return false;
		if (shape[i] == 'f' && (s[i] < '0' || s[i] > '7'))
			return false;
		if ((shape[i] == ':' || shape[i] == '.') && s[i] != shape[i])
			return false;
	}
	return true;
}

/* A DPDK virtual device name: net_ followed by [A-Za-z0-9_]. */
static bool
is_vdev_name(const char *s)
{
	return strncmp(s, "net_", 4) == 0 &&
	    cfg_all_of(s + 4, strlen(s + 4), "abcdefghijklmnopqrstuvwxyz"
		       "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
}

/* A vdev address is created by a --vdev=<name>[,...] of dpdk_args. */
static bool
vdev_declared(const struct cfg *c, const char *name)
{
	size_t len = strlen(name);

	for (int i = 0; i < c->ndpdk_args; i++) {
		const char *a = c->dpdk_args[i];

		if (strncmp(a, "--vdev=", 7) == 0)
			a += 7;
		else if (strncmp(a, "--vdev", 6) == 0 && a[6] == '\0' &&
			 i + 1 < c->ndpdk_args)
			a = c->dpdk_args[++i];
		else
			continue;
		if (strncmp(a, name, len) == 0 &&
		    (a[len] == '\0' || a[len] == ','))
			return true;
	}
	return false;
}

void
cfg_check_address(struct pctx *x, const yaml_node_t *n,
		  const struct cfg_interface *ifc)
{
	const char *a = ifc->address;
	char qb[QBUF];
	uint32_t ip;

	if (eng(x) == NULL)
		return;
	if (eng(x)->addr_ipv4) {
		if (!cfg_parse_ipv4(a, &ip))
			err(x, n, "address: a %s stream needs an IPv4 "
			    "address, got '%s'", eng(x)->stream_type,
			    cfg_quote(a, strlen(a), qb));
		return;
	}
	if (x->c->loopback == CFG_LOOPBACK_SW) {
		/* as the reference: 'loopback', or a PCI address that is
		 * only a label */
		if (strcmp(a, "loopback") == 0)
			return;
		if (is_pci_address(a))
			warn(x, n, "address: software loopback (loopback: sw) "
			     "does not use the NIC at %s: 'loopback' says so", a);
		else
			err(x, n, "address: with loopback: sw an interface is "
			    "a software loopback port: write 'loopback', got "
			    "'%s'", cfg_quote(a, strlen(a), qb));
		return;
	}
	if (strcmp(a, "loopback") == 0) {
		err(x, n, "address: 'loopback' is the software loopback port: "
		    "set loopback: sw in cfg (what tx queue N sends, rx queue "
		    "N receives)");
		return;
	}
	if (is_vdev_name(a)) {
		if (!vdev_declared(x->c, a))
			warn(x, n, "address: no --vdev=%s in dpdk_args creates "
			     "this device", a);
		return;
	}
	if (!is_pci_address(a))
		err(x, n, "address: expected a PCI address (dddd:bb:dd.f) or "
		    "a DPDK vdev name (net_...), got '%s'",
		    cfg_quote(a, strlen(a), qb));
}

/* A misspelt reference would make its region look unused: then no
 * region is reported. */
void
cfg_check_regions_used(struct pctx *x)
{
	const struct cfg *c = x->c;

	for (int i = 0; i < c->nregions && !x->region_unresolved; i++)
		if (!x->region_used[i] && c->regions[i].name[0] != '\0')
			diag_add(x->d, CFG_SEV_WARNING, c->regions[i].pos,
				 "memory region '%s' is used by no queue and no "
				 "reorder config", c->regions[i].name);
}

bool
cfg_parse_listen(const char *text, struct cfg_listen *out)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *h = text;
	size_t hl;

	memset(out, 0, sizeof(*out));
	if (strncmp(text, "unix:", 5) == 0) {
		out->kind = CFG_LISTEN_UNIX;
		out->path = text + 5;
		return out->path[0] == '/' &&
		    strlen(out->path) < sizeof(((struct sockaddr_un *)0)->sun_path);
	}
	colon = strrchr(text, ':');
	if (colon == NULL || !cfg_parse_port_text(colon + 1, strlen(colon + 1),
	    &out->port) || out->port == 0)
		return false;
	hl = (size_t)(colon - text);
	if (text[0] == '[') {
		if (hl < 2 || text[hl - 1] != ']')
			return false;
		h = text + 1;
		hl -= 2;
		out->kind = CFG_LISTEN_INET6;
	} else
		out->kind = CFG_LISTEN_INET;
	if (hl == 0 || hl >= sizeof(host))
		return false;
	memcpy(host, h, hl);
	host[hl] = '\0';
	return inet_pton(out->kind == CFG_LISTEN_INET6 ? AF_INET6 : AF_INET,
	    host, out->addr) == 1;
}
