/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control server: the daemon's AF_UNIX SOCK_SEQPACKET socket. It
 * accepts connections, reads and validates every request (size, JSON,
 * type, version, fields, permission by SO_PEERCRED), insists on hello
 * first, and dispatches to the daemon's callbacks; it never waits on a
 * client (a client whose socket is full is dropped and counted).
 */
#ifndef DAQIRI_CONTROL_H
#define DAQIRI_CONTROL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "proto.h"

#define CONTROL_BACKLOG		64
#define CONTROL_MSGS_PER_WAKE	16	/* per connection per control_handle() */
#define CONTROL_MAX_CLIENTS_DEFAULT 64

/* Who is on the other end of a connection. */
struct control_peer {
	uint64_t conn_id;		/* >= 1, never reused while the daemon runs */
	pid_t pid;			/* SO_PEERCRED at accept */
	uid_t uid;
	gid_t gid;
	bool admin;			/* root, or a member of the admin group */
	char client[DAQIRI_NAME_MAX];	/* name given in hello, "" if none */
};

/* Fds a subscribe callback hands over, in daqiri_sub_info.fds order. */
struct control_sub_fds {
	int n;
	int fd[DAQIRI_SUB_MAX_FDS];
};

/*
 * The daemon's side. Every callback runs on the thread that calls
 * control_handle(), must not block, and returns a status:
 *   0 (DAQIRI_ST_OK), a positive enum daqiri_status, or a negative errno
 *   (mapped by daqiri_status_from_errno()); when err->status was set
 *   (daqiri_err_set) and the return is negative, err->status is used, so
 *   "return daqiri_err_set(err, DAQIRI_ST_X, ...);" does what it says.
 * On failure the callback may write a human message into err->msg (it is
 * pre-cleared; empty = the status name is used). Reply objects arrive
 * with "type", "re", "status" already set: add payload fields only; on
 * failure the payload is discarded. A NULL callback answers
 * not_supported. Permission is checked before a callback runs: flow_add
 * and flow_del only reach the daemon for admin peers.
 */
struct control_ops {
	/* {"streams": [...]} and the rest of PROTOCOL.md "streams". */
	int (*streams)(void *ctx, cJSON *reply, struct daqiri_err *err);
	int (*status)(void *ctx, cJSON *reply, struct daqiri_err *err);
	int (*stats)(void *ctx, cJSON *reply, struct daqiri_err *err);
	int (*consumers)(void *ctx, cJSON *reply, struct daqiri_err *err);
	/*
	 * Create a subscription for peer. Fill *info completely (it is
	 * checked with daqiri_sub_info_check(); an inconsistent one is
	 * answered "internal" and the subscription is undone through
	 * unsubscribe()) and put the fds into *fds in info->fds order.
	 * control takes ownership of every fd in *fds whatever the result
	 * (sends then closes them; closes them on failure): pass dup()s or
	 * read-only reopens (control_reopen_ro) of what the daemon keeps.
	 */
	int (*subscribe)(void *ctx, const struct daqiri_sub_req *req,
			 const struct control_peer *peer,
			 struct daqiri_sub_info *info, struct control_sub_fds *fds,
			 struct daqiri_err *err);
	/* End subscription sub_id of this connection (no such -> status
	 * no_such_subscription). */
	int (*unsubscribe)(void *ctx, const struct control_peer *peer,
			   uint32_t sub_id, struct daqiri_err *err);
	/* The connection is gone (hang-up, error, dropped as slow, or
	 * control_close_conn): end all its subscriptions and take back every
	 * buffer it held. Called exactly once per connection that passed
	 * accept, also for connections that never said hello. */
	void (*conn_closed)(void *ctx, const struct control_peer *peer);
	/* iface "" = all interfaces. */
	int (*flow_list)(void *ctx, const char *iface, cJSON *reply,
			 struct daqiri_err *err);
	int (*flow_add)(void *ctx, const struct daqiri_flow_req *req,
			const struct control_peer *peer, cJSON *reply,
			struct daqiri_err *err);
	int (*flow_del)(void *ctx, const struct daqiri_flow_req *req,
			const struct control_peer *peer, cJSON *reply,
			struct daqiri_err *err);
	/* Re-read and apply the config (admin peers only); the outcome,
	 * applied or refused, is the reply's payload. */
	int (*reload)(void *ctx, const struct control_peer *peer, cJSON *reply,
		      struct daqiri_err *err);
	/* The running config, normalised. */
	int (*config)(void *ctx, cJSON *reply, struct daqiri_err *err);
	/*
	 * Open a TX channel for peer (admin peers only, as flow_add): fill
	 * *info completely (checked with daqiri_tx_info_check(); an
	 * inconsistent one is answered "internal" and undone through
	 * tx_close) and put its fds into *fds in info->fds order; control
	 * owns them whatever the result, as for subscribe.
	 */
	int (*tx_open)(void *ctx, const struct daqiri_tx_req *req,
		       const struct control_peer *peer,
		       struct daqiri_tx_info *info, struct control_sub_fds *fds,
		       struct daqiri_err *err);
	/* Close channel tx_id of this connection (no such ->
	 * no_such_subscription: channel and subscription ids share one
	 * space per connection). */
	int (*tx_close)(void *ctx, const struct control_peer *peer,
			uint32_t tx_id, struct daqiri_err *err);
	/* Start, read or stop peer's tap on an rx queue (admin peers only;
	 * PROTOCOL.md "tap"). A start with map puts the ring's fd into
	 * *fds (one) and the session's generation into *fd_id; control owns
	 * the fd whatever the result and sends it after the reply. */
	int (*tap)(void *ctx, const struct daqiri_tap_req *req,
		   const struct control_peer *peer, cJSON *reply,
		   struct control_sub_fds *fds, uint32_t *fd_id,
		   struct daqiri_err *err);
	/* Trigger stream (admin peers only; PROTOCOL.md "trigger"). */
	int (*trigger)(void *ctx, const char *stream,
		       const struct control_peer *peer, cJSON *reply,
		       struct daqiri_err *err);
	/* Start a held replay (admin peers only, checked by the callee) or
	 * tell how it goes (PROTOCOL.md "replay"). */
	int (*replay)(void *ctx, const struct daqiri_replay_req *req,
		      const struct control_peer *peer, cJSON *reply,
		      struct daqiri_err *err);
};

/* Counters, for stats and status output ("control" object). */
struct control_counters {
	uint64_t accepted;
	uint64_t rejected_full;		/* over max_clients (+ reserve): told, closed */
	uint64_t rejected_uid;		/* over max_per_uid: told and closed */
	uint64_t hello_timeouts;	/* no hello in time: told and closed */
	uint64_t closed;
	uint64_t dropped_slow;		/* took no reply for send_stall_ms, or
					 * its queue passed its bound */
	uint64_t requests;
	uint64_t errors;		/* replies with status != ok */
	uint64_t current;		/* open connections */
	uint64_t current_admin;		/* of them root or admin group */
	uint64_t queued_bytes;		/* replies waiting for room, now */
	uint64_t throttled;		/* connections not read until they drain */
};

/*
 * Limits and permissions of the control server (daqirid.yaml(5)
 * "daemon"). Admission of a new connection: refused when
 * max_clients + reserved_admin are open; for a peer that is neither root
 * nor in admin_group also when max_clients are open or its uid has
 * max_per_uid open. A refused peer gets one too_many_consumers reply
 * naming the limit, then the connection is closed.
 */
struct control_opts {
	unsigned mode;			/* socket file mode (control_init only) */
	const char *group;		/* socket group, "" = the daemon's */
	const char *admin_group;	/* "" = root only */
	uint32_t max_clients;		/* 0 = CONTROL_MAX_CLIENTS_DEFAULT */
	uint32_t reserved_admin;	/* more, for root and admin_group only */
	uint32_t max_per_uid;		/* 0 = no per-uid cap */
	uint32_t hello_timeout_ms;	/* no hello this long: closed; 0 = never */
	uint32_t send_stall_ms;		/* 0 = CONTROL_SEND_STALL_MS */
};

struct control;

/*
 * Create the server on path: an existing socket there is probed: a live
 * listener -> -EADDRINUSE (logged as "another daqirid is listening on
 * PATH"); a stale one (ECONNREFUSED) is replaced; something that is not a
 * socket -> -EEXIST. The socket is bound under a temporary name, given
 * o->mode (e.g. 0660) and o->group (name, "" = leave the daemon's), then
 * renamed into place, so it never appears with other permissions. The
 * other fields of o are the limits (struct control_opts); o is copied,
 * ops and ctx are kept. Returns 0 with *out set, or a negative errno
 * (-ENOENT for an unknown group; the reason is logged).
 *
 * Event loop integration: the server keeps its sockets and a timer
 * (CONTROL_TICK_MS: hello deadlines, stalled senders) in its own epoll
 * instance; add control_fd() to the daemon's epoll for EPOLLIN and call
 * control_handle() whenever it is readable (level-triggered).
 */
int control_init(struct control **out, const char *path,
		 const struct control_opts *o, const struct control_ops *ops,
		 void *ctx);

/* The same on an already listening socket (systemd socket activation);
 * the socket is not unlinked at fini; o->mode and o->group are not used.
 * Takes ownership of listen_fd. */
int control_init_fd(struct control **out, int listen_fd,
		    const struct control_opts *o,
		    const struct control_ops *ops, void *ctx);

/* The fd to watch (EPOLLIN) in the daemon's loop. */
int control_fd(const struct control *c);

/* Who may do what needs admin rights, for a refusal: "root or a member
 * of group 'X' (daemon.admin_group)", or with none set "root (set
 * daemon.admin_group ...)". */
const char *control_admin_hint(const struct control *c);

/*
 * Accept connections and serve waiting requests; never blocks. fd and
 * events are the daemon loop's event (fd == control_fd(c)); they are
 * only checked, so calling it with (control_fd(c), EPOLLIN) is always
 * right.
 */
void control_handle(struct control *c, int fd, uint32_t events);

/* Close connections that did not say hello within hello_timeout_ms and
 * drop those that took no reply for send_stall_ms, as of now_ns
 * (daqiri_mono_ns). control_handle() calls it from the server's timer;
 * exported for tests. */
void control_tick(struct control *c, uint64_t now_ns);

/*
 * Tell a connection its subscription ended (event sub_closed with why and
 * message), e.g. when its ring was found corrupted or its stream
 * stopped. Non-blocking; a full socket drops the connection. Returns 0 or
 * -ENOENT (no such connection).
 */
int control_sub_closed(struct control *c, uint64_t conn_id, uint32_t sub_id,
		       enum daqiri_status why, const char *message);

/* The same for a TX channel the daemon ended (event tx_closed, its
 * "sub" the channel id). */
int control_tx_closed(struct control *c, uint64_t conn_id, uint32_t tx_id,
		      enum daqiri_status why, const char *message);

/* Close a connection from the daemon's side (conn_closed is called).
 * Returns 0 or -ENOENT. */
int control_close_conn(struct control *c, uint64_t conn_id);

/* Look up a connection's peer (NULL when gone). Valid until the next
 * control_* call. */
const struct control_peer *control_peer_find(const struct control *c,
					     uint64_t conn_id);

void control_get_counters(const struct control *c,
			  struct control_counters *out);

/* Add {"accepted":..,...} counters to obj. 0 or -ENOMEM. */
int control_counters_json(const struct control *c, cJSON *obj);

/*
 * A read-only reopen of fd (open("/proc/self/fd/N", O_RDONLY|O_CLOEXEC)):
 * what the daemon sends for tensor memory and bitmap sidecars, so a
 * consumer can neither write nor resize them. Returns the new fd or a
 * negative errno.
 */
int control_reopen_ro(int fd);

/* Close every connection (conn_closed for each), remove the socket file
 * (when control_init made it) and free. NULL-safe. */
void control_fini(struct control *c);

#endif
