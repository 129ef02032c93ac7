/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daqirictl learn's inference (learn.h). The frames of the busiest UDP
 * flow are searched for the field that counts packets: the bit field,
 * ending on any bit of the 64 bytes after the UDP header, whose steps
 * from one packet to the next are most often small and nonzero (a packet
 * counter under loss, duplicates and reordering). Its width is the
 * widest reading (up to 32 bits) unless it was seen wrapping at a
 * narrower one. Then a batch field, a field equal to the counter's top
 * bits; then where the samples start: the first byte after the fields
 * that is not the same in every packet. What cannot be told from packets
 * (the sample type, how many packets make a tensor without a batch
 * field) is left to the user.
 */
#include <stdlib.h>
#include <string.h>

#include "learn.h"

/* Frames of the busiest flow, at most this many are looked at. */
#define LEARN_MAX	65536u

static uint32_t
rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

/* Bits [end + 1 - width, end] of frame f, counted from its first bit,
 * read big-endian (width <= 32, end >= 32). */
static uint32_t
field(const struct learn_frame *f, uint32_t end, uint32_t width)
{
	const uint8_t *p = f->data + end / 8 - 4;
	uint64_t v = (uint64_t)rd32(p) << 8 | p[4];

	v >>= 7 - end % 8;
	return (uint32_t)(width == 32 ? v : v & ((1u << width) - 1));
}

/* The step from a to b modulo 2^width, as a signed number. */
static int64_t
step(uint32_t a, uint32_t b, uint32_t width)
{
	uint64_t m = width == 32 ? 0xFFFFFFFFull : (1ull << width) - 1;
	uint64_t d = ((uint64_t)b - a) & m;

	return d > m / 2 ? (int64_t)d - (int64_t)m - 1 : (int64_t)d;
}

/* A step a packet counter of this width makes under reordering and
 * loss: nonzero, and small against the field's range too (every step of
 * a random 10-bit field is within 1024). */
static bool
is_small(int64_t d, uint32_t width)
{
	int64_t lim = width >= 14 ? LEARN_STEP_MAX :
	    width >= 4 ? (int64_t)1 << (width - 4) : 1;

	return d != 0 && d >= -lim && d <= lim;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The flow key of a UDP/IPv4 frame (20-byte IPv4 header) into k: its
 * destination address and port (a sender that restarts may send from
 * another port); false for anything else. */
#define KEY_BYTES	6
static bool
flow_key(const struct learn_frame *f, uint8_t k[KEY_BYTES])
{
	const uint8_t *p = f->data;

	if (f->caplen < LEARN_HDR || p[12] != 0x08 || p[13] != 0x00 ||
	    p[14] != 0x45 || p[23] != 17)
		return false;
	memcpy(k, p + 30, 4);
	memcpy(k + 4, p + 36, 2);
	return true;
}

/* The busiest flow's frames into out (their indices); returns how many. */
static uint32_t
busiest_flow(const struct learn_frame *f, uint32_t n, uint32_t *out,
	     struct learn_result *r)
{
	uint8_t (*keys)[KEY_BYTES] = malloc((size_t)n * KEY_BYTES + 1);
	uint32_t *cnt = calloc((size_t)n + 1, sizeof(*cnt));
	uint32_t nk = 0, best = 0, m = 0;
	uint8_t k[KEY_BYTES];

	if (keys == NULL || cnt == NULL) {
		free(keys);
		free(cnt);
		return 0;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t j;

		if (!flow_key(&f[i], k))
			continue;
		for (j = 0; j < nk && memcmp(keys[j], k, KEY_BYTES) != 0; j++)
			;
		if (j == nk)
			memcpy(keys[nk++], k, KEY_BYTES);
		if (++cnt[j] > cnt[best])
			best = j;
	}
	for (uint32_t i = 0; nk > 0 && i < n && m < LEARN_MAX; i++)
		if (flow_key(&f[i], k) && memcmp(k, keys[best], KEY_BYTES) == 0)
			out[m++] = i;
	/* the source of its first frame, and whether others sent too */
	for (uint32_t i = 0; i < m; i++) {
		const uint8_t *p = f[out[i]].data;
		uint32_t src = rd32(p + 26);
		uint16_t sport = (uint16_t)(p[34] << 8 | p[35]);

		if (i == 0) {
			r->ipv4_src = src;
			r->udp_src = sport;
			r->ipv4_dst = rd32(p + 30);
			r->udp_dst = (uint16_t)(p[36] << 8 | p[37]);
		} else if (src != r->ipv4_src || sport != r->udp_src) {
			r->sources_other++;
		}
	}
	free(keys);
	free(cnt);
	return m;
}

/* The most frequent frame length of the chosen frames. */
static void
lengths(const struct learn_frame *f, const uint32_t *ix, uint32_t m,
	struct learn_result *r)
{
	uint32_t best = 0, bestn = 0;

	for (uint32_t i = 0; i < m; i++) {
		uint32_t c = 0;

		if (i > 0 && f[ix[i]].len == f[ix[i - 1]].len)
			continue;
		for (uint32_t j = 0; j < m; j++)
			c += f[ix[j]].len == f[ix[i]].len;
		if (c > bestn) {
			bestn = c;
			best = f[ix[i]].len;
		}
		if (bestn * 2 > m)
			break;
	}
	r->len = best;
	r->len_other = m - bestn;
}

/* Small nonzero steps of the field (end, width) over the frames. */
static uint32_t
small_steps(const struct learn_frame *f, const uint32_t *ix, uint32_t m,
	    uint32_t end, uint32_t width, uint32_t *nonzero)
{
	uint32_t small = 0, nz = 0, prev = field(&f[ix[0]], end, width);

	for (uint32_t i = 1; i < m; i++) {
		uint32_t v = field(&f[ix[i]], end, width);
		int64_t d = step(prev, v, width);

		nz += d != 0;
		small += is_small(d, width);
		prev = v;
	}
	*nonzero = nz;
	return small;
}

/* Distinct values of the field over the frames. */
static uint32_t
distinct(const struct learn_frame *f, const uint32_t *ix, uint32_t m,
	 uint32_t end, uint32_t width, uint64_t *tmp)
{
	uint32_t u = m > 0;

	for (uint32_t i = 0; i < m; i++)
		tmp[i] = field(&f[ix[i]], end, width);
	qsort(tmp, m, sizeof(*tmp), cmp_u64);
	for (uint32_t i = 1; i < m; i++)
		u += tmp[i] != tmp[i - 1];
	return u;
}

/*
 * The counter's width when it ends on bit end: the widest reading, unless the
 * counter was seen wrapping at a narrower one: some steps jump at width
 * w + 1 yet are small at w, and each of them goes between the top and
 * the bottom quarter of w's range. (Narrower readings make more steps
 * small by aliasing, a restart's jump among them, so small steps alone
 * cannot tell the width.)
 */
static uint32_t
seq_width(const struct learn_frame *f, const uint32_t *ix, uint32_t m,
	  uint32_t end, bool *wrapped)
{
	uint32_t wmax = end + 1 - LEARN_HDR * 8;

	if (wmax > 32)
		wmax = 32;
	for (uint32_t w = wmax - 1; w >= 8; w--) {
		uint32_t wraps = 0, other = 0, q = 1u << (w - 2);

		for (uint32_t i = 1; i < m; i++) {
			uint32_t a = field(&f[ix[i - 1]], end, w);
			uint32_t b = field(&f[ix[i]], end, w);

			if (is_small(step(field(&f[ix[i - 1]], end, w + 1),
			    field(&f[ix[i]], end, w + 1), w + 1), w + 1) ||
			    !is_small(step(a, b, w), w))
				continue;
			if ((a >= 3 * q && b < q) || (b >= 3 * q && a < q))
				wraps++;
			else
				other++;
		}
		if (wraps > 0 && other == 0) {
			*wrapped = true;
			return w;
		}
	}
	return wmax;
}

static void
find_seq(const struct learn_frame *f, const uint32_t *ix, uint32_t m,
	 uint32_t cap, uint64_t *tmp, struct learn_result *r)
{
	uint32_t best_small = 0, best_end = 0, w, nz;

	/* the bit the counter ends on: the most small steps at any width */
	for (uint32_t end = LEARN_HDR * 8; end < cap * 8 &&
	    end < (LEARN_HDR + LEARN_SCAN) * 8; end++)
		/* from 4 bits: steps of a random field of fewer are +-1
		 * as often as not */
		for (w = 4; w <= 32 && end + 1 - w >= LEARN_HDR * 8; w++) {
			uint32_t s = small_steps(f, ix, m, end, w, &nz);

			/* most steps of a packet counter move it, and half
			 * the packets at least are distinct values (or half
			 * the values of a narrow field that wraps) */
			if (nz * 2 < m || s <= best_small ||
			    distinct(f, ix, m, end, w, tmp) * 2 <
			    (w < 32 && (1u << w) < m ? 1u << w : m))
				continue;
			best_small = s;
			best_end = end;
		}
	/* most steps of the counter are small, whatever else holds */
	if (best_end == 0 || (uint64_t)best_small * 2 < m) {
		strcpy(r->why, "no field in the first 64 bytes after the UDP "
		    "header counts packets (most steps between packets small "
		    "and nonzero, most values distinct)");
		return;
	}
	w = seq_width(f, ix, m, best_end, &r->seq_wrapped);
	r->seq_bit_width = w;
	r->seq_bit_offset = best_end + 1 - w;
	r->seq_small = m > 1 ? (double)small_steps(f, ix, m, best_end, w,
	    &nz) / (m - 1) : 0;
	/* zero bytes before the field: it may be wider than seen */
	for (uint32_t b = r->seq_bit_offset / 8; b > LEARN_HDR; b--) {
		bool zero = true;

		for (uint32_t i = 0; i < m && zero; i++)
			zero = f[ix[i]].data[b - 1] == 0;
		if (!zero)
			break;
		r->seq_zero_above++;
	}
	r->seq_conf = r->seq_small >= 0.98 && m >= 256 ? LEARN_HIGH :
	    r->seq_small >= 0.9 && m >= 64 ? LEARN_MEDIUM : LEARN_LOW;
}

static bool
overlaps(uint32_t a_off, uint32_t a_w, uint32_t b_off, uint32_t b_w)
{
	return a_off < b_off + b_w && b_off < a_off + a_w;
}

/* A field equal to the counter's top bits: batch = seq >> k. */
static void
find_batch(const struct learn_frame *f, const uint32_t *ix, uint32_t m,
	   uint32_t cap, uint64_t *tmp, struct learn_result *r)
{
	uint32_t send = r->seq_bit_offset + r->seq_bit_width - 1;

	/* the reference's rule: packets per batch = 2^(seq bits - batch
	 * bits), so a batch field of w bits is the counter's top w bits;
	 * the widest such field (its own top bits are one too) */
	for (uint32_t k = 1; k < r->seq_bit_width && k <= 20; k++)
		for (uint32_t end = LEARN_HDR * 8; end < cap * 8 &&
		    end < (LEARN_HDR + LEARN_SCAN) * 8; end++) {
			uint32_t w = r->seq_bit_width - k, miss = 0, i;
			uint32_t off = end + 1 - w, mask = (1u << w) - 1;

			if (end + 1 < LEARN_HDR * 8 + w || overlaps(off, w,
			    r->seq_bit_offset, r->seq_bit_width))
				continue;
			/* 99% of the packets agree (a few frames of another
			 * layout may be mixed in) */
			for (i = 0; i < m && miss <= m / 100; i++)
				miss += field(&f[ix[i]], end, w) !=
				    ((field(&f[ix[i]], send, r->seq_bit_width) >>
				    k) & mask);
			if (miss > m / 100 || distinct(f, ix, m, end, w, tmp) < 2)
				continue;
			r->has_batch = true;
			r->batch_bit_offset = off;
			r->batch_bit_width = w;
			r->ppb = 1u << k;
			return;
		}
}

/* The first byte after the fields that differs between packets. */
static void
find_payload(const struct learn_frame *f, const uint32_t *ix, uint32_t m,
	     uint32_t cap, struct learn_result *r)
{
	uint32_t b = (r->seq_bit_offset + r->seq_bit_width + 7) / 8;

	if (r->has_batch &&
	    (r->batch_bit_offset + r->batch_bit_width + 7) / 8 > b)
		b = (r->batch_bit_offset + r->batch_bit_width + 7) / 8;
	r->payload_offset = b;
	for (; b < cap; b++)
		for (uint32_t i = 1; i < m; i++)
			if (f[ix[i]].data[b] != f[ix[0]].data[b]) {
				r->payload_offset = b;
				goto found;
			}
found:
	r->payload_bytes = r->len > r->payload_offset ?
	    r->len - r->payload_offset : 0;
}

/* Loss, duplicates, reorder depth and jumps of the counter. */
static void
count_seq(const struct learn_frame *f, const uint32_t *ix, uint32_t m,
	  uint64_t *tmp, struct learn_result *r)
{
	uint32_t w = r->seq_bit_width;
	uint32_t end = r->seq_bit_offset + w - 1;
	uint32_t seg = 0, prev = field(&f[ix[0]], end, w);
	uint64_t u = 1ull << 40, top = u;

	tmp[0] = u;
	for (uint32_t i = 1; i <= m; i++) {
		uint32_t v = i < m ? field(&f[ix[i]], end, w) : 0;
		int64_t d = i < m ? step(prev, v, w) : 0;

		if (i == m || (d != 0 && !is_small(d, w))) {
			/* a segment ends: count it */
			uint32_t n = i - seg, uniq = 1;

			qsort(tmp + seg, n, sizeof(*tmp), cmp_u64);
			for (uint32_t j = seg + 1; j < i; j++)
				uniq += tmp[j] != tmp[j - 1];
			r->unique += uniq;
			r->duplicates += n - uniq;
			r->expected += tmp[i - 1] - tmp[seg] + 1;
			if (i == m)
				break;
			r->restarts++;
			seg = i;
			u = top = 1ull << 40;
		} else {
			u += (uint64_t)d;
			if (u > top)
				top = u;
			else if (top - u > r->reorder_depth)
				r->reorder_depth = (uint32_t)(top - u);
		}
		tmp[i] = u;
		prev = v;
	}
}

void
learn_analyse(const struct learn_frame *f, uint32_t n, struct learn_result *r)
{
	uint32_t *ix = malloc(((size_t)n + 1) * sizeof(*ix));
	uint64_t *tmp = malloc(((size_t)n + 1) * sizeof(*tmp));
	uint32_t m, cap = UINT32_MAX;
	uint64_t bytes = 0;

	memset(r, 0, sizeof(*r));
	if (ix == NULL || tmp == NULL) {
		strcpy(r->why, "out of memory");
		goto out;
	}
	m = busiest_flow(f, n, ix, r);
	r->frames = m;
	r->other = n - m;
	if (m < 16) {
		strcpy(r->why, m == 0 ? "no UDP/IPv4 frames" :
		    "fewer than 16 frames of one UDP flow");
		goto out;
	}
	lengths(f, ix, m, r);
	for (uint32_t i = 0; i < m; i++) {
		if (f[ix[i]].caplen < cap)
			cap = f[ix[i]].caplen;
		bytes += f[ix[i]].len;
	}
	if (f[ix[m - 1]].ns > f[ix[0]].ns) {
		double s = (double)(f[ix[m - 1]].ns - f[ix[0]].ns) / 1e9;

		r->pps = (m - 1) / s;
		r->gbps = (double)bytes * 8 / s / 1e9 * (m - 1) / m;
	}
	find_seq(f, ix, m, cap, tmp, r);
	if (r->seq_bit_width == 0)
		goto out;
	find_batch(f, ix, m, cap, tmp, r);
	find_payload(f, ix, m, cap, r);
	count_seq(f, ix, m, tmp, r);
out:
	free(ix);
	free(tmp);
}

const char *
learn_conf_name(enum learn_conf c)
{
	static const char *const names[] = { [LEARN_NONE] = "none",
		[LEARN_LOW] = "low", [LEARN_MEDIUM] = "medium",
		[LEARN_HIGH] = "high" };

	return names[c];
}
