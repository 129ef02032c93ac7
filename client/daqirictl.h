/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Between daqirictl.c (the command table and the commands) and the
 * commands kept in files of their own: daqirictl_send.c,
 * daqirictl_learn.c, daqirictl_capture.c (capture and trigger).
 */
#ifndef DAQIRI_DAQIRICTL_H
#define DAQIRI_DAQIRICTL_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "daqiri_client.h"

/* "daqirictl send"'s arguments, for the command table and its errors. */
#define DAQIRICTL_SEND_USAGE	"[--hex | --raw] [--count] IFACE/TXQ FILE|-"

/* daqirictl send ARGS (argv after "send"): the exit status. *d is the
 * connection, made on the first use and kept for the caller. */
int daqirictl_send(const char *sock, bool json, struct daqiri **d, int argc,
		   char **argv);

/* Decode the hex text p[0 .. *len) in place (blanks between bytes are
 * allowed; daqirictl_send.c): 0 with the bytes' count in *len, or -1
 * with the offending column in *len. */
int daqirictl_hex_decode(char *p, size_t *len);

/* One request to d (req is consumed, NULL: out of memory): 0 with the
 * reply (status ok) in *out, else -1 and "daqirictl: CMD: WHAT: the
 * daemon's message" on stderr (daqirictl_learn.c). */
int daqirictl_call(struct daqiri *d, cJSON *req, const char *cmd,
		   const char *what, cJSON **out);

/* "daqirictl learn"'s arguments. */
#define DAQIRICTL_LEARN_USAGE	"[--count N] [--seconds S] IFACE/QUEUE"

/* daqirictl learn ARGS (argv after "learn"), as daqirictl_send(). */
int daqirictl_learn(const char *sock, bool json, struct daqiri **d, int argc,
		    char **argv);

/* "daqirictl capture"'s arguments. */
#define DAQIRICTL_CAPTURE_USAGE \
	"[--count N] [--seconds S] [--snap B] [--force] IFACE/QUEUE FILE"

/* daqirictl capture ARGS (argv after "capture"), as daqirictl_send(). */
int daqirictl_capture(const char *sock, struct daqiri **d, int argc,
		      char **argv);

/* daqirictl trigger STREAM (daqirictl_capture.c), as daqirictl_send(). */
int daqirictl_trigger(const char *sock, bool json, struct daqiri **d,
		      const char *stream);

#endif
