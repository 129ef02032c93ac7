/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A stream that explains itself (doctor.c): the verdict on what a reorder
 * stream receives, and the likeliest cause of a problem with the key to
 * change. Main thread.
 */
#ifndef DAQIRI_DOCTOR_H
#define DAQIRI_DOCTOR_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

/* How often a stream is looked at, and how long without a packet a
 * stream with subscribers is called silent. */
#define DOCTOR_PERIOD_NS	(1000ull * 1000 * 1000)
#define DOCTOR_SILENT_NS	(5ull * 1000 * 1000 * 1000)
/* Fewer packets than this in a period say nothing about their kind. */
#define DOCTOR_MIN_PACKETS	16

enum doctor_state {
	DOCTOR_WAITING,		/* nothing seen yet */
	DOCTOR_OK,		/* packets placed */
	DOCTOR_SILENT,		/* nothing arrives, someone waits */
	DOCTOR_NO_MATCH,	/* the interface receives, the stream not */
	DOCTOR_MALFORMED,	/* most packets of another size */
	DOCTOR_DUPLICATES,	/* most packets repeat a slot */
	DOCTOR_STATE_MAX
};
extern const char *const doctor_state_names[DOCTOR_STATE_MAX];

/* What the main thread reads at a look: the stream's counters and its
 * interface's, cumulative. */
struct doctor_sample {
	uint64_t ns;
	uint64_t packets_in, duplicate, malformed;
	uint64_t last_malformed_bytes;	/* a malformed frame's length */
	uint64_t if_rx;			/* the interface's rx_packets */
};

struct doctor {
	struct doctor_sample last;
	bool have_last;
	uint64_t quiet_since;		/* the last period with packets */
	enum doctor_state state;
	char why[400];
};

/*
 * Judge the period from the last look to cur, for reorder config r of
 * interface ifc; subscribed: someone waits for its tensors. Returns true
 * when the verdict changed (the caller logs it). Pure.
 */
bool doctor_look(struct doctor *d, const struct doctor_sample *cur,
		 const struct cfg_interface *ifc, const struct cfg_reorder *r,
		 bool subscribed);

#endif
