/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small helpers the test and benchmark tools share (header only): the
 * process's CPU time and a checked number from the command line. Their
 * clock is daqiri_mono_ns() (proto/desc.h), the daemon's own.
 */
#ifndef DAQIRI_TESTS_TOOL_H
#define DAQIRI_TESTS_TOOL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

/* User + system CPU seconds of this process so far. */
static inline double
tool_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	    (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* Option opt's value s as a number in lo..hi, or "PROG: OPT: 'S' is not
 * LO..HI" and exit 2. */
static inline uint64_t
tool_num(const char *prog, const char *opt, const char *s, uint64_t lo,
	 uint64_t hi)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi) {
		fprintf(stderr, "%s: %s: '%s' is not %llu..%llu\n", prog, opt,
		    s, (unsigned long long)lo, (unsigned long long)hi);
		exit(2);
	}
	return v;
}

#endif
