/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the reload's diff (cfg_diff(), cfg_apply_live()):
 * the input is two configurations, a running one and a new one, joined by
 * a line "%%". Whatever they are: a config differs from itself in
 * nothing; and when the diff finds only live changes, applying them to
 * the running config gives one equal to the new config (what a reload
 * claims, and checks, after it applied them).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SEP	"\n%%\n"

/* Large: static, the fuzzer runs one input at a time. */
static struct cfg a, b, run;
static struct cfg_diags diags;
static struct cfg_changes ch;

static void
same_as_itself(const struct cfg *c, const char *which)
{
	if (cfg_diff(c, c, &ch) != 0 || ch.nlive != 0 || ch.n != 0) {
		fprintf(stderr, "the %s config differs from itself:\n", which);
		cfg_changes_print(&ch, which, stderr);
		abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	const char *sep = memmem(text, size, SEP, strlen(SEP));
	size_t alen, blen;

	if (sep == NULL)
		return 0;
	alen = (size_t)(sep - text);
	blen = size - alen - strlen(SEP);
	if (cfg_parse(text, alen, "running.yaml", &a, &diags) != 0)
		return 0;
	same_as_itself(&a, "running");
	if (cfg_parse(sep + strlen(SEP), blen, "new.yaml", &b, &diags) != 0)
		return 0;
	same_as_itself(&b, "new");
	if (cfg_diff(&a, &b, &ch) != 0)
		return 0;	/* restart-only changes: a reload refuses */
	run = a;
	cfg_apply_live(&run, &b);
	if (!cfg_equal(&run, &b)) {
		fprintf(stderr, "live changes applied, the config is not the "
			"new one; the changes:\n");
		cfg_changes_print(&ch, "new.yaml", stderr);
		abort();
	}
	return 0;
}
