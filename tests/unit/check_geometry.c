/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for daemon/geometry.c: frame bytes of a queue and the part
 * the CPU may read, slot bytes from payload bytes and dtypes, the
 * batch-id space, the window cap, tensor bytes, the whole reorder
 * geometry with what it refuses, the raw stream's geometry, and that a
 * parsed config and the reorder stage derive the same numbers.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "geometry.h"

/* A config of one interface with one rx queue over the first nregions
 * regions of buf_size bytes each. */
static struct cfg cfgs;

static const struct cfg_queue *
one_queue(int nregions, uint64_t buf0, uint64_t buf1)
{
	struct cfg_queue *q;

	cfg_defaults(&cfgs);
	cfgs.nregions = 2;
	cfgs.regions[0].buf_size = buf0;
	cfgs.regions[1].buf_size = buf1;
	cfgs.ninterfaces = 1;
	cfgs.interfaces[0].has_rx = true;
	cfgs.interfaces[0].rx.nqueues = 1;
	q = &cfgs.interfaces[0].rx.queues[0];
	q->nregions = nregions;
	q->region_idx[0] = 0;
	q->region_idx[1] = 1;
	return q;
}

START_TEST(test_frame_bytes)
{
	const struct cfg_interface *ifc = &cfgs.interfaces[0];
	const struct cfg_queue *q;

	q = one_queue(1, 2048, 0);
	ck_assert_uint_eq(geom_queue_frame_bytes(&cfgs, ifc, q), 2048);
	/* header-data split: the two parts add up */
	q = one_queue(2, 256, 8192);
	ck_assert_uint_eq(geom_queue_frame_bytes(&cfgs, ifc, q), 8448);
	/* no IPv4 UDP frame is longer than the headers and 65507 bytes */
	q = one_queue(2, 256, 1 << 20);
	ck_assert_uint_eq(geom_queue_frame_bytes(&cfgs, ifc, q),
			  GEOM_ETH_IP_UDP_HDR + GEOM_UDP_PAYLOAD_MAX);
	/* a region that did not resolve: nothing to derive from */
	q = one_queue(2, 256, 8192);
	cfgs.interfaces[0].rx.queues[0].region_idx[1] = -1;
	ck_assert_uint_eq(geom_queue_frame_bytes(&cfgs, ifc, q), 0);
}
END_TEST

START_TEST(test_frame_bytes_socket)
{
	const struct cfg_interface *ifc = &cfgs.interfaces[0];
	const struct cfg_queue *q = one_queue(1, 9000, 0);

	cfgs.interfaces[0].socket.present = true;
	/* 0 = the largest datagram: the buffers decide */
	ck_assert_uint_eq(geom_queue_frame_bytes(&cfgs, ifc, q), 9000);
	q = one_queue(1, 131072, 0);
	ck_assert_uint_eq(geom_queue_frame_bytes(&cfgs, ifc, q), 65549);
	q = one_queue(1, 9000, 0);
	cfgs.interfaces[0].socket.present = true;
	cfgs.interfaces[0].socket.max_payload_size = 1000;
	ck_assert_uint_eq(geom_queue_frame_bytes(&cfgs, ifc, q),
			  GEOM_ETH_IP_UDP_HDR + 1000);
	/* buffers smaller than the datagrams still decide */
	cfgs.interfaces[0].socket.max_payload_size = 60000;
	ck_assert_uint_eq(geom_queue_frame_bytes(&cfgs, ifc, q), 9000);
	/* max_payload_size of a raw interface (no socket_config) is moot */
	cfgs.interfaces[0].socket.present = false;
	cfgs.interfaces[0].socket.max_payload_size = 1000;
	ck_assert_uint_eq(geom_queue_frame_bytes(&cfgs, ifc, q), 9000);
}
END_TEST

/* What the CPU may read of a frame: all of it, unless header-data split
 * puts the rest in a device region; then the header part only. */
START_TEST(test_host_bytes)
{
	const struct cfg_interface *ifc = &cfgs.interfaces[0];
	const enum daqiri_mem_kind host[] = {
		DAQIRI_MEM_HOST, DAQIRI_MEM_HUGE, DAQIRI_MEM_HOST_PINNED,
	};
	const struct cfg_queue *q;

	for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++) {
		for (size_t j = 0; j < sizeof(host) / sizeof(host[0]); j++) {
			q = one_queue(2, 64, 1984);
			cfgs.regions[0].kind = host[i];
			cfgs.regions[1].kind = host[j];
			ck_assert_int_eq(geom_queue_device_part(&cfgs, q), -1);
			ck_assert_uint_eq(geom_queue_host_bytes(&cfgs, ifc, q),
					  2048);
		}
		/* [host, device]: the headers only */
		q = one_queue(2, 64, 1984);
		cfgs.regions[0].kind = host[i];
		cfgs.regions[1].kind = DAQIRI_MEM_DEVICE;
		ck_assert_int_eq(geom_queue_device_part(&cfgs, q), 1);
		ck_assert_uint_eq(geom_queue_host_bytes(&cfgs, ifc, q), 64);
		/* one host region: the whole frame */
		q = one_queue(1, 2048, 0);
		cfgs.regions[0].kind = host[i];
		ck_assert_int_eq(geom_queue_device_part(&cfgs, q), -1);
		ck_assert_uint_eq(geom_queue_host_bytes(&cfgs, ifc, q), 2048);
	}
	/* a header region past the longest frame: at most the frame */
	q = one_queue(2, 1 << 20, 1984);
	cfgs.regions[0].kind = DAQIRI_MEM_HOST;
	cfgs.regions[1].kind = DAQIRI_MEM_DEVICE;
	ck_assert_int_eq(geom_queue_device_part(&cfgs, q), 1);
	ck_assert_uint_eq(geom_queue_host_bytes(&cfgs, ifc, q),
			  GEOM_ETH_IP_UDP_HDR + GEOM_UDP_PAYLOAD_MAX);
	/* a device region alone: whole frames, read through a header
	 * shadow of GEOM_SHADOW_BYTES, at most the frame */
	q = one_queue(1, 2048, 0);
	cfgs.regions[0].kind = DAQIRI_MEM_DEVICE;
	ck_assert_int_eq(geom_queue_device_part(&cfgs, q), 0);
	ck_assert_uint_eq(geom_queue_host_bytes(&cfgs, ifc, q),
			  GEOM_SHADOW_BYTES);
	q = one_queue(1, 100, 0);
	ck_assert_uint_eq(geom_queue_host_bytes(&cfgs, ifc, q), 100);
	/* a device region first and more after it: none of it */
	q = one_queue(2, 64, 1984);
	cfgs.regions[0].kind = DAQIRI_MEM_DEVICE;
	cfgs.regions[1].kind = DAQIRI_MEM_HOST;
	ck_assert_int_eq(geom_queue_device_part(&cfgs, q), -1);
	ck_assert_uint_eq(geom_queue_host_bytes(&cfgs, ifc, q), 0);
	/* a region that did not resolve */
	q = one_queue(2, 64, 1984);
	cfgs.regions[1].kind = DAQIRI_MEM_DEVICE;
	cfgs.interfaces[0].rx.queues[0].region_idx[1] = -1;
	ck_assert_int_eq(geom_queue_device_part(&cfgs, q), -1);
	ck_assert_uint_eq(geom_queue_host_bytes(&cfgs, ifc, q), 0);
}
END_TEST

START_TEST(test_slot_bytes)
{
	struct cfg_reorder r;

	memset(&r, 0, sizeof(r));
	ck_assert_uint_eq(geom_slot_bytes(&r, 1500), 1500);
	ck_assert_uint_eq(geom_slot_bytes(&r, 0), 0);
	ck_assert_uint_eq(geom_slot_bytes(&r, (uint64_t)UINT32_MAX + 1), 0);
	r.has_data_types = true;
	r.input_type = DAQIRI_DTYPE_INT4;
	r.output_type = DAQIRI_DTYPE_FP32;
	ck_assert_uint_eq(geom_slot_bytes(&r, 1984), 15872);
	r.input_type = DAQIRI_DTYPE_INT16;
	r.output_type = DAQIRI_DTYPE_BF16;
	ck_assert_uint_eq(geom_slot_bytes(&r, 10), 10);
	ck_assert_uint_eq(geom_slot_bytes(&r, 11), 0);
	r.input_type = DAQIRI_DTYPE_INT32;
	r.output_type = DAQIRI_DTYPE_FP64;
	ck_assert_uint_eq(geom_slot_bytes(&r, 8), 16);
	ck_assert_uint_eq(geom_slot_bytes(&r, 6), 0);
	/* no kernel writes int4 or raw output */
	r.output_type = DAQIRI_DTYPE_INT4;
	ck_assert_uint_eq(geom_slot_bytes(&r, 8), 0);
	r.output_type = DAQIRI_DTYPE_RAW;
	ck_assert_uint_eq(geom_slot_bytes(&r, 8), 0);
	/* raw input is copied, whatever the output says */
	r.input_type = DAQIRI_DTYPE_RAW;
	r.output_type = DAQIRI_DTYPE_FP32;
	ck_assert_uint_eq(geom_slot_bytes(&r, 8), 8);
	/* the public name is the same function */
	ck_assert_uint_eq(cfg_reorder_slot_bytes(&r, 8), 8);
}
END_TEST

START_TEST(test_id_space_window)
{
	struct cfg_reorder r;

	memset(&r, 0, sizeof(r));
	r.method = CFG_METHOD_SEQ_BATCH_NUMBER;
	r.batch.bit_width = 3;
	ck_assert_uint_eq(geom_id_space(&r), 8);
	r.method = CFG_METHOD_SEQ_PACKETS_PER_BATCH;
	r.seq.bit_width = 16;
	r.packets_per_batch = 256;
	ck_assert_uint_eq(geom_id_space(&r), 256);
	r.packets_per_batch = 0;
	ck_assert_uint_eq(geom_id_space(&r), 0);

	ck_assert_uint_eq(geom_window(0, 1024), CFG_WINDOW_DEFAULT);
	ck_assert_uint_eq(geom_window(7, 1024), 7);
	ck_assert_uint_eq(geom_window(64, 8), 4);
	ck_assert_uint_eq(geom_window(4, 2), 1);
	ck_assert_uint_eq(geom_window(4, 1), 1);
	ck_assert_uint_eq(geom_window(4, 0), 1);

	ck_assert_uint_eq(geom_tensor_bytes(128, 32000), 4096000);
	ck_assert_uint_eq(geom_tensor_bytes(2, UINT64_MAX / 2 + 1), 0);
}
END_TEST

/* seq_batch_number, 10 sequence bits of which 2 number the batch: 256
 * packets per batch, 4 batch ids; 1984 int4 bytes to fp32. */
static void
sbn_reorder(struct cfg_reorder *r)
{
	memset(r, 0, sizeof(*r));
	r->method = CFG_METHOD_SEQ_BATCH_NUMBER;
	r->seq.bit_width = 10;
	r->batch.bit_width = 2;
	r->packets_per_batch = 256;
	r->payload_bytes = 1984;
	r->has_data_types = true;
	r->input_type = DAQIRI_DTYPE_INT4;
	r->output_type = DAQIRI_DTYPE_FP32;
	r->window = CFG_WINDOW_DEFAULT;
}

START_TEST(test_reorder)
{
	struct cfg_reorder r;
	struct reorder_geom g;

	sbn_reorder(&r);
	ck_assert(geom_reorder(&r, &g));
	ck_assert_uint_eq(g.ppb, 256);
	ck_assert_uint_eq(g.ppb_shift, 8);
	ck_assert_uint_eq(g.in_bytes, 1984);
	ck_assert_uint_eq(g.slot_bytes, 15872);
	ck_assert_uint_eq(g.tensor_bytes, 256 * 15872);
	ck_assert_uint_eq(g.id_space, 4);
	ck_assert_uint_eq(g.window, 2);

	r.method = CFG_METHOD_SEQ_PACKETS_PER_BATCH;
	r.window = 0;
	ck_assert(geom_reorder(&r, &g));
	ck_assert_uint_eq(g.id_space, 4);
	ck_assert_uint_eq(g.window, 2);
}
END_TEST

/* Each refusal leaves *g zero. */
static void
refused(const struct cfg_reorder *r)
{
	struct reorder_geom g, zero;

	memset(&zero, 0, sizeof(zero));
	memset(&g, 0xff, sizeof(g));
	ck_assert(!geom_reorder(r, &g));
	ck_assert(memcmp(&g, &zero, sizeof(g)) == 0);
}

START_TEST(test_reorder_refused)
{
	struct cfg_reorder r;

#define REFUSED(change) do { sbn_reorder(&r); change; refused(&r); } while (0)
	REFUSED(r.seq.bit_width = 0);
	REFUSED(r.seq.bit_width = 33);
	REFUSED(r.payload_bytes = 0);
	REFUSED(r.packets_per_batch = 255);
	REFUSED(r.packets_per_batch = 0);
	REFUSED(r.batch.bit_width = 3);	/* 2^7 batches, not 2^8 */
	REFUSED(r.window = CFG_WINDOW_MAX + 1);
	REFUSED(r.fill = DAQIRI_FILL_MAX);
	REFUSED(r.endianness = CFG_ENDIAN_MAX);
	REFUSED(r.method = CFG_METHOD_MAX);
	REFUSED(r.payload_bytes = 1983; r.input_type = DAQIRI_DTYPE_INT16);
	REFUSED(r.output_type = DAQIRI_DTYPE_INT4);
	REFUSED(r.slot_bytes = 1984);		/* not what it derives */
#undef REFUSED
	sbn_reorder(&r);
	r.slot_bytes = 15872;
	ck_assert(geom_reorder(&r, &(struct reorder_geom){ 0 }));
}
END_TEST

START_TEST(test_raw)
{
	struct cfg_queue q;
	struct reorder_geom g;

	memset(&q, 0, sizeof(q));
	q.batch_size = 64;
	geom_raw(&q, 2048, &g);
	ck_assert_uint_eq(g.ppb, 64);
	ck_assert_uint_eq(g.in_bytes, 2048);
	ck_assert_uint_eq(g.slot_bytes, 2048);
	ck_assert_uint_eq(g.tensor_bytes, 64 * 2048);
	ck_assert_uint_eq(g.window, 1);
	ck_assert_uint_eq(g.id_space, 0);
	q.batch_size = 0;
	geom_raw(&q, 2048, &g);
	ck_assert_uint_eq(g.ppb, 1);
}
END_TEST

/* The checker derives payload, slot and window from the queue's frames;
 * the plan built from the result must find the same numbers. */
static const char window_capped[] =
"daqiri:\n"
"  cfg:\n"
"    version: 1\n"
"    master_core: 0\n"
"    stream_type: raw\n"
"    memory_regions:\n"
"    - {name: frames, kind: huge, num_bufs: 4096, buf_size: 1088}\n"
"    - {name: out, kind: huge, num_bufs: 8, buf_size: 524288}\n"
"    interfaces:\n"
"    - name: nic0\n"
"      address: \"0000:17:00.0\"\n"
"      rx:\n"
"        queues:\n"
"        - {name: q0, id: 0, batch_size: 256, memory_regions: [frames]}\n"
"        flows:\n"
"        - {name: f, id: 1, action: {type: queue, id: 0}}\n"
"        reorder_configs:\n"
"        - name: r\n"
"          reorder_type: cpu\n"
"          memory_region: out\n"
"          payload_byte_offset: 64\n"
"          flow_ids: [1]\n"
"          method:\n"
"            seq_batch_number:\n"
"              sequence_number: {bit_offset: 128, bit_width: 10}\n"
"              batch_number: {bit_offset: 138, bit_width: 1}\n";

/* The rx queues of every interface naming a region split it, in config
 * order; a queue that names none still gets a share of 1. */
START_TEST(test_region_share)
{
	static struct cfg c;
	uint32_t users, me;

	memset(&c, 0, sizeof(c));
	c.ninterfaces = 2;
	c.interfaces[0].rx.nqueues = 2;
	c.interfaces[1].rx.nqueues = 1;
	c.interfaces[0].rx.queues[0].nregions = 1;
	c.interfaces[0].rx.queues[0].region_idx[0] = 3;
	c.interfaces[0].rx.queues[1].nregions = 2;
	c.interfaces[0].rx.queues[1].region_idx[0] = 1;
	c.interfaces[0].rx.queues[1].region_idx[1] = 3;
	c.interfaces[1].rx.queues[0].nregions = 1;
	c.interfaces[1].rx.queues[0].region_idx[0] = 3;
	geom_region_share(&c, &c.interfaces[0], 0, 3, &users, &me);
	ck_assert_uint_eq(users, 3);
	ck_assert_uint_eq(me, 0);
	geom_region_share(&c, &c.interfaces[0], 1, 3, &users, &me);
	ck_assert_uint_eq(me, 1);
	geom_region_share(&c, &c.interfaces[1], 0, 3, &users, &me);
	ck_assert_uint_eq(me, 2);
	geom_region_share(&c, &c.interfaces[0], 1, 1, &users, &me);
	ck_assert_uint_eq(users, 1);
	ck_assert_uint_eq(me, 0);
	geom_region_share(&c, &c.interfaces[1], 0, 5, &users, &me);
	ck_assert_uint_eq(users, 1);
}
END_TEST

static struct cfg parsed;
static struct cfg_diags diags;

START_TEST(test_config_agrees)
{
	const struct cfg_interface *ifc;
	const struct cfg_reorder *r;
	struct reorder_geom g;

	ck_assert_int_eq(cfg_parse(window_capped, sizeof(window_capped) - 1,
				   "geom.yaml", &parsed, &diags), 0);
	ifc = &parsed.interfaces[0];
	r = &ifc->rx.reorders[0];
	ck_assert_uint_eq(geom_queue_frame_bytes(&parsed, ifc,
						 &ifc->rx.queues[0]), 1088);
	ck_assert_uint_eq(r->payload_bytes, 1088 - 64);
	ck_assert_uint_eq(r->window, 1);
	ck_assert(geom_reorder(r, &g));
	ck_assert_uint_eq(g.slot_bytes, r->slot_bytes);
	ck_assert_uint_eq(g.window, r->window);
	ck_assert_uint_eq(g.id_space, 2);
	ck_assert_uint_eq(g.tensor_bytes,
			  (uint64_t)r->packets_per_batch * r->slot_bytes);
}
END_TEST

static Suite *
geometry_suite(void)
{
	Suite *s = suite_create("geometry");
	TCase *tc;

	tc = tcase_create("sizes");
	tcase_add_test(tc, test_frame_bytes);
	tcase_add_test(tc, test_frame_bytes_socket);
	tcase_add_test(tc, test_host_bytes);
	tcase_add_test(tc, test_slot_bytes);
	tcase_add_test(tc, test_id_space_window);
	suite_add_tcase(s, tc);

	tc = tcase_create("geometry");
	tcase_add_test(tc, test_reorder);
	tcase_add_test(tc, test_reorder_refused);
	tcase_add_test(tc, test_raw);
	tcase_add_test(tc, test_config_agrees);
	tcase_add_test(tc, test_region_share);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(geometry_suite());
	int nfail;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	nfail = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nfail == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
