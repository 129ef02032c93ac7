/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the two halves of the CUDA stand-in share: the one lock, the
 * allocation table, streams, events and the queue runner of cudart.c,
 * used by the IPC half (ipc.c: memory and event handles, the event arena
 * and its service thread). Nothing here is exported from the library.
 */
#ifndef DAQIRI_STANDIN_H
#define DAQIRI_STANDIN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cuda_runtime_api.h>

#include "kernel.h"

/* Everything below is guarded by si_mu unless it says otherwise. */
extern pthread_mutex_t si_mu;
extern pid_t si_mypid;
extern int si_trace;

enum si_akind {
	SI_DEVICE,		/* cudaMalloc: PROT_NONE address + view */
	SI_IPC,			/* cudaIpcOpenMemHandle: the same, of a peer */
	SI_PINNED,		/* cudaHostAlloc: host memory, UVA */
	SI_REGISTERED,		/* cudaHostRegister: the caller's memory */
	SI_AKIND_MAX
};

struct si_alloc {
	uintptr_t base;
	size_t size;		/* as asked: accesses past it fault */
	size_t maplen;		/* SI_DEVICE, SI_IPC: both mappings */
	uint8_t *view;		/* SI_DEVICE, SI_IPC: what the host touches */
	int fd;			/* SI_DEVICE: the memfd, kept for export */
	enum si_akind kind;
	unsigned int flags;	/* SI_PINNED, SI_REGISTERED: the API's */
	uint64_t nonce;		/* SI_DEVICE, SI_IPC: in the memfd's name */
	pid_t owner;		/* SI_IPC: the exporting process */
	int refs;		/* SI_IPC: opens of the same handle */
};

struct si_stream;

/* An interprocess event's slot in a process's arena (64 bytes). The
 * owner writes recorded (at enqueue) and completed (when the record
 * runs); waiters in other processes raise want and sleep on wake. */
struct si_slot {
	_Atomic uint32_t gen;		/* odd while an event holds it */
	_Atomic uint32_t wake;		/* futex word, bumped on progress */
	_Atomic uint64_t recorded;
	_Atomic uint64_t completed;
	_Atomic uint64_t want;
	uint8_t pad[32];
};

/* Slot 0 of an arena is its header. */
struct si_arena_hdr {
	uint32_t magic;
	int32_t pid;
	_Atomic uint32_t svc;		/* futex word of the owner's service */
	_Atomic uint32_t failed;	/* the owner hit a sticky error */
	uint8_t pad[48];
};

#define SI_ARENA_SLOTS	4096
#define SI_ARENA_BYTES	(SI_ARENA_SLOTS * sizeof(struct si_slot))

struct si_farena;			/* another process's arena, mapped */

struct si_event {
	unsigned int flags;
	int alive;			/* in the handle table */
	int refs;			/* the handle + pending records/waits */
	struct si_stream *rec_s;	/* the latest record, if recorded */
	uint64_t rec_seq;
	uint64_t polled_seq;		/* record a query said NotReady to */
	uint64_t t_ns;			/* when the latest record ran */
	int has_t;
	int slot;			/* interprocess: index in the arena */
	struct si_slot *sp;		/* own or foreign arena slot */
	struct si_farena *fa;		/* non-NULL: opened from a peer */
	uint32_t gen;			/* foreign: the slot's gen at open */
};


#define SI_DEVICE_MEM	(16ull << 30)	/* totalGlobalMem, enforced */
#define SI_BIG_PAGE	(2ull << 20)	/* the driver's allocation page */

enum si_optype {
	SI_OP_COPY,
	SI_OP_SET,
	SI_OP_KERNEL,
	SI_OP_RECORD,
	SI_OP_WAIT,		/* a local event wait, or a marker: deps only */
	SI_OP_WAIT_IPC,		/* an event of another process */
	SI_OP_MAX
};


/* "Everything of s up to seq has run." */
struct si_dep {
	struct si_stream *s;
	uint64_t seq;
};

struct si_kernel {
	const void *stub;
	char *name;
	kstandin_fn fn;
	uint32_t nargs;
	uint32_t arg_sizes[4];
};

struct si_op {
	struct si_op *next;
	uint64_t seq;
	enum si_optype type;
	int running;
	uint32_t ndeps;
	struct si_dep *deps;
	union {
		struct {
			void *dst;
			const void *src;
			size_t n;
		} copy;
		struct {
			void *dst;
			int value;
			size_t n;
		} set;
		struct {
			const struct si_kernel *k;
			struct kdim grid, block;
			uint64_t seed;
			void *args[4];
		} kern;
		struct {
			struct si_event *ev;
			uint64_t ipc_seq;
			uint64_t target;
		} ev;
	} u;
	unsigned char argbuf[];		/* kernel arguments, copied */
};

struct si_stream {
	struct si_op *head, *tail;
	unsigned int flags;
	int legacy;
	int polled;			/* a query said NotReady */
	uint64_t id;
	struct si_stream *retired;	/* next destroyed stream */
};

extern struct si_stream si_legacy;
extern uint64_t si_seq;
extern int si_eager;

/* cudart.c */
cudaError_t si_enter(void);
cudaError_t si_err(cudaError_t e);
cudaError_t si_leave(cudaError_t e);
void si_set_sticky(cudaError_t e);
uint64_t si_now_ns(void);
int si_ptr_push(void ***arr, size_t *n, void *p);
int si_ptr_remove(void **arr, size_t *n, const void *p);
int si_ptr_has(void *const *arr, size_t n, const void *p);
cudaError_t si_kernel_exec(struct si_op *op);
void si_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t si_nonce(void);
cudaError_t si_sticky(void);

/* memory.c */
struct si_alloc *si_alloc_find(uintptr_t a);
int si_alloc_add(struct si_alloc *a);
struct si_alloc *si_alloc_nth(size_t i);
void si_alloc_del(struct si_alloc *a);
int si_map_fd(int fd, size_t maplen, uintptr_t *dev, uint8_t **view);
void si_unmap(struct si_alloc *a);
int si_is_devmem(const struct si_alloc *a);

/* stream.c */
void si_stream_init(void);
struct si_stream *si_stream_get(cudaStream_t h);
int si_done(const struct si_stream *s, uint64_t seq);
struct si_op *si_op_new(enum si_optype t, size_t extra);
void si_op_free(struct si_op *op);
int si_enqueue_deps(struct si_stream *s, struct si_op *op);
cudaError_t si_enqueue_commit(struct si_stream *s, struct si_op *op);
cudaError_t si_enqueue(struct si_stream *s, struct si_op *op);
cudaError_t si_run_until(struct si_stream *s, uint64_t seq);
cudaError_t si_sync_all(void);
cudaError_t si_run_record(struct si_event *ev);
struct si_event *si_event_get(cudaEvent_t h);
int si_event_add(struct si_event *ev);
void si_event_unref(struct si_event *ev);

/* ipc.c */
int si_arena_slot_get(struct si_event *ev);
void si_arena_slot_put(struct si_event *ev);
void si_arena_complete(struct si_event *ev, uint64_t ipc_seq);
uint64_t si_arena_record(struct si_event *ev);
void si_arena_fail(void);
cudaError_t si_foreign_wait(struct si_event *ev, uint64_t target);
uint64_t si_foreign_target(const struct si_event *ev);
int si_foreign_done(const struct si_event *ev, uint64_t target);
void si_foreign_poke(const struct si_event *ev, uint64_t target);
void si_foreign_release(struct si_event *ev);

#endif
