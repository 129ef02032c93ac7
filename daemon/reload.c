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
#include "mem.h"
#include "log.h"
#include "reorder.h"
#include "stream.h"

/* Longest the main loop waits for the configuration file to be read: a
 * file on a hung mount is given up on after this (cfg_load_within()). */
#define RELOAD_READ_MS	2000
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
	/* by the new config's reorder index */
	struct reorder_tune *tunes[CFG_MAX_INTERFACES][CFG_MAX_REORDERS];
	bool restream[CFG_MAX_INTERFACES];	/* streams added or removed */
	int nstreams[CFG_MAX_INTERFACES];
	struct stream *streams[CFG_MAX_INTERFACES][CFG_MAX_REORDERS];
	bool made[CFG_MAX_INTERFACES][CFG_MAX_REORDERS];
	int nremoved[CFG_MAX_INTERFACES];
	struct stream *removed[CFG_MAX_INTERFACES][CFG_MAX_REORDERS];
	bool made_region[CFG_MAX_REGIONS];
};

static void
plan_discard(struct daemon *d, struct reload_plan *p)
{
	for (int i = 0; i < d->nifs; i++) {
		for (int q = 0; q < CFG_MAX_QUEUES; q++)
			worker_flows_discard(p->changes[i][q]);
		for (int j = 0; j < CFG_MAX_REORDERS; j++) {
			reorder_tune_free(p->tunes[i][j]);
			if (p->made[i][j])
				stream_destroy(p->streams[i][j]);
		}
		flow_table_free(p->tables[i]);
	}
	for (int r = 0; r < CFG_MAX_REGIONS; r++)
		if (p->made_region[r])
			mem_region_destroy(&d->regions[r]);
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
	    a->window != b->window || a->resync_after_us != b->resync_after_us ||
	    a->missing_action != b->missing_action;
}

/* The running stream of di named like reorder config name, its index in
 * *at; NULL when none. */
static struct stream *
stream_named(struct daemon_iface *di, const char *name, int *at)
{
	for (int k = 0; k < di->nstreams; k++)
		if (strcmp(di->reorder_cfgs[k]->name, name) == 0) {
			*at = k;
			return di->streams[k];
		}
	return NULL;
}

/* The streams of ni, in its order: the running ones kept, new ones made
 * (with their region when the reload added it), the rest to remove. */
static int
plan_streams(struct daemon *d, int i, const struct cfg *nc,
	     struct reload_plan *p, struct reload_result *r)
{
	struct daemon_iface *di = &d->ifs[i];
	const struct cfg_interface *ni = &nc->interfaces[i];
	bool same = di->nstreams == ni->rx.nreorders;
	char err[256];
	int k;

	for (int j = 0; same && j < di->nstreams; j++)
		same = strcmp(di->reorder_cfgs[j]->name,
		    ni->rx.reorders[j].name) == 0;
	if (same)
		return 0;
	p->restream[i] = true;
	p->nstreams[i] = ni->rx.nreorders;
	for (int j = 0; j < ni->rx.nreorders; j++) {
		const struct cfg_reorder *nr = &ni->rx.reorders[j];
		int ri = nr->region_idx;

		p->streams[i][j] = stream_named(di, nr->name, &k);
		if (p->streams[i][j] != NULL)
			continue;
		if (ri >= d->cfg->nregions && !p->made_region[ri]) {
			if (mem_region_create(&nc->regions[ri], &d->regions[ri],
			    err, sizeof(err)) < 0) {
				snprintf(r->reason, sizeof(r->reason), "%s", err);
				return -1;
			}
			p->made_region[ri] = true;
		}
		if (daemon_stream_make(d, ni, nr, &p->streams[i][j]) != 0) {
			snprintf(r->reason, sizeof(r->reason), "stream '%s/%s' "
			    "cannot be made (the log says why); nothing "
			    "changed", ni->name, nr->name);
			return -1;
		}
		p->made[i][j] = true;
	}
	for (int j = 0; j < di->nstreams; j++) {
		bool kept = false;

		for (int n = 0; n < p->nstreams[i] && !kept; n++)
			kept = p->streams[i][n] == di->streams[j];
		if (!kept)
			p->removed[i][p->nremoved[i]++] = di->streams[j];
	}
	return 0;
}

/* Make everything; on the first failure say why in r->reason and
 * return -1 (the caller discards what was made). */
/* Regions a reload took out of the config go once no retiring stream
 * uses them any more. */
static void
release_regions(struct daemon *d)
{
	if (d->nretiring > 0 || d->regions_keep < 0)
		return;
	for (int r = d->regions_keep; r < CFG_MAX_REGIONS; r++)
		if (r >= d->cfg->nregions)
			mem_region_destroy(&d->regions[r]);
	d->regions_keep = -1;
}

static int
plan_make(struct daemon *d, const struct cfg *nc, struct reload_plan *p,
	  struct reload_result *r)
{
	char err[256];

	if (d->nretiring > 0) {
		snprintf(r->reason, sizeof(r->reason), "streams removed by the "
		    "previous reload are still being let go; try again");
		return -1;
	}
	/* A region the previous reload took out may still be there (it
	 * goes at the next tick): gone now, before this reload may make a
	 * region at its place again, which would leak it. */
	release_regions(d);
	/* Regions this reload appends are made now, whether a stream uses
	 * them yet or not (a later reload's stream then finds them). */
	for (int ri = d->cfg->nregions; ri < nc->nregions; ri++) {
		if (mem_region_create(&nc->regions[ri], &d->regions[ri], err,
		    sizeof(err)) < 0) {
			snprintf(r->reason, sizeof(r->reason), "%.200s; nothing "
			    "changed", err);
			return -1;
		}
		p->made_region[ri] = true;
	}
	for (int i = 0; i < d->nifs; i++) {
		struct daemon_iface *di = &d->ifs[i];
		const struct cfg_interface *ni = &nc->interfaces[i];
		const struct cfg_reorder *keep[CFG_MAX_REORDERS];
		bool flows = di->flows != NULL && flows_differ(&di->ifc->rx,
		    &ni->rx);

		if (plan_streams(d, i, nc, p, r) != 0)
			return -1;
		if ((flows || p->restream[i]) && di->flows == NULL) {
			snprintf(r->reason, sizeof(r->reason), "interface '%s' "
			    "has no rx queues to run streams on", ni->name);
			return -1;
		}
		if (flows || p->restream[i])
			for (int q = 0; q < di->nworkers; q++)
				if (worker_flows_busy(di->workers[q]))
					goto busy;
		if (flows && (p->tables[i] = flow_table_create(ni)) == NULL)
			goto nomem;
		for (int j = 0; j < p->nstreams[i]; j++)
			keep[j] = &d->cfg->interfaces[i].rx.reorders[j];
		for (int q = 0; q < di->nworkers && (flows || p->restream[i]);
		    q++) {
			const struct flow_table *t = p->tables[i] != NULL ?
			    p->tables[i] : di->flows;

			p->changes[i][q] = p->restream[i] ?
			    worker_streams_prepare(di->workers[q], t, ni,
				p->streams[i], keep, p->nstreams[i]) :
			    worker_flows_prepare(di->workers[q], t);
			if (p->changes[i][q] == NULL)
				goto nomem;
		}
		for (int j = 0; j < ni->rx.nreorders; j++) {
			const struct cfg_reorder *nr = &ni->rx.reorders[j];
			char why[sizeof(r->reason)];
			struct stream *s;
			int k;

			if ((s = stream_named(di, nr->name, &k)) == NULL ||
			    !tune_differs(di->reorder_cfgs[k], nr))
				continue;
			if (stream_tune_check(s, nr->window, why,
			    sizeof(why)) != 0) {
				snprintf(r->reason, sizeof(r->reason), "%s", why);
				return -1;
			}
			p->tunes[i][j] = stream_tune_prepare(s, nr->timeout_us,
			    nr->fill, nr->window);
			if (p->tunes[i][j] == NULL) {
				if (errno == EBUSY)
					goto busy;
				goto nomem;
			}
			reorder_tune_set_resync_after(p->tunes[i][j],
			    nr->resync_after_us);
			reorder_tune_set_missing(p->tunes[i][j],
			    nr->missing_action);
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


/* Does table t still hold the config's flows, and only those? (Flows
 * added or deleted at run time make it differ.) */
static bool
table_is_file(const struct flow_table *t, const struct cfg_rx *rx)
{
	if (t->nrules != (uint32_t)rx->nflows)
		return false;
	for (int f = 0; f < rx->nflows; f++)
		if (t->rules[f].id != rx->flows[f].id)
			return false;
	return true;
}

static void
plan_post(struct daemon *d, struct reload_plan *p)
{
	for (int i = 0; i < d->nifs; i++) {
		struct daemon_iface *di = &d->ifs[i];

		for (int q = 0; q < di->nworkers; q++)
			if (p->changes[i][q] != NULL) {
				worker_flows_post(di->workers[q],
				    p->changes[i][q]);
				p->changes[i][q] = NULL;
			}
		if (p->tables[i] != NULL) {
			if (!table_is_file(di->flows, &di->ifc->rx))
				log_notice("reload: interface '%s': its flow table "
				    "is the file's again; flows added or deleted "
				    "with daqirictl since are gone", di->ifc->name);
			flow_table_free(di->flows);
			di->flows = p->tables[i];
			daemon_steer(d->cfg, di);
			p->tables[i] = NULL;
		}
		if (p->restream[i]) {
			/* gone from every view now; freed once the workers
			 * let go (daemon_reload_reap) */
			for (int k = 0; k < p->nremoved[i]; k++) {
				d->retiring[d->nretiring].s = p->removed[i][k];
				d->retiring[d->nretiring++].iface = i;
			}
			di->nstreams = p->nstreams[i];
			for (int j = 0; j < di->nstreams; j++)
				di->streams[j] = p->streams[i][j];
			memset(p->made[i], 0, sizeof(p->made[i]));
		}
		for (int j = 0; j < di->nstreams; j++)
			if (p->tunes[i][j] != NULL) {
				stream_tune_post(di->streams[j], p->tunes[i][j]);
				p->tunes[i][j] = NULL;
			}
	}
	memset(p->made_region, 0, sizeof(p->made_region));
}

/* After cfg_apply_live(): every stream's config where the running config now
 * holds it. */
static void
repoint(struct daemon *d)
{
	for (int i = 0; i < d->nifs; i++) {
		struct daemon_iface *di = &d->ifs[i];

		di->ifc = &d->cfg->interfaces[i];
		for (int j = 0; j < di->nstreams; j++) {
			di->reorder_cfgs[j] = &di->ifc->rx.reorders[j];
			stream_set_config(di->streams[j], di->reorder_cfgs[j]);
		}
	}
}

static void
tell_removed(void *ctx, uint64_t conn_id, uint32_t sub_id)
{
	struct daemon *d = ctx;

	control_sub_closed(d->ctl, conn_id, sub_id, DAQIRI_ST_NO_SUCH_STREAM,
	    "stream removed");
}

void
daemon_reload_reap(struct daemon *d)
{
	for (int k = 0; k < d->nretiring;) {
		struct daemon_iface *di = &d->ifs[d->retiring[k].iface];
		struct stream *s = d->retiring[k].s;
		bool busy = false;

		for (int q = 0; q < di->nworkers; q++)
			busy |= worker_flows_busy(di->workers[q]);
		if (busy) {
			k++;
			continue;
		}
		log_info("stream '%s' removed: %d subscription(s) ended",
		    stream_name(s), stream_live_nsubs(s, false, 0));
		stream_subs_each(s, tell_removed, d);
		stream_destroy(s);
		d->retiring[k] = d->retiring[--d->nretiring];
	}
	release_regions(d);
}

void
daemon_reload_fini(struct daemon *d)
{
	for (int k = 0; k < d->nretiring; k++)
		stream_destroy(d->retiring[k].s);
	d->nretiring = 0;
}

int
daemon_reload(struct daemon *d, struct reload_result *r)
{
	/* big, and the main thread's alone */
	static struct cfg nc;
	static struct reload_plan plan;
	int rc;

	memset(r, 0, sizeof(*r));
	memset(&plan, 0, sizeof(plan));
	r->outcome = RELOAD_REFUSED;
	if (d->config_file != NULL)
		rc = cfg_load_within(d->config_file, RELOAD_READ_MS, &nc,
		    &r->diags);
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
		cfg_apply_live(d->cfg, &nc);
		return 0;
	}
	if (plan_make(d, &nc, &plan, r) != 0) {
		plan_discard(d, &plan);
		return -1;
	}
	sd_notify(0, "RELOADING=1\nSTATUS=reloading the configuration");
	if (d->level_override < 0)
		log_set_level(nc.log_level);
	if (nc.nregions < d->cfg->nregions)
		d->regions_keep = nc.nregions;
	plan_post(d, &plan);
	cfg_apply_live(d->cfg, &nc);
	repoint(d);
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
