/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to the daqiri Python module: its three objects and what its two
 * files call of each other. daqiri_py.c is the module, Connection and
 * Subscription (and the locking and lifetime rules, in its top comment);
 * daqiri_py_tensor.c is Tensor and its views (buffer protocol, NumPy,
 * DLPack, the CUDA array interface). Only PyInit_daqiri is exported.
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
	int live_subs;			/* subscriptions still mapped */
	SubObject *subs;		/* those, borrowed, linked by next */
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

/* Made in another process (before a fork())? */
PY_HIDDEN bool conn_foreign(const ConnObject *c);

/* 0 for an open connection of this process, or -1 with daqiri.Error. */
PY_HIDDEN int conn_check(ConnObject *c);

/* Unsubscribe and unmap now (no Tensor of it is alive). */
PY_HIDDEN void sub_teardown(SubObject *s);

/* ---- daqiri_py_tensor.c */

PY_HIDDEN extern PyTypeObject TensorType;

/* A Tensor for t, which s now holds (given back at once on failure). */
PY_HIDDEN PyObject *tensor_new(SubObject *s, const struct daqiri_tensor *t);

#endif
