# SPDX-License-Identifier: Apache-2.0
# Waiting in Subscription.next() / iteration: SIGINT ends a wait with
# KeyboardInterrupt (the latency is printed, not asserted: the machine is
# shared), the GIL is released while waiting (another Python thread does
# the work that ends the wait), other threads' requests on the same
# connection are answered while one thread waits, and the daemon going
# away (SIGKILL, or SIGTERM after flushing the open batches) ends
# iteration with daqiri.Error ENOTCONN, never a hang.
import errno
import gc
import os
import signal
import threading
import time

import numpy as np
import pytest

import daqiri
from dqtest import ELEMS, HANG_GUARD, PPB, STREAM, wait_until

CHILD_WAITER = r"""
import signal, sys, time, daqiri
# Python leaves SIGINT alone when it started ignored (a background job of
# a non-interactive shell, as make may run us): take it in any case
signal.signal(signal.SIGINT, signal.default_int_handler)
how = sys.argv[2]
d = daqiri.connect(sys.argv[1])
sub = d.subscribe("sensor0/sensor_tensor")
inside = False
try:
    print("ready", flush=True)
    inside = True
    if how == "next":
        t = sub.next()
    else:
        for t in sub:
            break
    inside = False
    print("returned", t, flush=True)
except KeyboardInterrupt:
    now = time.monotonic_ns()
    print("KeyboardInterrupt inside=%s at=%d" % (inside, now), flush=True)
    # the subscription is still usable after the interrupted wait
    print("after", sub.next(timeout=0), flush=True)
"""


def _sleeping(pid):
    """The process's main thread is asleep (in the module's wait: nothing
    else in the child sleeps between its ready line and the wait)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "S"
    except OSError:
        return False


@pytest.mark.parametrize("how", ["next", "iter"])
def test_sigint_interrupts_wait(daemon, child_py, how):
    child = child_py(CHILD_WAITER, daemon.sock, how)
    child.expect(r"^ready$")
    wait_until(lambda: _sleeping(child.pid), "the child asleep in its wait")
    t0 = time.monotonic_ns()
    os.kill(child.pid, signal.SIGINT)
    rc = child.wait()
    out, err = child.output()
    assert rc == 0, f"child exit {rc}:\n{out}{err}"
    m = None
    for line in out.splitlines():
        if line.startswith("KeyboardInterrupt"):
            m = line
    assert m is not None, f"no KeyboardInterrupt:\n{out}{err}"
    assert "inside=True" in m, m
    at = int(m.rsplit("at=", 1)[1])
    print(f"SIGINT -> KeyboardInterrupt in {(at - t0) / 1e6:.1f} ms "
          f"(issue: within 100 ms; not asserted)")
    assert "after None" in out, f"subscription broken after SIGINT:\n{out}"


def test_wait_releases_gil(daemon):
    """One thread waits in next(); the tensor that ends its wait is sent
    only after another Python thread has done many GIL switch intervals'
    worth of pure-Python work. With the GIL held by the wait, that work
    could not be done, nothing would be sent and next() would return None
    at its (hang-guard) timeout."""
    n = 3_000_000
    with daqiri.connect(daemon.sock) as d:
        sub = d.subscribe(STREAM)
        daemon.wait_served()
        entering = threading.Event()
        result = {}
        counter = [0]

        def waiter():
            entering.set()
            try:
                result["t"] = sub.next(timeout=HANG_GUARD)
                result["counter"] = counter[0]
            except BaseException as e:
                result["exc"] = e

        def worker():
            entering.wait(HANG_GUARD)
            for _ in range(n):
                counter[0] += 1
            result["sim"] = daemon.sim("--batches", 1)

        th = [threading.Thread(target=waiter, daemon=True),
              threading.Thread(target=worker, daemon=True)]
        for t in th:
            t.start()
        for t in th:
            t.join(HANG_GUARD * 2)
            assert not t.is_alive(), "a thread hung"
        assert "exc" not in result, result.get("exc")
        t = result["t"]
        assert t is not None, \
            "next() returned no tensor: the other thread could not run " \
            "while it waited (GIL held?)"
        assert result["counter"] == n
        assert t.complete and t.present.sum() == PPB
        t.release()


def test_requests_run_while_another_thread_waits(daemon):
    """The connection's lock is not held for a whole wait: while one
    thread waits in next() (no traffic, a timeout beyond the askers' hang
    guard), other threads' requests on the same connection are answered,
    and concurrent requests each get their own reply."""
    with daqiri.connect(daemon.sock) as d:
        sub = d.subscribe(STREAM)
        daemon.wait_served()
        result = {}

        def waiter():
            try:
                result["t"] = sub.next(timeout=3 * HANG_GUARD)
            except BaseException as e:
                result["exc"] = e

        w = threading.Thread(target=waiter, daemon=True)
        w.start()
        errors = []
        done = []

        lat = []

        def asker(k):
            try:
                for _ in range(4):
                    t0 = time.monotonic()
                    assert d.status()["pid"] == daemon.pid
                    lat.append(time.monotonic() - t0)
                    assert [s["name"] for s in d.streams()][0] == STREAM
                    assert any(c["stream"] == STREAM
                               for c in d.consumers())
                    done.append(k)
            except BaseException as e:
                errors.append(e)

        askers = [threading.Thread(target=asker, args=(k,), daemon=True)
                  for k in range(3)]
        try:
            for a in askers:
                a.start()
            for a in askers:
                a.join(HANG_GUARD)
            hung = sum(a.is_alive() for a in askers)
            if lat:
                print(f"status() beside a waiting thread: slowest "
                      f"{max(lat) * 1e3:.0f} ms of {len(lat)} (not asserted)")
            assert not hung, \
                f"{hung} of 3 threads' requests got no answer in " \
                f"{HANG_GUARD:.0f} s while another thread waited in " \
                f"next() on the connection ({len(done)} of 12 rounds done)"
            assert not errors, errors
            # every request was answered while the waiter still waited
            assert w.is_alive() and not result, \
                f"the wait ended before the requests were done: {result}"
        finally:
            # end the wait with a tensor (whatever happened above), so
            # that nothing stays blocked behind it
            if w.is_alive():
                daemon.sim("--batches", 1)
                w.join(HANG_GUARD)
            for a in askers:
                a.join(HANG_GUARD)
        assert not w.is_alive()
        assert "exc" not in result, result.get("exc")
        assert result["t"] is not None
        result["t"].release()


def _iterate(sub, how, out):
    """Consume until the end; record what ended it."""
    try:
        if how == "iter":
            for t in sub:
                out["tensors"].append((t.seq, t.batch_id, t.flags,
                                       t.present))
                t.release()
            out["end"] = "StopIteration"
        else:
            while True:
                t = sub.next()
                if t is None:
                    out["end"] = "None"
                    return
                out["tensors"].append((t.seq, t.batch_id, t.flags,
                                       t.present))
                t.release()
    except BaseException as e:
        out["end"] = e


@pytest.mark.asan
@pytest.mark.parametrize("how,busy", [("iter", False), ("next", False),
                                      ("next", True)])
def test_daemon_killed_ends_iteration_enotconn(daemon, how, busy):
    with daqiri.connect(daemon.sock) as d:
        # reconnect=False: without it the library would wait for a new
        # daemon (test_restart.py)
        sub = d.subscribe(STREAM, busy_poll=busy, max_held=4,
                          reconnect=False)
        daemon.wait_served()
        # one tensor held across the daemon's death: it stays readable
        daemon.sim("--batches", 3)
        held = sub.next(timeout=HANG_GUARD)
        assert held is not None
        arr = held.numpy()
        out = {"tensors": []}
        th = threading.Thread(target=_iterate, args=(sub, how, out),
                              daemon=True)
        th.start()
        wait_until(lambda: len(out["tensors"]) == 2 or "end" in out,
                   "the other two tensors")
        assert "end" not in out, out["end"]
        daemon.signal(signal.SIGKILL)
        th.join(HANG_GUARD)
        assert not th.is_alive(), "iteration hung after the daemon died"
        e = out["end"]
        assert isinstance(e, daqiri.Error), f"ended with {e!r}"
        assert e.errno == errno.ENOTCONN, e
        assert [s for s, _, _, _ in out["tensors"]] == [1, 2]
        # the held tensor's memory is still mapped and readable
        assert arr.shape == (PPB, ELEMS) and np.isfinite(arr).all()
        with pytest.raises(daqiri.Error) as e2:
            sub.next(timeout=0)
        assert e2.value.errno == errno.ENOTCONN
        del arr, held
        gc.collect()


@pytest.mark.asan
def test_daemon_stopped_flushes_then_enotconn(make_daemon):
    daemon = make_daemon()
    # no deadline before the stop: what is open at SIGTERM is flushed
    daemon.make_config(("timeout_us: 100000 ", "timeout_us: 60000000 "))
    daemon.start()
    n = 3
    with daqiri.connect(daemon.sock) as d:
        sub = d.subscribe(STREAM, reconnect=False)
        daemon.wait_served()
        out = {"tensors": []}
        th = threading.Thread(target=_iterate, args=(sub, "iter", out),
                              daemon=True)
        th.start()
        # 5 % loss: every batch of 128 loses a packet, none completes
        res = daemon.sim("--batches", n, "--seed", 2, "--loss", 0.05)
        assert sorted(res.missing) == list(range(n)), res.missing
        wait_until(lambda: (lambda s: s["interfaces"][0]["rx_packets"]
                            == res.sent and
                            s["streams"][0]["handoff"]["open_bufs"] == n)(
            daemon.ctl("stats")), f"every packet received, {n} batches open")
        assert out["tensors"] == [] and "end" not in out
        daemon.signal(signal.SIGTERM)
        th.join(HANG_GUARD)
        assert not th.is_alive(), "iteration hung after SIGTERM"
        assert daemon.wait_exit() == 0
        e = out["end"]
        assert isinstance(e, daqiri.Error) and e.errno == errno.ENOTCONN, \
            f"ended with {e!r}"
        assert [b for _, b, _, _ in out["tensors"]] == list(range(n))
        for s, b, flags, present in out["tensors"]:
            assert flags & daqiri.FLUSH, f"seq {s}: flags {flags:#x}"
            assert set(np.flatnonzero(~present).tolist()) == res.missing[b]
