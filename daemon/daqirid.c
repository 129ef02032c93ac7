/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daqirid: the acquisition daemon. Parses options and the configuration,
 * then hands over to daemon_run() (daemon.c), which brings the modules up
 * in order, runs the main loop and takes them down in reverse.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "daemon.h"
#include "engine.h"
#include "engine_replay.h"
#include "log.h"

#define DAQIRID_DEFAULT_CONFIG	CFG_DEFAULT_FILE

static void
usage(FILE *fp)
{
	fprintf(fp,
	    "usage: daqirid [-c FILE] [-n [-v | --compat]] [-s SOCKET] [-l LEVEL]\n"
	    "               [--replay IFACE/QUEUE=FILE.pcap ... [--replay-speed X]\n"
	    "               [--replay-hold]]\n"
	    "       daqirid -h | --help | -V | --version\n"
	    "  -c FILE        configuration (default " DAQIRID_DEFAULT_CONFIG ",\n"
	    "                 or the built-in default when that file does not\n"
	    "                 exist)\n"
	    "  -n             check the configuration and exit\n"
	    "  -v             with -n: print the normalised configuration\n"
	    "  --compat       with -n: what daqiri makes of each key of a\n"
	    "                 configuration written for NVIDIA's DAQIRI\n"
	    "  -s SOCKET      control socket path (overrides\n"
	    "                 daemon.control_socket)\n"
	    "  -l LEVEL       log level: trace debug info warn error critical off\n"
	    "  --replay IFACE/QUEUE=FILE.pcap\n"
	    "                 receive that rx queue's frames from a pcap capture,\n"
	    "                 on the capture's clock (repeat: one file per queue;\n"
	    "                 every interface then runs on the replay engine)\n"
	    "  --replay-speed X\n"
	    "                 replay at X times real time (default max: as fast\n"
	    "                 as the consumers take it)\n"
	    "  --replay-hold  begin only at 'daqirictl replay start'\n"
	    "  -h, --help     print this help and exit\n"
	    "  -V, --version  print the version and exit\n");
}

struct options {
	const char *config;
	const char *socket;
	int level;			/* -1 = from the config */
	int check_only;
	int verbose;
	int compat;
	bool replay_opts;		/* --replay-speed or --replay-hold */
};

/* Test only (daqirid(8) DAQIRID_TEST_START_FIFO): start-up waits here,
 * signals blocked, until the FIFO named is opened for writing and closed,
 * so a test can signal daqirid at a moment it knows. */
static void
test_start_pause(void)
{
	const char *p = getenv("DAQIRID_TEST_START_FIFO");
	char b[64];
	int fd;

	if (p == NULL || p[0] == '\0' ||
	    (fd = open(p, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	while (read(fd, b, sizeof(b)) > 0)
		;
	close(fd);
}

/*
 * Read -c FILE, else DAQIRID_DEFAULT_CONFIG when it exists, else the
 * built-in default. *used is the file read, as named in diagnostics, or
 * NULL for the built-in default; abs (PATH_MAX bytes) receives its
 * absolute path for status and the start-up line.
 */
static int
load_config(const struct options *o, struct cfg *c, struct cfg_diags *d,
	    const char **used, char *abs)
{
	static struct cfg_compat compat;
	struct cfg_compat *cp = o->compat ? &compat : NULL;
	int rc;

	*used = o->config;
	if (*used == NULL && access(DAQIRID_DEFAULT_CONFIG, F_OK) == 0)
		*used = DAQIRID_DEFAULT_CONFIG;
	if (*used != NULL)
		rc = cfg_load_compat(*used, c, d, cp);
	else
		rc = cfg_parse_compat(cfg_default_text, cfg_default_len,
				      "<built-in default>", c, d, cp);
	if (*used != NULL && realpath(*used, abs) == NULL)
		snprintf(abs, PATH_MAX, "%s", *used);
	cfg_diags_print(d, stderr);
	if (d->ndiags < d->nerrors + d->nwarnings)
		fprintf(stderr, "%s: %d more diagnostics not shown\n", d->file,
			d->nerrors + d->nwarnings - d->ndiags);
	return rc;
}


int
main(int argc, char **argv)
{
	static struct cfg cfg;
	static struct cfg_diags diags;
	static char abs_config[PATH_MAX];
	static struct replay_cfg replay;
	char rerr[512];
	struct options o = { .level = -1 };
	const char *used;
	sigset_t sigs;
	int ch;

	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "compat", no_argument, NULL, 'C' },
		{ "replay", required_argument, NULL, 'R' },
		{ "replay-speed", required_argument, NULL, 'X' },
		{ "replay-hold", no_argument, NULL, 'H' },
		{ NULL, 0, NULL, 0 },
	};

	opterr = 0;			/* ours, with the "daqirid: " prefix */
	while ((ch = getopt_long(argc, argv, ":c:nvs:l:hV", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'c':
			o.config = optarg;
			break;
		case 'C':
			o.compat = 1;
			break;
		case 'R':
			if (replay_cfg_add(&replay, optarg, rerr,
			    sizeof(rerr)) != 0) {
				fprintf(stderr, "daqirid: %s\n", rerr);
				return 1;
			}
			break;
		case 'X':
			if (replay_cfg_speed(&replay, optarg, rerr,
			    sizeof(rerr)) != 0) {
				fprintf(stderr, "daqirid: %s\n", rerr);
				return 1;
			}
			o.replay_opts = true;
			break;
		case 'H':
			replay.hold = true;
			o.replay_opts = true;
			break;
		case 'n':
			o.check_only = 1;
			break;
		case 'v':
			o.verbose = 1;
			break;
		case 's':
			o.socket = optarg;
			break;
		case 'l':
			o.level = log_level_parse(optarg);
			if (o.level < 0) {
				fprintf(stderr, "daqirid: unknown log level '%s'\n",
					optarg);
				usage(stderr);
				return 1;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("daqirid %s\n", DAQIRI_VERSION);
			return 0;
		case ':':
			if (optopt == 'R' || optopt == 'X')
				fprintf(stderr, "daqirid: %s needs an argument\n",
				    optopt == 'R' ? "--replay" : "--replay-speed");
			else
				fprintf(stderr, "daqirid: -%c needs an argument\n",
					optopt);
			usage(stderr);
			return 1;
		default:
			/* optopt 0: an unknown long option; h or V: --help
			 * or --version given an argument. Either way the
			 * whole word was taken. */
			if (optopt == 0 || optopt == 'h' || optopt == 'V')
				fprintf(stderr, "daqirid: unknown option '%s'\n",
					argv[optind - 1]);
			else
				fprintf(stderr, "daqirid: unknown option -%c\n",
					optopt);
			usage(stderr);
			return 1;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "daqirid: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 1;
	}
	if ((o.verbose || o.compat) && !o.check_only) {
		fprintf(stderr, "daqirid: %s goes with -n\n", o.verbose ? "-v" :
		    "--compat");
		usage(stderr);
		return 1;
	}
	if (o.replay_opts && replay.nfiles == 0) {
		fprintf(stderr, "daqirid: --replay-speed and --replay-hold go "
		    "with --replay IFACE/QUEUE=FILE.pcap\n");
		usage(stderr);
		return 1;
	}
	if (o.verbose && o.compat) {
		fprintf(stderr, "daqirid: -v and --compat: one or the other\n");
		usage(stderr);
		return 1;
	}

	/*
	 * Before anything that may start a thread (reading the config
	 * starts none; CUDA, DPDK and libsystemd may): a thread with TERM
	 * unblocked takes the default action on it, killing the daemon
	 * without its orderly stop. Threads inherit this mask. -n keeps
	 * the default actions, so ^C ends a check.
	 */
	if (!o.check_only) {
		daemon_signals(&sigs);
		if ((errno = pthread_sigmask(SIG_BLOCK, &sigs, NULL)) != 0) {
			fprintf(stderr, "daqirid: blocking signals: %s\n",
			    strerror(errno));
			return 1;
		}
	}
	if (!o.check_only)
		test_start_pause();
	if (load_config(&o, &cfg, &diags, &used, abs_config) != 0) {
		cfg_compat_print(&diags, stdout);
		return 1;
	}
	if (o.compat) {
		cfg_compat_print(&diags, stdout);
		return 0;
	}
	if (o.check_only) {
		/* the files and queues a replay names, all said */
		if (replay.nfiles > 0 && replay_check(&cfg, &replay,
		    stderr) > 0)
			return 1;
		/* valid, but not for this build: said, not refused (the
		 * file may be meant for another machine) */
		if (replay.nfiles == 0 && cfg.ninterfaces > 0 &&
		    engine_lookup(cfg.engine) == NULL)
			fprintf(stderr, "daqirid: warning: %s: engine %s is not "
			    "built into this daqirid (built without it): it "
			    "would not start here\n", diags.file,
			    cfg_iface_traits(&cfg, &cfg.interfaces[0])->name);
		if (o.verbose) {
			if (cfg_print(&cfg, stdout) != 0 || fflush(stdout) != 0) {
				fprintf(stderr, "daqirid: writing the configuration: %s\n",
					strerror(errno));
				return 1;
			}
		} else
			printf("%s: configuration OK%s\n", diags.file,
			    replay.nfiles > 0 ? "; replay files OK" : "");
		return 0;
	}
	return daemon_run(&cfg, o.socket != NULL ? o.socket :
	    cfg.daemon.control_socket, used != NULL ? abs_config : NULL,
	    o.level, replay.nfiles > 0 ? &replay : NULL);
}
