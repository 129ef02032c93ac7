/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for proto/metrics.c: the drop-reason table against the
 * counters that count each reason (reorder, raw, queue), and the
 * Prometheus text rendered from synthetic stats and consumers replies:
 * drops by reason, every family once with HELP and TYPE, histograms in
 * seconds with cumulative buckets, consumers summed under one label,
 * malformed histograms left out.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "metrics.h"
#include "raw.h"
#include "reorder.h"

/* Counters of a stream that are not drops (the rest must be reasons). */
static bool
not_a_drop(const char *n)
{
	return strcmp(n, "packets_in") == 0 || strcmp(n, "placed") == 0 ||
	    strncmp(n, "batches_", 8) == 0 || strncmp(n, "bursts_", 7) == 0 ||
	    strcmp(n, "resync") == 0 || strcmp(n, "missing_slots") == 0;
}

START_TEST(test_drop_table)
{
	for (int r = 0; r < DAQIRI_DROP_MAX; r++) {
		const char *n = daqiri_drop_name(r);

		ck_assert_int_eq(daqiri_drop_parse(n), r);
		ck_assert_int_lt(daqiri_drop_scope(r), DAQIRI_DROP_SCOPE_MAX);
		ck_assert_ptr_nonnull(daqiri_drop_help(r));
		for (int k = 0; k < r; k++)
			ck_assert_str_ne(daqiri_drop_name(k), n);
	}
	ck_assert_int_eq(daqiri_drop_parse("no_buffer_packets"), -1);
	/* every drop counter of a stream is a reason of stream scope */
	for (int i = 0; i < REORDER_NCOUNTERS; i++) {
		const char *n = reorder_counter_names[i];
		int r = daqiri_drop_parse(n);

		if (not_a_drop(n))
			continue;
		ck_assert_msg(r >= 0, "reorder counter %s is no drop reason", n);
		/* incomplete: packets placed, then dropped with their batch */
		ck_assert_int_eq(daqiri_drop_scope(r), strcmp(n, "incomplete")
		    == 0 ? DAQIRI_DROP_AT_TENSOR : DAQIRI_DROP_AT_STREAM);
	}
	for (int i = 0; i < RAW_NCOUNTERS; i++) {
		const char *n = raw_counter_names[i];
		int r = daqiri_drop_parse(n);

		if (not_a_drop(n))
			continue;
		ck_assert_msg(r >= 0, "raw counter %s is no drop reason", n);
		ck_assert_int_eq(daqiri_drop_scope(r), DAQIRI_DROP_AT_STREAM);
	}
}
END_TEST

static const char stats_json[] =
	"{\"type\":\"reply\",\"re\":\"stats\",\"status\":\"ok\","
	"\"daemon\":{\"version\":\"9.8.7\",\"protocol\":2,\"cjson\":\"1\","
	"\"microhttpd\":\"0.9\",\"uptime_s\":1.5},"
	"\"http\":{\"accepted\":5,\"rejected\":2,\"current\":1,"
	"\"incomplete\":1,\"timeouts\":0,"
	"\"responses\":{\"200\":3,\"404\":1,\"405\":0,\"503\":0}},"
	"\"interfaces\":[{\"name\":\"if0\",\"rx_packets\":110,"
	"\"queues\":[{\"queue\":\"if0/q0\",\"rx_packets\":110,\"rx_bytes\":9,"
	"\"matched\":100,\"unmatched\":7,\"no_stream\":2,\"misrouted\":1,"
	"\"bursts\":3,\"rx_errors\":0,\"streams_packets_in\":100,"
	"\"kernel\":4,\"truncated\":6,\"engine_rx_packets\":110,"
	"\"engine_errors\":0,\"engine_gro_reads\":0,\"engine_direct\":97,"
	"\"tap_taken\":40,\"tap_full\":2}],"
	/* two tx queues on two interfaces, channels on both: each TX family
	 * once, its samples together */
	"\"tx\":{\"queues\":[{\"queue\":\"if0/t0\",\"submitted\":12,"
	"\"packets\":10,\"bytes\":1000,\"ring_full\":3,\"paced_s\":0.5,"
	"\"channels_open\":2,\"broken\":1,"
	"\"drops\":{\"too_big\":1,\"bad_buffer\":1,\"engine_error\":0,"
	"\"closed\":0},\"engine\":{\"calls\":4,\"full\":1,\"gso_sends\":2,"
	"\"copied\":0},\"channels\":["
	"{\"tx\":1,\"pid\":42,\"packets\":6,\"bytes\":600,\"ring_full\":3,"
	"\"drops\":{\"too_big\":1,\"bad_buffer\":0}},"
	"{\"tx\":2,\"pid\":43,\"packets\":4,\"bytes\":400,\"ring_full\":0,"
	"\"drops\":{\"too_big\":0,\"bad_buffer\":1}}]}]}},"
	"{\"name\":\"if1\",\"rx_packets\":0,\"queues\":[],"
	"\"tx\":{\"queues\":[{\"queue\":\"if1/t0\",\"submitted\":1,"
	"\"packets\":1,\"bytes\":7,\"ring_full\":0,\"paced_s\":0,"
	"\"channels_open\":1,\"broken\":0,"
	"\"drops\":{\"too_big\":0},\"engine\":{\"calls\":1,\"full\":0,"
	"\"gso_sends\":0,\"copied\":1,\"staged\":1,\"staged_bytes\":7},"
	"\"channels\":["
	"{\"tx\":3,\"pid\":44,\"packets\":1,\"bytes\":7,\"ring_full\":0,"
	"\"drops\":{\"too_big\":0}}]}]}}],"
	"\"streams\":[{\"name\":\"if0/t\",\"kind\":\"reorder\","
	"\"reorder\":{\"packets_in\":100,\"placed\":90,\"duplicate\":3,"
	"\"late\":2,\"malformed\":1,\"no_buffer\":4,\"backend_error\":0,"
	"\"batches_complete\":2,\"resync\":0,\"incomplete\":5,"
	"\"batches_incomplete\":1},"
	"\"handoff\":{\"published\":2,\"free_bufs\":7},"
	"\"assembly_ns\":{\"le_ns\":[1000,2500,1000000000],"
	"\"buckets\":[1,2,3,4],\"count\":10,\"sum_ns\":1500000000},"
	"\"broken_ns\":{\"le_ns\":[1000,500],\"buckets\":[1,2,3],"
	"\"count\":6,\"sum_ns\":1}},"
	"{\"name\":\"if0/q0\",\"kind\":\"raw\",\"raw\":{\"packets_in\":0,"
	"\"placed\":0,\"oversize\":0,\"no_buffer\":0,\"bursts_full\":0}}],"
	"\"control\":{\"accepted\":1,\"current\":1}}";

static const char consumers_json[] =
	"{\"consumers\":["
	"{\"stream\":\"if0/t\",\"pid\":42,\"group\":\"\",\"delivered\":2,"
	"\"released\":1,\"overruns\":1,\"held\":1,"
	"\"hold_ns\":{\"le_ns\":[1000],\"buckets\":[1,1],\"count\":2,"
	"\"sum_ns\":3000}},"
	"{\"stream\":\"if0/t\",\"pid\":42,\"group\":\"\",\"delivered\":3,"
	"\"released\":3,\"overruns\":0,\"held\":0,\"pending\":2,"
	"\"blocked\":7,\"policy\":\"lossless\","
	"\"hold_ns\":{\"le_ns\":[1000],\"buckets\":[2,0],\"count\":2,"
	"\"sum_ns\":1000}},"
	"{\"stream\":\"if0/t\",\"pid\":43,\"group\":\"fft\",\"delivered\":1,"
	"\"released\":1,\"overruns\":0,\"held\":0},"
	"{\"stream\":\"if0/t\",\"pid\":44,\"group\":\"fft\",\"delivered\":4,"
	"\"released\":4,\"overruns\":2,\"held\":0}]}";

static char *
render(void)
{
	cJSON *st = cJSON_Parse(stats_json), *co = cJSON_Parse(consumers_json);
	char *text = NULL;
	size_t len = 0;

	ck_assert_ptr_nonnull(st);
	ck_assert_ptr_nonnull(co);
	ck_assert_int_eq(daqiri_metrics_render(st, co, &text, &len), 0);
	ck_assert_uint_eq(strlen(text), len);
	cJSON_Delete(st);
	cJSON_Delete(co);
	return text;
}

/* The text has this line exactly. */
static void
has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; p != NULL && *p != '\0';) {
		const char *e = strchr(p, '\n');

		if ((size_t)(e != NULL ? e - p : (long)strlen(p)) == n &&
		    strncmp(p, line, n) == 0)
			return;
		p = e != NULL ? e + 1 : NULL;
	}
	ck_abort_msg("no line \"%s\" in:\n%s", line, text);
}

START_TEST(test_drops_rendered)
{
	char *t = render();

	has_line(t, "daqiri_build_info{version=\"9.8.7\",protocol=\"2\","
	    "cjson=\"1\",microhttpd=\"0.9\"} 1");
	has_line(t, "# TYPE daqiri_packets_dropped_total counter");
	has_line(t, "daqiri_packets_dropped_total{interface=\"if0\","
	    "stream=\"if0/t\",reason=\"duplicate\"} 3");
	has_line(t, "daqiri_packets_dropped_total{interface=\"if0\","
	    "stream=\"if0/t\",reason=\"no_buffer\"} 4");
	has_line(t, "daqiri_packets_dropped_total{interface=\"if0\","
	    "stream=\"if0/q0\",reason=\"oversize\"} 0");
	has_line(t, "daqiri_packets_dropped_total{interface=\"if0\","
	    "queue=\"q0\",reason=\"unmatched\"} 7");
	has_line(t, "daqiri_packets_dropped_total{interface=\"if0\","
	    "queue=\"q0\",reason=\"kernel\"} 4");
	has_line(t, "daqiri_rx_direct_total{interface=\"if0\","
	    "queue=\"q0\"} 97");
	/* a tap's misses are its own, not among the drops */
	has_line(t, "daqiri_tap_frames_total{interface=\"if0\","
	    "queue=\"q0\",outcome=\"tap_full\"} 2");
	has_line(t, "daqiri_tap_frames_total{interface=\"if0\","
	    "queue=\"q0\",outcome=\"copied\"} 40");
	has_line(t, "daqiri_stream_packets_placed_total{interface=\"if0\","
	    "stream=\"if0/t\"} 90");
	has_line(t, "daqiri_stream_packets_in_total{interface=\"if0\","
	    "stream=\"if0/t\"} 100");
	has_line(t, "daqiri_stream_buffers{interface=\"if0\",stream=\"if0/t\","
	    "state=\"free\"} 7");
	has_line(t, "daqiri_http_responses_total{code=\"404\"} 1");
	has_line(t, "daqiri_http_connections_rejected_total 2");
	has_line(t, "daqiri_uptime_seconds 1.5");
	has_line(t, "daqiri_tx_packets_total{interface=\"if0\",queue=\"t0\"} 10");
	has_line(t, "daqiri_tx_packets_total{interface=\"if1\",queue=\"t0\"} 1");
	has_line(t, "daqiri_tx_drops_total{interface=\"if0\",queue=\"t0\","
	    "reason=\"bad_buffer\"} 1");
	has_line(t, "daqiri_tx_copied_total{interface=\"if1\",queue=\"t0\"} 1");
	has_line(t, "daqiri_tx_staged_total{interface=\"if1\",queue=\"t0\"} 1");
	has_line(t, "daqiri_tx_staged_bytes_total{interface=\"if1\","
	    "queue=\"t0\"} 7");
	has_line(t, "daqiri_tx_channel_packets_total{interface=\"if0\","
	    "queue=\"t0\",consumer=\"43\",tx=\"2\"} 4");
	has_line(t, "daqiri_tx_channel_drops_total{interface=\"if0\","
	    "queue=\"t0\",consumer=\"42\",tx=\"1\",reason=\"too_big\"} 1");
	has_line(t, "daqiri_tx_channel_bytes_total{interface=\"if1\","
	    "queue=\"t0\",consumer=\"44\",tx=\"3\"} 7");
	/* incomplete: packets placed, then dropped with their batch */
	has_line(t, "daqiri_packets_dropped_total{interface=\"if0\","
	    "stream=\"if0/t\",reason=\"incomplete\"} 5");
	has_line(t, "daqiri_stream_batches_total{interface=\"if0\","
	    "stream=\"if0/t\",outcome=\"incomplete\"} 1");
	/* a reason a stream does not count is left out, not made 0 */
	ck_assert_ptr_null(strstr(t, "stream=\"if0/q0\",reason=\"late\""));
	free(t);
}
END_TEST

/* Every family: one HELP and one TYPE before its samples, its samples
 * together. */
START_TEST(test_families_once)
{
	char *t = render(), *save = NULL, *line;
	char seen[128][96];
	char cur[96] = "";
	int nseen = 0, nsamples = 0;

	for (line = strtok_r(t, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		char fam[96];

		if (strncmp(line, "# HELP ", 7) == 0) {
			sscanf(line + 7, "%95s", fam);
			for (int i = 0; i < nseen; i++)
				ck_assert_msg(strcmp(seen[i], fam) != 0,
				    "family %s twice", fam);
			ck_assert_int_lt(nseen, 128);
			snprintf(seen[nseen++], sizeof(seen[0]), "%s", fam);
			snprintf(cur, sizeof(cur), "%s", fam);
			continue;
		}
		if (strncmp(line, "# TYPE ", 7) == 0) {
			sscanf(line + 7, "%95s", fam);
			ck_assert_str_eq(fam, cur);
			continue;
		}
		/* a sample belongs to the family of the last HELP */
		ck_assert_msg(strncmp(line, cur, strlen(cur)) == 0,
		    "sample \"%s\" outside its family (%s)", line, cur);
		nsamples++;
	}
	ck_assert_int_gt(nsamples, 40);
	free(t);
}
END_TEST

START_TEST(test_histogram_seconds)
{
	char *t = render();

	has_line(t, "# TYPE daqiri_stream_assembly_seconds histogram");
	has_line(t, "daqiri_stream_assembly_seconds_bucket{interface=\"if0\","
	    "stream=\"if0/t\",le=\"0.000001\"} 1");
	has_line(t, "daqiri_stream_assembly_seconds_bucket{interface=\"if0\","
	    "stream=\"if0/t\",le=\"0.0000025\"} 3");
	has_line(t, "daqiri_stream_assembly_seconds_bucket{interface=\"if0\","
	    "stream=\"if0/t\",le=\"1\"} 6");
	has_line(t, "daqiri_stream_assembly_seconds_bucket{interface=\"if0\","
	    "stream=\"if0/t\",le=\"+Inf\"} 10");
	has_line(t, "daqiri_stream_assembly_seconds_sum{interface=\"if0\","
	    "stream=\"if0/t\"} 1.5");
	has_line(t, "daqiri_stream_assembly_seconds_count{interface=\"if0\","
	    "stream=\"if0/t\"} 10");
	/* bounds not increasing: not a histogram, left out */
	ck_assert_ptr_null(strstr(t, "daqiri_stream_broken"));
	free(t);
}
END_TEST

START_TEST(test_consumers_summed)
{
	char *t = render();

	/* two subscriptions of pid 42: one series, summed */
	has_line(t, "daqiri_consumer_tensors_delivered_total{stream=\"if0/t\","
	    "consumer=\"42\"} 5");
	has_line(t, "daqiri_consumer_subscriptions{stream=\"if0/t\","
	    "consumer=\"42\"} 2");
	/* a lossless one's backlog and blocks; absent (older daemon): 0 */
	has_line(t, "daqiri_consumer_tensors_pending{stream=\"if0/t\","
	    "consumer=\"42\"} 2");
	has_line(t, "daqiri_consumer_blocked_total{stream=\"if0/t\","
	    "consumer=\"42\"} 7");
	has_line(t, "daqiri_consumer_blocked_total{stream=\"if0/t\","
	    "consumer=\"fft\"} 0");
	/* a shared group: its name, whoever the members are */
	has_line(t, "daqiri_consumer_overruns_total{stream=\"if0/t\","
	    "consumer=\"fft\"} 2");
	has_line(t, "daqiri_consumer_tensors_delivered_total{stream=\"if0/t\","
	    "consumer=\"fft\"} 5");
	has_line(t, "daqiri_consumer_hold_seconds_bucket{stream=\"if0/t\","
	    "consumer=\"42\",le=\"0.000001\"} 3");
	has_line(t, "daqiri_consumer_hold_seconds_bucket{stream=\"if0/t\","
	    "consumer=\"42\",le=\"+Inf\"} 4");
	has_line(t, "daqiri_consumer_hold_seconds_sum{stream=\"if0/t\","
	    "consumer=\"42\"} 4e-06");
	ck_assert_ptr_null(strstr(t, "hold_seconds_count{stream=\"if0/t\","
	    "consumer=\"fft\"}"));
	free(t);
}
END_TEST

START_TEST(test_escaped_and_empty)
{
	cJSON *st = cJSON_Parse("{\"streams\":[{\"name\":\"a\\\"b\\\\c\","
	    "\"reorder\":{\"placed\":1}}]}");
	char *text;
	size_t len;

	ck_assert_int_eq(daqiri_metrics_render(st, NULL, &text, &len), 0);
	has_line(text, "daqiri_stream_packets_placed_total{interface=\"\","
	    "stream=\"a\\\"b\\\\c\"} 1");
	ck_assert_ptr_null(strstr(text, "daqiri_consumer_"));
	free(text);
	cJSON_Delete(st);
}
END_TEST

static Suite *
metrics_suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("metrics");

	tcase_add_test(tc, test_drop_table);
	tcase_add_test(tc, test_drops_rendered);
	tcase_add_test(tc, test_families_once);
	tcase_add_test(tc, test_histogram_seconds);
	tcase_add_test(tc, test_consumers_summed);
	tcase_add_test(tc, test_escaped_and_empty);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(metrics_suite());
	int nfail;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	nfail = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nfail == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
