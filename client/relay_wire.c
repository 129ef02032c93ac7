/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The relay protocol's pure half (relay_wire.h): tensor and credit
 * headers, the handshake messages, the shared secret and its MAC, and
 * ucx:// URLs. No UCX here: fuzzed alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "relay_wire.h"

uint32_t
relay_meta_bytes(uint32_t ppb, enum daqiri_stream_kind kind)
{
	uint64_t b;

	if (ppb == 0 || ppb > DAQIRI_PPB_MAX)
		return 0;
	b = kind == DAQIRI_STREAM_RAW ? DAQIRI_RAW_SIDECAR_BYTES(ppb) :
	    DAQIRI_RAW_LENGTHS_OFF(ppb);
	return (uint32_t)((b + 63) / 64 * 64);
}

int
relay_tensor_check(const void *hdr, size_t hlen, size_t len, uint32_t ppb,
		   enum daqiri_stream_kind kind, uint64_t tensor_bytes,
		   struct relay_tensor_hdr *out)
{
	uint32_t meta = relay_meta_bytes(ppb, kind);

	bool in_hdr;

	if (hdr == NULL || hlen < sizeof(*out) || meta == 0)
		return -EBADMSG;
	memcpy(out, hdr, sizeof(*out));
	in_hdr = out->relay_flags & RELAY_TENSOR_META_IN_HDR;
	if (out->magic != RELAY_TENSOR_MAGIC || out->meta_bytes != meta ||
	    out->data_bytes != tensor_bytes ||
	    hlen != sizeof(*out) + (in_hdr ? meta : 0) ||
	    len != (in_hdr ? 0 : (uint64_t)meta) + tensor_bytes ||
	    out->packets_expected > ppb || out->packets_received > ppb ||
	    out->packets_received > out->packets_expected ||
	    (out->relay_flags & ~RELAY_TENSOR_FLAGS_ALL) != 0)
		return -EBADMSG;
	return 0;
}

int
relay_credit_check(const void *hdr, size_t hlen, size_t len,
		   struct relay_credit *out)
{
	if (hdr == NULL || hlen != sizeof(*out) || len != 0)
		return -EBADMSG;
	memcpy(out, hdr, sizeof(*out));
	if (out->magic != RELAY_CREDIT_MAGIC || out->count == 0 ||
	    out->count > RELAY_SLOTS_MAX || out->reserved != 0)
		return -EBADMSG;
	return 0;
}

/* ---- handshake messages */

static const char *const ctrl_names[RELAY_CTRL_MAX] = {
	[RELAY_CTRL_CHALLENGE] = "challenge",
	[RELAY_CTRL_AUTH] = "auth",
	[RELAY_CTRL_AUTH_REPLY] = "auth_reply",
	[RELAY_CTRL_PROTO] = NULL,
};

static void
hex_put(char *out, const uint8_t *b, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * n] = '\0';
}

static int
hex_nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Exactly 2n hex digits -> n bytes: 0 or -1. */
static int
hex_get(const char *s, uint8_t *b, size_t n)
{
	if (strlen(s) != 2 * n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int hi = hex_nibble(s[2 * i]), lo = hex_nibble(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		b[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

/* Every member of o is one of keys (NULL-terminated). */
static bool
only_keys(const cJSON *o, const char *const *keys)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, o) {
		size_t i;

		for (i = 0; keys[i] != NULL; i++)
			if (c->string != NULL && strcmp(c->string, keys[i]) == 0)
				break;
		if (keys[i] == NULL)
			return false;
	}
	return true;
}

static const char *
get_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) && v->valuestring != NULL ? v->valuestring :
	    NULL;
}

static int
decode_handshake(const cJSON *o, enum relay_ctrl_type t,
		 struct relay_ctrl *out, struct daqiri_err *err)
{
	static const char *const k_chal[] = { "type", "version", "nonce",
	    "auth", "instance", NULL };
	static const char *const k_auth[] = { "type", "version", "mac",
	    "client", NULL };
	static const char *const k_rep[] = { "type", "status", "message",
	    NULL };
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "version");
	const char *s;
	char *end;
	int st;

	if (t != RELAY_CTRL_AUTH_REPLY &&
	    !(daqiri_json_int_in(v, 0, UINT32_MAX) &&
	      v->valuedouble == RELAY_WIRE_VERSION))
		return daqiri_err_set(err, DAQIRI_ST_VERSION_MISMATCH,
		    "relay protocol version %d expected", RELAY_WIRE_VERSION);
	switch (t) {
	case RELAY_CTRL_CHALLENGE:
		if (!only_keys(o, k_chal))
			break;
		s = get_str(o, "nonce");
		v = cJSON_GetObjectItemCaseSensitive(o, "auth");
		if (s == NULL || hex_get(s, out->u.challenge.nonce,
		    RELAY_NONCE_BYTES) < 0 || !cJSON_IsBool(v))
			break;
		out->u.challenge.auth = cJSON_IsTrue(v);
		s = get_str(o, "instance");
		if (s == NULL || strlen(s) != DAQIRI_INSTANCE_HEX ||
		    hex_nibble(s[0]) < 0)
			break;
		errno = 0;
		out->u.challenge.instance = strtoull(s, &end, 16);
		if (errno != 0 || *end != '\0')
			break;
		return 0;
	case RELAY_CTRL_AUTH:
		if (!only_keys(o, k_auth))
			break;
		s = get_str(o, "mac");
		if (s == NULL)
			break;
		out->u.auth.has_mac = s[0] != '\0';
		if (out->u.auth.has_mac &&
		    hex_get(s, out->u.auth.mac, RELAY_MAC_BYTES) < 0)
			break;
		s = get_str(o, "client");
		if (s != NULL) {
			if (strlen(s) >= sizeof(out->u.auth.client))
				return daqiri_err_set(err,
				    DAQIRI_ST_OUT_OF_RANGE,
				    "client: longer than %zu bytes",
				    sizeof(out->u.auth.client) - 1);
			snprintf(out->u.auth.client,
			    sizeof(out->u.auth.client), "%s", s);
		}
		return 0;
	case RELAY_CTRL_AUTH_REPLY:
		if (!only_keys(o, k_rep))
			break;
		s = get_str(o, "status");
		st = s != NULL ? daqiri_status_parse(s) : -1;
		if (st < 0)
			break;
		out->u.auth_reply.status = (enum daqiri_status)st;
		s = get_str(o, "message");
		snprintf(out->u.auth_reply.message,
		    sizeof(out->u.auth_reply.message), "%s",
		    s != NULL ? s : "");
		return 0;
	default:
		break;
	}
	return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
	    "%s: a field missing, mistyped or unknown", ctrl_names[t]);
}

int
relay_ctrl_decode(const char *buf, size_t len, struct relay_ctrl *out,
		  struct daqiri_err *err)
{
	const char *end = NULL, *ty;
	cJSON *root;
	bool trailing;
	char *copy;
	int t, r;

	memset(out, 0, sizeof(*out));
	out->type = RELAY_CTRL_MAX;
	out->proto.type = DAQIRI_MSG_MAX;
	err->status = DAQIRI_ST_OK;
	err->msg[0] = '\0';
	if (len > DAQIRI_MSG_SIZE_MAX)
		return daqiri_err_set(err, DAQIRI_ST_TOO_BIG,
		    "message of %zu bytes, at most %d", len,
		    DAQIRI_MSG_SIZE_MAX);
	if (buf == NULL || len == 0)
		return daqiri_err_set(err, DAQIRI_ST_BAD_JSON, "empty message");
	copy = malloc(len + 1);
	if (copy == NULL)
		return daqiri_err_set(err, DAQIRI_ST_NO_RESOURCES,
		    "out of memory");
	memcpy(copy, buf, len);
	copy[len] = '\0';
	/* A string with an embedded NUL cannot be a handshake type name
	 * below; daqiri_msg_decode() refuses its \u0000 escapes itself. */
	root = cJSON_ParseWithLengthOpts(copy, len, &end, 0);
	/* only white space after the object */
	while (end != NULL && end < copy + len &&
	    (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
		end++;
	trailing = end == NULL || end != copy + len;
	free(copy);
	ty = root != NULL && cJSON_IsObject(root) ? get_str(root, "type") :
	    NULL;
	for (t = 0; ty != NULL && t < RELAY_CTRL_PROTO; t++)
		if (strcmp(ty, ctrl_names[t]) == 0)
			break;
	if (ty == NULL || t >= RELAY_CTRL_PROTO) {
		/* Not a handshake message (or not JSON at all): the control
		 * protocol's decoder says what it is, or what is wrong. */
		cJSON_Delete(root);
		if (daqiri_msg_decode(buf, len, &out->proto, err) < 0)
			return -1;
		out->type = RELAY_CTRL_PROTO;
		return 0;
	}
	if (trailing) {
		cJSON_Delete(root);
		return daqiri_err_set(err, DAQIRI_ST_BAD_JSON,
		    "data after the JSON object");
	}
	r = decode_handshake(root, (enum relay_ctrl_type)t, out, err);
	cJSON_Delete(root);
	if (r < 0)
		return -1;
	out->type = (enum relay_ctrl_type)t;
	return 0;
}

void
relay_ctrl_free(struct relay_ctrl *m)
{
	if (m != NULL)
		daqiri_msg_free(&m->proto);
}

cJSON *
relay_challenge_new(const uint8_t nonce[RELAY_NONCE_BYTES], bool auth,
		    uint64_t instance)
{
	char hex[2 * RELAY_NONCE_BYTES + 1], inst[DAQIRI_INSTANCE_HEX + 1];
	cJSON *o = cJSON_CreateObject();

	hex_put(hex, nonce, RELAY_NONCE_BYTES);
	snprintf(inst, sizeof(inst), "%016llx", (unsigned long long)instance);
	if (o == NULL || !cJSON_AddStringToObject(o, "type", "challenge") ||
	    !cJSON_AddNumberToObject(o, "version", RELAY_WIRE_VERSION) ||
	    !cJSON_AddStringToObject(o, "nonce", hex) ||
	    !cJSON_AddBoolToObject(o, "auth", auth) ||
	    !cJSON_AddStringToObject(o, "instance", inst)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

cJSON *
relay_auth_new(const uint8_t *mac, const char *client)
{
	char hex[2 * RELAY_MAC_BYTES + 1] = "";
	cJSON *o = cJSON_CreateObject();

	if (mac != NULL)
		hex_put(hex, mac, RELAY_MAC_BYTES);
	if (o == NULL || !cJSON_AddStringToObject(o, "type", "auth") ||
	    !cJSON_AddNumberToObject(o, "version", RELAY_WIRE_VERSION) ||
	    !cJSON_AddStringToObject(o, "mac", hex) ||
	    (client != NULL &&
	     !cJSON_AddStringToObject(o, "client", client))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

cJSON *
relay_auth_reply_new(enum daqiri_status st, const char *message)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL || !cJSON_AddStringToObject(o, "type", "auth_reply") ||
	    !cJSON_AddStringToObject(o, "status", daqiri_status_name(st)) ||
	    !cJSON_AddStringToObject(o, "message",
		message != NULL ? message : "")) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* ---- the shared secret */

int
relay_secret_load(const char *path, uint8_t *secret, size_t *len, char *err,
		  size_t errlen)
{
	struct stat st;
	ssize_t n;
	int fd, e;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		e = errno;
		snprintf(err, errlen, "secret file '%s': %s", path,
		    strerror(e));
		return -e;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(err, errlen, "secret file '%s': not a regular file",
		    path);
		return -EINVAL;
	}
	if (st.st_mode & 077) {
		close(fd);
		snprintf(err, errlen, "secret file '%s': group or others may "
		    "read it (mode %03o): chmod 600 '%s'", path,
		    (unsigned)(st.st_mode & 0777), path);
		return -EPERM;
	}
	n = read(fd, secret, RELAY_SECRET_MAX + 1);
	e = errno;
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "secret file '%s': %s", path,
		    strerror(e));
		return -e;
	}
	if (n > 0 && secret[n - 1] == '\n')
		n--;
	if (n < RELAY_SECRET_MIN || n > RELAY_SECRET_MAX) {
		snprintf(err, errlen, "secret file '%s': %zd bytes, it needs "
		    "%d to %d (make one: head -c 32 /dev/urandom | base64 > "
		    "FILE)", path, n, RELAY_SECRET_MIN, RELAY_SECRET_MAX);
		return -EINVAL;
	}
	*len = (size_t)n;
	return 0;
}

int
relay_mac(const uint8_t *secret, size_t slen,
	  const uint8_t nonce[RELAY_NONCE_BYTES], uint8_t mac[RELAY_MAC_BYTES])
{
	uint8_t msg[sizeof(RELAY_MAC_LABEL) - 1 + RELAY_NONCE_BYTES];
	unsigned int mlen = 0;

	memcpy(msg, RELAY_MAC_LABEL, sizeof(RELAY_MAC_LABEL) - 1);
	memcpy(msg + sizeof(RELAY_MAC_LABEL) - 1, nonce, RELAY_NONCE_BYTES);
	if (HMAC(EVP_sha256(), secret, (int)slen, msg, sizeof(msg), mac,
	    &mlen) == NULL || mlen != RELAY_MAC_BYTES)
		return -EIO;
	return 0;
}

bool
relay_mac_equal(const uint8_t a[RELAY_MAC_BYTES],
		const uint8_t b[RELAY_MAC_BYTES])
{
	return CRYPTO_memcmp(a, b, RELAY_MAC_BYTES) == 0;
}

/* ---- URLs */

int
relay_url_parse(const char *url, char *host, size_t hostlen, uint16_t *port)
{
	const char *h, *p = NULL, *hend;
	unsigned long v;
	char *end;
	size_t n;

	if (url == NULL || strncmp(url, RELAY_URL_PREFIX,
	    strlen(RELAY_URL_PREFIX)) != 0)
		return 0;
	h = url + strlen(RELAY_URL_PREFIX);
	if (*h == '[') {		/* [IPv6] */
		hend = strchr(h, ']');
		if (hend == NULL)
			return -EINVAL;
		h++;
		if (hend[1] == ':')
			p = hend + 2;
		else if (hend[1] != '\0')
			return -EINVAL;
	} else {
		hend = strchr(h, ':');
		if (hend != NULL)
			p = hend + 1;
		else
			hend = h + strlen(h);
	}
	n = (size_t)(hend - h);
	if (n == 0 || n >= hostlen || memchr(h, '/', n) != NULL)
		return -EINVAL;
	memcpy(host, h, n);
	host[n] = '\0';
	*port = RELAY_DEFAULT_PORT;
	if (p != NULL) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		errno = 0;
		v = strtoul(p, &end, 10);
		if (errno != 0 || *end != '\0' || v == 0 || v > 65535)
			return -EINVAL;
		*port = (uint16_t)v;
	}
	return 1;
}
