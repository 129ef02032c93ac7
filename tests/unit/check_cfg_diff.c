/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the reload's diff (daemon/cfg_diff.c): a base config
 * changed one key at a time, each change found once, classified live or
 * restart-only as daqirid.yaml(5) RELOAD says, and placed at the line and
 * column of the new value in the new text.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

static const char base[] =
"daqiri:\n"
"  cfg:\n"
"    version: 1\n"
"    master_core: 0\n"
"    log_level: warn\n"
"    stream_type: socket\n"
"    memory_regions:\n"
"    - name: frames\n"
"      kind: host\n"
"      num_bufs: 1024\n"
"      buf_size: 9000\n"
"    - name: tensors\n"
"      kind: host\n"
"      num_bufs: 8\n"
"      buf_size: 4096000\n"
"    - name: tensors2\n"
"      kind: host\n"
"      num_bufs: 8\n"
"      buf_size: 4096000\n"
"    interfaces:\n"
"    - name: sensor0\n"
"      address: 127.0.0.1\n"
"      socket_config:\n"
"        mode: server\n"
"        local_addr: udp://127.0.0.1:5005\n"
"      tx:\n"
"        queues:\n"
"        - name: t0\n"
"          id: 0\n"
"          batch_size: 16\n"
"          memory_regions: [frames]\n"
"          destination:\n"
"            ipv4_dst: 127.0.0.1\n"
"            udp_dst: 5010\n"
"      rx:\n"
"        flow_isolation: false\n"
"        queues:\n"
"        - name: q0\n"
"          id: 0\n"
"          batch_size: 64\n"
"          memory_regions: [frames]\n"
"        flows:\n"
"        - name: sensor\n"
"          id: 0\n"
"          action: {type: queue, id: 0}\n"
"          match: {udp_dst: 5005}\n"
"        - name: other\n"
"          id: 1\n"
"          action: {type: queue, id: 0}\n"
"          match: {udp_dst: 5006}\n"
"        reorder_configs:\n"
"        - name: tensor\n"
"          reorder_type: cpu\n"
"          memory_region: tensors\n"
"          payload_byte_offset: 50\n"
"          payload_bytes: 8000\n"
"          flow_ids: [0]\n"
"          method:\n"
"            seq_packets_per_batch:\n"
"              sequence_number: {bit_offset: 336, bit_width: 32}\n"
"              packets_per_batch: 128\n"
"          data_types: {input_type: int4, output_type: fp16}\n"
"          window: 4\n"
"          fill: zero\n"
"          timeout_us: 100000\n"
"  daemon:\n"
"    stats_interval_ms: 1000\n"
"    max_consumers: 64\n";

/* A second reorder config, for adding a stream. */
static const char second_stream[] =
"        - name: tensor2\n"
"          reorder_type: cpu\n"
"          memory_region: tensors2\n"
"          payload_byte_offset: 50\n"
"          payload_bytes: 8000\n"
"          flow_ids: [1]\n"
"          method:\n"
"            seq_packets_per_batch:\n"
"              sequence_number: {bit_offset: 336, bit_width: 32}\n"
"              packets_per_batch: 128\n"
"  daemon:\n";

static struct cfg old_cfg, new_cfg;
static struct cfg_diags diags;
static struct cfg_changes ch;
static char text[sizeof(base) + sizeof(second_stream) + 256];

/* base with its first `from` replaced by `to`, into text. */
static void
edit(const char *from, const char *to)
{
	const char *at = strstr(base, from);

	ck_assert_msg(at != NULL, "no '%s' in the base config", from);
	snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - base), base, to,
	    at + strlen(from));
}

static void
parse_both(void)
{
	ck_assert_int_eq(cfg_parse(base, strlen(base), "old.yaml", &old_cfg,
	    &diags), 0);
	if (cfg_parse(text, strlen(text), "new.yaml", &new_cfg, &diags) != 0) {
		cfg_diags_print(&diags, stderr);
		ck_abort_msg("the edited config does not parse");
	}
}

/* Where the first `needle` of text ends: line and column of what follows. */
static struct cfg_pos
after(const char *needle)
{
	const char *at = strstr(text, needle), *p;
	struct cfg_pos pos = { 1, 1 };

	ck_assert_ptr_nonnull(at);
	at += strlen(needle);
	for (p = text; p < at; p++) {
		if (*p == '\n') {
			pos.line++;
			pos.col = 1;
		} else {
			pos.col++;
		}
	}
	return pos;
}

/* Exactly one change, of kind live, containing `words`, at pos (line 0:
 * not checked). */
static void
expect_one(bool live, const char *words, struct cfg_pos pos)
{
	int nrestart = cfg_diff(&old_cfg, &new_cfg, &ch);

	if (ch.n != 1)
		cfg_changes_print(&ch, "new.yaml", stderr);
	ck_assert_int_eq(ch.n, 1);
	ck_assert_int_eq(nrestart, live ? 0 : 1);
	ck_assert_int_eq(ch.nlive, live ? 1 : 0);
	ck_assert_int_eq(ch.ch[0].live, live);
	ck_assert_msg(strstr(ch.ch[0].msg, words) != NULL, "'%s' lacks '%s'",
	    ch.ch[0].msg, words);
	if (pos.line != 0) {
		ck_assert_int_eq(ch.ch[0].pos.line, pos.line);
		ck_assert_int_eq(ch.ch[0].pos.col, pos.col);
	}
}

static const struct cfg_pos anywhere = { 0, 0 };

START_TEST(test_same)
{
	edit("version: 1", "version: 1");
	parse_both();
	ck_assert_int_eq(cfg_diff(&old_cfg, &new_cfg, &ch), 0);
	ck_assert_int_eq(ch.n, 0);
	ck_assert_int_eq(ch.nlive, 0);
	/* comments and moved lines are no change either */
	edit("  daemon:\n", "  # a comment\n\n  daemon:\n");
	parse_both();
	ck_assert_int_eq(cfg_diff(&old_cfg, &new_cfg, &ch), 0);
	ck_assert_int_eq(ch.n, 0);
}
END_TEST

/* ---- live */

START_TEST(test_live_log_level)
{
	edit("log_level: warn", "log_level: debug");
	parse_both();
	expect_one(true, "log_level: warn -> debug", after("log_level: "));
}
END_TEST

START_TEST(test_live_timeout)
{
	edit("timeout_us: 100000", "timeout_us: 2500");
	parse_both();
	expect_one(true, "timeout_us: 100000 -> 2500", after("timeout_us: "));
}
END_TEST

/* resync_after_us applies live; one derived from timeout_us follows it
 * without a change of its own (test_live_timeout). */
START_TEST(test_live_resync_after)
{
	edit("timeout_us: 100000\n", "timeout_us: 100000\n"
	    "          resync_after_us: 300000\n");
	parse_both();
	expect_one(true, "resync_after_us: 200000 -> 300000",
	    after("resync_after_us: "));
}
END_TEST

START_TEST(test_live_fill)
{
	edit("fill: zero", "fill: nan");
	parse_both();
	expect_one(true, "fill: zero -> nan", after("fill: "));
}
END_TEST

START_TEST(test_live_missing_action)
{
	edit("fill: zero\n", "fill: zero\n          missing_action: drop\n");
	parse_both();
	expect_one(true, "missing_action: passthrough -> drop",
	    after("missing_action: "));
}
END_TEST

/* cyclic_sequence changes nothing in daqiri: live, and says so. */
START_TEST(test_live_cyclic_sequence)
{
	edit("fill: zero\n", "fill: zero\n          cyclic_sequence: true\n");
	parse_both();
	expect_one(true, "cyclic_sequence: false -> true (no effect in daqiri)",
	    after("cyclic_sequence: "));
}
END_TEST

START_TEST(test_live_window)
{
	edit("window: 4", "window: 2");
	parse_both();
	expect_one(true, "window: 4 -> 2", after("window: "));
}
END_TEST

START_TEST(test_live_window_default)
{
	/* a key removed is its default: the entry's position */
	edit("          window: 4\n", "");
	parse_both();
	ck_assert_int_eq(cfg_diff(&old_cfg, &new_cfg, &ch), 0);
	ck_assert_int_eq(ch.n, 0);	/* the default is 4 */
	edit("          window: 4\n", "          window: 3\n");
	parse_both();
	expect_one(true, "window: 4 -> 3", after("          window: "));
}
END_TEST

START_TEST(test_live_flow_match)
{
	edit("match: {udp_dst: 5006}", "match: {udp_dst: 6000}");
	parse_both();
	expect_one(true, "flow 1 ('other') changed", anywhere);
	ck_assert_int_eq(ch.ch[0].pos.line, after("- name: other").line);
}
END_TEST

START_TEST(test_live_flow_added_removed)
{
	edit("        reorder_configs:\n",
	    "        - name: third\n"
	    "          id: 2\n"
	    "          action: {type: queue, id: 0}\n"
	    "          match: {udp_dst: 5007}\n"
	    "        reorder_configs:\n");
	parse_both();
	expect_one(true, "flow 2 ('third') added", anywhere);
	ck_assert_int_eq(ch.ch[0].pos.line, after("- name: third").line);

	edit("        - name: other\n"
	    "          id: 1\n"
	    "          action: {type: queue, id: 0}\n"
	    "          match: {udp_dst: 5006}\n", "");
	parse_both();
	expect_one(true, "flow 1 ('other') removed", anywhere);
}
END_TEST

START_TEST(test_live_flow_isolation)
{
	edit("flow_isolation: false", "flow_isolation: true");
	parse_both();
	expect_one(true, "flow_isolation: false -> true",
	    after("flow_isolation: "));
}
END_TEST

START_TEST(test_live_stats_interval)
{
	edit("stats_interval_ms: 1000", "stats_interval_ms: 500");
	parse_both();
	expect_one(true, "stats_interval_ms: 1000 -> 500",
	    after("stats_interval_ms: "));
}
END_TEST

/* ---- restart-only */

START_TEST(test_restart_region_size)
{
	edit("      num_bufs: 8\n      buf_size: 4096000\n",
	    "      num_bufs: 16\n      buf_size: 4096000\n");
	parse_both();
	expect_one(false, "memory region 'tensors': num_bufs: 8 -> 16",
	    after("      num_bufs: 1024\n      buf_size: 9000\n"
	    "    - name: tensors\n      kind: host\n      num_bufs: "));
	edit("buf_size: 9000", "buf_size: 9100");
	parse_both();
	expect_one(false, "memory region 'frames': buf_size: 9000 -> 9100",
	    after("buf_size: "));
}
END_TEST

START_TEST(test_restart_queue)
{
	edit("batch_size: 64", "batch_size: 32");
	parse_both();
	expect_one(false, "rx queue 'q0': batch_size changed",
	    after("q0\n          id: 0\n          batch_size: "));
}
END_TEST

/* TX is restart-only, all of it: a worker and its engine queue take
 * their headers and rate when they start. */
START_TEST(test_restart_tx_destination)
{
	edit("udp_dst: 5010", "udp_dst: 5011");
	parse_both();
	expect_one(false, "tx queue 't0': destination.udp_dst changed: needs "
	    "a restart", after("udp_dst: "));
	edit("            udp_dst: 5010\n", "            udp_dst: 5010\n"
	    "            ttl: 9\n");
	parse_both();
	expect_one(false, "tx queue 't0': destination.ttl changed",
	    after("ttl: "));
	/* the default written out is no change */
	edit("            udp_dst: 5010\n", "            udp_dst: 5010\n"
	    "            ttl: 64\n            dscp: 0\n");
	parse_both();
	ck_assert_int_eq(cfg_diff(&old_cfg, &new_cfg, &ch), 0);
	ck_assert_int_eq(ch.n, 0);
	edit("ipv4_dst: 127.0.0.1", "ipv4_dst: 127.0.0.2");
	parse_both();
	expect_one(false, "destination.ipv4_dst changed", after("ipv4_dst: "));
}
END_TEST

START_TEST(test_restart_tx_pacing)
{
	edit("          batch_size: 16\n", "          batch_size: 16\n"
	    "          pacing_mbps: 100\n");
	parse_both();
	expect_one(false, "interface 'sensor0': tx pacing_mbps: 0 -> 100: "
	    "needs a restart", after("pacing_mbps: "));
}
END_TEST

START_TEST(test_restart_tx_queues)
{
	edit("          destination:\n", "          pacing_mbps: 0\n"
	    "          destination:\n");
	parse_both();
	ck_assert_int_eq(cfg_diff(&old_cfg, &new_cfg, &ch), 0);
	edit("batch_size: 16", "batch_size: 8");
	parse_both();
	expect_one(false, "tx queue 't0': batch_size changed",
	    after("batch_size: "));
	edit("      rx:\n", "        - {name: t1, id: 1, batch_size: 1, "
	    "memory_regions: [frames],\n           destination: {ipv4_dst: "
	    "127.0.0.1, udp_dst: 5012}}\n      rx:\n");
	parse_both();
	expect_one(false, "tx queue 1: '(none)' -> 't1' (queues added, removed "
	    "or reordered): needs a restart",
	    after("udp_dst: 5010\n        - "));
	/* the whole tx section removed: refused, the section and its queue */
	snprintf(text, sizeof(text), "%s", base);
	{
		char *a = strstr(text, "      tx:\n");
		char *b = strstr(text, "      rx:\n");

		memmove(a, b, strlen(b) + 1);
	}
	parse_both();
	ck_assert_int_eq(cfg_diff(&old_cfg, &new_cfg, &ch), 2);
	ck_assert_int_eq(ch.nlive, 0);
	ck_assert_ptr_nonnull(strstr(ch.ch[0].msg, "interface 'sensor0': tx "
	    "section added or removed: needs a restart"));
	ck_assert_ptr_nonnull(strstr(ch.ch[1].msg, "'t0' -> '(none)'"));
}
END_TEST

START_TEST(test_restart_interface)
{
	edit("local_addr: udp://127.0.0.1:5005", "local_addr: udp://127.0.0.1:5009");
	parse_both();
	expect_one(false, "socket_config changed", after("local_addr: "));
	edit("address: 127.0.0.1", "address: 127.0.0.2");
	parse_both();
	/* the address and the socket's agree or not: only the address here */
	expect_one(false, "interface address", after("address: "));
}
END_TEST

START_TEST(test_restart_engine_core)
{
	edit("master_core: 0", "master_core: 1");
	parse_both();
	expect_one(false, "master_core: 0 -> 1", after("master_core: "));
}
END_TEST

START_TEST(test_restart_reorder_fixed)
{
	edit("payload_byte_offset: 50", "payload_byte_offset: 58");
	parse_both();
	/* at the reorder config's entry */
	expect_one(false, "payload_byte_offset changed", anywhere);
	ck_assert_int_eq(ch.ch[0].pos.line,
	    after("        - name: tensor\n").line - 1);
}
END_TEST

/* A stream added on a region nothing runs on, and removed again: live. */
START_TEST(test_live_stream_added_removed)
{
	edit("  daemon:\n", second_stream);
	parse_both();
	expect_one(true, "stream 'sensor0/tensor2' added", anywhere);
	ck_assert_int_eq(ch.ch[0].pos.line, after("- name: tensor2").line);
	/* and the other way round */
	ck_assert_int_eq(cfg_diff(&new_cfg, &old_cfg, &ch), 0);
	ck_assert_int_eq(ch.n, 1);
	ck_assert(ch.ch[0].live);
	ck_assert_ptr_nonnull(strstr(ch.ch[0].msg,
	    "stream 'sensor0/tensor2' removed (its subscribers are ended)"));
}
END_TEST

/* A stream added on the region a running stream writes: refused. */
START_TEST(test_restart_stream_on_used_region)
{
	char tmp[sizeof(text)];

	/* tensor2 writes into tensors, tensor moves to tensors2 */
	edit("  daemon:\n", second_stream);
	memcpy(tmp, text, sizeof(tmp));
	{
		char *a = strstr(tmp, "memory_region: tensors\n");
		char *b = strstr(tmp, "memory_region: tensors2\n");

		*a = '\0';
		*b = '\0';
		snprintf(text, sizeof(text), "%smemory_region: tensors2\n%s"
		    "memory_region: tensors\n%s", tmp,
		    a + strlen("memory_region: tensors\n"),
		    b + strlen("memory_region: tensors2\n"));
	}
	parse_both();
	cfg_diff(&old_cfg, &new_cfg, &ch);
	ck_assert_int_ge(ch.nrestart, 1);
	ck_assert_int_eq(ch.ch[ch.n - 1].live, false);
	ck_assert_ptr_nonnull(strstr(ch.ch[ch.n - 1].msg,
	    "which the running configuration uses"));
}
END_TEST

/* Regions keep their places: appended or removed from the end live, a
 * region inserted before others needs a restart. */
START_TEST(test_regions_added_removed)
{
	edit("    interfaces:\n", "    - name: extra\n      kind: host\n"
	    "      num_bufs: 2\n      buf_size: 64\n    interfaces:\n");
	parse_both();
	expect_one(true, "memory region 'extra' added", anywhere);
	ck_assert_int_eq(ch.ch[0].pos.line, after("- name: extra").line);
	ck_assert_int_eq(cfg_diff(&new_cfg, &old_cfg, &ch), 0);
	ck_assert_int_eq(ch.n, 1);
	ck_assert_ptr_nonnull(strstr(ch.ch[0].msg,
	    "memory region 'extra' removed"));
	edit("    memory_regions:\n", "    memory_regions:\n"
	    "    - name: extra\n      kind: host\n"
	    "      num_bufs: 2\n      buf_size: 64\n");
	parse_both();
	ck_assert_int_gt(cfg_diff(&old_cfg, &new_cfg, &ch), 0);
	ck_assert_ptr_nonnull(strstr(ch.ch[0].msg,
	    "regions are added at the end"));
}
END_TEST

START_TEST(test_restart_daemon)
{
	edit("max_consumers: 64", "max_consumers: 65");
	parse_both();
	expect_one(false, "daemon.max_consumers: 64 -> 65",
	    after("max_consumers: "));
}
END_TEST

/* One live and one restart-only change: the diff says refuse, and lists
 * both. */
START_TEST(test_mixed)
{
	snprintf(text, sizeof(text), "%s", base);
	memcpy(strstr(text, "batch_size: 64"), "batch_size: 32", 14);
	memcpy(strstr(text, "fill: zero"), "fill: keep", 10);
	parse_both();
	ck_assert_int_eq(cfg_diff(&old_cfg, &new_cfg, &ch), 1);
	ck_assert_int_eq(ch.n, 2);
	ck_assert_int_eq(ch.nlive, 1);
	ck_assert_int_eq(ch.nrestart, 1);
}
END_TEST

START_TEST(test_print_format)
{
	char out[1024] = "";
	FILE *fp = fmemopen(out, sizeof(out) - 1, "w");

	edit("timeout_us: 100000", "timeout_us: 7");
	parse_both();
	cfg_diff(&old_cfg, &new_cfg, &ch);
	ck_assert_ptr_nonnull(fp);
	cfg_changes_print(&ch, "new.yaml", fp);
	fclose(fp);
	ck_assert_msg(strstr(out, "new.yaml:") == out, "%s", out);
	ck_assert_msg(strstr(out, ": live: stream 'sensor0/tensor': "
	    "timeout_us: 100000 -> 7\n") != NULL, "%s", out);
}
END_TEST

static Suite *
diff_suite(void)
{
	Suite *s = suite_create("cfg_diff");
	TCase *tc = tcase_create("diff");

	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_same);
	tcase_add_test(tc, test_live_log_level);
	tcase_add_test(tc, test_live_timeout);
	tcase_add_test(tc, test_live_fill);
	tcase_add_test(tc, test_live_missing_action);
	tcase_add_test(tc, test_live_cyclic_sequence);
	tcase_add_test(tc, test_live_resync_after);
	tcase_add_test(tc, test_live_window);
	tcase_add_test(tc, test_live_window_default);
	tcase_add_test(tc, test_live_flow_match);
	tcase_add_test(tc, test_live_flow_added_removed);
	tcase_add_test(tc, test_live_flow_isolation);
	tcase_add_test(tc, test_live_stats_interval);
	tcase_add_test(tc, test_restart_region_size);
	tcase_add_test(tc, test_restart_queue);
	tcase_add_test(tc, test_restart_interface);
	tcase_add_test(tc, test_restart_tx_destination);
	tcase_add_test(tc, test_restart_tx_pacing);
	tcase_add_test(tc, test_restart_tx_queues);
	tcase_add_test(tc, test_restart_engine_core);
	tcase_add_test(tc, test_restart_reorder_fixed);
	tcase_add_test(tc, test_live_stream_added_removed);
	tcase_add_test(tc, test_restart_stream_on_used_region);
	tcase_add_test(tc, test_regions_added_removed);
	tcase_add_test(tc, test_restart_daemon);
	tcase_add_test(tc, test_mixed);
	tcase_add_test(tc, test_print_format);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(diff_suite());
	int nfail;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	nfail = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nfail == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
