/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The loader's entry points: bytes (or a file) to a YAML document, and
 * the document to the schema walk. Refuses what is not YAML text (binary
 * bytes, runaway bracket nesting) before libyaml sees it, and a second
 * document after it. Pure: it never exits, prints or logs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfg_internal.h"

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

static int
load(const char *file, struct cfg *out, struct cfg_diags *d,
     struct cfg_compat *compat)
{
	static const struct cfg_pos whole = { 0, 0 };
	struct stat st = { .st_mode = 0 };
	char *buf;
	size_t len = 0;
	ssize_t n;
	int fd, rc;

	cfg_diags_reset(d, compat);
	snprintf(d->file, sizeof(d->file), "%s", file);
	cfg_defaults(out);
	/* Never blocking: a FIFO or a device would hold whoever loads
	 * (the main loop, on a reload) until someone writes to it. */
	fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		diag_add(d, CFG_SEV_ERROR, whole, "cannot read: %s",
			 strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		diag_add(d, CFG_SEV_ERROR, whole, "cannot read: %s, not a "
			 "regular file (a configuration is read from a file "
			 "only)", file_kind(&st));
		close(fd);
		return -1;
	}
	buf = malloc(CFG_FILE_MAX + 1);
	if (buf == NULL) {
		close(fd);
		diag_add(d, CFG_SEV_ERROR, whole, "out of memory");
		return -1;
	}
	/* read at most one byte past the limit: a device never ends */
	while (len <= CFG_FILE_MAX) {
		n = read(fd, buf + len, CFG_FILE_MAX + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			diag_add(d, CFG_SEV_ERROR, whole, "cannot read: %s",
				 strerror(errno));
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
		diag_add(d, CFG_SEV_ERROR, whole, "file too large (more than "
			 "%u bytes)", CFG_FILE_MAX);
		free(buf);
		return -1;
	}
	rc = parse(buf, len, file, out, d, compat);
	free(buf);
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
