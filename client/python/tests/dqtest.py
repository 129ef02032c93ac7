# SPDX-License-Identifier: Apache-2.0
# Helpers of the `daqiri` Python module's tests (conftest.py makes fixtures
# of them): a daqirid of the test's own (private socket, random UDP port
# on 127.0.0.1, files in the test's tmp_path) started like
# tests/system/lib.sh does, the simulator, daqirictl -j, child Python
# processes, cleanup of every process a test started, by PID, and the
# simulator's sample pattern as the module should show it.
#
# Environment: DAQIRI_BUILD (default "build") is the build directory that
# holds daqirid, daqiri-sim and daqirictl; PYTHONPATH must let
# `import daqiri` find the module. Under ASan (make python-asan) the
# LD_PRELOAD of the runtime is kept for child Python processes but taken
# out of the environment of the daemon and the other tools.
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[3]
STREAM = "sensor0/sensor_tensor"
RAW_STREAM = "sensor0/q0"
# Bound on every wait for an observable condition: only a hang guard,
# never a measure of speed.
HANG_GUARD = 60.0
# The default config's geometry (etc/daqirid.yaml).
PPB = 128
ELEMS = 16000
NBUFS = 32


def _build_dir():
    b = Path(os.environ.get("DAQIRI_BUILD", "build"))
    if b.is_absolute():
        return b
    if (Path.cwd() / b / "daqirid").exists():
        return (Path.cwd() / b).resolve()
    return REPO / b


BUILD = _build_dir()


def tool_env():
    """The environment for daqirid, daqiri-sim and daqirictl: ours without
    an ASan LD_PRELOAD (those binaries are not instrumented) and without
    a DAQIRI_SOCKET that would point elsewhere."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.pop("DAQIRI_SOCKET", None)
    return env


# Run before each process we start: if the test process itself dies (a
# module bug can crash the interpreter) the kernel kills what it started,
# since no fixture teardown will. setpriv execs, so the PID stays.
_SETPRIV = shutil.which("setpriv")
DEATHSIG = [_SETPRIV, "--pdeathsig", "KILL"] if _SETPRIV else []
# The same for child Python processes, done by the child itself
# (PR_SET_PDEATHSIG = 1), so that an ASan LD_PRELOAD meets Python only.
CHILD_PREAMBLE = ("import ctypes as _c, signal as _s\n"
                  "_c.CDLL(None, use_errno=True).prctl(1, int(_s.SIGKILL))\n")


def wait_until(pred, what, timeout=HANG_GUARD, interval=0.02):
    """Poll pred() until it returns something true; return that. The
    timeout is a hang guard only."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = pred()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting "
                                 f"for {what} (last value: {last!r})")
        time.sleep(interval)


def free_udp_port():
    """A UDP port on 127.0.0.1 that nobody holds right now."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


class Procs:
    """Every process a test started; all killed (SIGKILL, by PID) and
    reaped at teardown."""

    def __init__(self):
        self.procs = []

    def add(self, p):
        self.procs.append(p)
        return p

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for p in self.procs:
            try:
                p.wait(timeout=HANG_GUARD)
            except subprocess.TimeoutExpired:
                pass
            for f in (p.stdin, p.stdout, p.stderr):
                if f is not None:
                    try:
                        f.close()
                    except OSError:
                        pass


class SimResult:
    """What one daqiri-sim run said: its closing counters and the packets
    it left out on purpose."""

    def __init__(self, out):
        self.out = out
        m = re.search(r"^sim sent=(\d+) unique=(\d+) dropped=(\d+) "
                      r"duplicates=(\d+) batches=(\d+)", out, re.M)
        assert m, f"no closing line in the simulator's output:\n{out}"
        (self.sent, self.unique, self.dropped, self.duplicates,
         self.batches) = (int(x) for x in m.groups())
        # batch -> set of slots dropped
        self.missing = {}
        for seq, batch, slot in re.findall(
                r"^dropped seq=(\d+) batch=(\d+) slot=(\d+)", out, re.M):
            self.missing.setdefault(int(batch), set()).add(int(slot))
        assert sum(len(v) for v in self.missing.values()) == self.dropped


class ChildPy:
    """A child Python process running `code`, its stdout read line by line
    (a reader thread, so every wait on it is bounded)."""

    def __init__(self, procs, code, args=(), env=None):
        self.p = procs.add(subprocess.Popen(
            [sys.executable, "-c", CHILD_PREAMBLE + code, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=env if env is not None else dict(os.environ)))
        self.pid = self.p.pid
        self.lines = queue.Queue()
        self.out = []
        self.err = []
        self.readers = [
            threading.Thread(target=self._read, args=(self.p.stdout,
                             self.out, True), daemon=True),
            threading.Thread(target=self._read, args=(self.p.stderr,
                             self.err, False), daemon=True)]
        for t in self.readers:
            t.start()

    def _read(self, f, store, to_queue):
        for line in f:
            store.append(line)
            if to_queue:
                self.lines.put(line.rstrip("\n"))
        if to_queue:
            self.lines.put(None)

    def expect(self, regex, timeout=HANG_GUARD):
        """The first further stdout line matching regex (a match object)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                line = self.lines.get(timeout=max(left, 0.01))
            except queue.Empty:
                line = ""
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"child {self.pid}: no line matching {regex!r} "
                        f"within {timeout:.0f} s; stderr:\n"
                        + "".join(self.err)) from None
                continue
            if line is None:
                self.p.wait(timeout=HANG_GUARD)
                raise AssertionError(
                    f"child {self.pid} exited ({self.p.returncode}) before "
                    f"printing a line matching {regex!r}; stdout:\n"
                    + "".join(self.out) + "stderr:\n" + "".join(self.err))
            m = re.search(regex, line)
            if m:
                return m

    def wait(self, timeout=HANG_GUARD):
        """Exit status; the child is killed (and the test fails) if it
        does not end within the hang guard."""
        try:
            return self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.kill(self.p.pid, signal.SIGKILL)
            self.p.wait()
            raise AssertionError(f"child {self.pid} did not exit within "
                                 f"{timeout:.0f} s (hang); stdout:\n"
                                 + "".join(self.out) + "stderr:\n"
                                 + "".join(self.err)) from None

    def output(self):
        """stdout and stderr, once the child has exited."""
        for t in self.readers:
            t.join(HANG_GUARD)
        return "".join(self.out), "".join(self.err)


class Daemon:
    """One daqirid on a private socket and UDP port."""

    def __init__(self, tmp, procs):
        self.tmp = tmp
        self.procs = procs
        sock_dir = tmp
        if len(str(tmp / "daqirid.sock")) > 100:   # sun_path is 108 bytes
            sock_dir = Path(tempfile.mkdtemp(prefix="dqpy.", dir="/tmp"))
            self._own_sock_dir = sock_dir
        else:
            self._own_sock_dir = None
        self.sock = str(sock_dir / "daqirid.sock")
        self.notify = str(sock_dir / "notify")
        self.port = free_udp_port()
        self.cfg = tmp / "daqirid.yaml"
        self.log = tmp / "daemon.log"
        self.proc = None
        self.pid = None

    def make_config(self, *edits):
        """The default config on our port and socket group, with further
        (old, new) text replacements; each must match."""
        text = (REPO / "etc/daqirid.yaml").read_text()
        edits = (("127.0.0.1:5005", f"127.0.0.1:{self.port}"),
                 ("udp_dst: 5005", f"udp_dst: {self.port}"),
                 ("socket_group: daqiri ", 'socket_group: "" ')) + edits
        for old, new in edits:
            assert old in text, f"config edit {old!r} matches nothing"
            text = text.replace(old, new)
        self.cfg.write_text(text)
        r = subprocess.run([str(BUILD / "daqirid"), "-n", "-c", str(self.cfg)],
                           capture_output=True, text=True, env=tool_env(),
                           timeout=HANG_GUARD)
        assert r.returncode == 0, f"test config invalid:\n{r.stderr}"

    def start(self):
        """Run daqirid with a notify socket of ours; wait for READY=1."""
        if not self.cfg.exists():
            self.make_config()
        ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            # started again (a restart): the last start's listener is gone
            try:
                os.unlink(self.notify)
            except FileNotFoundError:
                pass
            ns.bind(self.notify)
            ns.settimeout(0.1)
            env = tool_env()
            env["NOTIFY_SOCKET"] = self.notify
            with open(self.log, "wb") as log:
                self.proc = self.procs.add(subprocess.Popen(
                    [*DEATHSIG, str(BUILD / "daqirid"), "-c", str(self.cfg),
                     "-s", self.sock, "-l", "info"], stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=log, env=env))
            self.pid = self.proc.pid
            deadline = time.monotonic() + HANG_GUARD
            while True:
                try:
                    msg = ns.recv(4096).decode(errors="replace")
                    if "READY=1" in msg.split("\n"):
                        break
                except socket.timeout:
                    pass
                if self.proc.poll() is not None:
                    raise AssertionError("daqirid exited during start-up:\n"
                                         + self.log_tail())
                if time.monotonic() > deadline:
                    raise AssertionError("no READY=1 from daqirid:\n"
                                         + self.log_tail())
        finally:
            ns.close()
        return self

    def log_tail(self, n=30):
        try:
            return "\n".join(self.log.read_text(errors="replace")
                             .splitlines()[-n:])
        except OSError:
            return "(no log)"

    def wait_served(self):
        """Call after a subscribe() returned (or a child said it did):
        until no subscription is in state "new". The daemon answers
        subscribe before the stream's receive thread takes it up, and a
        tensor published in between goes to nobody ("unseen")."""
        wait_until(lambda: all(c["state"] != "new"
                               for c in self.consumers()),
                   "the receive workers taking up the subscriptions")

    def diag(self):
        """What the daemon says, for a failure message."""
        try:
            return (f"\n--- stats: {json.dumps(self.ctl('stats')['streams'])}"
                    f"\n--- interfaces: "
                    f"{json.dumps(self.ctl('stats')['interfaces'])}"
                    f"\n--- consumers: {json.dumps(self.consumers())}"
                    f"\n--- daemon log:\n{self.log_tail()}")
        except Exception as e:          # the daemon may be gone
            return f"\n(no diagnostics: {e!r})\n{self.log_tail()}"

    def signal(self, sig):
        os.kill(self.pid, sig)

    def wait_exit(self):
        try:
            return self.proc.wait(timeout=HANG_GUARD)
        except subprocess.TimeoutExpired:
            raise AssertionError("daqirid did not exit") from None

    def ctl(self, *args):
        """`daqirictl -j ARGS` on our socket, parsed."""
        r = subprocess.run([str(BUILD / "daqirictl"), "-s", self.sock, "-j",
                            *args], capture_output=True, text=True,
                           env=tool_env(), timeout=HANG_GUARD)
        assert r.returncode == 0, (f"daqirictl {' '.join(args)} failed: "
                                   f"{r.stderr}")
        return json.loads(r.stdout)

    def stream_stats(self, name=STREAM):
        for s in self.ctl("stats")["streams"]:
            if s["name"] == name:
                return s
        raise AssertionError(f"no stream {name} in stats")

    def consumers(self):
        return self.ctl("consumers")["consumers"]

    def consumer(self, sub_id=None, pid=None, stream=STREAM):
        """The record of one subscription (None when not listed): ours
        (this process) with that sub_id, or the one of another pid."""
        pid = os.getpid() if pid is None else pid
        for c in self.consumers():
            if (c["pid"] == pid and c["stream"] == stream
                    and (sub_id is None or c["sub_id"] == sub_id)):
                return c
        return None

    def wait_consumer(self, pred, what, sub_id=None, pid=None,
                      stream=STREAM):
        def get():
            c = self.consumer(sub_id, pid, stream)
            return c if c is not None and pred(c) else None
        return wait_until(get, what)

    def sim_args(self, *args):
        args = [str(a) for a in args]
        if "--rate" not in args:
            # paced like the system tests: unpaced bursts of datagrams
            # can overflow the daemon's socket on a loaded machine
            args += ["--rate", "20kpps"]
        return [str(BUILD / "daqiri-sim"), "-c", str(self.cfg), "--dest",
                f"udp://127.0.0.1:{self.port}", *args]

    def sim(self, *args):
        """Run the simulator to its end; its result."""
        r = subprocess.run(self.sim_args(*args), capture_output=True,
                           text=True, env=tool_env(), timeout=HANG_GUARD)
        assert r.returncode == 0, f"daqiri-sim failed:\n{r.stdout}{r.stderr}"
        return SimResult(r.stdout)

    def sim_bg(self, *args):
        """Start the simulator; finish it with sim_wait()."""
        return self.procs.add(subprocess.Popen(
            [*DEATHSIG, *self.sim_args(*args)], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=tool_env()))

    @staticmethod
    def sim_wait(p):
        try:
            out, err = p.communicate(timeout=HANG_GUARD)
        except subprocess.TimeoutExpired:
            raise AssertionError("daqiri-sim did not finish") from None
        assert p.returncode == 0, f"daqiri-sim failed:\n{out}{err}"
        return SimResult(out)

    def wait_published(self, n, name=STREAM):
        """Until the stream has published n tensors and none is open."""
        return wait_until(
            lambda: (lambda h: h if h["published"] == n and
                     h["open_bufs"] == 0 else None)(
                self.stream_stats(name)["handoff"]),
            f"{name}: {n} tensors published, none open")

    def cleanup(self):
        if self._own_sock_dir is not None:
            for f in self._own_sock_dir.iterdir():
                f.unlink()
            self._own_sock_dir.rmdir()




# ---- the simulator's pattern ------------------------------------------

def pattern(ppb=PPB, elems=ELEMS):
    """Sample e of slot s before conversion: ((3 s + e) mod 15) - 7
    (scripts/daqiri-sim.c, REFERENCE.md), as int8 (ppb, elems)."""
    s = np.arange(ppb, dtype=np.int64)[:, None]
    e = np.arange(elems, dtype=np.int64)[None, :]
    return (((3 * s + e) % 15) - 7).astype(np.int8)


def pattern_fp16_bits(ppb=PPB, elems=ELEMS):
    """The pattern converted int4 -> fp16 (exact: small integers), as the
    uint16 bit patterns the tensor must hold."""
    return pattern(ppb, elems).astype(np.float16).view(np.uint16)


def packed_int4(slot, elems=ELEMS):
    """The simulator's payload of one slot: int4 samples, two a byte,
    the even element in the high nibble."""
    v = pattern(slot + 1, elems)[slot].astype(np.uint8) & 0xF
    return ((v[0::2] << 4) | v[1::2]).astype(np.uint8)


def check_fp16_tensor(bits, present, want_bits, what):
    """bits: the tensor's (ppb, elems) uint16 view; every present slot
    must be the converted pattern, every missing slot the zero fill."""
    assert bits.shape == want_bits.shape, what
    for s in range(bits.shape[0]):
        row = bits[s]
        if present[s]:
            if not np.array_equal(row, want_bits[s]):
                bad = np.flatnonzero(row != want_bits[s])
                raise AssertionError(
                    f"{what}: slot {s}: {bad.size} wrong elements, first "
                    f"element {bad[0]}: got bits {row[bad[0]]:#06x}, want "
                    f"{want_bits[s, bad[0]]:#06x}")
        elif row.any():
            bad = np.flatnonzero(row)
            raise AssertionError(
                f"{what}: missing slot {s} is not zero-filled: "
                f"{bad.size} non-zero elements, first {bad[0]}")
