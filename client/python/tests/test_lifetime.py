# SPDX-License-Identifier: Apache-2.0
# Tensor lifetime: a view (ndarray, np.from_dlpack array, memoryview,
# torch tensor) outliving its Tensor object keeps the buffer held, as the
# daemon's consumer counters and sub.held show, and dropping it gives the
# buffer back; release() twice is daqiri.Error EINVAL, not a crash, and
# numpy() after it an error; a subscription closed under a live array
# keeps its mapping until the array goes; a consumer process killed while
# it holds buffers gives them back; one that never releases meets
# max_held, sees overruns and carries on.
import errno
import gc
import os
import signal
import threading
import warnings

import numpy as np
import pytest

import daqiri
from dqtest import (ELEMS, HANG_GUARD, NBUFS, PPB, STREAM, check_fp16_tensor,
                    pattern_fp16_bits, wait_until)

NO_HOLD_TIMEOUT = ("hold_timeout_ms: 10000 ", "hold_timeout_ms: 0 ")


@pytest.fixture
def hdaemon(make_daemon):
    """A daemon that never ends a subscription for holding a buffer."""
    d = make_daemon()
    d.make_config(NO_HOLD_TIMEOUT)
    return d.start()


def _next(sub):
    t = sub.next(timeout=HANG_GUARD)
    assert t is not None, f"no tensor within {HANG_GUARD:.0f} s"
    return t


def _view(t, how):
    if how == "numpy":
        return t.numpy()
    if how == "dlpack":
        return np.from_dlpack(t)
    if how == "memoryview":
        return memoryview(t)
    import torch
    return torch.from_dlpack(t)


def _bits(v, how):
    if how == "memoryview":
        return np.frombuffer(v, dtype=np.uint16).reshape(PPB, ELEMS)
    if how == "torch":
        import torch
        return v.view(torch.int16).numpy().view(np.uint16)
    return v.view(np.uint16)


@pytest.mark.parametrize("how", [
    pytest.param("numpy", marks=pytest.mark.asan),
    pytest.param("dlpack", marks=pytest.mark.asan),
    pytest.param("memoryview", marks=pytest.mark.asan),
    "torch"])
def test_view_outliving_tensor_keeps_buffer(hdaemon, how):
    if how == "torch":
        pytest.importorskip("torch")
    with daqiri.connect(hdaemon.sock) as d:
        sub = d.subscribe(STREAM)
        hdaemon.wait_served()
        sid = sub.info["sub_id"]
        hdaemon.sim("--batches", 2)            # two complete tensors
        t1, t2 = _next(sub), _next(sub)
        assert sub.held == 2
        hdaemon.wait_consumer(lambda c: c["held"] == 2, "2 held",
                              sub_id=sid)
        keep = _view(t1, how)
        del t1
        gc.collect()
        assert sub.held == 2, "the Tensor went with a view still alive"
        # A release after the Tensor's death, through the same ring: once
        # the daemon has seen it, it would have seen one of t1 before.
        t2.release()
        assert sub.held == 1
        c = hdaemon.wait_consumer(lambda c: c["released"] >= 1,
                                  "t2's release seen", sub_id=sid)
        assert c["released"] == 1 and c["held"] == 1, \
            f"the view's buffer was given back under it: {c}"
        # (the stream counters are a snapshot the worker refreshes: wait
        # for it to show the release)
        hb, = wait_until(lambda: (lambda n: (n,) if n != 2 else None)(
            hdaemon.stream_stats()["handoff"]["held_bufs"]),
            "the stream counters showing t2's release")
        assert hb == 1, f"the view's buffer is not held: held_bufs {hb}"
        # and the view still reads the tensor (seq 0, complete)
        check_fp16_tensor(_bits(keep, how), np.ones(PPB, bool),
                          pattern_fp16_bits(), f"kept {how} view")
        del keep
        gc.collect()
        assert sub.held == 0
        hdaemon.wait_consumer(lambda c: c["released"] == 2 and
                              c["held"] == 0, "the view's buffer back",
                              sub_id=sid)
        wait_until(lambda: hdaemon.stream_stats()["handoff"]["held_bufs"]
                   == 0, "the stream's buffers all back")


@pytest.mark.asan
def test_release_twice_is_an_error(daemon):
    with daqiri.connect(daemon.sock) as d:
        sub = d.subscribe(STREAM)
        daemon.wait_served()
        sid = sub.info["sub_id"]
        daemon.sim("--batches", 3)
        t = _next(sub)
        assert not t.released
        t.release()
        assert t.released and sub.held == 0
        with pytest.raises(daqiri.Error) as e:
            t.release()
        assert e.value.errno == errno.EINVAL
        with pytest.raises(daqiri.Error) as e:
            t.numpy()
        assert e.value.errno == errno.EINVAL
        # `with` releases at its end; a release after it is an error too
        t2 = _next(sub)
        with t2:
            assert sub.held == 1
            t2.numpy()
        assert t2.released and sub.held == 0
        with pytest.raises(daqiri.Error) as e:
            t2.release()
        assert e.value.errno == errno.EINVAL
        # the daemon saw each release once, the subscription is fine
        c = daemon.wait_consumer(lambda c: c["released"] == 2,
                                 "two releases", sub_id=sid)
        # (the third tensor is delivered: held by us, not popped yet)
        assert c["held"] == c["delivered"] - 2 and c["state"] == "active", c
        del t, t2
        gc.collect()
        with _next(sub) as t3:
            assert t3.numpy().shape == (PPB, ELEMS)


@pytest.mark.asan
@pytest.mark.parametrize("closing", ["subscription", "connection"])
def test_closed_subscription_keeps_mapping_for_live_array(hdaemon, closing):
    """sub.close(), or the connection's close (which closes its
    subscriptions), with an array of a tensor alive: the mapping and the
    buffer stay until the array goes, then the subscription ends."""
    d = daqiri.connect(hdaemon.sock)
    try:
        sub = d.subscribe(STREAM)
        hdaemon.wait_served()
        sid = sub.info["sub_id"]
        hdaemon.sim("--batches", 1)
        t = _next(sub)
        a = t.numpy()
        del t
        if closing == "subscription":
            sub.close()
        else:
            d.close()
            assert d.closed
        assert sub.closed
        gc.collect()
        # the array still reads the mapping (under ASan, or as a fault,
        # an unmapped one would show) and the buffer is still held
        check_fp16_tensor(a.view(np.uint16), np.ones(PPB, bool),
                          pattern_fp16_bits(), f"array after {closing} close")
        c = hdaemon.consumer(sid)
        assert c is not None and c["held"] == 1, \
            f"subscription ended under a live array: {c}"
        del a
        gc.collect()
        wait_until(lambda: hdaemon.consumer(sid) is None,
                   "the subscription gone with its last array")
        wait_until(lambda: hdaemon.stream_stats()["handoff"]["held_bufs"]
                   == 0, "its buffer back")
    finally:
        d.close()


CHILD_HOLDER = r"""
import sys, daqiri
held = int(sys.argv[2])
d = daqiri.connect(sys.argv[1])
sub = d.subscribe("sensor0/sensor_tensor", max_held=held)
print("subscribed", sub.info["sub_id"], flush=True)
keep = []
said = False
while True:                         # the loop the parent kills us in
    t = sub.next(timeout=0.05)
    if t is not None:
        keep.append((t, t.numpy()))
    if len(keep) == held and not said:
        print("held", sub.held, flush=True)
        said = True
"""


def test_killed_consumer_gives_buffers_back(hdaemon, child_py):
    held = 4
    child = child_py(CHILD_HOLDER, hdaemon.sock, str(held))
    child.expect(r"^subscribed \d+")
    hdaemon.wait_served()
    hdaemon.sim("--batches", held + 2)
    assert child.expect(r"^held (\d+)").group(1) == str(held)
    c = hdaemon.wait_consumer(lambda c: c["held"] == held,
                              f"the child holding {held}", pid=child.pid)
    assert c["released"] == 0
    hs = hdaemon.wait_published(held + 2)
    assert hs["held_bufs"] == held and hs["free_bufs"] == NBUFS - held, hs
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait() == -signal.SIGKILL
    wait_until(lambda: (lambda h: h["held_bufs"] == 0 and
                        h["free_bufs"] == NBUFS)(
        hdaemon.stream_stats()["handoff"]), "the killed child's buffers back")
    wait_until(lambda: hdaemon.consumer(pid=child.pid) is None,
               "the killed child's subscription gone")


@pytest.mark.asan
def test_never_releasing_consumer_overruns(hdaemon):
    held, n = 4, 12
    with daqiri.connect(hdaemon.sock) as d:
        sub = d.subscribe(STREAM, max_held=held)
        hdaemon.wait_served()
        sid = sub.info["sub_id"]
        assert sub.info["max_held"] == held
        hdaemon.sim("--batches", n)
        hdaemon.wait_published(n)
        hdaemon.wait_consumer(lambda c: c["delivered"] == held and
                              c["overruns"] == n - held,
                              "max_held delivered, the rest overruns",
                              sub_id=sid)
        keep = []
        while True:
            t = sub.next(timeout=0)
            if t is None:
                break
            keep.append(t)
            assert len(keep) <= held, "more tensors than max_held"
        assert [t.seq for t in keep] == list(range(held))
        assert sub.held == held
        c = hdaemon.consumer(sid)
        assert c["held"] == held and c["overruns"] == n - held, c
        assert c["state"] == "active"
        for t in keep:
            t.release()
        assert sub.held == 0
        hdaemon.wait_consumer(lambda c: c["released"] == held and
                              c["held"] == 0, "all released", sub_id=sid)
        # it carries on: new tensors arrive again
        hdaemon.sim("--batches", 3)
        got = []
        for _ in range(3):
            with _next(sub) as t:
                got.append(t.batch_id)
        assert got == [0, 1, 2]
        assert hdaemon.consumer(sid)["overruns"] == n - held


@pytest.mark.asan
def test_daemon_ending_subscription_raises_in_iteration(make_daemon):
    """A subscription the daemon ends (here: a buffer held longer than
    hold_timeout_ms) ends `for t in sub` with daqiri.Error ESHUTDOWN and
    the daemon's reason, not a quiet StopIteration that looks like the
    end of the data; next() raises the same."""
    daemon = make_daemon()
    daemon.make_config(("hold_timeout_ms: 10000 ", "hold_timeout_ms: 200 "))
    daemon.start()
    with daqiri.connect(daemon.sock) as d:
        sub = d.subscribe(STREAM)
        daemon.wait_served()
        daemon.sim("--batches", 2)
        t1 = _next(sub)                     # held past the timeout
        wait_until(lambda: daemon.stream_stats()["handoff"]
                   ["subs_held_too_long"] == 1, "the subscription ended")
        out = {}

        def drain():
            rest = []
            try:
                for t in sub:
                    rest.append(t.seq)
            except BaseException as e:
                out["exc"] = e
            out["rest"] = rest
        th = threading.Thread(target=drain, daemon=True)
        th.start()
        th.join(HANG_GUARD)
        assert not th.is_alive(), "iteration hung on an ended subscription"
        e0 = out.get("exc")
        assert isinstance(e0, daqiri.Error), f"iteration ended with {e0!r}"
        assert e0.errno == errno.ESHUTDOWN, e0
        assert "held too long" in e0.strerror, e0.strerror
        assert out["rest"] in ([], [1]), out["rest"]
        with pytest.raises(daqiri.Error) as e:
            sub.next(timeout=0)
        assert e.value.errno == errno.ESHUTDOWN
        assert "held too long" in e.value.strerror, e.value.strerror
        # the held tensor is still readable, and dropping it is no crash
        assert t1.numpy().shape == (PPB, ELEMS)
        del t1
        gc.collect()
        wait_until(lambda: daemon.stream_stats()["handoff"]["held_bufs"]
                   == 0, "its buffers back to the stream")


@pytest.mark.asan
def test_references_keep_connection_and_subscription(daemon):
    """No Python reference to the Connection or the Subscription but
    through what was made of them: they stay usable and the array stays
    readable; dropping the last array ends the subscription."""
    sub = daqiri.connect(daemon.sock).subscribe(STREAM)
    daemon.wait_served()
    sid = sub.info["sub_id"]
    gc.collect()
    daemon.sim("--batches", 1)
    t = _next(sub)
    a = t.numpy()
    del t, sub
    gc.collect()
    check_fp16_tensor(a.view(np.uint16), np.ones(PPB, bool),
                      pattern_fp16_bits(), "array of a dropped subscription")
    assert daemon.consumer(sid)["held"] == 1
    del a
    gc.collect()
    wait_until(lambda: daemon.consumer(sid) is None,
               "the subscription gone with the last reference")
    wait_until(lambda: daemon.stream_stats()["handoff"]["held_bufs"] == 0,
               "its buffer back")
    # and the connection closed: daqirictl's own is the only one left
    wait_until(lambda: daemon.ctl("status")["control"]["current"] == 1,
               "the connection closed with its last reference")


def test_pinned_at_max_held_warns_once(daemon):
    """Keeping every tensor (arrays in a list) pins a subscription at
    max_held: the daemon delivers it no more. The wait says so once, with
    what to do, and not again while nothing changes; once a tensor is
    released delivery goes on."""
    with daqiri.connect(daemon.sock) as d:
        sub = d.subscribe(STREAM, max_held=2)
        daemon.wait_served()
        daemon.sim("--batches", 4)
        kept = [sub.next(timeout=HANG_GUARD).numpy() for _ in range(2)]
        with pytest.warns(RuntimeWarning, match=r"holds 2 tensors, its "
                          r"max_held.*t\.release\(\)"):
            assert sub.next(timeout=0.2) is None
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert sub.next(timeout=0.1) is None   # said once only
        del kept
        gc.collect()
        daemon.sim("--batches", 1)
        t = sub.next(timeout=HANG_GUARD)
        assert t is not None
        t.release()
