#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# plot_tensor.py: a picture of one tensor, its missing slots marked. Each
# row is a slot (a packet), each column an element; a row whose packet
# never arrived holds the stream's fill (zeros, or NaN), which a picture
# alone cannot tell from data: those rows are struck through in red and
# counted in the title. Live (the next tensor of a stream), or from a
# tensor `daqiri-consume --save DIR` wrote (its .present.npy beside it).
# Needs matplotlib (Debian: python3-matplotlib); writes a PNG, no display.
import argparse
import sys

import numpy as np

p = argparse.ArgumentParser(description="Draw one tensor as a PNG, its "
                            "missing slots marked.")
p.add_argument("-s", "--socket", help="daqirid's control socket (default: "
               "$DAQIRI_SOCKET, else the daemon's default)")
p.add_argument("--from", dest="src", metavar="FILE.npy",
               help="a tensor daqiri-consume --save wrote, instead of a "
               "live one")
p.add_argument("-o", "--output", default="tensor.png",
               help="the PNG to write (default: %(default)s)")
p.add_argument("--timeout", type=float, default=30.0,
               help="seconds to wait for a live tensor (default: "
               "%(default)s)")
p.add_argument("stream", nargs="?", default="sensor0/sensor_tensor",
               help="IFACE/NAME (default: %(default)s)")
a = p.parse_args()

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("plot_tensor.py: needs matplotlib (apt-get install "
             "python3-matplotlib)")

if a.src:
    x = np.load(a.src)
    present = np.load(a.src[:-len(".npy")] + ".present.npy")
    title = a.src.rsplit("/", 1)[-1]
else:
    import daqiri
    try:
        with daqiri.connect(a.socket) as d, d.subscribe(a.stream) as sub:
            t = sub.next(timeout=a.timeout)
            if t is None:
                sys.exit(f"plot_tensor.py: no tensor of {a.stream} within "
                         f"{a.timeout:g} s (daqirictl doctor says why)")
            with t:                     # copies: t goes back at the end
                x = t.numpy().copy()
                present = t.present
                title = f"{a.stream}: seq {t.seq}, batch {t.batch_id}"
    except daqiri.Error as e:
        sys.exit(f"plot_tensor.py: {e.strerror}")

missing = np.flatnonzero(~present)
img = x.astype(np.float32)
fig, ax = plt.subplots(figsize=(10, 5))
im = ax.imshow(img, aspect="auto", interpolation="nearest", cmap="viridis")
for r in missing:                       # a missing slot: its row struck out
    ax.axhspan(r - 0.5, r + 0.5, color="red", alpha=0.6, lw=0)
ax.set_xlabel("element")
ax.set_ylabel("slot (packet)")
ax.set_title(f"{title}: {len(present) - len(missing)} of {len(present)} "
             f"slots arrived" + (f", {len(missing)} missing (red)"
                                 if len(missing) else ""))
fig.colorbar(im, ax=ax, label=str(x.dtype))
fig.savefig(a.output, dpi=80, bbox_inches="tight")
print(f"{a.output}: {x.shape[0]} x {x.shape[1]} {x.dtype}, "
      f"{len(missing)} missing slots", flush=True)
