# SPDX-License-Identifier: Apache-2.0
# Restart-transparent subscriptions (reconnect=True, the default): the
# daemon killed or stopped and started again on the same socket and port;
# the subscription goes on with one RESTART tensor, every element still
# the pattern, a tensor held across the restart reads the same, a changed
# geometry is an ESTALE error naming it, and a daemon that stays away
# longer than reconnect_timeout ends it with ENOTCONN.
import errno
import gc
import signal
import warnings

import numpy as np
import pytest

import daqiri
from dqtest import ELEMS, HANG_GUARD, PPB, STREAM, pattern_fp16_bits, wait_until

WANT = pattern_fp16_bits()


def _check(t):
    """Every element of a complete tensor is the pattern."""
    assert t.complete, f"seq {t.seq}: flags {t.flags:#x}"
    bits = t.numpy().view(np.uint16)
    assert bits.shape == (PPB, ELEMS)
    assert np.array_equal(bits, WANT), f"seq {t.seq}: not the pattern"


def _resubscribed(daemon, sub):
    """Drive the reconnection (the library does it from next()) until the
    new daemon lists our subscription and serves it."""
    def up():
        assert sub.next(timeout=0) is None, "a tensor before any was sent"
        return daemon.consumer() is not None
    wait_until(up, "the subscription made again on the new daemon")
    daemon.wait_served()


@pytest.mark.asan
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_restart_keeps_subscription(daemon, sig):
    with daqiri.connect(daemon.sock) as d:
        sub = d.subscribe(STREAM, max_held=4)
        daemon.wait_served()
        daemon.sim("--batches", 3)
        held = sub.next(timeout=HANG_GUARD)
        _check(held)
        before = held.numpy().copy()
        inst0 = held.instance
        assert inst0 != 0 and not held.flags & daqiri.RESTART
        for _ in range(2):
            t = sub.next(timeout=HANG_GUARD)
            _check(t)
            assert t.instance == inst0 and not t.flags & daqiri.RESTART
            t.release()
        for rnd in range(2):
            daemon.signal(sig)
            daemon.wait_exit()
            daemon.start()
            _resubscribed(daemon, sub)
            daemon.sim("--batches", 3)
            got = [sub.next(timeout=HANG_GUARD) for _ in range(3)]
            for t in got:
                _check(t)
            assert [t.seq for t in got] == [0, 1, 2]
            # exactly one RESTART, on the first tensor after the gap
            assert [bool(t.flags & daqiri.RESTART) for t in got] == \
                [True, False, False]
            inst = got[0].instance
            assert inst not in (0, inst0) and \
                all(t.instance == inst for t in got)
            inst0 = inst
            # accounting of this instance: 3 published, 3 delivered
            daemon.wait_published(3)
            for t in got:
                t.release()
            wait_until(lambda: daemon.consumer()["released"] == 3,
                       "the new daemon's tensors released")
            c = daemon.consumer()
            assert c["delivered"] == 3 and c["overruns"] == 0, c
            # the tensor of the first daemon reads as it did
            assert np.array_equal(held.numpy(), before), f"round {rnd}"
        held.release()        # a no-op toward the new daemon
        assert daemon.consumer()["held"] == 0
        del held
        gc.collect()


@pytest.mark.asan
def test_restart_geometry_change_is_estale(make_daemon):
    daemon = make_daemon()
    daemon.start()
    with daqiri.connect(daemon.sock) as d:
        sub = d.subscribe(STREAM)
        daemon.wait_served()
        daemon.sim("--batches", 1)
        sub.next(timeout=HANG_GUARD).release()
        daemon.signal(signal.SIGTERM)
        assert daemon.wait_exit() == 0
        daemon.make_config(("output_type: fp16", "output_type: int8"))
        daemon.start()
        with pytest.raises(daqiri.Error) as e:
            wait_until(lambda: sub.next(timeout=0) is not None and False,
                       "an error for the changed stream")
        assert e.value.errno == errno.ESTALE, e.value
        assert "dtype fp16 -> int8" in e.value.strerror, e.value.strerror
        # it stays an error
        with pytest.raises(daqiri.Error) as e2:
            sub.next(timeout=0)
        assert e2.value.errno == errno.ESTALE
        # the library took back the subscription it could not use
        wait_until(lambda: daemon.consumer() is None,
                   "the new daemon's subscription undone")


@pytest.mark.asan
def test_reconnect_timeout_gives_enotconn(daemon):
    with daqiri.connect(daemon.sock) as d:
        sub = d.subscribe(STREAM, reconnect_timeout=0.2)
        daemon.wait_served()
        daemon.signal(signal.SIGKILL)
        daemon.wait_exit()
        with pytest.raises(daqiri.Error) as e:
            sub.next(timeout=HANG_GUARD)
        assert e.value.errno == errno.ENOTCONN, e.value
        assert "stayed away" in e.value.strerror, e.value.strerror


def test_reconnect_timeout_checked(daemon):
    with daqiri.connect(daemon.sock) as d:
        for bad in (0, -1.0, 1e12):
            with pytest.raises(daqiri.Error) as e:
                d.subscribe(STREAM, reconnect_timeout=bad)
            assert e.value.errno == errno.EINVAL


def test_daemon_gone_said_once(daemon):
    """The reconnecting wait says once that the daemon is gone (a
    RuntimeWarning), not at every call, and again at the next outage."""
    def gone_warnings(calls):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for _ in range(calls):
                assert sub.next(timeout=0.05) is None
        return [x for x in w if "the daemon is gone" in str(x.message)]

    with daqiri.connect(daemon.sock) as d:
        sub = d.subscribe(STREAM)
        daemon.wait_served()
        for _ in range(2):
            daemon.signal(signal.SIGKILL)
            daemon.wait_exit()
            said = gone_warnings(5)
            assert len(said) == 1, [str(x.message) for x in said]
            assert STREAM in str(said[0].message)
            assert gone_warnings(3) == []
            daemon.start()
            _resubscribed(daemon, sub)
            daemon.sim("--batches", 1)
            t = sub.next(timeout=HANG_GUARD)
            assert t is not None and t.flags & daqiri.RESTART
            t.release()
