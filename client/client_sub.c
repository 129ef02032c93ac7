/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libdaqiri-client (daqiri_client.h), the subscriptions: the subscribe
 * handshake (reply, then one fd per message), the read-only mappings,
 * the CUDA IPC handles and the ring, and the waiting in daqiri_next(),
 * which watches the control socket too so a dead daemon is noticed within
 * the timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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

/* Busy-poll: how often the spinning reader looks at the control socket. */
#define CLIENT_SPIN_CHECK_NS	200000ull

_Static_assert((unsigned)DAQIRI_TENSOR_COMPLETE == DAQIRI_TENSOR_COMPLETE &&
    (unsigned)DAQIRI_TENSOR_TIMEOUT == DAQIRI_TENSOR_TIMEOUT &&
    (unsigned)DAQIRI_TENSOR_EVICTED == DAQIRI_TENSOR_EVICTED &&
    (unsigned)DAQIRI_TENSOR_HAS_GAPS == DAQIRI_TENSOR_HAS_GAPS &&
    (unsigned)DAQIRI_TENSOR_RESYNC == DAQIRI_TENSOR_RESYNC &&
    (unsigned)DAQIRI_TENSOR_FLUSH == DAQIRI_TENSOR_FLUSH &&
    (unsigned)DAQIRI_TENSOR_RESTART == DAQIRI_TENSOR_RESTART, "tensor flags");

void
client_sub_free(struct daqiri_sub *s)
{
	struct daqiri_sub **pp;

	if (s == NULL)
		return;
	if (s->opening != NULL) {
		/* Its resubscribe's reply is under way: nothing the daemon
		 * sends next could be told apart from it. */
		if (s->d != NULL && !s->d->dead) {
			shutdown(s->d->fd, SHUT_RDWR);
			s->d->dead = true;
		}
		client_sub_reopen_drop(s);
	}
	if (s->d != NULL)
		for (pp = &s->d->subs; *pp != NULL; pp = &(*pp)->next)
			if (*pp == s) {
				*pp = s->next;
				break;
			}
	if (s->rs != NULL)
		client_remote_sub_free(s);
#ifdef DAQIRI_HAVE_CUDA
	if (s->events != NULL) {
		uint32_t i;

		for (i = 0; i < s->info.nbufs; i++)
			if (s->events[i] != NULL)
				cudaEventDestroy((cudaEvent_t)s->events[i]);
	}
	if (s->dev_base != NULL)
		cudaIpcCloseMemHandle(s->dev_base);
	if (s->cuda_registered)
		cudaHostUnregister((void *)s->tensor_map);
#endif
	free(s->events);
	if (s->tensor_map != NULL)
		munmap((void *)s->tensor_map, s->tensor_len);
	if (s->bitmap_map != NULL)
		munmap((void *)s->bitmap_map, s->bitmap_len);
	if (s->ring_map != NULL)
		munmap(s->ring_map, s->ring_len);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	free(s->held);
	client_orphans_free(s);
	free(s);
}

int
client_map_fd(int fd, size_t len, int prot, void **out)
{
	struct stat st;
	void *p;
	int seals;

	if (fstat(fd, &st) < 0)
		return -errno;
	seals = fcntl(fd, F_GET_SEALS);
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size < len || len == 0 ||
	    seals < 0 || !(seals & F_SEAL_SHRINK))
		return -EPROTO;
	p = mmap(NULL, len, prot, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	*out = p;
	return 0;
}

#ifdef DAQIRI_HAVE_CUDA
static int
open_device(struct daqiri_sub *s, int fd)
{
	uint64_t need = DAQIRI_IPC_FILE_BYTES(s->info.nbufs);
	uint8_t *h;
	uint32_t i;
	int r = 0;

	h = malloc(need);
	s->events = calloc(s->info.nbufs, sizeof(void *));
	if (h == NULL || s->events == NULL) {
		free(h);
		return -ENOMEM;
	}
	if (pread(fd, h, need, 0) != (ssize_t)need) {
		free(h);
		return -EPROTO;
	}
	if (cudaSetDevice(s->info.device) != cudaSuccess) {
		snprintf(s->d->err, sizeof(s->d->err), "CUDA: cannot use GPU "
		    "%d: %s", s->info.device,
		    cudaGetErrorString(cudaGetLastError()));
		r = -ENODEV;
		goto out;
	}
	{
		cudaIpcMemHandle_t mh;

		memcpy(&mh, h, sizeof(mh));
		if (cudaIpcOpenMemHandle(&s->dev_base, mh,
		    cudaIpcMemLazyEnablePeerAccess) != cudaSuccess) {
			snprintf(s->d->err, sizeof(s->d->err), "CUDA: cannot "
			    "open the stream's memory handle: %s",
			    cudaGetErrorString(cudaGetLastError()));
			s->dev_base = NULL;
			r = -ENODEV;
			goto out;
		}
	}
	for (i = 0; i < s->info.nbufs; i++) {
		cudaIpcEventHandle_t eh;
		cudaEvent_t ev;

		memcpy(&eh, h + DAQIRI_IPC_HANDLE_BYTES * (1 + (size_t)i),
		    sizeof(eh));
		if (cudaIpcOpenEventHandle(&ev, eh) != cudaSuccess) {
			snprintf(s->d->err, sizeof(s->d->err), "CUDA: cannot "
			    "open the event handle of buffer %u: %s", i,
			    cudaGetErrorString(cudaGetLastError()));
			r = -ENODEV;
			goto out;
		}
		s->events[i] = ev;
	}
out:
	if (r < 0)
		cudaGetLastError();
	free(h);
	return r;
}
#endif

/* Receive and map the fds that follow a subscribe reply. */
static int
sub_receive_fds(struct daqiri *d, struct daqiri_sub *s)
{
	const struct daqiri_sub_info *in = &s->info;
	int fds[DAQIRI_SUB_MAX_FDS];
	uint32_t i;
	int r;
	void *p;

	/* The whole series first: the connection stays in step whatever
	 * we make of the fds. */
	r = client_recv_fds(d, in->sub_id, in->nfds, in->fds, fds);
	if (r < 0)
		return r;
	for (i = 0; i < in->nfds && r == 0; i++) {
		switch (in->fds[i]) {
		case DAQIRI_FD_TENSOR:
			s->tensor_len = in->map_bytes;
			r = client_map_fd(fds[i], s->tensor_len, PROT_READ,
			    &p);
			if (r == 0)
				s->tensor_map = p;
			break;
		case DAQIRI_FD_IPC:
#ifdef DAQIRI_HAVE_CUDA
			r = open_device(s, fds[i]);
#else
			client_set_err(d, "device stream: this "
			    "libdaqiri-client was built without CUDA");
			r = -ENOTSUP;
#endif
			break;
		case DAQIRI_FD_BITMAP:
			s->bitmap_len = (size_t)in->nbufs * in->bitmap_bytes;
			r = client_map_fd(fds[i], s->bitmap_len, PROT_READ, &p);
			if (r == 0)
				s->bitmap_map = p;
			break;
		case DAQIRI_FD_RING:
			s->ring_len = in->ring_bytes;
			r = client_map_fd(fds[i], s->ring_len,
			    PROT_READ | PROT_WRITE, &p);
			if (r == 0) {
				s->ring_map = p;
				r = daqiri_ring_attach(&s->ring, p, s->ring_len);
				if (r == 0 && s->ring.nbufs != in->nbufs)
					r = -EPROTO;
				/* A new ring asks for wake-ups; a spinning
				 * reader wants none, and the daemon then
				 * makes no system call for it. */
				if (r == 0 && (s->flags & DAQIRI_SUB_BUSY_POLL))
					daqiri_ring_disarm(&s->ring);
			}
			break;
		case DAQIRI_FD_WAKE:
			/* Our own socket: whatever the caller does to it
			 * cannot reach the daemon's end. Reads use
			 * MSG_DONTWAIT, so its file flags do not matter;
			 * its type does (client_is_dgram()). */
			if (!client_is_dgram(fds[i])) {
				r = -EPROTO;
				break;
			}
			s->wake_fd = fds[i];
			fds[i] = -1;
			break;
		default:
			r = -EPROTO;
			break;
		}
	}
	for (i = 0; i < in->nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return r;
}

static int
unsubscribe_id(struct daqiri *d, uint32_t id)
{
	return client_request_id(d, DAQIRI_MSG_UNSUBSCRIBE, "sub", id);
}

static int sub_open_send(struct daqiri_sub *s);
static int sub_open_finish(struct daqiri_sub *s, struct daqiri_msg *m);

int
client_sub_open(struct daqiri_sub *s)
{
	struct daqiri *d = s->d;
	struct daqiri_msg m;
	int r;

	r = sub_open_send(s);
	if (r == 0)
		r = client_wait_reply(d, &m);
	if (r < 0)
		return r;
	return sub_open_finish(s, &m);
}

/* The subscribe request of s, sent: its exchange starts. */
static int
sub_open_send(struct daqiri_sub *s)
{
	struct daqiri *d = s->d;
	cJSON *obj;

	obj = daqiri_msg_new(DAQIRI_MSG_SUBSCRIBE);
	if (obj != NULL && daqiri_sub_req_encode(&s->req, obj) < 0) {
		cJSON_Delete(obj);
		obj = NULL;
	}
	/* as client_transact(): not amid a resubscribe's exchange */
	if (d->dead || (d->state == CLIENT_RESUB && !d->in_resub)) {
		cJSON_Delete(obj);
		return -ENOTCONN;
	}
	client_exchange_start(d);
	return client_send(d, obj);
}

/* Its reply m (consumed) and what follows it: the fd series, the
 * mappings. */
static int
sub_open_finish(struct daqiri_sub *s, struct daqiri_msg *m_in)
{
	struct daqiri *d = s->d;
	struct daqiri_err err;
	struct daqiri_msg m = *m_in;
	int r;

	r = client_reply_status(d, &m);
	if (r < 0) {
		daqiri_msg_free(&m);
		return r;
	}
	if (daqiri_sub_info_decode(m.json, &s->info, &err) < 0) {
		/* Without readable metadata the fd series that follows
		 * cannot be taken apart: the connection is unusable. */
		daqiri_msg_free(&m);
		snprintf(d->err, sizeof(d->err), "bad subscribe reply: %s",
		    err.msg);
		shutdown(d->fd, SHUT_RDWR);
		d->dead = true;
		return -EPROTO;
	}
	daqiri_msg_free(&m);
	s->instance = d->instance;
	s->held = calloc(s->info.nbufs, 1);
	/* The fd series follows the reply whatever happens here: take it
	 * off the socket even when we cannot use it, or the unsubscribe
	 * below and every later request would read it as their reply. */
	r = sub_receive_fds(d, s);
	if (r == 0 && s->held == NULL)
		r = -ENOMEM;
#ifdef DAQIRI_HAVE_CUDA
	if (r == 0 && (s->flags & DAQIRI_SUB_CUDA_REGISTER) &&
	    s->info.mem_kind == DAQIRI_MEM_HOST_PINNED) {
		if (cudaHostRegister((void *)s->tensor_map, s->tensor_len,
		    cudaHostRegisterReadOnly) == cudaSuccess) {
			s->cuda_registered = true;
		} else {
			cudaGetLastError();
			r = -ENODEV;
		}
	}
#endif
	if (r < 0) {
		char why[sizeof(d->err)];

		/* Undo the daemon's side; the message says why we failed. */
		memcpy(why, d->err, sizeof(why));
		if (!d->dead)
			unsubscribe_id(d, s->info.sub_id);
		memcpy(d->err, why, sizeof(why));
	}
	return r;
}

int
daqiri_subscribe(struct daqiri *d, const char *stream,
		 const struct daqiri_sub_opts *opts, struct daqiri_sub **out)
{
	struct daqiri_sub_opts o = { .size = sizeof(o) };
	struct daqiri_sub *s;
	int r;

	if (out == NULL)
		return -EINVAL;
	*out = NULL;
	if (d == NULL || stream == NULL)
		return -EINVAL;
	if (opts != NULL) {
		if (opts->size < offsetof(struct daqiri_sub_opts, flags))
			return -EINVAL;
		memcpy(&o, opts, opts->size < sizeof(o) ? opts->size :
		    sizeof(o));
	}
	if (strlen(stream) >= sizeof(s->req.stream) ||
	    (unsigned)o.mode >= DAQIRI_SUB_MODE_MAX ||
	    (unsigned)o.policy >= DAQIRI_POLICY_MAX ||
	    (o.mode == DAQIRI_SUB_SHARED &&
	    (o.group == NULL || strlen(o.group) >= sizeof(s->req.group))))
		return -EINVAL;
#ifndef DAQIRI_HAVE_CUDA
	if (o.flags & DAQIRI_SUB_CUDA_REGISTER)
		return -ENOTSUP;
#endif
	if (d->dead)
		return -ENOTCONN;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	snprintf(s->req.stream, sizeof(s->req.stream), "%s", stream);
	s->req.mode = o.mode;
	if (o.mode == DAQIRI_SUB_SHARED)
		snprintf(s->req.group, sizeof(s->req.group), "%s", o.group);
	s->req.depth = o.depth;
	s->req.max_held = o.max_held;
	s->req.policy = o.policy;
	s->wake_fd = -1;
	s->flags = o.flags;
	s->reconnect_ms = o.reconnect_timeout_ms != 0 ?
	    o.reconnect_timeout_ms : CLIENT_RECONNECT_DEFAULT_MS;
	s->d = d;
	s->next = d->subs;
	d->subs = s;
	r = CLIENT_IS_REMOTE(d) ? client_remote_sub_open(s) : client_sub_open(s);
	if (r < 0) {
		client_sub_free(s);
		return r;
	}
	*out = s;
	return 0;
}

int
daqiri_sub_trigger(const struct daqiri_sub *sub, uint64_t *count,
		   uint64_t *last_ns)
{
	if (sub == NULL || count == NULL || last_ns == NULL)
		return -EINVAL;
	if (CLIENT_IS_REMOTE(sub->d))
		return client_remote_trigger(sub, count, last_ns);
	if (sub->closed || sub->ring_map == NULL)
		return -ENOTCONN;
	return daqiri_ring_trigger_get(&sub->ring, count, last_ns);
}

int
daqiri_sub_info(const struct daqiri_sub *sub, struct daqiri_stream_info *info)
{
	struct daqiri_stream_info x;
	const struct daqiri_sub_info *in;

	if (sub == NULL || info == NULL || info->size < sizeof(size_t))
		return -EINVAL;
	in = &sub->info;
	memset(&x, 0, sizeof(x));
	x.size = info->size;
	snprintf(x.name, sizeof(x.name), "%s", in->stream);
	x.kind = in->kind;
	x.sub_id = in->sub_id;
	x.mode = in->mode;
	x.mem_kind = in->mem_kind;
	x.device = in->device;
	x.dtype = in->dtype;
	x.dtype_name = daqiri_dtype_name(in->dtype);
	x.elem_bytes = in->elem_bytes;
	x.fill = in->fill;
	x.nbufs = in->nbufs;
	x.ppb = in->ppb;
	x.slot_bytes = in->slot_bytes;
	x.elems_per_slot = in->elems_per_slot;
	x.tensor_bytes = in->tensor_bytes;
	x.ring_depth = in->ring_depth;
	x.max_held = in->max_held;
	x.policy = in->policy;
	memcpy(info, &x, info->size < sizeof(x) ? info->size : sizeof(x));
	return 0;
}

static int
fill_tensor(struct daqiri_sub *s, const struct daqiri_desc *dc,
	    struct daqiri_tensor *t)
{
	const struct daqiri_sub_info *in = &s->info;
	struct daqiri_tensor x;
	uint64_t off;

	/* The daemon is trusted, but a descriptor naming a buffer outside
	 * the stream or one this consumer still holds would make us hand
	 * out memory twice. */
	if (dc->buf_index >= in->nbufs || s->held[dc->buf_index])
		return -EPROTO;
	memset(&x, 0, sizeof(x));
	x.size = t->size;
	off = in->buf_offset + (uint64_t)dc->buf_index * in->buf_stride;
	if (in->mem_kind == DAQIRI_MEM_DEVICE) {
		x.data = (const uint8_t *)s->dev_base + off;
		x.event = s->events != NULL ? s->events[dc->buf_index] : NULL;
	} else {
		x.data = s->tensor_map + off;
	}
	x.device = in->device;
	x.dtype = in->dtype;
	x.dtype_name = daqiri_dtype_name(in->dtype);
	x.elem_bytes = in->elem_bytes;
	x.ndim = 2;
	x.shape[0] = in->ppb;
	x.shape[1] = in->elems_per_slot;
	x.bytes = in->tensor_bytes;
	x.slot_bytes = in->slot_bytes;
	x.seq = dc->seq;
	x.batch_id = dc->batch_id;
	/* RESTART is ours to set, whatever a descriptor says. */
	x.flags = dc->flags & ~(uint32_t)DAQIRI_TENSOR_RESTART;
	if (s->restart_pending)
		x.flags |= DAQIRI_TENSOR_RESTART;
	x.packets_expected = dc->packets_expected;
	x.packets_received = dc->packets_received;
	x.bitmap = (const uint64_t *)(s->bitmap_map +
	    (size_t)dc->buf_index * in->bitmap_bytes);
	x.bitmap_bits = in->ppb;
	if (in->kind == DAQIRI_STREAM_RAW) {
		x.lengths = (const uint32_t *)((const uint8_t *)x.bitmap +
		    DAQIRI_RAW_LENGTHS_OFF(in->ppb));
		if (in->bitmap_bytes >= DAQIRI_RAW_SIDECAR_BYTES(in->ppb))
			x.rx_ns = (const uint64_t *)((const uint8_t *)x.bitmap +
			    DAQIRI_RAW_RXNS_OFF(in->ppb));
	}
	x.first_rx_ns = dc->first_rx_ns;
	x.last_rx_ns = dc->last_rx_ns;
	x.publish_ns = dc->publish_ns;
	x.buf_index = dc->buf_index;
	x.instance = s->instance;
	s->held[dc->buf_index] = 1;
	s->restart_pending = false;
	memcpy(t, &x, t->size < sizeof(x) ? t->size : sizeof(x));
	return 1;
}

static int
try_pop(struct daqiri_sub *s, struct daqiri_tensor *t)
{
	struct daqiri_desc dc;
	int r;

	if (s->ring_map == NULL)
		return 0;
	r = daqiri_comp_pop(&s->ring, &dc);
	if (r <= 0)
		return r;
	return fill_tensor(s, &dc, t);
}

/*
 * Before reporting "empty" or sleeping: take the wake-ups already queued
 * off the socket (so a level-triggered poll does not fire for nothing),
 * then arm need_wakeup and look at the ring again (ring.h explains the
 * order). 0 = armed and still empty, 1 = a descriptor arrived.
 */
static int
sub_arm(struct daqiri_sub *s)
{
	int r = daqiri_wake_drain(s->wake_fd);

	if (r < 0)
		return r;
	return daqiri_ring_arm(&s->ring);
}

/* daqiri_next() of a reconnecting subscription whose connection is
 * down: drive the reconnection until deadline. 1: look at the ring
 * again, else what daqiri_next() returns. */
static int
next_reconnect(struct daqiri_sub *s, uint64_t deadline)
{
	int r = client_reconnect(s->d, deadline);

	if (r == 0 && s->lost == 0)
		return 0;
	if (r < 0 && r != -ENOTCONN)
		return r;
	return 1;
}

int
daqiri_next(struct daqiri_sub *s, struct daqiri_tensor *t, int timeout_ms)
{
	struct pollfd p[2];
	uint64_t deadline = 0, now, last_check = 0;
	int r, wait;

	if (s == NULL || t == NULL ||
	    t->size < offsetof(struct daqiri_tensor, data) + sizeof(void *))
		return -EINVAL;
	if (CLIENT_IS_REMOTE(s->d))
		return client_remote_next(s, t, timeout_ms);
	if (timeout_ms > 0)
		deadline = daqiri_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	else if (timeout_ms < 0)
		deadline = UINT64_MAX;
	for (;;) {
		r = try_pop(s, t);
		if (r != 0)
			return r;
		if (s->lost != 0) {
			client_set_err(s->d, s->lost_msg);
			return s->lost;
		}
		if (s->closed)
			return -ESHUTDOWN;
		if (s->d->state != CLIENT_UP) {
			/* Another subscription's call found the daemon gone;
			 * ours lost it too. */
			if (!(s->flags & DAQIRI_SUB_RECONNECT))
				return -ENOTCONN;
			r = next_reconnect(s, deadline);
			if (r != 1)
				return r;
			continue;
		}
		now = (s->flags & DAQIRI_SUB_BUSY_POLL) ? daqiri_mono_ns() : 0;
		if (!(s->flags & DAQIRI_SUB_BUSY_POLL) || timeout_ms == 0 ||
		    now - last_check >= CLIENT_SPIN_CHECK_NS) {
			last_check = now;
			if (client_pump(s->d) < 0) {
				/* Whatever was published stays readable; a
				 * subscription the daemon ended before it
				 * hung up says so. */
				r = try_pop(s, t);
				if (r != 0)
					return r;
				if (s->closed)
					return -ESHUTDOWN;
				if (!(s->flags & DAQIRI_SUB_RECONNECT))
					return -ENOTCONN;
				r = next_reconnect(s, deadline);
				if (r != 1)
					return r;
				continue;
			}
			if (s->closed)
				continue;
		}
		if (s->flags & DAQIRI_SUB_BUSY_POLL) {
			if (timeout_ms == 0 ||
			    (timeout_ms > 0 && now >= deadline))
				return 0;
			continue;
		}
		/* Armed also when returning 0 at once: a caller that polls
		 * daqiri_sub_fd() itself is woken by the next publish. */
		r = sub_arm(s);
		if (r < 0)
			return r;
		if (r > 0)
			continue;
		if (timeout_ms == 0)
			return 0;
		wait = -1;
		if (timeout_ms > 0) {
			now = daqiri_mono_ns();
			if (now >= deadline)
				return 0;
			wait = (int)((deadline - now + 999999) / 1000000);
		}
		p[0].fd = s->wake_fd;
		p[0].events = POLLIN;
		p[1].fd = s->d->fd;
		p[1].events = POLLIN;
		p[0].revents = p[1].revents = 0;
		r = poll(p, 2, wait);
		if (r < 0)
			return errno == EINTR ? -EINTR : -errno;
		/* The wake-up is read by the next sub_arm(), off the path
		 * between waking and returning the tensor. */
	}
}

int
daqiri_release(struct daqiri_sub *s, const struct daqiri_tensor *t)
{
	const uint8_t *base;
	uint32_t i;
	int r;

	if (s == NULL || t == NULL || t->size <
	    offsetof(struct daqiri_tensor, buf_index) + sizeof(uint32_t))
		return -EINVAL;
	if (CLIENT_IS_REMOTE(s->d))
		return client_remote_release(s, t);
	i = t->buf_index;
	base = s->info.mem_kind == DAQIRI_MEM_DEVICE ?
	    (const uint8_t *)s->dev_base : s->tensor_map;
	/* A tensor of an earlier daemon instance has its own buffer
	 * numbers: tell them apart by where the data lies. */
	if (base == NULL || i >= s->info.nbufs || !s->held[i] ||
	    (const uint8_t *)t->data != base + s->info.buf_offset +
	    (uint64_t)i * s->info.buf_stride)
		return client_orphan_release(s, t->data) == 0 ? 0 : -EINVAL;
	if (s->ring_map == NULL) {
		s->held[i] = 0;
		return 0;
	}
	r = daqiri_rel_push(&s->ring, i);
	if (r < 0)
		return r;
	s->held[i] = 0;
	return 0;
}

int
daqiri_sub_fd(const struct daqiri_sub *s)
{
	if (s != NULL && CLIENT_IS_REMOTE(s->d))
		return client_remote_fd(s->d);
	return s != NULL ? s->wake_fd : -EINVAL;
}

int
daqiri_sub_arm(struct daqiri_sub *s)
{
	if (s == NULL)
		return -EINVAL;
	if (CLIENT_IS_REMOTE(s->d))
		return client_remote_arm(s);
	/* Reconnecting: there is no wake-up to wait for; daqiri_next()
	 * drives the reconnection. */
	if (s->wake_fd < 0 || s->ring_map == NULL)
		return 1;
	return sub_arm(s);
}

int
daqiri_unsubscribe(struct daqiri_sub *s)
{
	int r;

	if (s == NULL)
		return 0;
	if (CLIENT_IS_REMOTE(s->d)) {
		r = client_remote_unsubscribe(s);
		client_sub_free(s);
		return r;
	}
	r = s->d->dead || s->lost != 0 ? -ENOTCONN :
	    unsubscribe_id(s->d, s->info.sub_id);
	/* A subscription the daemon already ended is gone either way. */
	if (r == -ESRCH && s->closed)
		r = 0;
	client_sub_free(s);
	return r;
}

/* What changed between two daemons' geometry of one stream, into buf
 * ("" when nothing that matters to a held view did). */
void
client_geometry_diff(const struct daqiri_sub_info *a,
		     const struct daqiri_sub_info *b, char *buf, size_t len)
{
	size_t n = 0;

#define DIFF(...) \
	n += (size_t)snprintf(buf + n, n < len ? len - n : 0, __VA_ARGS__)
	buf[0] = '\0';
	if (a->dtype != b->dtype)
		DIFF("%sdtype %s -> %s", n ? ", " : "",
		    daqiri_dtype_name(a->dtype), daqiri_dtype_name(b->dtype));
	if (a->ppb != b->ppb || a->elems_per_slot != b->elems_per_slot)
		DIFF("%sshape %ux%llu -> %ux%llu", n ? ", " : "", a->ppb,
		    (unsigned long long)a->elems_per_slot, b->ppb,
		    (unsigned long long)b->elems_per_slot);
	else if (a->slot_bytes != b->slot_bytes)
		DIFF("%sslot bytes %llu -> %llu", n ? ", " : "",
		    (unsigned long long)a->slot_bytes,
		    (unsigned long long)b->slot_bytes);
	if (a->mem_kind != b->mem_kind)
		DIFF("%smemory %s -> %s", n ? ", " : "",
		    daqiri_mem_kind_name(a->mem_kind),
		    daqiri_mem_kind_name(b->mem_kind));
	else if (a->device != b->device)
		DIFF("%sGPU %d -> %d", n ? ", " : "", a->device, b->device);
	if (a->kind != b->kind)
		DIFF("%skind %s -> %s", n ? ", " : "",
		    daqiri_stream_kind_name(a->kind),
		    daqiri_stream_kind_name(b->kind));
#undef DIFF
}

int
client_sub_reopen_send(struct daqiri_sub *s)
{
	struct daqiri_sub *n;
	int r;

	client_sub_reopen_drop(s);
	n = calloc(1, sizeof(*n));
	if (n == NULL)
		return -ENOMEM;
	n->wake_fd = -1;
	n->flags = s->flags;
	n->req = s->req;
	n->d = s->d;
	r = sub_open_send(n);
	if (r < 0) {
		n->d = NULL;
		client_sub_free(n);
		return r;
	}
	s->opening = n;
	return 0;
}

void
client_sub_reopen_drop(struct daqiri_sub *s)
{
	if (s->opening == NULL)
		return;
	s->opening->d = NULL;
	client_sub_free(s->opening);
	s->opening = NULL;
}

int
client_sub_reopen_finish(struct daqiri_sub *s)
{
	struct daqiri *d = s->d;
	struct daqiri_sub *n = s->opening;
	struct client_orphan *o;
	struct daqiri_msg m;
	char what[160];
	uint32_t i, nheld;
	int r;

	if (n == NULL)
		return -EINVAL;
	s->opening = NULL;
	r = client_wait_reply(d, &m);
	if (r == 0)
		r = sub_open_finish(n, &m);
	if (r < 0) {
		snprintf(s->lost_msg, sizeof(s->lost_msg), "stream \"%.64s\" "
		    "after the daemon restarted: %.150s", s->req.stream,
		    d->err[0] != '\0' ? d->err : strerror(-r));
		n->d = NULL;
		client_sub_free(n);
		return r;
	}
	client_geometry_diff(&s->info, &n->info, what, sizeof(what));
	if (what[0] != '\0') {
		snprintf(s->lost_msg, sizeof(s->lost_msg), "stream \"%.64s\" "
		    "changed when the daemon restarted: %.140s", s->req.stream,
		    what);
		if (!d->dead)
			unsubscribe_id(d, n->info.sub_id);
		n->d = NULL;
		client_sub_free(n);
		return -ESTALE;
	}
	/* What the application holds of the old instance stays mapped:
	 * without the memory to keep it so, the new instance is given up
	 * rather than the old mappings unmapped under the application. */
	for (i = 0, nheld = 0; i < s->info.nbufs && s->held != NULL; i++)
		if (s->held[i])
			nheld++;
	o = nheld > 0 ? calloc(1, sizeof(*o)) : NULL;
	if (nheld > 0 && o == NULL) {
		snprintf(s->lost_msg, sizeof(s->lost_msg), "stream \"%.64s\" "
		    "after the daemon restarted: out of memory",
		    s->req.stream);
		if (!d->dead)
			unsubscribe_id(d, n->info.sub_id);
		n->d = NULL;
		client_sub_free(n);
		return -ENOMEM;
	}
	if (o != NULL) {
		o->nheld = nheld;
		o->base = s->info.mem_kind == DAQIRI_MEM_DEVICE ?
		    (const uint8_t *)s->dev_base : s->tensor_map;
		o->buf_offset = s->info.buf_offset;
		o->buf_stride = s->info.buf_stride;
		o->nbufs = s->info.nbufs;
		o->held = s->held;
		o->tensor_map = s->tensor_map;
		o->tensor_len = s->tensor_len;
		o->bitmap_map = s->bitmap_map;
		o->bitmap_len = s->bitmap_len;
		o->cuda_registered = s->cuda_registered;
		o->dev_base = s->dev_base;
		o->events = s->events;
		o->next = s->orphans;
		s->orphans = o;
		s->held = NULL;
		s->tensor_map = s->bitmap_map = NULL;
		s->dev_base = NULL;
		s->events = NULL;
		s->cuda_registered = false;
	}
	/* s takes the new instance; n the rest of the old one, which goes
	 * (n->d NULL: it is not linked). */
#define SWAP(f) do { __typeof__(s->f) tmp_ = s->f; s->f = n->f; \
	n->f = tmp_; } while (0)
	SWAP(info);
	SWAP(ring);
	SWAP(wake_fd);
	SWAP(tensor_map);
	SWAP(tensor_len);
	SWAP(bitmap_map);
	SWAP(bitmap_len);
	SWAP(ring_map);
	SWAP(ring_len);
	SWAP(held);
	SWAP(cuda_registered);
	SWAP(dev_base);
	SWAP(events);
	SWAP(instance);
#undef SWAP
	s->closed = false;
	s->restart_pending = true;
	n->d = NULL;
	client_sub_free(n);
	return 0;
}
