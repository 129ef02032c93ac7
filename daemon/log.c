/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Logging to stderr with sd-daemon priority prefixes ("<4>") when running
 * under systemd, plain "daqirid: " otherwise. Never called per packet.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"

/* A reload changes it on the main thread while workers may log. */
static _Atomic int log_level = CFG_LOG_WARN;
static int log_prefix;

static const char *const level_names[CFG_LOG_MAX] = {
	"trace", "debug", "info", "warn", "error", "critical", "off",
};

void
log_init(enum cfg_log_level level, int use_prefix)
{
	log_level = level;
	log_prefix = use_prefix;
}

void
log_set_level(enum cfg_log_level level)
{
	atomic_store_explicit(&log_level, level, memory_order_relaxed);
}

enum cfg_log_level
log_get_level(void)
{
	return (enum cfg_log_level)atomic_load_explicit(&log_level,
	    memory_order_relaxed);
}

int
log_level_parse(const char *name)
{
	for (int i = 0; i < CFG_LOG_MAX; i++)
		if (strcasecmp(name, level_names[i]) == 0)
			return i;
	return -1;
}

static void
vlog(enum cfg_log_level lvl, int sd_prio, const char *fmt, va_list ap,
     int with_errno, int saved_errno)
{
	enum cfg_log_level now = log_get_level();
	char buf[1024];

	if (lvl < now || now == CFG_LOG_OFF)
		return;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	if (log_prefix)
		fprintf(stderr, "<%d>", sd_prio);
	else
		fputs("daqirid: ", stderr);
	if (with_errno)
		fprintf(stderr, "%s: %s\n", buf, strerror(saved_errno));
	else
		fprintf(stderr, "%s\n", buf);
}

#define LOGFN(fn, lvl, prio, witherr)				\
	void fn(const char *fmt, ...)				\
	{							\
		int saved = errno;				\
		va_list ap;					\
		va_start(ap, fmt);				\
		vlog(lvl, prio, fmt, ap, witherr, saved);	\
		va_end(ap);					\
		errno = saved;					\
	}

LOGFN(log_warn, CFG_LOG_WARN, 4, 1)
LOGFN(log_warnx, CFG_LOG_WARN, 4, 0)
/* notice: a once-per-run event an operator wants at the default level */
LOGFN(log_notice, CFG_LOG_WARN, 5, 0)
LOGFN(log_info, CFG_LOG_INFO, 6, 0)
LOGFN(log_debug, CFG_LOG_DEBUG, 7, 0)

void
log_seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	vlog(CFG_LOG_CRITICAL, 2, fmt, ap, 1, saved);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(CFG_LOG_CRITICAL, 2, fmt, ap, 0, 0);
	va_end(ap);
	exit(1);
}
