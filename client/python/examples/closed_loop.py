#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# closed_loop.py: analyse each tensor as it arrives and act on it. For
# every tensor of a stream it computes a decision (a gain from the mean
# of the tensor's first slot) and sends it back to the instrument as a
# control packet through one of daqirid's tx queues; the daemon writes
# the headers, so the packet can reach only the destination its
# configuration names. With etc/examples/tx-closed-loop.yaml and
#   daqiri-sim -c etc/examples/tx-closed-loop.yaml --batches 0 \
#       --control udp://127.0.0.1:5010
# the simulator applies each decision and reports them (daqiri-sim(1)).
#
# The control packet (daqiri-sim(1) "CONTROL PACKETS"), little-endian,
# 32 bytes: magic "DQC1", decision seq, tensor seq, the tensor's
# publish_ns (for the loop latency), gain x 1000, reserved.
# Needs root or the daemon's admin group (a tx channel reaches the
# instrument). Ctrl-C ends it.
import argparse
import struct
import sys

import numpy as np

import daqiri

CONTROL = struct.Struct("<IIQQiI")
MAGIC = 0x31435144              # "DQC1"

p = argparse.ArgumentParser(description="Send a decision per tensor back "
                            "to the instrument through daqirid.")
p.add_argument("-s", "--socket", help="daqirid's control socket (default: "
               f"$DAQIRI_SOCKET, else {daqiri.DEFAULT_SOCKET})")
p.add_argument("--stream", default="sensor0/sensor_tensor",
               help="IFACE/NAME to analyse (default: %(default)s)")
p.add_argument("--tx", default="sensor0/tx0",
               help="IFACE/TXQ to send decisions on (default: %(default)s)")
p.add_argument("-n", "--count", type=int, default=0,
               help="stop after this many tensors (default: 0 = never)")
p.add_argument("--target", type=float, default=1.0,
               help="the level the gain steers the first slot's mean "
               "magnitude to (default: %(default)s)")
a = p.parse_args()

seq = 0
try:
    with daqiri.connect(a.socket) as d, \
            d.subscribe(a.stream) as sub, \
            d.transmitter(a.tx) as tx:
        for t in sub:
            with t:
                x = t.numpy()
                level = float(np.abs(x[0].astype(np.float32)).mean())
                gain = a.target / level if level > 0 else 1.0
                gain = min(max(gain, -2e6), 2e6)
                tx.send(CONTROL.pack(MAGIC, seq & 0xffffffff, t.seq,
                                     t.publish_ns, int(gain * 1000), 0))
            seq += 1
            if a.count and seq >= a.count:
                break
        if not tx.flush(timeout=5.0):
            sys.exit("closed_loop.py: decisions still in flight after 5 s")
    print(f"closed_loop.py: {seq} decisions sent", flush=True)
except daqiri.Error as e:
    sys.exit(f"closed_loop.py: {e.strerror}")
except KeyboardInterrupt:
    pass
