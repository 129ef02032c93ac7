/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The socket engine's flow steering: a flow table compiled into the
 * classic BPF program of the rx queues' SO_REUSEPORT group
 * (steer_cbpf.c).
 */
#ifndef DAQIRI_STEER_CBPF_H
#define DAQIRI_STEER_CBPF_H

#include <linux/filter.h>
#include <stdint.h>

#include "flow.h"

/* Instructions a program may have (the kernel's BPF_MAXINSNS). */
#define STEER_CBPF_MAX		4096

/*
 * The program for table t, whose rules steer to the queue ids of a
 * reuseport group where socket i is the rx queue of id queue_ids[i]
 * (i < nqueues): a datagram goes to the socket of the first rule that
 * matches it (the rule's queue; of several, the one its UDP source port
 * picks: steer_cbpf.c), else to the kernel's hash. Into
 * out[0..cap); returns the number of instructions, or -E2BIG when they
 * do not fit.
 */
int steer_cbpf_build(const struct flow_table *t, const uint32_t *queue_ids,
		     int nqueues, struct sock_filter *out, int cap);

#endif
