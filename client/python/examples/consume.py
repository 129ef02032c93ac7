#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# consume.py: the smallest daqiri consumer in Python. It subscribes to one
# stream of daqirid and prints a line per tensor: its sequence number, batch
# id and how many of its packets arrived. Ctrl-C ends it.
import argparse
import sys

import daqiri

p = argparse.ArgumentParser(description="Print a line per tensor of a stream.")
p.add_argument("-s", "--socket", help="daqirid's control socket (default: "
               f"$DAQIRI_SOCKET, else {daqiri.DEFAULT_SOCKET})")
p.add_argument("stream", nargs="?", default="sensor0/sensor_tensor",
               help="IFACE/NAME (default: %(default)s)")
a = p.parse_args()
try:
    with daqiri.connect(a.socket) as d, d.subscribe(a.stream) as sub:
        for t in sub:           # waits for the next tensor
            with t:             # at the end of the block t goes back
                print(f"tensor {t.seq}: batch {t.batch_id}, "
                      f"{t.packets_received} of {t.packets_expected} packets, "
                      f"{'complete' if t.complete else 'incomplete'}",
                      flush=True)
    sys.exit("consume.py: daqirid ended the subscription")
except daqiri.Error as e:
    sys.exit(f"consume.py: {e.strerror}")
except KeyboardInterrupt:
    pass
