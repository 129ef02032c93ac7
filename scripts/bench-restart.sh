#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# How long consumers go without tensors across a daemon restart: a
# reconnecting Python consumer (reconnect=True) on a 1 Gb/s stream, the
# daemon stopped (SIGTERM) and started again $BENCH_RESTART_ROUNDS (5)
# times; per round the time from the new daemon's READY=1 to the first
# tensor the consumer gets from it (the RESTART one), and the whole
# outage (last tensor of the old daemon to that one). Prints one line
# per round and, last, `bench restart gap_ms=<worst READY -> tensor>
# outage_ms=<worst outage> rounds=N` (the goal: gap_ms under 2000).
#
# The listening socket outlives the daemon as with daqirid.socket: this
# script holds it, as systemd would, and hands it to every daqirid it
# starts by socket activation (LISTEN_FDS=1, fd 3), so a reconnect
# queues in the backlog instead of failing. (`systemctl restart
# daqirid` under a booted systemd is the same sequence; booting one is
# tests/system/17-systemd-unit.sh's business, not a benchmark's.)
# Everything is private: socket and notify socket in a temporary
# directory, a random loopback port; every process it starts is ended
# by its PID.
#
# Usage: scripts/bench-restart.sh   (BUILD=build; the daqiri module of
# $BUILD/python under /usr/bin/python3)
set -eu
BUILD=${BUILD:-build}
ROUNDS=${BENCH_RESTART_ROUNDS:-5}
PY=/usr/bin/python3
[ -x "$BUILD/daqirid" ] && [ -x "$BUILD/daqiri-sim" ] && [ -e "$BUILD/python" ] ||
	{ echo "bench-restart: build first (make all)" >&2; exit 1; }
T=$(mktemp -d /tmp/daqiri-bench-restart.XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
PORT=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 20000 ))
sed -e "s/127\.0\.0\.1:5005/127.0.0.1:$PORT/" -e "s/udp_dst: 5005/udp_dst: $PORT/" \
	-e 's/socket_group: daqiri /socket_group: "" /' etc/daqirid.yaml > "$T/daqirid.yaml"
"$BUILD/daqirid" -n -c "$T/daqirid.yaml" > /dev/null

PYTHONPATH=$BUILD/python "$PY" - "$BUILD" "$T" "$ROUNDS" << 'EOF_PY'
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import daqiri

build, tmp, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
cfg = os.path.join(tmp, "daqirid.yaml")
sock_path = os.path.join(tmp, "daqirid.sock")
STREAM = "sensor0/sensor_tensor"
GUARD = 60.0            # a hang guard, not a measure

# The listening socket, held here across every daemon (daqirid.socket).
lsock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
lsock.bind(sock_path)
lsock.listen(128)
notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
notify.bind(os.path.join(tmp, "notify"))
procs = []


def start_daemon():
    """daqirid with our listening socket as fd 3; CLOCK_MONOTONIC ns of
    its READY=1."""
    def child():
        os.dup2(lsock.fileno(), 3)
        os.set_inheritable(3, True)
        os.environ["LISTEN_FDS"] = "1"
        os.environ["LISTEN_PID"] = str(os.getpid())
    os.environ["NOTIFY_SOCKET"] = os.path.join(tmp, "notify")
    with open(os.path.join(tmp, "daemon.log"), "ab") as log:
        p = subprocess.Popen([os.path.join(build, "daqirid"), "-c", cfg],
                             preexec_fn=child, close_fds=False,
                             stdin=subprocess.DEVNULL, stderr=log)
    procs.append(p)
    notify.settimeout(0.1)
    end = time.monotonic() + GUARD
    while time.monotonic() < end:
        try:
            msg = notify.recv(4096).decode(errors="replace")
        except socket.timeout:
            if p.poll() is not None:
                sys.exit("bench-restart: daqirid exited during start-up")
            continue
        if "READY=1" in msg.split("\n"):
            return p, time.monotonic_ns()
    sys.exit("bench-restart: no READY=1 from daqirid")


def stop(p):
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=GUARD)


daemon, _ = start_daemon()
conn = daqiri.connect(sock_path)
sub = conn.subscribe(STREAM, max_held=4)
state = {"last_ns": 0, "restart_ns": [], "before_ns": [], "n": 0,
         "err": None, "stop": False}


def consume():
    try:
        while not state["stop"]:
            t = sub.next(timeout=0.1)
            if t is None:
                continue
            now = time.monotonic_ns()
            if t.flags & daqiri.RESTART:
                state["before_ns"].append(state["last_ns"])
                state["restart_ns"].append(now)
            state["last_ns"] = now
            state["n"] += 1
            t.release()
    except daqiri.Error as e:
        state["err"] = e


th = threading.Thread(target=consume, daemon=True)
th.start()
sim = subprocess.Popen([os.path.join(build, "daqiri-sim"), "-c", cfg,
                        "--rate", "1Gbps", "--batches", "0", "--quiet"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       stdin=subprocess.DEVNULL)
procs.append(sim)


def wait(pred, what):
    end = time.monotonic() + GUARD
    while not pred():
        if state["err"] is not None or time.monotonic() > end:
            sys.exit(f"bench-restart: {what}: {state['err']}")
        time.sleep(0.005)


try:
    wait(lambda: state["n"] > 10, "no tensors at 1 Gb/s")
    gaps, outages = [], []
    for r in range(rounds):
        stop(daemon)
        daemon, ready_ns = start_daemon()
        wait(lambda: len(state["restart_ns"]) == r + 1,
             "no tensor after the restart")
        gap = (state["restart_ns"][r] - ready_ns) / 1e6
        out = (state["restart_ns"][r] - state["before_ns"][r]) / 1e6
        gaps.append(gap)
        outages.append(out)
        print(f"bench restart round={r + 1} gap_ms={gap:.1f} "
              f"outage_ms={out:.1f}", flush=True)
        n0 = state["n"]
        wait(lambda: state["n"] > n0 + 10, "no tensors after the restart")
    print(f"bench restart gap_ms={max(gaps):.1f} "
          f"outage_ms={max(outages):.1f} rounds={rounds}", flush=True)
finally:
    state["stop"] = True
    for p in reversed(procs):
        if p.poll() is None:
            p.kill()
            p.wait()
EOF_PY
