/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daqiri module's Transmitter and TxBuffer: a TX channel of
 * libdaqiri-client (Connection.transmitter()), through which a consumer
 * sends payloads back to the instrument via the daemon, which writes
 * every header from its configuration. send() copies any buffer-protocol
 * object (or a list of them) into the channel's pool; buffer() lends a
 * pool buffer itself, writable, for zero-copy writes through a
 * memoryview or numpy.frombuffer(), and send() of that TxBuffer hands it
 * over without a copy. A tx queue in device memory is refused at
 * transmitter() (DAQIRI_TX_HOST_ONLY: nothing here can write GPU memory).
 *
 * Lifetime, as for subscriptions (daqiri_py.c's top comment): a TxBuffer
 * holds its Transmitter, a Transmitter its Connection; the pool stays
 * mapped while a TxBuffer lives (a view of a sent buffer may see it
 * reused, never unmapped memory), and a Transmitter closed meanwhile
 * closes the channel once the last TxBuffer is gone. Waits for a free
 * buffer run without the GIL and without the connection's lock, in
 * slices (SIGINT becomes KeyboardInterrupt between them).
 */
#include "daqiri_py.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define TX_SLICE_MS	50
/* Buffers a send() of a list submits per library call. */
#define TX_BATCH	64

typedef struct {
	PyObject_HEAD
	TxObject *tx;			/* owned */
	struct daqiri_tx_buf b;
	Py_ssize_t length;		/* bytes send() sends; default cap */
	Py_ssize_t exports;		/* views alive */
	bool spent;			/* sent or discarded */
} TxBufObject;

static PyTypeObject TxBufType;

/* ---- Transmitter */

/* 0 for a usable transmitter, or -1 with an exception. */
static int
tx_check(TxObject *t)
{
	if (conn_foreign(t->conn))
		return conn_check(t->conn);
	if (t->closing || t->tx == NULL) {
		raise_errno(EBADF, "the transmitter is closed");
		return -1;
	}
	return 0;
}

/* Close the channel and unmap now (no TxBuffer of it is alive). */
void
tx_teardown(TxObject *t)
{
	ConnObject *c = t->conn;
	struct daqiri_tx *tx;
	TxObject **pp;

	if (t->tx == NULL)
		return;
	conn_lock(c);
	tx = t->tx;
	t->tx = NULL;
	if (tx == NULL) {
		conn_unlock(c);
		return;
	}
	/* In a fork()ed child the channel is the parent's: the disconnect
	 * frees it without a word to the daemon. */
	if (!conn_foreign(c)) {
		Py_BEGIN_ALLOW_THREADS
		daqiri_tx_close(tx);
		Py_END_ALLOW_THREADS
	}
	conn_unlock(c);
	for (pp = &c->txs; *pp != NULL; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	c->live_subs--;
	conn_maybe_disconnect(c);
}

void
tx_close(TxObject *t)
{
	t->closing = true;
	if (t->live_bufs == 0)
		tx_teardown(t);
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/*
 * Take up to n free buffers into b[] without the GIL, waiting up to
 * slice_ms for the first: how many (0 on timeout), or -errno with the
 * library's message in msg. The lock is held only to look; the sleep is
 * a poll() on the channel's wake-up and the control socket without it.
 */
static int
tx_take_slice(TxObject *t, struct daqiri_tx_buf *b, int n, int slice_ms,
	      char *msg, size_t len)
{
	ConnObject *c = t->conn;
	uint64_t end = now_ms() + (uint64_t)slice_ms, now;
	struct pollfd p[2];
	int got, r;

	for (;;) {
		got = 0;
		r = 0;
		conn_lock_nogil(c);
		if (t->tx == NULL) {
			r = -EBADF;
		} else {
			struct daqiri_tx_stats st;

			memset(&st, 0, sizeof(st));
			st.size = sizeof(st);
			/* Completions and the control socket first: a daemon
			 * gone or a channel it ended ends the wait here
			 * (ENOTCONN), not by polling a readable socket
			 * forever. Then take only what is free:
			 * daqiri_tx_buf() counts every -EAGAIN as ring_full,
			 * and a wait is not a refusal. */
			r = daqiri_tx_wait(t->tx, 0);
			if (r == -ETIMEDOUT)
				r = 0;
			if (r == 0)
				r = daqiri_tx_stats(t->tx, &st);
			while (r == 0 && got < n && st.free > 0) {
				r = daqiri_tx_buf(t->tx, &b[got]);
				if (r == 0) {
					got++;
					st.free--;
				}
			}
			if (r == -EAGAIN)
				r = 0;
			if (r == 0 && got == 0 && slice_ms > 0)
				r = daqiri_tx_arm(t->tx);	/* 1: try again */
			p[0].fd = daqiri_tx_fd(t->tx);
			p[1].fd = daqiri_fd(c->d);
			if (r < 0)
				snprintf(msg, len, "%s", daqiri_last_error(c->d));
		}
		conn_unlock_nogil(c);
		if (r < 0) {
			/* buffers taken before an error go back */
			return got > 0 ? got : r;
		}
		if (got > 0)
			return got;
		if (r == 1)
			continue;
		now = now_ms();
		if (now >= end)
			return 0;
		p[0].events = p[1].events = POLLIN;
		p[0].revents = p[1].revents = 0;
		r = poll(p, 2, (int)(end - now));
		if (r < 0 && errno == EINTR)
			return -EINTR;
		if (r < 0)
			return -errno;
		if (r == 0)
			return 0;
	}
}

/*
 * Take up to n buffers, waiting up to timeout seconds (< 0: forever) for
 * the first: how many (>= 1), 0 when the timeout passed, or -1 with an
 * exception.
 */
static int
tx_take(TxObject *t, struct daqiri_tx_buf *b, int n, double timeout)
{
	uint64_t deadline = 0;
	char msg[512];
	int r, slice;

	if (timeout >= 0)
		deadline = now_ms() + (uint64_t)(timeout * 1000.0);
	for (;;) {
		slice = TX_SLICE_MS;
		if (timeout >= 0) {
			uint64_t now = now_ms();

			slice = now >= deadline ? 0 :
			    (deadline - now < TX_SLICE_MS ?
			    (int)(deadline - now) : TX_SLICE_MS);
		}
		msg[0] = '\0';
		Py_BEGIN_ALLOW_THREADS
		r = tx_take_slice(t, b, n, slice, msg, sizeof(msg));
		Py_END_ALLOW_THREADS
		/* Closed by another thread while this one waited for the
		 * GIL: the buffers went with the channel's pool. */
		if (r > 0 && t->tx == NULL)
			return tx_check(t);
		if (r > 0)
			return r;
		if (r == -EBADF)
			return tx_check(t);
		if (r < 0 && r != -EINTR) {
			if (r == -ENOTCONN && msg[0] == '\0')
				snprintf(msg, sizeof(msg), "the daemon closed "
				    "the channel or the connection");
			raise_errno(r, msg);
			return -1;
		}
		if (PyErr_CheckSignals() < 0)
			return -1;
		if (r == 0 && slice == 0)
			return 0;
	}
}

/* Submit n taken buffers (len set); what is not submitted is discarded.
 * 0 or -1 with an exception. */
static int
tx_submit(TxObject *t, struct daqiri_tx_buf *b, int n)
{
	ConnObject *c = t->conn;
	char msg[512] = "";
	int r = 0, done = 0;

	conn_lock(c);
	if (t->tx == NULL) {
		r = -EBADF;
	} else {
		/* The ring is as deep as the pool: every taken buffer fits. */
		while (done < n) {
			r = daqiri_tx_send(t->tx, b + done, (unsigned)(n - done));
			if (r <= 0)
				break;
			done += r;
		}
		if (r < 0)
			snprintf(msg, sizeof(msg), "%s", daqiri_last_error(c->d));
		for (int i = done; i < n; i++)
			daqiri_tx_discard(t->tx, &b[i]);
	}
	conn_unlock(c);
	if (done == n)
		return 0;
	if (r == -EBADF)
		return tx_check(t);
	raise_errno(r < 0 ? -r : EAGAIN, msg[0] != '\0' ? msg :
	    "the channel's ring is full");
	return -1;
}

static int
parse_timeout(PyObject *to, double *out)
{
	*out = -1;
	if (to == Py_None)
		return 0;
	*out = PyFloat_AsDouble(to);
	if (*out == -1 && PyErr_Occurred())
		return -1;
	if (*out < 0 || *out != *out) {
		PyErr_SetString(PyExc_ValueError,
		    "timeout must be >= 0 seconds, or None (forever)");
		return -1;
	}
	return 0;
}

static PyObject *
raise_full(double timeout, Py_ssize_t sent, Py_ssize_t total)
{
	char msg[160];

	snprintf(msg, sizeof(msg), "no free TX buffer within %.3f s "
	    "(%zd of %zd payloads sent)", timeout, sent, total);
	return raise_errno(EAGAIN, msg);
}

/* send() of one TxBuffer: zero copy. */
static PyObject *
tx_send_own(TxObject *t, TxBufObject *tb, Py_ssize_t nbytes)
{
	if (tb->tx != t) {
		PyErr_SetString(PyExc_ValueError,
		    "this TxBuffer belongs to another Transmitter");
		return NULL;
	}
	if (tb->spent) {
		PyErr_SetString(PyExc_ValueError,
		    "this TxBuffer was already sent or discarded");
		return NULL;
	}
	/* A view that outlived the hand-over could rewrite the payload
	 * in flight, or a buffer another writer has been lent. */
	if (tb->exports > 0) {
		PyErr_SetString(PyExc_BufferError, "this TxBuffer has views "
		    "(memoryview, numpy arrays): release them first");
		return NULL;
	}
	if (nbytes < 0)
		nbytes = tb->length;
	if (nbytes > (Py_ssize_t)tb->b.cap) {
		PyErr_Format(PyExc_ValueError, "nbytes %zd is over the "
		    "buffer's %u bytes", nbytes, tb->b.cap);
		return NULL;
	}
	tb->b.len = (uint32_t)nbytes;
	tb->spent = true;
	if (tx_submit(t, &tb->b, 1) < 0)
		return NULL;
	return PyLong_FromLong(1);
}

static PyObject *
tx_send(TxObject *t, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "payload", "timeout", "nbytes", NULL };
	PyObject *obj, *to = Py_None, *seq = NULL;
	struct daqiri_tx_buf b[TX_BATCH];
	Py_buffer *views = NULL;
	Py_ssize_t n, i, sent = 0, nbytes = -1;
	double timeout;
	PyObject *ret = NULL;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|On:send", kwlist, &obj,
	    &to, &nbytes) || parse_timeout(to, &timeout) < 0)
		return NULL;
	if (tx_check(t) < 0)
		return NULL;
	if (PyObject_TypeCheck(obj, &TxBufType))
		return tx_send_own(t, (TxBufObject *)obj, nbytes);
	if (nbytes >= 0) {
		PyErr_SetString(PyExc_TypeError,
		    "nbytes is for a TxBuffer; slice other payloads");
		return NULL;
	}
	if (PyList_Check(obj) || PyTuple_Check(obj)) {
		seq = PySequence_Fast(obj, "a list of payloads");
		if (seq == NULL)
			return NULL;
		n = PySequence_Fast_GET_SIZE(seq);
	} else {
		n = 1;
	}
	views = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof(*views));
	if (views == NULL) {
		Py_XDECREF(seq);
		return PyErr_NoMemory();
	}
	/* Every payload is checked before any is sent. */
	for (i = 0; i < n; i++) {
		PyObject *o = seq != NULL ? PySequence_Fast_GET_ITEM(seq, i) :
		    obj;

		if (PyObject_TypeCheck(o, &TxBufType)) {
			PyErr_SetString(PyExc_TypeError, "a TxBuffer is sent "
			    "alone: send(buf)");
			goto out;
		}
		if (PyObject_GetBuffer(o, &views[i], PyBUF_CONTIG_RO) < 0)
			goto out;
		if (views[i].len > (Py_ssize_t)t->buf_size) {
			PyErr_Format(PyExc_ValueError, "payload %zd has %zd "
			    "bytes: over the channel's %u", i, views[i].len,
			    t->buf_size);
			i++;
			goto out;
		}
	}
	while (sent < n) {
		int want = n - sent > TX_BATCH ? TX_BATCH : (int)(n - sent);
		int got = tx_take(t, b, want, timeout);

		if (got < 0)
			goto out;
		if (got == 0) {
			raise_full(timeout, sent, n);
			goto out;
		}
		for (int k = 0; k < got; k++) {
			memcpy(b[k].data, views[sent + k].buf,
			    (size_t)views[sent + k].len);
			b[k].len = (uint32_t)views[sent + k].len;
		}
		if (tx_submit(t, b, got) < 0)
			goto out;
		sent += got;
	}
	ret = PyLong_FromSsize_t(sent);
out:
	for (Py_ssize_t j = 0; j < i && j < n; j++)
		if (views[j].obj != NULL)
			PyBuffer_Release(&views[j]);
	PyMem_Free(views);
	Py_XDECREF(seq);
	return ret;
}

static PyObject *
tx_buffer(TxObject *t, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "timeout", NULL };
	PyObject *to = Py_None;
	TxBufObject *tb;
	struct daqiri_tx_buf b;
	double timeout;
	int got;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:buffer", kwlist, &to) ||
	    parse_timeout(to, &timeout) < 0 || tx_check(t) < 0)
		return NULL;
	got = tx_take(t, &b, 1, timeout);
	if (got < 0)
		return NULL;
	if (got == 0)
		return raise_full(timeout, 0, 1);
	/* Counted first: the allocation may run a finalizer that closes
	 * the transmitter, which then waits for this buffer. */
	t->live_bufs++;
	tb = PyObject_New(TxBufObject, &TxBufType);
	if (tb == NULL) {
		conn_lock(t->conn);
		if (t->tx != NULL)
			daqiri_tx_discard(t->tx, &b);
		conn_unlock(t->conn);
		t->live_bufs--;
		if (t->closing && t->live_bufs == 0)
			tx_teardown(t);
		return NULL;
	}
	Py_INCREF(t);
	tb->tx = t;
	tb->b = b;
	tb->length = b.cap;
	tb->exports = 0;
	tb->spent = false;
	return (PyObject *)tb;
}

/*
 * Wait up to slice_ms, without the GIL, until every submitted payload
 * completed: 0 done, -ETIMEDOUT, or -errno with msg. As tx_take_slice():
 * the lock only to look, the sleep without it.
 */
static int
tx_flush_slice(TxObject *t, int slice_ms, char *msg, size_t len)
{
	ConnObject *c = t->conn;
	uint64_t end = now_ms() + (uint64_t)slice_ms, now;
	struct pollfd p[2];
	int r;

	for (;;) {
		conn_lock_nogil(c);
		if (t->tx == NULL) {
			r = -EBADF;
		} else {
			r = daqiri_tx_flush(t->tx, 0);
			if (r == -ETIMEDOUT && slice_ms > 0) {
				r = daqiri_tx_arm(t->tx);
				if (r == 0)
					r = -ETIMEDOUT;
				else if (r == 1)
					r = -EAGAIN;	/* look again */
			}
			p[0].fd = daqiri_tx_fd(t->tx);
			p[1].fd = daqiri_fd(c->d);
			if (r < 0 && r != -ETIMEDOUT && r != -EAGAIN)
				snprintf(msg, len, "%s", daqiri_last_error(c->d));
		}
		conn_unlock_nogil(c);
		if (r == -EAGAIN)
			continue;
		if (r != -ETIMEDOUT)
			return r;
		now = now_ms();
		if (now >= end)
			return -ETIMEDOUT;
		p[0].events = p[1].events = POLLIN;
		p[0].revents = p[1].revents = 0;
		r = poll(p, 2, (int)(end - now));
		if (r < 0 && errno == EINTR)
			return -EINTR;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
	}
}

static PyObject *
tx_flush(TxObject *t, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "timeout", NULL };
	PyObject *to = Py_None;
	uint64_t deadline = 0;
	double timeout;
	char msg[512];
	int r;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:flush", kwlist, &to) ||
	    parse_timeout(to, &timeout) < 0 || tx_check(t) < 0)
		return NULL;
	if (timeout >= 0)
		deadline = now_ms() + (uint64_t)(timeout * 1000.0);
	for (;;) {
		int slice = TX_SLICE_MS;

		if (timeout >= 0) {
			uint64_t now = now_ms();

			slice = now >= deadline ? 0 : (deadline - now <
			    TX_SLICE_MS ? (int)(deadline - now) : TX_SLICE_MS);
		}
		msg[0] = '\0';
		Py_BEGIN_ALLOW_THREADS
		r = tx_flush_slice(t, slice, msg, sizeof(msg));
		Py_END_ALLOW_THREADS
		if (r == 0)
			Py_RETURN_TRUE;
		if (r == -EBADF)
			return tx_check(t) < 0 ? NULL : Py_NewRef(Py_False);
		if (r != -ETIMEDOUT && r != -EINTR)
			return raise_errno(r, msg);
		if (PyErr_CheckSignals() < 0)
			return NULL;
		if (r == -ETIMEDOUT && slice == 0)
			Py_RETURN_FALSE;
	}
}

static PyObject *
tx_get_stats(TxObject *t, void *unused)
{
	struct daqiri_tx_stats st;
	int r;

	if (tx_check(t) < 0)
		return NULL;
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	conn_lock(t->conn);
	r = t->tx != NULL ? daqiri_tx_stats(t->tx, &st) : -EBADF;
	conn_unlock(t->conn);
	if (r < 0)
		return raise_errno(-r, NULL);
	return Py_BuildValue("{s:s,s:I,s:I,s:I,s:I,s:K,s:K,s:K,s:K,s:K,s:K}",
	    "queue", st.queue, "nbufs", st.nbufs, "buf_size", st.buf_size,
	    "free", st.free, "in_flight", st.in_flight,
	    "sent", (unsigned long long)st.sent,
	    "failed", (unsigned long long)st.failed,
	    "too_big", (unsigned long long)st.too_big,
	    "engine_error", (unsigned long long)st.engine_error,
	    "stopped", (unsigned long long)st.stopped,
	    "ring_full", (unsigned long long)st.ring_full);
}

static PyObject *
tx_get_buf_size(TxObject *t, void *unused)
{
	return PyLong_FromUnsignedLong(t->buf_size);
}

static PyObject *
tx_get_nbufs(TxObject *t, void *unused)
{
	return PyLong_FromUnsignedLong(t->nbufs);
}

static PyObject *
tx_get_queue(TxObject *t, void *unused)
{
	return PyUnicode_FromString(t->queue);
}

static PyObject *
tx_get_closed(TxObject *t, void *unused)
{
	return PyBool_FromLong(t->closing);
}

static PyObject *
tx_close_m(TxObject *t, PyObject *unused)
{
	tx_close(t);
	Py_RETURN_NONE;
}

static PyObject *
tx_enter(TxObject *t, PyObject *unused)
{
	if (tx_check(t) < 0)
		return NULL;
	return Py_NewRef((PyObject *)t);
}

static PyObject *
tx_exit(TxObject *t, PyObject *args)
{
	return tx_close_m(t, NULL);
}

static PyObject *
tx_repr(TxObject *t)
{
	return PyUnicode_FromFormat("<daqiri.Transmitter %s %u x %u bytes%s>",
	    t->queue, t->nbufs, t->buf_size, t->closing ? " closed" : "");
}

static void
tx_dealloc(TxObject *t)
{
	/* No TxBuffer is left (each holds the transmitter). */
	tx_teardown(t);
	Py_DECREF(t->conn);
	PyObject_Free(t);
}

static PyMethodDef tx_methods[] = {
	{ "send", (PyCFunction)(void (*)(void))tx_send,
	  METH_VARARGS | METH_KEYWORDS,
	  "send(payload, timeout=None, nbytes=-1) -> int: send a bytes-like "
	  "object, a list of them, or a TxBuffer (zero copy; nbytes of it, "
	  "default its length); waits up to timeout s for free buffers" },
	{ "buffer", (PyCFunction)(void (*)(void))tx_buffer,
	  METH_VARARGS | METH_KEYWORDS,
	  "buffer(timeout=None) -> TxBuffer: a writable pool buffer" },
	{ "flush", (PyCFunction)(void (*)(void))tx_flush,
	  METH_VARARGS | METH_KEYWORDS,
	  "flush(timeout=None) -> bool: wait until every payload completed "
	  "(False: the timeout passed)" },
	{ "close", (PyCFunction)tx_close_m, METH_NOARGS,
	  "close(): close the channel (once no TxBuffer of it is alive)" },
	{ "__enter__", (PyCFunction)tx_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)tx_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef tx_getset[] = {
	{ "stats", (getter)tx_get_stats, NULL, "the channel's counters", NULL },
	{ "buf_size", (getter)tx_get_buf_size, NULL, "largest payload", NULL },
	{ "nbufs", (getter)tx_get_nbufs, NULL, "buffers of the pool", NULL },
	{ "queue", (getter)tx_get_queue, NULL, "\"<interface>/<queue>\"",
	  NULL },
	{ "closed", (getter)tx_get_closed, NULL, "close() was called", NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

PyTypeObject TxType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "daqiri.Transmitter",
	.tp_doc = "A TX channel to a tx queue (Connection.transmitter())",
	.tp_basicsize = sizeof(TxObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_dealloc = (destructor)tx_dealloc,
	.tp_repr = (reprfunc)tx_repr,
	.tp_methods = tx_methods,
	.tp_getset = tx_getset,
};

PyObject *
conn_transmitter(ConnObject *c, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "queue", "nbufs", NULL };
	const char *queue;
	Py_ssize_t nbufs = 0;
	struct daqiri_tx_opts o;
	struct daqiri_tx_stats st;
	struct daqiri_tx *tx = NULL;
	char msg[512];
	TxObject *t;
	int r;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "s|n:transmitter", kwlist,
	    &queue, &nbufs))
		return NULL;
	if (nbufs < 0 || nbufs > UINT32_MAX) {
		PyErr_Format(PyExc_ValueError, "nbufs %zd: must be 0 (the "
		    "daemon's default) or a count of buffers", nbufs);
		return NULL;
	}
	memset(&o, 0, sizeof(o));
	o.size = sizeof(o);
	o.nbufs = (uint32_t)nbufs;
	/* send() and buffer() write with the CPU: a device pool (a tx queue
	 * in device memory) is refused, by name, before CUDA is touched */
	o.flags = DAQIRI_TX_HOST_ONLY;
	if (conn_lock_open(c) < 0)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	r = daqiri_tx_open(c->d, queue, &o, &tx);
	Py_END_ALLOW_THREADS
	snprintf(msg, sizeof(msg), "%s", daqiri_last_error(c->d));
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	if (r == 0)
		r = daqiri_tx_stats(tx, &st);
	conn_unlock(c);
	if (r < 0) {
		if (tx != NULL) {
			conn_lock(c);
			daqiri_tx_close(tx);
			conn_unlock(c);
		}
		if (r == -ENOTSUP && strstr(msg, "device memory") != NULL)
			snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
			    ": the Python Transmitter sends from host memory "
			    "only; use libdaqiri-client's daqiri_tx_* from C "
			    "with CUDA");
		return raise_errno(r, msg);
	}
	t = PyObject_New(TxObject, &TxType);
	if (t == NULL) {
		conn_lock(c);
		daqiri_tx_close(tx);
		conn_unlock(c);
		return NULL;
	}
	Py_INCREF(c);
	t->conn = c;
	t->tx = tx;
	snprintf(t->queue, sizeof(t->queue), "%s", st.queue);
	t->nbufs = st.nbufs;
	t->buf_size = st.buf_size;
	t->live_bufs = 0;
	t->closing = false;
	t->next = c->txs;
	c->txs = t;
	c->live_subs++;
	return (PyObject *)t;
}

/* ---- TxBuffer */

static int
txbuf_getbuffer(TxBufObject *tb, Py_buffer *view, int flags)
{
	/* In a fork()ed child the pool is the parent's channel's. */
	if (conn_foreign(tb->tx->conn)) {
		view->obj = NULL;
		return conn_check(tb->tx->conn);
	}
	if (tb->spent) {
		PyErr_SetString(PyExc_BufferError,
		    "this TxBuffer was sent or discarded");
		view->obj = NULL;
		return -1;
	}
	if (PyBuffer_FillInfo(view, (PyObject *)tb, tb->b.data,
	    (Py_ssize_t)tb->b.cap, 0, flags) < 0)
		return -1;
	tb->exports++;
	return 0;
}

static void
txbuf_releasebuffer(TxBufObject *tb, Py_buffer *view)
{
	(void)view;
	tb->exports--;
}

static PyBufferProcs txbuf_as_buffer = {
	.bf_getbuffer = (getbufferproc)txbuf_getbuffer,
	.bf_releasebuffer = (releasebufferproc)txbuf_releasebuffer,
};

/* Give the buffer back unsent, once (dealloc and discard()). */
static void
txbuf_give_back(TxBufObject *tb)
{
	TxObject *t = tb->tx;

	if (tb->spent)
		return;
	tb->spent = true;
	conn_lock(t->conn);
	if (t->tx != NULL && !conn_foreign(t->conn))
		daqiri_tx_discard(t->tx, &tb->b);
	conn_unlock(t->conn);
}

static PyObject *
txbuf_discard(TxBufObject *tb, PyObject *unused)
{
	if (conn_foreign(tb->tx->conn))
		return conn_check(tb->tx->conn) < 0 ? NULL : Py_NewRef(Py_None);
	/* A view kept after it could write into the buffer the next
	 * buffer() lends to another writer. */
	if (!tb->spent && tb->exports > 0) {
		PyErr_SetString(PyExc_BufferError, "this TxBuffer has views "
		    "(memoryview, numpy arrays): release them first");
		return NULL;
	}
	txbuf_give_back(tb);
	Py_RETURN_NONE;
}

static void
txbuf_dealloc(TxBufObject *tb)
{
	TxObject *t = tb->tx;

	txbuf_give_back(tb);
	t->live_bufs--;
	if (t->closing && t->live_bufs == 0)
		tx_teardown(t);
	Py_DECREF(t);
	PyObject_Free(tb);
}

static PyObject *
txbuf_get_capacity(TxBufObject *tb, void *unused)
{
	return PyLong_FromUnsignedLong(tb->b.cap);
}

static PyObject *
txbuf_get_length(TxBufObject *tb, void *unused)
{
	return PyLong_FromSsize_t(tb->length);
}

static int
txbuf_set_length(TxBufObject *tb, PyObject *v, void *unused)
{
	Py_ssize_t n;

	if (v == NULL) {
		PyErr_SetString(PyExc_TypeError, "length cannot be deleted");
		return -1;
	}
	n = PyLong_AsSsize_t(v);
	if (n == -1 && PyErr_Occurred())
		return -1;
	if (n < 0 || n > (Py_ssize_t)tb->b.cap) {
		PyErr_Format(PyExc_ValueError, "length must be 0..%u",
		    tb->b.cap);
		return -1;
	}
	tb->length = n;
	return 0;
}

static PyObject *
txbuf_get_spent(TxBufObject *tb, void *unused)
{
	return PyBool_FromLong(tb->spent);
}

static PyMethodDef txbuf_methods[] = {
	{ "discard", (PyCFunction)txbuf_discard, METH_NOARGS,
	  "discard(): give the buffer back unsent" },
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef txbuf_getset[] = {
	{ "capacity", (getter)txbuf_get_capacity, NULL, "bytes it holds",
	  NULL },
	{ "length", (getter)txbuf_get_length, (setter)txbuf_set_length,
	  "bytes send() sends (default: capacity)", NULL },
	{ "spent", (getter)txbuf_get_spent, NULL, "sent or discarded", NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

static PyTypeObject TxBufType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "daqiri.TxBuffer",
	.tp_doc = "A writable TX pool buffer (Transmitter.buffer())",
	.tp_basicsize = sizeof(TxBufObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_dealloc = (destructor)txbuf_dealloc,
	.tp_as_buffer = &txbuf_as_buffer,
	.tp_methods = txbuf_methods,
	.tp_getset = txbuf_getset,
};

int
tx_types_ready(PyObject *m)
{
	if (PyType_Ready(&TxType) < 0 || PyType_Ready(&TxBufType) < 0)
		return -1;
	if (PyModule_AddObjectRef(m, "Transmitter", (PyObject *)&TxType) < 0 ||
	    PyModule_AddObjectRef(m, "TxBuffer", (PyObject *)&TxBufType) < 0)
		return -1;
	return 0;
}
