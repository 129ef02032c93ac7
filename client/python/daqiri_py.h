/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to the daqiri Python module: its objects and what its files
 * call of each other. daqiri_py.c is the module, Connection and
 * Subscription (and the locking and lifetime rules, in its top comment);
 * daqiri_py_tensor.c is Tensor and its views (buffer protocol, NumPy,
 * DLPack, the CUDA array interface); daqiri_py_tx.c is Transmitter and
 * TxBuffer (TX channels). Only PyInit_daqiri is exported.
 */
#ifndef DAQIRI_PY_H
#define DAQIRI_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "daqiri_client.h"

#define PY_HIDDEN	__attribute__((visibility("hidden")))

typedef struct SubObject SubObject;
typedef struct TxObject TxObject;

/* A FIFO lock: tickets handed out in order, served in order. */
struct fair_lock {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t next;			/* the next ticket to hand out */
	uint64_t serving;		/* the ticket that holds the lock */
};

typedef struct {
	PyObject_HEAD
	struct daqiri *d;		/* NULL once disconnected */
	pid_t pid;			/* the process that connected */
	struct fair_lock lock;		/* held around every library call */
	bool closing;			/* close() called */
	int live_subs;			/* subscriptions and transmitters
					 * still mapped */
	SubObject *subs;		/* those, borrowed, linked by next */
	TxObject *txs;			/* the transmitters, the same way */
} ConnObject;

struct SubObject {
	PyObject_HEAD
	ConnObject *conn;		/* owned */
	SubObject *next;		/* conn->subs list */
	struct daqiri_sub *sub;		/* NULL once torn down */
	struct daqiri_stream_info info;
	PyObject *info_dict;
	Py_ssize_t live_tensors;	/* Tensor objects alive */
	Py_ssize_t held;		/* of them, not released */
	bool closing;			/* close() called */
	bool ended;			/* the daemon ended it */
	bool busy;			/* busy_poll */
	/* said once (RuntimeWarning) until it changes: it holds max_held
	 * tensors, so the daemon delivers no more; the daemon is gone and
	 * the subscription waits for it to come back */
	bool warned_held, warned_down;
};

struct TxObject {
	PyObject_HEAD
	ConnObject *conn;		/* owned */
	TxObject *next;			/* conn->txs list */
	struct daqiri_tx *tx;		/* NULL once torn down */
	char queue[128];
	uint32_t nbufs, buf_size;
	Py_ssize_t live_bufs;		/* TxBuffer objects alive */
	bool closing;			/* close() called */
};

typedef struct {
	PyObject_HEAD
	SubObject *sub;			/* owned */
	struct daqiri_tensor t;
	bool released;
	Py_ssize_t shape[2], strides[2];	/* for the buffer protocol */
} TensorObject;

/* ---- daqiri_py.c */

/* daqiri.Error, an OSError. */
PY_HIDDEN extern PyObject *DaqiriError;

/* Raise daqiri.Error(errno, msg) (msg NULL or "": strerror); NULL. */
PY_HIDDEN PyObject *raise_errno(int err, const char *msg);

/* The connection's lock (a no-op in a fork()ed child), taken with the
 * GIL given up while waiting for it. */
PY_HIDDEN void conn_lock(ConnObject *c);
PY_HIDDEN void conn_unlock(ConnObject *c);

/* The same from a thread that gave up the GIL (never in a child). */
PY_HIDDEN void conn_lock_nogil(ConnObject *c);
PY_HIDDEN void conn_unlock_nogil(ConnObject *c);

/* Take the lock of an open connection: 0, or -1 with an exception. */
PY_HIDDEN int conn_lock_open(ConnObject *c);

/* Disconnect once closed and nothing keeps mappings. */
PY_HIDDEN void conn_maybe_disconnect(ConnObject *c);

/* Made in another process (before a fork())? */
PY_HIDDEN bool conn_foreign(const ConnObject *c);

/* 0 for an open connection of this process, or -1 with daqiri.Error. */
PY_HIDDEN int conn_check(ConnObject *c);

/* Unsubscribe and unmap now (no Tensor of it is alive). */
PY_HIDDEN void sub_teardown(SubObject *s);

/* ---- daqiri_py_tx.c */

/* Connection.transmitter(); close (once no TxBuffer lives) and teardown;
 * the Transmitter and TxBuffer types added to module m (0 or -1). */
PY_HIDDEN PyObject *conn_transmitter(ConnObject *c, PyObject *args,
				     PyObject *kw);
PY_HIDDEN void tx_close(TxObject *t);
PY_HIDDEN void tx_teardown(TxObject *t);
PY_HIDDEN int tx_types_ready(PyObject *m);
PY_HIDDEN extern PyTypeObject TxType;

/* ---- daqiri_py_tensor.c */

PY_HIDDEN extern PyTypeObject TensorType;

/* A Tensor for t, which s now holds (given back at once on failure). */
PY_HIDDEN PyObject *tensor_new(SubObject *s, const struct daqiri_tensor *t);

#endif
