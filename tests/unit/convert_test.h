/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the two conversion suites (check_convert.c, check_convert_fast.c)
 * share: the output types every conversion is checked into, and a cheap
 * equality check for loops that run millions of times.
 */
#ifndef DAQIRI_CONVERT_TEST_H
#define DAQIRI_CONVERT_TEST_H

#include "convert.h"

#define NOUT		5

/* Check writes to a pipe on every ck_assert; the cross-check loops run
 * millions, so they test first and call Check only on a failure. */
#define EXPECT_EQ(a, b) do {						\
	unsigned long long a_ = (a), b_ = (b);				\
	if (a_ != b_)							\
		ck_abort_msg("%s:%d: %s == %#llx, expected %s == %#llx", \
		    __FILE__, __LINE__, #a, a_, #b, b_);		\
} while (0)

static const enum daqiri_dtype out_types[NOUT] = {
	DAQIRI_DTYPE_FP16, DAQIRI_DTYPE_BF16, DAQIRI_DTYPE_FP32, DAQIRI_DTYPE_FP64,
	DAQIRI_DTYPE_INT32,
};
static const char *const out_names[NOUT] = {
	"fp16", "bf16", "fp32", "fp64", "int32",
};

#endif
