/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a reload would change: the running config and a new one compared
 * field by field, every difference classified as live (applied without a
 * restart) or restart-only, and placed at the new file's line:col (the
 * value's mark, else the entry that holds it). Pure, like the loader.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cfg_internal.h"

static const struct cfg_pos nowhere = { 0, 0 };

static void __attribute__((format(printf, 4, 5)))
change(struct cfg_changes *o, bool live, struct cfg_pos pos, const char *fmt,
       ...)
{
	struct cfg_change *c;
	va_list ap;

	if (live)
		o->nlive++;
	else
		o->nrestart++;
	if (o->n >= CFG_MAX_CHANGES)
		return;
	c = &o->ch[o->n++];
	c->live = live;
	c->pos = pos;
	va_start(ap, fmt);
	vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
	va_end(ap);
}

/* A restart-only field: "what: OLD -> NEW (needs a restart)". */
#define RESTART_U(o, nc, fb, what, a, b) do {				\
		if ((a) != (b))						\
			change(o, false, cfg_pos_of(nc, &(b), fb),	\
			    "%s: %llu -> %llu: needs a restart", what,	\
			    (unsigned long long)(a), (unsigned long long)(b)); \
	} while (0)
#define RESTART_S(o, nc, fb, what, a, b) do {				\
		if (strcmp((a), (b)) != 0)				\
			change(o, false, cfg_pos_of(nc, (b), fb),	\
			    "%s: \"%s\" -> \"%s\": needs a restart", what,	\
			    (a), (b));					\
	} while (0)

static const char *
name_or(const char *const *names, int n, int i)
{
	return i >= 0 && i < n && names[i] != NULL ? names[i] : "?";
}

static void
diff_top(const struct cfg *a, const struct cfg *b, struct cfg_changes *o)
{
	if (a->stream_type != b->stream_type || a->engine != b->engine)
		change(o, false, cfg_pos_of(b, &b->stream_type, nowhere),
		    "stream_type/engine: %s -> %s: needs a restart",
		    name_or(cfg_engine_names, CFG_ENGINE_MAX, (int)a->engine),
		    name_or(cfg_engine_names, CFG_ENGINE_MAX, (int)b->engine));
	RESTART_U(o, b, nowhere, "master_core", a->master_core, b->master_core);
	RESTART_U(o, b, nowhere, "loopback", a->loopback, b->loopback);
	RESTART_U(o, b, nowhere, "tx_meta_buffers", a->tx_meta_buffers,
	    b->tx_meta_buffers);
	RESTART_U(o, b, nowhere, "rx_meta_buffers", a->rx_meta_buffers,
	    b->rx_meta_buffers);
	if (a->ndpdk_args != b->ndpdk_args)
		change(o, false, b->ndpdk_args > 0 ?
		    cfg_pos_of(b, b->dpdk_args[0], nowhere) : nowhere,
		    "dpdk_args: %d -> %d arguments: needs a restart",
		    a->ndpdk_args, b->ndpdk_args);
	else
		for (int i = 0; i < a->ndpdk_args; i++)
			RESTART_S(o, b, nowhere, "dpdk_args", a->dpdk_args[i],
			    b->dpdk_args[i]);
	if (a->debug != b->debug)
		change(o, true, cfg_pos_of(b, &b->debug, nowhere),
		    "debug: %s -> %s (no effect)", a->debug ? "true" : "false",
		    b->debug ? "true" : "false");
	if (a->log_level != b->log_level)
		change(o, true, cfg_pos_of(b, &b->log_level, nowhere),
		    "log_level: %s -> %s", cfg_log_level_name(a->log_level),
		    cfg_log_level_name(b->log_level));
}

static void
diff_daemon(const struct cfg *ca, const struct cfg *cb, struct cfg_changes *o)
{
	const struct cfg_daemon *a = &ca->daemon, *b = &cb->daemon;
	RESTART_S(o, cb, nowhere, "daemon.control_socket", a->control_socket,
	    b->control_socket);
	RESTART_U(o, cb, nowhere, "daemon.socket_mode", a->socket_mode,
	    b->socket_mode);
	RESTART_S(o, cb, nowhere, "daemon.socket_group", a->socket_group,
	    b->socket_group);
	RESTART_S(o, cb, nowhere, "daemon.admin_group", a->admin_group,
	    b->admin_group);
	RESTART_U(o, cb, nowhere, "daemon.max_consumers", a->max_consumers,
	    b->max_consumers);
	RESTART_S(o, cb, nowhere, "daemon.metrics_listen", a->metrics_listen,
	    b->metrics_listen);
	RESTART_U(o, cb, nowhere, "daemon.rx_mode", a->rx_mode, b->rx_mode);
	RESTART_U(o, cb, nowhere, "daemon.hold_timeout_ms", a->hold_timeout_ms,
	    b->hold_timeout_ms);
	RESTART_U(o, cb, nowhere, "daemon.hello_timeout_ms",
	    a->hello_timeout_ms, b->hello_timeout_ms);
	RESTART_U(o, cb, nowhere, "daemon.max_subscriptions_per_connection",
	    a->max_subscriptions_per_connection,
	    b->max_subscriptions_per_connection);
	RESTART_U(o, cb, nowhere, "daemon.max_connections_per_uid",
	    a->max_connections_per_uid, b->max_connections_per_uid);
	RESTART_U(o, cb, nowhere, "daemon.reserved_admin_connections",
	    a->reserved_admin_connections, b->reserved_admin_connections);
	if (a->stats_interval_ms != b->stats_interval_ms)
		change(o, true, cfg_pos_of(cb, &b->stats_interval_ms, nowhere),
		    "daemon.stats_interval_ms: %u -> %u", a->stats_interval_ms,
		    b->stats_interval_ms);
}

/* Is region index r the output of a reorder config of c, or a receive
 * region of a queue? */
static bool
region_in_use(const struct cfg *c, int r)
{
	for (int i = 0; i < c->ninterfaces; i++) {
		const struct cfg_rx *rx = &c->interfaces[i].rx;

		for (int j = 0; j < rx->nreorders; j++)
			if (rx->reorders[j].region_idx == r)
				return true;
		for (int q = 0; q < rx->nqueues; q++)
			for (int k = 0; k < rx->queues[q].nregions; k++)
				if (rx->queues[q].region_idx[k] == r)
					return true;
	}
	return false;
}

/*
 * Regions keep their places: the daemon's memory is indexed as the file
 * lists it. New regions may follow the old ones (allocated at the
 * reload, for streams added with them) and the last ones may go when
 * nothing that stays uses them; anything else needs a restart.
 */
static void
diff_regions(const struct cfg *a, const struct cfg *b, struct cfg_changes *o)
{
	for (int i = 0; i < a->nregions || i < b->nregions; i++) {
		const struct cfg_region *ra = i < a->nregions ?
		    &a->regions[i] : NULL;
		const struct cfg_region *rb = i < b->nregions ?
		    &b->regions[i] : NULL;
		char what[CFG_NAME_MAX + 48];

		if (ra == NULL) {
			change(o, true, rb->pos, "memory region '%s' added",
			    rb->name);
			continue;
		}
		if (rb == NULL) {
			if (region_in_use(b, i))
				change(o, false, nowhere, "memory region '%s' "
				    "removed while in use: needs a restart",
				    ra->name);
			else
				change(o, true, nowhere, "memory region '%s' "
				    "removed", ra->name);
			continue;
		}
		if (strcmp(ra->name, rb->name) != 0) {
			change(o, false, rb->pos, "memory region %d: '%s' -> "
			    "'%s': regions are added at the end and removed "
			    "from the end live; anything else needs a restart",
			    i, ra->name, rb->name);
			continue;
		}
		snprintf(what, sizeof(what), "memory region '%s': kind", rb->name);
		if (ra->kind != rb->kind)
			change(o, false, cfg_pos_of(b, &rb->kind, rb->pos),
			    "%s: %s -> %s: needs a restart", what,
			    name_or(cfg_mem_kind_names, DAQIRI_MEM_MAX,
			    (int)ra->kind), name_or(cfg_mem_kind_names,
			    DAQIRI_MEM_MAX, (int)rb->kind));
		snprintf(what, sizeof(what), "memory region '%s': affinity",
		    rb->name);
		RESTART_U(o, b, rb->pos, what, ra->affinity, rb->affinity);
		snprintf(what, sizeof(what), "memory region '%s': num_bufs",
		    rb->name);
		RESTART_U(o, b, rb->pos, what, ra->num_bufs, rb->num_bufs);
		snprintf(what, sizeof(what), "memory region '%s': buf_size",
		    rb->name);
		RESTART_U(o, b, rb->pos, what, ra->buf_size, rb->buf_size);
		if (ra->access != rb->access)
			change(o, false, rb->pos, "memory region '%s': access: "
			    "changed: needs a restart", rb->name);
	}
}

static bool
queue_equal(const struct cfg_queue *a, const struct cfg_queue *b)
{
	if (strcmp(a->name, b->name) != 0 || a->id != b->id ||
	    a->cpu_core != b->cpu_core || a->batch_size != b->batch_size ||
	    a->timeout_us != b->timeout_us || a->nregions != b->nregions ||
	    a->poll_mode != b->poll_mode || a->num_rx_desc != b->num_rx_desc ||
	    a->offload_tx_eth_src != b->offload_tx_eth_src)
		return false;
	for (int i = 0; i < a->nregions; i++)
		if (strcmp(a->region_names[i], b->region_names[i]) != 0)
			return false;
	return cfg_tx_dest_equal(&a->dest, &b->dest);
}

/* The first field of q that differs, for the message. */
static const void *
queue_first_diff(const struct cfg_queue *a, const struct cfg_queue *b,
		 const char **key)
{
#define QF(f) if (a->f != b->f) { *key = #f; return &b->f; }
	QF(id) QF(cpu_core) QF(batch_size) QF(timeout_us) QF(nregions)
	QF(poll_mode) QF(num_rx_desc)
	if (a->offload_tx_eth_src != b->offload_tx_eth_src) {
		*key = "offloads";
		return &b->offload_tx_eth_src;
	}
	for (int i = 0; i < a->nregions; i++) {
		if (strcmp(a->region_names[i], b->region_names[i]) != 0) {
			*key = "memory_regions";
			return b->region_names[i];
		}
	}
	/* the destination: the first field that differs, else the map */
#define DF(f) if (a->dest.has_##f != b->dest.has_##f ||			\
	    (b->dest.has_##f && memcmp(&a->dest.f, &b->dest.f,		\
	    sizeof(b->dest.f)) != 0)) {					\
		*key = "destination." #f; return &b->dest.f;		\
	}
	DF(eth_dst) DF(eth_src) DF(ipv4_src) DF(ipv4_dst) DF(udp_src)
	DF(udp_dst)
#undef DF
	if (a->dest.ttl != b->dest.ttl) {
		*key = "destination.ttl";
		return &b->dest.ttl;
	}
	if (a->dest.dscp != b->dest.dscp) {
		*key = "destination.dscp";
		return &b->dest.dscp;
	}
#undef QF
	*key = "destination";
	return &b->dest;
}

static void
diff_queues(const struct cfg *cb, const char *ifname, const char *dir,
	    const struct cfg_queue *qa, int na, const struct cfg_queue *qb,
	    int nb, struct cfg_pos ifpos, struct cfg_changes *o)
{
	for (int i = 0; i < na || i < nb; i++) {
		const char *key = "";
		const void *field;

		if (i >= na || i >= nb || strcmp(qa[i].name, qb[i].name) != 0) {
			change(o, false, i < nb ? qb[i].pos : ifpos,
			    "interface '%s': %s queue %d: '%s' -> '%s' (queues "
			    "added, removed or reordered): needs a restart",
			    ifname, dir, i, i < na ? qa[i].name : "(none)",
			    i < nb ? qb[i].name : "(none)");
			continue;
		}
		if (queue_equal(&qa[i], &qb[i]))
			continue;
		field = queue_first_diff(&qa[i], &qb[i], &key);
		change(o, false, cfg_pos_of(cb, field, qb[i].pos), "interface "
		    "'%s': %s queue '%s': %s changed: needs a restart", ifname,
		    dir, qb[i].name, key);
	}
}

static bool
match_equal(const struct cfg_flow *a, const struct cfg_flow *b)
{
	const struct cfg_match *x = &a->match, *y = &b->match;

	if (a->has_match != b->has_match)
		return false;
	if (!a->has_match)
		return true;
	return x->has_udp_src == y->has_udp_src &&
	    x->has_udp_dst == y->has_udp_dst &&
	    x->has_ipv4_len == y->has_ipv4_len &&
	    x->has_ipv4_src == y->has_ipv4_src &&
	    x->has_ipv4_dst == y->has_ipv4_dst &&
	    (!x->has_udp_src || (x->udp_src_lo == y->udp_src_lo &&
	    x->udp_src_hi == y->udp_src_hi)) &&
	    (!x->has_udp_dst || (x->udp_dst_lo == y->udp_dst_lo &&
	    x->udp_dst_hi == y->udp_dst_hi)) &&
	    (!x->has_ipv4_len || x->ipv4_len == y->ipv4_len) &&
	    (!x->has_ipv4_src || x->ipv4_src == y->ipv4_src) &&
	    (!x->has_ipv4_dst || x->ipv4_dst == y->ipv4_dst);
}

static bool
flow_equal(const struct cfg_flow *a, const struct cfg_flow *b)
{
	if (strcmp(a->name, b->name) != 0 || a->id != b->id ||
	    a->nqueue_ids != b->nqueue_ids || !match_equal(a, b))
		return false;
	for (int i = 0; i < a->nqueue_ids; i++)
		if (a->queue_ids[i] != b->queue_ids[i])
			return false;
	return true;
}

static const struct cfg_flow *
flow_by_id(const struct cfg_rx *rx, uint32_t id)
{
	for (int i = 0; i < rx->nflows; i++)
		if (rx->flows[i].id == id)
			return &rx->flows[i];
	return NULL;
}


/* The ids of the rx queues that feed reorder config r (cfg_rx_owner()),
 * as "1" or "0, 1" into buf ("none" when none). */
static const char *
owner_queue_ids(const struct cfg_interface *ifc, const struct cfg_reorder *r,
		char *buf, size_t len)
{
	uint32_t set = cfg_rx_owner_queues(ifc, r);
	size_t at = 0;

	snprintf(buf, len, "none");
	for (int q = 0; q < ifc->rx.nqueues && at < len; q++)
		if (set & (1u << q))
			at += (size_t)snprintf(buf + at, len - at, "%s%u",
			    at > 0 ? ", " : "", ifc->rx.queues[q].id);
	return buf;
}

/* Flows: live, as a whole table per interface, in file order. */
static void
diff_flows(const struct cfg *cb, const struct cfg_interface *ia,
	   const struct cfg_interface *ib, struct cfg_changes *o)
{
	const struct cfg_rx *a = &ia->rx, *b = &ib->rx;

	for (int i = 0; i < a->nflows; i++)
		if (flow_by_id(b, a->flows[i].id) == NULL)
			change(o, true, ib->pos, "interface '%s': flow %u "
			    "('%s') removed", ib->name, a->flows[i].id,
			    a->flows[i].name);
	for (int i = 0; i < b->nflows; i++) {
		const struct cfg_flow *fa = flow_by_id(a, b->flows[i].id);

		if (fa == NULL)
			change(o, true, b->flows[i].pos, "interface '%s': flow "
			    "%u ('%s') added", ib->name, b->flows[i].id,
			    b->flows[i].name);
		else if (!flow_equal(fa, &b->flows[i]))
			change(o, true, b->flows[i].pos, "interface '%s': flow "
			    "%u ('%s') changed", ib->name, b->flows[i].id,
			    b->flows[i].name);
	}
	if (a->nflows == b->nflows) {
		bool moved = false;

		for (int i = 0; i < a->nflows; i++)
			moved |= a->flows[i].id != b->flows[i].id;
		if (moved)
			change(o, true, ib->pos, "interface '%s': flows "
			    "reordered (the first that matches wins)",
			    ib->name);
	}
	if (a->flow_isolation != b->flow_isolation)
		change(o, true, cfg_pos_of(cb, &b->flow_isolation, ib->pos),
		    "interface '%s': flow_isolation: %s -> %s", ib->name,
		    a->flow_isolation ? "true" : "false",
		    b->flow_isolation ? "true" : "false");
	if (a->dynamic_flow_capacity != b->dynamic_flow_capacity)
		change(o, true, cfg_pos_of(cb, &b->dynamic_flow_capacity,
		    ib->pos), "interface '%s': dynamic_flow_capacity: "
		    "%u -> %u", ib->name, a->dynamic_flow_capacity,
		    b->dynamic_flow_capacity);
}

static bool
bitfield_eq(const struct cfg_bitfield *a, const struct cfg_bitfield *b)
{
	return a->bit_offset == b->bit_offset && a->bit_width == b->bit_width;
}

/* Everything of a reorder config but timeout_us, resync_after_us, fill,
 * window, missing_action and cyclic_sequence. */
static const char *
reorder_fixed_diff(const struct cfg_reorder *a, const struct cfg_reorder *b)
{
	if (a->type != b->type)
		return "reorder_type";
	if (strcmp(a->region_name, b->region_name) != 0)
		return "memory_region";
	if (a->payload_byte_offset != b->payload_byte_offset)
		return "payload_byte_offset";
	if (a->payload_bytes != b->payload_bytes || a->slot_bytes != b->slot_bytes)
		return "payload_bytes";
	if (a->nflow_ids != b->nflow_ids ||
	    memcmp(a->flow_ids, b->flow_ids, sizeof(a->flow_ids[0]) *
	    (size_t)a->nflow_ids) != 0)
		return "flow_ids";
	if (a->method != b->method || !bitfield_eq(&a->seq, &b->seq) ||
	    (a->method == CFG_METHOD_SEQ_BATCH_NUMBER &&
	    !bitfield_eq(&a->batch, &b->batch)) ||
	    a->packets_per_batch != b->packets_per_batch)
		return "method";
	if (a->has_data_types != b->has_data_types ||
	    a->input_type != b->input_type ||
	    a->output_type != b->output_type ||
	    a->endianness != b->endianness)
		return "data_types";
	return NULL;
}

static const struct cfg_reorder *
reorder_by_name(const struct cfg_rx *rx, const char *name)
{
	for (int j = 0; j < rx->nreorders; j++)
		if (strcmp(rx->reorders[j].name, name) == 0)
			return &rx->reorders[j];
	return NULL;
}

/* Did region index r of ca, a stream's output there, stay where it was
 * with nothing else writing it? An added stream needs a region no
 * running stream writes: one added with it, or one that was unused. */
static bool
region_free_in(const struct cfg *ca, const char *name)
{
	int r = cfg_region_find(ca, name);

	return r < 0 || !region_in_use(ca, r);
}

/* Streams are matched by name: one kept changes only timeout_us,
 * resync_after_us, fill, window and missing_action live (cyclic_sequence
 * too: it changes nothing); one added or removed is live too (its memory
 * region made or let go, its subscribers ended). */
static void
diff_reorders(const struct cfg *ca, const struct cfg *cb,
	      const struct cfg_interface *ia, const struct cfg_interface *ib,
	      struct cfg_changes *o)
{
	const struct cfg_rx *a = &ia->rx, *b = &ib->rx;

	for (int i = 0; i < a->nreorders; i++)
		if (reorder_by_name(b, a->reorders[i].name) == NULL)
			change(o, true, ib->pos, "stream '%s/%s' removed (its "
			    "subscribers are ended)", ib->name,
			    a->reorders[i].name);
	for (int i = 0; i < b->nreorders; i++) {
		const struct cfg_reorder *rb = &b->reorders[i];
		const struct cfg_reorder *ra = reorder_by_name(a, rb->name);
		char qa[CFG_MAX_QUEUES * 12], qb[CFG_MAX_QUEUES * 12];
		const char *key;

		if (ra == NULL) {
			if (!region_free_in(ca, rb->region_name))
				change(o, false, cfg_pos_of(cb, rb->region_name,
				    rb->pos), "stream '%s/%s' added on memory "
				    "region '%s', which the running "
				    "configuration uses: give it a new region "
				    "(or restart)", ib->name, rb->name,
				    rb->region_name);
			else
				change(o, true, rb->pos, "stream '%s/%s' added",
				    ib->name, rb->name);
			continue;
		}
		if ((key = reorder_fixed_diff(ra, rb)) != NULL)
			change(o, false, rb->pos, "stream '%s/%s': %s changed: "
			    "needs a restart (only timeout_us, resync_after_us, "
			    "fill, window and missing_action apply live)",
			    ib->name, rb->name, key);
		else if (strcmp(owner_queue_ids(ia, ra, qa, sizeof(qa)),
		    owner_queue_ids(ib, rb, qb, sizeof(qb))) != 0)
			change(o, false, rb->pos, "stream '%s/%s': its flows "
			    "now reach queue(s) %s, not %s: the queues that "
			    "feed a stream change only at a restart", ib->name,
			    rb->name, qb, qa);
		if (ra->timeout_us != rb->timeout_us)
			change(o, true, cfg_pos_of(cb, &rb->timeout_us, rb->pos),
			    "stream '%s/%s': timeout_us: %u -> %u", ib->name,
			    rb->name, ra->timeout_us, rb->timeout_us);
		/* a derived one follows timeout_us: that change says it */
		if (ra->resync_after_us != rb->resync_after_us &&
		    (ra->resync_after_given || rb->resync_after_given))
			change(o, true, cfg_pos_of(cb, &rb->resync_after_us,
			    rb->pos), "stream '%s/%s': resync_after_us: %u -> "
			    "%u", ib->name, rb->name, ra->resync_after_us,
			    rb->resync_after_us);
		if (ra->fill != rb->fill)
			change(o, true, cfg_pos_of(cb, &rb->fill, rb->pos),
			    "stream '%s/%s': fill: %s -> %s", ib->name, rb->name,
			    name_or(cfg_fill_names, DAQIRI_FILL_MAX,
			    (int)ra->fill), name_or(cfg_fill_names,
			    DAQIRI_FILL_MAX, (int)rb->fill));
		if (ra->window != rb->window)
			change(o, true, cfg_pos_of(cb, &rb->window, rb->pos),
			    "stream '%s/%s': window: %u -> %u", ib->name,
			    rb->name, ra->window, rb->window);
		if (ra->missing_action != rb->missing_action)
			change(o, true, cfg_pos_of(cb, &rb->missing_action,
			    rb->pos), "stream '%s/%s': missing_action: %s -> "
			    "%s", ib->name, rb->name, name_or(cfg_missing_names,
			    CFG_MISSING_MAX, (int)ra->missing_action),
			    name_or(cfg_missing_names, CFG_MISSING_MAX,
			    (int)rb->missing_action));
		if (ra->cyclic_sequence != rb->cyclic_sequence)
			change(o, true, cfg_pos_of(cb, &rb->cyclic_sequence,
			    rb->pos), "stream '%s/%s': cyclic_sequence: %s -> "
			    "%s (no effect in daqiri)", ib->name, rb->name,
			    ra->cyclic_sequence ? "true" : "false",
			    rb->cyclic_sequence ? "true" : "false");
	}
}

static bool
socket_equal(const struct cfg_socket *a, const struct cfg_socket *b)
{
	return a->present == b->present && a->mode == b->mode &&
	    a->local.set == b->local.set && a->local.addr == b->local.addr &&
	    a->local.port == b->local.port &&
	    a->local.transport == b->local.transport &&
	    a->remote.set == b->remote.set && a->remote.addr == b->remote.addr &&
	    a->remote.port == b->remote.port &&
	    a->remote.transport == b->remote.transport &&
	    a->max_payload_size == b->max_payload_size &&
	    a->retry_connect_s == b->retry_connect_s;
}

static void
diff_interfaces(const struct cfg *a, const struct cfg *b,
		struct cfg_changes *o)
{
	for (int i = 0; i < a->ninterfaces || i < b->ninterfaces; i++) {
		const struct cfg_interface *ia = i < a->ninterfaces ?
		    &a->interfaces[i] : NULL;
		const struct cfg_interface *ib = i < b->ninterfaces ?
		    &b->interfaces[i] : NULL;

		if (ia == NULL || ib == NULL || strcmp(ia->name, ib->name) != 0) {
			change(o, false, ib != NULL ? ib->pos : nowhere,
			    "interface %d: '%s' -> '%s' (interfaces added, "
			    "removed or reordered): needs a restart", i,
			    ia != NULL ? ia->name : "(none)",
			    ib != NULL ? ib->name : "(none)");
			continue;
		}
		RESTART_S(o, b, ib->pos, "interface address", ia->address,
		    ib->address);
		if (!socket_equal(&ia->socket, &ib->socket))
			change(o, false, cfg_pos_of(b, &ib->socket.local,
			    ib->pos), "interface '%s': socket_config changed: "
			    "needs a restart", ib->name);
		if (ia->has_rx != ib->has_rx)
			change(o, false, ib->pos, "interface '%s': rx section "
			    "added or removed: needs a restart", ib->name);
		diff_queues(b, ib->name, "rx", ia->rx.queues, ia->rx.nqueues,
		    ib->rx.queues, ib->rx.nqueues, ib->pos, o);
		if (ia->rx.hardware_timestamps != ib->rx.hardware_timestamps)
			change(o, false, cfg_pos_of(b, &ib->rx.hardware_timestamps,
			    ib->pos), "interface '%s': hardware_timestamps "
			    "changed: needs a restart", ib->name);
		diff_flows(b, ia, ib, o);
		diff_reorders(a, b, ia, ib, o);
		/* TX is restart-only, pacing too: a worker takes its rate
		 * (and its engine queue its headers) when it starts */
		if (ia->has_tx != ib->has_tx)
			change(o, false, ib->pos, "interface '%s': tx section "
			    "added or removed: needs a restart", ib->name);
		if (ia->tx.pacing_mbps != ib->tx.pacing_mbps)
			change(o, false, cfg_pos_of(b, &ib->tx.pacing_mbps,
			    ib->pos), "interface '%s': tx pacing_mbps: %u -> "
			    "%u: needs a restart", ib->name, ia->tx.pacing_mbps,
			    ib->tx.pacing_mbps);
		diff_queues(b, ib->name, "tx", ia->tx.queues, ia->tx.nqueues,
		    ib->tx.queues, ib->tx.nqueues, ib->pos, o);
	}
}

int
cfg_diff(const struct cfg *old, const struct cfg *new_cfg,
	 struct cfg_changes *out)
{
	memset(out, 0, sizeof(*out));
	diff_top(old, new_cfg, out);
	diff_daemon(old, new_cfg, out);
	diff_regions(old, new_cfg, out);
	diff_interfaces(old, new_cfg, out);
	return out->nrestart;
}

void
cfg_changes_print(const struct cfg_changes *ch, const char *file, FILE *fp)
{
	for (int i = 0; i < ch->n; i++) {
		const struct cfg_change *c = &ch->ch[i];

		if (c->pos.line > 0)
			fprintf(fp, "%s:%d:%d: %s: %s\n", file, c->pos.line,
			    c->pos.col, c->live ? "live" : "restart", c->msg);
		else
			fprintf(fp, "%s: %s: %s\n", file, c->live ? "live" :
			    "restart", c->msg);
	}
	if (ch->nrestart + ch->nlive > ch->n)
		fprintf(fp, "%s: %d more changes not shown\n", file,
		    ch->nrestart + ch->nlive - ch->n);
}

/* config.h: the live parts of nc into run (the reload's copy; plans and
 * workers keep their own copies of what they read at run time). */
void
cfg_apply_live(struct cfg *run, const struct cfg *nc)
{
	run->debug = nc->debug;
	run->log_level = nc->log_level;
	run->daemon.stats_interval_ms = nc->daemon.stats_interval_ms;
	run->nregions = nc->nregions;
	memcpy(run->regions, nc->regions, sizeof(run->regions));
	for (int i = 0; i < run->ninterfaces; i++) {
		struct cfg_rx *a = &run->interfaces[i].rx;
		const struct cfg_rx *b = &nc->interfaces[i].rx;

		a->nflows = b->nflows;
		memcpy(a->flows, b->flows, sizeof(a->flows));
		a->flow_isolation = b->flow_isolation;
		a->dynamic_flow_capacity = b->dynamic_flow_capacity;
		a->nreorders = b->nreorders;
		memcpy(a->reorders, b->reorders, sizeof(a->reorders));
	}
	/* positions now refer to the file just read */
	run->nmarks = nc->nmarks;
	memcpy(run->marks, nc->marks, sizeof(run->marks[0]) *
	    (size_t)nc->nmarks);
}
