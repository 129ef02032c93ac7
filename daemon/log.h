/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's one logging API (OpenBSD log.c style): stderr, one line per
 * message with a syslog priority prefix the journal understands. log_warn
 * and fatal append strerror(errno); the x variants do not. errno is kept.
 */
#ifndef DAQIRI_LOG_H
#define DAQIRI_LOG_H

#include <stdarg.h>
#include <stddef.h>

#include "config.h"

/* Messages above this level are dropped (default CFG_LOG_WARN ... set from
 * the config or -l). */
void log_init(enum cfg_log_level level, int use_prefix);
void log_set_level(enum cfg_log_level level);
enum cfg_log_level log_get_level(void);
/* Parse a level name ("info"); -1 when unknown. */
int log_level_parse(const char *name);

void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Shown at the default level (warn) and below, with priority notice (5):
 * the rare events an operator wants to see, such as the start-up line. */
void log_notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Format a message into a caller's error buffer (err NULL or errlen 0:
 * nothing), for functions that report rather than log. */
void log_seterr(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

void fatal(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

#endif
