/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A stream that explains itself (issue "Bring-up without guesswork"). The
 * likeliest mistakes with a real instrument are silent: every counter
 * says what happened, none says why. Once a DOCTOR_PERIOD_NS the main
 * thread hands each reorder stream's counters, and its interface's, to
 * doctor_look(), which compares them with the last look and names what
 * it sees, with the key to change:
 *
 *  - most packets malformed: the lengths seen against the length the
 *    layout takes (payload_byte_offset + payload_bytes);
 *  - most packets duplicates: the sequence field repeats, so it is most
 *    likely at the wrong place (sequence_number's bit_offset and width);
 *  - the interface receives, the stream nothing: no flow of it matches
 *    (the flows' match);
 *  - nothing at all for DOCTOR_SILENT_NS while someone subscribes: where
 *    the interface receives, to check the sender against.
 *
 * A period with too few packets to say (DOCTOR_MIN_PACKETS) keeps the
 * verdict it had. The verdict shows in `stats` (a stream's "verdict"),
 * in daqirictl doctor and daqiri-consume's timeout, and a change is
 * logged once. Pure: the caller reads the counters.
 */
#include <stdio.h>
#include <string.h>

#include "doctor.h"

const char *const doctor_state_names[DOCTOR_STATE_MAX] = {
	"waiting", "ok", "silent", "no_match", "malformed", "duplicates",
};

/* Where interface ifc receives, for a message: "udp://A:P" or its port. */
static void
where(const struct cfg_interface *ifc, char *buf, size_t len)
{
	const struct cfg_endpoint *l = &ifc->socket.local;

	if (ifc->socket.present && l->set)
		snprintf(buf, len, "udp://%u.%u.%u.%u:%u "
		    "(socket_config.local_addr)", l->addr >> 24,
		    (l->addr >> 16) & 0xff, (l->addr >> 8) & 0xff,
		    l->addr & 0xff, l->port);
	else
		snprintf(buf, len, "port '%s' (address)", ifc->address);
}

static bool
set(struct doctor *d, enum doctor_state st)
{
	bool changed = d->state != st;

	d->state = st;
	return changed;
}

bool
doctor_look(struct doctor *d, const struct doctor_sample *cur,
	    const struct cfg_interface *ifc, const struct cfg_reorder *r,
	    bool subscribed)
{
	uint64_t din, drx, ddup, dmal;
	bool changed = false;
	char at[128];

	if (!d->have_last) {
		d->last = *cur;
		d->have_last = true;
		d->quiet_since = cur->ns;
		d->state = DOCTOR_WAITING;
		snprintf(d->why, sizeof(d->why), "no packet yet");
		return false;
	}
	din = cur->packets_in - d->last.packets_in;
	drx = cur->if_rx - d->last.if_rx;
	ddup = cur->duplicate - d->last.duplicate;
	dmal = cur->malformed - d->last.malformed;
	if (din > 0)
		d->quiet_since = cur->ns;
	if (din >= DOCTOR_MIN_PACKETS && dmal * 2 > din) {
		changed = set(d, DOCTOR_MALFORMED);
		snprintf(d->why, sizeof(d->why), "%llu of %llu packets "
		    "malformed: frames of %llu bytes, where this stream takes "
		    "frames of exactly %u bytes (payload_byte_offset %u + "
		    "payload_bytes %u): check payload_bytes, or the sender's "
		    "datagram size", (unsigned long long)dmal,
		    (unsigned long long)din,
		    (unsigned long long)cur->last_malformed_bytes,
		    r->payload_byte_offset + r->payload_bytes,
		    r->payload_byte_offset, r->payload_bytes);
	} else if (din >= DOCTOR_MIN_PACKETS && ddup * 2 > din) {
		changed = set(d, DOCTOR_DUPLICATES);
		snprintf(d->why, sizeof(d->why), "%llu of %llu packets are "
		    "duplicates: the sequence field repeats, so it is most "
		    "likely at the wrong place (sequence_number: bit_offset "
		    "%u, bit_width %u); it must change with every packet",
		    (unsigned long long)ddup, (unsigned long long)din,
		    r->seq.bit_offset, r->seq.bit_width);
	} else if (din >= DOCTOR_MIN_PACKETS) {
		changed = set(d, DOCTOR_OK);
		snprintf(d->why, sizeof(d->why), "receiving");
	} else if (din == 0 && drx >= DOCTOR_MIN_PACKETS) {
		changed = set(d, DOCTOR_NO_MATCH);
		snprintf(d->why, sizeof(d->why), "interface '%s' received "
		    "%llu frames in the last %llu ms but none reached this "
		    "stream: they match none of its flows; check the flows' "
		    "match (udp_dst, udp_src, ipv4_dst, ipv4_src)", ifc->name,
		    (unsigned long long)drx,
		    (unsigned long long)((cur->ns - d->last.ns) / 1000000));
	} else if (din == 0 && drx == 0 && subscribed &&
	    cur->ns - d->quiet_since >= DOCTOR_SILENT_NS) {
		changed = set(d, DOCTOR_SILENT);
		where(ifc, at, sizeof(at));
		snprintf(d->why, sizeof(d->why), "nothing has arrived for %llu "
		    "s, and a consumer waits: interface '%s' receives on %s; "
		    "is the sender running, and sending there?",
		    (unsigned long long)((cur->ns - d->quiet_since) /
		    1000000000u), ifc->name, at);
	}
	d->last = *cur;
	return changed;
}
