/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the configuration parser: any bytes must give a
 * config or diagnostics, never a crash, leak or hang; and a config that
 * parses must print as YAML that parses back to an equal struct.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Large (hundreds of KiB): static, the fuzzer runs one input at a time. */
static struct cfg parsed, reparsed;
static struct cfg_diags diags;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *devnull;
	char *text = NULL;
	size_t len = 0;
	FILE *fp;

	if (devnull == NULL)
		devnull = fopen("/dev/null", "we");
	if (cfg_parse((const char *)data, size, "fuzz.yaml", &parsed,
		      &diags) != 0) {
		if (devnull != NULL)
			cfg_diags_print(&diags, devnull);
		return 0;
	}
	fp = open_memstream(&text, &len);
	if (fp == NULL)
		return 0;
	if (cfg_print(&parsed, fp) != 0)
		abort();
	fclose(fp);
	if (cfg_parse(text, len, "printed.yaml", &reparsed, &diags) != 0 ||
	    !cfg_equal(&parsed, &reparsed)) {
		fprintf(stderr, "round trip failed; printed config:\n%s\n",
			text);
		cfg_diags_print(&diags, stderr);
		abort();
	}
	free(text);
	return 0;
}
