/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to the stream module (stream_main.c, stream_worker.c): struct
 * stream, struct sub and the command queue between the two threads that
 * share them. Each field says which thread writes it and how the other
 * one reads it; a field marked "fixed" is written once on the main thread
 * before the stream's worker starts (or the subscription is handed to
 * it) and only read afterwards.
 *
 * The ways across, and nothing else:
 *  - the command queue (cmds under cmd_lock, cmd_pending): main hands the
 *    worker a subscription to add or remove;
 *  - sub.state, a release/acquire atomic: the worker hands a subscription
 *    back (SUB_BROKEN with its why, SUB_GONE: main may free it);
 *  - relaxed atomics for a subscription's own counters (consumers view);
 *  - a subscription's seqlock (hold_lock): the worker publishes its hold
 *    time histogram, main reads a consistent copy;
 *  - the seqlock snapshot (snap_*): the worker publishes the stream's
 *    counters, main reads a consistent copy;
 *  - tune_pending / tune_retired, release/acquire atomics: a reload hands
 *    the worker a prepared retune of the plan (timeout, fill, window), the
 *    worker applies it between bursts and hands back what it let go.
 *
 * "The worker" is one thread, except for a shared stream (fed by several
 * rx queues: cfg_owner.c): then it is whichever of their workers holds
 * work_lock, which every worker-side entry point (stream_worker.c) takes,
 * so everything said of the worker holds of the lock's holder. Only the
 * copies of a burst run outside it (reorder.c "Shared plans").
 */
#ifndef DAQIRI_STREAM_INTERNAL_H
#define DAQIRI_STREAM_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "doctor.h"
#include "raw.h"
#include "ring.h"
#include "seqlock.h"
#include "stream.h"

_Static_assert(sizeof(struct stream_counters) % sizeof(uint64_t) == 0,
    "struct stream_counters is made of uint64_t only (seqlock copies)");

/* Where a tensor buffer is (stream.buf_state, worker only). */
enum buf_state { BUF_FREE, BUF_LENT, BUF_PUBLISHED };

/* Where a subscription is (sub.state): who may touch it next. */
enum sub_state {
	SUB_NEW,			/* made by main, not yet seen by the worker */
	SUB_ACTIVE,			/* in the worker's list */
	SUB_BROKEN,			/* cut off by the worker; main reports it */
	SUB_GONE,			/* out of the worker's list: main frees it */
};

/*
 * One subscription. Main makes it in stream_subscribe() and hands it to
 * the worker with CMD_ADD (the queue's lock orders everything main wrote
 * before); it frees it only after the worker stored SUB_GONE.
 */
struct sub {
	/* fixed: who subscribed, and how */
	uint64_t conn_id;
	uint32_t sub_id;
	pid_t pid;
	uid_t uid;
	bool admin;			/* root or the admin group */
	enum daqiri_sub_mode mode;
	enum daqiri_sub_policy policy;	/* lossless: broadcast only */
	char group[DAQIRI_NAME_MAX];
	uint32_t max_held;

	/* Made by main, which reads only ring.depth afterwards; the worker
	 * alone pushes and pops the ring and signals wake_fd. Main unmaps
	 * and closes them in sub_free(). */
	struct daqiri_ring ring;	/* worker's handle */
	void *ring_mem;
	size_t ring_len;
	int ring_fd;
	int wake_fd;			/* daemon's end of the wake-up socketpair */

	/* worker only (main allocates the arrays, frees them at the end) */
	uint32_t gi;			/* shared subs' index in groups */
	uint32_t *held_pos;		/* per buffer: 1 + its place in held,
					 * 0 = not held by this sub */
	struct held_ent {
		uint32_t idx;
		uint64_t since;		/* stream time it was delivered */
	} *held;			/* max_held entries, nheld in use */
	uint32_t nheld;
	/* Lossless only: tensors published while it had no room (nheld at
	 * max_held or a full ring), oldest first, each still holding its
	 * buffer (one of refs[]); a FIFO of nbufs entries from pend_head,
	 * which fits: every entry is a different buffer. NULL for latest. */
	struct daqiri_desc *pend;
	uint32_t pend_head, npend;
	/* worker writes it before storing SUB_BROKEN (release); main reads
	 * it after loading SUB_BROKEN (acquire) */
	char why[DAQIRI_ERR_MSG_MAX];

	/* Written by the worker, read by main: state with release/acquire
	 * (main stores only the first SUB_NEW), the counters relaxed. */
	_Atomic int state;		/* enum sub_state */
	_Atomic uint64_t delivered;
	_Atomic uint64_t released;
	_Atomic uint64_t overruns;
	_Atomic uint32_t held_now;
	_Atomic uint32_t pending_now;	/* npend */
	_Atomic uint64_t blocked;	/* buffer requests refused while it
					 * held the most (no_buffer) */
	/* Hold times (release taken back - publish): the worker counts
	 * into hold, then copies it into hold_snap under hold_lock after
	 * each reclaim pass that took something back; main reads hold_snap
	 * under the seqlock. */
	struct daqiri_hist hold;	/* worker only */
	struct seqlock hold_lock;
	struct daqiri_hist hold_snap;

	bool removing;			/* main only: removal requested */
	bool reported;			/* main only: BROKEN reported */
};

/* Main -> worker: a subscription to take on or to let go. */
enum cmd_op { CMD_ADD, CMD_REMOVE };

struct cmd {
	enum cmd_op op;
	struct sub *sub;
};

/* A shared group's round-robin cursor (worker only). */
struct stream_group {
	char name[DAQIRI_NAME_MAX];
	uint32_t next;			/* member to try first */
	uint32_t nmembers;		/* in the worker's list; 0 = slot free */
	/* owner_publish() scratch: active members, where they start */
	uint32_t count, start;
};

struct stream {
	/* fixed at creation (main) */
	char name[DAQIRI_STREAM_NAME_MAX];
	/* NULL for raw streams; main only, moved by a reload
	 * (stream_set_config()); the plan keeps its own copy */
	const struct cfg_reorder *reorder_cfg;
	/* main only: the stream's triggers (stream_trigger()) */
	uint64_t trig_count, trig_ns;
	enum daqiri_stream_kind kind;
	struct mem_region *region;
	bool shared;			/* fed by several workers */
	pthread_mutex_t work_lock;	/* shared: the worker side's lock */
	/* Made and destroyed by main while no worker runs; between, only
	 * the worker drives them (they call back owner_get/put/publish). */
	struct reorder_plan *plan;	/* reorder streams */
	struct raw_plan *raw;		/* raw streams */
	struct mem_region own_region;	/* raw streams: their tensor memory */
	struct reorder_geom raw_geom;
	const struct reorder_geom *geom;
	uint32_t nbufs;
	uint32_t bitmap_bytes;		/* sidecar bytes per buffer */
	int bitmap_fd;
	int ipc_fd;			/* device regions: the CUDA IPC handles */
	/* The pointers are fixed; the bytes are the worker's: the plan marks
	 * priv_bitmap, owner_publish() copies it into bitmap, which the
	 * consumers map read-only. */
	uint8_t *bitmap;		/* nbufs x bitmap_bytes, consumers' copy */
	uint8_t *priv_bitmap;		/* the same, the plan's own */
	size_t bitmap_len;

	/* limits: main, in stream_set_limits(), before the worker runs */
	uint32_t max_subs;		/* length of the subscription arrays */
	uint64_t hold_ns;		/* 0 = a buffer may be held forever */
	uint64_t now_ns;		/* worker: the time it was last given */
	/* fixed (stream_use_capture_clock()): now_ns is a replay's virtual
	 * clock; hold times and hold timeouts then read the wall clock */
	bool capture_clock;
	uint64_t next_hold_check;	/* worker: now_ns of the next check */

	/* Buffer pool and delivery: worker only (main fills the pool at
	 * creation and frees it at the end). Main sees
	 * them only through the snapshot below. */
	uint8_t *buf_state;		/* enum buf_state per buffer */
	uint32_t *refs;			/* holders of a published buffer */
	uint64_t *pub_ns;		/* publish time of a published buffer */
	uint32_t *free_stack;
	uint32_t nfree;
	uint32_t nlent;			/* buffers lent to the plan */
	uint32_t npub;			/* buffers held by consumers (and
					 * pending for lossless ones) */
	struct sub **served;		/* max_subs: the worker's list */
	int nserved;
	struct sub **members;		/* max_subs: owner_publish() scratch */
	struct stream_group *groups;	/* max_subs: shared groups' cursors */
	int ngroups;
	struct stream_counters ctr;

	/* Main -> worker commands: main appends to cmds under cmd_lock and
	 * sets cmd_pending (release); the worker, seeing it (acquire), takes
	 * the lock once and copies the lot into cmds_run (its own). */
	pthread_mutex_t cmd_lock;
	struct cmd *cmds;		/* max_cmds */
	struct cmd *cmds_run;		/* max_cmds: run_commands() copy */
	int ncmds, max_cmds;
	_Atomic int cmd_pending;
	/* main: set before the worker starts, written after each command */
	int worker_wake_fd;		/* eventfd that wakes the worker */
	/* Reload: main stores a prepared retune (release) while none is
	 * pending; the worker takes it, applies it, stores it in
	 * tune_retired (release) and clears tune_pending; main frees it. */
	_Atomic(struct reorder_tune *) tune_pending;
	_Atomic(struct reorder_tune *) tune_retired;
	uint32_t window;		/* main only: the window it runs, or was
					 * last told to (budgets are taken
					 * from it) */

	/* main only: what it receives, judged (doctor.c) */
	struct doctor doc;

	/* main only: every subscription not yet freed (ending, broken and
	 * gone ones included until stream_reap() frees them) */
	struct sub **subs;		/* max_subs */
	int nsubs;

	/* Counters, seqlock: the worker writes (stream_publish_counters()),
	 * main reads (counters_read()). */
	struct seqlock snap_lock;
	struct reorder_counters snap_reorder;
	struct raw_counters snap_raw;
	struct stream_counters snap_stream;
};

/* stream_worker.c, called by stream_main.c while creating a stream, before
 * its worker exists: put every buffer in the free pool; fill the callbacks
 * through which the plan borrows, returns and publishes buffers. */
void stream_pool_fill(struct stream *s);
void stream_owner_init(struct stream *s, struct reorder_owner *owner);

#endif
