#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# h5_look.py: a look at a recording daqiri-record wrote to HDF5: one
# tensor drawn as an image (a row per slot, a column per element) and,
# beside it, its present mask (which slots arrived); the rows of slots
# that never arrived are struck through in red, so the stream's fill is
# not taken for data. Prints the file's geometry and the tensor's
# descriptor. Reads with h5py (python3-h5py), draws with matplotlib
# (python3-matplotlib, Agg: a PNG, no display). A file whose recorder was
# killed reads too (SWMR): its tensors are those of the shortest dataset.
import argparse
import sys

import numpy as np

PER_TENSOR = ("seq", "batch_id", "flags", "first_rx_ns", "publish_ns",
              "packets_received")

p = argparse.ArgumentParser(description="Draw one tensor of a "
                            "daqiri-record HDF5 file, and its present "
                            "mask, as a PNG.")
p.add_argument("file", help="the .h5 file daqiri-record wrote")
p.add_argument("-i", "--index", type=int, default=0,
               help="which tensor, counted from 0 (negative: from the "
               "end; default: %(default)s)")
p.add_argument("-o", "--output", default="tensor.png",
               help="the PNG to write (default: %(default)s)")
a = p.parse_args()

try:
    import h5py
except ImportError:
    sys.exit("h5_look.py: needs h5py (apt-get install python3-h5py; run "
             "it with /usr/bin/python3)")
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("h5_look.py: needs matplotlib (apt-get install "
             "python3-matplotlib)")

try:
    f = h5py.File(a.file, "r", swmr=True)
except OSError as e:
    sys.exit("h5_look.py: %s: %s" % (a.file, e))
if "data" not in f or "present" not in f:
    sys.exit("h5_look.py: %s: no data and present datasets: not a "
             "daqiri-record file" % a.file)
n = min([f["data"].shape[0], f["present"].shape[0]] +
        [f[k].shape[0] for k in PER_TENSOR if k in f])
if n == 0:
    sys.exit("h5_look.py: %s holds no tensor yet" % a.file)
i = a.index if a.index >= 0 else n + a.index
if not 0 <= i < n:
    sys.exit("h5_look.py: --index %d: the file holds tensors 0..%d"
             % (a.index, n - 1))

at = dict(f.attrs)
x = np.asarray(f["data"][i], dtype=np.float32)   # fp16, bf16: exact
present = np.asarray(f["present"][i], dtype=bool)
print("%s: %s, %d tensors of %d x %d %s (daemon %s)" % (
    a.file, at.get("stream", "?"), n, x.shape[0], x.shape[1],
    at.get("dtype", f["data"].dtype), at.get("daemon_version", "?")))
desc = ", ".join("%s %d" % (k, int(f[k][i])) for k in PER_TENSOR if k in f)
print("tensor %d: %s; %d of %d slots present" % (
    i, desc, int(present.sum()), present.size))
if "trigger_ns" in at:
    print("triggered at %d ns (CLOCK_MONOTONIC), window %.3f s before, "
          "%.3f s after" % (at["trigger_ns"], at["pre_trigger_ns"] / 1e9,
                            at["post_ns"] / 1e9))

fig, (ax, am) = plt.subplots(1, 2, figsize=(11, 5), sharey=True,
                             gridspec_kw={"width_ratios": [12, 1]})
im = ax.imshow(x, aspect="auto", interpolation="nearest", cmap="viridis")
for s in np.flatnonzero(~present):
    ax.axhline(s, color="red", linewidth=1.2)
seq = int(f["seq"][i]) if "seq" in f else i
ax.set_title("%s seq %d: %d of %d slots missing (red)" % (
    at.get("stream", ""), seq, int((~present).sum()), present.size))
ax.set_xlabel("element")
ax.set_ylabel("slot (packet)")
fig.colorbar(im, ax=ax)
am.imshow(present[:, None].astype(np.uint8), aspect="auto",
          interpolation="nearest", cmap="RdYlGn", vmin=0, vmax=1)
am.set_title("present")
am.set_xticks([])
fig.tight_layout()
fig.savefig(a.output, dpi=100)
print("wrote %s" % a.output)
