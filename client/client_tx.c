/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libdaqiri-client (daqiri_client.h), the TX channels: the tx_open
 * handshake (reply, then the fds tx_ring, tx_pool and wake; ipc instead
 * of tx_pool for a device pool), the checked attach of the ring pair and
 * the read-write pool (or the device pool opened by CUDA IPC), the free
 * buffers, the
 * submissions with their doorbell, the completions, and the waiting in
 * daqiri_tx_flush() / daqiri_tx_wait(), which watches the control socket
 * too so a dead daemon or a channel it ended ends the wait.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef DAQIRI_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "client_internal.h"

void
client_tx_free(struct daqiri_tx *t)
{
	struct daqiri_tx **pp;

	if (t == NULL)
		return;
	if (t->d != NULL)
		for (pp = &t->d->txs; *pp != NULL; pp = &(*pp)->next)
			if (*pp == t) {
				*pp = t->next;
				break;
			}
#ifdef DAQIRI_HAVE_CUDA
	if (t->pool != NULL && t->pool_dev)
		cudaIpcCloseMemHandle(t->pool);
#endif
	if (t->pool != NULL && !t->pool_dev)
		munmap(t->pool, t->pool_len);
	if (t->ring_map != NULL)
		munmap(t->ring_map, t->ring_len);
	if (t->wake_fd >= 0)
		close(t->wake_fd);
	free(t->state);
	free(t->free);
	free(t);
}

/* The ring as the daemon laid it out must be the one its reply
 * describes, and a new channel has nothing in flight. */
static int
ring_matches(const struct daqiri_tx *t)
{
	const struct daqiri_txring *r = &t->ring;
	const struct daqiri_tx_info *in = &t->info;
	const struct daqiri_txring_shm *h = r->shm;

	if (r->nbufs != in->nbufs || r->buf_size != in->buf_size ||
	    r->buf_stride != in->buf_stride || r->depth != in->ring_depth ||
	    h->pool_bytes != in->pool_bytes)
		return -EPROTO;
	if (atomic_load(&h->sub_tail) != r->sub_pos ||
	    atomic_load(&h->comp_head) != r->comp_pos)
		return -EPROTO;
	return 0;
}

/*
 * A device pool: fd is a sealed memfd of DAQIRI_TX_IPC_FILE_BYTES holding
 * its cudaIpcMemHandle_t; open it on the channel's GPU. 0, -EPROTO (not
 * such a file), -ENODEV (CUDA refused; the reason in d->err) or
 * -ENOTSUP (built without CUDA).
 */
static int
tx_open_device(struct daqiri_tx *t, int fd)
{
	if (t->host_only) {
		snprintf(t->d->err, sizeof(t->d->err), "tx queue '%s' is in "
		    "device memory (GPU %d), and this caller takes host pools "
		    "only", t->info.queue, t->info.device);
		return -ENOTSUP;
	}
#ifdef DAQIRI_HAVE_CUDA
	cudaIpcMemHandle_t mh;
	struct stat st;
	void *p = NULL;
	int seals = fcntl(fd, F_GET_SEALS);

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != DAQIRI_TX_IPC_FILE_BYTES || seals < 0 ||
	    !(seals & F_SEAL_WRITE) ||
	    pread(fd, &mh, sizeof(mh), 0) != (ssize_t)sizeof(mh)) {
		client_set_err(t->d, "the TX channel's device pool handle is "
		    "not a sealed file of one CUDA IPC memory handle");
		return -EPROTO;
	}
	if (cudaSetDevice(t->info.device) != cudaSuccess) {
		snprintf(t->d->err, sizeof(t->d->err), "CUDA: cannot use GPU "
		    "%d for the TX channel's device pool: %s", t->info.device,
		    cudaGetErrorString(cudaGetLastError()));
		return -ENODEV;
	}
	if (cudaIpcOpenMemHandle(&p, mh, cudaIpcMemLazyEnablePeerAccess) !=
	    cudaSuccess) {
		snprintf(t->d->err, sizeof(t->d->err), "CUDA: cannot open the "
		    "TX channel's device pool: %s",
		    cudaGetErrorString(cudaGetLastError()));
		return -ENODEV;
	}
	t->pool = p;
	t->pool_len = (size_t)t->info.pool_bytes;
	t->pool_dev = true;
	return 0;
#else
	(void)fd;
	client_set_err(t->d, "device TX channel: this libdaqiri-client was "
	    "built without CUDA");
	return -ENOTSUP;
#endif
}

static int
tx_receive_fds(struct daqiri_tx *t)
{
	const struct daqiri_tx_info *in = &t->info;
	int fds[DAQIRI_SUB_MAX_FDS], r;
	uint32_t i;
	const char *what = NULL;
	void *p;

	r = client_recv_fds(t->d, in->tx_id, in->nfds, in->fds, fds);
	if (r < 0)
		return r;
	/* daqiri_tx_info_decode() checked the order: ring, pool, wake. */
	t->ring_len = (size_t)in->ring_bytes;
	r = client_map_fd(fds[0], t->ring_len, PROT_READ | PROT_WRITE,
	    &p);
	what = "the TX channel's ring is not a sealed file of the size the "
	    "daemon's reply gives";
	if (r == 0) {
		t->ring_map = p;
		r = daqiri_txring_attach(&t->ring, p, t->ring_len);
		if (r == 0)
			r = ring_matches(t);
		what = "the TX channel's ring is not laid out as the daemon's "
		    "reply describes, or has something in flight";
	}
	if (r == 0 && in->mem_kind == DAQIRI_MEM_DEVICE) {
		/* tx_open_device() sets its own reason */
		r = tx_open_device(t, fds[1]);
		what = NULL;
	} else if (r == 0) {
		t->pool_len = (size_t)in->pool_bytes;
		r = client_map_fd(fds[1], t->pool_len, PROT_READ | PROT_WRITE,
		    &p);
		if (r == 0)
			t->pool = p;
		what = "the TX channel's pool is not a sealed file of the size "
		    "the daemon's reply gives";
	}
	if (r == 0 && !client_is_dgram(fds[2])) {
		r = -EPROTO;
		what = "the TX channel's doorbell is not a datagram socket";
	}
	if (r == 0) {
		t->wake_fd = fds[2];
		fds[2] = -1;
	}
	if (r == -EPROTO && what != NULL)
		client_set_err(t->d, what);
	for (i = 0; i < in->nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return r;
}

static int
tx_close_id(struct daqiri *d, uint32_t id)
{
	return client_request_id(d, DAQIRI_MSG_TX_CLOSE, "tx", id);
}

/* The reply, the fd series, the mappings and the buffers of a new
 * channel t (linked, wake_fd -1). 0, or a negative errno with the
 * daemon's side undone. */
static int
tx_open(struct daqiri_tx *t, const struct daqiri_tx_req *req)
{
	struct daqiri *d = t->d;
	struct daqiri_err err;
	struct daqiri_msg m;
	struct daqiri_tx *o;
	cJSON *obj;
	uint32_t i;
	int r;

	obj = daqiri_msg_new(DAQIRI_MSG_TX_OPEN);
	if (obj != NULL && daqiri_tx_req_encode(req, obj) < 0) {
		cJSON_Delete(obj);
		obj = NULL;
	}
	r = client_transact(d, obj, &m);
	if (r < 0)
		return r;
	r = client_reply_status(d, &m);
	if (r < 0) {
		daqiri_msg_free(&m);
		return r;
	}
	if (daqiri_tx_info_decode(m.json, &t->info, &err) < 0) {
		/* Without readable metadata the fd series that follows
		 * cannot be taken apart: the connection is unusable. */
		daqiri_msg_free(&m);
		snprintf(d->err, sizeof(d->err), "bad tx_open reply: %s",
		    err.msg);
		shutdown(d->fd, SHUT_RDWR);
		d->dead = true;
		return -EPROTO;
	}
	daqiri_msg_free(&m);
	t->conn_id = d->conn_id;
	t->instance = d->instance;
	/* The fd series follows whatever we think of the reply. */
	r = tx_receive_fds(t);
	if (r == 0 && req->nbufs != 0 && t->info.nbufs != req->nbufs) {
		client_set_err(d, "the daemon granted another number of "
		    "buffers than asked");
		r = -EPROTO;
	}
	for (o = d->txs; r == 0 && o != NULL; o = o->next)
		if (o != t && o->info.tx_id == t->info.tx_id &&
		    client_tx_current(o)) {
			client_set_err(d, "the daemon gave a channel id "
			    "already in use");
			r = -EPROTO;
		}
	if (r == 0) {
		t->state = calloc(t->info.nbufs, 1);
		t->free = calloc(t->info.nbufs, sizeof(*t->free));
		if (t->state == NULL || t->free == NULL)
			r = -ENOMEM;
	}
	if (r < 0) {
		char why[sizeof(d->err)];

		memcpy(why, d->err, sizeof(why));
		if (!d->dead)
			tx_close_id(d, t->info.tx_id);
		memcpy(d->err, why, sizeof(why));
		return r;
	}
	/* Lowest index on top: the first buffers go out first. */
	for (i = 0; i < t->info.nbufs; i++)
		t->free[i] = t->info.nbufs - 1 - i;
	t->nfree = t->info.nbufs;
	return 0;
}

int
daqiri_tx_open(struct daqiri *d, const char *queue,
	       const struct daqiri_tx_opts *opts, struct daqiri_tx **out)
{
	struct daqiri_tx_req req;
	struct daqiri_tx *t;
	int r;

	if (out == NULL)
		return -EINVAL;
	*out = NULL;
	if (d == NULL || queue == NULL)
		return -EINVAL;
	if (CLIENT_IS_REMOTE(d)) {
		client_set_err(d, "TX channels are local-only: run the sender on the daemon's host");
		return -EOPNOTSUPP;
	}
	memset(&req, 0, sizeof(req));
	if (opts != NULL) {
		if (opts->size < offsetof(struct daqiri_tx_opts, nbufs) +
		    sizeof(opts->nbufs))
			return -EINVAL;
		req.nbufs = opts->nbufs;
		if (opts->size >= offsetof(struct daqiri_tx_opts, flags) +
		    sizeof(opts->flags) && (opts->flags &
		    ~DAQIRI_TX_HOST_ONLY) != 0) {
			snprintf(d->err, sizeof(d->err), "TX flags 0x%x: "
			    "unknown", opts->flags);
			return -EINVAL;
		}
	}
	if (queue[0] == '\0' || strlen(queue) >= sizeof(req.queue)) {
		snprintf(d->err, sizeof(d->err), "TX queue name '%s': empty or "
		    "longer than %zu bytes", queue, sizeof(req.queue) - 1);
		return -EINVAL;
	}
	if (req.nbufs > DAQIRI_TX_NBUFS_MAX) {
		snprintf(d->err, sizeof(d->err), "nbufs %u: a channel has at "
		    "most %u buffers", req.nbufs, DAQIRI_TX_NBUFS_MAX);
		return -EINVAL;
	}
	snprintf(req.queue, sizeof(req.queue), "%s", queue);
	if (d->dead || d->state != CLIENT_UP)
		return -ENOTCONN;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return -ENOMEM;
	t->wake_fd = -1;
	t->d = d;
	t->host_only = opts != NULL && opts->size >=
	    offsetof(struct daqiri_tx_opts, flags) + sizeof(opts->flags) &&
	    (opts->flags & DAQIRI_TX_HOST_ONLY) != 0;
	t->next = d->txs;
	d->txs = t;
	r = tx_open(t, &req);
	if (r < 0) {
		client_tx_free(t);
		return r;
	}
	*out = t;
	return 0;
}

/* Whether the channel still reaches its daemon: 0, or the error every
 * call returns from now on. */
bool
client_tx_current(const struct daqiri_tx *t)
{
	return t->conn_id == t->d->conn_id && t->instance == t->d->instance;
}

static int
tx_alive(struct daqiri_tx *t)
{
	const struct daqiri *d = t->d;

	if (t->lost != 0)
		return t->lost;
	if (t->closed || d->dead || d->state != CLIENT_UP ||
	    !client_tx_current(t))
		return -ENOTCONN;
	return 0;
}

/* Take every completion off the ring: the buffers are free again. 0, or
 * -EPROTO (sticky) when the daemon completed a buffer it did not have. */
static int
tx_reap(struct daqiri_tx *t)
{
	struct daqiri_tx_comp c;
	int r;

	if (t->lost != 0)
		return t->lost;
	while ((r = daqiri_tx_comp_pop(&t->ring, &c)) == 1) {
		if (c.buf >= t->info.nbufs ||
		    t->state[c.buf] != CLIENT_TXBUF_SUBMITTED) {
			r = -EPROTO;
			break;
		}
		t->state[c.buf] = CLIENT_TXBUF_FREE;
		t->free[t->nfree++] = c.buf;
		t->in_flight--;
		if (c.status == DAQIRI_TX_SENT)
			t->sent++;
		else if (c.status < DAQIRI_TX_STATUS_MAX)
			t->failed[c.status]++;
		else
			t->failed[DAQIRI_TX_ENGINE_ERROR]++;
	}
	if (r < 0) {
		t->lost = -EPROTO;
		client_set_err(t->d, "TX channel: the daemon's completion "
		    "ring is corrupted");
		return -EPROTO;
	}
	return 0;
}

/* Look at the control socket: a tx_closed event or the daemon's hang-up
 * ends the channel. 0 or -ENOTCONN. */
static int
tx_pump(struct daqiri_tx *t)
{
	int r = tx_alive(t);

	if (r == 0 && client_pump(t->d) < 0)
		r = -ENOTCONN;
	if (r == 0)
		r = tx_alive(t);
	return r;
}

static int
check_buf(const struct daqiri_tx *t, const struct daqiri_tx_buf *b)
{
	return b != NULL && b->index < t->info.nbufs &&
	    t->state[b->index] == CLIENT_TXBUF_TAKEN &&
	    b->data == t->pool + (size_t)b->index * t->info.buf_stride &&
	    b->len <= t->info.buf_size;
}

int
daqiri_tx_buf(struct daqiri_tx *t, struct daqiri_tx_buf *b)
{
	uint32_t i;
	int r;

	if (t == NULL || b == NULL)
		return -EINVAL;
	r = tx_reap(t);
	if (r < 0)
		return r;
	if (t->nfree == 0) {
		/* Only now the system call: the hot path makes none. */
		r = tx_pump(t);
		if (r < 0)
			return r;
		r = tx_reap(t);
		if (r < 0)
			return r;
	}
	if (t->nfree == 0) {
		t->ring_full++;
		daqiri_txring_count_full(&t->ring);
		return -EAGAIN;
	}
	i = t->free[--t->nfree];
	t->state[i] = CLIENT_TXBUF_TAKEN;
	b->data = t->pool + (size_t)i * t->info.buf_stride;
	b->cap = t->info.buf_size;
	b->len = 0;
	b->index = i;
	return 0;
}

int
daqiri_tx_send(struct daqiri_tx *t, struct daqiri_tx_buf *bufs, unsigned n)
{
	unsigned i, k;
	int r = 0;

	if (t == NULL || (bufs == NULL && n > 0))
		return -EINVAL;
	/* All or nothing for a bad buffer: mark each one checked so the
	 * same buffer twice in bufs is caught too. */
	for (i = 0; i < n; i++) {
		if (!check_buf(t, &bufs[i]))
			break;
		t->state[bufs[i].index] = CLIENT_TXBUF_SUBMITTED;
	}
	for (k = 0; k < i; k++)
		t->state[bufs[k].index] = CLIENT_TXBUF_TAKEN;
	if (i < n)
		return -EINVAL;
	r = tx_alive(t);
	if (r < 0)
		return r;
	for (i = 0; i < n; i++) {
		r = daqiri_tx_sub_push(&t->ring, bufs[i].index, bufs[i].len);
		if (r < 0)
			break;
		t->state[bufs[i].index] = CLIENT_TXBUF_SUBMITTED;
		t->in_flight++;
	}
	if (r == -ENOSPC) {
		/* Cannot happen while depth >= nbufs; counted if it does. */
		t->ring_full++;
		daqiri_txring_count_full(&t->ring);
	} else if (r == -EPROTO) {
		t->lost = -EPROTO;
		client_set_err(t->d, "TX channel: the daemon's submission "
		    "ring position is impossible");
		if (i == 0)
			return -EPROTO;
	}
	/* The worker asked for a kick before it slept: one per sleep. A
	 * full doorbell (-EAGAIN) means one is queued already. */
	if (i > 0 && daqiri_txring_kick_wanted(&t->ring))
		daqiri_wake_signal(t->wake_fd);
	return (int)i;
}

int
daqiri_tx_discard(struct daqiri_tx *t, struct daqiri_tx_buf *b)
{
	if (t == NULL || b == NULL || b->index >= t->info.nbufs ||
	    t->state[b->index] != CLIENT_TXBUF_TAKEN ||
	    b->data != t->pool + (size_t)b->index * t->info.buf_stride)
		return -EINVAL;
	t->state[b->index] = CLIENT_TXBUF_FREE;
	t->free[t->nfree++] = b->index;
	return 0;
}

/* Arm the doorbell after taking the queued wake-ups off the socket: 0
 * armed and nothing new, 1 completions arrived meanwhile, -EPROTO. */
static int
tx_arm(struct daqiri_tx *t)
{
	int r = daqiri_wake_drain(t->wake_fd);

	if (r < 0)
		return r;
	r = daqiri_txring_arm_wake(&t->ring);
	if (r == -EPROTO) {
		t->lost = -EPROTO;
		client_set_err(t->d, "TX channel: the daemon's completion "
		    "ring is corrupted");
	}
	return r;
}

/* Wait until done(t) or timeout_ms (-1 forever). */
static int
tx_wait_until(struct daqiri_tx *t, bool (*done)(const struct daqiri_tx *),
	      int timeout_ms)
{
	uint64_t deadline = UINT64_MAX, now;
	struct pollfd p[2];
	int r, wait;

	if (timeout_ms >= 0)
		deadline = daqiri_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		r = tx_reap(t);
		if (r < 0)
			return r;
		if (done(t))
			return 0;
		r = tx_pump(t);
		if (r < 0) {
			/* What completed before the end still counts. */
			if (tx_reap(t) == 0 && done(t))
				return 0;
			return r;
		}
		r = tx_arm(t);
		if (r < 0)
			return r;
		if (r > 0)
			continue;
		wait = -1;
		if (deadline != UINT64_MAX) {
			now = daqiri_mono_ns();
			if (now >= deadline)
				return -ETIMEDOUT;
			wait = (int)((deadline - now + 999999) / 1000000);
		}
		p[0].fd = t->wake_fd;
		p[0].events = POLLIN;
		p[1].fd = t->d->fd;
		p[1].events = POLLIN;
		p[0].revents = p[1].revents = 0;
		r = poll(p, 2, wait);
		if (r < 0)
			return errno == EINTR ? -EINTR : -errno;
	}
}

static bool
all_done(const struct daqiri_tx *t)
{
	return t->in_flight == 0;
}

static bool
one_free(const struct daqiri_tx *t)
{
	return t->nfree > 0;
}

int
daqiri_tx_flush(struct daqiri_tx *t, int timeout_ms)
{
	if (t == NULL)
		return -EINVAL;
	return tx_wait_until(t, all_done, timeout_ms);
}

int
daqiri_tx_wait(struct daqiri_tx *t, int timeout_ms)
{
	if (t == NULL)
		return -EINVAL;
	return tx_wait_until(t, one_free, timeout_ms);
}

int
daqiri_tx_stats(struct daqiri_tx *t, struct daqiri_tx_stats *out)
{
	struct daqiri_tx_stats x;

	if (t == NULL || out == NULL || out->size < sizeof(size_t))
		return -EINVAL;
	/* A corrupted ring still leaves the counters so far to report. */
	(void)tx_reap(t);
	memset(&x, 0, sizeof(x));
	x.size = out->size;
	snprintf(x.queue, sizeof(x.queue), "%s", t->info.queue);
	x.nbufs = t->info.nbufs;
	x.buf_size = t->info.buf_size;
	x.free = t->nfree;
	x.sent = t->sent;
	x.failed = t->failed[DAQIRI_TX_TOO_BIG] +
	    t->failed[DAQIRI_TX_ENGINE_ERROR] + t->failed[DAQIRI_TX_CLOSED];
	x.ring_full = t->ring_full;
	x.in_flight = t->in_flight;
	x.too_big = t->failed[DAQIRI_TX_TOO_BIG];
	x.engine_error = t->failed[DAQIRI_TX_ENGINE_ERROR];
	x.stopped = t->failed[DAQIRI_TX_CLOSED];
	x.device = t->pool_dev ? t->info.device : -1;
	memcpy(out, &x, out->size < sizeof(x) ? out->size : sizeof(x));
	return 0;
}

int
daqiri_tx_fd(const struct daqiri_tx *t)
{
	return t != NULL ? t->wake_fd : -EINVAL;
}

int
daqiri_tx_arm(struct daqiri_tx *t)
{
	int r;

	if (t == NULL)
		return -EINVAL;
	r = tx_alive(t);
	if (r < 0)
		return r;
	return tx_arm(t);
}

int
daqiri_tx_close(struct daqiri_tx *t)
{
	int r = 0;

	if (t == NULL)
		return 0;
	/* A daemon that is gone, or that ended the channel itself, has
	 * nothing left to close: not an error. */
	if (!t->closed && !t->d->dead && t->d->state == CLIENT_UP &&
	    client_tx_current(t)) {
		r = tx_close_id(t->d, t->info.tx_id);
		if (r == -ENOTCONN || (r == -ESRCH && t->closed))
			r = 0;
	}
	client_tx_free(t);
	return r;
}
