# SPDX-License-Identifier: Apache-2.0
# Delivery policies from Python: subscribe(policy="lossless") is never
# skipped — a consumer that sleeps 50 ms per tensor gets every published
# tensor with no seq gap while the stream drops batches at ingest as
# no_buffer, charged to it (handoff.blocked_by, its "blocked"); a latest
# subscription of the same stream verifies every tensor it gets; the
# accounting identity holds; sub.info["policy"] says which was granted;
# an unprivileged process (uid 65534) asking for lossless is refused
# with the reason, a bad policy name is a ValueError.
import errno
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

import daqiri
from dqtest import HANG_GUARD, STREAM, check_fp16_tensor, \
    pattern_fp16_bits, wait_until

BATCHES = 60
OPEN_SOCKET = ("socket_mode: 0660", "socket_mode: 0666")


@pytest.fixture
def odaemon(make_daemon):
    """A daemon whose socket anyone may connect to (uid 65534 too)."""
    d = make_daemon()
    d.make_config(OPEN_SOCKET)
    # pytest's tmp_path is under a 0700 directory: the socket goes to a
    # directory of its own that uid 65534 can reach (cleanup removes it)
    if d._own_sock_dir is None:
        d._own_sock_dir = Path(tempfile.mkdtemp(prefix="dqpy.", dir="/tmp"))
        d.sock = str(d._own_sock_dir / "daqirid.sock")
        d.notify = str(d._own_sock_dir / "notify")
    os.chmod(d._own_sock_dir, 0o755)
    return d.start()


def _active(daemon, sub):
    sid = sub.info["sub_id"]
    daemon.wait_consumer(lambda c: c["state"] == "active",
                         f"subscription {sid} active", sub_id=sid)


def _check(t, want, what):
    check_fp16_tensor(t.numpy().view(np.uint16), t.present, want, what)


def test_lossless_slow_consumer_gets_every_tensor(daemon):
    want = pattern_fp16_bits()
    with daqiri.connect(daemon.sock) as d:
        ll = d.subscribe(STREAM, policy="lossless")
        lt = d.subscribe(STREAM)
        assert ll.info["policy"] == "lossless"
        assert lt.info["policy"] == "latest"
        _active(daemon, ll)
        _active(daemon, lt)
        lsid, tsid = ll.info["sub_id"], lt.info["sub_id"]
        sim = daemon.sim_bg("--batches", BATCHES, "--quiet")
        seqs, latest_got = [], 0
        deadline = time.monotonic() + HANG_GUARD
        res = None
        while True:
            assert time.monotonic() < deadline, \
                f"lossless got {len(seqs)} tensors" + daemon.diag()
            # the latest one: whatever is there, each verified
            while (t := lt.next(timeout=0)) is not None:
                _check(t, want, f"latest seq {t.seq}")
                latest_got += 1
                t.release()
            t = ll.next(timeout=0.01)
            if t is not None:
                _check(t, want, f"lossless seq {t.seq}")
                seqs.append(t.seq)
                time.sleep(0.05)	# the slow consumer, on purpose
                t.release()
                continue
            if res is None and sim.poll() is not None:
                res = daemon.sim_wait(sim)
            if res is None:
                continue
            st = daemon.ctl("stats")
            ifc = st["interfaces"][0]
            h = daemon.stream_stats()["handoff"]
            if (ifc["rx_packets"] + ifc["kernel"] == res.sent and
                    h["open_bufs"] == 0 and len(seqs) == h["published"]):
                break
        s = daemon.stream_stats()
        r, h = s["reorder"], s["handoff"]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), \
            "a gap in the lossless consumer's seq"
        assert r["batches_no_buffer"] > 0 and r["no_buffer"] > 0, r
        assert h["published"] + r["batches_no_buffer"] == BATCHES, (h, r)
        assert r["packets_in"] == (r["placed"] + r["duplicate"] + r["late"]
                                   + r["malformed"] + r["no_buffer"]
                                   + r["backend_error"]), r
        assert h["blocked_by"] == lsid, h
        lc = daemon.consumer(lsid)
        tc = daemon.consumer(tsid)
        assert lc["policy"] == "lossless" and tc["policy"] == "latest"
        assert lc["blocked"] > 0 and tc["blocked"] == 0, (lc, tc)
        assert lc["overruns"] == 0 and lc["delivered"] == h["published"]
        assert tc["delivered"] + tc["overruns"] == h["published"], tc
        wait_until(lambda: lt.next(timeout=0) is None, "latest drained")
        assert latest_got == tc["delivered"], (latest_got, tc)
        assert latest_got > 0


CHILD_NOBODY = """
import os, sys
# imported as root: a clone under /root (mode 0700) is out of uid 65534's
# reach, the module's directory too
import daqiri
os.setgroups([])
os.setgid(65534)
os.setuid(65534)
with daqiri.connect(sys.argv[1]) as d:
    try:
        d.subscribe(sys.argv[2], policy="lossless")
    except daqiri.Error as e:
        print("refused", e.errno, e, flush=True)
    else:
        print("granted", flush=True)
    s = d.subscribe(sys.argv[2])
    print("latest", s.info["policy"], flush=True)
"""


def test_lossless_needs_admin(odaemon, child_py):
    child = child_py(CHILD_NOBODY, odaemon.sock, STREAM)
    m = child.expect(r"^(refused|granted)(.*)")
    assert m.group(1) == "refused", m.group(0)
    assert m.group(2).startswith(f" {errno.EACCES} "), m.group(0)
    # who may: root alone here, and how to let others
    assert 'policy "lossless" needs root (set daemon.admin_group to a ' \
        'group, and add the user to it, to let others)' in m.group(2)
    assert child.expect(r"^latest (\w+)").group(1) == "latest"
    assert child.wait() == 0, child.output()


def test_bad_policy_and_shared_lossless(daemon):
    with daqiri.connect(daemon.sock) as d:
        with pytest.raises(ValueError):
            d.subscribe(STREAM, policy="newest")
        with pytest.raises(daqiri.Error) as e:
            d.subscribe(STREAM, group="g", policy="lossless")
        assert "broadcast" in str(e.value)
        s = d.subscribe(STREAM, policy="latest")
        assert s.info["policy"] == "latest"
