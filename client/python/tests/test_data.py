# SPDX-License-Identifier: Apache-2.0
# The data path against the real daemon and simulator on loopback: every
# element of every tensor is the simulator's pattern converted int4 ->
# fp16 (the default config), missing slots are exactly the packets the
# simulator left out and read as the zero fill, through t.numpy(),
# np.from_dlpack(t) and torch.from_dlpack(t), all three the same memory
# (no copy); no tensor lost, seq without gaps. And a raw queue stream:
# uint8 (packets, slot bytes) with the packet lengths.
import numpy as np
import pytest

import daqiri
from dqtest import (ELEMS, HANG_GUARD, PPB, RAW_STREAM, STREAM,
                    check_fp16_tensor, packed_int4, pattern_fp16_bits,
                    wait_until)

BATCHES = 20
# A seed whose 0.5 % loss leaves some batches complete and some partial
# (7 of 20 lossy), shuffled and with duplicates like the demo chain;
# paced so that a Python consumer checking 2 million elements a tensor
# keeps up on a loaded machine (the daemon never waits for a consumer).
SIM = ("--batches", BATCHES, "--seed", 3, "--shuffle", 64, "--loss", 0.005,
       "--dup", 0.02, "--rate", "2kpps")


def _subscribe_and_wait(daemon, d, stream=STREAM, **kw):
    sub = d.subscribe(stream, **kw)
    sid = sub.info["sub_id"]
    # The consumer is subscribed before the simulator starts: the daemon
    # lists it (to daqirictl and to the module itself).
    daemon.wait_consumer(lambda c: c["state"] == "active",
                         f"subscription {sid} listed", sub_id=sid,
                         stream=stream)
    assert any(c["sub_id"] == sid and c["stream"] == stream
               for c in d.consumers())
    daemon.wait_served()
    return sub


def _views(t, via, present, want):
    """(bits, addresses): the tensor's uint16 view through `via`, and the
    data address every way of looking at it gives."""
    a = t.numpy()
    assert isinstance(a, np.ndarray)
    assert a.dtype == np.float16 and a.shape == (PPB, ELEMS)
    assert not a.flags.writeable, "t.numpy() must be read-only"
    with pytest.raises(ValueError):
        a[0, 0] = 1
    x = np.from_dlpack(t)
    assert x.dtype == np.float16 and x.shape == (PPB, ELEMS)
    addrs = {"numpy": a.ctypes.data, "np.from_dlpack": x.ctypes.data}
    m = memoryview(t)
    assert m.readonly and m.format == "e" and m.shape == (PPB, ELEMS)
    addrs["memoryview"] = np.frombuffer(m, dtype=np.uint8).ctypes.data
    if via == "numpy":
        bits = a.view(np.uint16)
    elif via == "dlpack":
        bits = x.view(np.uint16)
    else:
        import torch
        tt = torch.from_dlpack(t)
        assert tt.dtype == torch.float16 and tuple(tt.shape) == (PPB, ELEMS)
        assert tt.device.type == "cpu"
        addrs["torch.from_dlpack"] = tt.data_ptr()
        # torch's own reading of the elements, bit for bit
        t16 = tt.view(torch.int16)
        p = torch.from_numpy(present.copy())
        assert torch.equal(t16[p], torch.from_numpy(want.view(np.int16))[p])
        assert not t16[~p].any(), "missing slots not zero-filled (torch)"
        # and the same memory checked element by element below
        bits = t16.numpy().view(np.uint16)
        assert bits.ctypes.data == tt.data_ptr()
    return bits, addrs


@pytest.mark.parametrize("via", [
    pytest.param("numpy", marks=pytest.mark.asan),
    pytest.param("dlpack", marks=pytest.mark.asan),
    "torch"])
def test_every_element_matches_the_simulator(daemon, via):
    if via == "torch":
        pytest.importorskip("torch")
    want = pattern_fp16_bits()
    with daqiri.connect(daemon.sock) as d:
        sub = _subscribe_and_wait(daemon, d)
        info = sub.info
        assert info["dtype"] == "fp16" and info["kind"] == "reorder"
        assert info["shape"] == (PPB, ELEMS) and info["fill"] == "zero"
        sim = daemon.sim_bg(*SIM)
        got = []
        while len(got) < BATCHES:
            t = sub.next(timeout=HANG_GUARD)
            assert t is not None, (f"no tensor within {HANG_GUARD:.0f} s "
                                   f"after {len(got)} of {BATCHES}"
                                   + daemon.diag())
            what = f"seq {t.seq} batch {t.batch_id} via {via}"
            assert t.dtype == "fp16" and t.shape == (PPB, ELEMS), what
            assert t.nbytes == PPB * ELEMS * 2 and t.device == -1, what
            assert t.lengths is None, what
            present = t.present
            assert present.dtype == np.bool_ and present.shape == (PPB,)
            assert t.packets_expected == PPB, what
            assert 0 < t.first_rx_ns <= t.last_rx_ns <= t.publish_ns, what
            assert 0 <= t.buf_index < info["nbufs"], what
            assert not t.released, what
            assert t.packets_received == int(present.sum()), what
            assert t.complete == bool(present.all()), what
            assert bool(t.flags & daqiri.COMPLETE) == t.complete, what
            assert bool(t.flags & daqiri.HAS_GAPS) == (not t.complete), what
            bits, addrs = _views(t, via, present, want)
            assert len(set(addrs.values())) == 1, \
                f"{what}: views of one tensor at different addresses " \
                f"(a copy): {addrs}"
            check_fp16_tensor(bits, present, want, what)
            got.append((t.seq, t.batch_id,
                        frozenset(np.flatnonzero(~present).tolist())))
            del bits, addrs
            t.release()
            assert t.released
        res = daemon.sim_wait(sim)
        assert daemon.ctl("stats")["interfaces"][0]["kernel"] == 0, \
            "the kernel dropped packets (a loaded machine), not the module"
        # nothing more than the simulator's batches
        assert sub.next(timeout=0) is None
        me = daemon.consumer(info["sub_id"])
        assert me["overruns"] == 0, \
            f"the consumer fell behind (test pacing, not the module?): {me}"
    assert res.dropped > 0 and len(res.missing) < BATCHES, \
        "the seed should give complete and partial batches"
    seqs = [s for s, _, _ in got]
    assert seqs == list(range(seqs[0], seqs[0] + BATCHES)), \
        f"seq gaps: {seqs}"
    assert [b for _, b, _ in got] == list(range(BATCHES))
    for _, b, missing in got:
        assert missing == res.missing.get(b, set()), \
            f"batch {b}: missing slots {sorted(missing)}, the simulator " \
            f"dropped {sorted(res.missing.get(b, set()))}"


@pytest.mark.asan
def test_raw_stream_packets_and_lengths(make_daemon):
    daemon = make_daemon()
    # The sensor flow matches another port: the packets match no flow
    # and go to the raw stream of queue q0 (flow_isolation false).
    daemon.make_config((f"udp_dst: {daemon.port}", "udp_dst: 9"))
    daemon.start()
    burst = 64                              # q0's batch_size
    with daqiri.connect(daemon.sock) as d:
        sub = _subscribe_and_wait(daemon, d, stream=RAW_STREAM)
        info = sub.info
        assert info["kind"] == "raw" and info["name"] == RAW_STREAM
        slot_bytes = info["slot_bytes"]
        assert info["shape"][0] == burst and slot_bytes >= 8050
        res = daemon.sim("--batches", 1, "--seed", 1)   # 128 packets
        assert res.sent == 2 * burst
        wait_until(lambda: daemon.stream_stats(RAW_STREAM)["raw"]
                   ["packets_in"] == res.sent or daemon.ctl("stats")
                   ["interfaces"][0]["kernel"],
                   "every packet in the raw stream")
        assert daemon.ctl("stats")["interfaces"][0]["kernel"] == 0, \
            "the kernel dropped packets (a loaded machine), not the module"
        counters = []
        for k in range(2):
            t = sub.next(timeout=HANG_GUARD)
            assert t is not None, f"raw tensor {k}: none came" + daemon.diag()
            with t:
                a = t.numpy()
                assert a.dtype == np.uint8 and a.shape == (burst, slot_bytes)
                assert not a.flags.writeable
                assert np.from_dlpack(t).ctypes.data == a.ctypes.data
                lengths = t.lengths
                assert lengths.dtype == np.uint32 and lengths.shape == (burst,)
                # 42 bytes of made-up Ethernet/IPv4/UDP header, then the
                # 8008-byte datagram: 8-byte header, 8000 int4 bytes
                assert (lengths == 42 + 8008).all(), lengths
                # each packet's receive time, from first to last
                rx = t.rx_ns
                assert rx.dtype == np.uint64 and rx.shape == (burst,)
                assert rx[0] == t.first_rx_ns and rx[-1] == t.last_rx_ns
                assert (np.diff(rx.astype(np.int64)) >= 0).all(), rx
                assert t.present.all()
                for i in range(burst):
                    c = int.from_bytes(a[i, 42:46].tobytes(), "big")
                    counters.append(c)
                    assert np.array_equal(a[i, 50:8050],
                                          packed_int4(c % PPB)), \
                        f"packet {c}: payload is not the pattern"
            assert t.released
        # no trigger yet; then one, seen by the subscription
        assert sub.trigger() == (0, 0)
        out = daemon.ctl("trigger", RAW_STREAM)
        assert out["count"] == 1
        assert sub.trigger() == (1, out["ns"])
    assert sorted(counters) == list(range(2 * burst))


def test_plot_tensor_example(daemon, child_py, tmp_path):
    """examples/plot_tensor.py draws the next tensor as a PNG and counts
    the slots the sender left out (struck through in red), live and from
    the files daqiri-consume --save writes."""
    pytest.importorskip("matplotlib")
    from pathlib import Path
    example = str(Path(__file__).resolve().parents[1] /
                  "examples/plot_tensor.py")
    png = tmp_path / "t.png"
    c = child_py("import runpy, sys\n"
                 "sys.argv = [sys.argv[1]] + sys.argv[2:]\n"
                 "runpy.run_path(sys.argv[0], run_name='__main__')\n",
                 example, "-s", daemon.sock, "-o", str(png))
    daemon.wait_consumer(lambda r: r["state"] == "active",
                         "plot_tensor.py subscribed", pid=c.pid)
    r = daemon.sim("--batches", 1, "--loss", "0.05", "--seed", 3)
    n = len(r.missing.get(0, ()))
    assert n > 0, "the seed left no slot out"
    assert c.wait() == 0, c.output()
    assert f": {PPB} x {ELEMS} float16, {n} missing slots" in c.output()[0], \
        c.output()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # offline: a saved tensor and its mask
    x = np.zeros((PPB, ELEMS), dtype=np.float16)
    present = np.ones(PPB, dtype=bool)
    present[[3, 7]] = False
    np.save(tmp_path / "s-000000000001.npy", x)
    np.save(tmp_path / "s-000000000001.present.npy", present)
    c2 = child_py("import runpy, sys\n"
                  "sys.argv = [sys.argv[1]] + sys.argv[2:]\n"
                  "runpy.run_path(sys.argv[0], run_name='__main__')\n",
                  example, "--from", str(tmp_path / "s-000000000001.npy"),
                  "-o", str(tmp_path / "s.png"))
    assert c2.wait() == 0, c2.output()
    assert "2 missing slots" in c2.output()[0], c2.output()
