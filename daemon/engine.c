/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The engines built into this daqirid, by the config's engine kind: the
 * one place that knows them all.
 */
#include <stddef.h>

#include "engine.h"

const struct engine_ops *
engine_lookup(enum cfg_engine k)
{
	switch (k) {
	case CFG_ENGINE_SOCKET:
		return &engine_socket_ops;
	case CFG_ENGINE_DPDK:
		return &engine_dpdk_ops;
	default:
		return NULL;
	}
}
