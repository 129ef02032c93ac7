/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The replay engine (daqirid --replay, DESIGN.md "Recording and replay"):
 * pcap files in place of the network, one per rx queue, replayed on the
 * capture's clock so that reorder deadlines, and so the tensors, are the
 * same on every replay of the same files. Its options, their checks
 * (daqirid -n) and what the main thread asks of a running one.
 */
#ifndef DAQIRI_ENGINE_REPLAY_H
#define DAQIRI_ENGINE_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "engine.h"

/* "<interface>/<rx queue>", as status and daqirictl learn name queues. */
#define REPLAY_QUEUE_NAME_MAX	(2 * CFG_NAME_MAX + 2)
/* One file per rx queue at most. */
#define REPLAY_MAX_FILES	(CFG_MAX_INTERFACES * CFG_MAX_QUEUES)
/* Longest --replay-speed: a real-time multiple in (0, REPLAY_SPEED_MAX]. */
#define REPLAY_SPEED_MAX	1e6
/* Wall time a queue sleeps per empty call while held, or after its file
 * ended (so its worker does not spin while its clock runs on). */
#define REPLAY_NAP_NS		(50ull * 1000 * 1000)

struct replay_file {
	char queue[REPLAY_QUEUE_NAME_MAX];
	const char *path;		/* the argument's, not copied */
};

/* daqirid's --replay options. */
struct replay_cfg {
	int nfiles;
	struct replay_file files[REPLAY_MAX_FILES];
	double speed;			/* real-time multiple; 0 = max */
	bool hold;			/* wait for a replay start request */
};

/*
 * Parse one --replay IFACE/QUEUE=FILE into rc, or --replay-speed X (a
 * positive number or "max"). 0, or -1 with the reason in err.
 */
int replay_cfg_add(struct replay_cfg *rc, const char *arg, char *err,
		   size_t errlen);
int replay_cfg_speed(struct replay_cfg *rc, const char *arg, char *err,
		     size_t errlen);

/*
 * Check rc against config c (daqirid -n, and start-up): every queue named
 * exists, every file opens and is an Ethernet (DLT_EN10MB) capture. Each
 * problem is one line on out, saying what to do; returns how many.
 */
int replay_check(const struct cfg *c, const struct replay_cfg *rc, FILE *out);

/* engine_opts.replay must point at the options (engine.h). */
extern const struct engine_ops engine_replay_ops;

/*
 * Main thread, on a started replay engine e. engine_replay_release():
 * let a held replay (--replay-hold) begin: 0, or -EALREADY when it
 * runs already. engine_replay_running(): whether it does.
 * engine_replay_json(): one object per rx queue appended to arr (queue,
 * file or null, frames replayed, done, the virtual clock); 0 or -ENOMEM.
 */
int engine_replay_release(struct engine *e);
bool engine_replay_running(const struct engine *e);
int engine_replay_json(const struct engine *e, cJSON *arr);

/*
 * Where a frame's header part ends when it lands in one buffer: after
 * its UDP header (Ethernet, any VLAN tags, IPv4 with options, UDP), or
 * the whole frame when it is no unfragmented UDP over IPv4. Pure.
 */
uint32_t replay_hdr_len(const uint8_t *p, uint32_t len);

#endif
