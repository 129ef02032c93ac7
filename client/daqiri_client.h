/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libdaqiri-client: the public API a consumer links to receive tensors
 * from daqirid zero-copy, and to ask the daemon questions. It never logs
 * and never exits; functions return 0 (or a positive count) or a negative
 * errno. Structs the caller passes carry their size so they can grow.
 */
#ifndef DAQIRI_CLIENT_H
#define DAQIRI_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "daqiri_types.h"	/* dtype, memory kind, fill, mode, stream kind, tensor flags */

#ifdef __cplusplus
extern "C" {
#endif

/* Socket used when the caller passes none and $DAQIRI_SOCKET is unset. */
#define DAQIRI_DEFAULT_SOCKET	"/run/daqiri/daqirid.sock"
#define DAQIRI_SOCKET_ENV	"DAQIRI_SOCKET"

/* Subscription option flags. */
enum daqiri_sub_flag {
	/* daqiri_next() spins on the ring instead of sleeping on the
	 * wake-up socket (still honours the timeout and notices a dead
	 * daemon); the daemon then sends no wake-ups at all. */
	DAQIRI_SUB_BUSY_POLL = 1u << 0,
	/* host_pinned streams: register the mapping with CUDA
	 * (cudaHostRegister, read-only); -ENOTSUP without CUDA support. */
	DAQIRI_SUB_CUDA_REGISTER = 1u << 1,
	/* Survive a daemon restart: when the connection is lost,
	 * daqiri_next() reconnects (backoff 10 ms doubling to 500 ms),
	 * subscribes to the same stream again, checks its geometry and
	 * goes on; the first tensor after the gap carries
	 * DAQIRI_TENSOR_RESTART. Tensors held across it stay readable;
	 * their release is a no-op. See libdaqiri-client(3) RECONNECTION. */
	DAQIRI_SUB_RECONNECT = 1u << 2,
};

struct daqiri;			/* a connection to the daemon */
struct daqiri_sub;		/* one subscription on a connection */

/* Options of daqiri_subscribe(); zero fields take the defaults. */
struct daqiri_sub_opts {
	size_t size;			/* sizeof(struct daqiri_sub_opts) */
	uint32_t depth;			/* ring depth, power of two; 0 = daemon's choice */
	uint32_t max_held;		/* tensors held at once; 0 = daemon's default */
	enum daqiri_sub_mode mode;	/* default broadcast */
	const char *group;		/* shared mode: group name (required) */
	uint32_t flags;			/* enum daqiri_sub_flag */
	/* DAQIRI_SUB_RECONNECT: how long the daemon may stay away before
	 * daqiri_next() returns -ENOTCONN; 0 = 30000. */
	uint32_t reconnect_timeout_ms;
	/* Appended: a caller whose size ends before it gets latest.
	 * lossless needs root or the admin group and broadcast mode; see
	 * libdaqiri-client(3) "DELIVERY POLICIES". */
	enum daqiri_sub_policy policy;	/* default latest */
};

/* Geometry of a subscribed stream (daqiri_sub_info()). */
struct daqiri_stream_info {
	size_t size;			/* caller sets sizeof(struct daqiri_stream_info) */
	char name[128];			/* "<interface>/<name>" */
	enum daqiri_stream_kind kind;
	uint32_t sub_id;
	enum daqiri_sub_mode mode;
	enum daqiri_mem_kind mem_kind;
	int device;			/* -1 host memory, else GPU ordinal */
	enum daqiri_dtype dtype;
	const char *dtype_name;		/* static string */
	uint32_t elem_bytes;		/* bytes of one element */
	enum daqiri_fill fill;
	uint32_t nbufs;			/* tensor buffers of the stream */
	uint32_t ppb;			/* slots (packets) per tensor */
	uint64_t slot_bytes;
	uint64_t elems_per_slot;
	uint64_t tensor_bytes;		/* ppb x slot_bytes */
	uint32_t ring_depth;
	uint32_t max_held;
	enum daqiri_sub_policy policy;	/* appended; as the daemon granted */
};

/* One received tensor. Valid until daqiri_release() of it. */
struct daqiri_tensor {
	size_t size;			/* caller sets sizeof(struct daqiri_tensor) */
	const void *data;		/* host: read-only mapping; device: device pointer */
	int device;			/* -1 host memory, else GPU ordinal */
	enum daqiri_dtype dtype;
	const char *dtype_name;
	uint32_t elem_bytes;
	int ndim;			/* 2 */
	uint64_t shape[2];		/* { ppb, elements per slot } */
	uint64_t bytes;			/* ppb x slot_bytes */
	uint64_t slot_bytes;
	uint64_t seq;			/* stream sequence number, never wraps */
	uint64_t batch_id;		/* raw batch id from the packets */
	uint32_t flags;			/* enum daqiri_tensor_flag */
	uint32_t packets_expected;
	uint32_t packets_received;
	const uint64_t *bitmap;		/* presence: bit s of word s/64 = slot s arrived */
	uint32_t bitmap_bits;		/* = ppb */
	const uint32_t *lengths;	/* raw streams: bytes of each packet; else NULL */
	uint64_t first_rx_ns;		/* CLOCK_MONOTONIC of the first packet */
	uint64_t last_rx_ns;
	uint64_t publish_ns;
	uint32_t buf_index;		/* the stream's buffer index */
	void *event;			/* device: cudaEvent_t to wait on; else NULL */
	/* The generation of the daemon instance that published it (random,
	 * 64-bit, new at every daemon start; 0 from a daemon too old to
	 * say). Appended: a caller whose size ends before it gets none. */
	uint64_t instance;
	/* Raw streams: CLOCK_MONOTONIC of each packet's receive (frames of
	 * one receive call share it), ppb entries; else NULL, and NULL from
	 * a daemon too old to say. Appended, as instance. */
	const uint64_t *rx_ns;
};

/*
 * Connect to the daemon and say hello. path NULL: $DAQIRI_SOCKET, else
 * DAQIRI_DEFAULT_SOCKET. Returns 0 with *out set, or -ENOENT/-ECONNREFUSED
 * (no daemon), -EACCES (socket mode), -EPROTONOSUPPORT (protocol version
 * mismatch), -ENOMEM, other negative errno.
 */
int daqiri_connect(const char *path, struct daqiri **out);

/* Close the connection; its subscriptions end and are freed (tensors
 * still held become invalid). NULL-safe. */
void daqiri_disconnect(struct daqiri *d);

/* The daemon's message for the last failed request on d ("" if none);
 * d NULL: why the calling thread's last daqiri_connect() failed, when
 * the daemon said (for instance which connection limit it met). */
const char *daqiri_last_error(const struct daqiri *d);

/*
 * What a failed daqiri_connect() means and what to do next, as one line
 * for a person (no program name, no newline) written into buf (len bytes,
 * truncated to fit) and returned. neg_errno is daqiri_connect()'s return,
 * path the path given to it (NULL: the same default it used). No daemon
 * (-ENOENT, -ECONNREFUSED) says how to start one; a file that is not a
 * socket says so; -EACCES names the socket's group and how to join it
 * (root's group: how to set socket_group);
 * otherwise the daemon's reason (daqiri_last_error(NULL)) or strerror().
 * Call it on the thread that called daqiri_connect(). Never fails; buf
 * NULL or len 0 gives "".
 */
const char *daqiri_connect_hint(int neg_errno, const char *path, char *buf,
				size_t len);

/* The connection's socket (for the caller's poll: POLLHUP = daemon gone). */
int daqiri_fd(const struct daqiri *d);

/*
 * Send one raw JSON request (an object with "type") and return the reply
 * text in *reply (malloc'd, NUL-terminated; free() it). A reply the
 * daemon sent in parts (over 64 KiB: long lists) is returned whole, its
 * arrays joined, without "part" and "more"; it may be longer than one
 * message (up to 16 MiB). Returns 0 when
 * the reply says status "ok", the negative errno matching the reply's
 * status otherwise (the reply is still returned), or a negative errno
 * with *reply NULL when no reply came (-ENOTCONN: daemon gone, -EMSGSIZE,
 * -EPROTO: a malformed reply or series of parts, after which the
 * connection is closed). The request must not be "hello", "subscribe" or
 * "tx_open" (their replies are followed by fds: -EINVAL).
 */
int daqiri_request(struct daqiri *d, const char *json, char **reply);

/* The streams list (reply to "streams") as JSON text, as daqiri_request. */
int daqiri_streams(struct daqiri *d, char **json_out);

/*
 * Subscribe to a stream. opts NULL = defaults. Maps the tensor memory
 * read-only, the bitmap sidecar read-only and the ring read-write.
 * Returns 0 with *out set, or -ENOENT (no such stream), -EUSERS (too many
 * consumers), -EINVAL (bad options), -ENOTSUP (device stream in a build
 * without CUDA), -ENODEV (CUDA failed to open the IPC handles),
 * -EPROTO (the daemon's answer was inconsistent), -ENOTCONN.
 */
int daqiri_subscribe(struct daqiri *d, const char *stream,
		     const struct daqiri_sub_opts *opts,
		     struct daqiri_sub **out);

/* Geometry of the subscription's stream. info->size must be set. */
int daqiri_sub_info(const struct daqiri_sub *sub,
		    struct daqiri_stream_info *info);

/*
 * The stream's triggers (daqirictl trigger): *count, how many the daemon
 * took since it started, and *last_ns, its CLOCK_MONOTONIC of the last
 * (0 and 0: none yet). A recorder compares count with what it saw
 * before; after a daemon restart (a RESTART tensor) the count starts
 * again from 0. No system call. Returns 0, -EINVAL, -ENOTCONN (the
 * subscription ended), or -EAGAIN (the daemon kept writing them; rare,
 * try again).
 */
int daqiri_sub_trigger(const struct daqiri_sub *sub, uint64_t *count,
		       uint64_t *last_ns);

/*
 * Wait for the next tensor. timeout_ms: -1 forever, 0 do not wait.
 * Returns 1 with *t filled (t->size must be set), 0 on timeout, or
 * -ENOTCONN (daemon gone), -ESHUTDOWN (the daemon ended the
 * subscription), -EPROTO (corrupted ring), -EINTR (a signal arrived while
 * waiting). Never waits longer than the timeout.
 * DAQIRI_SUB_RECONNECT: a lost daemon is reconnected to from here (the
 * calls drive it; 0 on timeout meanwhile); -ENOTCONN only once it stayed
 * away reconnect_timeout_ms; -ESTALE when the new daemon's stream has
 * another dtype, shape, memory kind or kind (daqiri_last_error() names
 * the change), the new daemon's own errno when it refuses the
 * subscription; these errors stay.
 */
int daqiri_next(struct daqiri_sub *sub, struct daqiri_tensor *t,
		int timeout_ms);

/*
 * Give a tensor's buffer back to the daemon. Returns 0, -EINVAL when t is
 * not a tensor this subscription holds, -ENOSPC when the release ring is
 * full (cannot happen with the daemon's depth rule). A tensor of an
 * earlier daemon instance (DAQIRI_SUB_RECONNECT) is released toward
 * nobody; the last one of an instance unmaps that instance's memory.
 */
int daqiri_release(struct daqiri_sub *sub, const struct daqiri_tensor *t);

/*
 * The wake-up socket (a datagram socket of the caller's own), for the
 * caller's own event loop: it turns readable (EPOLLIN) when the daemon
 * publishes while the subscription is armed. The daemon wakes only a
 * sleeper that said so: arm with daqiri_sub_arm() -- or with a
 * daqiri_next(sub, t, 0) that returned 0, which arms too -- before each
 * wait. After it fires, call daqiri_next(sub, t, 0) until it returns 0,
 * then wait again. Do not read the socket yourself (the library drains
 * it when arming); whatever you do to it cannot disturb the daemon.
 * While a DAQIRI_SUB_RECONNECT subscription reconnects it is -1 (and
 * daqiri_fd() is -1 or the socket awaiting the hello reply): look it up
 * again before each wait and call daqiri_next(sub, t, 0) now and then.
 */
int daqiri_sub_fd(const struct daqiri_sub *sub);

/*
 * Ask for a wake-up on daqiri_sub_fd() at the next publish, for a caller
 * about to wait on it. Returns 0 (armed, nothing waiting: wait now), 1 (a
 * tensor arrived meanwhile: call daqiri_next() instead of waiting),
 * -EPROTO (corrupted ring), -EINVAL.
 */
int daqiri_sub_arm(struct daqiri_sub *sub);

/* End a subscription and free it (held tensors become invalid; the daemon
 * takes their buffers back). NULL-safe. Returns 0 or a negative errno
 * from the daemon's reply (the subscription is freed either way). */
int daqiri_unsubscribe(struct daqiri_sub *sub);

/* Static names of the shared enums: daqiri_types.h. */


/*
 * TX channels (libdaqiri-client(3) "TRANSMIT"): send payloads to the
 * instrument through a tx queue of the daemon. The consumer writes
 * payloads only, into buffers of its own pool (shared with the daemon,
 * writable by this process alone); the daemon writes every header from
 * its configuration, so a channel reaches only the destination the
 * configuration names. Needs root or the daemon's admin group.
 */
struct daqiri_tx;		/* one TX channel on a connection */

/* daqiri_tx_opts.flags. */
#define DAQIRI_TX_HOST_ONLY	0x1u	/* refuse a device pool (-ENOTSUP)
					 * without touching CUDA: for a
					 * caller that writes payloads with
					 * the CPU */

/* Options of daqiri_tx_open(); zero fields take the defaults. */
struct daqiri_tx_opts {
	size_t size;			/* sizeof(struct daqiri_tx_opts) */
	uint32_t nbufs;			/* pool buffers; 0 = the daemon's
					 * default (DAQIRI_TX_NBUFS_DEFAULT,
					 * at most the queue region's
					 * num_bufs) */
	/* Appended: a caller whose size ends before them gets none. */
	uint32_t flags;			/* DAQIRI_TX_* */
};

/* A writable pool buffer: fill data[0 .. len) and send it. On a device
 * channel (daqiri_tx_stats() device >= 0) data is a device pointer on
 * that GPU: write it with kernels or cudaMemcpy, and have every write
 * finished before daqiri_tx_send() (see daqiri_tx_send()). */
struct daqiri_tx_buf {
	void *data;
	uint32_t cap;			/* the channel's largest payload */
	uint32_t len;			/* payload bytes to send; set it */
	uint32_t index;			/* the library's; do not change */
};

/* What a channel is and did; daqiri_tx_stats(). */
struct daqiri_tx_stats {
	size_t size;			/* sizeof(struct daqiri_tx_stats) */
	char queue[128];		/* "<interface>/<tx queue>" */
	uint32_t nbufs;
	uint32_t buf_size;		/* largest payload */
	uint32_t free;			/* buffers the caller may take now */
	uint64_t sent;			/* completions: sent */
	uint64_t failed;		/* completions: too big or engine
					 * error or queue stopped */
	uint64_t ring_full;		/* daqiri_tx_buf() that returned
					 * -EAGAIN (and _send() that found
					 * the ring full) */
	/* Appended: a caller whose size ends before them gets none. */
	uint32_t in_flight;		/* submitted, not completed yet */
	uint64_t too_big;		/* failed: over the queue's largest
					 * payload (the daemon's check) */
	uint64_t engine_error;		/* failed: the engine refused it */
	uint64_t stopped;		/* failed: the channel or queue
					 * stopped before it went */
	int32_t device;			/* GPU ordinal of a device pool (the
					 * tx queue's region is device
					 * memory), -1 for a host pool */
};

/*
 * Open a TX channel on queue ("<interface>/<tx queue>"). opts NULL =
 * defaults. Maps the channel's ring read-write and its pool read-write
 * after checking both against the reply (sealed memfds of the sizes it
 * names, a ring laid out as txring.h says, nothing in flight). A queue
 * whose region is device memory has a device pool: opened here with
 * cudaIpcOpenMemHandle() on its GPU (made the calling thread's current
 * device), closed by daqiri_tx_close(); -ENODEV when CUDA cannot open
 * it, -ENOTSUP in a library built without CUDA or with
 * DAQIRI_TX_HOST_ONLY. 0 and
 * *out, or -ENOENT (no such tx queue), -ENODEV (no such interface),
 * -EACCES (not root or the admin group), -EINVAL or -ERANGE (bad options, or nbufs over what the queue
 * allows), -ENOMEM (out of resources, or the queue has all the channels
 * it takes), -EPROTO (the daemon's answer was inconsistent), -ENOTCONN;
 * the daemon's reason in daqiri_last_error().
 */
int daqiri_tx_open(struct daqiri *d, const char *queue,
		   const struct daqiri_tx_opts *opts, struct daqiri_tx **out);
/*
 * Take a free buffer (collecting completions first): 0 with *buf set
 * (len 0), or -EAGAIN when every buffer is submitted or taken and none
 * has completed yet (counted as ring_full; wait with daqiri_tx_wait()),
 * -ENOTCONN (only when no buffer is free: the daemon ended the channel
 * or the connection), -EPROTO (corrupted completion ring; sticky).
 * Never blocks.
 */
int daqiri_tx_buf(struct daqiri_tx *tx, struct daqiri_tx_buf *buf);
/* Submit n buffers (each from daqiri_tx_buf(), len set), in order, and
 * ring the doorbell once if the daemon's worker sleeps. Returns how many
 * were submitted (n, or fewer when the ring is full: the rest stay the
 * caller's), or -EINVAL (a buffer not taken from this channel, taken
 * twice, or len over cap: nothing was submitted), -ENOTCONN (the daemon
 * closed the channel or the connection, as far as already seen),
 * -EPROTO. Never blocks, makes at most one system call.
 * Device channels: the daemon reads a buffer as soon as it takes the
 * submission and waits on nothing of yours, so every kernel and copy
 * that wrote it must be finished before this call: synchronise the
 * stream that wrote it (cudaStreamSynchronize(), or
 * cudaDeviceSynchronize()). A synchronous cudaMemcpy() alone is not
 * enough: from pageable memory it may return before the bytes reached
 * the device. Until its completion the buffer is the daemon's: do not
 * write it. */
int daqiri_tx_send(struct daqiri_tx *tx, struct daqiri_tx_buf *bufs,
		   unsigned n);
/* Give back a buffer without sending it. 0 or -EINVAL. */
int daqiri_tx_discard(struct daqiri_tx *tx, struct daqiri_tx_buf *buf);
/* Wait until every submitted buffer completed or timeout_ms passed
 * (-1 = forever, 0 = do not wait). 0, -ETIMEDOUT, -ENOTCONN (the daemon
 * or the channel ended with buffers still out), -EINTR, -EPROTO. */
int daqiri_tx_flush(struct daqiri_tx *tx, int timeout_ms);
/* Wait until a buffer is free (as daqiri_tx_flush() for one). */
int daqiri_tx_wait(struct daqiri_tx *tx, int timeout_ms);
/* Counters and geometry (completions collected first). out->size must
 * be set. 0 or -EINVAL. */
int daqiri_tx_stats(struct daqiri_tx *tx, struct daqiri_tx_stats *out);
/*
 * The doorbell socket, for the caller's own poll loop: it becomes
 * readable when completions arrive after daqiri_tx_arm() returned 0.
 * Do not read it yourself (arming drains it).
 */
int daqiri_tx_fd(const struct daqiri_tx *tx);
/* Ask for a wake-up at the next completion: 0 (armed: wait now), 1
 * (completions arrived meanwhile: call daqiri_tx_buf() or
 * daqiri_tx_stats()), -ENOTCONN, -EPROTO, -EINVAL. */
int daqiri_tx_arm(struct daqiri_tx *tx);
/* Close the channel (tx_close; buffers not yet completed are the
 * daemon's to finish or drop) and free it. NULL-safe. 0, or the
 * daemon's negative errno; a daemon that is gone or ended the channel
 * itself is no error. daqiri_disconnect() frees open channels too. */
int daqiri_tx_close(struct daqiri_tx *tx);

/* ---- Tapping an rx queue (root and admin_group only) ---- */

struct daqiri_tap;		/* a mapped tap session on a connection */

/* A frame of a tap: valid until the next daqiri_tap_next() or
 * daqiri_tap_release() on the same tap. */
struct daqiri_tap_frame {
	size_t size;			/* caller sets sizeof(struct daqiri_tap_frame) */
	const void *data;		/* caplen bytes, in the shared ring */
	uint32_t caplen;		/* bytes in data (at most the snap) */
	uint32_t len;			/* the frame's bytes on the wire */
	uint64_t rx_ns;			/* arrival, CLOCK_MONOTONIC ns */
};

/*
 * Start a tap session on rx queue ("<interface>/<rx queue>") of count
 * frames (1..4096; 0: until closed) of snap bytes each (1..9728) and map
 * its ring, which this process then drains itself: no message per frame.
 * One tap per queue at a time (-ENOMEM, status no_resources, while
 * another connection's runs). 0 with *out, or a negative errno (-EACCES:
 * not root nor admin_group; -ENOENT: no such queue; -EPROTO: a ring of
 * another layout; the daemon's message in daqiri_last_error()). Close
 * every tap before daqiri_disconnect(). */
int daqiri_tap_open(struct daqiri *d, const char *queue, uint32_t count,
		    uint32_t snap, struct daqiri_tap **out);
/* The next frame (the previous one released): 1 with *f, 0 when the
 * ring is empty, -ENOTCONN when it is empty and the daemon went away,
 * -EPROTO when the ring is not one (sticky), -EINVAL when f->size is
 * not set. Never blocks; a system call only when the ring is empty (to
 * see the daemon's hang-up). Frames the worker found no room for are
 * not in the ring: they are counted as full. */
int daqiri_tap_next(struct daqiri_tap *tap, struct daqiri_tap_frame *f);
/* Give the frame daqiri_tap_next() returned back to the ring now. */
void daqiri_tap_release(struct daqiri_tap *tap);
/* The session's counts so far: frames the worker copied into the ring
 * (*taken) and frames it did not because the ring was full (*full: the
 * tap's loss, not the streams'). Either pointer may be NULL. 0 or
 * -EINVAL. */
int daqiri_tap_counts(const struct daqiri_tap *tap, uint64_t *taken,
		      uint64_t *full);
/* Stop the session (when the connection still stands), unmap the ring
 * and free tap. NULL-safe. 0, or the daemon's negative errno. */
int daqiri_tap_close(struct daqiri_tap *tap);

#ifdef __cplusplus
}
#endif

#endif
