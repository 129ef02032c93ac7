#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# Abuse for the metrics endpoint of 28-metrics-abuse.sh, on loopback only,
# bounded in count and time:
#   flood HOST PORT N HOLDFILE   open N connections at once; print
#                                "flood connected=C closed_by_server=E open=O"
#                                once every one is connected or refused,
#                                hold the open ones while HOLDFILE exists
#   slow HOST PORT N             N clients that send a request a byte at a
#                                time, then go silent until the server
#                                closes them; print "slow closed=N"
#   bigline HOST PORT BYTES      one request line of BYTES; print the
#                                status line the server answered, or "reset"
#   paths HOST PORT N            N requests for unknown paths; print
#                                "paths 404=K"
#   trickle HOST PORT N SECONDS  slowloris: keep N connections open for
#                                SECONDS, each sending one more byte of a
#                                never-ending header every 0.2 s, opening
#                                a new one for each the server closes;
#                                meanwhile GET /healthz every 0.1 s on a
#                                connection of its own; print "trickle
#                                opened=O closed_by_server=C probes=P
#                                probes_ok=K"
import os
import resource
import select
import socket
import sys
import time

DEADLINE_S = 60     # no phase runs longer, whatever the server does


def connect(host, port, timeout=10):
    s = socket.create_connection((host, port), timeout=timeout)
    return s


def ready(socks, events, timeout_s):
    """The sockets of socks poll() finds ready for events."""
    p = select.poll()
    byfd = {}
    for s in socks:
        p.register(s, events)
        byfd[s.fileno()] = s
    return [byfd[fd] for fd, _ in p.poll(timeout_s * 1000)]


def flood(host, port, n, holdfile):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 64), hard))
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.connect_ex((host, port))
        socks.append(s)
    # every socket: connected (writable) or failed
    pending = set(socks)
    connected = []
    end = time.monotonic() + DEADLINE_S
    while pending and time.monotonic() < end:
        for s in ready(pending, select.POLLOUT, 1):
            pending.discard(s)
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                connected.append(s)
            else:
                s.close()
    # those the server accepted and closed at once (over its limit) read
    # EOF; wait until every connected one has either been closed or is
    # still open after the server caught up with its accept queue
    closed = 0
    settle = time.monotonic() + 2
    rest = list(connected)
    while rest and time.monotonic() < settle:
        for s in ready(rest, select.POLLIN, 0.2):
            try:
                data = s.recv(1)
            except OSError:
                data = b""
            if not data:
                closed += 1
                rest.remove(s)
                s.close()
    alive = rest
    print("flood connected=%d closed_by_server=%d open=%d" %
          (len(connected), closed, len(alive)), flush=True)
    end = time.monotonic() + DEADLINE_S
    while os.path.exists(holdfile) and time.monotonic() < end:
        time.sleep(0.05)
    for s in alive:
        s.close()


def slow(host, port, n):
    req = b"GET /metrics HTTP/1.1\r\nHost: x\r\n"
    socks = [connect(host, port) for _ in range(n)]
    # a byte each in turn, then nothing: the server's idle timeout ends it
    for i in range(len(req)):
        for s in socks:
            s.send(req[i:i + 1])
        time.sleep(0.02)
    closed = 0
    end = time.monotonic() + DEADLINE_S
    rest = list(socks)
    while rest and time.monotonic() < end:
        for s in ready(rest, select.POLLIN, 1):
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:
                closed += 1
                rest.remove(s)
                s.close()
    print("slow closed=%d" % closed, flush=True)


def bigline(host, port, nbytes):
    s = connect(host, port)
    line = b"GET /" + b"a" * nbytes + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    sent = 0
    try:
        while sent < len(line):
            sent += s.send(line[sent:sent + 65536])
    except OSError:
        pass
    s.settimeout(10)
    try:
        data = s.recv(4096)
    except OSError:
        data = b""
    s.close()
    first = data.split(b"\r\n", 1)[0].decode("latin-1") if data else ""
    print("bigline sent=%d answer=%s" % (sent, first or "reset"), flush=True)


def paths(host, port, n):
    got = 0
    for i in range(n):
        s = connect(host, port)
        s.sendall(b"GET /no/such/path/%d HTTP/1.0\r\n\r\n" % i)
        data = b""
        while True:
            b = s.recv(4096)
            if not b:
                break
            data += b
        s.close()
        if data.startswith(b"HTTP/1.0 404") or data.startswith(b"HTTP/1.1 404"):
            got += 1
    print("paths 404=%d" % got, flush=True)


def probe(host, port):
    """GET /healthz; True when answered 200."""
    try:
        s = connect(host, port, timeout=10)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            b = s.recv(4096)
            if not b:
                break
            data += b
        s.close()
        return data.startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def trickle(host, port, n, seconds):
    line = b"GET /metrics HTTP/1.1\r\nHost: x\r\n"
    socks, opened, closed, probes, ok = [], 0, 0, 0, 0
    end = time.monotonic() + min(seconds, DEADLINE_S)
    next_byte = next_probe = time.monotonic()
    while time.monotonic() < end:
        while len(socks) < n:
            try:
                socks.append([connect(host, port), 0])
                opened += 1
            except OSError:
                break
        now = time.monotonic()
        if now >= next_byte:
            next_byte = now + 0.2
            for e in list(socks):
                # the line, then one header byte after another, forever
                b = line[e[1]:e[1] + 1] if e[1] < len(line) else b"X"
                try:
                    e[0].send(b)
                    e[1] += 1
                except OSError:
                    closed += 1
                    e[0].close()
                    socks.remove(e)
        for e in list(socks):
            if ready([e[0]], select.POLLIN, 0):
                try:
                    gone = e[0].recv(4096) == b""
                except OSError:
                    gone = True
                if gone:
                    closed += 1
                    e[0].close()
                    socks.remove(e)
        if now >= next_probe:
            next_probe = now + 0.1
            probes += 1
            ok += probe(host, port)
        time.sleep(0.01)
    for e in socks:
        e[0].close()
    print("trickle opened=%d closed_by_server=%d probes=%d probes_ok=%d" %
          (opened, closed, probes, ok), flush=True)


def main():
    cmd, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if cmd == "flood":
        flood(host, port, int(sys.argv[4]), sys.argv[5])
    elif cmd == "slow":
        slow(host, port, int(sys.argv[4]))
    elif cmd == "bigline":
        bigline(host, port, int(sys.argv[4]))
    elif cmd == "paths":
        paths(host, port, int(sys.argv[4]))
    elif cmd == "trickle":
        trickle(host, port, int(sys.argv[4]), float(sys.argv[5]))
    else:
        sys.exit("unknown command " + cmd)


main()
