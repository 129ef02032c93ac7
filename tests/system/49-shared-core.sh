#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Two rx queues pinned to one core: one worker thread polls both (DPDK
# l3fwd's per-lcore queue list; worker.c's top), each queue keeping its
# own streams and counters. Test 47 run with both queues on core 0: two
# instruments on their own queues, shuffled, lossy and duplicated, exact;
# a flow change followed; one rx thread, not two.
SHARE_CORE=0
. tests/system/47-steer-socket.sh
