/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The loader's entry points: bytes (or a file) to a YAML document, and
 * the document to the schema walk. Refuses what is not YAML text (binary
 * bytes, runaway bracket nesting) before libyaml sees it, and a second
 * document after it. Pure: it never exits, prints or logs.
 *
 * cfg_load_within() reads the file on a thread of its own and waits for
 * it a bounded time (a reload on the main loop: a file on a hung mount
 * must not stop the daemon), the only thread here.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cfg_internal.h"
#include "desc.h"		/* daqiri_mono_ns() */

/* Room for why a file could not be read (one diagnostic). */
#define READ_WHY_MAX	256

/*
 * Offset of the first byte that makes text no YAML text file: a NUL, a
 * C0 control other than tab, LF and CR, or invalid UTF-8. len = none.
 */
static size_t
binary_offset(const unsigned char *s, size_t len, const char **why)
{
	size_t i = 0;

	while (i < len) {
		unsigned char ch = s[i];
		uint32_t cp;
		size_t n, k;

		if (ch < 0x80) {
			if (ch == 0) {
				*why = "a NUL byte";
				return i;
			}
			if (ch < 0x20 && ch != '\t' && ch != '\n' &&
			    ch != '\r') {
				*why = "a control character";
				return i;
			}
			i++;
			continue;
		}
		if (ch >= 0xc2 && ch <= 0xdf) {
			n = 1;
			cp = ch & 0x1f;
		} else if (ch >= 0xe0 && ch <= 0xef) {
			n = 2;
			cp = ch & 0x0f;
		} else if (ch >= 0xf0 && ch <= 0xf4) {
			n = 3;
			cp = ch & 0x07;
		} else {
			*why = "invalid UTF-8";
			return i;
		}
		if (i + n >= len) {
			*why = "invalid UTF-8";
			return i;
		}
		for (k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80) {
				*why = "invalid UTF-8";
				return i;
			}
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
			*why = "invalid UTF-8";
			return i;
		}
		i += n + 1;
	}
	return len;
}

/*
 * libyaml's scanner costs O(depth) per token in nested flow collections,
 * so "[[[[..." would take quadratic time. No config nests deeper than a
 * few levels: find where brackets (counted anywhere, quoted or not, which
 * only overestimates) first go deeper than the limit; len = nowhere.
 */
static size_t
flow_depth_offset(const char *s, size_t len)
{
	int depth = 0;

	for (size_t i = 0; i < len; i++) {
		if (s[i] == '[' || s[i] == '{') {
			if (++depth > CFG_FLOW_DEPTH_MAX)
				return i;
		} else if ((s[i] == ']' || s[i] == '}') && depth > 0) {
			depth--;
		}
	}
	return len;
}

/* Empty d for a new parse, with the --compat report c (or none). */
static void
cfg_diags_reset(struct cfg_diags *d, struct cfg_compat *c)
{
	memset(d, 0, sizeof(*d));
	d->compat = c;
	if (c != NULL)
		c->n = c->more = 0;
}

static int
parse(const char *text, size_t len, const char *file, struct cfg *out,
      struct cfg_diags *d, struct cfg_compat *compat)
{
	static const struct cfg_pos whole = { 0, 0 };
	yaml_parser_t parser;
	yaml_document_t doc, extra;
	yaml_node_t *root;
	struct pctx x;
	const char *why = NULL;
	size_t bad;

	cfg_diags_reset(d, compat);
	snprintf(d->file, sizeof(d->file), "%s", file != NULL ? file :
		 "<config>");
	cfg_defaults(out);
	if (len == 0) {
		diag_add(d, CFG_SEV_ERROR, whole, "file is empty");
		return -1;
	}
	bad = binary_offset((const unsigned char *)text, len, &why);
	if (bad < len) {
		diag_add(d, CFG_SEV_ERROR, whole, "not a text file (%s at "
			 "offset %zu)", why, bad);
		return -1;
	}
	bad = flow_depth_offset(text, len);
	if (bad < len) {
		struct cfg_pos p = { 1, 1 };

		for (size_t i = 0; i < bad; i++) {
			if (text[i] == '\n') {
				p.line++;
				p.col = 1;
			} else if (((unsigned char)text[i] & 0xc0) != 0x80) {
				p.col++;
			}
		}
		diag_add(d, CFG_SEV_ERROR, p, "brackets nested more than %d "
			 "levels deep", CFG_FLOW_DEPTH_MAX);
		return -1;
	}
	if (!yaml_parser_initialize(&parser)) {
		diag_add(d, CFG_SEV_ERROR, whole, "out of memory");
		return -1;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text,
				     len);
	if (!yaml_parser_load(&parser, &doc)) {
		struct cfg_pos p = {
			(int)parser.problem_mark.line + 1,
			(int)parser.problem_mark.column + 1,
		};

		if (parser.error == YAML_MEMORY_ERROR)
			diag_add(d, CFG_SEV_ERROR, whole, "out of memory");
		else if (parser.context != NULL)
			diag_add(d, CFG_SEV_ERROR, p, "YAML syntax error: %s "
				 "%s", parser.problem ? parser.problem : "?",
				 parser.context);
		else
			diag_add(d, CFG_SEV_ERROR, p, "YAML syntax error: %s",
				 parser.problem ? parser.problem : "?");
		yaml_parser_delete(&parser);
		return -1;
	}
	root = yaml_document_get_root_node(&doc);
	if (root == NULL) {
		diag_add(d, CFG_SEV_ERROR, whole, "no YAML document in the file "
			 "(only comments or blank lines)");
	} else {
		memset(&x, 0, sizeof(x));
		x.doc = &doc;
		x.c = out;
		x.d = d;
		cfg_parse_root(&x, root);
		if (!yaml_parser_load(&parser, &extra)) {
			struct cfg_pos p = {
				(int)parser.problem_mark.line + 1,
				(int)parser.problem_mark.column + 1,
			};

			diag_add(d, CFG_SEV_ERROR, p, "YAML syntax error: %s",
				 parser.problem ? parser.problem : "?");
		} else {
			yaml_node_t *r2 = yaml_document_get_root_node(&extra);

			if (r2 != NULL)
				diag_add(d, CFG_SEV_ERROR, pos_of(r2), "a second "
					 "YAML document; a config file holds "
					 "one");
			yaml_document_delete(&extra);
		}
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	cfg_diag_sort(d);
	cfg_compat_finish(d);
	return d->nerrors > 0 ? -1 : 0;
}

int
cfg_parse(const char *text, size_t len, const char *file, struct cfg *out,
	  struct cfg_diags *d)
{
	return parse(text, len, file, out, d, NULL);
}

int
cfg_parse_compat(const char *text, size_t len, const char *file,
		 struct cfg *out, struct cfg_diags *d, struct cfg_compat *compat)
{
	return parse(text, len, file, out, d, compat);
}

/* What st is, for a refusal. */
static const char *
file_kind(const struct stat *st)
{
	return S_ISDIR(st->st_mode) ? "a directory" :
	    S_ISFIFO(st->st_mode) ? "a FIFO" :
	    S_ISSOCK(st->st_mode) ? "a socket" :
	    S_ISCHR(st->st_mode) ? "a character device" :
	    S_ISBLK(st->st_mode) ? "a block device" : "of an unknown type";
}

/* Read file whole into *bufp (CFG_FILE_MAX + 1 bytes, *lenp of them
 * used): 0, or -1 with why ("cannot read: ..."). Never blocks on a FIFO
 * or a device; a file on a hung mount can block it (cfg_load_within()). */
static int
read_file(const char *file, char **bufp, size_t *lenp, char *why, size_t wl)
{
	struct stat st = { .st_mode = 0 };
	char *buf;
	size_t len = 0;
	ssize_t n;
	int fd;

	*bufp = NULL;
	/* Never blocking: a FIFO or a device would hold whoever loads
	 * (the main loop, on a reload) until someone writes to it. */
	fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		snprintf(why, wl, "cannot read: %s", strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(why, wl, "cannot read: %s, not a regular file (a "
		    "configuration is read from a file only)", file_kind(&st));
		close(fd);
		return -1;
	}
	buf = malloc(CFG_FILE_MAX + 1);
	if (buf == NULL) {
		close(fd);
		snprintf(why, wl, "out of memory");
		return -1;
	}
	/* read at most one byte past the limit: a device never ends */
	while (len <= CFG_FILE_MAX) {
		n = read(fd, buf + len, CFG_FILE_MAX + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(why, wl, "cannot read: %s", strerror(errno));
			free(buf);
			close(fd);
			return -1;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (len > CFG_FILE_MAX) {
		snprintf(why, wl, "file too large (more than %u bytes)",
		    CFG_FILE_MAX);
		free(buf);
		return -1;
	}
	*bufp = buf;
	*lenp = len;
	return 0;
}

/* Parse what read_file() read (or report why it could not). */
static int
parse_read(const char *file, int rc, char *buf, size_t len, const char *why,
	   struct cfg *out, struct cfg_diags *d, struct cfg_compat *compat)
{
	static const struct cfg_pos whole = { 0, 0 };

	cfg_diags_reset(d, compat);
	snprintf(d->file, sizeof(d->file), "%s", file);
	cfg_defaults(out);
	if (rc != 0) {
		diag_add(d, CFG_SEV_ERROR, whole, "%s", why);
		return -1;
	}
	rc = parse(buf, len, file, out, d, compat);
	return rc;
}

static int
load(const char *file, struct cfg *out, struct cfg_diags *d,
     struct cfg_compat *compat)
{
	char why[READ_WHY_MAX], *buf;
	size_t len = 0;
	int rc;

	rc = read_file(file, &buf, &len, why, sizeof(why));
	rc = parse_read(file, rc, buf, len, why, out, d, compat);
	free(buf);
	return rc;
}

/*
 * A read on a thread of its own. Two hold it, the thread and the loader
 * (refs): whoever lets go last frees it. The loader lets go when the
 * read came back, or when it gives up waiting; then `hung` keeps a hold
 * of it until it comes back (main thread only, like every loader call).
 */
struct cfg_read {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	bool done;
	_Atomic int refs;
	uint64_t start_ns;
	char hang[CFG_PATH_MAX];	/* test only: CFG_READ_HANG_ENV */
	char file[CFG_PATH_MAX];
	char *buf;
	size_t len;
	int rc;
	char why[READ_WHY_MAX];
};
static struct cfg_read *hung;

static void
read_put(struct cfg_read *r)
{
	if (atomic_fetch_sub(&r->refs, 1) != 1)
		return;
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cv);
	free(r->buf);
	free(r);
}

static void *
reader(void *arg)
{
	struct cfg_read *r = arg;
	char *buf = NULL, why[READ_WHY_MAX];
	size_t len = 0;
	int rc;

	/* test only: a read that hangs while that file exists */
	while (r->hang[0] != '\0' && access(r->hang, F_OK) == 0) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	rc = read_file(r->file, &buf, &len, why, sizeof(why));
	pthread_mutex_lock(&r->lock);
	r->buf = buf;
	r->len = len;
	r->rc = rc;
	memcpy(r->why, why, sizeof(why));
	r->done = true;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->lock);
	read_put(r);
	return NULL;
}

/* Has the abandoned read come back? Then it is let go. */
static bool
still_hung(void)
{
	bool done;

	if (hung == NULL)
		return false;
	pthread_mutex_lock(&hung->lock);
	done = hung->done;
	pthread_mutex_unlock(&hung->lock);
	if (!done)
		return true;
	read_put(hung);
	hung = NULL;
	return false;
}

int
cfg_load_within(const char *file, unsigned timeout_ms, struct cfg *out,
		struct cfg_diags *d)
{
	struct cfg_read *r;
	struct timespec until;
	pthread_attr_t attr;
	pthread_t thr;
	const char *hang_file = getenv(CFG_READ_HANG_ENV);
	char why[READ_WHY_MAX];
	int rc, w = 0;

	if (still_hung()) {
		snprintf(why, sizeof(why), "cannot read: the read of '%.*s' "
		    "begun %llu s ago has not returned (a hung mount?); no "
		    "file is read until it does", (int)(sizeof(why) / 2),
		    hung->file, (unsigned long long)((daqiri_mono_ns() -
		    hung->start_ns) / 1000000000u));
		return parse_read(file, -1, NULL, 0, why, out, d, NULL);
	}
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return parse_read(file, -1, NULL, 0, "out of memory", out, d,
		    NULL);
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cv, NULL);
	atomic_init(&r->refs, 2);
	r->start_ns = daqiri_mono_ns();
	snprintf(r->hang, sizeof(r->hang), "%s", hang_file != NULL ?
	    hang_file : "");
	snprintf(r->file, sizeof(r->file), "%s", file);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&thr, &attr, reader, r);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		/* no thread: read here, as cfg_load() does */
		atomic_store(&r->refs, 1);
		read_put(r);
		return cfg_load(file, out, d);
	}
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)(timeout_ms / 1000);
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&r->lock);
	while (!r->done && w != ETIMEDOUT)
		w = pthread_cond_timedwait(&r->cv, &r->lock, &until);
	pthread_mutex_unlock(&r->lock);
	if (!r->done) {
		/* its hold passes to hung */
		hung = r;
		snprintf(why, sizeof(why), "cannot read: no answer within %u "
		    "ms (a hung mount?); the running configuration stays, and "
		    "no file is read until that read returns", timeout_ms);
		return parse_read(file, -1, NULL, 0, why, out, d, NULL);
	}
	rc = parse_read(file, r->rc, r->buf, r->len, r->why, out, d, NULL);
	read_put(r);
	return rc;
}

int
cfg_load(const char *file, struct cfg *out, struct cfg_diags *d)
{
	return load(file, out, d, NULL);
}

int
cfg_load_compat(const char *file, struct cfg *out, struct cfg_diags *d,
		struct cfg_compat *compat)
{
	return load(file, out, d, compat);
}
