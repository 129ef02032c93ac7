/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The queue tap (tap.h): a single-producer, single-consumer ring of
 * fixed-size records. The session is one atomic word, so the worker reads
 * count and snap with the generation that owns them; records keep their
 * generation, and a reader skips those a worker still wrote for a session
 * that had ended. The ring is shared memory a reader process may write
 * (PROTOCOL.md "Tap ring layout"): the worker keeps its own head and
 * trusts the shared tail only as far as it leaves a record free, and the
 * JSON read clamps what it takes from a record.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto.h"
#include "tap.h"

#define CTL_GEN(c)	((uint32_t)((c) & 0xFFFFu))
#define CTL_COUNT(c)	((uint32_t)(((c) >> 16) & 0xFFFFFu))
#define CTL_SNAP(c)	((uint32_t)(((c) >> 36) & 0xFFFFu))
#define ACCT(gen, n)	DAQIRI_TAPRING_ACCT(gen, n)

_Static_assert(DAQIRI_TAP_COUNT_MAX <= TAP_RING, "a session fits the ring");
_Static_assert(DAQIRI_TAP_COUNT_MAX < (1u << 20) &&
    DAQIRI_TAP_SNAP_MAX < (1u << 16), "ctl fields");

void
tap_frames(struct tap *t, const struct rx_frame *f, unsigned n)
{
	uint64_t ctl = atomic_load_explicit(&t->ctl, memory_order_acquire);
	uint64_t head, tail;
	uint32_t count, snap;

	if (ctl == 0)
		return;
	if (ctl != t->w_ctl) {
		t->w_ctl = ctl;
		t->w_taken = t->w_full = 0;
	}
	count = CTL_COUNT(ctl);		/* 0: until stopped */
	snap = CTL_SNAP(ctl);
	if (count != 0 && t->w_taken >= count)
		return;
	head = t->w_head;
	tail = atomic_load_explicit(&t->ring.hdr->tail, memory_order_acquire);
	for (unsigned i = 0; i < n && (count == 0 || t->w_taken < count);
	    i++) {
		const struct rx_frame *x = &f[i];
		struct daqiri_tapring_rec *r;
		uint32_t h, p;

		/* full as last seen: the reader may have moved on since */
		if (head - tail >= TAP_RING)
			tail = atomic_load_explicit(&t->ring.hdr->tail,
			    memory_order_acquire);
		/* unsigned: a tail past head (a reader's garbage) is full */
		if (head - tail >= TAP_RING) {
			t->w_full++;
			t->w_full_total++;
			continue;
		}
		r = daqiri_tapring_rec(&t->ring, head);
		r->ns = x->rx_ns;
		r->len = x->hdr_len + x->payload_len;
		r->gen = CTL_GEN(ctl);
		h = x->hdr_len < snap ? x->hdr_len : snap;
		memcpy(r->data, x->hdr, h);
		/* bytes in device memory are not the CPU's to read */
		p = x->flags & RX_FRAME_DEV_PAYLOAD ? 0 :
		    x->payload_len < snap - h ? x->payload_len : snap - h;
		if (p > 0)
			memcpy(r->data + h, x->payload, p);
		r->caplen = h + p;
		head++;
		t->w_taken++;
		t->w_taken_total++;
	}
	t->w_head = head;
	atomic_store_explicit(&t->head, head, memory_order_release);
	atomic_store_explicit(&t->ring.hdr->head, head, memory_order_release);
	atomic_store_explicit(&t->taken, ACCT(CTL_GEN(ctl), t->w_taken),
	    memory_order_release);
	atomic_store_explicit(&t->full, ACCT(CTL_GEN(ctl), t->w_full),
	    memory_order_relaxed);
	atomic_store_explicit(&t->ring.hdr->full, ACCT(CTL_GEN(ctl),
	    t->w_full), memory_order_relaxed);
	atomic_store_explicit(&t->ring.hdr->taken, ACCT(CTL_GEN(ctl),
	    t->w_taken), memory_order_release);
	atomic_store_explicit(&t->taken_total, t->w_taken_total,
	    memory_order_relaxed);
	atomic_store_explicit(&t->full_total, t->w_full_total,
	    memory_order_relaxed);
}

int
tap_start(struct tap *t, uint64_t owner, uint32_t count, uint32_t snap)
{
	if (t->owner != 0 && t->owner != owner)
		return -EBUSY;
	/* untouched pages of the memfd cost nothing: the ring is as big as
	 * what a session really holds */
	if (t->ring.hdr == NULL) {
		int rc = daqiri_tapring_create(&t->ring, &t->fd);

		if (rc < 0)
			return rc;
	}
	if (++t->gen == 0)
		t->gen = 1;
	/* what a worker writes for an older session from here on is
	 * skipped by its generation */
	atomic_store_explicit(&t->ring.hdr->tail, atomic_load_explicit(
	    &t->head, memory_order_acquire), memory_order_release);
	t->owner = owner;
	t->count = count;
	atomic_store_explicit(&t->ctl, (uint64_t)t->gen |
	    (uint64_t)count << 16 | (uint64_t)snap << 36,
	    memory_order_release);
	return 0;
}

/* The worker's count n of this session (0 before it saw the session). */
static uint64_t
session_count(const _Atomic uint64_t *a, uint16_t gen)
{
	return daqiri_tapring_acct(atomic_load_explicit(a,
	    memory_order_acquire), gen);
}

int
tap_ring_fd(struct tap *t, uint64_t owner)
{
	int f;

	if (owner == 0 || t->owner != owner || t->ring.hdr == NULL)
		return -ENOENT;
	f = fcntl(t->fd, F_DUPFD_CLOEXEC, 0);
	return f < 0 ? -errno : f;
}

int
tap_read(struct tap *t, uint64_t owner, uint32_t max, cJSON *reply)
{
	static const char hex[] = "0123456789abcdef";
	uint64_t head, tail, taken;
	char *data;
	cJSON *a, *o;
	uint32_t n = 0;
	uint64_t bytes = 0;
	int rc = -ENOMEM;

	if (owner == 0 || t->owner != owner)
		return -ENOENT;
	/* taken before head: every frame counted is then in the ring */
	taken = session_count(&t->taken, t->gen);
	head = atomic_load_explicit(&t->head, memory_order_acquire);
	tail = atomic_load_explicit(&t->ring.hdr->tail, memory_order_relaxed);
	/* a tail a mapping reader left where no record of ours is: start
	 * over at head (its capture loses, nothing else) */
	if (head - tail > TAP_RING)
		tail = head;
	if ((a = cJSON_AddArrayToObject(reply, "frames")) == NULL ||
	    (data = malloc(2 * DAQIRI_TAP_SNAP_MAX + 1)) == NULL)
		return -ENOMEM;
	for (; tail != head && n < max; tail++) {
		const struct daqiri_tapring_rec *r =
		    daqiri_tapring_rec(&t->ring, tail);
		uint32_t caplen = r->caplen;

		if (r->gen != t->gen)
			continue;
		/* once, and no more than a record holds */
		if (caplen > DAQIRI_TAP_SNAP_MAX)
			caplen = DAQIRI_TAP_SNAP_MAX;
		/* a reply of bounded size: the rest waits for the next read */
		if (n > 0 && bytes + caplen > DAQIRI_TAP_READ_BYTES)
			break;
		bytes += caplen;
		for (uint32_t i = 0; i < caplen; i++) {
			data[2 * i] = hex[r->data[i] >> 4];
			data[2 * i + 1] = hex[r->data[i] & 15];
		}
		data[2 * caplen] = '\0';
		if ((o = cJSON_CreateObject()) == NULL ||
		    !cJSON_AddItemToArray(a, o) ||
		    cJSON_AddNumberToObject(o, "ns", (double)r->ns) == NULL ||
		    cJSON_AddNumberToObject(o, "len", r->len) == NULL ||
		    cJSON_AddStringToObject(o, "data", data) == NULL)
			goto out;
		n++;
	}
	atomic_store_explicit(&t->ring.hdr->tail, tail, memory_order_release);
	/* a session until stopped is never done */
	if (cJSON_AddNumberToObject(reply, "taken", (double)taken) != NULL &&
	    cJSON_AddNumberToObject(reply, "full",
	    (double)session_count(&t->full, t->gen)) != NULL &&
	    cJSON_AddBoolToObject(reply, "done", t->count != 0 &&
	    taken >= t->count && tail == head) != NULL)
		rc = 0;
out:
	free(data);
	return rc;
}

int
tap_stop(struct tap *t, uint64_t owner)
{
	if (t->owner == 0 || (owner != 0 && t->owner != owner))
		return -ENOENT;
	atomic_store_explicit(&t->ctl, 0, memory_order_release);
	t->owner = 0;
	return 0;
}

void
tap_free(struct tap *t)
{
	if (t->ring.hdr != NULL)
		close(t->fd);
	daqiri_tapring_unmap(&t->ring);
}
