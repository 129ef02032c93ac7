# SPDX-License-Identifier: Apache-2.0
"""bench_python: the Python side of scripts/bench-python.sh, the `daqiri`
module measured against the C consumer (tests/bench/bench_e2e.c consume,
tests/bench/bench_handoff.c drain) on the same stream in the same run.

  consume STREAM   the throughput consumer: every tensor is taken with
                   next(), viewed with numpy() and torch.from_dlpack(), and
                   given back by leaving `with t:`, as an application
                   would; runs until SIGTERM/SIGINT, then prints one
                   "pyconsume ..." line with what it received, its
                   overrun counter from the daemon (Connection.consumers())
                   and what numpy() + from_dlpack + release took per
                   tensor there (right after a wake-up: caches cold).
  overhead STREAM  the per-tensor cost with no wait in it: sleep --fill-ms
                   so that tensors (up to max_held) pile up on the ring, then
                   time each next(timeout=0) + numpy() + torch.from_dlpack()
                   + release (the `with` exit and dropping the views) until
                   the ring is empty, again until --samples; prints one
                   "pyoverhead ..." line: the median of those totals and
                   of each step (time.perf_counter_ns, whose own cost is
                   printed as clock_ns; five stamps per tensor). The C
                   baseline, bench_handoff drain, does the same with
                   daqiri_next(0) + daqiri_release().
  check            exit 0 when daqiri, numpy and torch import, else print
                   what is missing and exit 1.

Always run with /usr/bin/python3 (Debian's, which has numpy and torch) and
PYTHONPATH=build/python.
"""
import argparse
import os
import signal
import sys
import time

stop = False


def on_signal(signum, frame):
    global stop
    stop = True


def quantile(v, q):
    """The q-quantile (0..1) of sorted v, nearest rank (as bench_handoff)."""
    if not v:
        return 0
    return v[min(int(q * len(v)), len(v) - 1)]


def my_counters(d, sub):
    """This subscription's entry in the daemon's consumers reply, or {}."""
    sid = sub.info["sub_id"]
    for c in d.consumers():
        if c.get("sub_id") == sid and c.get("pid") == os.getpid():
            return c
    return {}


def cmd_check(args):
    missing = []
    for name, fix in (("daqiri", "make python builds it into build/python"),
                      ("numpy", "apt install python3-numpy"),
                      ("torch", "apt install python3-torch")):
        try:
            __import__(name)
        except ImportError as e:
            missing.append("%s (%s; %s)" % (name, e, fix))
    if missing:
        print("cannot import " + ", ".join(missing))
        return 1
    import daqiri
    import numpy
    import torch
    print("daqiri %s from %s, numpy %s, torch %s, python %s" % (
        daqiri.__version__, daqiri.__file__, numpy.__version__,
        torch.__version__, sys.version.split()[0]))
    return 0


def cmd_consume(args):
    import daqiri
    import torch

    from_dlpack = torch.from_dlpack
    clock = time.perf_counter_ns
    n = gaps = partial = 0
    last_seq = None
    proc = []   # ns of numpy() + from_dlpack + release, per tensor
    end = "signal"
    with daqiri.connect(args.socket) as d:
        sub = d.subscribe(args.stream, max_held=args.max_held)
        print("ready sub_id=%d" % sub.info["sub_id"], flush=True)
        nxt = sub.next
        try:
            while not stop:
                t = nxt(0.1)
                if t is None:
                    continue
                if last_seq is not None and t.seq != last_seq + 1:
                    gaps += 1
                last_seq = t.seq
                partial += not t.complete
                t0 = clock()
                with t:
                    a = t.numpy()
                    x = from_dlpack(t)
                del a, x, t
                proc.append(clock() - t0)
                n += 1
        except daqiri.Error as e:
            end = "error(%s)" % e
        me = my_counters(d, sub)
        sub.close()
    proc.sort()
    print("pyconsume tensors=%d seq_gaps=%d partial=%d delivered=%s "
          "overruns=%s proc_p50_us=%.3f proc_p99_us=%.3f proc_max_us=%.3f "
          "end=%s" % (
              n, gaps, partial, me.get("delivered", "?"),
              me.get("overruns", "?"), quantile(proc, 0.5) / 1e3,
              quantile(proc, 0.99) / 1e3, (proc[-1] if proc else 0) / 1e3,
              end))
    return 0 if n > 0 else 1


def cmd_overhead(args):
    import daqiri
    import torch

    from_dlpack = torch.from_dlpack
    clock = time.perf_counter_ns
    total, s_next, s_numpy, s_dlpack, s_release = [], [], [], [], []
    fills = idle_ms = 0
    end = "done"
    with daqiri.connect(args.socket) as d:
        sub = d.subscribe(args.stream, max_held=args.max_held)
        print("ready sub_id=%d max_held=%d" % (sub.info["sub_id"],
              sub.info["max_held"]), flush=True)
        nxt = sub.next
        try:
            while (not stop and len(total) < args.samples and
                   idle_ms < args.idle_ms):
                got = 0
                time.sleep(args.fill_ms / 1e3)
                while len(total) < args.samples:
                    t0 = clock()
                    t = nxt(0)
                    if t is None:
                        break
                    t1 = clock()
                    with t:
                        a = t.numpy()
                        t2 = clock()
                        x = from_dlpack(t)
                        t3 = clock()
                    del a, x, t
                    t4 = clock()
                    total.append(t4 - t0)
                    s_next.append(t1 - t0)
                    s_numpy.append(t2 - t1)
                    s_dlpack.append(t3 - t2)
                    s_release.append(t4 - t3)
                    got += 1
                fills += got > 0
                idle_ms = 0 if got else idle_ms + args.fill_ms
        except daqiri.Error as e:
            end = "error(%s)" % e
        sub.close()
    if len(total) < args.samples and end == "done":
        end = "idle"
    c = []
    for _ in range(1000):
        t0 = clock()
        c.append(clock() - t0)
    c.sort()
    for v in (total, s_next, s_numpy, s_dlpack, s_release):
        v.sort()
    print("pyoverhead samples=%d fills=%d p50_us=%.3f p90_us=%.3f "
          "p99_us=%.3f next_us=%.3f numpy_us=%.3f dlpack_us=%.3f "
          "release_us=%.3f clock_ns=%d end=%s" % (
              len(total), fills, quantile(total, 0.5) / 1e3,
              quantile(total, 0.9) / 1e3, quantile(total, 0.99) / 1e3,
              quantile(s_next, 0.5) / 1e3, quantile(s_numpy, 0.5) / 1e3,
              quantile(s_dlpack, 0.5) / 1e3,
              quantile(s_release, 0.5) / 1e3, quantile(c, 0.5), end))
    return 0 if total else 1


def main():
    p = argparse.ArgumentParser(
        prog="bench_python.py",
        description="Python side of scripts/bench-python.sh")
    p.add_argument("-s", "--socket", default=None,
                   help="control socket (default $DAQIRI_SOCKET or the "
                   "module's DEFAULT_SOCKET)")
    sp = p.add_subparsers(dest="cmd", required=True)
    sp.add_parser("check")
    c = sp.add_parser("consume")
    c.add_argument("stream")
    c.add_argument("--max-held", type=int, default=0)
    o = sp.add_parser("overhead")
    o.add_argument("stream")
    o.add_argument("--max-held", type=int, default=0)
    o.add_argument("--samples", type=int, default=3000)
    o.add_argument("--fill-ms", type=int, default=20)
    o.add_argument("--idle-ms", type=int, default=30000,
                   help="give up after this long of fills that found nothing")
    args = p.parse_args()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return {"check": cmd_check, "consume": cmd_consume,
            "overhead": cmd_overhead}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
