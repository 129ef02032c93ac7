/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The normalised config printed as YAML (bgpd's printconf.c): every
 * default filled in, and text that cfg_parse() reads back to a struct
 * that cfg_equal(), also here, finds equal.
 */
#include <stdio.h>
#include <string.h>

#include "cfg_internal.h"

/* ---------------------------------------------------------------------
 * The normalised config, printed as YAML.
 */

/* A double-quoted YAML string: always parses back to the same bytes. */
static void
print_str(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(fp, "\\%c", ch);
		else if (ch < 0x20 || ch == 0x7f)
			fprintf(fp, "\\x%02x", ch);
		else
			fputc(ch, fp);
	}
	fputc('"', fp);
}

static void
print_kv_str(FILE *fp, int ind, const char *key, const char *val)
{
	fprintf(fp, "%*s%s: ", ind, "", key);
	print_str(fp, val);
	fputc('\n', fp);
}

static void
print_endpoint(FILE *fp, int ind, const char *key,
	       const struct cfg_endpoint *e)
{
	char ip[16];

	if (!e->set)
		return;
	cfg_format_ipv4(e->addr, ip, sizeof(ip));
	fprintf(fp, "%*s%s: \"%s://%s:%u\"\n", ind, "", key,
		cfg_transport_names[e->transport], ip, e->port);
}

static void
print_dest(FILE *fp, const struct cfg_tx_dest *d)
{
	const uint8_t *m;
	char ip[16];

	fprintf(fp, "          destination:\n");
	for (int i = 0; i < 2; i++) {
		if (!(i == 0 ? d->has_eth_dst : d->has_eth_src))
			continue;
		m = i == 0 ? d->eth_dst : d->eth_src;
		fprintf(fp, "            %s: \"%02x:%02x:%02x:%02x:%02x:"
			"%02x\"\n", i == 0 ? "eth_dst" : "eth_src", m[0], m[1],
			m[2], m[3], m[4], m[5]);
	}
	if (d->has_ipv4_src) {
		cfg_format_ipv4(d->ipv4_src, ip, sizeof(ip));
		fprintf(fp, "            ipv4_src: \"%s\"\n", ip);
	}
	if (d->has_ipv4_dst) {
		cfg_format_ipv4(d->ipv4_dst, ip, sizeof(ip));
		fprintf(fp, "            ipv4_dst: \"%s\"\n", ip);
	}
	if (d->has_udp_src)
		fprintf(fp, "            udp_src: %u\n", d->udp_src);
	if (d->has_udp_dst)
		fprintf(fp, "            udp_dst: %u\n", d->udp_dst);
	fprintf(fp, "            ttl: %u\n            dscp: %u\n", d->ttl,
		d->dscp);
}

static void
print_queue(FILE *fp, const struct cfg_queue *q, bool tx, uint32_t pacing)
{
	fprintf(fp, "        - name: ");
	print_str(fp, q->name);
	fprintf(fp, "\n          id: %u\n", q->id);
	if (q->cpu_core >= 0)
		fprintf(fp, "          cpu_core: %d\n", q->cpu_core);
	fprintf(fp, "          batch_size: %u\n", q->batch_size);
	if (!tx)
		fprintf(fp, "          timeout_us: %u\n", q->timeout_us);
	fprintf(fp, "          poll_mode: %s\n",
		cfg_poll_mode_names[q->poll_mode]);
	if (!tx && q->num_rx_desc != 0)
		fprintf(fp, "          num_rx_desc: %u\n", q->num_rx_desc);
	fprintf(fp, "          memory_regions: [");
	for (int i = 0; i < q->nregions; i++) {
		fputs(i ? ", " : "", fp);
		print_str(fp, q->region_names[i]);
	}
	fprintf(fp, "]\n");
	if (tx && q->offload_tx_eth_src)
		fprintf(fp, "          offloads: [tx_eth_src]\n");
	if (tx && pacing != 0)
		fprintf(fp, "          pacing_mbps: %u\n", pacing);
	if (tx && q->dest.reply_peer)
		fprintf(fp, "          # no destination: replies to the peer "
			"that sent last\n");
	else if (tx)
		print_dest(fp, &q->dest);
}

static void
print_port_range(FILE *fp, const char *key, uint16_t lo, uint16_t hi)
{
	if (lo == hi)
		fprintf(fp, "            %s: %u\n", key, lo);
	else
		fprintf(fp, "            %s: \"%u-%u\"\n", key, lo, hi);
}

static void
print_flow(FILE *fp, const struct cfg_flow *f)
{
	const struct cfg_match *mt = &f->match;
	char ip[16];

	fprintf(fp, "        - name: ");
	print_str(fp, f->name);
	fprintf(fp, "\n          id: %u\n", f->id);
	if (f->nqueue_ids == 1) {
		fprintf(fp, "          action: {type: queue, id: %u}\n",
			f->queue_ids[0]);
	} else {
		fprintf(fp, "          action: {type: queue, ids: [");
		for (int i = 0; i < f->nqueue_ids; i++)
			fprintf(fp, "%s%u", i ? ", " : "", f->queue_ids[i]);
		fprintf(fp, "]}\n");
	}
	if (!f->has_match)
		return;
	fprintf(fp, "          match:\n");
	if (mt->has_udp_src)
		print_port_range(fp, "udp_src", mt->udp_src_lo, mt->udp_src_hi);
	if (mt->has_udp_dst)
		print_port_range(fp, "udp_dst", mt->udp_dst_lo, mt->udp_dst_hi);
	if (mt->has_ipv4_len)
		fprintf(fp, "            ipv4_len: %u\n", mt->ipv4_len);
	if (mt->has_ipv4_src) {
		cfg_format_ipv4(mt->ipv4_src, ip, sizeof(ip));
		fprintf(fp, "            ipv4_src: \"%s\"\n", ip);
	}
	if (mt->has_ipv4_dst) {
		cfg_format_ipv4(mt->ipv4_dst, ip, sizeof(ip));
		fprintf(fp, "            ipv4_dst: \"%s\"\n", ip);
	}
}

static void
print_bitfield(FILE *fp, const char *key, const struct cfg_bitfield *b)
{
	fprintf(fp, "              %s: {bit_offset: %u, bit_width: %u}\n",
		key, b->bit_offset, b->bit_width);
}

static void
print_reorder(FILE *fp, const struct cfg_reorder *r)
{
	fprintf(fp, "        - name: ");
	print_str(fp, r->name);
	fprintf(fp, "\n          reorder_type: %s\n",
		cfg_reorder_type_names[r->type]);
	print_kv_str(fp, 10, "memory_region", r->region_name);
	fprintf(fp, "          payload_byte_offset: %u\n",
		r->payload_byte_offset);
	fprintf(fp, "          payload_bytes: %u\n", r->payload_bytes);
	fprintf(fp, "          flow_ids: [");
	for (int i = 0; i < r->nflow_ids; i++)
		fprintf(fp, "%s%u", i ? ", " : "", r->flow_ids[i]);
	fprintf(fp, "]\n          method:\n            %s:\n",
		cfg_method_names[r->method]);
	print_bitfield(fp, "sequence_number", &r->seq);
	if (r->method == CFG_METHOD_SEQ_BATCH_NUMBER)
		print_bitfield(fp, "batch_number", &r->batch);
	else
		fprintf(fp, "              packets_per_batch: %u\n",
			r->packets_per_batch);
	if (r->has_data_types)
		fprintf(fp, "          data_types: {input_type: %s, "
			"output_type: %s, endianness: %s}\n",
			daqiri_dtype_name(r->input_type),
			daqiri_dtype_name(r->output_type),
			cfg_endian_names[r->endianness]);
	fprintf(fp, "          window: %u\n", r->window);
	fprintf(fp, "          fill: %s\n", cfg_fill_names[r->fill]);
	fprintf(fp, "          timeout_us: %u\n", r->timeout_us);
	fprintf(fp, "          resync_after_us: %u\n", r->resync_after_us);
	fprintf(fp, "          reorder_engine: sw\n");
	fprintf(fp, "          cyclic_sequence: %s\n",
		r->cyclic_sequence ? "true" : "false");
	fprintf(fp, "          missing_action: %s\n",
		cfg_missing_names[r->missing_action]);
}

static void
print_interface(FILE *fp, const struct cfg_interface *ifc)
{
	const struct cfg_socket *s = &ifc->socket;

	fprintf(fp, "    - name: ");
	print_str(fp, ifc->name);
	fputc('\n', fp);
	print_kv_str(fp, 6, "address", ifc->address);
	if (s->present) {
		fprintf(fp, "      socket_config:\n");
		fprintf(fp, "        mode: %s\n", cfg_sock_mode_names[s->mode]);
		print_endpoint(fp, 8, "local_addr", &s->local);
		print_endpoint(fp, 8, "remote_addr", &s->remote);
		fprintf(fp, "        max_payload_size: %u\n",
			s->max_payload_size);
		fprintf(fp, "        retry_connect_s: %d\n", s->retry_connect_s);
	}
	if (ifc->has_rx) {
		const struct cfg_rx *rx = &ifc->rx;

		fprintf(fp, "      rx:\n");
		fprintf(fp, "        flow_isolation: %s\n",
			rx->flow_isolation ? "true" : "false");
		fprintf(fp, "        dynamic_flow_capacity: %u\n",
			rx->dynamic_flow_capacity);
		fprintf(fp, "        hardware_timestamps: %s\n",
			rx->hardware_timestamps ? "true" : "false");
		fprintf(fp, "        queues:\n");
		for (int i = 0; i < rx->nqueues; i++)
			print_queue(fp, &rx->queues[i], false, 0);
		if (rx->nflows > 0)
			fprintf(fp, "        flows:\n");
		for (int i = 0; i < rx->nflows; i++)
			print_flow(fp, &rx->flows[i]);
		if (rx->nreorders > 0)
			fprintf(fp, "        reorder_configs:\n");
		for (int i = 0; i < rx->nreorders; i++)
			print_reorder(fp, &rx->reorders[i]);
	}
	if (ifc->has_tx) {
		const struct cfg_tx *tx = &ifc->tx;

		fprintf(fp, "      tx:\n");
		fprintf(fp, "        queues:\n");
		for (int i = 0; i < tx->nqueues; i++)
			print_queue(fp, &tx->queues[i], true, tx->pacing_mbps);
	}
}

int
cfg_print(const struct cfg *c, FILE *fp)
{
	const struct cfg_daemon *dm = &c->daemon;

	fprintf(fp, "%%YAML 1.2\n---\n# normalised by daqirid -n -v: every "
		"default filled in\ndaqiri:\n  cfg:\n");
	fprintf(fp, "    version: %d\n", c->version);
	fprintf(fp, "    debug: %s\n", c->debug ? "true" : "false");
	fprintf(fp, "    master_core: %d\n", c->master_core);
	fprintf(fp, "    stream_type: %s\n",
		cfg_stream_type_names[c->stream_type]);
	fprintf(fp, "    engine: %s\n", cfg_engine_names[c->engine]);
	fprintf(fp, "    log_level: %s\n", cfg_log_level_names[c->log_level]);
	fprintf(fp, "    loopback: \"%s\"\n", cfg_loopback_names[c->loopback]);
	fprintf(fp, "    tx_meta_buffers: %u\n", c->tx_meta_buffers);
	fprintf(fp, "    rx_meta_buffers: %u\n", c->rx_meta_buffers);
	if (c->ndpdk_args > 0)
		fprintf(fp, "    dpdk_args:\n");
	for (int i = 0; i < c->ndpdk_args; i++) {
		fprintf(fp, "    - ");
		print_str(fp, c->dpdk_args[i]);
		fputc('\n', fp);
	}
	fprintf(fp, "    memory_regions:\n");
	for (int i = 0; i < c->nregions; i++) {
		const struct cfg_region *r = &c->regions[i];
		bool first = true;

		fprintf(fp, "    - name: ");
		print_str(fp, r->name);
		fprintf(fp, "\n      kind: %s\n", daqiri_mem_kind_name(r->kind));
		fprintf(fp, "      affinity: %d\n", r->affinity);
		fprintf(fp, "      num_bufs: %u\n", r->num_bufs);
		fprintf(fp, "      buf_size: %llu\n",
			(unsigned long long)r->buf_size);
		if (r->access == 0)
			continue;
		fprintf(fp, "      access: [");
		for (size_t k = 0; k < NELEM(cfg_access_names); k++) {
			if (r->access & (1u << k)) {
				fprintf(fp, "%s%s", first ? "" : ", ",
					cfg_access_names[k]);
				first = false;
			}
		}
		fprintf(fp, "]\n");
	}
	fprintf(fp, "    interfaces:\n");
	for (int i = 0; i < c->ninterfaces; i++)
		print_interface(fp, &c->interfaces[i]);
	fprintf(fp, "  daemon:\n");
	print_kv_str(fp, 4, "control_socket", dm->control_socket);
	fprintf(fp, "    socket_mode: 0%03o\n", dm->socket_mode);
	print_kv_str(fp, 4, "socket_group", dm->socket_group);
	print_kv_str(fp, 4, "admin_group", dm->admin_group);
	fprintf(fp, "    max_consumers: %u\n", dm->max_consumers);
	fprintf(fp, "    stats_interval_ms: %u\n", dm->stats_interval_ms);
	print_kv_str(fp, 4, "metrics_listen", dm->metrics_listen);
	fprintf(fp, "    rx_mode: %s\n", cfg_rx_mode_names[dm->rx_mode]);
	fprintf(fp, "    hold_timeout_ms: %u\n", dm->hold_timeout_ms);
	fprintf(fp, "    hello_timeout_ms: %u\n", dm->hello_timeout_ms);
	fprintf(fp, "    max_subscriptions_per_connection: %u\n",
		dm->max_subscriptions_per_connection);
	fprintf(fp, "    max_connections_per_uid: %u\n",
		dm->max_connections_per_uid);
	fprintf(fp, "    reserved_admin_connections: %u\n",
		dm->reserved_admin_connections);
	return ferror(fp) ? -1 : 0;
}

/* ---------------------------------------------------------------------
 * Equality, field by field (positions and derived indexes aside).
 */
#define EQ(f) if (a->f != b->f) return 0
#define STREQ(f) if (strcmp(a->f, b->f) != 0) return 0

static int
endpoint_equal(const struct cfg_endpoint *a, const struct cfg_endpoint *b)
{
	EQ(set);
	if (!a->set)
		return 1;
	EQ(transport);
	EQ(addr);
	EQ(port);
	return 1;
}

/* Every field a tx queue sends with; has_ttl and has_dscp say only
 * where the value came from (the printout always writes both). */
int
cfg_tx_dest_equal(const struct cfg_tx_dest *a, const struct cfg_tx_dest *b)
{
	EQ(reply_peer);
	EQ(has_eth_src);
	EQ(has_eth_dst);
	EQ(has_ipv4_src);
	EQ(has_ipv4_dst);
	EQ(has_udp_src);
	EQ(has_udp_dst);
	if (a->has_eth_src && memcmp(a->eth_src, b->eth_src, 6) != 0)
		return 0;
	if (a->has_eth_dst && memcmp(a->eth_dst, b->eth_dst, 6) != 0)
		return 0;
	if (a->has_ipv4_src)
		EQ(ipv4_src);
	if (a->has_ipv4_dst)
		EQ(ipv4_dst);
	if (a->has_udp_src)
		EQ(udp_src);
	if (a->has_udp_dst)
		EQ(udp_dst);
	EQ(ttl);
	EQ(dscp);
	return 1;
}

static int
queue_equal(const struct cfg_queue *a, const struct cfg_queue *b)
{
	STREQ(name);
	EQ(id);
	EQ(cpu_core);
	EQ(batch_size);
	EQ(timeout_us);
	EQ(nregions);
	for (int i = 0; i < a->nregions; i++) {
		STREQ(region_names[i]);
		EQ(region_idx[i]);
	}
	EQ(poll_mode);
	EQ(num_rx_desc);
	EQ(offload_tx_eth_src);
	return cfg_tx_dest_equal(&a->dest, &b->dest);
}

static int
flow_equal(const struct cfg_flow *a, const struct cfg_flow *b)
{
	STREQ(name);
	EQ(id);
	EQ(nqueue_ids);
	for (int i = 0; i < a->nqueue_ids; i++)
		EQ(queue_ids[i]);
	EQ(has_match);
	EQ(match.has_udp_src);
	EQ(match.has_udp_dst);
	EQ(match.has_ipv4_len);
	EQ(match.has_ipv4_src);
	EQ(match.has_ipv4_dst);
	if (a->match.has_udp_src) {
		EQ(match.udp_src_lo);
		EQ(match.udp_src_hi);
	}
	if (a->match.has_udp_dst) {
		EQ(match.udp_dst_lo);
		EQ(match.udp_dst_hi);
	}
	if (a->match.has_ipv4_len)
		EQ(match.ipv4_len);
	if (a->match.has_ipv4_src)
		EQ(match.ipv4_src);
	if (a->match.has_ipv4_dst)
		EQ(match.ipv4_dst);
	return 1;
}

static int
reorder_equal(const struct cfg_reorder *a, const struct cfg_reorder *b)
{
	STREQ(name);
	EQ(type);
	STREQ(region_name);
	EQ(region_idx);
	EQ(payload_byte_offset);
	EQ(payload_bytes);
	EQ(slot_bytes);
	EQ(nflow_ids);
	for (int i = 0; i < a->nflow_ids; i++)
		EQ(flow_ids[i]);
	EQ(method);
	EQ(seq.bit_offset);
	EQ(seq.bit_width);
	if (a->method == CFG_METHOD_SEQ_BATCH_NUMBER) {
		EQ(batch.bit_offset);
		EQ(batch.bit_width);
	}
	EQ(packets_per_batch);
	EQ(has_data_types);
	EQ(input_type);
	EQ(output_type);
	EQ(endianness);
	EQ(window);
	EQ(fill);
	EQ(timeout_us);
	EQ(resync_after_us);
	EQ(missing_action);
	EQ(cyclic_sequence);
	return 1;
}

static int
interface_equal(const struct cfg_interface *a, const struct cfg_interface *b)
{
	STREQ(name);
	STREQ(address);
	EQ(socket.present);
	if (a->socket.present) {
		EQ(socket.mode);
		if (!endpoint_equal(&a->socket.local, &b->socket.local) ||
		    !endpoint_equal(&a->socket.remote, &b->socket.remote))
			return 0;
		EQ(socket.max_payload_size);
		EQ(socket.retry_connect_s);
	}
	EQ(has_rx);
	EQ(has_tx);
	EQ(rx.nqueues);
	EQ(rx.nflows);
	EQ(rx.nreorders);
	EQ(rx.flow_isolation);
	EQ(rx.dynamic_flow_capacity);
	EQ(rx.hardware_timestamps);
	for (int i = 0; i < a->rx.nqueues; i++)
		if (!queue_equal(&a->rx.queues[i], &b->rx.queues[i]))
			return 0;
	for (int i = 0; i < a->rx.nflows; i++)
		if (!flow_equal(&a->rx.flows[i], &b->rx.flows[i]))
			return 0;
	for (int i = 0; i < a->rx.nreorders; i++)
		if (!reorder_equal(&a->rx.reorders[i], &b->rx.reorders[i]))
			return 0;
	EQ(tx.nqueues);
	EQ(tx.pacing_mbps);
	for (int i = 0; i < a->tx.nqueues; i++)
		if (!queue_equal(&a->tx.queues[i], &b->tx.queues[i]))
			return 0;
	return 1;
}

int
cfg_equal(const struct cfg *a, const struct cfg *b)
{
	EQ(version);
	EQ(debug);
	EQ(master_core);
	EQ(stream_type);
	EQ(engine);
	EQ(log_level);
	EQ(loopback);
	EQ(tx_meta_buffers);
	EQ(rx_meta_buffers);
	EQ(ndpdk_args);
	for (int i = 0; i < a->ndpdk_args; i++)
		STREQ(dpdk_args[i]);
	EQ(nregions);
	for (int i = 0; i < a->nregions; i++) {
		STREQ(regions[i].name);
		EQ(regions[i].kind);
		EQ(regions[i].affinity);
		EQ(regions[i].num_bufs);
		EQ(regions[i].buf_size);
		EQ(regions[i].access);
	}
	EQ(ninterfaces);
	for (int i = 0; i < a->ninterfaces; i++)
		if (!interface_equal(&a->interfaces[i], &b->interfaces[i]))
			return 0;
	STREQ(daemon.control_socket);
	EQ(daemon.socket_mode);
	STREQ(daemon.socket_group);
	STREQ(daemon.admin_group);
	EQ(daemon.max_consumers);
	EQ(daemon.stats_interval_ms);
	STREQ(daemon.metrics_listen);
	EQ(daemon.rx_mode);
	EQ(daemon.hold_timeout_ms);
	EQ(daemon.hello_timeout_ms);
	EQ(daemon.max_subscriptions_per_connection);
	EQ(daemon.max_connections_per_uid);
	EQ(daemon.reserved_admin_connections);
	return 1;
}
