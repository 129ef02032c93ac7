/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stand-in's CUDA IPC: memory handles name a cudaMalloc memfd that a
 * peer opens through /proc/<pid>/fd of the owner; event handles name a
 * slot of the owner's event arena (one shared memfd), where a waiting
 * peer raises "want" and wakes the owner's service thread, which runs
 * the owner's queue up to that record, since work runs only when waited.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "standin.h"

#define SI_MEM_MAGIC	0x4d535144u	/* "DQSM" */
#define SI_EV_MAGIC	0x45535144u	/* "DQSE" */
#define SI_ARENA_MAGIC	0x41535144u	/* "DQSA" */
#define SI_POLL_MS	100		/* a waiter checks its owner so often */
#define SI_SVC_MS	1000		/* the service rescans at least so often */

/* What the 64 bytes of the handles carry. */
struct mem_handle {
	uint32_t magic;
	int32_t pid;
	int32_t fd;
	uint32_t pad;
	uint64_t size;
	uint64_t nonce;
};

struct ev_handle {
	uint32_t magic;
	int32_t pid;
	int32_t fd;		/* the owner's arena */
	uint32_t slot;
	uint64_t nonce;		/* the arena's */
	uint32_t gen;
};

_Static_assert(sizeof(struct mem_handle) <= sizeof(cudaIpcMemHandle_t),
    "memory handle too large");
_Static_assert(sizeof(struct ev_handle) <= sizeof(cudaIpcEventHandle_t),
    "event handle too large");
_Static_assert(sizeof(struct si_slot) == 64, "slot size");
_Static_assert(sizeof(struct si_arena_hdr) == 64, "arena header size");

/* Another process's arena, mapped while events opened from it live. */
struct si_farena {
	struct si_farena *next;
	pid_t pid;
	int fd;			/* in the owner */
	uint64_t nonce;
	struct si_slot *slots;
	int refs;
	char link[96];		/* what /proc/<pid>/fd/<fd> reads while alive */
};

static struct si_slot *g_arena;		/* this process's, slot 0 the header */
static int g_arena_fd = -1;
static uint64_t g_arena_nonce;
static struct si_event *g_slot_ev[SI_ARENA_SLOTS];
static struct si_farena *g_farenas;

static void
futex_wait(_Atomic uint32_t *w, uint32_t v, long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	/* shared (not FUTEX_PRIVATE): the word is in a MAP_SHARED memfd */
	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, v, &ts, NULL, 0);
}

static void
futex_wake(_Atomic uint32_t *w)
{
	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static void
atomic_max(_Atomic uint64_t *p, uint64_t v)
{
	uint64_t cur = atomic_load(p);

	while (cur < v && !atomic_compare_exchange_weak(p, &cur, v))
		;
}

static struct si_arena_hdr *
hdr_of(struct si_slot *slots)
{
	return (struct si_arena_hdr *)(void *)slots;
}

static void
memfd_link(char *buf, size_t len, const char *what, uint64_t nonce)
{
	snprintf(buf, len, "/memfd:daqiri-standin%s-%016" PRIx64 " (deleted)",
	    what, nonce);
}

/*
 * Open the owner's fd through /proc and check that it is the memfd the
 * handle names (the nonce is in its name): the fd may have been closed
 * and its number reused, the pid may be another process's by now.
 */
static int
open_peer(pid_t pid, int fd, const char *link)
{
	char path[64], got[128];
	ssize_t n;
	int f;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
	if ((f = open(path, O_RDWR | O_CLOEXEC)) < 0) {
		si_log("open %s: %s", path, strerror(errno));
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", f);
	n = readlink(path, got, sizeof(got) - 1);
	if (n < 0 || (got[n] = '\0', strcmp(got, link) != 0)) {
		si_log("%s is not %s", path, link);
		close(f);
		return -1;
	}
	return f;
}

/*
 * The owner is alive while its arena fd is still open and still that (a
 * zombie has no fds; a reused pid has other ones). Where /proc may not
 * be read (the owner became another uid), a signal 0 has to do.
 */
static int
owner_alive(const struct si_farena *fa)
{
	char path[64], got[128];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)fa->pid, fa->fd);
	n = readlink(path, got, sizeof(got) - 1);
	if (n < 0 && errno == EACCES)
		return kill(fa->pid, 0) == 0 || errno == EPERM;
	if (n < 0)
		return 0;
	got[n] = '\0';
	return strcmp(got, fa->link) == 0;
}

/* ---- memory handles ---- */

cudaError_t
cudaIpcGetMemHandle(cudaIpcMemHandle_t *h, void *p)
{
	struct mem_handle mh;
	struct si_alloc *a;
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	a = si_alloc_find((uintptr_t)p);
	if (h == NULL || a == NULL || a->kind != SI_DEVICE)
		return si_leave(cudaErrorInvalidValue);
	/* the allocation's handle, whatever pointer inside it was given */
	memset(&mh, 0, sizeof(mh));
	mh.magic = SI_MEM_MAGIC;
	mh.pid = (int32_t)si_mypid;
	mh.fd = a->fd;
	mh.size = a->size;
	mh.nonce = a->nonce;
	memset(h, 0, sizeof(*h));
	memcpy(h->reserved, &mh, sizeof(mh));
	return si_leave(cudaSuccess);
}

cudaError_t
cudaIpcOpenMemHandle(void **p, cudaIpcMemHandle_t h, unsigned int flags)
{
	struct mem_handle mh;
	struct si_alloc *a;
	struct stat st;
	char link[96];
	cudaError_t e;
	size_t i, pg = (size_t)sysconf(_SC_PAGESIZE);
	int fd;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	memcpy(&mh, h.reserved, sizeof(mh));
	if (p == NULL ||
	    (flags & ~(unsigned)cudaIpcMemLazyEnablePeerAccess) != 0 ||
	    mh.magic != SI_MEM_MAGIC || mh.pid <= 0 || mh.fd < 0 ||
	    mh.size == 0)
		return si_leave(cudaErrorInvalidValue);
	/* CUDA: "invalid device context" for a handle of this process */
	if (mh.pid == (int32_t)si_mypid)
		return si_leave(cudaErrorDeviceUninitialized);
	/* opened already: the same address, the opens counted */
	for (i = 0; (a = si_alloc_nth(i)) != NULL; i++) {
		if (a->kind == SI_IPC && a->owner == mh.pid &&
		    a->nonce == mh.nonce) {
			a->refs++;
			*p = (void *)a->base;
			return si_leave(cudaSuccess);
		}
	}
	memfd_link(link, sizeof(link), "", mh.nonce);
	if ((fd = open_peer(mh.pid, mh.fd, link)) < 0)
		return si_leave(cudaErrorInvalidValue);
	if ((a = calloc(1, sizeof(*a))) == NULL) {
		close(fd);
		return si_leave(cudaErrorMemoryAllocation);
	}
	a->kind = SI_IPC;
	a->size = mh.size;
	a->maplen = (mh.size + pg - 1) & ~(pg - 1);
	a->fd = -1;
	a->nonce = mh.nonce;
	a->owner = mh.pid;
	a->refs = 1;
	if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < a->maplen) {
		close(fd);
		free(a);
		return si_leave(cudaErrorInvalidValue);
	}
	/* the mappings keep the memfd alive after the owner is gone */
	if (si_map_fd(fd, a->maplen, &a->base, &a->view) != 0) {
		close(fd);
		free(a);
		return si_leave(cudaErrorMapBufferObjectFailed);
	}
	close(fd);
	if (si_alloc_add(a) != 0) {
		si_unmap(a);
		free(a);
		return si_leave(cudaErrorMemoryAllocation);
	}
	*p = (void *)a->base;
	si_log("opened memory of %d: %zu bytes at %p", (int)mh.pid, a->size,
	    *p);
	return si_leave(cudaSuccess);
}

cudaError_t
cudaIpcCloseMemHandle(void *p)
{
	struct si_alloc *a;
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	a = si_alloc_find((uintptr_t)p);
	if (a == NULL || a->kind != SI_IPC || a->base != (uintptr_t)p)
		return si_leave(cudaErrorInvalidValue);
	if (a->refs > 1) {
		a->refs--;
		return si_leave(cudaSuccess);
	}
	if ((e = si_sync_all()) != cudaSuccess)
		return si_leave(e);
	si_alloc_del(a);
	si_unmap(a);
	free(a);
	return si_leave(cudaSuccess);
}

/* ---- the event arena and its service thread ---- */

/*
 * Woken by a peer that wants a record of one of our events: run our
 * queue up to the latest record of every event someone waits for. It
 * takes the one lock like any API call.
 */
static void *
svc_main(void *arg)
{
	struct si_arena_hdr *hdr = hdr_of(g_arena);
	struct si_event *ev;
	uint32_t v;
	size_t i;

	(void)arg;
	for (;;) {
		v = atomic_load(&hdr->svc);
		pthread_mutex_lock(&si_mu);
		for (i = 1; i < SI_ARENA_SLOTS; i++) {
			if ((ev = g_slot_ev[i]) == NULL ||
			    atomic_load(&ev->sp->want) <=
			    atomic_load(&ev->sp->completed))
				continue;
			si_log("service: a peer waits for event slot %zu", i);
			ev->refs++;
			(void)si_run_record(ev);
			si_event_unref(ev);
		}
		pthread_mutex_unlock(&si_mu);
		futex_wait(&hdr->svc, v, SI_SVC_MS);
	}
	return NULL;
}

static int
arena_create(void)
{
	struct si_arena_hdr *hdr;
	char name[64];
	sigset_t all, old;
	pthread_attr_t at;
	pthread_t t;
	void *m;
	int fd, r;

	g_arena_nonce = si_nonce();
	snprintf(name, sizeof(name), "daqiri-standin-arena-%016" PRIx64,
	    g_arena_nonce);
	if ((fd = memfd_create(name, MFD_CLOEXEC)) < 0)
		return -1;
	if (ftruncate(fd, (off_t)SI_ARENA_BYTES) != 0 ||
	    (m = mmap(NULL, SI_ARENA_BYTES, PROT_READ | PROT_WRITE,
	    MAP_SHARED, fd, 0)) == MAP_FAILED) {
		close(fd);
		return -1;
	}
	g_arena = m;
	g_arena_fd = fd;
	hdr = hdr_of(g_arena);
	hdr->magic = SI_ARENA_MAGIC;
	hdr->pid = (int32_t)si_mypid;
	/* The service thread takes no signals: programs like the daemon
	 * block theirs and read them from a signalfd. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&t, &at, svc_main, NULL);
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0) {
		munmap(m, SI_ARENA_BYTES);
		close(fd);
		g_arena = NULL;
		g_arena_fd = -1;
		return -1;
	}
	si_log("event arena fd %d, service thread started", fd);
	return 0;
}

int
si_arena_slot_get(struct si_event *ev)
{
	struct si_slot *sp;
	int i;

	if (g_arena == NULL && arena_create() != 0)
		return -1;
	for (i = 1; i < SI_ARENA_SLOTS; i++)
		if (g_slot_ev[i] == NULL)
			break;
	if (i == SI_ARENA_SLOTS)
		return -1;
	sp = &g_arena[i];
	atomic_store(&sp->recorded, 0);
	atomic_store(&sp->completed, 0);
	atomic_store(&sp->want, 0);
	atomic_fetch_add(&sp->gen, 1);		/* odd: taken */
	g_slot_ev[i] = ev;
	ev->slot = i;
	ev->sp = sp;
	return 0;
}

void
si_arena_slot_put(struct si_event *ev)
{
	g_slot_ev[ev->slot] = NULL;
	atomic_fetch_add(&ev->sp->gen, 1);	/* even: free; waiters go */
	atomic_fetch_add(&ev->sp->wake, 1);
	futex_wake(&ev->sp->wake);
}

uint64_t
si_arena_record(struct si_event *ev)
{
	return atomic_fetch_add(&ev->sp->recorded, 1) + 1;
}

void
si_arena_complete(struct si_event *ev, uint64_t ipc_seq)
{
	atomic_max(&ev->sp->completed, ipc_seq);
	atomic_fetch_add(&ev->sp->wake, 1);
	futex_wake(&ev->sp->wake);
}

/* After a sticky error nothing of ours runs again: release the peers. */
void
si_arena_fail(void)
{
	size_t i;

	if (g_arena == NULL)
		return;
	atomic_store(&hdr_of(g_arena)->failed, 1);
	for (i = 1; i < SI_ARENA_SLOTS; i++) {
		atomic_fetch_add(&g_arena[i].wake, 1);
		futex_wake(&g_arena[i].wake);
	}
}

/* ---- event handles ---- */

cudaError_t
cudaIpcGetEventHandle(cudaIpcEventHandle_t *h, cudaEvent_t event)
{
	struct si_event *ev;
	struct ev_handle eh;
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	if (h == NULL)
		return si_leave(cudaErrorInvalidValue);
	ev = si_event_get(event);
	if (ev == NULL || ev->sp == NULL || ev->fa != NULL)
		return si_leave(cudaErrorInvalidResourceHandle);
	memset(&eh, 0, sizeof(eh));
	eh.magic = SI_EV_MAGIC;
	eh.pid = (int32_t)si_mypid;
	eh.fd = g_arena_fd;
	eh.slot = (uint32_t)ev->slot;
	eh.nonce = g_arena_nonce;
	eh.gen = atomic_load(&ev->sp->gen);
	memset(h, 0, sizeof(*h));
	memcpy(h->reserved, &eh, sizeof(eh));
	return si_leave(cudaSuccess);
}

static struct si_farena *
farena_open(const struct ev_handle *eh)
{
	struct si_farena *fa;
	struct si_arena_hdr *hdr;
	struct stat st;
	void *m;
	int fd;

	for (fa = g_farenas; fa != NULL; fa = fa->next)
		if (fa->pid == eh->pid && fa->nonce == eh->nonce) {
			fa->refs++;
			return fa;
		}
	if ((fa = calloc(1, sizeof(*fa))) == NULL)
		return NULL;
	fa->pid = eh->pid;
	fa->fd = eh->fd;
	fa->nonce = eh->nonce;
	memfd_link(fa->link, sizeof(fa->link), "-arena", eh->nonce);
	if ((fd = open_peer(fa->pid, fa->fd, fa->link)) < 0) {
		free(fa);
		return NULL;
	}
	if (fstat(fd, &st) != 0 || (size_t)st.st_size != SI_ARENA_BYTES ||
	    (m = mmap(NULL, SI_ARENA_BYTES, PROT_READ | PROT_WRITE,
	    MAP_SHARED, fd, 0)) == MAP_FAILED) {
		close(fd);
		free(fa);
		return NULL;
	}
	close(fd);
	fa->slots = m;
	hdr = hdr_of(fa->slots);
	if (hdr->magic != SI_ARENA_MAGIC || hdr->pid != eh->pid) {
		munmap(m, SI_ARENA_BYTES);
		free(fa);
		return NULL;
	}
	fa->refs = 1;
	fa->next = g_farenas;
	g_farenas = fa;
	return fa;
}

void
si_foreign_release(struct si_event *ev)
{
	struct si_farena **pp, *fa = ev->fa;

	if (--fa->refs > 0)
		return;
	for (pp = &g_farenas; *pp != NULL; pp = &(*pp)->next)
		if (*pp == fa) {
			*pp = fa->next;
			break;
		}
	munmap(fa->slots, SI_ARENA_BYTES);
	free(fa);
}

cudaError_t
cudaIpcOpenEventHandle(cudaEvent_t *pe, cudaIpcEventHandle_t h)
{
	struct si_farena *fa;
	struct si_event *ev;
	struct ev_handle eh;
	cudaError_t e;
	uint32_t gen;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	memcpy(&eh, h.reserved, sizeof(eh));
	if (pe == NULL || eh.magic != SI_EV_MAGIC || eh.pid <= 0 ||
	    eh.fd < 0 || eh.slot == 0 || eh.slot >= SI_ARENA_SLOTS ||
	    !(eh.gen & 1))
		return si_leave(cudaErrorInvalidValue);
	if (eh.pid == (int32_t)si_mypid)
		return si_leave(cudaErrorDeviceUninitialized);
	if ((fa = farena_open(&eh)) == NULL)
		return si_leave(cudaErrorInvalidValue);
	if ((ev = calloc(1, sizeof(*ev))) == NULL) {
		e = cudaErrorMemoryAllocation;
		goto fail;
	}
	ev->flags = cudaEventInterprocess | cudaEventDisableTiming;
	ev->fa = fa;
	ev->slot = (int)eh.slot;
	ev->sp = &fa->slots[eh.slot];
	ev->gen = eh.gen;
	gen = atomic_load(&ev->sp->gen);
	if (gen != eh.gen) {		/* destroyed since the handle was made */
		free(ev);
		e = cudaErrorInvalidValue;
		goto fail;
	}
	if (si_event_add(ev) != 0) {
		free(ev);
		e = cudaErrorMemoryAllocation;
		goto fail;
	}
	*pe = (cudaEvent_t)ev;
	si_log("opened event slot %u of %d", eh.slot, (int)eh.pid);
	return si_leave(cudaSuccess);
fail:
	{
		struct si_event tmp = { .fa = fa };

		si_foreign_release(&tmp);
	}
	return si_leave(e);
}

/* CUDA waits for the most recent record as of the call. */
uint64_t
si_foreign_target(const struct si_event *ev)
{
	return atomic_load(&ev->sp->recorded);
}

/* Done, or the owner destroyed the event (its records ran first). */
int
si_foreign_done(const struct si_event *ev, uint64_t target)
{
	return atomic_load(&ev->sp->completed) >= target ||
	    atomic_load(&ev->sp->gen) != ev->gen;
}

/* Tell the owner's service thread that we want the record target. */
void
si_foreign_poke(const struct si_event *ev, uint64_t target)
{
	struct si_arena_hdr *hdr = hdr_of(ev->fa->slots);

	atomic_max(&ev->sp->want, target);
	atomic_fetch_add(&hdr->svc, 1);
	futex_wake(&hdr->svc);
}

/*
 * Wait for another process's record: with the lock released, sleeping on
 * the slot's futex and checking every SI_POLL_MS that the owner is still
 * there. The caller holds a reference to ev, so its mapping stays.
 */
cudaError_t
si_foreign_wait(struct si_event *ev, uint64_t target)
{
	struct si_arena_hdr *hdr = hdr_of(ev->fa->slots);
	cudaError_t e = cudaSuccess;
	uint32_t w;

	if (si_foreign_done(ev, target))
		return cudaSuccess;
	si_log("waiting for record %" PRIu64 " of event slot %d of %d",
	    target, ev->slot, (int)ev->fa->pid);
	si_foreign_poke(ev, target);
	pthread_mutex_unlock(&si_mu);
	for (;;) {
		w = atomic_load(&ev->sp->wake);
		if (si_foreign_done(ev, target))
			break;
		if (atomic_load(&hdr->failed)) {
			fprintf(stderr, "cuda-standin: process %d, owner of an "
			    "IPC event, has failed\n", (int)ev->fa->pid);
			e = cudaErrorLaunchFailure;
			break;
		}
		if (!owner_alive(ev->fa)) {
			fprintf(stderr, "cuda-standin: process %d, owner of an "
			    "IPC event, is gone\n", (int)ev->fa->pid);
			e = cudaErrorLaunchFailure;
			break;
		}
		futex_wait(&ev->sp->wake, w, SI_POLL_MS);
	}
	pthread_mutex_lock(&si_mu);
	return e;
}
