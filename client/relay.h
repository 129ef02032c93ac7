/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daqiri-relay's own state, shared by its files: the relay (UCX context,
 * worker, listener, the epoll loop's registrations), its remote peers and
 * their subscriptions, and the counters /metrics and /stats show. One
 * thread runs all of it (daqiri-relay.c's loop); UCX callbacks run inside
 * ucp_worker_progress() on that thread and only mark, count, release and
 * queue: peers and subscriptions are freed by the loop alone, outside
 * progress, once nothing of theirs is in flight.
 *
 *   daqiri-relay.c  options, logging, signals, the loop
 *   relay_peer.c    UCX set-up, peers, handshake, control requests
 *   relay_sub.c     remote subscriptions: local subscribe, forwarding
 *                   against credits, device staging, teardown
 *   relay_stats.c   /metrics, /stats (libmicrohttpd on the loop's epoll)
 *                   and the one-line summaries
 */
#ifndef DAQIRI_RELAY_H
#define DAQIRI_RELAY_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ucp/api/ucp.h>

#include "daqiri_client.h"
#include "proto.h"
#include "relay_wire.h"

#define RELAY_PROG		"daqiri-relay"
#define RELAY_DEFAULT_HOST	"127.0.0.1"
#define RELAY_AUTH_TIMEOUT_MS	10000	/* a peer must authenticate by then */
#define RELAY_GARBAGE_MAX	16	/* garbage messages before a close */
/* Control messages of one peer waiting to be read, at most: a consumer
 * waits for each reply, so more is a flood, not a consumer. */
#define RELAY_CTRL_QUEUE_MAX	64
#define RELAY_RECONNECT_POLL_MS	100	/* a local sub reconnecting: look again */
#define RELAY_MAX_PEERS_DEFAULT	64
#define RELAY_MAX_PEERS_MAX	4096
#define RELAY_ALLOW_MAX		64	/* --allow patterns */
#define RELAY_ADDR_LEN		64	/* "ADDR:PORT", IPv6 in brackets */
#define RELAY_CLOSE_WAIT_MS	2000	/* a closing endpoint's flush */
#define RELAY_UNSUB_NONE	(-2)
#define RELAY_UNSUB_NO_ID	(-1)

enum relay_log_level { RLOG_WARN, RLOG_INFO, RLOG_DEBUG };

/* Logging (daqiri-relay.c): one line on stderr, "daqiri-relay: ...". */
extern int relay_verbosity;		/* RLOG_INFO, -v: RLOG_DEBUG */
void relay_log(enum relay_log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Why a message of a peer was garbage (counted per peer and relay-wide;
 * the `reason` label of daqiri_relay_garbage_total). */
enum relay_garbage {
	RG_CTRL_DECODE,		/* relay_ctrl_decode() refused it */
	RG_CTRL_RNDV,		/* a control message sent rendezvous */
	RG_CTRL_UNEXPECTED,	/* a challenge/auth_reply, or auth twice */
	RG_CREDIT,		/* relay_credit_check() refused it */
	RG_CREDIT_EXCESS,	/* more credits than RELAY_SLOTS_MAX */
	RG_CREDIT_NO_SUB,	/* credit for a subscription never made */
	RG_UNEXPECTED_AM,	/* an AM id a consumer does not send */
	RG_NO_REPLY_EP,		/* sent without UCP_AM_SEND_FLAG_REPLY */
	RG_CTRL_FLOOD,		/* over RELAY_CTRL_QUEUE_MAX control messages
				 * waiting: dropped unread */
	RG_MAX
};
const char *relay_garbage_name(enum relay_garbage g);

/* Why a peer was refused or closed (daqiri_relay_refused_total). */
enum relay_refusal {
	RR_SECRET,		/* wrong or missing MAC */
	RR_ALLOW,		/* asked for a stream --allow does not serve */
	RR_GARBAGE,		/* RELAY_GARBAGE_MAX garbage messages */
	RR_AUTH_TIMEOUT,	/* no auth within RELAY_AUTH_TIMEOUT_MS */
	RR_MAX_PEERS,		/* --max-peers reached */
	RR_VERSION,		/* auth of another relay protocol version */
	RR_MAX
};
const char *relay_refusal_name(enum relay_refusal r);

struct relay;
struct relay_peer;

/* What an epoll registration is (epoll_event.data.ptr). */
enum relay_watch_kind {
	RW_UCX, RW_SIGNAL, RW_HTTP, RW_SUB, RW_LOCAL
};
struct relay_watch {
	enum relay_watch_kind kind;
	int fd;				/* registered fd, -1: none */
	void *ptr;			/* the sub or peer */
};

/* One tensor on its way: kept until its send completes. */
struct relay_send {
	struct relay_sub *sub;
	void *req;			/* UCX request, NULL when none */
	bool busy;
	struct daqiri_tensor t;
	ucp_dt_iov_t iov[2];
	/* the tensor header, then meta_bytes of meta: the AM header (the
	 * meta in it when it fits, else in the payload) */
	uint8_t *hbuf;
	uint8_t *stage;			/* host copy of a device tensor */
};

/* Counters of one remote subscription (written by the loop only). */
struct relay_sub_counts {
	uint64_t tensors, bytes, overruns, staged_bytes;
	uint64_t lag_last_ns, lag_max_ns;
	uint64_t restarts;		/* RESTART tensors forwarded */
};

struct relay_sub {
	struct relay_sub *next;
	struct relay_peer *peer;
	uint32_t id;			/* the remote's sub id, >= 1 */
	char stream[DAQIRI_STREAM_NAME_MAX];
	struct daqiri_sub *local;
	struct daqiri_stream_info info;
	enum daqiri_sub_policy policy;
	uint32_t meta_bytes;
	bool device;			/* the stream's data is device memory */
	uint32_t credits;
	uint32_t inflight;
	uint32_t nslots;
	struct relay_send *slots;
	bool have_seq;
	uint64_t last_seq;
	/* unsubscribed or ended: take no tensor; drop once inflight is 0 */
	bool closing;
	/* the unsubscribe request that asked to end it: its id,
	 * RELAY_UNSUB_NO_ID (it had none) or RELAY_UNSUB_NONE (not asked) */
	int64_t unsub_req_id;
	struct relay_watch watch;	/* the sub's wake-up fd */
	struct relay_sub_counts c;
};

/* A control message copied out of the AM handler, for the loop. */
struct relay_ctrl_msg {
	struct relay_ctrl_msg *next;
	size_t len;
	char buf[];
};

enum relay_peer_state {
	PEER_NEW,			/* endpoint made, challenge not sent */
	PEER_CHALLENGED,		/* waiting for auth */
	PEER_READY,			/* authenticated */
	PEER_CLOSING,			/* closing its endpoint */
};

struct relay_peer {
	struct relay_peer *next;
	struct relay *r;
	uint64_t serial;		/* 1.., for the logs */
	ucp_ep_h ep;
	enum relay_peer_state state;
	char addr[RELAY_ADDR_LEN];	/* "ADDR:PORT" */
	char client[DAQIRI_NAME_MAX];	/* auth's "client", "" */
	uint8_t nonce[RELAY_NONCE_BYTES];
	uint64_t deadline_ns;		/* auth deadline */
	bool failed;			/* its endpoint errored: tear down */
	ucs_status_t fail_status;
	bool transports_logged;
	void *close_req;		/* ucp_ep_close_nbx() in progress */
	uint64_t close_deadline_ns;
	struct daqiri *local;		/* its own daemon connection */
	struct relay_watch local_watch;
	struct relay_sub *subs;
	uint32_t next_sub_id;		/* ids below it were handed out */
	struct relay_ctrl_msg *q_head, *q_tail;
	unsigned q_len;			/* messages in the queue */
	unsigned ctrl_sends;		/* control sends in flight */
	uint64_t garbage[RG_MAX], garbage_total;
	bool garbage_logged;
};

/* Options (daqiri-relay.c fills them). */
struct relay_opts {
	const char *sock;		/* NULL: $DAQIRI_SOCKET or default */
	char host[256];
	uint16_t port;
	const char *allow[RELAY_ALLOW_MAX];
	int nallow;
	bool has_secret;
	uint8_t secret[RELAY_SECRET_MAX + 1];
	size_t secret_len;
	const char *metrics;		/* "ADDR:PORT" or NULL */
	unsigned max_peers;
};

struct relay {
	const struct relay_opts *o;
	int epfd;
	ucp_context_h ctx;
	ucp_worker_h worker;
	ucp_listener_h listener;
	bool cuda_mem;			/* UCX has a CUDA memory type */
	size_t max_am_header;		/* the worker's largest AM header */
	bool staging_logged;
	uint64_t instance;		/* this relay's generation */
	struct relay_watch ucx_watch;
	struct relay_peer *peers;
	unsigned npeers;
	uint64_t peers_total;		/* accepted endpoints ever */
	uint64_t refused[RR_MAX];
	uint64_t garbage[RG_MAX];
	/* connection requests taken in the listener's callback */
	ucp_conn_request_h pending[16];
	unsigned npending;
	bool first_peer_logged;
	struct relay_stats *stats;	/* relay_stats.c's HTTP endpoint */
};

/* ---- relay_peer.c */

/* UCX context, worker, listener on o->host:o->port, AM handlers. 0 or
 * -1 (logged, with what to do). */
int relay_ucx_init(struct relay *r);
void relay_ucx_fini(struct relay *r);
/* Work the loop does after progress: new endpoints, queued control
 * messages, auth deadlines, failed and closing peers. Returns the
 * milliseconds until the next deadline it needs (-1: none). */
int relay_peers_service(struct relay *r);
/* Send a control message (JSON object; not freed) to a peer: 0 or a
 * negative errno (the peer is marked failed). */
int relay_peer_send_json(struct relay_peer *p, const cJSON *o);
/* A reply without payload: ok, or status st with msg (re, id as
 * daqiri_reply_new()). */
void relay_peer_reply(struct relay_peer *p, enum daqiri_msg_type re,
		      int64_t id, enum daqiri_status st, const char *msg);
/* Count a garbage message of p (NULL: unattributed); closes p at
 * RELAY_GARBAGE_MAX. */
void relay_garbage(struct relay *r, struct relay_peer *p,
		   enum relay_garbage g);
/* The peer's endpoint failed or must go: close it (no more sends). */
void relay_peer_fail(struct relay_peer *p, const char *why);
/* Every peer closed (at exit): flush briefly, then force. */
void relay_peers_close_all(struct relay *r);

/* ---- relay_sub.c */

/* Whether stream is served (--allow). */
bool relay_allowed(const struct relay_opts *o, const char *stream);
/* The peer's local daemon connection, opened on first use: 0 or a
 * negative errno with *err filled. */
int relay_peer_local(struct relay_peer *p, struct daqiri_err *err);
/* Handle a subscribe request; replies itself. */
void relay_sub_request(struct relay_peer *p, const struct daqiri_msg *m);
/* Handle an unsubscribe request (the reply goes when it is done). */
void relay_unsub_request(struct relay_peer *p, const struct daqiri_msg *m);
/* A credit arrived (AM handler: counts and marks only). */
void relay_sub_credit(struct relay_peer *p, const struct relay_credit *c);
/* Forward what credits allow, for every sub of every ready peer; drop
 * closed subs with nothing in flight; keep epoll registrations true.
 * Returns the milliseconds until it wants to run again (-1: an fd will
 * say). */
int relay_subs_pump(struct relay *r);
/* Stop a peer's subs (no more tensors). */
void relay_subs_stop(struct relay_peer *p);
/* Whether every sub of p has nothing in flight. */
bool relay_subs_idle(const struct relay_peer *p);
/* Free a peer's subs (nothing in flight), its local connection. */
void relay_subs_free(struct relay_peer *p);
/* Keep a watch's registration on fd (-1: none) with events. */
void relay_watch_set(struct relay *r, struct relay_watch *w, int fd,
		     uint32_t events);

/* ---- relay_stats.c */

/* Serve /metrics and /stats on o->metrics: 0 or -1 (logged). */
int relay_stats_init(struct relay *r);
void relay_stats_fini(struct relay *r);
/* The HTTP server's turn (its fd was readable, or its timeout passed);
 * returns its next timeout in ms, -1 none. */
int relay_stats_run(struct relay *r);
/* One line per peer and sub on stderr (SIGUSR1). */
void relay_stats_log(const struct relay *r);
/* The /stats object (cJSON_Delete it), NULL on no memory. */
cJSON *relay_stats_json(const struct relay *r);

/* CLOCK_MONOTONIC ns. */
uint64_t relay_now_ns(void);

#endif
