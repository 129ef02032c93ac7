/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to libdaqiri-client: the three handles and what the control
 * connection (client_conn.c), the subscriptions (client_sub.c) and the
 * TX channels (client_tx.c) call of each other. Hidden from the
 * library's dynamic symbol table.
 */
#ifndef DAQIRI_CLIENT_INTERNAL_H
#define DAQIRI_CLIENT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "daqiri_client.h"
#include "proto.h"
#include "ring.h"
#include "txring.h"

#define CLIENT_HIDDEN	__attribute__((visibility("hidden")))

/* The daemon answers at once (it never blocks); this bounds a request
 * against a daemon that is stuck. */
#define CLIENT_REPLY_TIMEOUT_MS	10000

/* Reconnecting (DAQIRI_SUB_RECONNECT): the wait between tries doubles
 * from the first to the last value; the whole outage may last the
 * subscription's reconnect_timeout_ms, by default this long. */
#define CLIENT_RECONNECT_MIN_MS		10
#define CLIENT_RECONNECT_MAX_MS		500
#define CLIENT_RECONNECT_DEFAULT_MS	30000

/* Where a connection stands: up, or (only when a subscription asked for
 * DAQIRI_SUB_RECONNECT) down and retrying, or connected again with the
 * hello sent and its reply awaited, or its reconnecting subscriptions
 * being subscribed anew, one exchange at a time, across as many calls
 * as their replies take (client_reconnect.c). */
enum client_state {
	CLIENT_UP,
	CLIENT_DOWN,
	CLIENT_HELLO,
	CLIENT_RESUB,
	CLIENT_STATE_MAX
};

/* What a subscription mapped from one daemon instance and still has to
 * keep after a restart because the application holds tensors of it:
 * released when the last of them is (daqiri_release() is then a no-op
 * toward any daemon), or with the subscription. */
struct client_orphan {
	struct client_orphan *next;
	const uint8_t *base;		/* tensor_map or dev_base */
	uint64_t buf_offset, buf_stride;
	uint32_t nbufs;
	uint32_t nheld;
	uint8_t *held;
	const uint8_t *tensor_map;
	size_t tensor_len;
	const uint8_t *bitmap_map;
	size_t bitmap_len;
	bool cuda_registered;
	void *dev_base;
	void **events;
};

/* A subscription: its metadata, its ring handle and what it mapped. */
struct daqiri_sub {
	struct daqiri *d;
	struct daqiri_sub *next;
	struct daqiri_sub_info info;
	struct daqiri_ring ring;
	uint32_t flags;
	bool closed;			/* the daemon ended it (event) */
	int wake_fd;			/* our end of the wake-up socketpair */
	const uint8_t *tensor_map;	/* host kinds */
	size_t tensor_len;
	const uint8_t *bitmap_map;
	size_t bitmap_len;
	void *ring_map;
	size_t ring_len;
	uint8_t *held;			/* nbufs flags */
	bool cuda_registered;
	void *dev_base;			/* device kind: IPC-opened allocation */
	void **events;			/* device kind: cudaEvent_t per buffer */
	/* DAQIRI_SUB_RECONNECT */
	struct daqiri_sub_req req;	/* what to ask the next daemon */
	uint64_t instance;		/* daemon generation of the mappings */
	uint32_t reconnect_ms;		/* outage limit */
	bool restart_pending;		/* mark the next tensor RESTART */
	int lost;			/* sticky error, 0 = none */
	char lost_msg[DAQIRI_ERR_MSG_MAX + 64];
	struct client_orphan *orphans;	/* earlier instances' mappings */
	/* CLIENT_RESUB: the new instance whose subscribe was sent and whose
	 * reply is awaited (NULL: none), and whether this connection has
	 * subscribed it anew already */
	struct daqiri_sub *opening;
	bool resubbed;
	/* a subscription of a remote connection (client_remote.c) */
	struct remote_sub *rs;
};

/* Where one pool buffer of a TX channel is. */
enum client_txbuf {
	CLIENT_TXBUF_FREE,		/* on the free stack */
	CLIENT_TXBUF_TAKEN,		/* the caller's (daqiri_tx_buf()) */
	CLIENT_TXBUF_SUBMITTED,		/* the daemon's until it completes */
	CLIENT_TXBUF_MAX
};

/* A TX channel: its metadata, ring handle, mappings and buffers. */
struct daqiri_tx {
	struct daqiri *d;
	struct daqiri_tx *next;
	struct daqiri_tx_info info;
	struct daqiri_txring ring;
	uint64_t conn_id;		/* the connection it was opened on: */
	uint64_t instance;		/* a reconnected one does not have it */
	bool closed;			/* the daemon ended it (event) */
	int lost;			/* sticky -EPROTO: impossible ring */
	int wake_fd;			/* our end of the doorbell socketpair */
	void *ring_map;
	size_t ring_len;
	uint8_t *pool;			/* read-write, ours alone to write; a
					 * device pool's IPC-opened address */
	size_t pool_len;
	bool pool_dev;			/* pool is cudaIpcOpenMemHandle()'s */
	bool host_only;			/* DAQIRI_TX_HOST_ONLY */
	uint8_t *state;			/* nbufs x enum client_txbuf */
	uint32_t *free;			/* stack of free buffer indices */
	uint32_t nfree;
	uint32_t in_flight;		/* submitted, not completed */
	uint64_t sent;
	uint64_t failed[DAQIRI_TX_STATUS_MAX];	/* [DAQIRI_TX_SENT] unused */
	uint64_t ring_full;
};

/* A control connection: the socket, its subscriptions and TX channels,
 * the last error, and one message buffer each way. */
struct daqiri {
	int fd;
	bool dead;
	bool have_reason;		/* err holds a sub_closed reason */
	uint32_t next_id;
	uint64_t conn_id;
	uint64_t instance;		/* the daemon's generation (hello) */
	char path[108];			/* sun_path connected to */
	enum client_state state;
	uint64_t down_ns;		/* when it went down */
	uint64_t next_try_ns;
	uint64_t hello_deadline_ns;
	uint32_t backoff_ms;
	/* The end of the exchange under way: its reply (every part) and
	 * the fds that follow it share one wait of CLIENT_REPLY_TIMEOUT_MS
	 * from the request, whatever else comes in between. */
	uint64_t xdeadline_ns;
	bool in_resub;			/* CLIENT_RESUB: its own exchange */
	struct daqiri_sub *subs;
	struct daqiri_tx *txs;
	/* A remote connection (ucx://, client_remote.c): fd is -1, state
	 * and the reconnection fields are its own. */
	struct client_remote *remote;
	char err[DAQIRI_ERR_MSG_MAX + 64];	/* room for a prefix */
	int rlen;			/* length of the last message in rbuf */
	char rbuf[DAQIRI_MSG_SIZE_MAX + 1];
	char wbuf[DAQIRI_MSG_SIZE_MAX + 1];
};

/* ---- client_conn.c */

/* Set the connection's error text (no daemon reason any more). */
CLIENT_HIDDEN void client_set_err(struct daqiri *d, const char *msg);
/* Map fd (prot): a regular file of at least len bytes sealed against
 * shrinking, so a mapping of it can never SIGBUS; 0, -EPROTO or -errno. */
CLIENT_HIDDEN int client_map_fd(int fd, size_t len, int prot, void **out);

/* An exchange (request, reply in any number of parts, fds) starts: its
 * one deadline, CLIENT_REPLY_TIMEOUT_MS from now. */
CLIENT_HIDDEN void client_exchange_start(struct daqiri *d);
/* Milliseconds left of it (at least 1), or 0 when it is past. */
CLIENT_HIDDEN int client_left_ms(const struct daqiri *d);

/*
 * Receive one message, waiting at most timeout_ms (-1 forever). Returns
 * 1 with *m decoded (and *fd when fd != NULL), 0 on timeout, or a
 * negative errno (-ENOTCONN: the daemon is gone).
 */
CLIENT_HIDDEN int client_recv_one(struct daqiri *d, struct daqiri_msg *m,
				  int *fd, int timeout_ms);

/*
 * Receive the fd series that follows a subscribe or tx_open reply: n
 * sub_fd messages of id, numbered 0 .. n-1, message i of kind kinds[i]
 * with one fd (events in between are handled). 0 with fds[0 .. n) the
 * caller's, or a negative errno with none left open; after an fd the
 * caller cannot use, the caller closes them all and the connection stays
 * in step.
 */
CLIENT_HIDDEN int client_recv_fds(struct daqiri *d, uint32_t id, uint32_t n,
				  const enum daqiri_fd_kind *kinds, int *fds);

/* A daemon message that is not the awaited reply (a sub_closed or
 * tx_closed event marks its subscription or channel closed and keeps
 * the reason). */
CLIENT_HIDDEN void client_handle_unsolicited(struct daqiri *d,
					     const struct daqiri_msg *m);

/* Read whatever the daemon sent unasked (events, hang-up); never waits.
 * Returns 0, or -ENOTCONN when the daemon is gone. */
CLIENT_HIDDEN int client_pump(struct daqiri *d);

/* Send obj (consumed) and wait for its reply: 0 with *m (free it with
 * daqiri_msg_free), or a negative errno (-ENOTCONN also while the
 * connection's subscriptions are being subscribed anew: their replies
 * are under way). */
CLIENT_HIDDEN int client_transact(struct daqiri *d, cJSON *obj,
				  struct daqiri_msg *m);
/* The reply of the exchange under way (client_transact()'s second half,
 * for one whose request was sent across an earlier call). */
CLIENT_HIDDEN int client_wait_reply(struct daqiri *d, struct daqiri_msg *m);

/* Whether channel t was opened on d's connection as it is now (not on
 * one a reconnection replaced). */
CLIENT_HIDDEN bool client_tx_current(const struct daqiri_tx *t);

/* Whether fd is a datagram socket: what every wake-up fd must be (a
 * stream socket would read 0 forever once its peer is gone). */
CLIENT_HIDDEN bool client_is_dgram(int fd);

/* Send request t carrying {key: id} (unsubscribe's "sub", tx_close's
 * "tx") and wait: the reply's status as 0 or a negative errno. */
CLIENT_HIDDEN int client_request_id(struct daqiri *d, enum daqiri_msg_type t,
				    const char *key, uint32_t id);

/* Status of a decoded reply -> 0 or negative errno; keeps the message. */
CLIENT_HIDDEN int client_reply_status(struct daqiri *d,
				      const struct daqiri_msg *m);

/* Send obj (consumed) without waiting for a reply: 0 or negative errno. */
CLIENT_HIDDEN int client_send(struct daqiri *d, cJSON *obj);

/* A new non-blocking socket connected to path: 0 with *fd, or a
 * negative errno (-ENOENT, -ECONNREFUSED: nobody listens; nonblock:
 * -EAGAIN, the listener's backlog is full, instead of waiting). */
CLIENT_HIDDEN int client_socket(const char *path, bool nonblock, int *fd);

/* The hello request of this process (NULL: out of memory). */
CLIENT_HIDDEN cJSON *client_hello_new(void);

/* A successful hello reply: keep the connection id and the instance. */
CLIENT_HIDDEN void client_hello_done(struct daqiri *d,
				     const struct daqiri_msg *m);

/* ---- client_reconnect.c */

/*
 * Drive a connection that is down back up for its reconnecting
 * subscriptions, waiting until deadline_ns (0: not at all, UINT64_MAX:
 * as long as it takes). Returns 1 when it is up again and every
 * reconnecting subscription was subscribed anew (each one's own outcome
 * in its lost), 0 when the deadline came first, -EINTR, or -ENOTCONN
 * when the outage outlasted the limit (the subscriptions' lost says so).
 */
CLIENT_HIDDEN int client_reconnect(struct daqiri *d, uint64_t deadline_ns);

/* Release the tensor at data of one of s's orphans: 0, or -ENOENT when
 * data is in none of them. */
CLIENT_HIDDEN int client_orphan_release(struct daqiri_sub *s,
					const void *data);

/* Free every orphan of s (the subscription ends). */
CLIENT_HIDDEN void client_orphans_free(struct daqiri_sub *s);

/* ---- client_sub.c */

/* Unlink s from its connection and free it with its mappings, CUDA
 * handles and wake socket; NULL-safe, works on a half-built one. */
CLIENT_HIDDEN void client_sub_free(struct daqiri_sub *s);

/*
 * Subscribe on s->d as s->req asks, into s (calloc'd, wake_fd -1, flags
 * and d set; linked or not): the reply, the fd series, the mappings.
 * Returns 0, or a negative errno with s half-built (free it with
 * client_sub_free()) and the daemon's side undone.
 */
CLIENT_HIDDEN int client_sub_open(struct daqiri_sub *s);

/* Subscribe s anew on its reconnected connection and check that the
 * stream kept its geometry, in two steps: send() sends the request
 * (s->opening holds the new instance until finish()); finish() takes
 * the reply. 0 (s now reads the new daemon, its old mappings orphaned
 * while tensors of them are held), -ESTALE (the geometry changed:
 * s->lost_msg names what), or the subscribe's errno. */
CLIENT_HIDDEN int client_sub_reopen_send(struct daqiri_sub *s);
CLIENT_HIDDEN int client_sub_reopen_finish(struct daqiri_sub *s);
/* Let go of a resubscribe sent and not finished (the connection went). */
CLIENT_HIDDEN void client_sub_reopen_drop(struct daqiri_sub *s);

/* What changed between two geometries of one stream that matters to a
 * held view, into buf ("" when nothing did). */
CLIENT_HIDDEN void client_geometry_diff(const struct daqiri_sub_info *a,
					const struct daqiri_sub_info *b,
					char *buf, size_t len);

/* ---- client_remote.c: ucx:// connections to daqiri-relay. Each call
 * takes the remote counterpart of the public function of that name. */
#ifdef DAQIRI_HAVE_UCX
#define CLIENT_IS_REMOTE(d)	((d)->remote != NULL)
CLIENT_HIDDEN int client_remote_connect(struct daqiri *d, const char *url);
CLIENT_HIDDEN void client_remote_free(struct daqiri *d);
CLIENT_HIDDEN int client_remote_sub_open(struct daqiri_sub *s);
CLIENT_HIDDEN void client_remote_sub_free(struct daqiri_sub *s);
CLIENT_HIDDEN int client_remote_unsubscribe(struct daqiri_sub *s);
CLIENT_HIDDEN int client_remote_next(struct daqiri_sub *s,
				     struct daqiri_tensor *t, int timeout_ms);
CLIENT_HIDDEN int client_remote_release(struct daqiri_sub *s,
					const struct daqiri_tensor *t);
CLIENT_HIDDEN int client_remote_fd(const struct daqiri *d);
CLIENT_HIDDEN int client_remote_arm(struct daqiri_sub *s);
CLIENT_HIDDEN int client_remote_trigger(const struct daqiri_sub *s,
					uint64_t *count, uint64_t *last_ns);
CLIENT_HIDDEN int client_remote_request(struct daqiri *d, const char *json,
					char **reply);
#else
/* Built without UCX: no connection is ever remote. */
#define CLIENT_IS_REMOTE(d)	(false && (d) != NULL)
#define client_remote_free(d)	((void)(d))
#define client_remote_sub_free(s)	((void)(s))
#define client_remote_sub_open(s)	((void)(s), -EPROTONOSUPPORT)
#define client_remote_unsubscribe(s)	((void)(s), -EPROTONOSUPPORT)
#define client_remote_next(s, t, ms)	((void)(s), (void)(t), (void)(ms), -EPROTONOSUPPORT)
#define client_remote_release(s, t)	((void)(s), (void)(t), -EPROTONOSUPPORT)
#define client_remote_fd(d)	((void)(d), -1)
#define client_remote_arm(s)	((void)(s), -EPROTONOSUPPORT)
#define client_remote_trigger(s, c, n)	((void)(s), (void)(c), (void)(n), -EPROTONOSUPPORT)
#define client_remote_request(d, j, r)	((void)(d), (void)(j), (void)(r), -EPROTONOSUPPORT)
#endif

/* ---- client_tx.c */

/* Unlink t from its connection and free it with its mappings and
 * doorbell socket; NULL-safe, works on a half-built one. */
CLIENT_HIDDEN void client_tx_free(struct daqiri_tx *t);

#endif
