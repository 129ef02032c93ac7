/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The running daemon: module bring-up in order, the main epoll loop
 * (control socket, signalfd, timerfd), and teardown in reverse.
 */
#ifndef DAQIRI_DAEMON_H
#define DAQIRI_DAEMON_H

#include <signal.h>

#include "config.h"

/* Main-loop tick: reaping subscriptions, watchdog, status. */
#define DAEMON_TICK_MS		100
/* Without a systemd watchdog, a worker heartbeat older than this shows
 * as stale in status (with one, half the watchdog interval). */
#define DAEMON_STALE_NS		(1000ull * 1000 * 1000)
/* ... and never less than this: workers wake every quarter of it. */
#define DAEMON_STALE_MIN_NS	(4ull * 1000 * 1000)

/*
 * The signals the main loop takes through its signalfd (TERM, INT, HUP).
 * main() blocks them before anything can start a thread, so every thread
 * inherits the mask and none can take the default action on them.
 */
void daemon_signals(sigset_t *set);

/*
 * Run the daemon on validated config c with its control socket at
 * socket_path until SIGTERM or SIGINT. config_file is reported and
 * re-read by a reload (SIGHUP, daqirictl reload; NULL = the built-in
 * default); c is the running config from then on, rewritten by each
 * applied reload. level is -l's log level, which outlasts reloads, or -1
 * for the config's. replay, when not NULL, runs every interface on the
 * replay engine (engine_replay.h: daqirid --replay) instead of its own.
 * Returns the process exit status: 0 after an orderly stop, 1 when
 * start-up failed (the reason is logged).
 */
struct replay_cfg;
int daemon_run(struct cfg *c, const char *socket_path,
	       const char *config_file, int level,
	       const struct replay_cfg *replay);

#endif
