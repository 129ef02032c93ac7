/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The vectorised CPU conversion of one payload into one slot: the same
 * results, bit for bit, as cvt_slot_scalar() in convert.h, with AVX2 or
 * SSE4.1 (x86-64), NEON with or without its FP16 and BF16 conversions
 * (aarch64) chosen at run time, and non-temporal stores for large
 * outputs.
 */
#ifndef DAQIRI_CONVERT_CPU_H
#define DAQIRI_CONVERT_CPU_H

#include <stdint.h>

#include "config.h"

/* Outputs of at least this many bytes are streamed past the cache. */
#define CVT_NT_THRESHOLD_DEFAULT	4096u

/*
 * Convert nbytes of payload at src into the slot at dst, exactly as
 * cvt_slot_scalar() does (same bytes written, nothing else touched).
 * in NONE copies the bytes. dst needs no alignment. Large outputs are
 * written with non-temporal stores: call cvt_fence() before another
 * thread or process may read dst (the calling thread sees them at once).
 * The implementation is chosen at first use (see cvt_force_impl).
 */
void cvt_slot_fast(enum daqiri_dtype in, enum daqiri_dtype out, enum cfg_endian en,
		   const uint8_t *src, uint32_t nbytes, uint8_t *dst);

/* Fill a missing slot like cvt_fill_slot() (zero fills are streamed). */
void cvt_fill_fast(enum daqiri_dtype out, enum daqiri_fill fill, uint8_t *dst,
		   uint64_t nbytes);

/* Order every non-temporal store made so far before later stores
 * (sfence on x86-64, a release barrier elsewhere). */
void cvt_fence(void);

/*
 * Select an implementation by name: "avx2" (AVX2 + F16C), "sse4.1",
 * "neon-fp16-bf16" (ASIMD + FEAT_FP16 + FEAT_BF16), "neon-fp16", "neon",
 * "scalar", or "auto" / NULL for the best this CPU supports. Returns 0,
 * or -1 (selection unchanged) when the name is unknown or this CPU or
 * build cannot run it. For tests and benchmarks; not thread-safe against
 * concurrent conversions.
 */
int cvt_force_impl(const char *name);

/* Name of the implementation in use (one of cvt_impl_names). */
const char *cvt_impl_name(void);

/* Names of every implementation this build knows, best first,
 * NULL-terminated. */
extern const char *const cvt_impl_names[];

/* Outputs of at least bytes use non-temporal stores (0 = always, for
 * tests; UINT64_MAX = never). Default CVT_NT_THRESHOLD_DEFAULT. */
void cvt_set_nt_threshold(uint64_t bytes);

#endif
