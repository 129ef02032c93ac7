/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reload, as OpenBGPD does it: re-read the configuration file, check it
 * completely, compare it with the running one (cfg_diff.c) and either
 * apply every difference or none. Restart-only differences and config
 * errors refuse the reload and change nothing; live ones are prepared in
 * full first (flow tables for every worker, plan retunes for every
 * stream), and only when all of them could be made are they handed to
 * the workers, which take them between two bursts. Main thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <systemd/sd-daemon.h>

#include "daemon_internal.h"
#include "flow.h"
#include "log.h"
#include "reorder.h"
#include "stream.h"
#include "worker.h"

const char *const reload_outcome_names[RELOAD_MAX] = {
	[RELOAD_APPLIED] = "applied",
	[RELOAD_UNCHANGED] = "unchanged",
	[RELOAD_REFUSED] = "refused",
};

/* Everything a reload hands out, made before any of it is posted. */
struct reload_plan {
	struct flow_table *tables[CFG_MAX_INTERFACES];	/* NULL: flows kept */
	struct flow_change *changes[CFG_MAX_INTERFACES][CFG_MAX_QUEUES];
	struct reorder_tune *tunes[CFG_MAX_INTERFACES][CFG_MAX_REORDERS];
};

static void
plan_discard(struct daemon *d, struct reload_plan *p)
{
	for (int i = 0; i < d->nifs; i++) {
		for (int q = 0; q < CFG_MAX_QUEUES; q++)
			worker_flows_discard(p->changes[i][q]);
		for (int j = 0; j < CFG_MAX_REORDERS; j++)
			reorder_tune_free(p->tunes[i][j]);
		flow_table_free(p->tables[i]);
	}
	memset(p, 0, sizeof(*p));
}

static bool
flows_differ(const struct cfg_rx *a, const struct cfg_rx *b)
{
	if (a->nflows != b->nflows || a->flow_isolation != b->flow_isolation ||
	    a->dynamic_flow_capacity != b->dynamic_flow_capacity)
		return true;
	for (int f = 0; f < a->nflows; f++) {
		const struct cfg_flow *x = &a->flows[f], *y = &b->flows[f];

		if (x->id != y->id || strcmp(x->name, y->name) != 0 ||
		    x->nqueue_ids != y->nqueue_ids || x->has_match != y->has_match ||
		    memcmp(x->queue_ids, y->queue_ids, sizeof(x->queue_ids)) != 0 ||
		    (x->has_match && memcmp(&x->match, &y->match,
		    sizeof(x->match)) != 0))
			return true;
	}
	return false;
}

static bool
tune_differs(const struct cfg_reorder *a, const struct cfg_reorder *b)
{
	return a->timeout_us != b->timeout_us || a->fill != b->fill ||
	    a->window != b->window;
}

/* Make everything; on the first failure say why in r->reason and
 * return -1 (the caller discards what was made). */
static int
plan_make(struct daemon *d, const struct cfg *nc, struct reload_plan *p,
	  struct reload_result *r)
{
	for (int i = 0; i < d->nifs; i++) {
		struct daemon_iface *di = &d->ifs[i];
		const struct cfg_interface *ni = &nc->interfaces[i];

		if (di->flows != NULL && flows_differ(&di->ifc->rx, &ni->rx)) {
			for (int q = 0; q < di->nworkers; q++)
				if (worker_flows_busy(di->workers[q]))
					goto busy;
			p->tables[i] = flow_table_create(ni);
			if (p->tables[i] == NULL)
				goto nomem;
			for (int q = 0; q < di->nworkers; q++) {
				p->changes[i][q] = worker_flows_prepare(
				    di->workers[q], p->tables[i]);
				if (p->changes[i][q] == NULL)
					goto nomem;
			}
		}
		for (int j = 0; j < di->nstreams; j++) {
			const struct cfg_reorder *nr = &ni->rx.reorders[j];
			char why[sizeof(r->reason)];

			if (!tune_differs(di->reorder_cfgs[j], nr))
				continue;
			if (stream_tune_check(di->streams[j], nr->window, why,
			    sizeof(why)) != 0) {
				snprintf(r->reason, sizeof(r->reason), "%s", why);
				return -1;
			}
			p->tunes[i][j] = stream_tune_prepare(di->streams[j],
			    nr->timeout_us, nr->fill, nr->window);
			if (p->tunes[i][j] == NULL) {
				if (errno == EBUSY)
					goto busy;
				goto nomem;
			}
		}
	}
	return 0;
busy:
	snprintf(r->reason, sizeof(r->reason), "a worker is still taking the "
	    "previous change; try again");
	return -1;
nomem:
	snprintf(r->reason, sizeof(r->reason), "out of memory while preparing "
	    "the change");
	return -1;
}

/* The live fields of nc into the running config, which then equals nc
 * (checked by the caller). Nothing a worker reads at run time is here. */
static void
copy_live(struct cfg *run, const struct cfg *nc)
{
	run->debug = nc->debug;
	run->log_level = nc->log_level;
	run->daemon.stats_interval_ms = nc->daemon.stats_interval_ms;
	for (int i = 0; i < run->ninterfaces; i++) {
		struct cfg_rx *a = &run->interfaces[i].rx;
		const struct cfg_rx *b = &nc->interfaces[i].rx;

		a->nflows = b->nflows;
		memcpy(a->flows, b->flows, sizeof(a->flows));
		a->flow_isolation = b->flow_isolation;
		a->dynamic_flow_capacity = b->dynamic_flow_capacity;
		for (int j = 0; j < a->nreorders; j++) {
			a->reorders[j].timeout_us = b->reorders[j].timeout_us;
			a->reorders[j].fill = b->reorders[j].fill;
			a->reorders[j].window = b->reorders[j].window;
		}
	}
	/* positions now refer to the file just read */
	run->nmarks = nc->nmarks;
	memcpy(run->marks, nc->marks, sizeof(run->marks[0]) *
	    (size_t)nc->nmarks);
}

static void
plan_post(struct daemon *d, struct reload_plan *p)
{
	for (int i = 0; i < d->nifs; i++) {
		struct daemon_iface *di = &d->ifs[i];

		if (p->tables[i] != NULL) {
			for (int q = 0; q < di->nworkers; q++) {
				worker_flows_post(di->workers[q],
				    p->changes[i][q]);
				p->changes[i][q] = NULL;
			}
			flow_table_free(di->flows);
			di->flows = p->tables[i];
			p->tables[i] = NULL;
		}
		for (int j = 0; j < di->nstreams; j++)
			if (p->tunes[i][j] != NULL) {
				stream_tune_post(di->streams[j], p->tunes[i][j]);
				p->tunes[i][j] = NULL;
			}
	}
}

int
daemon_reload(struct daemon *d, struct reload_result *r)
{
	/* big, and the main thread's alone */
	static struct cfg nc;
	static struct reload_plan plan;
	int rc;

	memset(r, 0, sizeof(*r));
	r->outcome = RELOAD_REFUSED;
	if (d->config_file != NULL)
		rc = cfg_load(d->config_file, &nc, &r->diags);
	else
		rc = cfg_parse(cfg_default_text, cfg_default_len,
		    "<built-in default>", &nc, &r->diags);
	snprintf(r->file, sizeof(r->file), "%s", r->diags.file);
	if (rc != 0) {
		snprintf(r->reason, sizeof(r->reason), "the configuration has "
		    "%d error%s; nothing changed", r->diags.nerrors,
		    r->diags.nerrors == 1 ? "" : "s");
		return -1;
	}
	if (cfg_diff(d->cfg, &nc, &r->changes) > 0) {
		snprintf(r->reason, sizeof(r->reason), "%d change%s need%s a "
		    "restart; nothing changed", r->changes.nrestart,
		    r->changes.nrestart == 1 ? "" : "s",
		    r->changes.nrestart == 1 ? "s" : "");
		return -1;
	}
	if (r->changes.nlive == 0) {
		r->outcome = RELOAD_UNCHANGED;
		snprintf(r->reason, sizeof(r->reason), "no changes");
		/* the file may have moved lines: positions follow it */
		copy_live(d->cfg, &nc);
		return 0;
	}
	if (plan_make(d, &nc, &plan, r) != 0) {
		plan_discard(d, &plan);
		return -1;
	}
	sd_notify(0, "RELOADING=1\nSTATUS=reloading the configuration");
	if (d->level_override < 0)
		log_set_level(nc.log_level);
	plan_post(d, &plan);
	copy_live(d->cfg, &nc);
	d->reloads++;
	r->outcome = RELOAD_APPLIED;
	snprintf(r->reason, sizeof(r->reason), "%d change%s applied",
	    r->changes.nlive, r->changes.nlive == 1 ? "" : "s");
	if (!cfg_equal(d->cfg, &nc))
		log_warnx("reload: the running configuration is not the file's "
		    "after applying it (a daqirid bug: report it)");
	sd_notifyf(0, "READY=1\nSTATUS=receiving; configuration reloaded (%d "
	    "change%s)", r->changes.nlive, r->changes.nlive == 1 ? "" : "s");
	return 0;
}

void
daemon_reload_log(const struct reload_result *r)
{
	for (int i = 0; i < r->diags.ndiags; i++) {
		const struct cfg_diag *g = &r->diags.diags[i];

		if (g->severity != CFG_SEV_ERROR)
			continue;
		if (g->pos.line > 0)
			log_warnx("reload: %s:%d:%d: %s", r->file, g->pos.line,
			    g->pos.col, g->msg);
		else
			log_warnx("reload: %s: %s", r->file, g->msg);
	}
	for (int i = 0; i < r->changes.n; i++) {
		const struct cfg_change *c = &r->changes.ch[i];

		if (r->outcome == RELOAD_REFUSED && c->live)
			continue;
		if (c->pos.line > 0)
			log_notice("reload: %s:%d:%d: %s%s", r->file, c->pos.line,
			    c->pos.col, c->live ? "applied: " : "", c->msg);
		else
			log_notice("reload: %s: %s%s", r->file,
			    c->live ? "applied: " : "", c->msg);
	}
	if (r->outcome == RELOAD_REFUSED)
		log_warnx("reload of %s refused: %s", r->file, r->reason);
	else
		log_notice("reload of %s: %s", r->file, r->reason);
}
