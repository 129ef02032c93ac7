/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The main thread's side of a stream: creating and destroying it (before
 * its worker starts, after it stopped), the subscription lifecycle
 * (admission and limits, subscribe, unsubscribe, reaping what the worker
 * let go) and the views for the control socket (counter snapshots, info,
 * stats and consumers JSON). Everything here runs on the main thread. It
 * may touch the main-only and fixed fields of struct stream and struct
 * sub, and the worker's side only as stream_internal.h says: commands
 * through push_cmd(), sub.state and the subscription counters read as
 * atomics, the stream's counters and a subscription's hold times through
 * their seqlocks. The buffer pool and the rings are the worker's
 * (stream_worker.c).
 *
 * Isolation (DESIGN.md "Isolation"): the sidecar and the tensor memory go
 * to consumers sealed and read-only; the max_held of a stream's
 * subscriptions add up to at most what leaves the reorder window its
 * buffers, one unprivileged uid to half of that.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "control.h"
#include "log.h"
#include "raw.h"
#include "geometry.h"
#include "gpu.h"
#include "histogram.h"
#include "ring.h"
#include "seqlock.h"
#include "stream_internal.h"

/* --- creation ------------------------------------------------------------ */

static void
sub_arrays_free(struct stream *s)
{
	free(s->served);
	free(s->members);
	free(s->subs);
	free(s->groups);
	free(s->cmds);
	free(s->cmds_run);
	s->served = s->members = s->subs = NULL;
	s->groups = NULL;
	s->cmds = s->cmds_run = NULL;
	s->max_subs = 0;
	s->max_cmds = 0;
}

/*
 * Device tensors are shared by CUDA IPC: a memfd holding the allocation's
 * cudaIpcMemHandle_t and one cudaIpcEventHandle_t per buffer, made now so
 * the data path never creates an event.
 */
static int
make_ipc_file(struct stream *s, char *err, size_t errlen)
{
	uint64_t len = DAQIRI_IPC_FILE_BYTES(s->nbufs);
	uint8_t *p;
	int rc;

	s->ipc_fd = memfd_create("daqiri-ipc", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (s->ipc_fd < 0 || ftruncate(s->ipc_fd, (off_t)len) != 0) {
		snprintf(err, errlen, "stream '%s': ipc memfd: %s", s->name,
		    strerror(errno));
		return -errno;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, s->ipc_fd, 0);
	if (p == MAP_FAILED) {
		snprintf(err, errlen, "stream '%s': ipc mmap: %s", s->name,
		    strerror(errno));
		return -errno;
	}
	rc = gpu_ipc_handle(s->region->dev, p);
	for (uint32_t i = 0; rc == 0 && i < s->nbufs; i++)
		rc = gpu_event_ipc_handle(mem_dev_buf(s->region, i),
		    p + (uint64_t)DAQIRI_IPC_HANDLE_BYTES * (1 + i));
	munmap(p, len);
	if (rc != 0) {
		snprintf(err, errlen, "stream '%s': CUDA IPC handles: %s",
		    s->name, strerror(-rc));
		return rc;
	}
	/* Nobody maps it writable any more: the full write seal. */
	if (fcntl(s->ipc_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
	    F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
		snprintf(err, errlen, "stream '%s': sealing the ipc memfd: %s",
		    s->name, strerror(errno));
		return -errno;
	}
	return 0;
}

/* (Re)size the subscription arrays for max_subs; 0 or -ENOMEM (then
 * the old ones stay). Only while nothing is subscribed. */
static int
sub_arrays_alloc(struct stream *s, uint32_t max_subs)
{
	struct sub **served, **members, **subs;
	struct stream_group *groups;
	struct cmd *cmds, *cmds_run;
	/* Each subscription has at most an add and a remove pending. */
	uint32_t max_cmds = 2 * max_subs;

	served = calloc(max_subs, sizeof(*served));
	members = calloc(max_subs, sizeof(*members));
	subs = calloc(max_subs, sizeof(*subs));
	groups = calloc(max_subs, sizeof(*groups));
	cmds = calloc(max_cmds, sizeof(*cmds));
	cmds_run = calloc(max_cmds, sizeof(*cmds_run));
	if (served == NULL || members == NULL || subs == NULL || groups == NULL ||
	    cmds == NULL || cmds_run == NULL) {
		free(served);
		free(members);
		free(subs);
		free(groups);
		free(cmds);
		free(cmds_run);
		return -ENOMEM;
	}
	sub_arrays_free(s);
	s->served = served;
	s->members = members;
	s->subs = subs;
	s->groups = groups;
	s->cmds = cmds;
	s->cmds_run = cmds_run;
	s->max_subs = max_subs;
	s->max_cmds = (int)max_cmds;
	return 0;
}

/* The parts every stream has: name, buffer pool, sidecar memfd. */
static struct stream *
stream_new(const char *ifc, const char *name, struct mem_region *region,
	   uint32_t sidecar_bytes, char *err, size_t errlen, int *rcp)
{
	char what[DAQIRI_STREAM_NAME_MAX + 32];
	struct stream *s;
	int rc;

	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		*rcp = -ENOMEM;
		return NULL;
	}
	s->bitmap_fd = -1;
	s->ipc_fd = -1;
	s->worker_wake_fd = -1;
	pthread_mutex_init(&s->cmd_lock, NULL);
	{
		/* held for a burst's decisions (microseconds): a worker that
		 * finds it taken spins a little before it sleeps */
		pthread_mutexattr_t a;

		pthread_mutexattr_init(&a);
		(void)pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
		pthread_mutex_init(&s->work_lock, &a);
		pthread_mutexattr_destroy(&a);
	}
	snprintf(s->name, sizeof(s->name), "%s/%s", ifc, name);
	s->region = region;
	s->nbufs = region->nbufs;
	s->bitmap_bytes = sidecar_bytes;
	s->bitmap_len = (size_t)s->bitmap_bytes * s->nbufs;
	s->bitmap_fd = memfd_create("daqiri-bitmap", MFD_CLOEXEC |
	    MFD_ALLOW_SEALING);
	if (s->bitmap_fd < 0 || ftruncate(s->bitmap_fd,
	    (off_t)s->bitmap_len) != 0) {
		rc = -errno;
		snprintf(err, errlen, "stream '%s': bitmap memfd: %s", s->name,
		    strerror(errno));
		goto fail;
	}
	s->bitmap = mmap(NULL, s->bitmap_len, PROT_READ | PROT_WRITE,
	    MAP_SHARED, s->bitmap_fd, 0);
	if (s->bitmap == MAP_FAILED) {
		s->bitmap = NULL;
		rc = -errno;
		snprintf(err, errlen, "stream '%s': bitmap mmap: %s", s->name,
		    strerror(errno));
		goto fail;
	}
	snprintf(what, sizeof(what), "stream '%s': bitmap memfd", s->name);
	if ((rc = mem_seal_readonly(s->bitmap_fd, what)) != 0) {
		snprintf(err, errlen, "%s: sealing: %s", what, strerror(-rc));
		goto fail;
	}
	s->priv_bitmap = calloc(s->nbufs, s->bitmap_bytes);
	s->buf_state = calloc(s->nbufs, 1);
	s->refs = calloc(s->nbufs, sizeof(*s->refs));
	s->pub_ns = calloc(s->nbufs, sizeof(*s->pub_ns));
	s->free_stack = calloc(s->nbufs, sizeof(*s->free_stack));
	if (s->priv_bitmap == NULL || s->buf_state == NULL || s->refs == NULL ||
	    s->pub_ns == NULL || s->free_stack == NULL ||
	    sub_arrays_alloc(s, STREAM_MAX_SUBS) != 0) {
		rc = -ENOMEM;
		snprintf(err, errlen, "stream '%s': out of memory", s->name);
		goto fail;
	}
	stream_pool_fill(s);
	return s;
fail:
	*rcp = rc;
	stream_destroy(s);
	return NULL;
}

int
stream_create(struct stream **out, const struct cfg_interface *ifc,
	      const struct cfg_reorder *r, struct mem_region *region,
	      const struct reorder_backend *backend, char *err, size_t errlen)
{
	struct reorder_owner owner;
	struct cfg_owner o;
	struct stream *s;
	uint64_t tensor;
	int rc;

	*out = NULL;
	tensor = geom_tensor_bytes(r->packets_per_batch, r->slot_bytes);
	if (tensor == 0 || region->buf_size < tensor) {
		snprintf(err, errlen, "stream '%s/%s': buffers of region '%s' "
		    "are smaller than a tensor", ifc->name, r->name,
		    region->name);
		return -EINVAL;
	}
	s = stream_new(ifc->name, r->name, region,
	    (uint32_t)(((uint64_t)r->packets_per_batch + 63) / 64 * 8), err,
	    errlen, &rc);
	if (s == NULL)
		return rc;
	s->kind = DAQIRI_STREAM_REORDER;
	s->reorder_cfg = r;
	stream_owner_init(s, &owner);
	s->plan = reorder_create(r, &owner, backend);
	if (s->plan == NULL) {
		rc = -errno;
		/* the CUDA backend says why (gpu.h's last error) */
		snprintf(err, errlen, "stream '%s': reorder plan (%s backend): "
		    "%s%s%s", s->name, backend != NULL ? backend->name : "cpu",
		    strerror(errno), backend != NULL &&
		    gpu_last_error()[0] != '\0' ? ": " : "",
		    backend != NULL ? gpu_last_error() : "");
		goto fail;
	}
	s->geom = reorder_geom(s->plan);
	s->window = s->geom->window;
	cfg_rx_owner(ifc, r, &o);
	if (o.status == CFG_OWNER_OK && o.nqueues > 1) {
		if ((rc = reorder_set_shared(s->plan, o.queues)) != 0) {
			snprintf(err, errlen, "stream '%s': fed by %d rx "
			    "queues, which only the cpu backend can share, "
			    "not the %s one", s->name, o.nqueues,
			    backend != NULL ? backend->name : "cpu");
			goto fail;
		}
		s->shared = true;
	}
	if (region->kind == DAQIRI_MEM_DEVICE &&
	    (rc = make_ipc_file(s, err, errlen)) != 0)
		goto fail;
	stream_publish_counters(s);
	*out = s;
	return 0;
fail:
	stream_destroy(s);
	return rc;
}

int
stream_create_raw(struct stream **out, const struct cfg_interface *ifc,
		  const struct cfg_queue *q, uint64_t frame_bytes, bool hdr_only,
		  char *err, size_t errlen)
{
	struct cfg_region cr = { .kind = DAQIRI_MEM_HOST, .num_bufs = RAW_NBUFS };
	struct reorder_owner owner;
	struct mem_region *m;
	struct stream *s;
	struct reorder_geom g;
	int rc;

	*out = NULL;
	geom_raw(q, frame_bytes, &g);
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return -ENOMEM;
	snprintf(cr.name, sizeof(cr.name), "raw:%.59s", q->name);
	cr.buf_size = g.tensor_bytes;
	rc = mem_region_create(&cr, m, err, errlen);
	if (rc != 0) {
		free(m);
		return rc;
	}
	s = stream_new(ifc->name, q->name, m, raw_sidecar_bytes(g.ppb), err,
	    errlen, &rc);
	if (s == NULL) {
		mem_region_destroy(m);
		free(m);
		return rc;
	}
	s->own_region = *m;
	free(m);
	s->region = &s->own_region;
	s->kind = DAQIRI_STREAM_RAW;
	s->raw_geom = g;
	s->geom = &s->raw_geom;
	s->window = g.window;
	stream_owner_init(s, &owner);
	s->raw = raw_create(g.ppb, g.slot_bytes, q->timeout_us, hdr_only,
	    &owner);
	if (s->raw == NULL) {
		rc = -errno;
		snprintf(err, errlen, "stream '%s': %s", s->name, strerror(errno));
		stream_destroy(s);
		return rc;
	}
	stream_publish_counters(s);
	*out = s;
	return 0;
}

static void
sub_free(struct sub *u)
{
	if (u == NULL)
		return;
	if (u->ring_mem != NULL)
		munmap(u->ring_mem, u->ring_len);
	if (u->ring_fd >= 0)
		close(u->ring_fd);
	if (u->wake_fd >= 0)
		close(u->wake_fd);
	free(u->held);
	free(u->held_pos);
	free(u->pend);
	free(u);
}

void
stream_destroy(struct stream *s)
{
	if (s == NULL)
		return;
	reorder_tune_free(atomic_load(&s->tune_pending));
	reorder_tune_free(atomic_load(&s->tune_retired));
	reorder_destroy(s->plan);
	raw_destroy(s->raw);
	for (int k = 0; k < s->nsubs; k++)
		sub_free(s->subs[k]);
	if (s->bitmap != NULL)
		munmap(s->bitmap, s->bitmap_len);
	if (s->bitmap_fd >= 0)
		close(s->bitmap_fd);
	if (s->ipc_fd >= 0)
		close(s->ipc_fd);
	free(s->priv_bitmap);
	sub_arrays_free(s);
	free(s->buf_state);
	free(s->refs);
	free(s->pub_ns);
	free(s->free_stack);
	pthread_mutex_destroy(&s->cmd_lock);
	pthread_mutex_destroy(&s->work_lock);
	if (s->region == &s->own_region)
		mem_region_destroy(&s->own_region);
	free(s);
}

/* --- subscriptions --------------------------------------------------------- */

static uint32_t
round_pow2(uint32_t v)
{
	uint32_t p = 1;

	while (p < v && p < (1u << 31))
		p <<= 1;
	return p;
}

static int
push_cmd(struct stream *s, enum cmd_op op, struct sub *u)
{
	uint64_t one = 1;
	int rc = 0;

	pthread_mutex_lock(&s->cmd_lock);
	if (s->ncmds == s->max_cmds)
		rc = -EBUSY;
	else {
		s->cmds[s->ncmds].op = op;
		s->cmds[s->ncmds].sub = u;
		s->ncmds++;
		atomic_store_explicit(&s->cmd_pending, 1, memory_order_release);
	}
	pthread_mutex_unlock(&s->cmd_lock);
	if (rc == 0 && s->worker_wake_fd >= 0 &&
	    write(s->worker_wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("stream '%s': waking its worker", s->name);
	return rc;
}

/* The element type of a stream's tensors: raw bytes without data_types. */
static enum daqiri_dtype
out_dtype(const struct cfg_reorder *r)
{
	return r != NULL && r->has_data_types ? r->output_type :
	    DAQIRI_DTYPE_RAW;
}

static void
fill_info(const struct stream *s, const struct sub *u,
	  struct daqiri_sub_info *info)
{
	memset(info, 0, sizeof(*info));
	info->sub_id = u->sub_id;
	snprintf(info->stream, sizeof(info->stream), "%s", s->name);
	info->kind = s->kind;
	info->mode = u->mode;
	info->policy = u->policy;
	snprintf(info->group, sizeof(info->group), "%s", u->group);
	info->mem_kind = s->region->kind;
	info->device = s->region->kind == DAQIRI_MEM_DEVICE ?
	    s->region->affinity : -1;
	info->dtype = out_dtype(s->reorder_cfg);
	info->fill = s->reorder_cfg != NULL ? s->reorder_cfg->fill :
	    DAQIRI_FILL_KEEP;
	info->elem_bytes = daqiri_dtype_size(info->dtype);
	info->nbufs = s->nbufs;
	info->ppb = s->geom->ppb;
	info->slot_bytes = s->geom->slot_bytes;
	info->elems_per_slot = s->geom->slot_bytes / info->elem_bytes;
	info->tensor_bytes = s->geom->tensor_bytes;
	info->buf_offset = 0;
	info->buf_stride = s->region->buf_size;
	info->map_bytes = s->region->kind == DAQIRI_MEM_DEVICE ?
	    (uint64_t)s->nbufs * s->region->buf_size : s->region->size;
	info->bitmap_bytes = s->bitmap_bytes;
	info->ring_depth = u->ring.depth;
	info->ring_bytes = u->ring_len;
	info->max_held = u->max_held;
	info->nfds = 4;
	info->fds[0] = s->ipc_fd >= 0 ? DAQIRI_FD_IPC : DAQIRI_FD_TENSOR;
	info->fds[1] = DAQIRI_FD_BITMAP;
	info->fds[2] = DAQIRI_FD_RING;
	info->fds[3] = DAQIRI_FD_WAKE;
}

int
stream_set_limits(struct stream *s, uint32_t max_subs,
		  uint32_t hold_timeout_ms)
{
	if (s->nsubs != 0)
		return -EBUSY;
	if (max_subs == 0)
		return -EINVAL;
	if (max_subs != s->max_subs && sub_arrays_alloc(s, max_subs) != 0)
		return -ENOMEM;
	s->hold_ns = (uint64_t)hold_timeout_ms * 1000000u;
	return 0;
}

uint32_t
stream_held_budget(const struct stream *s)
{
	uint64_t keep = (uint64_t)s->window + 1;

	return s->nbufs > keep ? s->nbufs - (uint32_t)keep : 0;
}

/*
 * The max_held of the subscriptions that can still hold buffers: not
 * those ending (the worker takes their buffers back at its next loop)
 * nor those it cut off (it already did).
 */
static bool
sub_live(const struct sub *u)
{
	int st = atomic_load_explicit(&u->state, memory_order_relaxed);

	return !u->removing && st != SUB_BROKEN && st != SUB_GONE;
}

/* u is live and, with uid_only, a subscription of unprivileged uid. */
static bool
sub_counts(const struct sub *u, bool uid_only, uid_t uid)
{
	return sub_live(u) && (!uid_only || (!u->admin && u->uid == uid));
}

/* The max_held promised to live subscriptions: all of them (uid_only
 * false), or those of one unprivileged uid. */
static uint64_t
stream_held_promised(const struct stream *s, bool uid_only, uid_t uid)
{
	uint64_t n = 0;

	for (int k = 0; k < s->nsubs; k++)
		if (sub_counts(s->subs[k], uid_only, uid))
			n += s->subs[k]->max_held;
	return n;
}

uint32_t
stream_uid_share(const struct stream *s)
{
	return stream_user_share(stream_held_budget(s));
}

int
stream_live_nsubs(const struct stream *s, bool uid_only, uid_t uid)
{
	int n = 0;

	for (int k = 0; k < s->nsubs; k++)
		if (sub_counts(s->subs[k], uid_only, uid))
			n++;
	return n;
}

int
stream_conn_nsubs(const struct stream *s, uint64_t conn_id)
{
	int n = 0;

	for (int k = 0; k < s->nsubs; k++)
		if (s->subs[k]->conn_id == conn_id && !s->subs[k]->removing)
			n++;
	return n;
}

/* Free the subscriptions the worker has let go (main thread). */
static void
reap_gone(struct stream *s)
{
	for (int k = 0; k < s->nsubs;) {
		struct sub *u = s->subs[k];

		if (atomic_load_explicit(&u->state, memory_order_acquire) ==
		    SUB_GONE) {
			sub_free(u);
			s->subs[k] = s->subs[--s->nsubs];
			continue;
		}
		k++;
	}
}

int
stream_subscribe(struct stream *s, const struct daqiri_sub_req *req,
		 const struct control_peer *peer, uint32_t sub_id,
		 struct daqiri_sub_info *info, int fds[DAQIRI_SUB_MAX_FDS],
		 int *nfds, struct daqiri_err *err)
{
	struct sub *u;
	uint32_t depth, budget, left;
	uint64_t used;
	int rc, wake_peer = -1;

	*nfds = 0;
	if (req->policy == DAQIRI_POLICY_LOSSLESS &&
	    req->mode != DAQIRI_SUB_BROADCAST)
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "policy \"lossless\" is for broadcast subscriptions only"),
		    -EINVAL;
	/* Subscriptions that ended keep their slot until the worker lets
	 * them go; free those first rather than refuse for them. */
	if (s->nsubs >= (int)s->max_subs)
		reap_gone(s);
	if (s->nsubs >= (int)s->max_subs)
		return daqiri_err_set(err, DAQIRI_ST_TOO_MANY_CONSUMERS,
		    "stream '%s' has %u subscriptions already", s->name,
		    s->max_subs), -EUSERS;
	budget = stream_held_budget(s);
	used = stream_held_promised(s, false, 0);
	left = budget > used ? budget - used : 0;
	/* One unprivileged user gets at most half the budget, so it cannot
	 * take a stream from every other user (root and the admin group
	 * are bounded by the budget alone). */
	if (!peer->admin) {
		uint64_t mine = stream_held_promised(s, true, peer->uid);
		uint32_t share = stream_uid_share(s);
		uint32_t mine_left = share > mine ? share - (uint32_t)mine : 0;

		if (req->max_held != 0 && req->max_held > mine_left)
			return daqiri_err_set(err, DAQIRI_ST_NO_RESOURCES,
			    "stream '%s': max_held %u would give uid %u %llu "
			    "held buffers, more than its share of %u (half of "
			    "the %u the reorder window leaves)", s->name,
			    req->max_held, (unsigned)peer->uid,
			    (unsigned long long)mine + req->max_held, share,
			    budget), -ENOBUFS;
		if (mine_left == 0)
			return daqiri_err_set(err, DAQIRI_ST_NO_RESOURCES,
			    "stream '%s': uid %u already holds up to %llu "
			    "buffers, its whole share (half of the %u the "
			    "reorder window leaves)", s->name,
			    (unsigned)peer->uid, (unsigned long long)mine,
			    budget), -ENOBUFS;
		if (mine_left < left)
			left = mine_left;
	}
	if (req->max_held != 0 && req->max_held > left)
		return daqiri_err_set(err, DAQIRI_ST_NO_RESOURCES,
		    "stream '%s': max_held %u would make %llu held buffers, "
		    "more than the %u of %u buffers the reorder window leaves "
		    "(window %u)", s->name, req->max_held,
		    (unsigned long long)used + req->max_held, budget, s->nbufs,
		    s->window), -ENOBUFS;
	if (left == 0)
		return daqiri_err_set(err, DAQIRI_ST_NO_RESOURCES,
		    "stream '%s': no buffers left to hold: its subscriptions "
		    "hold up to %llu, all of the %u of %u buffers the reorder "
		    "window leaves (window %u)", s->name,
		    (unsigned long long)used, budget, s->nbufs,
		    s->window), -ENOBUFS;

	u = calloc(1, sizeof(*u));
	if (u == NULL)
		return daqiri_err_set(err, DAQIRI_ST_NO_RESOURCES,
		    "out of memory"), -ENOMEM;
	u->ring_fd = -1;
	u->wake_fd = -1;
	u->conn_id = peer->conn_id;
	u->sub_id = sub_id;
	u->pid = peer->pid;
	u->uid = peer->uid;
	u->admin = peer->admin;
	u->mode = req->mode;
	u->policy = req->policy;
	snprintf(u->group, sizeof(u->group), "%s", req->group);
	/* Default: a quarter of the buffers, or what is left. */
	u->max_held = req->max_held;
	if (u->max_held == 0) {
		u->max_held = s->nbufs / 4 > 0 ? s->nbufs / 4 : 1;
		if (u->max_held > left)
			u->max_held = left;
	}
	/* A subscription holds at most nbufs buffers, so no more than nbufs
	 * descriptors can ever wait in its ring: a deeper ring would only
	 * let a consumer make the daemon pin memory for nothing. */
	depth = req->depth != 0 ? req->depth : DAQIRI_RING_DEPTH_DEFAULT;
	if (depth < s->nbufs)
		depth = round_pow2(s->nbufs);
	if (depth > DAQIRI_RING_DEPTH_DEFAULT && depth > round_pow2(s->nbufs))
		depth = round_pow2(s->nbufs) > DAQIRI_RING_DEPTH_DEFAULT ?
		    round_pow2(s->nbufs) : DAQIRI_RING_DEPTH_DEFAULT;
	u->held = calloc(u->max_held, sizeof(*u->held));
	u->held_pos = calloc(s->nbufs, sizeof(*u->held_pos));
	/* A lossless backlog is at most every buffer, each once. */
	if (u->policy == DAQIRI_POLICY_LOSSLESS)
		u->pend = calloc(s->nbufs, sizeof(*u->pend));
	if (u->held == NULL || u->held_pos == NULL ||
	    (u->policy == DAQIRI_POLICY_LOSSLESS && u->pend == NULL)) {
		rc = -ENOMEM;
		daqiri_err_set(err, DAQIRI_ST_NO_RESOURCES, "out of memory");
		goto fail;
	}
	rc = daqiri_ring_create(&u->ring, depth, s->nbufs, &u->ring_fd,
	    &u->ring_mem, &u->ring_len);
	if (rc != 0) {
		daqiri_err_set(err, DAQIRI_ST_NO_RESOURCES, "ring: %s",
		    strerror(-rc));
		goto fail;
	}
	if (s->trig_count != 0)
		daqiri_ring_trigger_set(u->ring.shm, s->trig_count, s->trig_ns);
	rc = daqiri_wake_create(&u->wake_fd, &wake_peer);
	if (rc != 0) {
		daqiri_err_set(err, DAQIRI_ST_NO_RESOURCES,
		    "wake-up socketpair: %s", strerror(-rc));
		goto fail;
	}
	fill_info(s, u, info);

	fds[0] = control_reopen_ro(s->ipc_fd >= 0 ? s->ipc_fd : s->region->fd);
	fds[1] = control_reopen_ro(s->bitmap_fd);
	fds[2] = fcntl(u->ring_fd, F_DUPFD_CLOEXEC, 0);
	/* The consumer's own socket, not a dup of the daemon's end. */
	fds[3] = wake_peer;
	wake_peer = -1;
	*nfds = 4;
	for (int k = 0; k < 4; k++) {
		if (fds[k] < 0) {
			rc = fds[k] < -1 ? fds[k] : -errno;
			daqiri_err_set(err, DAQIRI_ST_NO_RESOURCES,
			    "passing fds: %s", strerror(-rc));
			goto fail;
		}
	}
	atomic_store(&u->state, SUB_NEW);
	rc = push_cmd(s, CMD_ADD, u);
	if (rc != 0) {
		daqiri_err_set(err, DAQIRI_ST_BUSY, "stream '%s' is busy",
		    s->name);
		goto fail;
	}
	s->subs[s->nsubs++] = u;
	return 0;
fail:
	/* control closes fds[] whatever the result */
	if (wake_peer >= 0)
		close(wake_peer);
	sub_free(u);
	return rc;
}

int
stream_unsubscribe(struct stream *s, uint64_t conn_id, uint32_t sub_id)
{
	int n = 0;

	for (int k = 0; k < s->nsubs; k++) {
		struct sub *u = s->subs[k];

		if (u->conn_id != conn_id || (sub_id != 0 && u->sub_id != sub_id) ||
		    u->removing)
			continue;
		if (push_cmd(s, CMD_REMOVE, u) != 0) {
			log_warnx("stream '%s': command queue full; subscription "
			    "%u ends later", s->name, u->sub_id);
			continue;
		}
		u->removing = true;
		n++;
	}
	return n;
}

void
stream_reap(struct stream *s,
	    void (*cb)(void *ctx, uint64_t conn_id, uint32_t sub_id,
		       const char *why),
	    void *ctx)
{
	for (int k = 0; k < s->nsubs; k++) {
		struct sub *u = s->subs[k];

		if (atomic_load_explicit(&u->state, memory_order_acquire) ==
		    SUB_BROKEN && !u->reported && !u->removing) {
			u->reported = true;
			if (cb != NULL)
				cb(ctx, u->conn_id, u->sub_id, u->why);
		}
	}
	reap_gone(s);
	reorder_tune_free(atomic_exchange_explicit(&s->tune_retired, NULL,
	    memory_order_acquire));
}

/* --- reload ---------------------------------------------------------------- */

int
stream_tune_check(const struct stream *s, uint32_t window, char *err,
		  size_t errlen)
{
	uint32_t w = geom_window(window, s->geom->id_space);
	uint64_t keep = (uint64_t)w + 1;
	uint32_t budget = s->nbufs > keep ? s->nbufs - (uint32_t)keep : 0;
	uint64_t used = stream_held_promised(s, false, 0);

	if (used <= budget)
		return 0;
	snprintf(err, errlen, "stream '%s': window %u would leave %u of its %u "
	    "buffers to hold, and its subscriptions were promised %llu; "
	    "end some or give the region more buffers (a restart)", s->name,
	    w, budget, s->nbufs, (unsigned long long)used);
	return -ENOBUFS;
}

bool
stream_tune_busy(const struct stream *s)
{
	return atomic_load_explicit(&((struct stream *)s)->tune_pending,
	    memory_order_acquire) != NULL;
}

struct reorder_tune *
stream_tune_prepare(struct stream *s, uint32_t timeout_us,
		    enum daqiri_fill fill, uint32_t window)
{
	if (s->plan == NULL) {
		errno = EINVAL;
		return NULL;
	}
	if (stream_tune_busy(s)) {
		errno = EBUSY;
		return NULL;
	}
	reorder_tune_free(atomic_exchange_explicit(&s->tune_retired, NULL,
	    memory_order_acquire));
	return reorder_tune_prepare(s->plan, timeout_us, fill, window);
}

void
stream_tune_post(struct stream *s, struct reorder_tune *t)
{
	s->window = reorder_tune_window(t);
	atomic_store_explicit(&s->tune_pending, t, memory_order_release);
	if (s->worker_wake_fd >= 0)
		(void)!write(s->worker_wake_fd, &(uint64_t){ 1 },
		    sizeof(uint64_t));
}

void
stream_set_config(struct stream *s, const struct cfg_reorder *r)
{
	if (s->plan != NULL)
		s->reorder_cfg = r;
}

uint64_t
stream_trigger(struct stream *s, uint64_t ns)
{
	s->trig_count++;
	s->trig_ns = ns;
	/* gone ones too: their rings are still mapped, nobody reads them */
	for (int k = 0; k < s->nsubs; k++)
		daqiri_ring_trigger_set(s->subs[k]->ring.shm, s->trig_count,
		    s->trig_ns);
	return s->trig_count;
}

void
stream_subs_each(const struct stream *s,
		 void (*cb)(void *ctx, uint64_t conn_id, uint32_t sub_id),
		 void *ctx)
{
	for (int k = 0; k < s->nsubs; k++)
		if (sub_live(s->subs[k]))
			cb(ctx, s->subs[k]->conn_id, s->subs[k]->sub_id);
}

/* --- accessors and counters --------------------------------------------- */

struct doctor *
stream_doctor(struct stream *s)
{
	return &s->doc;
}

bool
stream_is_reorder(const struct stream *s)
{
	return s->kind == DAQIRI_STREAM_REORDER;
}

void
stream_set_wake_fd(struct stream *s, int fd)
{
	s->worker_wake_fd = fd;
}

void
stream_use_capture_clock(struct stream *s)
{
	s->capture_clock = true;
}

int
stream_nsubs(const struct stream *s)
{
	return s->nsubs;
}

const char *
stream_name(const struct stream *s)
{
	return s->name;
}

struct reorder_plan *
stream_plan(struct stream *s)
{
	return s->plan;
}

/* Read the counters the worker last published (any of them NULL: not
 * wanted), consistent with one another. */
static void
counters_read(struct stream *s, struct reorder_counters *reorder,
	      struct raw_counters *raw, struct stream_counters *handoff)
{
	uint32_t v;

	do {
		v = seqlock_read_begin(&s->snap_lock);
		if (reorder != NULL)
			seqlock_copy((uint64_t *)reorder,
			    (const uint64_t *)&s->snap_reorder,
			    SEQLOCK_WORDS(*reorder));
		if (raw != NULL)
			seqlock_copy((uint64_t *)raw,
			    (const uint64_t *)&s->snap_raw, SEQLOCK_WORDS(*raw));
		if (handoff != NULL)
			seqlock_copy((uint64_t *)handoff,
			    (const uint64_t *)&s->snap_stream,
			    SEQLOCK_WORDS(*handoff));
	} while (seqlock_read_retry(&s->snap_lock, v));
}

void
stream_snapshot(struct stream *s, struct reorder_counters *reorder,
		struct stream_counters *handoff)
{
	struct raw_counters raw;

	counters_read(s, reorder, &raw, handoff);
	/* A raw stream's input shows as reorder packets_in/placed, so the
	 * interface sums stay one formula. */
	if (s->plan == NULL && reorder != NULL) {
		memset(reorder, 0, sizeof(*reorder));
		reorder->packets_in = raw.packets_in;
		reorder->placed = raw.placed;
		reorder->malformed = raw.oversize;
		reorder->no_buffer = raw.no_buffer;
	}
}

/* --- JSON views ----------------------------------------------------------- */

/*
 * h as a member key of o: {"le_ns": [bounds], "buckets": [per bucket, not
 * cumulative, the last +Inf], "count": N, "sum_ns": S}. The metrics
 * endpoint renders these as Prometheus histograms; daqirictl prints
 * p50/p99 from them.
 */
static int
hist_json(cJSON *o, const char *key, const struct daqiri_hist *h)
{
	cJSON *ho, *le, *b;

	if ((ho = cJSON_AddObjectToObject(o, key)) == NULL ||
	    (le = cJSON_AddArrayToObject(ho, "le_ns")) == NULL ||
	    (b = cJSON_AddArrayToObject(ho, "buckets")) == NULL)
		return -ENOMEM;
	for (unsigned i = 0; i < DAQIRI_HIST_NBOUNDS; i++)
		if (!cJSON_AddItemToArray(le,
		    cJSON_CreateNumber((double)daqiri_hist_le_ns(i))))
			return -ENOMEM;
	for (unsigned i = 0; i < DAQIRI_HIST_NBUCKETS; i++)
		if (!cJSON_AddItemToArray(b,
		    cJSON_CreateNumber((double)h->buckets[i])))
			return -ENOMEM;
	if (cJSON_AddNumberToObject(ho, "count", (double)h->count) == NULL ||
	    cJSON_AddNumberToObject(ho, "sum_ns", (double)h->sum_ns) == NULL)
		return -ENOMEM;
	return 0;
}

int
stream_info_json(const struct stream *s, cJSON *o)
{
	const struct cfg_reorder *r = s->reorder_cfg;

	if (cJSON_AddStringToObject(o, "name", s->name) == NULL ||
	    cJSON_AddStringToObject(o, "kind",
		daqiri_stream_kind_name(s->kind)) == NULL ||
	    cJSON_AddStringToObject(o, "memory_region", s->region->name) == NULL ||
	    cJSON_AddStringToObject(o, "memory_kind",
		daqiri_mem_kind_name(s->region->kind)) == NULL ||
	    cJSON_AddStringToObject(o, "dtype",
		daqiri_dtype_name(out_dtype(r))) == NULL ||
	    cJSON_AddNumberToObject(o, "nbufs", s->nbufs) == NULL ||
	    cJSON_AddNumberToObject(o, "packets_per_batch", s->geom->ppb) == NULL ||
	    cJSON_AddNumberToObject(o, "slot_bytes", (double)s->geom->slot_bytes) == NULL ||
	    cJSON_AddNumberToObject(o, "tensor_bytes", (double)s->geom->tensor_bytes) == NULL ||
	    cJSON_AddNumberToObject(o, "subscribers", s->nsubs) == NULL)
		return -ENOMEM;
	if (r == NULL)
		return 0;
	if (cJSON_AddStringToObject(o, "reorder_type",
		r->type == CFG_REORDER_GPU ? "gpu" : "cpu") == NULL ||
	    cJSON_AddStringToObject(o, "input_type",
		r->has_data_types ? daqiri_dtype_name(r->input_type) : "raw") == NULL ||
	    cJSON_AddNumberToObject(o, "payload_bytes", s->geom->in_bytes) == NULL ||
	    cJSON_AddNumberToObject(o, "window", s->window) == NULL)
		return -ENOMEM;
	return 0;
}

int
stream_stats_json(struct stream *s, cJSON *o)
{
	struct reorder_counters reorder;
	struct raw_counters raw;
	struct stream_counters handoff;
	const uint64_t *v = s->plan != NULL ? (const uint64_t *)&reorder :
	    (const uint64_t *)&raw;
	const char *const *names = s->plan != NULL ? reorder_counter_names :
	    raw_counter_names;
	int n = s->plan != NULL ? REORDER_NCOUNTERS : RAW_NCOUNTERS;
	cJSON *plan_obj, *handoff_obj;

	counters_read(s, &reorder, &raw, &handoff);
	if (cJSON_AddStringToObject(o, "name", s->name) == NULL ||
	    cJSON_AddStringToObject(o, "kind",
		daqiri_stream_kind_name(s->kind)) == NULL ||
	    (plan_obj = cJSON_AddObjectToObject(o, s->plan != NULL ?
		"reorder" : "raw")) == NULL ||
	    (handoff_obj = cJSON_AddObjectToObject(o, "handoff")) == NULL)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		if (cJSON_AddNumberToObject(plan_obj, names[i],
		    (double)v[i]) == NULL)
			return -ENOMEM;
	if (cJSON_AddNumberToObject(handoff_obj, "published",
		(double)handoff.published) == NULL ||
	    cJSON_AddNumberToObject(handoff_obj, "delivered",
		(double)handoff.delivered) == NULL ||
	    cJSON_AddNumberToObject(handoff_obj, "unseen",
		(double)handoff.unseen) == NULL ||
	    cJSON_AddNumberToObject(handoff_obj, "overruns",
		(double)handoff.overruns) == NULL ||
	    cJSON_AddNumberToObject(handoff_obj, "subs_broken",
		(double)handoff.subs_broken) == NULL ||
	    cJSON_AddNumberToObject(handoff_obj, "subs_held_too_long",
		(double)handoff.subs_held_too_long) == NULL ||
	    cJSON_AddNumberToObject(handoff_obj, "free_bufs",
		(double)handoff.free_bufs) == NULL ||
	    cJSON_AddNumberToObject(handoff_obj, "held_bufs",
		(double)handoff.held_bufs) == NULL ||
	    cJSON_AddNumberToObject(handoff_obj, "open_bufs",
		(double)handoff.open_bufs) == NULL ||
	    cJSON_AddNumberToObject(handoff_obj, "blocked_by",
		(double)handoff.blocked_by) == NULL ||
	    hist_json(o, "assembly_ns", &handoff.assembly) != 0 ||
	    hist_json(o, "hold_ns", &handoff.hold) != 0)
		return -ENOMEM;
	/* the books of one instant (one seqlock copy): every packet in is
	 * placed or dropped for a named reason */
	if (s->plan != NULL && cJSON_AddBoolToObject(plan_obj, "balanced",
	    reorder.placed + reorder.duplicate + reorder.late +
	    reorder.malformed + reorder.no_buffer + reorder.backend_error ==
	    reorder.packets_in) == NULL)
		return -ENOMEM;
	return 0;
}

/* u's hold times as the worker last published them. */
static void
sub_hold_read(struct sub *u, struct daqiri_hist *h)
{
	uint32_t v;

	do {
		v = seqlock_read_begin(&u->hold_lock);
		seqlock_copy((uint64_t *)h, (const uint64_t *)&u->hold_snap,
		    SEQLOCK_WORDS(*h));
	} while (seqlock_read_retry(&u->hold_lock, v));
}

int
stream_consumers_json(struct stream *s, cJSON *arr)
{
	for (int k = 0; k < s->nsubs; k++) {
		struct sub *u = s->subs[k];
		int st = atomic_load_explicit(&u->state, memory_order_relaxed);
		cJSON *o = cJSON_CreateObject();
		struct daqiri_hist hold;

		if (o == NULL)
			return -ENOMEM;
		cJSON_AddItemToArray(arr, o);
		sub_hold_read(u, &hold);
		if (cJSON_AddStringToObject(o, "stream", s->name) == NULL ||
		    cJSON_AddNumberToObject(o, "conn", (double)u->conn_id) == NULL ||
		    cJSON_AddNumberToObject(o, "sub_id", u->sub_id) == NULL ||
		    cJSON_AddNumberToObject(o, "pid", u->pid) == NULL ||
		    cJSON_AddNumberToObject(o, "uid", u->uid) == NULL ||
		    cJSON_AddStringToObject(o, "mode",
			daqiri_sub_mode_name(u->mode)) == NULL ||
		    cJSON_AddStringToObject(o, "group", u->group) == NULL ||
		    cJSON_AddStringToObject(o, "policy",
			daqiri_sub_policy_name(u->policy)) == NULL ||
		    cJSON_AddStringToObject(o, "state",
			st == SUB_BROKEN ? "broken" : st == SUB_GONE ? "gone" :
			u->removing ? "ending" : st == SUB_NEW ? "new" :
			"active") == NULL ||
		    cJSON_AddNumberToObject(o, "delivered", (double)atomic_load(
			&u->delivered)) == NULL ||
		    cJSON_AddNumberToObject(o, "released", (double)atomic_load(
			&u->released)) == NULL ||
		    cJSON_AddNumberToObject(o, "overruns", (double)atomic_load(
			&u->overruns)) == NULL ||
		    cJSON_AddNumberToObject(o, "held", atomic_load(
			&u->held_now)) == NULL ||
		    cJSON_AddNumberToObject(o, "pending", atomic_load(
			&u->pending_now)) == NULL ||
		    cJSON_AddNumberToObject(o, "blocked", (double)atomic_load(
			&u->blocked)) == NULL ||
		    cJSON_AddNumberToObject(o, "max_held", u->max_held) == NULL ||
		    cJSON_AddNumberToObject(o, "ring_depth", u->ring.depth) == NULL ||
		    hist_json(o, "hold_ns", &hold) != 0)
			return -ENOMEM;
	}
	return 0;
}
