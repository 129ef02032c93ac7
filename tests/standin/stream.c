/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stand-in's streams and events: every asynchronous operation is
 * queued on its stream and runs only when something waits for it, in
 * the order CUDA guarantees and otherwise adversarially (cudart.c's top
 * comment says why). The legacy stream's implicit ordering lives here.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "kernel.h"
#include "standin.h"

static const char *const op_names[SI_OP_MAX] = {
	"memcpy", "memset", "kernel", "record", "wait", "wait-ipc"
};

struct si_stream si_legacy = { .legacy = 1 };
static struct si_stream **g_streams;	/* live streams, legacy first */
static size_t g_nstreams;
static uint64_t g_stream_ids;
static _Thread_local struct si_stream *si_tls_stream;	/* per-thread */

static struct si_event **g_events;	/* live events */
static size_t g_nevents;

static pthread_cond_t g_cv;		/* an operation finished */
uint64_t si_seq;			/* issue order of every operation */

void
si_stream_init(void)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g_cv, &ca);
	pthread_condattr_destroy(&ca);
	if (si_ptr_push((void ***)&g_streams, &g_nstreams, &si_legacy) != 0)
		abort();
}

/* ---- the queue runner ---- */

struct si_stream *
si_stream_get(cudaStream_t h)
{
	struct si_stream *s;

	if (h == NULL || h == cudaStreamLegacy)
		return &si_legacy;
	if (h == cudaStreamPerThread) {
		if (si_tls_stream != NULL)
			return si_tls_stream;
		/* a blocking stream of this thread's own, created once */
		if ((s = calloc(1, sizeof(*s))) == NULL)
			return NULL;
		s->id = ++g_stream_ids;
		if (si_ptr_push((void ***)&g_streams, &g_nstreams, s) != 0) {
			free(s);
			return NULL;
		}
		return si_tls_stream = s;
	}
	s = (struct si_stream *)h;
	return si_ptr_has((void *const *)g_streams, g_nstreams, s) ? s : NULL;
}

int
si_done(const struct si_stream *s, uint64_t seq)
{
	return s->head == NULL || s->head->seq > seq;
}

struct si_op *
si_op_new(enum si_optype t, size_t extra)
{
	struct si_op *op = calloc(1, sizeof(*op) + extra);

	if (op != NULL)
		op->type = t;
	return op;
}

void
si_op_free(struct si_op *op)
{
	free(op->deps);
	free(op);
}

static int
op_dep(struct si_op *op, struct si_stream *s, uint64_t seq)
{
	struct si_dep *d;

	if (si_done(s, seq))
		return 0;
	d = realloc(op->deps, (op->ndeps + 1) * sizeof(*d));
	if (d == NULL)
		return -1;
	d[op->ndeps].s = s;
	d[op->ndeps].seq = seq;
	op->deps = d;
	op->ndeps++;
	return 0;
}

static cudaError_t
exec_op(struct si_op *op)
{
	cudaError_t e = cudaSuccess;

	si_log("run seq %" PRIu64 " %s", op->seq, op_names[op->type]);
	switch (op->type) {
	case SI_OP_COPY:
		memmove(op->u.copy.dst, op->u.copy.src, op->u.copy.n);
		break;
	case SI_OP_SET:
		memset(op->u.set.dst, op->u.set.value, op->u.set.n);
		break;
	case SI_OP_KERNEL:
		e = si_kernel_exec(op);
		break;
	case SI_OP_RECORD:
		op->u.ev.ev->t_ns = si_now_ns();
		op->u.ev.ev->has_t = 1;
		if (op->u.ev.ev->sp != NULL)
			si_arena_complete(op->u.ev.ev, op->u.ev.ipc_seq);
		si_event_unref(op->u.ev.ev);
		break;
	case SI_OP_WAIT:
		break;
	case SI_OP_WAIT_IPC:
		e = si_foreign_wait(op->u.ev.ev, op->u.ev.target);
		si_event_unref(op->u.ev.ev);
		break;
	default:
		abort();
	}
	return e;
}

/*
 * Run s's operations up to seq, each after what it depends on. An
 * operation that waits for another process releases the lock; a thread
 * that finds the head of a stream running waits for it to finish.
 */
cudaError_t
si_run_until(struct si_stream *s, uint64_t seq)
{
	struct si_op *op;
	cudaError_t e;
	uint32_t i;

	for (;;) {
		if ((e = si_sticky()) != cudaSuccess)
			return e;
		op = s->head;
		if (op == NULL || op->seq > seq)
			return cudaSuccess;
		if (op->running) {
			pthread_cond_wait(&g_cv, &si_mu);
			continue;
		}
		for (i = 0; i < op->ndeps; i++)
			if ((e = si_run_until(op->deps[i].s,
			    op->deps[i].seq)) != cudaSuccess)
				return e;
		if (s->head != op || op->running)
			continue;	/* another thread got there meanwhile */
		op->running = 1;
		e = exec_op(op);
		s->head = op->next;
		if (s->head == NULL)
			s->tail = NULL;
		si_op_free(op);
		pthread_cond_broadcast(&g_cv);
		if (e != cudaSuccess)
			return e;
	}
}

/*
 * All streams, the one whose oldest pending operation was issued last
 * first: the order most likely to expose an ordering CUDA does not
 * guarantee, made the same on every run.
 */
cudaError_t
si_sync_all(void)
{
	struct si_stream *pick;
	cudaError_t e;
	size_t i;
	int busy;

	for (;;) {
		pick = NULL;
		busy = 0;
		for (i = 0; i < g_nstreams; i++) {
			struct si_stream *s = g_streams[i];

			if (s->head == NULL)
				continue;
			if (s->head->running) {
				busy = 1;
				continue;
			}
			if (pick == NULL || s->head->seq > pick->head->seq)
				pick = s;
		}
		if (pick == NULL && !busy)
			return si_sticky();
		if (pick == NULL) {
			pthread_cond_wait(&g_cv, &si_mu);
			continue;
		}
		if ((e = si_run_until(pick, pick->tail->seq)) != cudaSuccess)
			return e;
	}
}

/*
 * Queue op on s with the legacy stream's implicit ordering: an operation
 * on it waits for all earlier work of the blocking streams, one on a
 * blocking stream for all earlier work of it. In two steps, so that a
 * caller can commit what the operation stands for (an event's record)
 * between the one that can fail and the one that cannot. On failure op
 * is freed.
 */
int
si_enqueue_deps(struct si_stream *s, struct si_op *op)
{
	size_t i;

	if (s->legacy) {
		for (i = 0; i < g_nstreams; i++) {
			struct si_stream *t = g_streams[i];

			if (t != s && !(t->flags & cudaStreamNonBlocking) &&
			    t->tail != NULL &&
			    op_dep(op, t, t->tail->seq) != 0)
				goto nomem;
		}
	} else if (!(s->flags & cudaStreamNonBlocking) &&
	    si_legacy.tail != NULL &&
	    op_dep(op, &si_legacy, si_legacy.tail->seq) != 0)
		goto nomem;
	return 0;
nomem:
	si_op_free(op);
	return -1;
}

/* The operation gets seq si_seq + 1. Eager mode runs it now. */
cudaError_t
si_enqueue_commit(struct si_stream *s, struct si_op *op)
{
	op->seq = ++si_seq;
	if (s->tail != NULL)
		s->tail->next = op;
	else
		s->head = op;
	s->tail = op;
	s->polled = 0;
	si_log("enqueue seq %" PRIu64 " %s on stream %" PRIu64 " (%u deps)",
	    op->seq, op_names[op->type], s->id, op->ndeps);
	if (si_eager)
		return si_run_until(s, op->seq);
	return cudaSuccess;
}

cudaError_t
si_enqueue(struct si_stream *s, struct si_op *op)
{
	if (si_enqueue_deps(s, op) != 0)
		return cudaErrorMemoryAllocation;
	return si_enqueue_commit(s, op);
}

/* Queue an operation that does nothing, to wait for s "as of now". */
static cudaError_t
marker(struct si_stream *s, uint64_t *seq)
{
	struct si_op *op = si_op_new(SI_OP_WAIT, 0);
	cudaError_t e;

	if (op == NULL)
		return cudaErrorMemoryAllocation;
	if ((e = si_enqueue(s, op)) == cudaSuccess)
		*seq = si_seq;
	return e;
}

/* ---- streams ---- */

cudaError_t
cudaStreamCreateWithFlags(cudaStream_t *ps, unsigned int flags)
{
	struct si_stream *s;
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	if (ps == NULL || (flags & ~(unsigned)cudaStreamNonBlocking) != 0)
		return si_leave(cudaErrorInvalidValue);
	if ((s = calloc(1, sizeof(*s))) == NULL ||
	    si_ptr_push((void ***)&g_streams, &g_nstreams, s) != 0) {
		free(s);
		return si_leave(cudaErrorMemoryAllocation);
	}
	s->flags = flags;
	s->id = ++g_stream_ids;
	*ps = (cudaStream_t)s;
	si_log("stream %" PRIu64 " created%s", s->id,
	    flags ? " (non-blocking)" : "");
	return si_leave(cudaSuccess);
}

cudaError_t
cudaStreamCreate(cudaStream_t *ps)
{
	return cudaStreamCreateWithFlags(ps, cudaStreamDefault);
}

static struct si_stream *retired_streams;	/* under the lock */

cudaError_t
cudaStreamDestroy(cudaStream_t h)
{
	struct si_stream *s;
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	s = si_stream_get(h);
	if (s == NULL || s == &si_legacy || s == si_tls_stream ||
	    h == cudaStreamPerThread)
		return si_leave(cudaErrorInvalidResourceHandle);
	if (s->tail != NULL &&
	    (e = si_run_until(s, s->tail->seq)) != cudaSuccess)
		return si_leave(e);
	/* The struct stays (on a list, not leaked): a queued dependency may
	 * still name it. */
	si_ptr_remove((void **)g_streams, &g_nstreams, s);
	s->retired = retired_streams;
	retired_streams = s;
	si_log("stream %" PRIu64 " destroyed", s->id);
	return si_leave(cudaSuccess);
}

/* Synchronising the legacy stream waits for the blocking streams too. */
static cudaError_t
stream_sync(struct si_stream *s)
{
	uint64_t seq;
	cudaError_t e;

	if (s->legacy) {
		if ((e = marker(s, &seq)) != cudaSuccess)
			return e;
		return si_run_until(s, seq);
	}
	return s->tail != NULL ? si_run_until(s, s->tail->seq) : cudaSuccess;
}

static int
stream_pending(const struct si_stream *s)
{
	size_t i;

	if (s->head != NULL)
		return 1;
	if (!s->legacy)
		return 0;
	for (i = 0; i < g_nstreams; i++)
		if (!(g_streams[i]->flags & cudaStreamNonBlocking) &&
		    g_streams[i]->head != NULL)
			return 1;
	return 0;
}

cudaError_t
cudaStreamSynchronize(cudaStream_t h)
{
	struct si_stream *s;
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	if ((s = si_stream_get(h)) == NULL)
		return si_leave(cudaErrorInvalidResourceHandle);
	return si_leave(stream_sync(s));
}

/* Pending work: NotReady the first time, run on the next query, so a
 * polling loop progresses and a read without any wait sees old data. */
cudaError_t
cudaStreamQuery(cudaStream_t h)
{
	struct si_stream *s;
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	if ((s = si_stream_get(h)) == NULL)
		return si_leave(cudaErrorInvalidResourceHandle);
	if (!stream_pending(s))
		return si_leave(cudaSuccess);
	if (!s->polled) {
		s->polled = 1;
		return si_leave(cudaErrorNotReady);
	}
	return si_leave(stream_sync(s));
}

cudaError_t
cudaDeviceSynchronize(void)
{
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	return si_leave(si_sync_all());
}

/* ---- events ---- */

struct si_event *
si_event_get(cudaEvent_t h)
{
	struct si_event *ev = (struct si_event *)h;

	return si_ptr_has((void *const *)g_events, g_nevents, ev) ? ev : NULL;
}

int
si_event_add(struct si_event *ev)
{
	ev->alive = 1;
	ev->refs = 1;
	return si_ptr_push((void ***)&g_events, &g_nevents, ev);
}

void
si_event_unref(struct si_event *ev)
{
	if (--ev->refs > 0)
		return;
	if (ev->fa != NULL)
		si_foreign_release(ev);
	else if (ev->sp != NULL)
		si_arena_slot_put(ev);
	free(ev);
}

cudaError_t
cudaEventCreateWithFlags(cudaEvent_t *pe, unsigned int flags)
{
	struct si_event *ev;
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	if (pe == NULL || (flags & ~(unsigned)(cudaEventBlockingSync |
	    cudaEventDisableTiming | cudaEventInterprocess)) != 0 ||
	    ((flags & cudaEventInterprocess) &&
	    !(flags & cudaEventDisableTiming)))
		return si_leave(cudaErrorInvalidValue);
	if ((ev = calloc(1, sizeof(*ev))) == NULL)
		return si_leave(cudaErrorMemoryAllocation);
	ev->flags = flags;
	if ((flags & cudaEventInterprocess) && si_arena_slot_get(ev) != 0) {
		free(ev);
		return si_leave(cudaErrorMemoryAllocation);
	}
	if (si_event_add(ev) != 0) {
		ev->refs = 1;
		si_event_unref(ev);
		return si_leave(cudaErrorMemoryAllocation);
	}
	*pe = (cudaEvent_t)ev;
	return si_leave(cudaSuccess);
}

cudaError_t
cudaEventCreate(cudaEvent_t *pe)
{
	return cudaEventCreateWithFlags(pe, cudaEventDefault);
}

cudaError_t
cudaEventDestroy(cudaEvent_t h)
{
	struct si_event *ev;
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	if ((ev = si_event_get(h)) == NULL)
		return si_leave(cudaErrorInvalidResourceHandle);
	si_ptr_remove((void **)g_events, &g_nevents, ev);
	ev->alive = 0;
	si_event_unref(ev);	/* pending records keep it until they run */
	return si_leave(cudaSuccess);
}

cudaError_t
cudaEventRecord(cudaEvent_t h, cudaStream_t stream)
{
	struct si_event *ev;
	struct si_stream *s;
	struct si_op *op;
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	if ((ev = si_event_get(h)) == NULL || (s = si_stream_get(stream)) == NULL)
		return si_leave(cudaErrorInvalidResourceHandle);
	if (ev->fa != NULL) {
		fprintf(stderr, "cuda-standin: cudaEventRecord on an event "
		    "opened from another process is not supported\n");
		return si_leave(cudaErrorNotSupported);
	}
	if ((op = si_op_new(SI_OP_RECORD, 0)) == NULL ||
	    si_enqueue_deps(s, op) != 0)
		return si_leave(cudaErrorMemoryAllocation);
	op->u.ev.ev = ev;
	ev->refs++;
	if (ev->sp != NULL)
		op->u.ev.ipc_seq = si_arena_record(ev);
	ev->rec_s = s;
	ev->rec_seq = si_seq + 1;
	return si_leave(si_enqueue_commit(s, op));
}

cudaError_t
cudaEventQuery(cudaEvent_t h)
{
	struct si_event *ev;
	uint64_t target;
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	if ((ev = si_event_get(h)) == NULL)
		return si_leave(cudaErrorInvalidResourceHandle);
	if (ev->fa != NULL) {
		target = si_foreign_target(ev);
		if (si_foreign_done(ev, target))
			return si_leave(cudaSuccess);
		si_foreign_poke(ev, target);
		return si_leave(cudaErrorNotReady);
	}
	if (ev->rec_s == NULL || si_done(ev->rec_s, ev->rec_seq))
		return si_leave(cudaSuccess);
	if (ev->polled_seq != ev->rec_seq) {
		ev->polled_seq = ev->rec_seq;
		return si_leave(cudaErrorNotReady);
	}
	return si_leave(si_run_until(ev->rec_s, ev->rec_seq));
}

cudaError_t
si_run_record(struct si_event *ev)
{
	if (ev->rec_s == NULL)
		return cudaSuccess;
	return si_run_until(ev->rec_s, ev->rec_seq);
}

cudaError_t
cudaEventSynchronize(cudaEvent_t h)
{
	struct si_event *ev;
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	if ((ev = si_event_get(h)) == NULL)
		return si_leave(cudaErrorInvalidResourceHandle);
	if (ev->fa != NULL) {
		/* the most recent record as of this call, as CUDA waits */
		ev->refs++;
		e = si_foreign_wait(ev, si_foreign_target(ev));
		si_event_unref(ev);
		return si_leave(e);
	}
	return si_leave(si_run_record(ev));
}

cudaError_t
cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
	struct si_event *a, *b;
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	if (ms == NULL)
		return si_leave(cudaErrorInvalidValue);
	a = si_event_get(start);
	b = si_event_get(end);
	if (a == NULL || b == NULL || (a->flags & cudaEventDisableTiming) ||
	    (b->flags & cudaEventDisableTiming) || a->rec_s == NULL ||
	    b->rec_s == NULL)
		return si_leave(cudaErrorInvalidResourceHandle);
	if (!si_done(a->rec_s, a->rec_seq) || !si_done(b->rec_s, b->rec_seq))
		return si_leave(cudaErrorNotReady);
	*ms = (float)((double)((int64_t)(b->t_ns - a->t_ns)) / 1e6);
	return si_leave(cudaSuccess);
}

cudaError_t
cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t h, unsigned int flags)
{
	struct si_event *ev;
	struct si_stream *s;
	struct si_op *op;
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	if ((ev = si_event_get(h)) == NULL || (s = si_stream_get(stream)) == NULL)
		return si_leave(cudaErrorInvalidResourceHandle);
	if ((flags & ~(unsigned)cudaEventWaitExternal) != 0)
		return si_leave(cudaErrorInvalidValue);
	if (ev->fa != NULL) {
		if ((op = si_op_new(SI_OP_WAIT_IPC, 0)) == NULL ||
		    si_enqueue_deps(s, op) != 0)
			return si_leave(cudaErrorMemoryAllocation);
		op->u.ev.ev = ev;
		op->u.ev.target = si_foreign_target(ev);
		ev->refs++;
		return si_leave(si_enqueue_commit(s, op));
	}
	if ((op = si_op_new(SI_OP_WAIT, 0)) == NULL)
		return si_leave(cudaErrorMemoryAllocation);
	if (ev->rec_s != NULL && op_dep(op, ev->rec_s, ev->rec_seq) != 0) {
		si_op_free(op);
		return si_leave(cudaErrorMemoryAllocation);
	}
	return si_leave(si_enqueue(s, op));
}
