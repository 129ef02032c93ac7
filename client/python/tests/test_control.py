# SPDX-License-Identifier: Apache-2.0
# The control calls of daqiri.Connection return the daemon's JSON as
# Python dicts and lists, the same as `daqirictl -j` shows, and the
# module-level names, the subscription's info and the connection's
# properties are as documented (pyspec).
import errno
import os

import pytest

import daqiri
from dqtest import ELEMS, NBUFS, PPB, RAW_STREAM, STREAM

ENVELOPE = ("type", "re", "status", "id")


def _payload(reply):
    return {k: v for k, v in reply.items() if k not in ENVELOPE}


def test_module_names():
    assert issubclass(daqiri.Error, OSError)
    assert daqiri.DEFAULT_SOCKET == "/run/daqiri/daqirid.sock"
    assert isinstance(daqiri.__version__, str) and daqiri.__version__
    flags = [daqiri.COMPLETE, daqiri.TIMEOUT, daqiri.EVICTED,
             daqiri.HAS_GAPS, daqiri.RESYNC, daqiri.FLUSH]
    # the library's tensor flags (proto/daqiri_types.h)
    assert flags == [1, 2, 4, 8, 16, 32]


@pytest.mark.asan
def test_status_streams_stats_as_daqirictl(daemon):
    with daqiri.connect(daemon.sock) as d:
        st = d.status()
        assert isinstance(st, dict)
        assert not set(ENVELOPE) & set(st), f"envelope left in: {st}"
        ref = _payload(daemon.ctl("status"))
        assert set(st) == set(ref)
        assert st["pid"] == daemon.pid
        assert st["socket"] == daemon.sock
        assert st["config"] == str(daemon.cfg)
        for k in ("daemon_version", "state", "engine", "interfaces",
                  "rx_queues", "streams", "subscriptions"):
            assert st[k] == ref[k], k

        streams = d.streams()
        assert isinstance(streams, list)
        assert streams == daemon.ctl("streams")["streams"]
        assert [s["name"] for s in streams] == [STREAM, RAW_STREAM]

        stats = d.stats()
        assert isinstance(stats, dict)
        assert not set(ENVELOPE) & set(stats)
        ref = _payload(daemon.ctl("stats"))
        assert set(stats) == set(ref)
        # no traffic: every counter but the control ones (which count
        # the requests themselves) is the same
        assert stats["interfaces"] == ref["interfaces"]
        assert stats["streams"] == ref["streams"]
        assert set(stats["control"]) == set(ref["control"])

        fl = d.request("flow_list")
        assert isinstance(fl, dict)
        assert fl["interfaces"] == daemon.ctl("flow", "list")["interfaces"]
        one = d.request("flow_list", interface="sensor0")
        assert [i["name"] for i in one["interfaces"]] == ["sensor0"]
        assert d.request("streams")["streams"] == streams


@pytest.mark.asan
def test_consumers_and_info(daemon):
    with daqiri.connect(daemon.sock) as d:
        assert d.consumers() == []
        with d.subscribe(STREAM) as sub:
            info = sub.info
            daemon.wait_served()    # state "new" until the worker has it
            mine = d.consumers()
            assert isinstance(mine, list) and len(mine) == 1
            assert mine == daemon.ctl("consumers")["consumers"]
            c = mine[0]
            assert c["pid"] == os.getpid() and c["stream"] == STREAM
            assert c["sub_id"] == info["sub_id"]
            assert c["mode"] == info["mode"] == "broadcast"
            assert c["max_held"] == info["max_held"] == NBUFS // 4
            assert c["ring_depth"] == info["ring_depth"]
            assert c["held"] == 0 and sub.held == 0
            want = {
                "name": STREAM, "kind": "reorder", "dtype": "fp16",
                "shape": (PPB, ELEMS), "ppb": PPB, "elems_per_slot": ELEMS,
                "elem_bytes": 2, "slot_bytes": 2 * ELEMS,
                "tensor_bytes": PPB * 2 * ELEMS, "mem_kind": "host",
                "device": -1, "nbufs": NBUFS, "fill": "zero",
            }
            for k, v in want.items():
                assert info[k] == v, (k, info[k], v)
            assert isinstance(sub.fileno(), int) and sub.fileno() >= 0
            assert not sub.closed
        assert sub.closed
        sub.close()                 # idempotent
        with d.subscribe(STREAM, group="g", max_held=3, depth=16) as s2:
            i2 = s2.info
            assert i2["mode"] == "shared" and i2["max_held"] == 3
            c = daemon.consumer(i2["sub_id"])
            assert c["mode"] == "shared" and c["group"] == "g"
            assert c["max_held"] == 3 and c["ring_depth"] == i2["ring_depth"]
        assert isinstance(d.fileno(), int) and d.fileno() >= 0
        assert not d.closed
    assert d.closed


@pytest.mark.asan
def test_connect_uses_DAQIRI_SOCKET(daemon, monkeypatch):
    monkeypatch.setenv("DAQIRI_SOCKET", daemon.sock)
    with daqiri.connect() as d:
        assert d.status()["pid"] == daemon.pid


@pytest.mark.asan
def test_control_errors(daemon):
    with daqiri.connect(daemon.sock) as d:
        with pytest.raises(daqiri.Error) as e:
            d.request("no_such_request")
        assert e.value.errno == errno.EINVAL
        with pytest.raises(daqiri.Error) as e:
            d.request("flow_list", interface="nosuch")
        assert e.value.errno == errno.ENODEV
        assert e.value.strerror            # the daemon's message
        assert str(e.value).startswith(f"[Errno {errno.ENODEV}] ")
        # the connection still works after refused requests
        assert d.status()["pid"] == daemon.pid
