/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Between daqirictl.c (the command table and the commands) and the
 * commands kept in files of their own: daqirictl_send.c,
 * daqirictl_learn.c.
 */
#ifndef DAQIRI_DAQIRICTL_H
#define DAQIRI_DAQIRICTL_H

#include <stdbool.h>

#include "daqiri_client.h"

/* "daqirictl send"'s arguments, for the command table and its errors. */
#define DAQIRICTL_SEND_USAGE	"[--hex | --raw] [--count] IFACE/TXQ FILE|-"

/* daqirictl send ARGS (argv after "send"): the exit status. *d is the
 * connection, made on the first use and kept for the caller. */
int daqirictl_send(const char *sock, bool json, struct daqiri **d, int argc,
		   char **argv);

/* "daqirictl learn"'s arguments. */
#define DAQIRICTL_LEARN_USAGE	"[--count N] [--seconds S] IFACE/QUEUE"

/* daqirictl learn ARGS (argv after "learn"), as daqirictl_send(). */
int daqirictl_learn(const char *sock, bool json, struct daqiri **d, int argc,
		    char **argv);

#endif
