/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The configuration's vocabulary: how each enum is spelt in YAML (the
 * parser reads these names, the printer writes them), and lookups of a
 * parsed config's interfaces and regions by name.
 */
#include <string.h>

#define CFG_NAMES_DEFINE
#include "cfg_internal.h"

const char *const cfg_stream_type_names[] = { "raw", "socket" };
const char *const cfg_engine_names[] = { "dpdk", "socket" };
const char *const cfg_log_level_names[] = {
	"trace", "debug", "info", "warn", "error", "critical", "off",
};
const char *const cfg_loopback_names[] = { "", "sw" };
const char *const cfg_mem_kind_names[] = {
	"huge", "device", "host_pinned", "host",
};
const char *const cfg_access_names[] = {
	"local", "rdma_read", "rdma_write",
};
const char *const cfg_sock_mode_names[] = { "client", "server" };
const char *const cfg_transport_names[] = { "udp", "tcp" };
const char *const cfg_poll_mode_names[] = { "indirect" };
const char *const cfg_reorder_type_names[] = { "cpu", "gpu" };
const char *const cfg_method_names[] = {
	"seq_batch_number", "seq_packets_per_batch",
};
const char *const cfg_endian_names[] = { "host", "network" };
const char *const cfg_fill_names[] = { "zero", "nan", "keep" };
const char *const cfg_rx_mode_names[] = { "blocking", "busy_poll" };
const char *const cfg_missing_names[] = { "passthrough", "drop" };

_Static_assert(NELEM(cfg_stream_type_names) == CFG_STREAM_MAX, "stream names");
_Static_assert(NELEM(cfg_rx_mode_names) == CFG_RX_MODE_MAX, "rx mode names");
_Static_assert(NELEM(cfg_access_names) == CFG_ACCESS_NAMES, "access names");
_Static_assert(NELEM(cfg_engine_names) == CFG_ENGINE_MAX, "engine names");
_Static_assert(NELEM(cfg_log_level_names) == CFG_LOG_MAX, "log level names");
_Static_assert(NELEM(cfg_loopback_names) == CFG_LOOPBACK_MAX, "loopback names");
_Static_assert(NELEM(cfg_mem_kind_names) == DAQIRI_MEM_MAX, "memory kinds");
_Static_assert(NELEM(cfg_sock_mode_names) == CFG_SOCK_MAX, "socket mode names");
_Static_assert(NELEM(cfg_transport_names) == CFG_TRANSPORT_MAX, "transports");
_Static_assert(NELEM(cfg_poll_mode_names) == CFG_POLL_MAX, "poll mode names");
_Static_assert(NELEM(cfg_reorder_type_names) == CFG_REORDER_MAX, "reorders");
_Static_assert(NELEM(cfg_method_names) == CFG_METHOD_MAX, "method names");
_Static_assert(NELEM(cfg_endian_names) == CFG_ENDIAN_MAX, "endian names");
_Static_assert(NELEM(cfg_fill_names) == DAQIRI_FILL_MAX, "fill names");
_Static_assert(NELEM(cfg_missing_names) == CFG_MISSING_MAX,
    "missing_action names");

const char *
cfg_log_level_name(enum cfg_log_level l)
{
	return (unsigned)l < CFG_LOG_MAX ? cfg_log_level_names[l] : "?";
}

const struct cfg_interface *
cfg_interface_find(const struct cfg *c, const char *name)
{
	for (int i = 0; i < c->ninterfaces; i++)
		if (strcmp(c->interfaces[i].name, name) == 0)
			return &c->interfaces[i];
	return NULL;
}

int
cfg_region_find(const struct cfg *c, const char *name)
{
	for (int i = 0; i < c->nregions; i++)
		if (strcmp(c->regions[i].name, name) == 0)
			return i;
	return -1;
}
