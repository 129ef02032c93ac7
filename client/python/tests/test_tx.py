# SPDX-License-Identifier: Apache-2.0
# TX channels from Python: Connection.transmitter() on a tx queue of a
# socket-engine daemon whose destination is a UDP socket of this test
# (the standard library's, not the project's code). send() of bytes-like
# objects and lists arrives exactly, in order, from the daemon; buffer()
# is a writable pool buffer a NumPy view writes into, sent without a
# copy; an oversized payload is a ValueError before anything is sent; a
# sent TxBuffer cannot be viewed or sent again; close() with a TxBuffer
# alive waits for it; a process that is neither root nor admin is
# refused with the reason; the daemon counts what was sent; in a fork()ed
# child the objects raise EBADF; examples/closed_loop.py closes the loop
# with the simulator's --control: every decision arrives, in order.
import errno
import os
import re
import signal
import socket
import tempfile
from pathlib import Path

import numpy as np
import pytest

import daqiri
from dqtest import HANG_GUARD, free_udp_port, wait_until

TX = "sensor0/tx0"


def tx_config(d, port, *edits):
    """The default config plus a tx queue sending to 127.0.0.1:port."""
    region = ("    memory_regions:\n",
              "    memory_regions:\n"
              "    - name: tx_frames\n"
              "      kind: host\n"
              "      affinity: 0\n"
              "      num_bufs: 64\n"
              "      buf_size: 9000\n")
    tx = ("\n  # daqirid's own settings",
          "\n      tx:\n"
          "        queues:\n"
          "        - name: tx0\n"
          "          id: 0\n"
          "          batch_size: 64\n"
          "          memory_regions: [tx_frames]\n"
          "          destination:\n"
          "            ipv4_dst: 127.0.0.1\n"
          f"            udp_dst: {port}\n"
          "\n  # daqirid's own settings")
    d.make_config(region, tx, *edits)


@pytest.fixture
def rx():
    """The instrument's side: a plain UDP socket on a free port."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", free_udp_port()))
    s.settimeout(HANG_GUARD)
    yield s
    s.close()


@pytest.fixture
def txd(make_daemon, rx):
    d = make_daemon()
    tx_config(d, rx.getsockname()[1])
    return d.start()


def recv_n(s, n):
    return [s.recvfrom(65536) for _ in range(n)]


def tx_queue_stats(d):
    for i in d.ctl("stats")["interfaces"]:
        for q in i.get("tx", {}).get("queues", []):
            if q["queue"] in (TX, "tx0"):
                return q
    raise AssertionError("no tx queue in stats")


@pytest.mark.asan
def test_send_bytes_and_lists(txd, rx):
    payloads = [b"hello", b"", bytearray(b"bc"), memoryview(b"def"),
                np.arange(7, dtype=np.uint8), bytes(range(256)) * 30]
    with daqiri.connect(txd.sock) as d, d.transmitter(TX) as tx:
        assert tx.queue == TX
        assert tx.buf_size >= len(payloads[-1])
        assert tx.send(payloads[0]) == 1
        assert tx.send(payloads[1:]) == len(payloads) - 1
        assert tx.flush(timeout=HANG_GUARD)
        got = recv_n(rx, len(payloads))
        st = tx.stats
    assert [g[0] for g in got] == [bytes(p) for p in payloads]
    # from the daemon, one source address for all
    assert len({g[1] for g in got}) == 1 and got[0][1][0] == "127.0.0.1"
    assert st["sent"] == len(payloads) and st["failed"] == 0
    q = wait_until(lambda: (lambda q: q if q["packets"] == len(payloads)
                            else None)(tx_queue_stats(txd)),
                   "the daemon counting what was sent")
    assert q["bytes"] == sum(len(bytes(p)) for p in payloads)
    assert sum(q["drops"].values()) == 0


@pytest.mark.asan
def test_buffer_zero_copy(txd, rx):
    with daqiri.connect(txd.sock) as d, d.transmitter(TX) as tx:
        b = tx.buffer()
        assert b.capacity == tx.buf_size and b.length == b.capacity
        a = np.frombuffer(b, dtype=np.float32)
        assert a.flags.writeable
        a[:4] = [1.5, -2.0, 3.25, 1e6]
        b.length = 16
        del a
        view = memoryview(b)
        with pytest.raises(BufferError, match="views"):
            tx.send(b)          # a live view could rewrite it in flight
        with pytest.raises(BufferError, match="views"):
            b.discard()
        assert not b.spent
        del view
        assert tx.send(b) == 1
        assert b.spent
        with pytest.raises(BufferError):
            memoryview(b)
        with pytest.raises(ValueError):
            tx.send(b)
        data, _ = rx.recvfrom(65536)
        assert np.frombuffer(data, dtype=np.float32).tolist() == \
            [1.5, -2.0, 3.25, 1e6]
        # nbytes= for a part of it; discard() gives one back unsent
        b = tx.buffer()
        memoryview(b)[:3] = b"xyz"
        tx.send(b, nbytes=3)
        b2 = tx.buffer()
        b2.discard()
        assert b2.spent
        assert rx.recvfrom(65536)[0] == b"xyz"
        assert tx.flush(timeout=HANG_GUARD)


@pytest.mark.asan
def test_too_big_and_bad_arguments(txd, rx):
    with daqiri.connect(txd.sock) as d, d.transmitter(TX) as tx:
        with pytest.raises(ValueError, match="over the channel"):
            tx.send([b"ok", b"x" * (tx.buf_size + 1)])
        with pytest.raises(TypeError):
            tx.send(12345)
        with pytest.raises(ValueError):
            tx.send(b"x", timeout=-1)
        b = tx.buffer()
        with pytest.raises(ValueError):
            b.length = tx.buf_size + 1
        b.discard()
        assert tx.flush(timeout=HANG_GUARD)
        tx.send(b"after")
        # nothing of the refused list went out: the first datagram is
        # the one sent after it
        assert rx.recvfrom(65536)[0] == b"after"
    with pytest.raises(daqiri.Error) as e:
        with daqiri.connect(txd.sock) as d:
            d.transmitter("sensor0/nosuchq")
    assert e.value.errno in (errno.ENOENT, errno.ENODEV, errno.ESRCH)
    with daqiri.connect(txd.sock) as d:
        with pytest.raises(ValueError, match="nbufs -1"):
            d.transmitter(TX, nbufs=-1)
        # the library's own refusal names the limit, not an old error
        with pytest.raises(daqiri.Error, match="at most 4096") as e:
            d.transmitter(TX, nbufs=5000)
        assert e.value.errno == errno.EINVAL
        with pytest.raises(daqiri.Error, match="empty or longer") as e:
            d.transmitter("")


@pytest.mark.asan
def test_pool_runs_out_then_timeout(txd, rx):
    with daqiri.connect(txd.sock) as d, d.transmitter(TX, nbufs=4) as tx:
        assert tx.nbufs == 4
        held = [tx.buffer() for _ in range(4)]
        with pytest.raises(daqiri.Error) as e:
            tx.buffer(timeout=0.05)
        assert e.value.errno == errno.EAGAIN
        with pytest.raises(daqiri.Error) as e:
            tx.send(b"x", timeout=0)
        assert e.value.errno == errno.EAGAIN
        for b in held:
            b.discard()
        assert tx.send([b"%d" % i for i in range(20)]) == 20
        assert tx.flush(timeout=HANG_GUARD)
        assert [g[0] for g in recv_n(rx, 20)] == \
            [b"%d" % i for i in range(20)]


def test_daemon_gone_while_pool_in_flight(txd, rx):
    # every buffer submitted to a stopped daemon, which is then killed: a
    # wait for a free buffer ends with ENOTCONN, not a timeout (nor a
    # spin on the dead control socket)
    with daqiri.connect(txd.sock) as d, d.transmitter(TX, nbufs=2) as tx:
        txd.signal(signal.SIGSTOP)
        try:
            assert tx.send([b"a", b"b"]) == 2
        finally:
            txd.signal(signal.SIGKILL)
            txd.signal(signal.SIGCONT)
        txd.wait_exit()
        for timeout in (HANG_GUARD, None):
            with pytest.raises(daqiri.Error) as e:
                tx.buffer(timeout=timeout)
            assert e.value.errno == errno.ENOTCONN, e.value


@pytest.mark.asan
def test_lifetime(txd, rx):
    d = daqiri.connect(txd.sock)
    tx = d.transmitter(TX)
    b = tx.buffer()
    view = memoryview(b)
    tx.close()
    assert tx.closed
    with pytest.raises(daqiri.Error) as e:
        tx.send(b"x")
    assert e.value.errno == errno.EBADF
    view[:2] = b"ok"            # still mapped: the buffer holds it
    del view, b                 # the channel closes now
    d.close()
    with pytest.raises(daqiri.Error) as e:
        d.transmitter(TX)
    assert e.value.errno == errno.EBADF
    # the daemon let the channel go with the connection
    wait_until(lambda: all(not q.get("channels")
                           for q in [tx_queue_stats(txd)]),
               "the channel gone from the daemon's stats")


def test_fork_child_raises(txd, rx):
    with daqiri.connect(txd.sock) as d, d.transmitter(TX) as tx:
        b = tx.buffer()
        pid = os.fork()
        if pid == 0:
            code = 0
            for what in (lambda: tx.send(b"from the child"),
                         lambda: memoryview(b), b.discard):
                try:
                    what()
                    code = 1
                except daqiri.Error as e:
                    if e.errno != errno.EBADF:
                        code = 2
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        b.discard()
        tx.send(b"parent")
        assert rx.recvfrom(65536)[0] == b"parent"


def test_not_admin_refused(make_daemon, rx, child_py):
    d = make_daemon()
    tx_config(d, rx.getsockname()[1],
              ("socket_mode: 0660", "socket_mode: 0666"))
    if d._own_sock_dir is None:
        d._own_sock_dir = Path(tempfile.mkdtemp(prefix="dqpy.", dir="/tmp"))
        d.sock = str(d._own_sock_dir / "daqirid.sock")
        d.notify = str(d._own_sock_dir / "notify")
    os.chmod(d._own_sock_dir, 0o755)
    d.start()
    if os.geteuid() != 0:
        pytest.skip("needs root to run a child as uid 65534")
    c = child_py(
        "import os, sys, errno, daqiri\n"
        "os.setgid(65534); os.setuid(65534)\n"
        "d = daqiri.connect(sys.argv[1])\n"
        "try:\n"
        "    d.transmitter('sensor0/tx0')\n"
        "    print('opened')\n"
        "except daqiri.Error as e:\n"
        "    print('refused', e.errno, e.strerror)\n", d.sock)
    out = c.expect(r"^(refused|opened)").string
    assert out.startswith(f"refused {errno.EACCES} "), out
    assert "admin" in out or "root" in out, out


def test_closed_loop_example(make_daemon, child_py):
    """examples/closed_loop.py against the simulator's --control: every
    tensor's decision reaches the instrument, in order, none lost."""
    n = 40
    ctl = free_udp_port()
    d = make_daemon()
    tx_config(d, ctl)
    d.start()
    c = child_py(
        "import runpy, sys\n"
        "sys.argv = [sys.argv[1]] + sys.argv[2:]\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')\n",
        str(Path(__file__).resolve().parents[1] / "examples/closed_loop.py"),
        "-s", d.sock, "-n", str(n))
    d.wait_consumer(lambda r: r["state"] == "active",
                    "closed_loop.py subscribed", pid=c.pid)
    r = d.sim("--batches", n, "--control", f"udp://127.0.0.1:{ctl}",
              "--control-expect", n)
    assert c.wait() == 0, c.output()
    assert f"{n} decisions sent" in c.output()[0]
    m = re.search(r"^control applied=(\d+) bad=(\d+) out_of_order=(\d+) "
                  r"missing=(\d+)", r.out, re.M)
    assert m, r.out
    assert [int(x) for x in m.groups()] == [n, 0, 0, 0], r.out
