/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DPDK engine's EAL: its arguments built from the config (lcores, the
 * devices to probe, the software loopback's ring ports, cfg.dpdk_args
 * last so they win), rte_eal_init once per process with the daemon's
 * signal mask and pinning kept, and rte_eal_cleanup after the last
 * interface. Main thread only. engine_dpdk.c asks through
 * engine_dpdk_internal.h.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"

#include "engine_dpdk_begin.h"

#ifdef DPDK_HAVE_HEADERS

#include <rte_config.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_version.h>

#include "engine_dpdk_internal.h"

/* Most EAL arguments we pass (ours + cfg.dpdk_args). */
#define DPDK_MAX_ARGS		(CFG_MAX_DPDK_ARGS + 2 * CFG_MAX_INTERFACES + 16)

/* Process-wide EAL state, touched only by init/fini on the main thread. */
static bool dpdk_eal_up;
static bool dpdk_eal_gone;		/* cleaned up: cannot come back */
static int dpdk_eal_users;
static char dpdk_argbuf[DPDK_MAX_ARGS][CFG_PATH_MAX];
static char *dpdk_argv[DPDK_MAX_ARGS + 1];

/* True when arg is option opt ("-l", "--vdev") given alone, glued to its
 * value ("-l0") or with '=' ("--vdev=..."). */
static bool
dpdk_arg_is(const char *arg, const char *opt)
{
	size_t n = strlen(opt);

	if (strncmp(arg, opt, n) != 0)
		return false;
	if (arg[n] == '\0' || arg[n] == '=')
		return true;
	return opt[1] != '-';		/* short options take glued values */
}

static bool
dpdk_user_has(const struct cfg *c, const char *const *opts)
{
	for (int i = 0; i < c->ndpdk_args; i++)
		for (int k = 0; opts[k] != NULL; k++)
			if (dpdk_arg_is(c->dpdk_args[i], opts[k]))
				return true;
	return false;
}

/* DPDK's log level for ours. */
static int
dpdk_log_level(enum cfg_log_level l)
{
	switch (l) {
	case CFG_LOG_TRACE:
	case CFG_LOG_DEBUG:
		return RTE_LOG_DEBUG;
	case CFG_LOG_INFO:
		return RTE_LOG_INFO;
	case CFG_LOG_WARN:
		return RTE_LOG_WARNING;
	case CFG_LOG_ERROR:
		return RTE_LOG_ERR;
	case CFG_LOG_CRITICAL:
		return RTE_LOG_CRIT;
	default:
		return RTE_LOG_EMERG;
	}
}

/* "dddd:bb:dd.f" or "bb:dd.f" (hex). */
bool
dpdk_is_pci(const char *a)
{
	unsigned d, b, s, f;
	char end;

	return sscanf(a, "%x:%x:%x.%x%c", &d, &b, &s, &f, &end) == 4 ||
	    sscanf(a, "%x:%x.%x%c", &b, &s, &f, &end) == 3;
}

/* The DPDK port of interface ifc: its address, or in software loopback
 * the ring port daqirid creates for it ("net_ring_lb<index>", its tx
 * queue N feeding its rx queue N: DPDK's ring PMD). */
const char *
dpdk_port_of(const struct cfg *c, const struct cfg_interface *ifc, char *buf,
	     size_t len)
{
	if (c->loopback != CFG_LOOPBACK_SW)
		return ifc->address;
	snprintf(buf, len, "net_ring_lb%d", (int)(ifc - c->interfaces));
	return buf;
}

/* Huge pages free in any size (sysfs). */
static bool
dpdk_hugepages_free(void)
{
	const char *dir = "/sys/kernel/mm/hugepages";
	struct dirent *de;
	unsigned long total = 0;
	DIR *d;

	if ((d = opendir(dir)) == NULL)
		return false;
	while ((de = readdir(d)) != NULL) {
		char path[CFG_PATH_MAX + 64];
		unsigned long n = 0;
		FILE *fp;

		if (strncmp(de->d_name, "hugepages-", 10) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s/free_hugepages", dir,
		    de->d_name);
		if ((fp = fopen(path, "re")) == NULL)
			continue;
		if (fscanf(fp, "%lu", &n) == 1)
			total += n;
		fclose(fp);
	}
	closedir(d);
	return total > 0;
}

static int
dpdk_add_arg(int *argc, const char *fmt, ...)
{
	va_list ap;

	if (*argc >= DPDK_MAX_ARGS)
		return -E2BIG;
	va_start(ap, fmt);
	vsnprintf(dpdk_argbuf[*argc], CFG_PATH_MAX, fmt, ap);
	va_end(ap);
	dpdk_argv[*argc] = dpdk_argbuf[*argc];
	(*argc)++;
	return 0;
}

/*
 * The lcore list: the master core and every queue's core that this process
 * may run on; the others are left out with a warning.
 */
static void
dpdk_core_list(const struct cfg *c, char *out, size_t cap)
{
	cpu_set_t allowed, want;
	int master = c->master_core;
	size_t n = 0;

	CPU_ZERO(&allowed);
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		CPU_SET(0, &allowed);
	CPU_ZERO(&want);
	if (master < 0 || master >= CPU_SETSIZE || !CPU_ISSET(master, &allowed)) {
		int first = 0;

		while (first < CPU_SETSIZE && !CPU_ISSET(first, &allowed))
			first++;
		log_warnx("master_core %d: no such core here; EAL's main lcore "
		    "is core %d", master, first);
		master = first;
	}
	CPU_SET(master, &want);
	for (int i = 0; i < c->ninterfaces; i++) {
		const struct cfg_rx *rx = &c->interfaces[i].rx;

		for (int q = 0; q < rx->nqueues; q++) {
			int core = rx->queues[q].cpu_core;

			if (core < 0)
				continue;
			if (core >= CPU_SETSIZE || !CPU_ISSET(core, &allowed)) {
				log_warnx("queue '%s/%s': cpu_core %d: no such "
				    "core here; left out of EAL's lcores",
				    c->interfaces[i].name, rx->queues[q].name,
				    core);
				continue;
			}
			CPU_SET(core, &want);
		}
	}
	/* master first: EAL makes the first lcore of -l its main lcore */
	n += (size_t)snprintf(out, cap, "%d", master);
	for (int k = 0; k < CPU_SETSIZE && n < cap; k++)
		if (k != master && CPU_ISSET(k, &want))
			n += (size_t)snprintf(out + n, cap - n, ",%d", k);
}

/*
 * Build EAL's argv from the config: "daqirid", -l (unless given), an
 * allow-list of the configured PCI ports or --no-pci when there are none
 * (unless the user chose devices), --no-telemetry (unless --telemetry),
 * --log-level, then cfg.dpdk_args as they are (so they win).
 */
static int
dpdk_eal_args(const struct cfg *c, char *err, size_t errlen)
{
	static const char *const lcore_opts[] = { "-l", "-c", "--lcores",
		NULL };
	static const char *const dev_opts[] = { "-a", "-b", "-w", "--allow",
		"--block", "--pci-whitelist", "--pci-blacklist", "--no-pci",
		NULL };
	static const char *const tele_opts[] = { "--telemetry",
		"--no-telemetry", NULL };
	static const char *const nohuge_opts[] = { "--no-huge", NULL };
	static const char *const inmem_opts[] = { "--in-memory", NULL };
	static const char *const lvl_opts[] = { "--log-level", NULL };
	char cores[CFG_PATH_MAX];
	bool no_huge = dpdk_user_has(c, nohuge_opts);
	int argc = 0, npci = 0, full = 0;	/* full: argv ran out */

	if (no_huge && dpdk_user_has(c, inmem_opts)) {
		log_seterr(err, errlen, "dpdk_args: --no-huge cannot be "
		    "combined with --in-memory; use --no-shconf (or a "
		    "--file-prefix of its own) with --no-huge");
		return -EINVAL;
	}
	if (!no_huge && !dpdk_hugepages_free()) {
		log_seterr(err, errlen, "DPDK: no free huge pages on this "
		    "machine (/sys/kernel/mm/hugepages): reserve some (e.g. "
		    "'echo 1024 > /proc/sys/vm/nr_hugepages') or add "
		    "\"--no-huge\" and \"--no-shconf\" to cfg.dpdk_args");
		return -ENOMEM;
	}
	full |= dpdk_add_arg(&argc, "daqirid");
	if (!dpdk_user_has(c, lcore_opts)) {
		dpdk_core_list(c, cores, sizeof(cores));
		full |= dpdk_add_arg(&argc, "-l");
		full |= dpdk_add_arg(&argc, "%s", cores);
	}
	if (!dpdk_user_has(c, dev_opts)) {
		/* Probe only the devices we were given: never take over a NIC
		 * the config does not name. */
		for (int i = 0; i < c->ninterfaces; i++)
			if (c->loopback != CFG_LOOPBACK_SW &&
			    dpdk_is_pci(c->interfaces[i].address)) {
				full |= dpdk_add_arg(&argc, "-a");
				full |= dpdk_add_arg(&argc, "%s",
				    c->interfaces[i].address);
				npci++;
			}
		if (npci == 0)
			full |= dpdk_add_arg(&argc, "--no-pci");
	}
	/* Software loopback: a ring port per interface; a PCI address
	 * there is a label, never probed. */
	for (int i = 0; i < c->ninterfaces && c->loopback == CFG_LOOPBACK_SW;
	    i++)
		full |= dpdk_add_arg(&argc, "--vdev=net_ring_lb%d", i);
	if (!dpdk_user_has(c, tele_opts))
		full |= dpdk_add_arg(&argc, "--no-telemetry");
	if (!dpdk_user_has(c, lvl_opts))
		full |= dpdk_add_arg(&argc, "--log-level=%d",
		    dpdk_log_level(c->log_level));
	for (int i = 0; i < c->ndpdk_args; i++)
		full |= dpdk_add_arg(&argc, "%s", c->dpdk_args[i]);
	if (full != 0) {
		log_seterr(err, errlen, "dpdk_args: more than %d EAL arguments",
		    DPDK_MAX_ARGS);
		return -E2BIG;
	}
	dpdk_argv[argc] = NULL;
	return argc;
}

/* Initialise EAL once per process, with the whole config's arguments. */
static int
dpdk_eal_init(const struct cfg *c, char *err, size_t errlen)
{
	char line[DPDK_MAX_ARGS * 24];
	sigset_t all, old;
	cpu_set_t aff;
	bool have_aff;
	size_t n = 0;
	int argc, rc;

	if (dpdk_eal_up)
		return 0;
	if (dpdk_eal_gone) {
		log_seterr(err, errlen, "DPDK: EAL was shut down in this "
		    "process and cannot be started again");
		return -EALREADY;
	}
	if ((argc = dpdk_eal_args(c, err, errlen)) < 0)
		return argc;
	line[0] = '\0';
	for (int i = 0; i < argc && n < sizeof(line); i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s",
		    i ? " " : "", dpdk_argv[i]);
	log_info("DPDK: EAL arguments: %s", line);

	/* EAL's own log lines go to stderr like ours (its default is stdout
	 * and syslog). */
	rte_openlog_stream(stderr);
	/* Threads EAL starts (interrupts, lcores) inherit this mask, so
	 * SIGTERM & co. stay for the daemon's signalfd; and EAL pins the
	 * calling thread to its main lcore, which the daemon's own pinning
	 * policy decides instead: both are restored. */
	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGILL);
	sigdelset(&all, SIGABRT);
	sigdelset(&all, SIGTRAP);
	sigdelset(&all, SIGSYS);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	have_aff = pthread_getaffinity_np(pthread_self(), sizeof(aff),
	    &aff) == 0;
	rc = rte_eal_init(argc, dpdk_argv);
	if (have_aff)
		(void)pthread_setaffinity_np(pthread_self(), sizeof(aff), &aff);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc < 0) {
		int e = rte_errno;

		log_seterr(err, errlen, "DPDK: rte_eal_init failed: %s (EAL "
		    "arguments: %s; EAL's messages above say more)",
		    rte_strerror(e), line);
		/* EAL refuses a second rte_eal_init in any case */
		dpdk_eal_gone = true;
		return e > 0 ? -e : -EINVAL;
	}
	dpdk_eal_up = true;
	log_info("DPDK: EAL up (%s), %u port(s), IOVA as %s", rte_version(),
	    rte_eth_dev_count_avail(),
	    rte_eal_iova_mode() == RTE_IOVA_PA ? "PA" : "VA");
	return 0;
}

int
dpdk_eal_get(const struct cfg *c, char *err, size_t errlen)
{
	int rc = dpdk_eal_init(c, err, errlen);

	if (rc == 0)
		dpdk_eal_users++;
	return rc;
}

void
dpdk_eal_put(void)
{
	if (--dpdk_eal_users > 0 || !dpdk_eal_up)
		return;
	rte_eal_cleanup();
	dpdk_eal_up = false;
	dpdk_eal_gone = true;
}

#include "engine_dpdk_end.h"

#endif /* DPDK_HAVE_HEADERS */
