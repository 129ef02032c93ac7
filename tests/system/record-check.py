#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# Checks of test 54 on what daqiri-record wrote to HDF5, with h5py (run
# with Debian's /usr/bin/python3). Subcommands:
#   verify FILE SIMOUT N  - N tensors, seq 0..N-1 in order, every element of
#                           every present slot is the simulator's pattern,
#                           every missing slot zero, and present is False
#                           exactly at the packets the simulator dropped
#                           (its "dropped seq= batch= slot=" lines)
#   prefix FILE           - a file whose writer was killed: it opens (SWMR
#                           read), and its first n tensors (n = the shortest
#                           dataset) are complete and correct; prints n
#   window TRIG FULL      - TRIG (pre-trigger) holds exactly the tensors of
#                           FULL (everything, recorded beside it) whose
#                           first_rx_ns lies in [T - pre, T + post], same bytes
import re
import sys

import h5py
import numpy as np

PER_TENSOR = ("seq", "batch_id", "flags", "first_rx_ns", "publish_ns",
              "packets_received")


def fail(msg):
    print("record-check: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def pattern(ppb, elems, dtype):
    s = np.arange(ppb, dtype=np.int64)[:, None]
    e = np.arange(elems, dtype=np.int64)[None, :]
    return (((3 * s + e) % 15) - 7).astype(dtype)


def tensors(f):
    return min([f["data"].shape[0], f["present"].shape[0]] +
               [f[k].shape[0] for k in PER_TENSOR])


def check_elements(f, n):
    ppb = int(f.attrs["packets_per_batch"])
    elems = int(f.attrs["elems_per_slot"])
    data = f["data"]
    want = pattern(ppb, elems, data.dtype)
    present = f["present"][:n]
    for i in range(n):
        t = data[i]
        p = present[i]
        if not np.array_equal(t[p], want[p]):
            bad = np.argwhere(t[p] != want[p])[0]
            fail("tensor %d: element %s differs from the pattern" % (i, bad))
        if np.any(t[~p] != 0):
            fail("tensor %d: a missing slot is not zero-filled" % i)
    return int(present.sum()) * elems


def verify(path, simout, n):
    f = h5py.File(path, "r")
    if f["data"].dtype != np.float16:
        fail("data is %s, not float16" % f["data"].dtype)
    if f["present"].dtype != np.bool_:
        fail("present is %s, not bool" % f["present"].dtype)
    got = tensors(f)
    if got != n:
        fail("%d tensors, want %d" % (got, n))
    seq = f["seq"][:n]
    if not np.array_equal(seq, np.arange(n)):
        fail("seq is not 0..%d in order: %s" % (n - 1, seq))
    ppb = int(f.attrs["packets_per_batch"])
    want = np.ones((n, ppb), dtype=bool)
    for line in open(simout):
        m = re.match(r"dropped seq=\d+ batch=(\d+) slot=(\d+)", line)
        if m:
            want[int(m.group(1)), int(m.group(2))] = False
    if not np.array_equal(f["batch_id"][:n], np.arange(n)):
        fail("batch_id is not the simulator's batch numbers")
    present = f["present"][:n]
    if not np.array_equal(present, want):
        diff = np.argwhere(present != want)[0]
        fail("present differs from the simulator's drops at (tensor, "
             "slot) %s" % diff)
    pr = f["packets_received"][:n]
    if not np.array_equal(pr, present.sum(axis=1)):
        fail("packets_received differs from present's counts")
    v = check_elements(f, n)
    print("verified %d tensors, %d elements, %d missing slots as the "
          "simulator dropped" % (n, v, int((~present).sum())))


def prefix(path):
    f = h5py.File(path, "r", swmr=True)
    n = tensors(f)
    if n < 1:
        fail("no complete tensor in the file")
    seq = f["seq"][:n]
    if not np.array_equal(seq, np.arange(seq[0], seq[0] + n)):
        fail("seq not contiguous: %s" % seq)
    check_elements(f, n)
    print(n)


def window(trig, full):
    t = h5py.File(trig, "r")
    a = h5py.File(full, "r")
    T = int(t.attrs["trigger_ns"])
    lo = T - int(t.attrs["pre_trigger_ns"])
    hi = T + int(t.attrs["post_ns"])
    rx = a["first_rx_ns"][:tensors(a)]
    want = a["seq"][:tensors(a)][(rx >= lo) & (rx <= hi)]
    got = t["seq"][:tensors(t)]
    if len(want) == 0:
        fail("no tensor of the full recording lies in the window")
    if not np.array_equal(got, want):
        fail("the triggered file holds seq %s, the window %s" %
             (list(got), list(want)))
    idx = {int(s): i for i, s in enumerate(a["seq"][:tensors(a)])}
    for i, s in enumerate(got):
        j = idx[int(s)]
        if not (np.array_equal(t["data"][i], a["data"][j]) and
                np.array_equal(t["present"][i], a["present"][j]) and
                t["first_rx_ns"][i] == a["first_rx_ns"][j]):
            fail("seq %d differs between the two files" % s)
    print("window [T-%.3f s, T+%.3f s]: seq %d..%d, %d tensors, as the "
          "full recording" % ((T - lo) / 1e9, (hi - T) / 1e9, got[0],
                              got[-1], len(got)))


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "verify":
        verify(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif len(sys.argv) == 3 and sys.argv[1] == "prefix":
        prefix(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "window":
        window(sys.argv[2], sys.argv[3])
    else:
        fail("usage: record-check.py verify FILE SIMOUT N | prefix FILE | "
             "window TRIG FULL")
