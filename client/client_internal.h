/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to libdaqiri-client: the two handles and what the control
 * connection (client_conn.c) and the subscriptions (client_sub.c) call of
 * each other. Hidden from the library's dynamic symbol table.
 */
#ifndef DAQIRI_CLIENT_INTERNAL_H
#define DAQIRI_CLIENT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "daqiri_client.h"
#include "proto.h"
#include "ring.h"

#define CLIENT_HIDDEN	__attribute__((visibility("hidden")))

/* The daemon answers at once (it never blocks); this bounds a request
 * against a daemon that is stuck. */
#define CLIENT_REPLY_TIMEOUT_MS	10000

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
};

/* A control connection: the socket, its subscriptions, the last error,
 * and one message buffer each way. */
struct daqiri {
	int fd;
	bool dead;
	bool have_reason;		/* err holds a sub_closed reason */
	uint32_t next_id;
	uint64_t conn_id;
	struct daqiri_sub *subs;
	char err[DAQIRI_ERR_MSG_MAX + 64];	/* room for a prefix */
	int rlen;			/* length of the last message in rbuf */
	char rbuf[DAQIRI_MSG_SIZE_MAX + 1];
	char wbuf[DAQIRI_MSG_SIZE_MAX + 1];
};

/* ---- client_conn.c */

/* Set the connection's error text (no daemon reason any more). */
CLIENT_HIDDEN void client_set_err(struct daqiri *d, const char *msg);

/*
 * Receive one message, waiting at most timeout_ms (-1 forever). Returns
 * 1 with *m decoded (and *fd when fd != NULL), 0 on timeout, or a
 * negative errno (-ENOTCONN: the daemon is gone).
 */
CLIENT_HIDDEN int client_recv_one(struct daqiri *d, struct daqiri_msg *m,
				  int *fd, int timeout_ms);

/* A daemon message that is not the awaited reply (a sub_closed event
 * marks its subscription closed and keeps the reason). */
CLIENT_HIDDEN void client_handle_unsolicited(struct daqiri *d,
					     const struct daqiri_msg *m);

/* Read whatever the daemon sent unasked (events, hang-up); never waits.
 * Returns 0, or -ENOTCONN when the daemon is gone. */
CLIENT_HIDDEN int client_pump(struct daqiri *d);

/* Send obj (consumed) and wait for its reply: 0 with *m (free it with
 * daqiri_msg_free), or a negative errno. */
CLIENT_HIDDEN int client_transact(struct daqiri *d, cJSON *obj,
				  struct daqiri_msg *m);

/* Status of a decoded reply -> 0 or negative errno; keeps the message. */
CLIENT_HIDDEN int client_reply_status(struct daqiri *d,
				      const struct daqiri_msg *m);

/* ---- client_sub.c */

/* Unlink s from its connection and free it with its mappings, CUDA
 * handles and wake socket; NULL-safe, works on a half-built one. */
CLIENT_HIDDEN void client_sub_free(struct daqiri_sub *s);

#endif
