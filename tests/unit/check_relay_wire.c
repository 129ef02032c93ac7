/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of the relay protocol's pure half (client/relay_wire.c): meta
 * sizes, tensor and credit header checks (each rejection), the handshake
 * messages round trip and refused when malformed, the MAC against a
 * known answer, the secret file's rules, and ucx:// URLs.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "relay_wire.h"

START_TEST(test_meta_bytes)
{
	ck_assert_uint_eq(relay_meta_bytes(0, DAQIRI_STREAM_REORDER), 0);
	ck_assert_uint_eq(relay_meta_bytes(DAQIRI_PPB_MAX + 1,
	    DAQIRI_STREAM_RAW), 0);
	/* reorder: the bitmap only, rounded to 64 */
	ck_assert_uint_eq(relay_meta_bytes(1, DAQIRI_STREAM_REORDER), 64);
	ck_assert_uint_eq(relay_meta_bytes(128, DAQIRI_STREAM_REORDER), 64);
	ck_assert_uint_eq(relay_meta_bytes(513, DAQIRI_STREAM_REORDER), 128);
	/* raw: bitmap 8 + lengths 4 -> 16 (8-aligned) + rx_ns 8 = 24 -> 64 */
	ck_assert_uint_eq(relay_meta_bytes(1, DAQIRI_STREAM_RAW), 64);
	/* raw 128: 16 + 512 + 1024 = 1552 -> 1600 */
	ck_assert_uint_eq(relay_meta_bytes(128, DAQIRI_STREAM_RAW), 1600);
	ck_assert_uint_eq(relay_meta_bytes(128, DAQIRI_STREAM_RAW) % 64, 0);
}
END_TEST

static struct relay_tensor_hdr
good_hdr(uint32_t ppb, enum daqiri_stream_kind kind, uint64_t tb)
{
	struct relay_tensor_hdr h;

	memset(&h, 0, sizeof(h));
	h.magic = RELAY_TENSOR_MAGIC;
	h.sub = 1;
	h.seq = 7;
	h.packets_expected = ppb;
	h.packets_received = ppb;
	h.meta_bytes = relay_meta_bytes(ppb, kind);
	h.data_bytes = tb;
	return h;
}

START_TEST(test_tensor_check)
{
	const uint32_t ppb = 128;
	const uint64_t tb = 4096000;
	const size_t len = relay_meta_bytes(ppb, DAQIRI_STREAM_REORDER) + tb;
	struct relay_tensor_hdr h = good_hdr(ppb, DAQIRI_STREAM_REORDER, tb),
	    b, out;

	ck_assert_int_eq(relay_tensor_check(&h, sizeof(h), len, ppb,
	    DAQIRI_STREAM_REORDER, tb, &out), 0);
	ck_assert_uint_eq(out.seq, 7);
	h.relay_flags = RELAY_TENSOR_STAGED;
	ck_assert_int_eq(relay_tensor_check(&h, sizeof(h), len, ppb,
	    DAQIRI_STREAM_REORDER, tb, &out), 0);
	h.relay_flags = 0;
	/* each rejection */
	ck_assert_int_eq(relay_tensor_check(NULL, sizeof(h), len, ppb,
	    DAQIRI_STREAM_REORDER, tb, &out), -EBADMSG);
	ck_assert_int_eq(relay_tensor_check(&h, sizeof(h) - 1, len, ppb,
	    DAQIRI_STREAM_REORDER, tb, &out), -EBADMSG);
	ck_assert_int_eq(relay_tensor_check(&h, sizeof(h), len, 0,
	    DAQIRI_STREAM_REORDER, tb, &out), -EBADMSG);
	b = h; b.magic ^= 1;
	ck_assert_int_eq(relay_tensor_check(&b, sizeof(b), len, ppb,
	    DAQIRI_STREAM_REORDER, tb, &out), -EBADMSG);
	b = h; b.meta_bytes += 64;
	ck_assert_int_eq(relay_tensor_check(&b, sizeof(b), len, ppb,
	    DAQIRI_STREAM_REORDER, tb, &out), -EBADMSG);
	b = h; b.data_bytes--;
	ck_assert_int_eq(relay_tensor_check(&b, sizeof(b), len, ppb,
	    DAQIRI_STREAM_REORDER, tb, &out), -EBADMSG);
	ck_assert_int_eq(relay_tensor_check(&h, sizeof(h), len - 1, ppb,
	    DAQIRI_STREAM_REORDER, tb, &out), -EBADMSG);
	ck_assert_int_eq(relay_tensor_check(&h, sizeof(h), len + 1, ppb,
	    DAQIRI_STREAM_REORDER, tb, &out), -EBADMSG);
	/* the raw meta is longer: the reorder length is wrong for it */
	ck_assert_int_eq(relay_tensor_check(&h, sizeof(h), len, ppb,
	    DAQIRI_STREAM_RAW, tb, &out), -EBADMSG);
	b = h; b.packets_expected = ppb + 1;
	ck_assert_int_eq(relay_tensor_check(&b, sizeof(b), len, ppb,
	    DAQIRI_STREAM_REORDER, tb, &out), -EBADMSG);
	b = h; b.packets_received = ppb + 1;
	ck_assert_int_eq(relay_tensor_check(&b, sizeof(b), len, ppb,
	    DAQIRI_STREAM_REORDER, tb, &out), -EBADMSG);
	b = h; b.packets_expected = 3; b.packets_received = 4;
	ck_assert_int_eq(relay_tensor_check(&b, sizeof(b), len, ppb,
	    DAQIRI_STREAM_REORDER, tb, &out), -EBADMSG);
	/* an unknown flag */
	b = h; b.relay_flags = 4;
	ck_assert_int_eq(relay_tensor_check(&b, sizeof(b), len, ppb,
	    DAQIRI_STREAM_REORDER, tb, &out), -EBADMSG);
	/* the meta in the header: header = hdr + meta, payload = data */
	{
		const uint32_t meta = relay_meta_bytes(ppb,
		    DAQIRI_STREAM_REORDER);
		uint8_t buf[sizeof(h) + 64];

		ck_assert_uint_eq(meta, 64);
		b = h; b.relay_flags = RELAY_TENSOR_META_IN_HDR;
		memcpy(buf, &b, sizeof(b));
		memset(buf + sizeof(b), 0xff, meta);
		ck_assert_int_eq(relay_tensor_check(buf, sizeof(b) + meta, tb,
		    ppb, DAQIRI_STREAM_REORDER, tb, &out), 0);
		ck_assert_uint_eq(out.relay_flags, RELAY_TENSOR_META_IN_HDR);
		/* ... and laid out otherwise */
		ck_assert_int_eq(relay_tensor_check(buf, sizeof(b), len,
		    ppb, DAQIRI_STREAM_REORDER, tb, &out), -EBADMSG);
		ck_assert_int_eq(relay_tensor_check(buf, sizeof(b) + meta, len,
		    ppb, DAQIRI_STREAM_REORDER, tb, &out), -EBADMSG);
		ck_assert_int_eq(relay_tensor_check(buf, sizeof(b) + meta - 8,
		    tb, ppb, DAQIRI_STREAM_REORDER, tb, &out), -EBADMSG);
	}
	/* a raw stream's own */
	h = good_hdr(ppb, DAQIRI_STREAM_RAW, tb);
	ck_assert_int_eq(relay_tensor_check(&h, sizeof(h),
	    relay_meta_bytes(ppb, DAQIRI_STREAM_RAW) + tb, ppb,
	    DAQIRI_STREAM_RAW, tb, &out), 0);
}
END_TEST

START_TEST(test_credit_check)
{
	struct relay_credit c = { RELAY_CREDIT_MAGIC, 1, 1, 0 }, b, out;

	ck_assert_int_eq(relay_credit_check(&c, sizeof(c), 0, &out), 0);
	ck_assert_uint_eq(out.count, 1);
	c.count = RELAY_SLOTS_MAX;
	ck_assert_int_eq(relay_credit_check(&c, sizeof(c), 0, &out), 0);
	ck_assert_int_eq(relay_credit_check(NULL, sizeof(c), 0, &out),
	    -EBADMSG);
	ck_assert_int_eq(relay_credit_check(&c, sizeof(c) - 1, 0, &out),
	    -EBADMSG);
	ck_assert_int_eq(relay_credit_check(&c, sizeof(c), 1, &out),
	    -EBADMSG);
	b = c; b.magic = RELAY_TENSOR_MAGIC;
	ck_assert_int_eq(relay_credit_check(&b, sizeof(b), 0, &out),
	    -EBADMSG);
	b = c; b.count = 0;
	ck_assert_int_eq(relay_credit_check(&b, sizeof(b), 0, &out),
	    -EBADMSG);
	b = c; b.count = RELAY_SLOTS_MAX + 1;
	ck_assert_int_eq(relay_credit_check(&b, sizeof(b), 0, &out),
	    -EBADMSG);
	b = c; b.reserved = 1;
	ck_assert_int_eq(relay_credit_check(&b, sizeof(b), 0, &out),
	    -EBADMSG);
}
END_TEST

static int
decode_str(const char *s, struct relay_ctrl *c, struct daqiri_err *e)
{
	return relay_ctrl_decode(s, strlen(s), c, e);
}

static int
decode_json(cJSON *o, struct relay_ctrl *c, struct daqiri_err *e)
{
	char *t = cJSON_PrintUnformatted(o);
	int r;

	ck_assert_ptr_nonnull(t);
	r = decode_str(t, c, e);
	free(t);
	cJSON_Delete(o);
	return r;
}

START_TEST(test_handshake_roundtrip)
{
	uint8_t nonce[RELAY_NONCE_BYTES], mac[RELAY_MAC_BYTES];
	struct relay_ctrl c;
	struct daqiri_err e;
	int i;

	for (i = 0; i < RELAY_NONCE_BYTES; i++)
		nonce[i] = (uint8_t)(i * 7 + 1);
	for (i = 0; i < RELAY_MAC_BYTES; i++)
		mac[i] = (uint8_t)(255 - i);
	ck_assert_int_eq(decode_json(relay_challenge_new(nonce, true,
	    0xfedcba9876543210ull), &c, &e), 0);
	ck_assert_int_eq(c.type, RELAY_CTRL_CHALLENGE);
	ck_assert_mem_eq(c.u.challenge.nonce, nonce, sizeof(nonce));
	ck_assert(c.u.challenge.auth);
	ck_assert_uint_eq(c.u.challenge.instance, 0xfedcba9876543210ull);
	relay_ctrl_free(&c);

	ck_assert_int_eq(decode_json(relay_auth_new(mac, "remote-1"), &c,
	    &e), 0);
	ck_assert_int_eq(c.type, RELAY_CTRL_AUTH);
	ck_assert(c.u.auth.has_mac);
	ck_assert_mem_eq(c.u.auth.mac, mac, sizeof(mac));
	ck_assert_str_eq(c.u.auth.client, "remote-1");
	relay_ctrl_free(&c);

	ck_assert_int_eq(decode_json(relay_auth_new(NULL, NULL), &c, &e), 0);
	ck_assert_int_eq(c.type, RELAY_CTRL_AUTH);
	ck_assert(!c.u.auth.has_mac);
	ck_assert_str_eq(c.u.auth.client, "");
	relay_ctrl_free(&c);

	ck_assert_int_eq(decode_json(relay_auth_reply_new(
	    DAQIRI_ST_PERMISSION_DENIED, "wrong secret"), &c, &e), 0);
	ck_assert_int_eq(c.type, RELAY_CTRL_AUTH_REPLY);
	ck_assert_int_eq(c.u.auth_reply.status, DAQIRI_ST_PERMISSION_DENIED);
	ck_assert_str_eq(c.u.auth_reply.message, "wrong secret");
	relay_ctrl_free(&c);
}
END_TEST

START_TEST(test_ctrl_garbage)
{
	static const struct {
		const char *text;
		enum daqiri_status st;
	} bad[] = {
		/* bad hex */
		{ "{\"type\":\"auth\",\"version\":1,\"mac\":\"zz\"}",
		  DAQIRI_ST_BAD_FIELD },
		{ "{\"type\":\"challenge\",\"version\":1,\"nonce\":\"00\","
		  "\"auth\":true,\"instance\":\"0000000000000001\"}",
		  DAQIRI_ST_BAD_FIELD },
		/* wrong version, no version */
		{ "{\"type\":\"auth\",\"version\":2,\"mac\":\"\"}",
		  DAQIRI_ST_VERSION_MISMATCH },
		{ "{\"type\":\"auth\",\"mac\":\"\"}",
		  DAQIRI_ST_VERSION_MISMATCH },
		{ "{\"type\":\"auth\",\"version\":1.5,\"mac\":\"\"}",
		  DAQIRI_ST_VERSION_MISMATCH },
		/* unknown field, missing field, wrong type */
		{ "{\"type\":\"auth\",\"version\":1,\"mac\":\"\",\"x\":1}",
		  DAQIRI_ST_BAD_FIELD },
		{ "{\"type\":\"auth\",\"version\":1}", DAQIRI_ST_BAD_FIELD },
		{ "{\"type\":\"auth\",\"version\":1,\"mac\":5}",
		  DAQIRI_ST_BAD_FIELD },
		{ "{\"type\":\"auth_reply\",\"status\":\"nonsense\"}",
		  DAQIRI_ST_BAD_FIELD },
		/* trailing data */
		{ "{\"type\":\"auth\",\"version\":1,\"mac\":\"\"} x",
		  DAQIRI_ST_BAD_JSON },
		/* not JSON, not an object, unknown type */
		{ "not json", DAQIRI_ST_BAD_JSON },
		{ "[1,2]", DAQIRI_ST_BAD_JSON },
		{ "{\"type\":\"no_such_type\"}", DAQIRI_ST_UNKNOWN_TYPE },
	};
	struct relay_ctrl c;
	struct daqiri_err e;
	char *huge;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(decode_str(bad[i].text, &c, &e) < 0, "%s",
		    bad[i].text);
		ck_assert_msg(e.status == bad[i].st, "%s: status %s, not %s",
		    bad[i].text, daqiri_status_name(e.status),
		    daqiri_status_name(bad[i].st));
		relay_ctrl_free(&c);
	}
	/* empty */
	ck_assert_int_lt(relay_ctrl_decode("", 0, &c, &e), 0);
	ck_assert_int_eq(e.status, DAQIRI_ST_BAD_JSON);
	ck_assert_int_lt(relay_ctrl_decode(NULL, 0, &c, &e), 0);
	/* huge: refused by size before anything is read */
	huge = malloc(DAQIRI_MSG_SIZE_MAX + 2);
	ck_assert_ptr_nonnull(huge);
	memset(huge, ' ', DAQIRI_MSG_SIZE_MAX + 1);
	ck_assert_int_lt(relay_ctrl_decode(huge, DAQIRI_MSG_SIZE_MAX + 1, &c,
	    &e), 0);
	ck_assert_int_eq(e.status, DAQIRI_ST_TOO_BIG);
	free(huge);
	/* a client's auth longer than its field */
	{
		char t[256];

		snprintf(t, sizeof(t), "{\"type\":\"auth\",\"version\":1,"
		    "\"mac\":\"\",\"client\":\"%0*d\"}", DAQIRI_NAME_MAX, 0);
		ck_assert_int_lt(decode_str(t, &c, &e), 0);
		ck_assert_int_eq(e.status, DAQIRI_ST_OUT_OF_RANGE);
	}
}
END_TEST

START_TEST(test_ctrl_proto)
{
	struct relay_ctrl c;
	struct daqiri_err e;

	ck_assert_int_eq(decode_str("{\"type\":\"streams\",\"id\":4}", &c,
	    &e), 0);
	ck_assert_int_eq(c.type, RELAY_CTRL_PROTO);
	ck_assert_int_eq(c.proto.type, DAQIRI_MSG_STREAMS);
	ck_assert(c.proto.has_id);
	ck_assert_uint_eq(c.proto.id, 4);
	relay_ctrl_free(&c);
	ck_assert_int_eq(decode_str("{\"type\":\"subscribe\",\"id\":5,"
	    "\"stream\":\"sensor0/sensor_tensor\",\"policy\":\"lossless\"}",
	    &c, &e), 0);
	ck_assert_int_eq(c.proto.type, DAQIRI_MSG_SUBSCRIBE);
	ck_assert_str_eq(c.proto.u.sub.stream, "sensor0/sensor_tensor");
	ck_assert_int_eq(c.proto.u.sub.policy, DAQIRI_POLICY_LOSSLESS);
	relay_ctrl_free(&c);
	ck_assert_int_eq(decode_str("{\"type\":\"unsubscribe\",\"sub\":3}",
	    &c, &e), 0);
	ck_assert_int_eq(c.proto.type, DAQIRI_MSG_UNSUBSCRIBE);
	ck_assert_uint_eq(c.proto.u.unsub.sub_id, 3);
	relay_ctrl_free(&c);
	/* the control protocol's own refusal, with the type it read */
	ck_assert_int_lt(decode_str("{\"type\":\"streams\",\"id\":9,"
	    "\"bogus\":1}", &c, &e), 0);
	ck_assert_int_eq(e.status, DAQIRI_ST_BAD_FIELD);
	ck_assert_int_eq(c.proto.type, DAQIRI_MSG_STREAMS);
	relay_ctrl_free(&c);
}
END_TEST

START_TEST(test_mac_known_answer)
{
	/* Computed once with OpenSSL's command line, over the label and
	 * the nonce 00 01 .. 1f:
	 *   printf 'daqiri-relay auth v1' > m; (bytes 0..31) >> m
	 *   openssl dgst -sha256 -hmac "0123456789abcdef-test-secret" m */
	static const uint8_t want[RELAY_MAC_BYTES] = {
		0x54, 0x54, 0x93, 0x2b, 0x73, 0xed, 0x32, 0x5f,
		0xc4, 0xc7, 0xaf, 0xc4, 0xef, 0x69, 0xf7, 0x27,
		0x3c, 0x41, 0x5a, 0x91, 0x0f, 0xc6, 0x88, 0xbd,
		0x5e, 0x6f, 0xb5, 0xff, 0x3d, 0x9c, 0x10, 0xc3,
	};
	const char *secret = "0123456789abcdef-test-secret";
	uint8_t nonce[RELAY_NONCE_BYTES], mac[RELAY_MAC_BYTES];
	int i;

	for (i = 0; i < RELAY_NONCE_BYTES; i++)
		nonce[i] = (uint8_t)i;
	ck_assert_int_eq(relay_mac((const uint8_t *)secret, strlen(secret),
	    nonce, mac), 0);
	ck_assert_mem_eq(mac, want, sizeof(want));
	ck_assert(relay_mac_equal(mac, want));
	mac[31] ^= 1;
	ck_assert(!relay_mac_equal(mac, want));
}
END_TEST

static void
write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	ck_assert_int_eq(chmod(path, mode), 0);
}

START_TEST(test_secret_load)
{
	char dir[] = "/tmp/check_relay.XXXXXX", path[128], err[512];
	uint8_t s[RELAY_SECRET_MAX + 1];
	size_t len = 0;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/secret", dir);
	ck_assert_int_eq(relay_secret_load(path, s, &len, err, sizeof(err)),
	    -ENOENT);
	write_file(path, "0123456789abcdef0123\n", 0600);
	ck_assert_int_eq(relay_secret_load(path, s, &len, err, sizeof(err)),
	    0);
	ck_assert_uint_eq(len, 20);	/* the newline dropped */
	ck_assert_mem_eq(s, "0123456789abcdef0123", 20);
	chmod(path, 0644);
	ck_assert_int_eq(relay_secret_load(path, s, &len, err, sizeof(err)),
	    -EPERM);
	ck_assert_ptr_nonnull(strstr(err, "chmod 600"));
	write_file(path, "short\n", 0600);
	ck_assert_int_eq(relay_secret_load(path, s, &len, err, sizeof(err)),
	    -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "/dev/urandom"));
	unlink(path);
	ck_assert_int_eq(relay_secret_load(dir, s, &len, err, sizeof(err)),
	    -EINVAL);		/* a directory */
	rmdir(dir);
}
END_TEST

START_TEST(test_url_parse)
{
	char host[64];
	uint16_t port;

	ck_assert_int_eq(relay_url_parse("/run/daqiri/daqirid.sock", host,
	    sizeof(host), &port), 0);
	ck_assert_int_eq(relay_url_parse(NULL, host, sizeof(host), &port), 0);
	ck_assert_int_eq(relay_url_parse("ucx://node7", host, sizeof(host),
	    &port), 1);
	ck_assert_str_eq(host, "node7");
	ck_assert_uint_eq(port, RELAY_DEFAULT_PORT);
	ck_assert_int_eq(relay_url_parse("ucx://10.0.0.2:9000", host,
	    sizeof(host), &port), 1);
	ck_assert_str_eq(host, "10.0.0.2");
	ck_assert_uint_eq(port, 9000);
	ck_assert_int_eq(relay_url_parse("ucx://[fe80::1]:7", host,
	    sizeof(host), &port), 1);
	ck_assert_str_eq(host, "fe80::1");
	ck_assert_uint_eq(port, 7);
	ck_assert_int_eq(relay_url_parse("ucx://[::1]", host, sizeof(host),
	    &port), 1);
	ck_assert_str_eq(host, "::1");
	ck_assert_uint_eq(port, RELAY_DEFAULT_PORT);
	ck_assert_int_eq(relay_url_parse("ucx://", host, sizeof(host),
	    &port), -EINVAL);
	ck_assert_int_eq(relay_url_parse("ucx://h:0", host, sizeof(host),
	    &port), -EINVAL);
	ck_assert_int_eq(relay_url_parse("ucx://h:65536", host, sizeof(host),
	    &port), -EINVAL);
	ck_assert_int_eq(relay_url_parse("ucx://h:-1", host, sizeof(host),
	    &port), -EINVAL);
	ck_assert_int_eq(relay_url_parse("ucx://h:12x", host, sizeof(host),
	    &port), -EINVAL);
	ck_assert_int_eq(relay_url_parse("ucx://h/path", host, sizeof(host),
	    &port), -EINVAL);
	ck_assert_int_eq(relay_url_parse("ucx://[::1", host, sizeof(host),
	    &port), -EINVAL);
	ck_assert_int_eq(relay_url_parse("ucx://[::1]x", host, sizeof(host),
	    &port), -EINVAL);
	ck_assert_int_eq(relay_url_parse("ucx://averyveryverylonghostname",
	    host, 8, &port), -EINVAL);
}
END_TEST

static Suite *
relay_wire_suite(void)
{
	Suite *s = suite_create("relay_wire");
	TCase *tc = tcase_create("relay_wire");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_meta_bytes);
	tcase_add_test(tc, test_tensor_check);
	tcase_add_test(tc, test_credit_check);
	tcase_add_test(tc, test_handshake_roundtrip);
	tcase_add_test(tc, test_ctrl_garbage);
	tcase_add_test(tc, test_ctrl_proto);
	tcase_add_test(tc, test_mac_known_answer);
	tcase_add_test(tc, test_secret_load);
	tcase_add_test(tc, test_url_parse);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(relay_wire_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
