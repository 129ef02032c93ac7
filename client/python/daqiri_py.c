/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The `daqiri` Python module: libdaqiri-client for CPython consumers.
 * daqiri.connect() gives a Connection; its subscribe() a Subscription whose
 * next() gives Tensors, which a consumer reads zero-copy through numpy(),
 * the buffer protocol, DLPack (__dlpack__ / __dlpack_device__) or, on a
 * GPU, __cuda_array_interface__. daqiri-python(3) is the reference.
 *
 * Lifetime, which makes a forgotten release harmless and a use after close
 * impossible: a Tensor holds its Subscription, a Subscription its
 * Connection. Every ndarray (through a memoryview), DLPack capsule and
 * consumer tensor made from a Tensor holds the Tensor, and the buffer goes
 * back to the daemon at release() or when the last of them is gone. A
 * Subscription closed while Tensors of it live keeps its mappings until
 * they are gone (a view can point at a reused buffer, never at unmapped
 * memory); a Connection closed while Subscriptions keep mappings stays
 * connected until they are gone.
 *
 * fork(): a connection belongs to the process that made it. In a child,
 * its objects raise, and dropping them sends nothing to the daemon (no
 * release, no unsubscribe), which would otherwise act on the parent's
 * subscriptions; tensors already received stay readable.
 *
 * Threads: the library is not thread-safe per connection, so one lock per
 * Connection serialises every call into it. Waits run without the GIL in
 * slices of WAIT_SLICE_MS (SIGINT becomes KeyboardInterrupt between
 * them, or at once when it interrupts the poll), and hold the lock only
 * to look at the ring, not while they sleep (sub_wait_slice()), so other
 * threads' requests on the connection go through. The lock is a ticket
 * lock, first come first served: with a plain mutex a busy-polling waiter
 * that drops it and takes it straight back could keep another thread out.
 *
 * daqiri_py_tensor.c is the Tensor and its views; daqiri_py.h what the
 * two files share.
 */
#include "daqiri_py.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WAIT_SLICE_MS	50
#define SPIN_SLICE_MS	10	/* busy_poll: between signal checks */
#define BUSY_SPIN_MS	1	/* busy_poll: spun with the lock held */

PyObject *DaqiriError;
static PyObject *json_loads, *json_dumps;

/* ---- errors */

PyObject *
raise_errno(int err, const char *msg)
{
	PyObject *e;

	if (err < 0)
		err = -err;
	if (msg == NULL || msg[0] == '\0')
		msg = strerror(err);
	e = PyObject_CallFunction(DaqiriError, "is", err, msg);
	if (e != NULL) {
		PyErr_SetObject(DaqiriError, e);
		Py_DECREF(e);
	}
	return NULL;
}

static void
fair_init(struct fair_lock *l)
{
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	l->next = l->serving = 0;
}

static void
fair_destroy(struct fair_lock *l)
{
	pthread_cond_destroy(&l->cv);
	pthread_mutex_destroy(&l->mu);
}

/* Take it if nobody holds or waits for it; never blocks on the lock. */
static bool
fair_try(struct fair_lock *l)
{
	bool ok;

	pthread_mutex_lock(&l->mu);
	ok = l->next == l->serving;
	if (ok)
		l->next++;
	pthread_mutex_unlock(&l->mu);
	return ok;
}

static void
fair_acquire(struct fair_lock *l)
{
	uint64_t me;

	pthread_mutex_lock(&l->mu);
	me = l->next++;
	while (l->serving != me)
		pthread_cond_wait(&l->cv, &l->mu);
	pthread_mutex_unlock(&l->mu);
}

static void
fair_release(struct fair_lock *l)
{
	pthread_mutex_lock(&l->mu);
	l->serving++;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

static PyTypeObject ConnType, SubType;

/*
 * Take the connection's lock; the GIL is given up only while waiting. In
 * a fork()ed child there is nothing to take: it has one thread, and the
 * lock may have been held by a thread of the parent at the fork.
 */
void
conn_lock(ConnObject *c)
{
	if (conn_foreign(c) || fair_try(&c->lock))
		return;
	Py_BEGIN_ALLOW_THREADS
	fair_acquire(&c->lock);
	Py_END_ALLOW_THREADS
}

void
conn_unlock(ConnObject *c)
{
	if (!conn_foreign(c))
		fair_release(&c->lock);
}

void
conn_lock_nogil(ConnObject *c)
{
	fair_acquire(&c->lock);
}

void
conn_unlock_nogil(ConnObject *c)
{
	fair_release(&c->lock);
}

/* Made in another process (before a fork())? */
bool
conn_foreign(const ConnObject *c)
{
	return c->pid != getpid();
}

int
conn_check(ConnObject *c)
{
	if (conn_foreign(c)) {
		char msg[128];

		snprintf(msg, sizeof(msg), "the connection belongs to process "
		    "%ld (made before fork()): connect again in this process",
		    (long)c->pid);
		raise_errno(EBADF, msg);
		return -1;
	}
	if (c->closing || c->d == NULL) {
		raise_errno(EBADF, "the connection is closed");
		return -1;
	}
	return 0;
}

/* Disconnect once closed and no subscription or transmitter keeps
 * mappings. */
void
conn_maybe_disconnect(ConnObject *c)
{
	struct daqiri *d;

	if (!c->closing || c->live_subs > 0 || c->d == NULL)
		return;
	/* Under the lock: a thread inside a request holds it. */
	conn_lock(c);
	d = c->d;
	c->d = NULL;
	Py_BEGIN_ALLOW_THREADS		/* NULL-safe: another thread was first */
	daqiri_disconnect(d);
	Py_END_ALLOW_THREADS
	conn_unlock(c);
}

/* Unsubscribe and unmap now (the caller checked no Tensor lives). */
void
sub_teardown(SubObject *s)
{
	ConnObject *c = s->conn;
	struct daqiri_sub *sub;
	SubObject **pp;

	if (s->sub == NULL)
		return;
	/* Under the lock: a waiting thread reads s->sub inside it. */
	conn_lock(c);
	sub = s->sub;
	s->sub = NULL;
	if (sub == NULL) {		/* another thread was first */
		conn_unlock(c);
		return;
	}
	/* In a fork()ed child it stays on the library's list (freed by the
	 * disconnect, which sends nothing): unsubscribing would end the
	 * parent's subscription. */
	if (!conn_foreign(c)) {
		Py_BEGIN_ALLOW_THREADS
		daqiri_unsubscribe(sub);
		Py_END_ALLOW_THREADS
	}
	conn_unlock(c);
	for (pp = &c->subs; *pp != NULL; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	c->live_subs--;
	conn_maybe_disconnect(c);
}

static void
sub_close(SubObject *s)
{
	s->closing = true;
	if (s->live_tensors == 0)
		sub_teardown(s);
}

/* 0 for a usable subscription, or -1 with an exception. */
static int
sub_check(SubObject *s)
{
	if (conn_foreign(s->conn))
		return conn_check(s->conn);
	if (s->closing || s->sub == NULL) {
		raise_errno(EBADF, "the subscription is closed");
		return -1;
	}
	return 0;
}

/* Take the lock of an open connection: 0, or -1 with an exception (it
 * may have closed while this thread waited for the lock). */
int
conn_lock_open(ConnObject *c)
{
	if (conn_check(c) < 0)
		return -1;
	conn_lock(c);
	if (c->d == NULL) {
		conn_unlock(c);
		return conn_check(c);
	}
	return 0;
}

/* ---- JSON requests */

/* The daemon's reply text -> dict without its envelope. */
static PyObject *
reply_dict(const char *text)
{
	static const char *const envelope[] = { "type", "re", "status", "id" };
	PyObject *o = PyObject_CallFunction(json_loads, "s", text);
	size_t i;

	if (o == NULL)
		return NULL;
	if (!PyDict_Check(o)) {
		Py_DECREF(o);
		return raise_errno(EPROTO, "the daemon's reply is not an object");
	}
	for (i = 0; i < sizeof(envelope) / sizeof(envelope[0]); i++)
		if (PyDict_DelItemString(o, envelope[i]) < 0)
			PyErr_Clear();
	return o;
}

/* Send a request (JSON text) and return the reply as a dict. */
static PyObject *
conn_request_text(ConnObject *c, const char *req)
{
	char *reply = NULL, msg[512];
	int r;
	PyObject *o;

	if (conn_lock_open(c) < 0)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	r = daqiri_request(c->d, req, &reply);
	Py_END_ALLOW_THREADS
	snprintf(msg, sizeof(msg), "%s", daqiri_last_error(c->d));
	conn_unlock(c);
	if (r < 0) {
		free(reply);
		if (r == -ENOTCONN && msg[0] == '\0')
			snprintf(msg, sizeof(msg), "the daemon closed the connection");
		return raise_errno(r, msg);
	}
	o = reply_dict(reply);
	free(reply);
	return o;
}

/* {"type": type, **fields} sent, the reply as a dict. */
static PyObject *
conn_request_obj(ConnObject *c, const char *type, PyObject *fields)
{
	PyObject *req = fields != NULL ? PyDict_Copy(fields) : PyDict_New();
	PyObject *text = NULL, *out = NULL, *t;
	const char *s;

	if (req == NULL)
		return NULL;
	t = PyUnicode_FromString(type);
	if (t == NULL || PyDict_SetItemString(req, "type", t) < 0)
		goto done;
	text = PyObject_CallOneArg(json_dumps, req);
	if (text == NULL || (s = PyUnicode_AsUTF8(text)) == NULL)
		goto done;
	out = conn_request_text(c, s);
done:
	Py_XDECREF(t);
	Py_XDECREF(text);
	Py_DECREF(req);
	return out;
}

/* The list under key of a reply to type. */
static PyObject *
conn_request_list(ConnObject *c, const char *type, const char *key)
{
	PyObject *o = conn_request_obj(c, type, NULL), *l;

	if (o == NULL)
		return NULL;
	l = PyDict_GetItemString(o, key);
	if (l == NULL || !PyList_Check(l)) {
		Py_DECREF(o);
		return raise_errno(EPROTO, "the daemon's reply has no list");
	}
	Py_INCREF(l);
	Py_DECREF(o);
	return l;
}

/* ---- Connection */

static PyObject *
conn_connect(PyObject *mod, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "socket", NULL };
	PyObject *path_obj = Py_None, *bytes = NULL;
	const char *path = NULL;
	struct daqiri *d = NULL;
	ConnObject *c;
	char hint[512];
	int r;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:connect", kwlist,
	    &path_obj))
		return NULL;
	if (path_obj != Py_None) {
		if (!PyUnicode_FSConverter(path_obj, &bytes))
			return NULL;
		path = PyBytes_AS_STRING(bytes);
	}
	Py_BEGIN_ALLOW_THREADS
	r = daqiri_connect(path, &d);
	if (r < 0)			/* the hint is per thread: ask here */
		daqiri_connect_hint(r, path, hint, sizeof(hint));
	Py_END_ALLOW_THREADS
	if (r < 0) {
		Py_XDECREF(bytes);
		return raise_errno(r, hint);
	}
	Py_XDECREF(bytes);
	c = PyObject_New(ConnObject, &ConnType);
	if (c == NULL) {
		daqiri_disconnect(d);
		return NULL;
	}
	c->d = d;
	c->pid = getpid();
	c->closing = false;
	c->live_subs = 0;
	c->subs = NULL;
	c->txs = NULL;
	fair_init(&c->lock);
	return (PyObject *)c;
}

static void
conn_dealloc(ConnObject *c)
{
	/* No Subscription is left (each holds the connection). */
	if (c->d != NULL)
		daqiri_disconnect(c->d);
	fair_destroy(&c->lock);
	PyObject_Free(c);
}

static PyObject *
conn_close(ConnObject *c, PyObject *unused)
{
	SubObject *s;

	if (c->closing)
		Py_RETURN_NONE;
	c->closing = true;
	/* From the head each time: sub_close() may give up the GIL, and
	 * other threads may change the list meanwhile. */
	for (;;) {
		for (s = c->subs; s != NULL && s->closing; s = s->next)
			;
		if (s == NULL)
			break;
		sub_close(s);
	}
	for (;;) {
		TxObject *t;

		for (t = c->txs; t != NULL && t->closing; t = t->next)
			;
		if (t == NULL)
			break;
		tx_close(t);
	}
	conn_maybe_disconnect(c);
	Py_RETURN_NONE;
}

static PyObject *
conn_enter(ConnObject *c, PyObject *unused)
{
	if (conn_check(c) < 0)
		return NULL;
	Py_INCREF(c);
	return (PyObject *)c;
}

static PyObject *
conn_exit(ConnObject *c, PyObject *args)
{
	return conn_close(c, NULL);
}

static PyObject *
conn_status(ConnObject *c, PyObject *unused)
{
	return conn_request_obj(c, "status", NULL);
}

static PyObject *
conn_stats(ConnObject *c, PyObject *unused)
{
	return conn_request_obj(c, "stats", NULL);
}

static PyObject *
conn_streams(ConnObject *c, PyObject *unused)
{
	return conn_request_list(c, "streams", "streams");
}

static PyObject *
conn_consumers(ConnObject *c, PyObject *unused)
{
	return conn_request_list(c, "consumers", "consumers");
}

static PyObject *
conn_request(ConnObject *c, PyObject *args, PyObject *kw)
{
	const char *type;

	if (!PyArg_ParseTuple(args, "s:request", &type))
		return NULL;
	if (strcmp(type, "hello") == 0 || strcmp(type, "subscribe") == 0) {
		PyErr_Format(PyExc_ValueError, "request(\"%s\"): use %s",
		    type, type[0] == 'h' ? "connect()" : "subscribe()");
		return NULL;
	}
	return conn_request_obj(c, type, kw);
}

static PyObject *
conn_fileno(ConnObject *c, PyObject *unused)
{
	if (conn_check(c) < 0)
		return NULL;
	return PyLong_FromLong(daqiri_fd(c->d));
}

static PyObject *
conn_get_closed(ConnObject *c, void *unused)
{
	return PyBool_FromLong(c->closing);
}

static PyObject *
info_dict(const struct daqiri_stream_info *in)
{
	return Py_BuildValue("{s:s,s:s,s:s,s:(KK),s:I,s:K,s:I,s:K,s:K,s:s,"
	    "s:i,s:I,s:s,s:s,s:I,s:I,s:I,s:s}",
	    "name", in->name,
	    "kind", daqiri_stream_kind_name(in->kind),
	    "dtype", in->dtype_name,
	    "shape", (unsigned long long)in->ppb,
	    (unsigned long long)in->elems_per_slot,
	    "ppb", in->ppb,
	    "elems_per_slot", (unsigned long long)in->elems_per_slot,
	    "elem_bytes", in->elem_bytes,
	    "slot_bytes", (unsigned long long)in->slot_bytes,
	    "tensor_bytes", (unsigned long long)in->tensor_bytes,
	    "mem_kind", daqiri_mem_kind_name(in->mem_kind),
	    "device", in->device,
	    "nbufs", in->nbufs,
	    "fill", daqiri_fill_name(in->fill),
	    "mode", daqiri_sub_mode_name(in->mode),
	    "sub_id", in->sub_id,
	    "ring_depth", in->ring_depth,
	    "max_held", in->max_held,
	    "policy", daqiri_sub_policy_name(in->policy));
}

static PyObject *
conn_subscribe(ConnObject *c, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "stream", "group", "busy_poll", "max_held",
	    "depth", "reconnect", "reconnect_timeout", "policy", NULL };
	const char *stream, *group = NULL, *policy = NULL;
	int busy = 0, reconnect = 1;
	double reconnect_timeout = 30.0;
	unsigned int max_held = 0, depth = 0;
	struct daqiri_sub_opts o;
	struct daqiri_sub *sub = NULL;
	char msg[512];
	SubObject *s;
	int r;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "s|zpIIpdz:subscribe",
	    kwlist, &stream, &group, &busy, &max_held, &depth, &reconnect,
	    &reconnect_timeout, &policy))
		return NULL;
	/* 0 would mean the library's default: say at least 1 ms. */
	if (!(reconnect_timeout >= 0.001 && reconnect_timeout <= 4294967.0))
		return raise_errno(EINVAL, "reconnect_timeout: seconds, "
		    "0.001 to 4294967");
	memset(&o, 0, sizeof(o));
	if (policy == NULL || strcmp(policy, "latest") == 0)
		o.policy = DAQIRI_POLICY_LATEST;
	else if (strcmp(policy, "lossless") == 0)
		o.policy = DAQIRI_POLICY_LOSSLESS;
	else {
		PyErr_Format(PyExc_ValueError, "policy must be \"latest\" or "
		    "\"lossless\", not \"%.40s\"", policy);
		return NULL;
	}
	o.size = sizeof(o);
	o.depth = depth;
	o.max_held = max_held;
	o.mode = group != NULL ? DAQIRI_SUB_SHARED : DAQIRI_SUB_BROADCAST;
	o.group = group;
	o.flags = (busy ? DAQIRI_SUB_BUSY_POLL : 0) |
	    (reconnect ? DAQIRI_SUB_RECONNECT : 0);
	o.reconnect_timeout_ms = (uint32_t)(reconnect_timeout * 1000.0);
	if (conn_lock_open(c) < 0)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	r = daqiri_subscribe(c->d, stream, &o, &sub);
	Py_END_ALLOW_THREADS
	snprintf(msg, sizeof(msg), "%s", daqiri_last_error(c->d));
	conn_unlock(c);
	if (r < 0)
		return raise_errno(r, msg);
	s = PyObject_New(SubObject, &SubType);
	if (s == NULL) {
		conn_lock(c);
		daqiri_unsubscribe(sub);
		conn_unlock(c);
		return NULL;
	}
	Py_INCREF(c);
	s->conn = c;
	s->sub = sub;
	s->live_tensors = s->held = 0;
	s->closing = s->ended = false;
	s->warned_held = s->warned_down = false;
	s->busy = busy != 0;
	memset(&s->info, 0, sizeof(s->info));
	s->info.size = sizeof(s->info);
	daqiri_sub_info(sub, &s->info);
	s->next = c->subs;
	c->subs = s;
	c->live_subs++;
	s->info_dict = info_dict(&s->info);
	if (s->info_dict == NULL) {
		Py_DECREF(s);
		return NULL;
	}
	return (PyObject *)s;
}

static PyMethodDef conn_methods[] = {
	{ "status", (PyCFunction)conn_status, METH_NOARGS,
	  "status() -> dict: the daemon's status" },
	{ "stats", (PyCFunction)conn_stats, METH_NOARGS,
	  "stats() -> dict: every counter of the daemon" },
	{ "streams", (PyCFunction)conn_streams, METH_NOARGS,
	  "streams() -> list of dict: the streams one can subscribe to" },
	{ "consumers", (PyCFunction)conn_consumers, METH_NOARGS,
	  "consumers() -> list of dict: the daemon's consumers" },
	{ "request", (PyCFunction)(void (*)(void))conn_request,
	  METH_VARARGS | METH_KEYWORDS,
	  "request(type, **fields) -> dict: any control request" },
	{ "subscribe", (PyCFunction)(void (*)(void))conn_subscribe,
	  METH_VARARGS | METH_KEYWORDS,
	  "subscribe(stream, group=None, busy_poll=False, max_held=0, "
	  "depth=0, reconnect=True, reconnect_timeout=30.0, "
	  "policy=\"latest\") -> Subscription" },
	{ "transmitter", (PyCFunction)(void (*)(void))conn_transmitter,
	  METH_VARARGS | METH_KEYWORDS,
	  "transmitter(queue, nbufs=0) -> Transmitter: a TX channel on "
	  "\"<interface>/<tx queue>\" (root or the admin group)" },
	{ "close", (PyCFunction)conn_close, METH_NOARGS,
	  "close(): end the connection, its subscriptions and transmitters" },
	{ "fileno", (PyCFunction)conn_fileno, METH_NOARGS,
	  "fileno() -> int: the control socket (POLLHUP: daemon gone)" },
	{ "__enter__", (PyCFunction)conn_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)conn_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef conn_getset[] = {
	{ "closed", (getter)conn_get_closed, NULL, "close() was called", NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

/* ---- Subscription */

static void
sub_dealloc(SubObject *s)
{
	/* No Tensor is left (each holds the subscription). */
	sub_teardown(s);
	Py_XDECREF(s->info_dict);
	Py_DECREF(s->conn);
	PyObject_Free(s);
}

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Wait up to slice_ms for a tensor, without the GIL: daqiri_next()'s
 * result, -EBADF when the subscription was closed meanwhile, the
 * daemon's message in msg on an error. The connection's lock is held
 * only to look at the ring (daqiri_next(..., 0), which also arms the
 * wake-up); the sleep is a poll() on the wake-up and control sockets
 * without it, so other threads' requests go through while this one
 * waits. A closed subscription's fds may be polled after their close:
 * a spurious wake-up at worst, and the next look sees -EBADF.
 */
static int
sub_wait_slice(SubObject *s, struct daqiri_tensor *t, int slice_ms,
	       char *msg, size_t len, bool *down)
{
	ConnObject *c = s->conn;
	uint64_t end = mono_ns() + (uint64_t)slice_ms * 1000000ull, now;
	struct pollfd p[2];
	int r;

	for (;;) {
		memset(t, 0, sizeof(*t));
		t->size = sizeof(*t);
		fair_acquire(&c->lock);
		/* s->sub is read and cleared only under the lock. */
		if (s->sub == NULL) {
			r = -EBADF;
		} else {
			/* busy_poll: spin in the library, BUSY_SPIN_MS at a
			 * time (it polls the ring without a syscall). */
			r = daqiri_next(s->sub, t, s->busy && slice_ms > 0 ?
			    BUSY_SPIN_MS : 0);
			p[0].fd = daqiri_sub_fd(s->sub);
			p[1].fd = daqiri_fd(c->d);
			/* no wake-up socket: the library is reconnecting */
			*down = r == 0 && p[0].fd < 0;
			if (r < 0)
				snprintf(msg, len, "%s", daqiri_last_error(c->d));
		}
		fair_release(&c->lock);
		if (r != 0)
			return r;
		now = mono_ns();
		if (now >= end)
			return 0;
		if (s->busy)		/* the ring is the only thing to watch */
			continue;
		p[0].events = p[1].events = POLLIN;
		p[0].revents = p[1].revents = 0;
		r = poll(p, 2, (int)((end - now + 999999) / 1000000));
		if (r < 0 && errno == EINTR)
			return -EINTR;
		if (r < 0)
			return -errno;
		if (r == 0)
			return 0;
	}
}

/*
 * One wait: 1 with *t, 0 on timeout, -1 with an exception; *ended: the
 * daemon ended the subscription (the exception is ESHUTDOWN, which
 * iteration turns into its end). timeout < 0: forever.
 */
static int
sub_wait(SubObject *s, struct daqiri_tensor *t, double timeout, bool *ended)
{
	struct timespec now;
	double deadline = 0;
	char msg[512];
	bool down;
	int r, slice;

	*ended = false;
	if (sub_check(s) < 0)
		return -1;
	/* Holding max_held tensors, it gets no more until one is released:
	 * keeping every array in a list does that quietly. Said once. */
	if (s->info.max_held > 0 && s->held >= (Py_ssize_t)s->info.max_held) {
		if (!s->warned_held && PyErr_WarnFormat(PyExc_RuntimeWarning,
		    1, "daqiri: the subscription to %s holds %zd tensors, its "
		    "max_held: the daemon delivers it no more (and it misses "
		    "what is published) until one is released: call "
		    "t.release(), or drop the tensor and every array made "
		    "from it (copy what you keep: t.numpy().copy())",
		    s->info.name, s->held) < 0)
			return -1;
		s->warned_held = true;
	} else {
		s->warned_held = false;
	}
	if (timeout >= 0) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		deadline = now.tv_sec + now.tv_nsec / 1e9 + timeout;
	}
	for (;;) {
		slice = s->busy ? SPIN_SLICE_MS : WAIT_SLICE_MS;
		if (timeout >= 0) {
			double left;

			clock_gettime(CLOCK_MONOTONIC, &now);
			left = deadline - (now.tv_sec + now.tv_nsec / 1e9);
			if (left < 0)
				left = 0;
			if (left * 1000 < slice)
				slice = (int)(left * 1000);
		}
		msg[0] = '\0';
		down = false;
		Py_BEGIN_ALLOW_THREADS
		r = sub_wait_slice(s, t, slice, msg, sizeof(msg), &down);
		Py_END_ALLOW_THREADS
		/* the daemon gone, waited for: said once per outage */
		if (down && !s->warned_down) {
			s->warned_down = true;
			if (PyErr_WarnFormat(PyExc_RuntimeWarning, 1, "daqiri: "
			    "the daemon is gone; the subscription to %s waits "
			    "for it to come back (as long as its "
			    "reconnect_timeout)", s->info.name) < 0)
				return -1;
		}
		if (r == 1)
			s->warned_down = false;
		/* Another thread may have closed it while this one waited for
		 * the GIL: its buffers are unmapped, and went with it. */
		if (r == 1 && s->sub == NULL)
			return sub_check(s);
		if (r == 1)
			return 1;
		if (r == -ESHUTDOWN) {
			s->ended = *ended = true;
			if (msg[0] == '\0')
				snprintf(msg, sizeof(msg), "the daemon ended "
				    "the subscription");
			/* Kept for next() to raise with. */
			raise_errno(ESHUTDOWN, msg);
			return -1;
		}
		if (r == -EBADF)	/* closed by another thread */
			return sub_check(s);
		if (r < 0 && r != -EINTR) {
			if (r == -ENOTCONN && msg[0] == '\0')
				snprintf(msg, sizeof(msg), "the daemon closed "
				    "the connection");
			raise_errno(r, msg);
			return -1;
		}
		if (PyErr_CheckSignals() < 0)
			return -1;
		if (r == 0 && timeout >= 0 && slice == 0)
			return 0;
	}
}

static PyObject *
sub_next(SubObject *s, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "timeout", NULL };
	PyObject *to = Py_None;
	struct daqiri_tensor t;
	double timeout = -1;
	bool ended;
	int r;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:next", kwlist, &to))
		return NULL;
	if (to != Py_None) {
		timeout = PyFloat_AsDouble(to);
		if (timeout == -1 && PyErr_Occurred())
			return NULL;
		if (timeout < 0 || timeout != timeout) {
			PyErr_SetString(PyExc_ValueError,
			    "timeout must be >= 0 seconds, or None (forever)");
			return NULL;
		}
	}
	r = sub_wait(s, &t, timeout, &ended);
	if (r < 0)
		return NULL;
	if (r == 0)
		Py_RETURN_NONE;
	return tensor_new(s, &t);
}

static PyObject *
sub_iternext(SubObject *s)
{
	struct daqiri_tensor t;
	bool ended;
	int r = sub_wait(s, &t, -1, &ended);

	if (r == 1)
		return tensor_new(s, &t);
	/* A subscription the daemon ended raises its reason (ESHUTDOWN):
	 * a loop that just stopped would look like the end of the data. */
	(void)ended;
	return NULL;
}

static PyObject *
sub_iter(SubObject *s)
{
	Py_INCREF(s);
	return (PyObject *)s;
}

static PyObject *
sub_close_m(SubObject *s, PyObject *unused)
{
	sub_close(s);
	Py_RETURN_NONE;
}

static PyObject *
sub_enter(SubObject *s, PyObject *unused)
{
	if (sub_check(s) < 0)
		return NULL;
	Py_INCREF(s);
	return (PyObject *)s;
}

static PyObject *
sub_exit(SubObject *s, PyObject *args)
{
	return sub_close_m(s, NULL);
}

static PyObject *
sub_fileno(SubObject *s, PyObject *unused)
{
	if (sub_check(s) < 0)
		return NULL;
	return PyLong_FromLong(daqiri_sub_fd(s->sub));
}

static PyObject *
sub_trigger(SubObject *s, PyObject *unused)
{
	uint64_t n, ns;
	int r;

	if (sub_check(s) < 0)
		return NULL;
	r = daqiri_sub_trigger(s->sub, &n, &ns);
	if (r < 0)
		return raise_errno(-r, "reading the stream's triggers");
	return Py_BuildValue("(KK)", (unsigned long long)n,
	    (unsigned long long)ns);
}

static PyObject *
sub_get_info(SubObject *s, void *unused)
{
	Py_INCREF(s->info_dict);
	return s->info_dict;
}

static PyObject *
sub_get_held(SubObject *s, void *unused)
{
	return PyLong_FromSsize_t(s->held);
}

static PyObject *
sub_get_closed(SubObject *s, void *unused)
{
	return PyBool_FromLong(s->closing);
}

static PyObject *
sub_repr(SubObject *s)
{
	return PyUnicode_FromFormat("<daqiri.Subscription %s %s %s%s>",
	    s->info.name, s->info.dtype_name,
	    daqiri_mem_kind_name(s->info.mem_kind),
	    s->closing ? " closed" : "");
}

static PyMethodDef sub_methods[] = {
	{ "next", (PyCFunction)(void (*)(void))sub_next,
	  METH_VARARGS | METH_KEYWORDS,
	  "next(timeout=None) -> Tensor, or None when timeout seconds passed" },
	{ "close", (PyCFunction)sub_close_m, METH_NOARGS,
	  "close(): unsubscribe (once no Tensor of it is alive)" },
	{ "fileno", (PyCFunction)sub_fileno, METH_NOARGS,
	  "fileno() -> int: the wake-up socket" },
	{ "trigger", (PyCFunction)sub_trigger, METH_NOARGS,
	  "trigger() -> (count, ns): the stream's triggers so far and the "
	  "daemon's CLOCK_MONOTONIC of the last (daqirictl trigger)" },
	{ "__enter__", (PyCFunction)sub_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)sub_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef sub_getset[] = {
	{ "info", (getter)sub_get_info, NULL, "the stream's geometry", NULL },
	{ "held", (getter)sub_get_held, NULL, "tensors not yet released",
	  NULL },
	{ "closed", (getter)sub_get_closed, NULL, "close() was called", NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

/* ---- types and module */

static PyTypeObject ConnType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "daqiri.Connection",
	.tp_doc = "A connection to daqirid (daqiri.connect())",
	.tp_basicsize = sizeof(ConnObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_dealloc = (destructor)conn_dealloc,
	.tp_methods = conn_methods,
	.tp_getset = conn_getset,
};

static PyTypeObject SubType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "daqiri.Subscription",
	.tp_doc = "A subscription to one stream (Connection.subscribe())",
	.tp_basicsize = sizeof(SubObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_dealloc = (destructor)sub_dealloc,
	.tp_repr = (reprfunc)sub_repr,
	.tp_iter = (getiterfunc)sub_iter,
	.tp_iternext = (iternextfunc)sub_iternext,
	.tp_methods = sub_methods,
	.tp_getset = sub_getset,
};


static PyMethodDef module_methods[] = {
	{ "connect", (PyCFunction)(void (*)(void))conn_connect,
	  METH_VARARGS | METH_KEYWORDS,
	  "connect(socket=None) -> Connection (socket None: $DAQIRI_SOCKET, "
	  "else DEFAULT_SOCKET)" },
	{ NULL, NULL, 0, NULL }
};

static struct PyModuleDef daqiri_module = {
	PyModuleDef_HEAD_INIT, "daqiri",
	"Receive daqirid's tensors zero-copy (see daqiri-python(3)).",
	-1, module_methods, NULL, NULL, NULL, NULL
};

PyMODINIT_FUNC PyInit_daqiri(void);

PyMODINIT_FUNC
PyInit_daqiri(void)
{
	static const struct { const char *name; long v; } consts[] = {
		{ "COMPLETE", DAQIRI_TENSOR_COMPLETE },
		{ "TIMEOUT", DAQIRI_TENSOR_TIMEOUT },
		{ "EVICTED", DAQIRI_TENSOR_EVICTED },
		{ "HAS_GAPS", DAQIRI_TENSOR_HAS_GAPS },
		{ "RESYNC", DAQIRI_TENSOR_RESYNC },
		{ "FLUSH", DAQIRI_TENSOR_FLUSH },
		{ "RESTART", DAQIRI_TENSOR_RESTART },
	};
	PyObject *m, *json;
	size_t i;

	if (PyType_Ready(&ConnType) < 0 || PyType_Ready(&SubType) < 0 ||
	    PyType_Ready(&TensorType) < 0)
		return NULL;
	if ((json = PyImport_ImportModule("json")) == NULL)
		return NULL;
	json_loads = PyObject_GetAttrString(json, "loads");
	json_dumps = PyObject_GetAttrString(json, "dumps");
	Py_DECREF(json);
	if (json_loads == NULL || json_dumps == NULL)
		return NULL;
	if ((m = PyModule_Create(&daqiri_module)) == NULL)
		return NULL;
	DaqiriError = PyErr_NewExceptionWithDoc("daqiri.Error",
	    "A daqiri failure: errno, and the daemon's message as strerror.",
	    PyExc_OSError, NULL);
	if (DaqiriError == NULL ||
	    PyModule_AddObjectRef(m, "Error", DaqiriError) < 0 ||
	    PyModule_AddObjectRef(m, "Connection", (PyObject *)&ConnType) < 0 ||
	    PyModule_AddObjectRef(m, "Subscription", (PyObject *)&SubType) < 0 ||
	    PyModule_AddObjectRef(m, "Tensor", (PyObject *)&TensorType) < 0 ||
	    PyModule_AddStringConstant(m, "DEFAULT_SOCKET",
	    DAQIRI_DEFAULT_SOCKET) < 0 ||
	    PyModule_AddStringConstant(m, "__version__", DAQIRI_VERSION) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	if (tx_types_ready(m) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	for (i = 0; i < sizeof(consts) / sizeof(consts[0]); i++)
		if (PyModule_AddIntConstant(m, consts[i].name, consts[i].v) < 0) {
			Py_DECREF(m);
			return NULL;
		}
	return m;
}

