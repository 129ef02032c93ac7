# SPDX-License-Identifier: Apache-2.0
# Errors are daqiri.Error (an OSError) with the right errno: no daemon at
# the socket, an unknown stream; and a shared group (group=) splits the
# tensors between its members, each tensor to exactly one of them.
import errno
import threading

import pytest

import daqiri
from dqtest import HANG_GUARD, STREAM, wait_until


@pytest.mark.asan
def test_connect_missing_socket(tmp_path):
    path = str(tmp_path / "nobody.sock")
    with pytest.raises(daqiri.Error) as e:
        daqiri.connect(path)
    assert isinstance(e.value, OSError)
    assert e.value.errno == errno.ENOENT
    assert e.value.strerror, "no message"
    # the library's hint: where it looked (and how to start a daemon)
    assert path in e.value.strerror, e.value.strerror
    assert str(e.value) == f"[Errno {errno.ENOENT}] {e.value.strerror}"
    # `except OSError` catches it
    try:
        daqiri.connect(path)
    except OSError as ex:
        assert ex.errno == errno.ENOENT
    else:
        raise AssertionError("connect succeeded")


@pytest.mark.asan
def test_subscribe_unknown_stream(daemon):
    with daqiri.connect(daemon.sock) as d:
        with pytest.raises(daqiri.Error) as e:
            d.subscribe("sensor0/nosuch")
        assert e.value.errno == errno.ENOENT
        assert isinstance(e.value, OSError)
        assert e.value.strerror
        # nothing was subscribed, the connection still works
        assert d.consumers() == []
        with d.subscribe(STREAM):
            pass


@pytest.mark.asan
def test_shared_group_splits_tensors(daemon):
    n = 20
    conns = [daqiri.connect(daemon.sock) for _ in range(2)]
    try:
        subs = [c.subscribe(STREAM, group="g") for c in conns]
        daemon.wait_served()
        assert all(s.info["mode"] == "shared" for s in subs)
        wait_until(lambda: sum(1 for c in daemon.consumers()
                               if c["group"] == "g") == 2,
                   "both members listed")
        seen = [[], []]
        stop = threading.Event()
        errors = []

        def member(k):
            try:
                while not stop.is_set():
                    t = subs[k].next(timeout=0.05)
                    if t is not None:
                        seen[k].append(t.seq)
                        t.release()
            except Exception as ex:       # reported by the main thread
                errors.append(ex)

        threads = [threading.Thread(target=member, args=(k,), daemon=True)
                   for k in range(2)]
        for t in threads:
            t.start()
        daemon.sim("--batches", n, "--rate", "10kpps")
        daemon.wait_published(n)
        wait_until(lambda: len(seen[0]) + len(seen[1]) >= n or errors,
                   f"{n} tensors between the two members")
        stop.set()
        for t in threads:
            t.join(HANG_GUARD)
            assert not t.is_alive(), "a member hung in next()"
        assert not errors, errors
        allseq = seen[0] + seen[1]
        assert sorted(allseq) == list(range(n)), \
            f"each tensor to exactly one member: {seen}"
        assert seen[0] and seen[1], f"one member got nothing: {seen}"
        members = [c for c in daemon.consumers() if c["group"] == "g"]
        # (sub ids are per connection: compare the counts as sets)
        assert sorted(c["delivered"] for c in members) == \
            sorted(len(x) for x in seen)
        assert all(c["overruns"] == 0 for c in members), members
        assert daemon.stream_stats()["handoff"]["unseen"] == 0
    finally:
        for c in conns:
            c.close()
