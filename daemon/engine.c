/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The engines built into this daqirid, by the config's engine kind: the
 * one place that knows them all (DPDK's only where it was built with it,
 * DAQIRI_HAVE_DPDK).
 */
#include <stddef.h>

#include "engine.h"

const struct engine_ops *
engine_lookup(enum cfg_engine k)
{
	switch (k) {
	case CFG_ENGINE_SOCKET:
		return &engine_socket_ops;
#ifdef DAQIRI_HAVE_DPDK
	case CFG_ENGINE_DPDK:
		return &engine_dpdk_ops;
#endif
	default:
		return NULL;
	}
}
