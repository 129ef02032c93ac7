/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daqirictl: the operator's tool. One command table drives parsing,
 * dispatch and the usage text; every command is one request through
 * libdaqiri-client, used exactly as any consumer would use it.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "daqiri_client.h"
#include "daqirictl.h"
#include "metrics.h"
#include "proto.h"
#include "histogram.h"

#define CTL_TABLE_MAX_COLS	8	/* wider arrays print as blocks */
#define CTL_TOP_INTERVAL_MS	1000
#define CTL_TOP_MAX_ROWS	64
#define CTL_TOP_NAME_MAX	40	/* widest name column of top */
#define CTL_NAME_MAX		128
#define CTL_HIST_MAX_BUCKETS	64	/* a histogram with more is shown raw */

struct ctl {
	struct daqiri *d;		/* connected by the first request */
	const char *sock;		/* -s, or NULL for the default */
	bool json;
	bool table;			/* -t, or stdout is a terminal */
	bool echo_json;			/* request() prints the reply as it is
					 * and also returns it (-j reload) */
};

/* One column of a command's table view: a field of each record. */
struct column {
	const char *key;
	const char *header;
};

struct command {
	const char *name;		/* one or two words */
	int min_args;
	int max_args;
	int (*handler)(struct ctl *c, int argc, char **argv);
	const char *args;		/* for usage */
	const char *help;
	const char *list;		/* the reply's list for the table view */
	const struct column *cols;	/* NULL-key ended; NULL: no table */
};

static const struct column stream_cols[] = {
	{ "name", "NAME" }, { "kind", "KIND" }, { "dtype", "DTYPE" },
	{ "memory_kind", "MEMORY" }, { "nbufs", "BUFS" },
	{ "packets_per_batch", "PKTS/BATCH" }, { "tensor_bytes", "TENSOR_BYTES" },
	{ "subscribers", "SUBS" }, { NULL, NULL }
};

static const struct column consumer_cols[] = {
	{ "stream", "STREAM" }, { "conn", "CONN" }, { "sub_id", "SUB" },
	{ "pid", "PID" }, { "uid", "UID" }, { "mode", "MODE" },
	{ "group", "GROUP" }, { "policy", "POLICY" }, { "state", "STATE" },
	{ "delivered", "DELIVERED" }, { "released", "RELEASED" },
	{ "overruns", "OVERRUNS" }, { "held", "HELD" },
	{ "pending", "PENDING" }, { "blocked", "BLOCKED" }, { NULL, NULL }
};

static int cmd_simple(struct ctl *c, int argc, char **argv);
static int cmd_flow_list(struct ctl *c, int argc, char **argv);
static int cmd_flow_add(struct ctl *c, int argc, char **argv);
static int cmd_flow_del(struct ctl *c, int argc, char **argv);
static int cmd_top(struct ctl *c, int argc, char **argv);
static int cmd_metrics(struct ctl *c, int argc, char **argv);
static int cmd_reload(struct ctl *c, int argc, char **argv);
static int cmd_config(struct ctl *c, int argc, char **argv);
static int cmd_send(struct ctl *c, int argc, char **argv);
static int cmd_doctor(struct ctl *c, int argc, char **argv);
static int cmd_learn(struct ctl *c, int argc, char **argv);
static int cmd_trigger(struct ctl *c, int argc, char **argv);
static int cmd_capture(struct ctl *c, int argc, char **argv);
static int cmd_replay_start(struct ctl *c, int argc, char **argv);
static int cmd_replay_status(struct ctl *c, int argc, char **argv);

static const struct command commands[] = {
	{ "status", 0, 0, cmd_simple, "", "daemon state and totals", NULL, NULL },
	{ "streams", 0, 0, cmd_simple, "", "streams and their tensor geometry",
	    "streams", stream_cols },
	{ "consumers", 0, 0, cmd_simple, "", "subscriptions and their counters",
	    "consumers", consumer_cols },
	{ "stats", 0, 0, cmd_simple, "",
	    "counters of interfaces, streams and the control socket", NULL, NULL },
	{ "flow list", 0, 1, cmd_flow_list, "[IFACE]", "flow rules", NULL, NULL },
	{ "flow add", 3, 9, cmd_flow_add,
	    "IFACE FLOW_ID QUEUE[,QUEUE...] [name=N] [udp_src=P[-P]] "
	    "[udp_dst=P[-P]] [ipv4_src=A] [ipv4_dst=A] [ipv4_len=N]",
	    "add a flow rule (root or admin group)", NULL, NULL },
	{ "flow del", 2, 2, cmd_flow_del, "IFACE FLOW_ID",
	    "remove a flow rule (root or admin group)", NULL, NULL },
	{ "top", 0, 1, cmd_top, "[COUNT]",
	    "rates (/s) and totals, redrawn every second; COUNT frames, "
	    "0 or none until q or Ctrl-C", NULL, NULL },
	{ "metrics", 0, 0, cmd_metrics, "",
	    "stats in Prometheus text format", NULL, NULL },
	{ "reload", 0, 0, cmd_reload, "",
	    "re-read the configuration file and apply it whole or not at all; "
	    "waits, prints the outcome, exits 1 when refused (root or admin "
	    "group)", NULL, NULL },
	{ "doctor", 0, 1, cmd_doctor, "[STREAM]",
	    "what each reorder stream receives and, when that looks wrong, "
	    "the likeliest cause and the key to change; exits 1 when one "
	    "looks wrong", NULL, NULL },
	{ "learn", 1, 5, cmd_learn, DAQIRICTL_LEARN_USAGE,
	    "tap an rx queue for a few thousand frames and infer the "
	    "instrument's sequence field, batch field, where the samples "
	    "start, rate, loss and reordering; prints a reorder_configs entry "
	    "(root or admin group)", NULL, NULL },
	{ "capture", 2, 8, cmd_capture, DAQIRICTL_CAPTURE_USAGE,
	    "write the frames an rx queue receives, before classification, "
	    "every flow's, to a pcap file with nanosecond times, until "
	    "Ctrl-C, N frames or S seconds (root or admin group)", NULL,
	    NULL },
	{ "trigger", 1, 1, cmd_trigger, "STREAM",
	    "mark this moment of STREAM for its recorders: daqiri-record "
	    "--pre-trigger writes the seconds before and after it (root or "
	    "admin group)", NULL, NULL },
	{ "replay start", 0, 0, cmd_replay_start, "",
	    "let a replay held by daqirid --replay-hold begin (root or admin "
	    "group); subscribe first", NULL, NULL },
	{ "replay status", 0, 0, cmd_replay_status, "",
	    "a replay's files, frames replayed, whether each is done and its "
	    "clock (the capture's, ns)", NULL, NULL },
	{ "config", 0, 0, cmd_config, "",
	    "the running configuration, normalised (as daqirid -n -v)", NULL,
	    NULL },
	{ "send", 2, 5, cmd_send, DAQIRICTL_SEND_USAGE,
	    "send payloads out of a tx queue: one per line of FILE (- = "
	    "stdin), --hex lines of hex digits, --raw the whole input as one; "
	    "waits until all went, exits 1 if any failed (root or admin "
	    "group)", NULL, NULL },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void __attribute__((noreturn))
usage(FILE *fp, int code)
{
	size_t i;

	fprintf(fp, "usage: daqirictl [-s SOCKET] [-j | -t] COMMAND [ARGS]\n"
	    "       daqirictl -h | -V\n\n"
	    "  -s, --socket SOCKET  control socket (default $%s or %s)\n"
	    "  -j, --json           print the daemon's JSON as it is\n"
	    "  -t, --table          streams and consumers as a table (the "
	    "default on a terminal)\n"
	    "  -h, --help           print this help\n"
	    "  -V, --version        print the version\n\ncommands:\n",
	    DAQIRI_SOCKET_ENV, DAQIRI_DEFAULT_SOCKET);
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(fp, "  %s%s%s\n      %s\n", commands[i].name,
		    commands[i].args[0] != '\0' ? " " : "", commands[i].args,
		    commands[i].help);
	fprintf(fp, "\nCommand words may be shortened while they stay "
	    "unambiguous.\n");
	exit(code);
}

/* Word w (0 or 1) of a command name into buf; "" when absent. */
static const char *
name_word(const char *name, int w, char *buf, size_t cap)
{
	const char *sp = strchr(name, ' ');

	if (w == 0)
		snprintf(buf, cap, "%.*s", (int)(sp != NULL ?
		    (size_t)(sp - name) : strlen(name)), name);
	else
		snprintf(buf, cap, "%s", sp != NULL ? sp + 1 : "");
	return buf;
}

/*
 * Match word against word w of the names in commands[] (restricted to
 * first word `first` when w is 1): an exact word wins, else a unique
 * prefix. Returns the matched word in out, or prints the choices and
 * returns -1.
 */
static int
match_word(const char *word, int w, const char *first, char *out,
	   size_t cap)
{
	char cand[32], f[32], list[256] = "", hits[256] = "";
	size_t i, n = strlen(word);
	int nhit = 0;

	for (i = 0; i < NCOMMANDS; i++) {
		if (w == 1 && strcmp(name_word(commands[i].name, 0, f,
		    sizeof(f)), first) != 0)
			continue;
		name_word(commands[i].name, w, cand, sizeof(cand));
		if (i > 0 && w == 0 && strcmp(cand, name_word(
		    commands[i - 1].name, 0, f, sizeof(f))) == 0)
			continue;	/* each first word once */
		snprintf(list + strlen(list), sizeof(list) - strlen(list),
		    "%s%s", list[0] ? ", " : "", cand);
		if (strcmp(cand, word) == 0) {
			snprintf(out, cap, "%s", cand);
			return 0;
		}
		if (strncmp(cand, word, n) == 0) {
			snprintf(hits + strlen(hits), sizeof(hits) -
			    strlen(hits), "%s%s", hits[0] ? ", " : "", cand);
			snprintf(out, cap, "%s", cand);
			nhit++;
		}
	}
	if (nhit == 1)
		return 0;
	if (nhit == 0)
		fprintf(stderr, "daqirictl: unknown command \"%s%s%s\"; valid: "
		    "%s\n", w == 1 ? first : "", w == 1 ? " " : "", word, list);
	else
		fprintf(stderr, "daqirictl: ambiguous command \"%s%s%s\": %s\n",
		    w == 1 ? first : "", w == 1 ? " " : "", word, hits);
	return -1;
}

/* The command named by argv[0] (and argv[1] for two-word names), or NULL
 * after telling why; *used = words consumed. */
static const struct command *
find_command(int argc, char **argv, int *used)
{
	char w0[32], w1[32], f[32];
	size_t i;

	if (match_word(argv[0], 0, NULL, w0, sizeof(w0)) < 0)
		return NULL;
	for (i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, w0) == 0) {
			*used = 1;
			return &commands[i];
		}
	if (argc < 2) {
		char list[256] = "";

		for (i = 0; i < NCOMMANDS; i++)
			if (strcmp(name_word(commands[i].name, 0, f,
			    sizeof(f)), w0) == 0)
				snprintf(list + strlen(list), sizeof(list) -
				    strlen(list), "%s%s", list[0] ? ", " : "",
				    name_word(commands[i].name, 1, w1,
				    sizeof(w1)));
		fprintf(stderr, "daqirictl: \"%s\" needs one of: %s\n", w0,
		    list);
		return NULL;
	}
	if (match_word(argv[1], 1, w0, w1, sizeof(w1)) < 0)
		return NULL;
	for (i = 0; i < NCOMMANDS; i++)
		if (strcmp(name_word(commands[i].name, 0, f, sizeof(f)),
		    w0) == 0 && strcmp(name_word(commands[i].name, 1, f,
		    sizeof(f)), w1) == 0) {
			*used = 2;
			return &commands[i];
		}
	return NULL;
}

/* ---- printing */

static void
print_scalar(FILE *fp, const cJSON *v)
{
	if (cJSON_IsString(v))
		fputs(v->valuestring, fp);
	else if (cJSON_IsBool(v))
		fputs(cJSON_IsTrue(v) ? "yes" : "no", fp);
	else if (cJSON_IsNull(v))
		fputs("-", fp);
	else if (cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) &&
	    fabs(v->valuedouble) < 1e18)
		fprintf(fp, "%.0f", v->valuedouble);
	else if (cJSON_IsNumber(v))
		fprintf(fp, "%.3f", v->valuedouble);
}

static bool
is_scalar(const cJSON *v)
{
	return !cJSON_IsObject(v) && !cJSON_IsArray(v);
}

static int
scalar_width(const cJSON *v)
{
	char buf[64];
	FILE *fp = fmemopen(buf, sizeof(buf), "w");
	long n;

	if (fp == NULL)
		return 8;
	print_scalar(fp, v);
	n = ftell(fp);
	fclose(fp);
	return (int)n;
}

static void print_object(const cJSON *o, int indent);

/* ---- latency histograms (proto/histogram.h) of stats and consumers:
 * {le_ns, buckets, count, sum_ns} */

static bool
is_hist(const cJSON *o)
{
	return cJSON_IsObject(o) &&
	    cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(o, "le_ns")) &&
	    cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(o, "buckets"));
}

/* A bucket bound in ns as "500us", "2ms", "10s". */
static void
duration_text(double ns, char *buf, size_t cap)
{
	if (ns >= 1e9 && fmod(ns, 1e9) == 0)
		snprintf(buf, cap, "%.0fs", ns / 1e9);
	else if (ns >= 1e6 && fmod(ns, 1e6) == 0)
		snprintf(buf, cap, "%.0fms", ns / 1e6);
	else if (ns >= 1e3 && fmod(ns, 1e3) == 0)
		snprintf(buf, cap, "%.0fus", ns / 1e3);
	else
		snprintf(buf, cap, "%.0fns", ns);
}

/*
 * The permille-quantile of histogram h (NULL: none) as the upper bound of
 * the bucket it falls in (daqiri_hist_quantile()): "2ms" means more than
 * the bound below, at most 2 ms. ">10s" for the +Inf bucket, "-" with no
 * values or no histogram.
 */
static const char *
hist_quantile_text(const cJSON *h, unsigned permille, char *buf, size_t cap)
{
	uint64_t b[CTL_HIST_MAX_BUCKETS];
	const cJSON *le, *e;
	unsigned n = 0;
	int q;

	snprintf(buf, cap, "-");
	if (!is_hist(h))
		return buf;
	le = cJSON_GetObjectItemCaseSensitive(h, "le_ns");
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(h, "buckets")) {
		if (n == CTL_HIST_MAX_BUCKETS || !cJSON_IsNumber(e))
			return buf;
		b[n++] = daqiri_json_int_in(e, 0, 9007199254740992.0) ?
		    (uint64_t)e->valuedouble : 0;
	}
	q = daqiri_hist_quantile(b, n, permille);
	if (q < 0)
		return buf;
	e = cJSON_GetArrayItem(le, q);
	if (cJSON_IsNumber(e)) {
		duration_text(e->valuedouble, buf, cap);
	} else {
		/* past the last bound: the +Inf bucket */
		e = cJSON_GetArrayItem(le, cJSON_GetArraySize(le) - 1);
		if (cJSON_IsNumber(e)) {
			buf[0] = '>';
			duration_text(e->valuedouble, buf + 1, cap - 1);
		}
	}
	return buf;
}

/* An array of flat objects as a table, anything else as blocks. */
static void
print_array(const cJSON *a, int indent)
{
	const char *cols[CTL_TABLE_MAX_COLS];
	int width[CTL_TABLE_MAX_COLS];
	const cJSON *e, *f;
	bool table = cJSON_GetArraySize(a) > 0;
	int ncols = 0, i;

	cJSON_ArrayForEach(e, a) {
		if (!cJSON_IsObject(e)) {
			table = false;
			break;
		}
		cJSON_ArrayForEach(f, e) {
			if (!is_scalar(f)) {
				table = false;
				break;
			}
			for (i = 0; i < ncols; i++)
				if (strcmp(cols[i], f->string) == 0)
					break;
			if (i == ncols) {
				if (ncols == CTL_TABLE_MAX_COLS) {
					table = false;
					break;
				}
				cols[ncols] = f->string;
				width[ncols++] = (int)strlen(f->string);
			}
		}
		if (!table)
			break;
	}
	if (!table) {
		cJSON_ArrayForEach(e, a) {
			if (cJSON_IsObject(e)) {
				/* "- " then the object, indented under it */
				printf("%*s-\n", indent, "");
				print_object(e, indent + 2);
			} else {
				printf("%*s- ", indent, "");
				print_scalar(stdout, e);
				putchar('\n');
			}
		}
		return;
	}
	cJSON_ArrayForEach(e, a)
		for (i = 0; i < ncols; i++) {
			f = cJSON_GetObjectItemCaseSensitive(e, cols[i]);
			if (f != NULL && scalar_width(f) > width[i])
				width[i] = scalar_width(f);
		}
	printf("%*s", indent, "");
	for (i = 0; i < ncols; i++) {
		const char *c;

		for (c = cols[i]; *c != '\0'; c++)
			putchar(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
		printf("%*s", i + 1 < ncols ? width[i] - (int)strlen(cols[i]) +
		    2 : 0, "");
	}
	putchar('\n');
	cJSON_ArrayForEach(e, a) {
		printf("%*s", indent, "");
		for (i = 0; i < ncols; i++) {
			f = cJSON_GetObjectItemCaseSensitive(e, cols[i]);
			if (f != NULL)
				print_scalar(stdout, f);
			else
				putchar('-');
			if (i + 1 < ncols)
				printf("%*s", width[i] - (f != NULL ?
				    scalar_width(f) : 1) + 2, "");
		}
		putchar('\n');
	}
}

static void
print_object(const cJSON *o, int indent)
{
	const cJSON *c, *e;

	cJSON_ArrayForEach(c, o) {
		if (cJSON_IsObject(c)) {
			char q[32];

			printf("%*s%s:\n", indent, "", c->string);
			print_object(c, indent + 2);
			if (!is_hist(c))
				continue;
			/* the estimates daqirictl(8) describes */
			hist_quantile_text(c, 500, q, sizeof(q));
			printf("%*sp50: %s%s\n", indent + 2, "",
			    q[0] >= '0' && q[0] <= '9' ? "<= " : "", q);
			hist_quantile_text(c, 990, q, sizeof(q));
			printf("%*sp99: %s%s\n", indent + 2, "",
			    q[0] >= '0' && q[0] <= '9' ? "<= " : "", q);
		} else if (cJSON_IsArray(c)) {
			bool flat = true;

			cJSON_ArrayForEach(e, c)
				if (!is_scalar(e))
					flat = false;
			if (flat) {
				printf("%*s%s:", indent, "", c->string);
				cJSON_ArrayForEach(e, c) {
					putchar(' ');
					print_scalar(stdout, e);
				}
				putchar('\n');
			} else {
				printf("%*s%s:\n", indent, "", c->string);
				print_array(c, indent + 2);
			}
		} else {
			printf("%*s%s: ", indent, "", c->string);
			print_scalar(stdout, c);
			putchar('\n');
		}
	}
}

/* The reply without its envelope. */
static void
strip_envelope(cJSON *o)
{
	cJSON_DeleteItemFromObjectCaseSensitive(o, "type");
	cJSON_DeleteItemFromObjectCaseSensitive(o, "re");
	cJSON_DeleteItemFromObjectCaseSensitive(o, "status");
	cJSON_DeleteItemFromObjectCaseSensitive(o, "id");
}

/* Send req (consumed), print or return the reply. */
static int
request(struct ctl *c, cJSON *req, const char *what, cJSON **out)
{
	char *text = req != NULL ? cJSON_PrintUnformatted(req) : NULL;
	char *reply = NULL;
	cJSON *o;
	int r;

	cJSON_Delete(req);
	if (text == NULL) {
		fprintf(stderr, "daqirictl: out of memory\n");
		return 1;
	}
	/* Connected only now: a usage error needs no daemon. */
	if (c->d == NULL && (r = daqiri_connect(c->sock, &c->d)) < 0) {
		char hint[512];

		fprintf(stderr, "daqirictl: %s\n", daqiri_connect_hint(r,
		    c->sock, hint, sizeof(hint)));
		free(text);
		return 1;
	}
	r = daqiri_request(c->d, text, &reply);
	free(text);
	if (r < 0 && reply == NULL) {
		fprintf(stderr, "daqirictl: %s: %s\n", what,
		    r == -ENOTCONN ? "the daemon closed the connection" :
		    strerror(-r));
		return 1;
	}
	if (c->json && out == NULL) {
		printf("%s\n", reply);
		free(reply);
		return r < 0 ? 1 : 0;
	}
	if (r < 0) {
		const char *msg = daqiri_last_error(c->d), *st = "error";
		const cJSON *v;

		o = cJSON_Parse(reply);
		v = o != NULL ? cJSON_GetObjectItem(o, "status") : NULL;
		if (cJSON_IsString(v))
			st = v->valuestring;
		if (msg[0] == '\0')
			msg = strerror(-r);
		if (strcmp(msg, st) == 0)
			fprintf(stderr, "daqirictl: %s: %s\n", what, msg);
		else
			fprintf(stderr, "daqirictl: %s: %s (%s)\n", what, msg,
			    st);
		cJSON_Delete(o);
		free(reply);
		return 1;
	}
	if (c->echo_json)
		printf("%s\n", reply);
	o = cJSON_Parse(reply);
	free(reply);
	if (o == NULL) {
		fprintf(stderr, "daqirictl: %s: unreadable reply\n", what);
		return 1;
	}
	strip_envelope(o);
	if (out != NULL) {
		*out = o;
		return 0;
	}
	print_object(o, 0);
	cJSON_Delete(o);
	return 0;
}

static cJSON *
new_req(const char *type)
{
	cJSON *o = cJSON_CreateObject();

	if (o != NULL && cJSON_AddStringToObject(o, "type", type) == NULL) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* ---- commands */

static const struct command *current;

/* The records of list a, one row each, in the columns cols: "-" for a
 * field that is absent or empty. */
static void
print_table(const cJSON *a, const struct column *cols)
{
	int width[CTL_TABLE_MAX_COLS * 2], ncols, i;
	const cJSON *e, *f;

	for (ncols = 0; cols[ncols].key != NULL; ncols++)
		width[ncols] = (int)strlen(cols[ncols].header);
	cJSON_ArrayForEach(e, a)
		for (i = 0; i < ncols; i++) {
			f = cJSON_GetObjectItemCaseSensitive(e, cols[i].key);
			if (f != NULL && is_scalar(f) && scalar_width(f) >
			    width[i])
				width[i] = scalar_width(f);
		}
	for (i = 0; i < ncols; i++)
		printf("%-*s%s", i + 1 < ncols ? width[i] : 0, cols[i].header,
		    i + 1 < ncols ? "  " : "\n");
	cJSON_ArrayForEach(e, a) {
		for (i = 0; i < ncols; i++) {
			int w = 1;

			f = cJSON_GetObjectItemCaseSensitive(e, cols[i].key);
			if (f != NULL && is_scalar(f) && !(cJSON_IsString(f) &&
			    f->valuestring[0] == '\0')) {
				print_scalar(stdout, f);
				w = scalar_width(f);
			} else {
				putchar('-');
			}
			if (i + 1 < ncols)
				printf("%*s", width[i] - w + 2, "");
		}
		putchar('\n');
	}
}

static int
cmd_simple(struct ctl *c, int argc, char **argv)
{
	cJSON *o = NULL;
	int r;

	if (c->json || !c->table || current->cols == NULL)
		return request(c, new_req(current->name), current->name, NULL);
	r = request(c, new_req(current->name), current->name, &o);
	if (r != 0)
		return r;
	print_table(cJSON_GetObjectItemCaseSensitive(o, current->list),
	    current->cols);
	cJSON_Delete(o);
	return 0;
}

static int
cmd_flow_list(struct ctl *c, int argc, char **argv)
{
	cJSON *o = new_req("flow_list");

	if (argc > 0 && o != NULL)
		cJSON_AddStringToObject(o, "interface", argv[0]);
	return request(c, o, "flow list", NULL);
}

static bool
all_digits(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s != '\0'; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* A number when it is one, else the text: the daemon validates. */
static void
add_word(cJSON *o, const char *key, const char *v)
{
	if (all_digits(v) && strlen(v) < 16)
		cJSON_AddNumberToObject(o, key, strtod(v, NULL));
	else
		cJSON_AddStringToObject(o, key, v);
}

/* The KEY=VALUE words of flow add, in usage order. */
static const char *const flow_keys[] = { "name", "udp_src", "udp_dst",
    "ipv4_src", "ipv4_dst", "ipv4_len", NULL };
#define FLOW_KEYS_LIST	"name, udp_src, udp_dst, ipv4_src, ipv4_dst, ipv4_len"

/* Edit distance of a and b, capped: enough to suggest a near key. */
static int
edit_distance(const char *a, const char *b)
{
	int prev[CTL_NAME_MAX + 1], cur[CTL_NAME_MAX + 1];
	size_t la = strlen(a), lb = strlen(b), i, j;

	if (la > CTL_NAME_MAX || lb > CTL_NAME_MAX)
		return CTL_NAME_MAX;
	for (j = 0; j <= lb; j++)
		prev[j] = (int)j;
	for (i = 1; i <= la; i++) {
		cur[0] = (int)i;
		for (j = 1; j <= lb; j++) {
			int d = prev[j - 1] + (a[i - 1] != b[j - 1]);

			if (prev[j] + 1 < d)
				d = prev[j] + 1;
			if (cur[j - 1] + 1 < d)
				d = cur[j - 1] + 1;
			cur[j] = d;
		}
		memcpy(prev, cur, sizeof(prev[0]) * (lb + 1));
	}
	return prev[lb];
}

/* " (did you mean ...?)" for an unknown flow key, or "". */
static void
flow_key_suggest(const char *key, char *out, size_t cap)
{
	const char *us = strchr(key, '_');
	size_t n = 0;
	int k, best = 3, hits = 0;

	out[0] = '\0';
	for (k = 0; flow_keys[k] != NULL; k++)
		if (edit_distance(key, flow_keys[k]) < best)
			best = edit_distance(key, flow_keys[k]);
	if (best < 3) {
		for (k = 0; flow_keys[k] != NULL; k++)
			if (edit_distance(key, flow_keys[k]) == best)
				n += (size_t)snprintf(out + n, n < cap ? cap - n : 0,
				    "%s%s", hits++ ? " or " : "; did you mean ",
				    flow_keys[k]);
	} else if (us != NULL) {
		/* same family: udp_port -> udp_src or udp_dst */
		for (k = 0; flow_keys[k] != NULL; k++)
			if (strncmp(flow_keys[k], key, (size_t)(us - key) + 1) ==
			    0)
				n += (size_t)snprintf(out + n, n < cap ? cap - n : 0,
				    "%s%s", hits++ ? " or " : "; did you mean ",
				    flow_keys[k]);
	}
	if (hits > 0 && n + 1 < cap)
		snprintf(out + n, cap - n, "?");
}

static int
cmd_flow_add(struct ctl *c, int argc, char **argv)
{
	cJSON *o = new_req("flow_add"), *q, *m = NULL;
	char *list, *tok, *save = NULL, hint[128];
	int i, k;

	if (o == NULL)
		return 1;
	cJSON_AddStringToObject(o, "interface", argv[0]);
	add_word(o, "flow_id", argv[1]);
	q = cJSON_AddArrayToObject(o, "queue");
	list = strdup(argv[2]);
	for (tok = strtok_r(list, ",", &save); tok != NULL;
	    tok = strtok_r(NULL, ",", &save)) {
		if (!all_digits(tok)) {
			fprintf(stderr, "daqirictl: flow add: queue \"%s\" is "
			    "not a queue id\n", tok);
			free(list);
			cJSON_Delete(o);
			return 2;
		}
		cJSON_AddItemToArray(q, cJSON_CreateNumber(strtod(tok, NULL)));
	}
	free(list);
	for (i = 3; i < argc; i++) {
		char *eq = strchr(argv[i], '=');

		if (eq == NULL) {
			fprintf(stderr, "daqirictl: flow add: \"%s\" is not "
			    "KEY=VALUE (keys: %s)\n", argv[i], FLOW_KEYS_LIST);
			cJSON_Delete(o);
			return 2;
		}
		*eq = '\0';
		for (k = 0; flow_keys[k] != NULL; k++)
			if (strcmp(flow_keys[k], argv[i]) == 0)
				break;
		if (flow_keys[k] == NULL) {
			flow_key_suggest(argv[i], hint, sizeof(hint));
			fprintf(stderr, "daqirictl: flow add: unknown key \"%s\" "
			    "(valid: %s)%s\n", argv[i], FLOW_KEYS_LIST, hint);
			cJSON_Delete(o);
			return 2;
		}
		if (k == 0) {
			cJSON_AddStringToObject(o, "name", eq + 1);
			continue;
		}
		if (m == NULL)
			m = cJSON_AddObjectToObject(o, "match");
		add_word(m, argv[i], eq + 1);
	}
	return request(c, o, "flow add", NULL);
}

static int
cmd_flow_del(struct ctl *c, int argc, char **argv)
{
	cJSON *o = new_req("flow_del");

	if (o == NULL)
		return 1;
	cJSON_AddStringToObject(o, "interface", argv[0]);
	add_word(o, "flow_id", argv[1]);
	return request(c, o, "flow del", NULL);
}

/* ---- reload and config */

static const char *
str_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

/*
 * The daemon answers when the reload is done: every error or change as
 * "file:line:col: ...", then one line with the outcome. A refused reload
 * goes to stderr and exits 1, which makes systemctl reload fail.
 */
static int
cmd_reload(struct ctl *c, int argc, char **argv)
{
	const cJSON *e;
	cJSON *o = NULL;
	bool refused;
	FILE *fp;
	int r;

	c->echo_json = c->json;
	r = request(c, new_req("reload"), "reload", &o);
	c->echo_json = false;
	if (r != 0)
		return r;
	refused = strcmp(str_of(o, "outcome"), "applied") != 0 &&
	    strcmp(str_of(o, "outcome"), "unchanged") != 0;
	fp = refused ? stderr : stdout;
	if (!c->json) {
		cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o,
		    "diagnostics"))
			fprintf(fp, "%s: %s: %s\n", str_of(e, "where"),
			    str_of(e, "severity"), str_of(e, "message"));
		cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o,
		    "changes"))
			if (!refused || strcmp(str_of(e, "kind"), "live") != 0)
				fprintf(fp, "%s: %s%s\n", str_of(e, "where"),
				    strcmp(str_of(e, "kind"), "live") == 0 ?
				    "applied: " : "", str_of(e, "change"));
		fprintf(fp, "reload %s: %s\n", str_of(o, "outcome"),
		    str_of(o, "reason"));
	}
	cJSON_Delete(o);
	return refused ? 1 : 0;
}

/* ---- replay */

/* The daemon's "replay" object: a line, then one per queue. */
static void
print_replay(const cJSON *rp)
{
	const cJSON *e, *sp = cJSON_GetObjectItemCaseSensitive(rp, "speed");

	if (cJSON_IsNumber(sp))
		printf("replay %s, speed %gx real time\n",
		    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rp,
		    "running")) ? "running" : "held", sp->valuedouble);
	else
		printf("replay %s, speed max\n",
		    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rp,
		    "running")) ? "running" : "held");
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(rp, "queues")) {
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(e, "frames");
		const cJSON *k = cJSON_GetObjectItemCaseSensitive(e, "clock_ns");

		printf("%s: %s: %.0f frames, %s, clock %.0f ns\n",
		    str_of(e, "queue"), cJSON_IsString(
		    cJSON_GetObjectItemCaseSensitive(e, "file")) ?
		    str_of(e, "file") : "(no file)",
		    cJSON_IsNumber(f) ? f->valuedouble : 0,
		    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "done")) ?
		    "done" : "replaying",
		    cJSON_IsNumber(k) ? k->valuedouble : 0);
	}
}

static int
replay_request(struct ctl *c, const char *action)
{
	cJSON *req = new_req("replay"), *o = NULL;
	int r;

	if (req == NULL || cJSON_AddStringToObject(req, "action",
	    action) == NULL) {
		cJSON_Delete(req);
		fprintf(stderr, "daqirictl: out of memory\n");
		return 1;
	}
	if (c->json)
		return request(c, req, "replay", NULL);
	if ((r = request(c, req, "replay", &o)) != 0)
		return r;
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "was_running")))
		printf("the replay was running already\n");
	print_replay(cJSON_GetObjectItemCaseSensitive(o, "replay"));
	cJSON_Delete(o);
	return fflush(stdout) != 0 ? 1 : 0;
}

static int
cmd_replay_start(struct ctl *c, int argc, char **argv)
{
	return replay_request(c, "start");
}

static int
cmd_replay_status(struct ctl *c, int argc, char **argv)
{
	return replay_request(c, "status");
}

static int
cmd_config(struct ctl *c, int argc, char **argv)
{
	const cJSON *e;
	cJSON *o = NULL;
	int r;

	if (c->json)
		return request(c, new_req("config"), "config", NULL);
	r = request(c, new_req("config"), "config", &o);
	if (r != 0)
		return r;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o, "lines"))
		printf("%s\n", cJSON_IsString(e) ? e->valuestring : "");
	cJSON_Delete(o);
	return fflush(stdout) != 0 ? 1 : 0;
}

/* The daemon's verdict on each reorder stream (stats' "verdict",
 * daqirid's doctor.c); ok and waiting are fine, the rest not. */
static int
cmd_doctor(struct ctl *c, int argc, char **argv)
{
	const char *want = argc > 0 ? argv[0] : NULL;
	const cJSON *e, *v;
	cJSON *o = NULL;
	int r, bad = 0, n = 0;

	if ((r = request(c, new_req("stats"), "stats", &o)) != 0)
		return r;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o, "streams")) {
		const char *st;

		v = cJSON_GetObjectItemCaseSensitive(e, "verdict");
		if (v == NULL || (want != NULL &&
		    strcmp(str_of(e, "name"), want) != 0))
			continue;
		n++;
		st = str_of(v, "state");
		bad |= strcmp(st, "ok") != 0 && strcmp(st, "waiting") != 0;
		printf("%s: %s: %s\n", str_of(e, "name"), st, str_of(v, "why"));
	}
	cJSON_Delete(o);
	if (n == 0) {
		fprintf(stderr, "daqirictl: doctor: %s (daqirictl streams "
		    "lists them)\n", want != NULL ? "no such reorder stream" :
		    "no reorder stream");
		return 1;
	}
	return bad ? 1 : 0;
}

/* ---- send (daqirictl_send.c) */

static int
cmd_send(struct ctl *c, int argc, char **argv)
{
	return daqirictl_send(c->sock, c->json, &c->d, argc, argv);
}

static int
cmd_learn(struct ctl *c, int argc, char **argv)
{
	return daqirictl_learn(c->sock, c->json, &c->d, argc, argv);
}

static int
cmd_capture(struct ctl *c, int argc, char **argv)
{
	return daqirictl_capture(c->sock, &c->d, argc, argv);
}

static int
cmd_trigger(struct ctl *c, int argc, char **argv)
{
	return daqirictl_trigger(c->sock, c->json, &c->d, argv[0]);
}

/* ---- metrics: the Prometheus text, rendered as the daemon's /metrics
 * renders it (proto/metrics.h), from the stats and consumers replies */

static int
cmd_metrics(struct ctl *c, int argc, char **argv)
{
	cJSON *st = NULL, *co = NULL;
	bool json = c->json;
	char *text;
	size_t len;
	int r;

	c->json = false;
	r = request(c, new_req("stats"), "metrics", &st);
	if (r == 0)
		r = request(c, new_req("consumers"), "metrics", &co);
	c->json = json;
	if (r == 0 && daqiri_metrics_render(st, co, &text, &len) != 0) {
		fprintf(stderr, "daqirictl: metrics: out of memory\n");
		r = 1;
	} else if (r == 0) {
		fwrite(text, 1, len, stdout);
		free(text);
	}
	cJSON_Delete(st);
	cJSON_Delete(co);
	return r;
}

/* ---- top */

static volatile sig_atomic_t top_stop;

static void
on_signal(int sig)
{
	(void)sig;
	top_stop = 1;
}

/* A number at a dotted path ("reorder.packets_in"), 0 when absent. */
static double
num_at(const cJSON *o, const char *path)
{
	char key[64];
	const char *dot;

	while (o != NULL && (dot = strchr(path, '.')) != NULL) {
		snprintf(key, sizeof(key), "%.*s", (int)(dot - path), path);
		o = cJSON_GetObjectItemCaseSensitive(o, key);
		path = dot + 1;
	}
	o = o != NULL ? cJSON_GetObjectItemCaseSensitive(o, path) : NULL;
	return cJSON_IsNumber(o) ? o->valuedouble : 0;
}

struct top_row {
	char name[CTL_NAME_MAX + 4];
	double in, pub, bytes;
};

static const struct top_row *
prev_of(const struct top_row *rows, int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (strcmp(rows[i].name, name) == 0)
			return &rows[i];
	return NULL;
}

/* Per second since the last refresh; 0 on the first (nothing before). */
static double
rate(double now, const struct top_row *before, size_t off, double dt)
{
	double b;

	if (before == NULL || dt <= 0)
		return 0;
	b = *(const double *)(const void *)((const char *)before + off);
	return now < b ? 0 : (now - b) / dt;
}

/* Subscribers of stream name in a streams reply, -1 when unknown. */
static double
subscribers_of(const cJSON *streams, const char *name)
{
	const cJSON *e, *nm;

	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(streams,
	    "streams")) {
		nm = cJSON_GetObjectItemCaseSensitive(e, "name");
		if (cJSON_IsString(nm) && strcmp(nm->valuestring, name) == 0)
			return num_at(e, "subscribers");
	}
	return -1;
}

/* Under a tx queue's line, one per channel: "  tx N pid P" and its own
 * counters in the queue's columns (the last one is its buffers in
 * flight). */
static void
top_draw_tx_channels(const cJSON *q, const char *qname,
		     const struct top_row *rows, int nrows,
		     struct top_row *cur, int *n, int w, double dt)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(q,
	    "channels")) {
		char key[sizeof(cur->name)], label[48];
		double pk = num_at(c, "packets"), by = num_at(c, "bytes");
		const struct top_row *pr;

		snprintf(label, sizeof(label), "  tx %.0f pid %.0f",
		    num_at(c, "tx"), num_at(c, "pid"));
		snprintf(key, sizeof(key), "tc:%.*s/%.0f/%.0f",
		    (int)sizeof(key) - 48, qname,
		    num_at(c, "tx"), num_at(c, "pid"));
		pr = prev_of(rows, nrows, key);
		printf("%-*.*s %10.0f %9.1f %14.0f %8.0f %10.0f %12.0f "
		    "%8.0f %8.0f %8.0f\n", w, w, label,
		    rate(pk, pr, offsetof(struct top_row, in), dt),
		    rate(by, pr, offsetof(struct top_row, bytes), dt) * 8 / 1e6,
		    pk, num_at(c, "drops.too_big"),
		    num_at(c, "drops.bad_buffer"),
		    num_at(c, "drops.engine_error"), num_at(c, "drops.closed"),
		    num_at(c, "drops.no_peer"), num_at(c, "in_flight"));
		if (*n < CTL_TOP_MAX_ROWS) {
			snprintf(cur[*n].name, sizeof(cur[*n].name), "%s", key);
			cur[*n].in = pk;
			cur[*n].bytes = by;
			cur[(*n)++].pub = 0;
		}
	}
}

/* A line per tx queue (interfaces' "tx" objects), when there is one:
 * payloads and payload megabits per second, drops by reason. */
static void
top_draw_tx(const cJSON *st, const struct top_row *rows, int nrows,
	    struct top_row *cur, int *n, int w, double dt)
{
	const cJSON *e, *q, *nm;
	const struct top_row *pr;
	bool hdr = false;

	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(st,
	    "interfaces"))
		cJSON_ArrayForEach(q, cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(e, "tx"), "queues")) {
			char key[CTL_NAME_MAX + 4];
			double pk = num_at(q, "packets"), by = num_at(q, "bytes");

			if (!hdr) {
				printf("\n%-*s %10s %9s %14s %8s %10s %12s %8s "
				    "%8s %8s\n", w, "TX QUEUE", "PKTS/s", "Mb/s",
				    "PACKETS", "TOO_BIG", "BAD_BUFFER",
				    "ENGINE_ERROR", "CLOSED", "NO_PEER",
				    "CHANNELS");
				hdr = true;
			}
			nm = cJSON_GetObjectItemCaseSensitive(q, "queue");
			snprintf(key, sizeof(key), "tx:%s", cJSON_IsString(nm) ?
			    nm->valuestring : "?");
			pr = prev_of(rows, nrows, key);
			printf("%-*.*s %10.0f %9.1f %14.0f %8.0f %10.0f %12.0f "
			    "%8.0f %8.0f %8.0f\n", w, w, key + 3,
			    rate(pk, pr, offsetof(struct top_row, in), dt),
			    rate(by, pr, offsetof(struct top_row, bytes), dt) *
			    8 / 1e6, pk, num_at(q, "drops.too_big"),
			    num_at(q, "drops.bad_buffer"),
			    num_at(q, "drops.engine_error"),
			    num_at(q, "drops.closed"),
			    num_at(q, "drops.no_peer"),
			    num_at(q, "channels_open"));
			if (*n < CTL_TOP_MAX_ROWS) {
				snprintf(cur[*n].name, sizeof(cur[*n].name), "%s",
				    key);
				cur[*n].in = pk;
				cur[*n].bytes = by;
				cur[(*n)++].pub = 0;
			}
			top_draw_tx_channels(q, key + 3, rows, nrows, cur, n,
			    w, dt);
		}
}

static void
top_draw(const cJSON *st, const cJSON *streams, struct top_row *rows,
	 int *nrows, double dt, bool tty)
{
	struct top_row cur[CTL_TOP_MAX_ROWS];
	const struct top_row *pr;
	const cJSON *a, *e, *nm, *q;
	char tbuf[32];
	time_t now = time(NULL);
	int n = 0, w;

	/* The name column fits the longest name (within reason). */
	w = 9;
	a = cJSON_GetObjectItemCaseSensitive(st, "streams");
	cJSON_ArrayForEach(e, a) {
		nm = cJSON_GetObjectItemCaseSensitive(e, "name");
		if (cJSON_IsString(nm) && (int)strlen(nm->valuestring) > w)
			w = (int)strlen(nm->valuestring);
	}
	if (w > CTL_TOP_NAME_MAX)
		w = CTL_TOP_NAME_MAX;
	strftime(tbuf, sizeof(tbuf), "%H:%M:%S", localtime(&now));
	if (tty)
		fputs("\033[H\033[2J", stdout);
	else
		puts("----");
	printf("daqiri top  %s%s\n", tbuf, tty ? "  (q quits)" : "");
	printf("/s: per second since the last refresh%s; other columns: "
	    "totals since daqirid started\n\n", dt > 0 ? "" :
	    " (0 until the second one)");
	/* drop columns are named by their reason (daqirid(8)) */
	printf("%-*s %12s %14s %14s %10s %10s\n", w, "INTERFACE", "RX/s",
	    "BYTES/s", "RX", "UNMATCHED", "KERNEL");
	a = cJSON_GetObjectItemCaseSensitive(st, "interfaces");
	cJSON_ArrayForEach(e, a) {
		char key[CTL_NAME_MAX + 4];
		double rx = num_at(e, "rx_packets"), bytes = 0;

		cJSON_ArrayForEach(q, cJSON_GetObjectItemCaseSensitive(e,
		    "queues"))
			bytes += num_at(q, "rx_bytes");
		nm = cJSON_GetObjectItemCaseSensitive(e, "name");
		snprintf(key, sizeof(key), "if:%s", cJSON_IsString(nm) ?
		    nm->valuestring : "?");
		pr = prev_of(rows, *nrows, key);
		printf("%-*.*s %12.0f %14.0f %14.0f %10.0f %10.0f\n", w, w,
		    key + 3, rate(rx, pr, offsetof(struct top_row, in), dt),
		    rate(bytes, pr, offsetof(struct top_row, bytes), dt), rx,
		    num_at(e, "unmatched"), num_at(e, "kernel"));
		if (n < CTL_TOP_MAX_ROWS) {
			snprintf(cur[n].name, sizeof(cur[n].name), "%s", key);
			cur[n].in = rx;
			cur[n].bytes = bytes;
			cur[n++].pub = 0;
		}
	}
	top_draw_tx(st, rows, *nrows, cur, &n, w, dt);
	printf("\n%-*s %10s %9s %9s %9s %8s %8s %9s %5s %9s %9s %9s\n", w,
	    "STREAM", "PKTS/s", "TENSORS/s", "CONSUMERS", "COMPLETE", "TIMEOUT",
	    "EVICTED", "DUPLICATE", "LATE", "MALFORMED", "NO_BUFFER",
	    "OVERRUNS");
	a = cJSON_GetObjectItemCaseSensitive(st, "streams");
	cJSON_ArrayForEach(e, a) {
		const char *name;
		double in = num_at(e, "reorder.packets_in") +
		    num_at(e, "raw.packets_in");
		double pub = num_at(e, "handoff.published"), subs;

		nm = cJSON_GetObjectItemCaseSensitive(e, "name");
		name = cJSON_IsString(nm) ? nm->valuestring : "?";
		pr = prev_of(rows, *nrows, name);
		subs = subscribers_of(streams, name);
		printf("%-*.*s %10.0f %9.1f ", w, w, name,
		    rate(in, pr, offsetof(struct top_row, in), dt),
		    rate(pub, pr, offsetof(struct top_row, pub), dt));
		if (subs < 0)
			printf("%9s", "-");
		else
			printf("%9.0f", subs);
		printf(" %9.0f %8.0f %8.0f %9.0f %5.0f %9.0f %9.0f %9.0f\n",
		    num_at(e, "reorder.batches_complete"),
		    num_at(e, "reorder.batches_timeout"),
		    num_at(e, "reorder.batches_evicted"),
		    num_at(e, "reorder.duplicate"), num_at(e, "reorder.late"),
		    num_at(e, "reorder.malformed"),
		    num_at(e, "reorder.no_buffer") +
		    num_at(e, "raw.no_buffer"),
		    num_at(e, "handoff.overruns"));
		if (n < CTL_TOP_MAX_ROWS) {
			snprintf(cur[n].name, sizeof(cur[n].name), "%s", name);
			cur[n].in = in;
			cur[n].bytes = 0;
			cur[n++].pub = pub;
		}
	}
	/* Quantiles since daqirid started, each the upper bound of the
	 * bucket it falls in: assembly (first packet to publish) and hold
	 * (publish to release, all the stream's subscriptions). */
	printf("\n%-*s %12s %12s %9s %9s\n", w, "LATENCY", "ASSEMBLY_P50",
	    "ASSEMBLY_P99", "HOLD_P50", "HOLD_P99");
	cJSON_ArrayForEach(e, a) {
		const cJSON *asm_h = cJSON_GetObjectItemCaseSensitive(e,
		    "assembly_ns");
		const cJSON *hold_h = cJSON_GetObjectItemCaseSensitive(e,
		    "hold_ns");
		char pq[4][32];

		nm = cJSON_GetObjectItemCaseSensitive(e, "name");
		printf("%-*.*s %12s %12s %9s %9s\n", w, w,
		    cJSON_IsString(nm) ? nm->valuestring : "?",
		    hist_quantile_text(asm_h, 500, pq[0], sizeof(pq[0])),
		    hist_quantile_text(asm_h, 990, pq[1], sizeof(pq[1])),
		    hist_quantile_text(hold_h, 500, pq[2], sizeof(pq[2])),
		    hist_quantile_text(hold_h, 990, pq[3], sizeof(pq[3])));
	}
	memcpy(rows, cur, sizeof(cur[0]) * (size_t)n);
	*nrows = n;
	fflush(stdout);
}

static int
cmd_top(struct ctl *c, int argc, char **argv)
{
	struct top_row rows[CTL_TOP_MAX_ROWS];
	struct termios saved, raw;
	struct sigaction sa;
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	struct timespec t0, t1;
	bool tty_in = isatty(STDIN_FILENO), tty_out = isatty(STDOUT_FILENO);
	long count = 0, i;
	int nrows = 0, r = 0;
	double dt = 0;
	char ch;
	cJSON *o, *sl;

	if (argc > 0) {
		char *end;

		count = strtol(argv[0], &end, 10);
		if (*end != '\0' || count < 0) {
			fprintf(stderr, "daqirictl: top: COUNT must be a "
			    "number of refreshes (0: until q or Ctrl-C); got "
			    "'%s'\n", argv[0]);
			return 2;
		}
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (tty_in && tcgetattr(STDIN_FILENO, &saved) == 0) {
		raw = saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	} else {
		tty_in = false;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; !top_stop && (count == 0 || i < count); i++) {
		o = NULL;
		sl = NULL;
		r = request(c, new_req("stats"), "top", &o);
		if (r == 0 && (r = request(c, new_req("streams"), "top",
		    &sl)) != 0)
			cJSON_Delete(o);
		if (r != 0)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		dt = (double)(t1.tv_sec - t0.tv_sec) +
		    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
		t0 = t1;
		top_draw(o, sl, rows, &nrows, i == 0 ? 0 : dt, tty_out);
		cJSON_Delete(o);
		cJSON_Delete(sl);
		if (count != 0 && i + 1 == count)
			break;
		if (poll(&p, tty_in ? 1 : 0, CTL_TOP_INTERVAL_MS) > 0 &&
		    read(STDIN_FILENO, &ch, 1) == 1 && (ch == 'q' || ch == 'Q'))
			break;
	}
	if (tty_in)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	return r;
}

/* Why nargs words do not fit cmd, then its usage line. */
static void
bad_args(const struct command *cmd, int nargs, char **args)
{
	if (cmd->max_args == 0)
		fprintf(stderr, "daqirictl: %s takes no arguments; got '%s'\n",
		    cmd->name, args[0]);
	else if (nargs > cmd->max_args)
		fprintf(stderr, "daqirictl: %s takes at most %d argument%s; "
		    "'%s' is one too many\n", cmd->name, cmd->max_args,
		    cmd->max_args == 1 ? "" : "s", args[cmd->max_args]);
	else
		fprintf(stderr, "daqirictl: %s needs %s%d argument%s, got %d\n",
		    cmd->name, cmd->min_args < cmd->max_args ? "at least " : "",
		    cmd->min_args, cmd->min_args == 1 ? "" : "s", nargs);
	fprintf(stderr, "usage: daqirictl [-s SOCKET] [-j | -t] %s%s%s\n",
	    cmd->name, cmd->args[0] ? " " : "", cmd->args);
}

int
main(int argc, char **argv)
{
	const char *sock = NULL;
	struct ctl c = { .d = NULL };
	const struct command *cmd;
	int ch, used = 0, r, nargs;
	bool table = isatty(STDOUT_FILENO);

	static const struct option lo[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "table", no_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};

	opterr = 0;		/* our own words for a bad option */
	while ((ch = getopt_long(argc, argv, "+:s:jthV", lo, NULL)) != -1) {
		switch (ch) {
		case 's':
			sock = optarg;
			break;
		case 'j':
			c.json = true;
			break;
		case 't':
			table = true;
			break;
		case 'h':
			usage(stdout, 0);
		case 'V':
			printf("daqirictl %s\n", DAQIRI_VERSION);
			return 0;
		case ':':
			fprintf(stderr, "daqirictl: option '%s' needs an "
			    "argument (daqirictl --help lists the options)\n",
			    argv[optind - 1]);
			return 2;
		default:
			if (optopt != 0)
				fprintf(stderr, "daqirictl: unknown option "
				    "'-%c' (daqirictl --help lists the "
				    "options)\n", optopt);
			else
				fprintf(stderr, "daqirictl: unknown option "
				    "'%s' (daqirictl --help lists the "
				    "options)\n", argv[optind - 1]);
			return 2;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage(stderr, 2);
	cmd = find_command(argc, argv, &used);
	if (cmd == NULL)
		return 2;
	nargs = argc - used;
	if (nargs < cmd->min_args || nargs > cmd->max_args) {
		bad_args(cmd, nargs, argv + used);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	c.sock = sock;
	c.table = table;
	current = cmd;
	r = cmd->handler(&c, nargs, argv + used);
	daqiri_disconnect(c.d);
	return r;
}
