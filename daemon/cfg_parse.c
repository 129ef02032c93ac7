/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The schema walk: a YAML document, section by section, into struct cfg
 * with every default filled in. Sections are read in the order their
 * references need (regions before interfaces, queues before the flows
 * that name them, flows before reorder configs, whose section is
 * cfg_reorder.c's). What spans sections is checked in cfg_check.c; text
 * and libyaml are cfg_load.c's.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cfg_internal.h"

/* ---------------------------------------------------------------------
 * Defaults, before anything is read.
 */
void
cfg_defaults(struct cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->stream_type = CFG_STREAM_RAW;
	c->engine = CFG_ENGINE_DPDK;
	c->log_level = CFG_LOG_WARN;
	c->loopback = CFG_LOOPBACK_NONE;
	c->tx_meta_buffers = 256;
	c->rx_meta_buffers = 256;
	snprintf(c->daemon.control_socket, sizeof(c->daemon.control_socket),
		 "%s", "/run/daqiri/daqirid.sock");
	c->daemon.socket_mode = 0660;
	c->daemon.max_consumers = 64;
	c->daemon.stats_interval_ms = 1000;
	c->daemon.hold_timeout_ms = 10000;
	c->daemon.hello_timeout_ms = 1000;
	c->daemon.max_subscriptions_per_connection = 16;
	c->daemon.max_connections_per_uid = 16;
	c->daemon.reserved_admin_connections = 8;
}

static bool
is_group_name(const char *s)
{
	size_t len = strlen(s);

	return len > 0 && len <= 32 && !(s[0] >= '0' && s[0] <= '9') &&
	    s[0] != '-' && cfg_all_of(s, len, "abcdefghijklmnopqrstuvwxyz"
		"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-");
}

/* ---------------------------------------------------------------------
 * The daemon: section.
 */
static const struct keydef daemon_keys[] = {
	{ "control_socket", KEY_OWN, NULL },
	{ "socket_mode", KEY_OWN, NULL },
	{ "socket_group", KEY_OWN, NULL },
	{ "admin_group", KEY_OWN, NULL },
	{ "max_consumers", KEY_OWN, NULL },
	{ "stats_interval_ms", KEY_OWN, NULL },
	{ "metrics_listen", KEY_OWN, NULL },
	{ "rx_mode", KEY_OWN, NULL },
	{ "hold_timeout_ms", KEY_OWN, NULL },
	{ "hello_timeout_ms", KEY_OWN, NULL },
	{ "max_subscriptions_per_connection", KEY_OWN, NULL },
	{ "max_connections_per_uid", KEY_OWN, NULL },
	{ "reserved_admin_connections", KEY_OWN, NULL },
};

/* A listen address only this machine reaches: loopback or a unix path. */
static bool
listen_local(const struct cfg_listen *l)
{
	static const unsigned char v6_lo[16] = { [15] = 1 };

	if (l->kind == CFG_LISTEN_UNIX)
		return true;
	if (l->kind == CFG_LISTEN_INET)
		return l->addr[0] == 127;
	return memcmp(l->addr, v6_lo, sizeof(v6_lo)) == 0;
}

static void
parse_daemon(struct pctx *x, yaml_node_t *n)
{
	struct cfg_daemon *dm = &x->c->daemon;
	struct map m;
	yaml_node_t *v;
	char qb[QBUF];

	if (!cfg_map_open(x, &m, n, "daemon", "daemon", KEYS(daemon_keys),
			  false))
		return;
	v = mval(&m, "control_socket");
	if (v != NULL && cfg_get_str(x, "control_socket", v, dm->control_socket,
				     sizeof(dm->control_socket))) {
		size_t len = strlen(dm->control_socket);

		if (dm->control_socket[0] != '/')
			err(x, v, "control_socket: must be an absolute path, "
			    "got '%s'", cfg_quote(dm->control_socket, len, qb));
		else if (len >= CFG_SUN_PATH_MAX)
			err(x, v, "control_socket: too long for a unix socket "
			    "(%zu bytes, at most %d)", len,
			    CFG_SUN_PATH_MAX - 1);
	}
	if ((v = mval(&m, "socket_mode")) != NULL)
		cfg_get_mode(x, "socket_mode", v, &dm->socket_mode);
	v = mval(&m, "socket_group");
	if (v != NULL && cfg_get_str(x, "socket_group", v, dm->socket_group,
				     sizeof(dm->socket_group)) &&
	    dm->socket_group[0] != '\0' && !is_group_name(dm->socket_group))
		err(x, v, "socket_group: '%s' is not a group name",
		    cfg_quote(dm->socket_group, strlen(dm->socket_group), qb));
	v = mval(&m, "admin_group");
	if (v != NULL && cfg_get_str(x, "admin_group", v, dm->admin_group,
				     sizeof(dm->admin_group)) &&
	    dm->admin_group[0] != '\0' && !is_group_name(dm->admin_group))
		err(x, v, "admin_group: '%s' is not a group name",
		    cfg_quote(dm->admin_group, strlen(dm->admin_group), qb));
	if ((v = mval(&m, "max_consumers")) != NULL)
		cfg_get_u32(x, "max_consumers", v, 1, CFG_CONSUMERS_MAX,
			    &dm->max_consumers);
	if ((v = mval(&m, "stats_interval_ms")) != NULL)
		cfg_get_u32(x, "stats_interval_ms", v, CFG_STATS_MS_MIN,
			    CFG_STATS_MS_MAX, &dm->stats_interval_ms);
	if ((v = mval(&m, "hold_timeout_ms")) != NULL)
		cfg_get_u32(x, "hold_timeout_ms", v, 0, CFG_HOLD_MS_MAX,
			    &dm->hold_timeout_ms);
	if ((v = mval(&m, "hello_timeout_ms")) != NULL)
		cfg_get_u32(x, "hello_timeout_ms", v, CFG_HELLO_MS_MIN,
			    CFG_HELLO_MS_MAX, &dm->hello_timeout_ms);
	if ((v = mval(&m, "max_subscriptions_per_connection")) != NULL)
		cfg_get_u32(x, "max_subscriptions_per_connection", v, 1,
			    CFG_CONSUMERS_MAX, &dm->max_subscriptions_per_connection);
	if ((v = mval(&m, "max_connections_per_uid")) != NULL)
		cfg_get_u32(x, "max_connections_per_uid", v, 1,
			    CFG_CONSUMERS_MAX, &dm->max_connections_per_uid);
	if ((v = mval(&m, "reserved_admin_connections")) != NULL)
		cfg_get_u32(x, "reserved_admin_connections", v, 0,
			    CFG_RESERVED_MAX, &dm->reserved_admin_connections);
	if ((v = mval(&m, "rx_mode")) != NULL) {
		int k;

		if (cfg_get_enum(x, "rx_mode", v, KEYS(cfg_rx_mode_names), &k))
			dm->rx_mode = (enum cfg_rx_mode)k;
		cfg_mark(x, &dm->rx_mode, v);
	}
	v = mval(&m, "metrics_listen");
	if (v != NULL && cfg_get_str(x, "metrics_listen", v, dm->metrics_listen,
				     sizeof(dm->metrics_listen)) &&
	    dm->metrics_listen[0] != '\0') {
		struct cfg_listen l;

		if (!cfg_parse_listen(dm->metrics_listen, &l))
			err(x, v, "metrics_listen: expected IPV4:PORT, [IPV6]:PORT "
			    "or unix:/PATH such as 127.0.0.1:9464, got '%s'",
			    cfg_quote(dm->metrics_listen,
				      strlen(dm->metrics_listen), qb));
		else if (!listen_local(&l))
			warn(x, v, "metrics_listen: '%s' is not a loopback "
			     "address: whoever reaches it reads every counter "
			     "and can load the endpoint (it has no "
			     "authentication); listen on 127.0.0.1 or a unix "
			     "socket, or keep it behind a firewall",
			     cfg_quote(dm->metrics_listen,
				       strlen(dm->metrics_listen), qb));
	}
}

/* ---------------------------------------------------------------------
 * memory_regions[]
 */
static const struct keydef region_keys[] = {
	{ "name", KEY_OK, NULL },
	{ "kind", KEY_OK, NULL },
	{ "affinity", KEY_OK, NULL },
	{ "num_bufs", KEY_OK, NULL },
	{ "buf_size", KEY_OK, NULL },
	{ "access", KEY_OK, NULL },
	{ "owned", KEY_OK, NULL },
};

static void
parse_region(struct pctx *x, yaml_node_t *n, struct cfg_region *r, int idx)
{
	struct cfg *c = x->c;
	struct map m;
	yaml_node_t *v;
	int k;

	r->pos = pos_of(n);
	if (!cfg_map_open(x, &m, n, "memory_regions entry", "memory region",
			  KEYS(region_keys), false))
		return;
	require(x, &m, "name");
	require(x, &m, "kind");
	require(x, &m, "num_bufs");
	require(x, &m, "buf_size");
	v = mval(&m, "name");
	if (v != NULL && cfg_get_name(x, "name", v, r->name)) {
		for (int i = 0; i < idx; i++) {
			if (strcmp(c->regions[i].name, r->name) == 0) {
				err(x, v, "name: memory region '%s' is already "
				    "defined at line %d", r->name,
				    c->regions[i].pos.line);
				/* references find the first one */
				r->name[0] = '\0';
				break;
			}
		}
	}
	if ((v = mval(&m, "kind")) != NULL &&
	    cfg_get_enum(x, "kind", v, KEYS(cfg_mem_kind_names), &k)) {
		r->kind = (enum daqiri_mem_kind)k;
		cfg_mark(x, &r->kind, v);
	}
	if ((v = mval(&m, "affinity")) != NULL)
		cfg_get_int(x, "affinity", v, 0, CFG_AFFINITY_MAX,
			    &r->affinity);
	if ((v = mval(&m, "num_bufs")) != NULL &&
	    cfg_get_u32(x, "num_bufs", v, 1, UINT32_MAX, &r->num_bufs) &&
	    idx >= 0 && idx < CFG_MAX_REGIONS)
		/* a reorder output checks it against DAQIRI_NBUFS_MAX */
		x->num_bufs_at[idx] = pos_of(v);
	if ((v = mval(&m, "buf_size")) != NULL)
		cfg_get_u64(x, "buf_size", v, 1, CFG_BUF_SIZE_MAX,
			    &r->buf_size);
	if ((v = mval(&m, "access")) != NULL) {
		yaml_node_item_t *it;
		int cnt = cfg_get_list(x, "access", v, 8, &it);

		for (int i = 0; i < cnt; i++) {
			yaml_node_t *e = node_at(x, it[i]);

			if (e != NULL &&
			    cfg_get_enum(x, "access", e,
					 KEYS(cfg_access_names), &k))
				r->access |= 1u << k;
		}
	}
	if ((v = mval(&m, "owned")) != NULL) {
		bool owned = true;

		if (cfg_get_bool(x, "owned", v, &owned) && !owned)
			err(x, v, "owned: not supported by daqiri: memory the "
			    "application provides, owned: false (daqiri "
			    "allocates every region, and seals what it shares "
			    "with consumers; leave owned out)");
	}
}

static void
parse_regions(struct pctx *x, yaml_node_t *n)
{
	struct cfg *c = x->c;
	yaml_node_item_t *it;
	int cnt = cfg_get_list(x, "memory_regions", n, CFG_MAX_REGIONS, &it);

	for (int i = 0; i < cnt; i++) {
		yaml_node_t *e = node_at(x, it[i]);

		if (e == NULL)
			continue;
		parse_region(x, e, &c->regions[c->nregions], c->nregions);
		c->nregions++;
	}
}

/* ---------------------------------------------------------------------
 * Queues (rx and tx).
 */
static const struct keydef rx_queue_keys[] = {
	{ "name", KEY_OK, NULL },
	{ "id", KEY_OK, NULL },
	{ "cpu_core", KEY_OK, NULL },
	{ "batch_size", KEY_OK, NULL },
	{ "timeout_us", KEY_DIFFERS, "the reference times reorder batches "
	  "out with it; here it delivers the queue's raw stream's partial "
	  "bursts, and each reorder config has a timeout_us of its own" },
	{ "memory_regions", KEY_OK, NULL },
	{ "poll_mode", KEY_OK, NULL },
	{ "num_rx_desc", KEY_OWN, "the DPDK port's receive descriptors" },
};

static const struct keydef tx_queue_keys[] = {
	{ "name", KEY_OK, NULL },
	{ "id", KEY_OK, NULL },
	{ "cpu_core", KEY_OK, NULL },
	{ "batch_size", KEY_OK, NULL },
	{ "timeout_us", KEY_NO_EFFECT, "has no effect on a tx queue" },
	{ "memory_regions", KEY_OK, NULL },
	{ "poll_mode", KEY_OK, NULL },
	{ "offloads", KEY_OK, NULL },
	{ "pacing_mbps", KEY_OK, NULL },
	{ "destination", KEY_OWN, "the headers daqiri writes for the "
	  "queue's payloads" },
};

static void
parse_queue_regions(struct pctx *x, yaml_node_t *n, struct cfg_queue *q,
		    bool tx)
{
	yaml_node_item_t *it;
	int cnt = cfg_get_list(x, "memory_regions", n, CFG_MAX_QUEUE_REGIONS,
			       &it);

	for (int i = 0; i < cnt; i++) {
		yaml_node_t *e = node_at(x, it[i]);
		char *name = q->region_names[q->nregions];
		int ri;

		if (e == NULL || !cfg_get_str(x, "memory_regions", e, name,
					      CFG_NAME_MAX))
			continue;
		if (name[0] == '\0') {
			/* else a queue could end up with no region at all */
			err(x, e, "memory_regions: an entry must name a memory "
			    "region (this one is empty)");
			continue;
		}
		for (int j = 0; j < q->nregions; j++) {
			if (strcmp(q->region_names[j], name) == 0) {
				char qb[QBUF];

				err(x, e, "memory_regions: '%s' is listed "
				    "twice", cfg_quote(name, strlen(name), qb));
				name[0] = '\0';
			}
		}
		if (name[0] == '\0')
			continue;
		ri = cfg_find_region(x, "memory_regions", e, name);
		q->region_idx[q->nregions++] = ri;
		if (ri >= 0)
			cfg_check_queue_region(x, e, q, ri, i, tx, name);
	}
	if (q->nregions == 2 && tx)
		err(x, n, "memory_regions: not supported by daqiri: a tx "
		    "queue's header region (daqiri writes every header "
		    "itself; give one region, the payload buffers)");
	else if (q->nregions == 2 && eng(x) != NULL && !eng(x)->rx_split)
		err(x, n, "memory_regions: header-data split (two regions) "
		    "needs stream_type raw");
}

/*
 * One queue; tx selects the tx keys. Returns whether id is valid; *pacing
 * is the pacing_mbps value node of a tx queue (NULL when absent).
 */
static bool
parse_queue(struct pctx *x, yaml_node_t *n, struct cfg_queue *q, bool tx,
	    yaml_node_t **pacing)
{
	const char *dir = tx ? "tx queue" : "rx queue";
	struct map m;
	yaml_node_t *v;
	bool id_ok = false;
	uint64_t u;
	int k;

	q->cpu_core = -1;
	q->pos = pos_of(n);
	*pacing = NULL;
	if (!cfg_map_open(x, &m, n, "queues entry", dir,
			  tx ? tx_queue_keys : rx_queue_keys,
			  tx ? (int)NELEM(tx_queue_keys) :
			  (int)NELEM(rx_queue_keys), false))
		return false;
	require(x, &m, "name");
	require(x, &m, "id");
	require(x, &m, "batch_size");
	require(x, &m, "memory_regions");
	if ((v = mval(&m, "name")) != NULL)
		cfg_get_name(x, "name", v, q->name);
	if ((v = mval(&m, "id")) != NULL)
		id_ok = cfg_get_u32(x, "id", v, 0, UINT16_MAX, &q->id);
	if ((v = mval(&m, "cpu_core")) != NULL &&
	    cfg_get_uint_q(x, "cpu_core", v, 0, CFG_CORE_MAX, true, &u))
		q->cpu_core = (int)u;
	if ((v = mval(&m, "batch_size")) != NULL)
		cfg_get_u32(x, "batch_size", v, 1, UINT16_MAX, &q->batch_size);
	if ((v = mval(&m, "timeout_us")) != NULL)
		cfg_get_u32(x, "timeout_us", v, 0, UINT32_MAX, &q->timeout_us);
	if ((v = mval(&m, "num_rx_desc")) != NULL &&
	    cfg_get_u32(x, "num_rx_desc", v, CFG_RX_DESC_MIN, CFG_RX_DESC_MAX,
	    &q->num_rx_desc) && eng(x) != NULL && !eng(x)->eal_args)
		warn(x, v, "num_rx_desc: has no effect with stream_type %s "
		     "(its socket's receive buffer follows the queue's "
		     "region)", eng(x)->stream_type);
	if ((v = mval(&m, "memory_regions")) != NULL)
		parse_queue_regions(x, v, q, tx);
	if ((v = mval(&m, "poll_mode")) != NULL) {
		if (scalar_is(v, "direct"))
			err(x, v, "poll_mode: not supported by daqiri: direct "
			    "polling (use indirect)");
		else if (cfg_get_enum(x, "poll_mode", v,
				      KEYS(cfg_poll_mode_names), &k))
			q->poll_mode = (enum cfg_poll_mode)k;
	}
	if ((v = mval(&m, "offloads")) != NULL) {
		static const char *const offload_names[] = { "tx_eth_src" };
		yaml_node_item_t *it;
		int cnt = cfg_get_list(x, "offloads", v, 4, &it);

		for (int i = 0; i < cnt; i++) {
			yaml_node_t *e = node_at(x, it[i]);

			if (e != NULL && cfg_get_enum(x, "offloads", e,
						      KEYS(offload_names), &k))
				q->offload_tx_eth_src = true;
		}
	}
	if (tx)
		cfg_parse_tx_dest(x, mval(&m, "destination"), q,
				  mkey(&m, "offloads"));
	*pacing = mval(&m, "pacing_mbps");
	return id_ok;
}

static void
parse_queues(struct pctx *x, yaml_node_t *n, struct cfg_queue *qs, int *nq,
	     bool tx, uint32_t *pacing)
{
	const char *dir = tx ? "tx" : "rx";
	yaml_node_item_t *it;
	int cnt = cfg_get_list(x, "queues", n, CFG_MAX_QUEUES, &it);
	bool id_ok[CFG_MAX_QUEUES];
	int pacing_line = 0;

	for (int i = 0; i < cnt; i++) {
		yaml_node_t *e = node_at(x, it[i]), *pv;
		struct cfg_queue *q = &qs[*nq];
		uint32_t rate;

		if (e == NULL)
			continue;
		id_ok[*nq] = parse_queue(x, e, q, tx, &pv);
		for (int j = 0; j < *nq; j++) {
			if (q->name[0] != '\0' &&
			    strcmp(qs[j].name, q->name) == 0)
				err_at(x, q->pos, "%s queue name '%s' is already "
				       "used at line %d", dir, q->name,
				       qs[j].pos.line);
			if (id_ok[*nq] && id_ok[j] && qs[j].id == q->id)
				err_at(x, q->pos, "%s queue id %u is already used "
				       "by queue '%s' at line %d", dir, q->id,
				       qs[j].name, qs[j].pos.line);
		}
		(*nq)++;
		/* struct cfg_tx keeps one pacing rate per interface */
		if (pv == NULL ||
		    !cfg_get_u32(x, "pacing_mbps", pv, 0, UINT32_MAX, &rate))
			continue;
		if (pacing_line != 0 && rate != *pacing) {
			err(x, pv, "pacing_mbps: daqiri paces all tx queues of "
			    "an interface at one rate; line %d gives %u",
			    pacing_line, *pacing);
		} else {
			*pacing = rate;
			cfg_mark(x, pacing, pv);
			pacing_line = pos_of(pv).line;
		}
	}
}

/* ---------------------------------------------------------------------
 * Flows: match and the queue action.
 */
static const struct keydef flow_keys[] = {
	{ "name", KEY_OK, NULL },
	{ "id", KEY_OK, NULL },
	{ "action", KEY_OK, NULL },
	{ "actions", KEY_OK, NULL },
	{ "match", KEY_OK, NULL },
};

static const struct keydef action_keys[] = {
	{ "type", KEY_OK, NULL },
	{ "id", KEY_OK, NULL },
	{ "ids", KEY_OK, NULL },
};

/* What flows match instead of a refused match key. */
#define NS_MATCHES	"(flows match udp_src, udp_dst, ipv4_src, ipv4_dst " \
			"and ipv4_len)"
#define NS_FLEX		"not supported by daqiri: flex-item matching " \
			NS_MATCHES

static const struct keydef match_keys[] = {
	{ "udp_src", KEY_OK, NULL },
	{ "udp_dst", KEY_OK, NULL },
	{ "ipv4_len", KEY_OK, NULL },
	{ "ipv4_src", KEY_OK, NULL },
	{ "ipv4_dst", KEY_OK, NULL },
	{ "flex_item_id", KEY_UNSUPPORTED, NS_FLEX },
	{ "val", KEY_UNSUPPORTED, NS_FLEX },
	{ "mask", KEY_UNSUPPORTED, NS_FLEX },
	{ "ecpri", KEY_UNSUPPORTED, "not supported by daqiri: eCPRI matching "
	  NS_MATCHES },
	{ "ethernet", KEY_UNSUPPORTED, "not supported by daqiri: Ethernet "
	  "address matching " NS_MATCHES },
};

static const char *const action_type_names[] = {
	"queue", "vlan_push", "vlan_pop", "tunnel_encap", "tunnel_decap",
};

/*
 * One action map. Returns 1 for a queue action (targets stored in f),
 * 0 for an action daqiri does not have (reported), -1 on other errors.
 */
static int
parse_action(struct pctx *x, yaml_node_t *n, struct cfg_flow *f,
	     const struct queue_set *set)
{
	yaml_node_t *type = NULL, *v;
	struct map m;
	char db[DBUF];
	int k;

	if (n->type != YAML_MAPPING_NODE) {
		err(x, n, "action: expected a map, got %s",
		    cfg_describe(n, db));
		return -1;
	}
	/* the type decides which keys the map may hold */
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
	     p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = node_at(x, p->key);

		if (kn != NULL && scalar_is(kn, "type")) {
			type = node_at(x, p->value);
			break;
		}
	}
	if (type == NULL) {
		err(x, n, "missing required key 'type' in flow action");
		return -1;
	}
	if (!cfg_get_enum(x, "type", type, KEYS(action_type_names), &k))
		return -1;
	if (k != 0) {
		err(x, type, "type: not supported by daqiri: the %s action "
		    "(a flow steers packets to a queue: type queue)",
		    action_type_names[k]);
		return 0;
	}
	if (!cfg_map_open(x, &m, n, "action", "flow action", KEYS(action_keys),
			  false))
		return -1;
	f->nqueue_ids = 0;
	if (mget(&m, "id") != NULL && mget(&m, "ids") != NULL) {
		err(x, mkey(&m, "ids"), "flow action: give 'id' or 'ids', not "
		    "both");
		return -1;
	}
	if ((v = mval(&m, "id")) != NULL) {
		if (!cfg_get_u32(x, "id", v, 0, UINT16_MAX, &f->queue_ids[0]))
			return -1;
		cfg_check_queue_id(x, "id", v, set, f->queue_ids[0]);
		f->nqueue_ids = 1;
	} else if ((v = mval(&m, "ids")) != NULL) {
		yaml_node_item_t *it;
		int cnt = cfg_get_list(x, "ids", v, CFG_MAX_QUEUE_IDS, &it);

		for (int i = 0; i < cnt; i++) {
			yaml_node_t *e = node_at(x, it[i]);
			uint32_t id;

			if (e == NULL ||
			    !cfg_get_u32(x, "ids", e, 0, UINT16_MAX, &id))
				continue;
			cfg_check_queue_id(x, "ids", e, set, id);
			for (int j = 0; j < f->nqueue_ids; j++)
				if (f->queue_ids[j] == id)
					err(x, e, "ids: queue %u is listed "
					    "twice", id);
			f->queue_ids[f->nqueue_ids++] = id;
		}
	} else {
		err(x, n, "missing required key 'id' in flow action");
		return -1;
	}
	return f->nqueue_ids > 0 ? 1 : -1;
}

static void
parse_match(struct pctx *x, yaml_node_t *n, struct cfg_flow *f)
{
	struct cfg_match *mt = &f->match;
	struct map m;
	yaml_node_t *v;
	uint32_t len;

	if (!cfg_map_open(x, &m, n, "match", "match", KEYS(match_keys), false))
		return;
	if (n->data.mapping.pairs.top == n->data.mapping.pairs.start) {
		err(x, n, "match: empty; leave 'match' out to match every "
		    "packet");
		return;
	}
	f->has_match = true;
	if ((v = mval(&m, "udp_src")) != NULL)
		mt->has_udp_src = cfg_get_port_range(x, "udp_src", v,
						     &mt->udp_src_lo,
						     &mt->udp_src_hi);
	if ((v = mval(&m, "udp_dst")) != NULL)
		mt->has_udp_dst = cfg_get_port_range(x, "udp_dst", v,
						     &mt->udp_dst_lo,
						     &mt->udp_dst_hi);
	if ((v = mval(&m, "ipv4_len")) != NULL &&
	    cfg_get_u32(x, "ipv4_len", v, CFG_IPV4_LEN_MIN, UINT16_MAX, &len)) {
		mt->has_ipv4_len = true;
		mt->ipv4_len = (uint16_t)len;
	}
	if ((v = mval(&m, "ipv4_src")) != NULL)
		mt->has_ipv4_src = cfg_get_ipv4(x, "ipv4_src", v,
						&mt->ipv4_src);
	if ((v = mval(&m, "ipv4_dst")) != NULL)
		mt->has_ipv4_dst = cfg_get_ipv4(x, "ipv4_dst", v,
						&mt->ipv4_dst);
}

/* One flow. Returns whether its id is valid. */
static bool
parse_flow(struct pctx *x, yaml_node_t *n, struct cfg_flow *f,
	   const struct queue_set *set)
{
	struct map m;
	yaml_node_t *v;
	bool id_ok = false;

	f->pos = pos_of(n);
	if (!cfg_map_open(x, &m, n, "flows entry", "flow", KEYS(flow_keys),
			  false))
		return false;
	require(x, &m, "name");
	require(x, &m, "id");
	if ((v = mval(&m, "name")) != NULL)
		cfg_get_name(x, "name", v, f->name);
	if ((v = mval(&m, "id")) != NULL)
		id_ok = cfg_get_u32(x, "id", v, 0, UINT32_MAX, &f->id);
	if (mget(&m, "action") != NULL && mget(&m, "actions") != NULL) {
		err(x, mkey(&m, "actions"), "flow: give 'action' or "
		    "'actions', not both");
	} else if ((v = mval(&m, "action")) != NULL) {
		parse_action(x, v, f, set);
	} else if ((v = mval(&m, "actions")) != NULL) {
		yaml_node_item_t *it;
		int cnt = cfg_get_list(x, "actions", v, 8, &it);

		for (int i = 0; i < cnt; i++) {
			yaml_node_t *e = node_at(x, it[i]);
			int kind;	/* 1 queue, 0 unsupported, -1 bad */

			if (e == NULL)
				continue;
			kind = parse_action(x, e, f, set);
			if (kind == 1 && i != cnt - 1)
				err(x, e, "actions: the queue action must be "
				    "the last one");
		}
	} else {
		err(x, n, "missing required key 'action' in flow");
	}
	if ((v = mval(&m, "match")) != NULL)
		parse_match(x, v, f);
	return id_ok;
}

static void
parse_flows(struct pctx *x, yaml_node_t *n, struct cfg_flow *fs, int *nf,
	    const struct queue_set *set)
{
	yaml_node_item_t *it;
	int cnt = cfg_get_list(x, "flows", n, CFG_MAX_FLOWS, &it);
	bool id_ok[CFG_MAX_FLOWS];

	for (int i = 0; i < cnt; i++) {
		yaml_node_t *e = node_at(x, it[i]);
		struct cfg_flow *f = &fs[*nf];

		if (e == NULL)
			continue;
		id_ok[*nf] = parse_flow(x, e, f, set);
		for (int j = 0; j < *nf; j++) {
			if (f->name[0] != '\0' &&
			    strcmp(fs[j].name, f->name) == 0)
				err_at(x, f->pos, "%s flow name '%s' is already "
				       "used at line %d", set->dir, f->name,
				       fs[j].pos.line);
			if (id_ok[*nf] && id_ok[j] && fs[j].id == f->id)
				err_at(x, f->pos, "%s flow id %u is already used "
				       "by flow '%s' at line %d", set->dir,
				       f->id, fs[j].name, fs[j].pos.line);
		}
		(*nf)++;
	}
}

/* ---------------------------------------------------------------------
 * interfaces[]: socket_config, rx, tx.
 */
static const struct keydef interface_keys[] = {
	{ "name", KEY_OK, NULL },
	{ "address", KEY_OK, NULL },
	{ "socket_config", KEY_OK, NULL },
	{ "rx", KEY_OK, NULL },
	{ "tx", KEY_OK, NULL },
	/* signs of an RDMA interface (rdma_sign()), never read */
	{ "roce_config", KEY_OK, NULL },
	{ "rdma_config", KEY_OK, NULL },
};

static const struct keydef socket_keys[] = {
	{ "mode", KEY_OK, NULL },
	{ "local_addr", KEY_OK, NULL },
	{ "remote_addr", KEY_OK, NULL },
	{ "max_payload_size", KEY_OK, NULL },
	{ "retry_connect_s", KEY_OK, NULL },
	{ "min_ipg_ns", KEY_NO_EFFECT,
	  "has no effect in daqiri (no inter-packet gap control)" },
	{ "max_burst_interval_ms", KEY_NO_EFFECT, "has no effect in daqiri" },
	{ "local_ip", KEY_UNSUPPORTED, "not supported by daqiri: the legacy "
	  "form (use local_addr: udp://IPV4:PORT)" },
	{ "local_port", KEY_UNSUPPORTED, "not supported by daqiri: the legacy "
	  "form (use local_addr: udp://IPV4:PORT)" },
	{ "remote_ip", KEY_UNSUPPORTED, "not supported by daqiri: the legacy "
	  "form (use remote_addr: udp://IPV4:PORT)" },
	{ "remote_port", KEY_UNSUPPORTED, "not supported by daqiri: the "
	  "legacy form (use remote_addr: udp://IPV4:PORT)" },
};

static const struct keydef rx_keys[] = {
	{ "queues", KEY_OK, NULL },
	{ "flows", KEY_OK, NULL },
	{ "flow_isolation", KEY_OK, NULL },
	{ "dynamic_flow_capacity", KEY_OK, NULL },
	{ "hardware_timestamps", KEY_OK, NULL },
	{ "reorder_configs", KEY_OK, NULL },
	{ "flex_items", KEY_UNSUPPORTED, "not supported by daqiri: flex items "
	  NS_MATCHES },
};

static const struct keydef tx_keys[] = {
	{ "queues", KEY_OK, NULL },
	{ "flows", KEY_UNSUPPORTED, "not supported by daqiri: tx flows (a tx "
	  "queue sends to its destination map)" },
	{ "accurate_send", KEY_NO_EFFECT,
	  "has no effect in daqiri (no timestamped send)" },
};

static void
parse_socket(struct pctx *x, yaml_node_t *n, struct cfg_socket *s)
{
	struct map m;
	yaml_node_t *v, *lv, *rv, *tcp = NULL;
	bool mode_ok = false;
	uint32_t u;
	int k;

	s->retry_connect_s = 1;
	if (!cfg_map_open(x, &m, n, "socket_config", "socket_config",
			  KEYS(socket_keys), false))
		return;
	s->present = true;
	require(x, &m, "mode");
	if ((v = mval(&m, "mode")) != NULL &&
	    cfg_get_enum(x, "mode", v, KEYS(cfg_sock_mode_names), &k)) {
		s->mode = (enum cfg_sock_mode)k;
		mode_ok = true;
	}
	if ((lv = mval(&m, "local_addr")) != NULL)
		cfg_get_endpoint(x, "local_addr", lv, &s->local);
	if ((rv = mval(&m, "remote_addr")) != NULL)
		cfg_get_endpoint(x, "remote_addr", rv, &s->remote);
	/* TCP once per interface, at its first tcp:// endpoint: a stream's
	 * max_payload_size and a tx queue without a destination follow
	 * from it and are not reported again (with UDP the only transport
	 * left, local_addr and remote_addr cannot differ) */
	if (s->local.set && s->local.transport == CFG_TRANSPORT_TCP)
		tcp = lv;
	else if (s->remote.set && s->remote.transport == CFG_TRANSPORT_TCP)
		tcp = rv;
	if (tcp != NULL)
		err(x, tcp, "socket_config: not supported by daqiri: TCP, "
		    "tcp:// (daqiri receives and sends UDP datagrams, whose "
		    "boundaries its frames and reorder need; use udp://)");
	/* the legacy local_ip/remote_ip keys are reported already */
	if (mget(&m, "local_ip") != NULL || mget(&m, "local_port") != NULL ||
	    mget(&m, "remote_ip") != NULL || mget(&m, "remote_port") != NULL)
		mode_ok = false;
	if (mode_ok && s->mode == CFG_SOCK_SERVER) {
		if (lv == NULL)
			err(x, n, "socket_config: server mode needs local_addr");
		else if (s->local.set && s->local.port == 0)
			err(x, lv, "local_addr: a server needs a port other "
			    "than 0");
	}
	if (mode_ok && s->mode == CFG_SOCK_CLIENT) {
		if (rv == NULL)
			err(x, n, "socket_config: client mode needs "
			    "remote_addr");
		else if (s->remote.set && s->remote.port == 0)
			err(x, rv, "remote_addr: a client needs a port other "
			    "than 0");
	}
	/* UDP: a datagram's payload, 0..65535 as the reference reads it
	 * (0 = the largest, 65507); under a refused tcp:// any size */
	if ((v = mval(&m, "max_payload_size")) != NULL &&
	    cfg_get_u32(x, "max_payload_size", v, 0, tcp != NULL ?
			UINT32_MAX : UINT16_MAX, &u) && tcp == NULL)
		s->max_payload_size = (uint16_t)u;
	if ((v = mval(&m, "retry_connect_s")) != NULL)
		cfg_get_int(x, "retry_connect_s", v, 0, CFG_RETRY_MAX_S,
			    &s->retry_connect_s);
}

static void
parse_rx(struct pctx *x, yaml_node_t *n, struct cfg_interface *ifc)
{
	struct cfg_rx *rx = &ifc->rx;
	struct queue_set set;
	struct map m;
	yaml_node_t *v;

	if (!cfg_map_open(x, &m, n, "rx", "rx", KEYS(rx_keys), false))
		return;
	ifc->has_rx = true;
	require(x, &m, "queues");
	/* queues first: flows name them, reorder configs name flows */
	if ((v = mval(&m, "queues")) != NULL)
		parse_queues(x, v, rx->queues, &rx->nqueues, false, NULL);
	set.dir = "rx";
	set.qs = rx->queues;
	set.nq = rx->nqueues;
	if ((v = mval(&m, "flows")) != NULL)
		parse_flows(x, v, rx->flows, &rx->nflows, &set);
	if ((v = mval(&m, "flow_isolation")) != NULL)
		cfg_get_bool(x, "flow_isolation", v, &rx->flow_isolation);
	if ((v = mval(&m, "dynamic_flow_capacity")) != NULL)
		cfg_get_u32(x, "dynamic_flow_capacity", v, 0, UINT32_MAX,
			    &rx->dynamic_flow_capacity);
	if ((v = mval(&m, "hardware_timestamps")) != NULL)
		cfg_get_bool(x, "hardware_timestamps", v,
			     &rx->hardware_timestamps);
	if ((v = mval(&m, "reorder_configs")) != NULL)
		cfg_parse_reorders(x, v, ifc);
}

static void
parse_tx(struct pctx *x, yaml_node_t *n, struct cfg_interface *ifc)
{
	struct cfg_tx *tx = &ifc->tx;
	struct map m;
	yaml_node_t *v;

	if (!cfg_map_open(x, &m, n, "tx", "tx", KEYS(tx_keys), false))
		return;
	ifc->has_tx = true;
	require(x, &m, "queues");
	if ((v = mval(&m, "queues")) != NULL)
		parse_queues(x, v, tx->queues, &tx->nqueues, true,
			     &tx->pacing_mbps);
	cfg_check_tx(x, ifc);
}

/* Is b before a in the file? */
static bool
node_before(const yaml_node_t *b, const yaml_node_t *a)
{
	return a == NULL || b->start_mark.line < a->start_mark.line ||
	    (b->start_mark.line == a->start_mark.line &&
	    b->start_mark.column < a->start_mark.column);
}

/*
 * The first sign that interface map m belongs to the reference's RDMA
 * engine: a roce:// (or rdma://) endpoint in its socket_config, or a
 * roce_config or rdma_config key. NULL when there is none. Such an
 * interface is not read at all: its queues name no regions and its
 * client needs no remote_addr, so reading it would report only what
 * follows from RDMA, which is one error (parse_cfg()).
 */
static const yaml_node_t *
rdma_sign(struct pctx *x, const struct map *m)
{
	static const char *const keys[] = { "roce_config", "rdma_config" };
	const yaml_node_t *first = NULL, *k, *v, *sc;

	for (size_t i = 0; i < NELEM(keys); i++)
		if ((k = mkey(m, keys[i])) != NULL && node_before(k, first))
			first = k;
	sc = mget(m, "socket_config");
	if (sc == NULL || sc->type != YAML_MAPPING_NODE)
		return first;
	for (yaml_node_pair_t *p = sc->data.mapping.pairs.start;
	    p < sc->data.mapping.pairs.top; p++) {
		k = node_at(x, p->key);
		v = node_at(x, p->value);
		if (k == NULL || v == NULL || v->type != YAML_SCALAR_NODE ||
		    !(scalar_is(k, "local_addr") || scalar_is(k, "remote_addr")))
			continue;
		if ((slen(v) >= 7 && memcmp(sval(v), "roce://", 7) == 0) ||
		    (slen(v) >= 7 && memcmp(sval(v), "rdma://", 7) == 0))
			if (node_before(v, first))
				first = v;
	}
	return first;
}

/* Interface ifc is an RDMA one, first seen at sign. */
static void
note_rdma(struct pctx *x, const yaml_node_t *sign,
	  const struct cfg_interface *ifc)
{
	size_t len = strlen(x->rdma_ifaces);
	char *at = x->rdma_ifaces + len;
	size_t room = sizeof(x->rdma_ifaces) - len;

	if (x->nrdma++ == 0) {
		x->rdma_at = pos_of(sign);
		snprintf(at, room, "'%s'", ifc->name);
	} else {
		snprintf(at, room, ", '%s' (line %d)", ifc->name,
		    pos_of(sign).line);
	}
}

static void
parse_interface(struct pctx *x, yaml_node_t *n, int idx)
{
	struct cfg_interface *ifc = &x->c->interfaces[idx];
	const yaml_node_t *sign;
	struct map m;
	yaml_node_t *v;

	x->cur_iface = idx;
	ifc->pos = pos_of(n);
	ifc->socket.retry_connect_s = 1;
	if (!cfg_map_open(x, &m, n, "interfaces entry", "interface",
			  KEYS(interface_keys), false))
		return;
	require(x, &m, "name");
	require(x, &m, "address");
	if ((v = mval(&m, "name")) != NULL &&
	    cfg_get_name(x, "name", v, ifc->name)) {
		for (int j = 0; j < idx; j++)
			if (strcmp(x->c->interfaces[j].name, ifc->name) == 0)
				err(x, v, "name: interface '%s' is already "
				    "defined at line %d", ifc->name,
				    x->c->interfaces[j].pos.line);
	}
	if ((v = mval(&m, "address")) != NULL &&
	    cfg_get_str(x, "address", v, ifc->address, sizeof(ifc->address))) {
		if (ifc->address[0] == '\0')
			err(x, v, "address: must not be empty");
		else
			cfg_check_address(x, v, ifc);
	}
	if ((sign = rdma_sign(x, &m)) != NULL) {
		note_rdma(x, sign, ifc);
		return;
	}
	if ((v = mval(&m, "socket_config")) != NULL) {
		if (eng(x) != NULL && !eng(x)->socket_config)
			err(x, mkey(&m, "socket_config"), "socket_config: "
			    "only for stream_type socket");
		else
			parse_socket(x, v, &ifc->socket);
	} else if (eng(x) != NULL && eng(x)->socket_config) {
		err(x, n, "missing required key 'socket_config' in interface "
		    "(stream_type is socket)");
	}
	if ((v = mval(&m, "rx")) != NULL) {
		parse_rx(x, v, ifc);
		cfg_check_rx_headroom(x, ifc);
		cfg_check_flows_endpoint(x, ifc);
	}
	if ((v = mval(&m, "tx")) != NULL)
		parse_tx(x, v, ifc);
	if (mget(&m, "rx") == NULL && mget(&m, "tx") == NULL)
		warn(x, n, "interface '%s' has neither rx nor tx", ifc->name);
}

/* ---------------------------------------------------------------------
 * cfg: and the document root.
 */
static const struct keydef cfg_keys[] = {
	{ "version", KEY_OK, NULL },
	{ "debug", KEY_QUIET, "daqirid's log_level says what it logs" },
	{ "master_core", KEY_OK, NULL },
	{ "stream_type", KEY_OK, NULL },
	{ "engine", KEY_OK, NULL },
	{ "log_level", KEY_OK, NULL },
	{ "loopback", KEY_DIFFERS, "sw lands each looped frame in the rx "
	  "queue's own buffers, as a NIC would (the reference hands the "
	  "receiver the sent buffers), and loops tx queue N to rx queue N of "
	  "every interface" },
	{ "tx_meta_buffers", KEY_QUIET, "daqiri keeps no metadata buffers" },
	{ "rx_meta_buffers", KEY_QUIET, "daqiri keeps no metadata buffers" },
	{ "dpdk_args", KEY_OWN, "extra EAL arguments" },
	{ "memory_regions", KEY_OK, NULL },
	{ "interfaces", KEY_OK, NULL },
	{ "daemon", KEY_OWN, "the daemon's section" },
	{ "manager", KEY_UNSUPPORTED, "not supported by daqiri: the legacy "
	  "key (use stream_type and engine)" },
	{ "protocol", KEY_UNSUPPORTED, "not supported by daqiri: the legacy "
	  "key (give the transport in the socket_config URIs: udp://)" },
};

static const struct keydef daqiri_keys[] = {
	{ "cfg", KEY_OK, NULL },
	{ "daemon", KEY_OWN, "the daemon's section" },
};

static void
parse_engine(struct pctx *x, yaml_node_t *n)
{
	static const char *const names[] = { "dpdk", "socket", "ibverbs" };
	struct cfg *c = x->c;
	int k;

	if (!cfg_get_enum(x, "engine", n, KEYS(names), &k))
		return;
	if (k == 2) {
		err(x, n, "engine: not supported by daqiri: ibverbs (daqiri's "
		    "engines are dpdk, for stream_type raw, and socket)");
		return;
	}
	if (x->stream_known && (enum cfg_engine)k != c->engine)
		err(x, n, "engine: %s does not serve stream_type %s (use %s)",
		    cfg_engine_names[k], cfg_stream_type_names[c->stream_type],
		    cfg_engine_names[c->engine]);
}

static void
parse_dpdk_args(struct pctx *x, yaml_node_t *n)
{
	struct cfg *c = x->c;
	yaml_node_item_t *it;
	int cnt = cfg_get_list(x, "dpdk_args", n, CFG_MAX_DPDK_ARGS, &it);

	for (int i = 0; i < cnt; i++) {
		yaml_node_t *e = node_at(x, it[i]);
		char *a = c->dpdk_args[c->ndpdk_args];

		if (e == NULL ||
		    !cfg_get_str(x, "dpdk_args", e, a, CFG_PATH_MAX))
			continue;
		if (a[0] == '\0') {
			err(x, e, "dpdk_args: an argument must not be empty");
			continue;
		}
		c->ndpdk_args++;
	}
}

static void
parse_cfg(struct pctx *x, yaml_node_t *n, bool nested)
{
	struct cfg *c = x->c;
	struct map m;
	yaml_node_t *v;
	int k;

	if (!cfg_map_open(x, &m, n, "cfg", "cfg", KEYS(cfg_keys), false))
		return;
	require(x, &m, "version");
	require(x, &m, "master_core");
	require(x, &m, "stream_type");
	require(x, &m, "memory_regions");
	require(x, &m, "interfaces");
	if ((v = mval(&m, "version")) != NULL &&
	    cfg_get_int(x, "version", v, 0, INT_MAX, &c->version) &&
	    c->version != 1)
		err(x, v, "version: must be 1, got %d", c->version);
	if ((v = mval(&m, "debug")) != NULL)
		cfg_get_bool(x, "debug", v, &c->debug);
	if ((v = mval(&m, "master_core")) != NULL)
		cfg_get_int(x, "master_core", v, 0, CFG_CORE_MAX,
			    &c->master_core);
	if ((v = mval(&m, "stream_type")) != NULL &&
	    cfg_get_enum(x, "stream_type", v, KEYS(cfg_stream_type_names),
			 &k)) {
		c->stream_type = (enum cfg_stream_type)k;
		cfg_mark(x, &c->stream_type, v);
		cfg_mark(x, &c->engine, v);
		c->engine = c->stream_type == CFG_STREAM_SOCKET ?
		    CFG_ENGINE_SOCKET : CFG_ENGINE_DPDK;
		x->stream_known = true;
	}
	if ((v = mval(&m, "engine")) != NULL)
		parse_engine(x, v);
	if ((v = mval(&m, "log_level")) != NULL &&
	    cfg_get_enum(x, "log_level", v, KEYS(cfg_log_level_names), &k)) {
		c->log_level = (enum cfg_log_level)k;
		cfg_mark(x, &c->log_level, v);
	}
	if ((v = mval(&m, "loopback")) != NULL) {
		if (scalar_is(v, "hw"))
			err(x, v, "loopback: not supported by daqiri: hardware "
			    "loopback, hw (sw loops transmitted packets back "
			    "in software)");
		else if (cfg_get_enum(x, "loopback", v,
				      KEYS(cfg_loopback_names), &k))
			c->loopback = (enum cfg_loopback)k;
		cfg_mark(x, &c->loopback, v);
		if (c->loopback == CFG_LOOPBACK_SW && eng(x) != NULL &&
		    !eng(x)->sw_loopback)
			err(x, v, "loopback: sw is the dpdk engine's software "
			    "loopback (stream_type: raw); a %s stream loops "
			    "back through the kernel: send to 127.0.0.1",
			    eng(x)->stream_type);
	}
	if ((v = mval(&m, "tx_meta_buffers")) != NULL)
		cfg_get_u32(x, "tx_meta_buffers", v, 1, UINT32_MAX,
			    &c->tx_meta_buffers);
	if ((v = mval(&m, "rx_meta_buffers")) != NULL)
		cfg_get_u32(x, "rx_meta_buffers", v, 1, UINT32_MAX,
			    &c->rx_meta_buffers);
	if ((v = mval(&m, "dpdk_args")) != NULL) {
		parse_dpdk_args(x, v);
		if (eng(x) != NULL && !eng(x)->eal_args)
			warn(x, mkey(&m, "dpdk_args"), "dpdk_args: has no "
			     "effect with stream_type %s", eng(x)->stream_type);
	}
	/* regions before interfaces: queues and reorder configs name them */
	if ((v = mval(&m, "memory_regions")) != NULL)
		parse_regions(x, v);
	if ((v = mval(&m, "interfaces")) != NULL) {
		yaml_node_item_t *it;
		int cnt = cfg_get_list(x, "interfaces", v, CFG_MAX_INTERFACES,
				       &it);

		for (int i = 0; i < cnt; i++) {
			yaml_node_t *e = node_at(x, it[i]);

			if (e == NULL)
				continue;
			parse_interface(x, e, c->ninterfaces);
			c->ninterfaces++;
		}
	}
	if (x->nrdma > 0)
		err_at(x, x->rdma_at, "not supported by daqiri: RDMA: "
		    "interface%s %s %s not read (daqiri receives and sends "
		    "UDP, through the socket or the DPDK engine)",
		    x->nrdma > 1 ? "s" : "", x->rdma_ifaces,
		    x->nrdma > 1 ? "are" : "is");
	if ((v = mval(&m, "daemon")) != NULL) {
		if (nested)
			err(x, mkey(&m, "daemon"), "daemon: goes beside cfg "
			    "under daqiri, not inside cfg");
		else
			parse_daemon(x, v);
	}
	/* regions of RDMA interfaces are used by what was not read */
	if (x->nrdma == 0)
		cfg_check_regions_used(x);
}

void
cfg_parse_root(struct pctx *x, yaml_node_t *root)
{
	yaml_node_t *daqiri = NULL, *dkey = NULL, *v;
	struct map m;
	char db[DBUF];

	if (root->type != YAML_MAPPING_NODE) {
		err(x, root, "the top level must be a map (daqiri: {cfg: "
		    "...}), got %s", cfg_describe(root, db));
		return;
	}
	/* other top-level keys belong to applications sharing the file */
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
	     p < root->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node_at(x, p->key);

		if (k == NULL || !scalar_is(k, "daqiri"))
			continue;
		if (daqiri != NULL) {
			err(x, k, "duplicate key 'daqiri' at the top level "
			    "(first at line %d)", pos_of(dkey).line);
			continue;
		}
		dkey = k;
		daqiri = node_at(x, p->value);
	}
	if (daqiri == NULL) {
		/* no daqiri: the root is the engine config itself */
		for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
		     p < root->data.mapping.pairs.top; p++) {
			yaml_node_t *k = node_at(x, p->key);

			for (size_t i = 0; k != NULL && i < NELEM(cfg_keys);
			     i++) {
				if (scalar_is(k, cfg_keys[i].name)) {
					parse_cfg(x, root, false);
					return;
				}
			}
		}
		err(x, root, "no daqiri configuration here: expected "
		    "'daqiri: {cfg: ...}' at the top level");
		return;
	}
	if (!cfg_map_open(x, &m, daqiri, "daqiri", "daqiri", KEYS(daqiri_keys),
			  false))
		return;
	if (require(x, &m, "cfg"))
		parse_cfg(x, mval(&m, "cfg"), true);
	if ((v = mval(&m, "daemon")) != NULL)
		parse_daemon(x, v);
}
